package ingest

import (
	"bytes"
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

// directPlan is what pass 1 of the direct path fixes: the row groups'
// keys, the row count, the horizon and each episode's id and length.
type directPlan struct {
	chunks  []*chunk
	rows    int64
	H       int
	ids     []string // nil when not named (planDirect)
	K       int
	lengths []int32
	padded  bool
}

// readDirect returns the Dataset of valid logs, or errExact when the logs
// are not plainly valid, or the context's error.
//
// With t not nil, the propensities are tallied into t (propTally) instead
// of stored: the Dataset has no Propensity, and t.counted is set.
func readDirect(ctx context.Context, files []*openedFile, units []unit, opts Options, t *propTally) (*Dataset, error) {
	if !directPath {
		return nil, errExact
	}
	pl, err := planDirect(ctx, files, units, opts, t == nil)
	if err != nil {
		return nil, err
	}
	return pl.scatter(ctx, files, units, opts, t)
}

// planDirect is pass 1: it reads the episode ids, steps and terminal
// flags of every row group and fixes the horizon, the episodes and their
// lengths (errExact when the logs are not plainly valid). Without names,
// integer episode ids are not rendered as text (a summary does not use
// them).
func planDirect(ctx context.Context, files []*openedFile, units []unit, opts Options, names bool) (*directPlan, error) {
	chunks, err := readKeyChunks(ctx, files, units, opts)
	if err != nil {
		return nil, err
	}
	pl := &directPlan{chunks: chunks}
	pl.rows, pl.H = directExtent(chunks, opts.Horizon)
	if pl.rows == 0 || pl.H == 0 || pl.H > maxDirectHorizon {
		return nil, errExact
	}
	if err := pl.episodes(ctx, opts.Workers, names); err != nil {
		return nil, err
	}
	return pl, nil
}

// episodes fixes the plan's episode ids and lengths from its chunks' ids,
// steps and terminal flags (errExact when they are not plainly valid).
func (pl *directPlan) episodes(ctx context.Context, workers int, names bool) error {
	ids, K, epL2G := episodeKeys(pl.chunks, names)
	if int64(K)*int64(pl.H) > math.MaxInt32 {
		return errExact
	}
	steps, term, err := directCells(ctx, pl.chunks, epL2G, K, pl.H, workers)
	if err != nil {
		return err
	}
	pl.ids, pl.K = ids, K
	pl.lengths, pl.padded, err = directLengths(steps, term, pl.H)
	return err
}

// directExtent is the number of rows of the chunks and the horizon: the
// given one, or the largest step when it is 0.
func directExtent(chunks []*chunk, horizon int) (rows int64, H int) {
	H = horizon
	if horizon == 0 {
		for _, c := range chunks {
			H = max(H, c.maxStep)
		}
	}
	return chunkRows(chunks), H
}

// scatter is pass 2: it decodes the symbols and numbers of every row group
// straight into their cells of the Dataset, or tallies the propensities
// into t when it is not nil (each row group's tally apart, merged in row
// group order).
func (pl *directPlan) scatter(ctx context.Context, files []*openedFile, units []unit, opts Options, t *propTally) (*Dataset, error) {
	hasProp := files[0].cols[schemas.Propensity].index >= 0
	var tallies []propTally
	if t != nil && hasProp {
		tallies = make([]propTally, len(units))
	}
	d := &Dataset{Horizon: pl.H, Rows: pl.rows, EpisodeIDs: pl.ids, Length: pl.lengths}
	if err := allocSteps(d, pl.K*pl.H, hasProp && tallies == nil, opts.Arrays); err != nil {
		return nil, fmt.Errorf("%w: the logs' step arrays: %v", ErrIO, err)
	}
	var obsSet, actSet symbolSet
	if err := forUnits(ctx, len(units), opts.Workers, func(i int) error {
		c := pl.chunks[i]
		of := files[c.file]
		var ti *propTally
		if tallies != nil {
			ti = &tallies[i]
		}
		return scatterChunk(of, units[i].rg, c, d, &obsSet, &actSet, ti)
	}); err != nil {
		return nil, err
	}
	if tallies != nil {
		for i := range tallies {
			t.add(&tallies[i])
		}
		t.counted = true
	}
	if pl.padded {
		padCells(d, d.Propensity != nil)
	}
	// The two recodings are independent passes over the step arrays.
	obsDone := parallel.Go(func() { d.ObsVocab = recodeVocab(obsSet.names, d.Obs, pl.padded) })
	d.ActVocab = recodeVocab(actSet.names, d.Act, pl.padded)
	obsDone()
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
	// The masks are written before the workers read them: their first
	// access is an atomic OR, whose load would map the kernel's shared
	// zero page and whose store would then replace it page by page, each
	// replacement interrupting the other cores to flush their TLBs.
	steps = make([]uint64, K)
	clear(steps)
	if anyTerminal(chunks) {
		term = make([]uint64, K)
		clear(term)
	}
	err = forUnits(ctx, len(chunks), workers, func(ci int) error {
		return chunkCells(chunks[ci], epL2G[ci], H, steps, term)
	})
	return steps, term, err
}

// chunkCells is directCells for one chunk c, whose local episode codes m
// maps to global ones.
func chunkCells(c *chunk, m []int32, H int, steps, term []uint64) error {
	var run int32 = -1 // rows of an episode are usually adjacent
	var k int32
	var seen uint64
	for i, l := range c.ep {
		if l != run {
			if !flushSteps(steps, run, k, seen) {
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
		if c.term != nil && c.term.at(i) && atomic.OrUint64(&term[k], bit) != 0 {
			return errExact // a second terminal step
		}
	}
	if !flushSteps(steps, run, k, seen) {
		return errExact
	}
	return nil
}

// anyTerminal reports whether any chunk has a terminal column.
func anyTerminal(chunks []*chunk) bool {
	for _, c := range chunks {
		if c.term != nil {
			return true
		}
	}
	return false
}

// flushSteps adds the steps seen in a run of episode k's rows to steps[k]
// (nothing before the first run, run < 0); false when one of them was
// seen already.
func flushSteps(steps []uint64, run, k int32, seen uint64) bool {
	return run < 0 || atomic.OrUint64(&steps[k], seen)&seen == 0
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
	null := func(int) { c.bad = append(c.bad, rowErr{}) }
	c.ids = newSymTable(cols[schemas.Episode].kind == schemas.KindInt)
	c.ep = make([]int32, n)
	if err := readSymbols(cc[cols[schemas.Episode].index], cols[schemas.Episode], n, c.ids, c.ep, math.MaxInt32, null); err != nil {
		return nil, err
	}
	c.step = make([]uint16, n)
	if err := c.readSteps(cc[cols[schemas.Step].index], cols[schemas.Step], horizon); err != nil {
		return nil, err
	}
	if spec := cols[schemas.Terminal]; spec.index >= 0 {
		c.term = newRowFlags(n)
		if err := readBools(cc[spec.index], spec, n, c.term, null); err != nil {
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
func scatterChunk(of *openedFile, rgIdx int, c *chunk, d *Dataset, obsSet, actSet *symbolSet, t *propTally) (err error) {
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
	spec := cols[schemas.Propensity]
	switch {
	case spec.index < 0:
		return nil
	case t != nil:
		return tallyFloats(cc[spec.index], spec, c.ep, t)
	}
	// Propensities are probabilities of the logged action: 0 < p ≤ 1.
	return scatterFloats(cc[spec.index], spec, c.ep, d.Propensity, 0, 1)
}

// allDefined reports whether a page has no null.
func allDefined(defs []byte, max int) bool {
	return nonNull(defs, max, len(defs)) == len(defs)
}

// symbolSet numbers the symbols of a column across all row groups, in the
// order workers meet them; the final sort (recodeVocab) makes the codes
// independent of that order.
type symbolSet struct {
	mu    sync.Mutex
	codes map[string]uint16
	names []string
}

// extend returns l2g extended with the codes of the local symbols t holds
// beyond those l2g already maps.
func (g *symbolSet) extend(t *symTable, l2g []uint16) ([]uint16, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.codes == nil {
		g.codes = map[string]uint16{}
	}
	for i := len(l2g); i < t.len(); i++ {
		s, ok := directSymbol(t, i)
		if !ok {
			return nil, errExact
		}
		code, ok := g.code(s)
		if !ok {
			return nil, errExact
		}
		l2g = append(l2g, code)
	}
	return l2g, nil
}

// directSymbol is the text of t's local symbol i; false for EndSymbol,
// which only the exact path reports.
func directSymbol(t *symTable, i int) (string, bool) {
	if t.intKind {
		return strconv.FormatInt(t.vals[i], 10), true
	}
	s := t.names[i]
	return s, s != EndSymbol
}

// code returns the global code of s, numbering it when it is new; false
// when a new symbol would reach the padding code.
func (g *symbolSet) code(s string) (uint16, bool) {
	if code, ok := g.codes[s]; ok {
		return code, true
	}
	if len(g.names) >= padCode-1 {
		return 0, false
	}
	code := uint16(len(g.names))
	g.codes[s] = code
	g.names = append(g.names, s)
	return code, true
}

// symbolScatter decodes one categorical column into global codes; it
// keeps the chunk-local symbols met so far, their global codes (l2g) and
// the codes of the last dictionary met across pages.
type symbolScatter struct {
	spec      colSpec
	out       []uint16
	g         *symbolSet
	t         *symTable
	l2g       []uint16
	lastDict  parquet.Dictionary
	dictCodes []uint16
	local     []int32
	ints      *numDecoder[int64]
}

// scatterSymbols decodes a categorical column into out[cell[row]].
func scatterSymbols(cc parquet.ColumnChunk, spec colSpec, cell []int32, out []uint16, g *symbolSet) error {
	s := &symbolScatter{spec: spec, out: out, g: g, t: newSymTable(spec.kind == schemas.KindInt), ints: intDecoder(spec)}
	return scatterPages(cc, spec, cell, s)
}

// cellScatter decodes the pages of one column into the cells of a Dataset.
type cellScatter interface {
	dictPage(p parquet.Page, dict parquet.Dictionary, dst []int32) error
	plainPage(p parquet.Page, dst []int32) error
}

// scatterPages decodes each page of a column into the cells cell[row]
// through s, from its dictionary or from its plain values; errExact on a
// null.
func scatterPages(cc parquet.ColumnChunk, spec colSpec, cell []int32, s cellScatter) error {
	return walkPages(cc, len(cell), func(row, nr int, defs []byte, p parquet.Page) error {
		if defs != nil && !allDefined(defs, spec.max) {
			return errExact
		}
		dst := cell[row : row+nr]
		if dict := p.Dictionary(); dict != nil {
			return s.dictPage(p, dict, dst)
		}
		return s.plainPage(p, dst)
	})
}

// global gives global codes to the local symbols met since the last call.
func (s *symbolScatter) global() error {
	if s.t.len() > len(s.l2g) {
		var err error
		if s.l2g, err = s.g.extend(s.t, s.l2g); err != nil {
			return err
		}
	}
	return nil
}

// plainPage decodes a plain page of integer or string symbols into the
// cells dst.
func (s *symbolScatter) plainPage(p parquet.Page, dst []int32) error {
	if s.t.intKind {
		return s.plainInts(p, dst)
	}
	return s.plainStrings(p, dst)
}

// mapDict maps a row group's dictionary to global codes once.
func (s *symbolScatter) mapDict(dict parquet.Dictionary) error {
	var err error
	if s.local, err = dictSymbols(s.local[:0], dict, s.spec, s.t, s.ints.buf); err != nil {
		return err
	}
	if err := s.global(); err != nil {
		return err
	}
	s.dictCodes = s.dictCodes[:0]
	for _, l := range s.local {
		s.dictCodes = append(s.dictCodes, s.l2g[l])
	}
	s.lastDict = dict
	return nil
}

// dictPage decodes a dictionary-encoded page into the cells dst.
func (s *symbolScatter) dictPage(p parquet.Page, dict parquet.Dictionary, dst []int32) error {
	if dict != s.lastDict {
		if err := s.mapDict(dict); err != nil {
			return err
		}
	}
	idx, err := pageIndexes(p, len(dst)) // the gather below checks them
	if err != nil {
		return err
	}
	for i, x := range idx {
		s.out[dst[i]] = s.dictCodes[x]
	}
	return nil
}

// plainInts decodes a plain page of integer symbols into the cells dst.
func (s *symbolScatter) plainInts(p parquet.Page, dst []int32) error {
	vals, err := s.ints.plainValues(p, len(dst))
	if err != nil {
		return err
	}
	at := func(i int) int64 { return vals[i] }
	same := func(a, b int64) bool { return a == b }
	return scatterCodes(s, dst, at, same, s.t.int)
}

// plainStrings decodes a plain page of string symbols into the cells dst.
func (s *symbolScatter) plainStrings(p parquet.Page, dst []int32) error {
	data, off, err := byteArrays(p, len(dst))
	if err != nil {
		return err
	}
	at := func(i int) []byte { return data[off[i]:off[i+1]] }
	return scatterCodes(s, dst, at, bytes.Equal, s.t.str)
}

// scatterCodes writes the global codes of a plain page's values into the
// cells dst: at(i) is the i-th value, and its code is looked up only when
// it is not the same as the previous value's.
func scatterCodes[V any](s *symbolScatter, dst []int32, at func(i int) V, same func(a, b V) bool, local func(V) int32) error {
	var last V
	var code uint16
	for i := range dst {
		v := at(i)
		if i == 0 || !same(v, last) {
			l := local(v)
			if err := s.global(); err != nil {
				return err
			}
			last, code = v, s.l2g[l]
		}
		s.out[dst[i]] = code
	}
	return nil
}

// floatScatter decodes one numeric column into out[cell[row]], abandoning
// the direct path on a value outside (lo, hi].
type floatScatter struct {
	dec    *numDecoder[float64]
	out    []float64
	lo, hi float64
}

// scatterFloats decodes a numeric column into out[cell[row]], abandoning
// the direct path on a value outside (lo, hi] (NaN is outside any range).
// The range is two comparisons inlined in the hot loop, not a callback.
func scatterFloats(cc parquet.ColumnChunk, spec colSpec, cell []int32, out []float64, lo, hi float64) error {
	s := &floatScatter{dec: floatDecoder(spec), out: out, lo: lo, hi: hi}
	return scatterPages(cc, spec, cell, s)
}

// dictPage decodes a dictionary-encoded page into the cells dst, checking
// the range of each dictionary's values once.
func (s *floatScatter) dictPage(p parquet.Page, dict parquet.Dictionary, dst []int32) error {
	lo, hi := s.lo, s.hi
	dictVals, fresh, err := s.dec.dictionary(dict)
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
	idx, err := pageIndexes(p, len(dst)) // the gather below checks them
	if err != nil {
		return err
	}
	for i, x := range idx {
		s.out[dst[i]] = dictVals[x]
	}
	return nil
}

// plainPage decodes a plain page into the cells dst.
func (s *floatScatter) plainPage(p parquet.Page, dst []int32) error {
	lo, hi, out := s.lo, s.hi, s.out
	vals, err := s.dec.plainValues(p, len(dst))
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
}

// recodeVocab is finalVocab for symbols in any order: it keeps the symbols
// the codes use, adds EndSymbol when an episode was padded, sorts them and
// recodes in place.
func recodeVocab(all []string, codes []uint16, padded bool) []string {
	sorted, rank := sortSymbols(all)
	used := usedCodes(codes, len(all))
	usedSorted := make([]bool, len(all))
	for i, u := range used {
		usedSorted[rank[i]] = u
	}
	vocab := keptVocab(sorted, usedSorted, padded)
	bySorted := recodeTable(sorted, usedSorted, vocab)
	recode := make([]uint16, len(all))
	for i := range recode {
		recode[i] = bySorted[rank[i]]
	}
	applyCodes(codes, recode, endCode(vocab, padded))
	return vocab
}

// sortSymbols returns the symbols all sorted, and the rank of each symbol
// of all in that order.
func sortSymbols(all []string) (sorted []string, rank []uint16) {
	order := symbolOrder(all)
	sorted = make([]string, len(all))
	rank = make([]uint16, len(all)+1)
	for r, i := range order {
		sorted[r] = all[i]
		rank[i] = uint16(r)
	}
	return sorted, rank
}

// symbolOrder returns the indexes of the symbols all in the order of the
// symbols.
func symbolOrder(all []string) []int {
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
	return order
}
