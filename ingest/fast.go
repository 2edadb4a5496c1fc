package ingest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/psrlcb/psrlcb/internal/parallel"

	"github.com/parquet-go/parquet-go"

	"github.com/psrlcb/psrlcb/schemas"
)

// The direct path reads valid logs without per-row-group copies of the
// symbol and number columns: a first pass reads only episode ids, steps
// and terminal flags, which fix K, H and the cell of every row; a second
// pass decodes observations, actions, rewards and propensities straight
// into the K×H arrays. Any doubt (a null, a bad value, a duplicate or
// missing step, a damaged page, too many symbols) abandons it, and Read
// starts over on the exact path (readUnits and assemble), which finds and
// words the problem. On valid logs both paths give identical Datasets.

// directPath can be turned off by tests to compare the two paths.
var directPath = true

// maxDirectHorizon is the largest horizon the direct path handles: the
// steps seen of an episode are kept as a 64-bit mask.
const maxDirectHorizon = 64

// errExact abandons the direct path.
var errExact = errors.New("ingest: logs need the exact path")

// readDirect returns the Dataset of valid logs, or errExact when the logs
// are not plainly valid, or the context's error.
func readDirect(ctx context.Context, files []*openedFile, units []unit, opts Options) (*Dataset, error) {
	if !directPath {
		return nil, errExact
	}
	// Pass 1: episode ids, steps and terminal flags of every row group.
	chunks, err := readKeyChunks(ctx, files, units, opts)
	if err != nil {
		return nil, err
	}
	var rows int64
	H := opts.Horizon
	for _, c := range chunks {
		rows += int64(c.n)
		if opts.Horizon == 0 {
			H = max(H, c.maxStep)
		}
	}
	if rows == 0 || H == 0 || H > maxDirectHorizon {
		return nil, errExact
	}
	ids, epL2G := episodeKeys(chunks)
	K := len(ids)
	if int64(K)*int64(H) > math.MaxInt32 {
		return nil, errExact
	}
	steps, term, err := directCells(ctx, chunks, epL2G, K, H, opts.Workers)
	if err != nil {
		return nil, err
	}
	lengths, padded, err := directLengths(steps, term, H)
	if err != nil {
		return nil, err
	}

	// Pass 2: symbols and numbers straight into their cells.
	hasProp := files[0].cols[schemas.Propensity].index >= 0
	d := &Dataset{Horizon: H, Rows: rows, EpisodeIDs: ids, Length: lengths}
	if err := allocSteps(d, K*H, hasProp, opts.Arrays); err != nil {
		return nil, fmt.Errorf("%w: the logs' step arrays: %v", ErrIO, err)
	}
	var obsSet, actSet symbolSet
	if err := forUnits(ctx, len(units), opts.Workers, func(i int) error {
		c := chunks[i]
		of := files[c.file]
		return scatterChunk(of, units[i].rg, c, d, &obsSet, &actSet)
	}); err != nil {
		return nil, err
	}
	if padded {
		padCells(d, hasProp)
	}
	d.ObsVocab = recodeVocab(obsSet.names, d.Obs, padded)
	d.ActVocab = recodeVocab(actSet.names, d.Act, padded)
	return d, nil
}

// readKeyChunks reads the episode ids, steps and terminal flags of every
// row group (errExact when one holds a row the exact path must report).
func readKeyChunks(ctx context.Context, files []*openedFile, units []unit, opts Options) ([]*chunk, error) {
	chunks := make([]*chunk, len(units))
	err := forUnits(ctx, len(units), opts.Workers, func(i int) error {
		u := units[i]
		c, err := readKeys(files[u.file], u.file, u.rg, u.rowBase, opts.Horizon)
		if err != nil {
			return err
		}
		if len(c.bad) > 0 {
			return errExact
		}
		chunks[i] = c
		return nil
	})
	return chunks, err
}

// directCells turns each row's local episode code into its cell index
// k*H+h-1 and records the steps seen of each episode as a mask (steps)
// and its terminal steps (term, nil when no file has the column).
// errExact on a step seen twice or a second terminal step.
func directCells(ctx context.Context, chunks []*chunk, epL2G [][]int32, K, H, workers int) (steps, term []uint64, err error) {
	steps = make([]uint64, K)
	for _, c := range chunks {
		if c.term != nil {
			term = make([]uint64, K)
			break
		}
	}
	err = forUnits(ctx, len(chunks), workers, func(ci int) error {
		c := chunks[ci]
		m := epL2G[ci]
		var run int32 = -1 // rows of an episode are usually adjacent
		var k int32
		var seen uint64
		flush := func() bool {
			if run >= 0 && atomic.OrUint64(&steps[k], seen)&seen != 0 {
				return false
			}
			return true
		}
		for i, l := range c.ep {
			if l != run {
				if !flush() {
					return errExact
				}
				run, k, seen = l, m[l], 0
			}
			h := c.step[i]
			bit := uint64(1) << (h - 1)
			if seen&bit != 0 {
				return errExact
			}
			seen |= bit
			c.ep[i] = k*int32(H) + int32(h) - 1
			if c.term != nil && c.term[i] && atomic.OrUint64(&term[k], bit) != 0 {
				return errExact // a second terminal step
			}
		}
		if !flush() {
			return errExact
		}
		return nil
	})
	return steps, term, err
}

// directLengths is each episode's length from its steps seen, and whether
// any is shorter than H; errExact on a gap, a short episode without a
// terminal step or a terminal step before the last.
func directLengths(steps, term []uint64, H int) (lengths []int32, padded bool, err error) {
	lengths = make([]int32, len(steps))
	for k, m := range steps {
		L := bits.Len64(m)
		if m != 1<<L-1 {
			return nil, false, errExact // a gap
		}
		if L < H || term != nil && term[k] != 0 {
			if term == nil || term[k] != 1<<(L-1) {
				return nil, false, errExact // short without terminal, or terminal early
			}
		}
		lengths[k] = int32(L)
		padded = padded || L < H
	}
	return lengths, padded, nil
}

// padCells fills the cells past each episode's end with the padding code
// (and propensity 1).
func padCells(d *Dataset, hasProp bool) {
	H := d.Horizon
	for k, L := range d.Length {
		for i := k*H + int(L); i < (k+1)*H; i++ {
			d.Obs[i], d.Act[i] = padCode, padCode
			if hasProp {
				d.Propensity[i] = 1
			}
		}
	}
}

// forUnits runs f(0..n-1) in parallel (package parallel). Any failure but
// cancellation sends the logs to the exact path (errExact), which reports
// it with file, episode and step.
func forUnits(ctx context.Context, n, workers int, f func(i int) error) error {
	err := parallel.For(ctx, n, workers, f)
	if err == nil || ctx.Err() != nil {
		return err
	}
	return errExact
}

// readKeys reads the episode ids, steps and terminal flags of one row
// group.
func readKeys(of *openedFile, fileIdx int, rgIdx int, rowBase int64, horizon int) (c *chunk, err error) {
	defer recoverUnreadable(of.src.name, &err)
	rg := of.f.RowGroups()[rgIdx]
	n := int(rg.NumRows())
	cc := rg.ColumnChunks()
	c = &chunk{file: fileIdx, rowBase: rowBase, n: n}
	cols := &of.cols
	c.ids = newSymTable(cols[schemas.Episode].kind == schemas.KindInt)
	c.ep = make([]int32, n)
	if err := readSymbols(cc[cols[schemas.Episode].index], cols[schemas.Episode], n, c.ids, c.ep, math.MaxInt32, func(int) {
		c.bad = append(c.bad, rowErr{})
	}); err != nil {
		return nil, err
	}
	c.step = make([]uint16, n)
	if err := c.readSteps(cc[cols[schemas.Step].index], cols[schemas.Step], horizon); err != nil {
		return nil, err
	}
	if spec := cols[schemas.Terminal]; spec.index >= 0 {
		c.term = make([]bool, n)
		if err := readBools(cc[spec.index], spec, n, c.term, func(int) {
			c.bad = append(c.bad, rowErr{})
		}); err != nil {
			return nil, err
		}
	}
	for _, s := range c.step {
		c.maxStep = max(c.maxStep, int(s))
	}
	return c, nil
}

// scatterChunk decodes the symbol and number columns of one row group into
// the cells of d; c.ep holds each row's cell.
func scatterChunk(of *openedFile, rgIdx int, c *chunk, d *Dataset, obsSet, actSet *symbolSet) (err error) {
	defer recoverUnreadable(of.src.name, &err)
	cc := of.f.RowGroups()[rgIdx].ColumnChunks()
	cols := &of.cols
	if err := scatterSymbols(cc[cols[schemas.Observation].index], cols[schemas.Observation], c.ep, d.Obs, obsSet); err != nil {
		return err
	}
	if err := scatterSymbols(cc[cols[schemas.Action].index], cols[schemas.Action], c.ep, d.Act, actSet); err != nil {
		return err
	}
	// Rewards must be finite: −∞ < r ≤ MaxFloat64 (NaN fails both).
	if err := scatterFloats(cc[cols[schemas.Reward].index], cols[schemas.Reward], c.ep, d.Reward, math.Inf(-1), math.MaxFloat64); err != nil {
		return err
	}
	if spec := cols[schemas.Propensity]; spec.index >= 0 {
		// Propensities are probabilities of the logged action: 0 < p ≤ 1.
		if err := scatterFloats(cc[spec.index], spec, c.ep, d.Propensity, 0, 1); err != nil {
			return err
		}
	}
	return nil
}

// allDefined reports whether a page has no null.
func allDefined(defs []byte, max int) bool {
	for _, d := range defs {
		if int(d) != max {
			return false
		}
	}
	return true
}

// symbolSet numbers the symbols of a column across all row groups, in the
// order workers meet them; the final sort (recodeVocab) makes the codes
// independent of that order.
type symbolSet struct {
	mu    sync.Mutex
	codes map[string]uint16
	names []string
}

// add returns the codes of the local symbols t holds beyond those l2g
// already maps.
func (g *symbolSet) extend(t *symTable, l2g []uint16) ([]uint16, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.codes == nil {
		g.codes = map[string]uint16{}
	}
	for i := len(l2g); i < t.len(); i++ {
		var s string
		if t.intKind {
			s = strconv.FormatInt(t.vals[i], 10)
		} else {
			s = t.names[i]
			if s == EndSymbol {
				return nil, errExact
			}
		}
		code, ok := g.codes[s]
		if !ok {
			if len(g.names) >= padCode-1 {
				return nil, errExact
			}
			code = uint16(len(g.names))
			g.codes[s] = code
			g.names = append(g.names, s)
		}
		l2g = append(l2g, code)
	}
	return l2g, nil
}

// scatterSymbols decodes a categorical column into out[cell[row]].
func scatterSymbols(cc parquet.ColumnChunk, spec colSpec, cell []int32, out []uint16, g *symbolSet) error {
	t := newSymTable(spec.kind == schemas.KindInt)
	var l2g []uint16
	global := func() error {
		if t.len() > len(l2g) {
			var err error
			if l2g, err = g.extend(t, l2g); err != nil {
				return err
			}
		}
		return nil
	}
	var lastDict parquet.Dictionary
	var dictCodes []uint16
	var local []int32
	ints := intDecoder(spec)
	return walkPages(cc, len(cell), func(row, nr int, defs []byte, p parquet.Page) error {
		if defs != nil && !allDefined(defs, spec.max) {
			return errExact
		}
		dst := cell[row : row+nr]
		if dict := p.Dictionary(); dict != nil {
			if dict != lastDict {
				var err error
				if local, err = dictSymbols(local[:0], dict, spec, t, ints.buf); err != nil {
					return err
				}
				if err := global(); err != nil {
					return err
				}
				dictCodes = dictCodes[:0]
				for _, l := range local {
					dictCodes = append(dictCodes, l2g[l])
				}
				lastDict = dict
			}
			idx, err := dictIndexes(p, dict, nr)
			if err != nil {
				return err
			}
			for i, x := range idx {
				out[dst[i]] = dictCodes[x]
			}
			return nil
		}
		if t.intKind {
			vals, err := ints.plainValues(p, nr)
			if err != nil {
				return err
			}
			var last int64
			var code uint16
			for i, v := range vals {
				if i == 0 || v != last {
					l := t.int(v)
					if err := global(); err != nil {
						return err
					}
					last, code = v, l2g[l]
				}
				out[dst[i]] = code
			}
			return nil
		}
		data, off, err := byteArrays(p, nr)
		if err != nil {
			return err
		}
		var last []byte
		var code uint16
		for i := range nr {
			b := data[off[i]:off[i+1]]
			if i == 0 || string(b) != string(last) {
				l := t.str(b)
				if err := global(); err != nil {
					return err
				}
				last, code = b, l2g[l]
			}
			out[dst[i]] = code
		}
		return nil
	})
}

// scatterFloats decodes a numeric column into out[cell[row]], abandoning
// the direct path on a value outside (lo, hi] (NaN is outside any range).
// The range is two comparisons inlined in the hot loop, not a callback.
func scatterFloats(cc parquet.ColumnChunk, spec colSpec, cell []int32, out []float64, lo, hi float64) error {
	dec := floatDecoder(spec)
	return walkPages(cc, len(cell), func(row, nr int, defs []byte, p parquet.Page) error {
		if defs != nil && !allDefined(defs, spec.max) {
			return errExact
		}
		dst := cell[row : row+nr]
		if dict := p.Dictionary(); dict != nil {
			dictVals, fresh, err := dec.dictionary(dict)
			if err != nil {
				return err
			}
			if fresh {
				for _, v := range dictVals {
					if !(v > lo && v <= hi) {
						return errExact
					}
				}
			}
			idx, err := dictIndexes(p, dict, nr)
			if err != nil {
				return err
			}
			for i, x := range idx {
				out[dst[i]] = dictVals[x]
			}
			return nil
		}
		vals, err := dec.plainValues(p, nr)
		if err != nil {
			return err
		}
		bad := false
		for i, v := range vals {
			bad = bad || !(v > lo && v <= hi)
			out[dst[i]] = v
		}
		if bad {
			return errExact
		}
		return nil
	})
}

// recodeVocab is finalVocab for symbols in any order: it keeps the symbols
// the codes use, adds EndSymbol when an episode was padded, sorts them and
// recodes in place.
func recodeVocab(all []string, codes []uint16, padded bool) []string {
	order := make([]int, len(all))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if all[a] < all[b] {
			return -1
		}
		return 1
	})
	sorted := make([]string, len(all))
	rank := make([]uint16, len(all)+1)
	for r, i := range order {
		sorted[r] = all[i]
		rank[i] = uint16(r)
	}
	for i, c := range codes {
		if c != padCode {
			codes[i] = rank[c]
		}
	}
	return finalVocab(sorted, codes, padded)
}
