package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	mbits "math/bits"
	"slices"

	"github.com/parquet-go/parquet-go"

	"github.com/psrlcb/psrlcb/schemas"
)

// rowErr is a problem found in one row while reading a row group.
type rowErr struct {
	row    int32
	step   int // 0 when the step is unknown or itself invalid
	err    error
	detail string
}

// chunk holds one row group's rows in compact form, with chunk-local codes
// for episode ids and symbols.
type chunk struct {
	file    int   // index of the source
	rowBase int64 // first row of the row group in its file
	n       int

	ids  *symTable
	ep   []int32 // local episode code per row, -1 when null
	step []uint16
	obsT *symTable
	actT *symTable
	obs  []uint16
	act  []uint16
	rew  []float64
	prop []float64 // nil when the file has no propensity column
	term rowFlags  // nil when the file has no terminal column

	bad     []rowErr
	maxStep int // over rows without row errors
}

// chunkReader reads the columns of one row group into a chunk.
type chunkReader struct {
	c     *chunk
	name  string // the file's name
	rgIdx int
	cc    []parquet.ColumnChunk
	cols  *[schemas.NumRoles]colSpec
}

// readChunk reads one row group column by column, page by page.
func readChunk(of *openedFile, fileIdx int, rgIdx int, rowBase int64, horizon int) (c *chunk, err error) {
	name := of.src.name
	defer recoverUnreadable(name, &err)
	rg := of.f.RowGroups()[rgIdx]
	n := int(rg.NumRows())
	c = &chunk{file: fileIdx, rowBase: rowBase, n: n}
	r := &chunkReader{c: c, name: name, rgIdx: rgIdx, cc: rg.ColumnChunks(), cols: &of.cols}
	if err := r.readEpisodesAndSteps(horizon); err != nil {
		return nil, err
	}
	for _, role := range []schemas.Role{schemas.Observation, schemas.Action} {
		if err := r.readSymbolColumn(role); err != nil {
			return nil, err
		}
	}
	if err := r.readNumbers(); err != nil {
		return nil, err
	}
	c.setMaxStep()
	return c, nil
}

// wrap words a column's read error as a FileError naming the file, the
// column and the row group (nil stays nil).
func (r *chunkReader) wrap(role schemas.Role, err error) error {
	if err == nil {
		return nil
	}
	var fe *FileError
	if errors.As(err, &fe) {
		if fe.File == "" {
			fe.File = r.name
		}
		return err
	}
	return &FileError{File: r.name, Err: ErrUnreadable, Detail: fmt.Sprintf("column %q, row group %d: %v", r.cols[role].name, r.rgIdx, err)}
}

// nullIn returns the function recording a null in the role's column as a
// row error.
func (r *chunkReader) nullIn(role schemas.Role) func(row int) {
	c := r.c
	detail := "in column " + quote(r.cols[role].name)
	return func(row int) {
		c.bad = append(c.bad, rowErr{row: int32(row), step: int(c.step[row]), err: ErrNull, detail: detail})
	}
}

// readEpisodesAndSteps reads the episode ids and the steps.
func (r *chunkReader) readEpisodesAndSteps(horizon int) error {
	c, cols := r.c, r.cols
	// Episode ids first, so later problems can name the episode.
	c.ids = newSymTable(cols[schemas.Episode].kind == schemas.KindInt)
	c.ep = make([]int32, c.n)
	if err := readSymbols(r.cc[cols[schemas.Episode].index], cols[schemas.Episode], c.n, c.ids, c.ep, math.MaxInt32, func(row int) {
		c.ep[row] = -1
		c.bad = append(c.bad, rowErr{row: int32(row), err: ErrNull, detail: "in column " + quote(cols[schemas.Episode].name)})
	}); err != nil {
		return r.wrap(schemas.Episode, err)
	}

	c.step = make([]uint16, c.n)
	if err := c.readSteps(r.cc[cols[schemas.Step].index], cols[schemas.Step], horizon); err != nil {
		return r.wrap(schemas.Step, err)
	}
	return nil
}

// readSymbolColumn reads the observation or action column and records
// its rows holding the reserved EndSymbol.
func (r *chunkReader) readSymbolColumn(role schemas.Role) error {
	c, spec := r.c, r.cols[role]
	t := newSymTable(spec.kind == schemas.KindInt)
	dst := make([]uint16, c.n)
	if err := readSymbols(r.cc[spec.index], spec, c.n, t, dst, MaxSymbols-1, r.nullIn(role)); err != nil {
		return r.wrap(role, err)
	}
	c.checkReserved(t, dst, spec.name)
	if role == schemas.Observation {
		c.obsT, c.obs = t, dst
	} else {
		c.actT, c.act = t, dst
	}
	return nil
}

// readNumbers reads and checks the rewards, and the propensities and
// terminal flags when the file has them.
func (r *chunkReader) readNumbers() error {
	c, cols := r.c, r.cols
	c.rew = make([]float64, c.n)
	if err := readFloats(r.cc[cols[schemas.Reward].index], cols[schemas.Reward], c.n, c.rew, r.nullIn(schemas.Reward)); err != nil {
		return r.wrap(schemas.Reward, err)
	}
	c.checkRewards()

	if spec := cols[schemas.Propensity]; spec.index >= 0 {
		c.prop = make([]float64, c.n)
		if err := readFloats(r.cc[spec.index], spec, c.n, c.prop, r.nullIn(schemas.Propensity)); err != nil {
			return r.wrap(schemas.Propensity, err)
		}
		c.checkPropensities()
	}

	if spec := cols[schemas.Terminal]; spec.index >= 0 {
		c.term = newRowFlags(c.n)
		if err := readBools(r.cc[spec.index], spec, c.n, c.term, r.nullIn(schemas.Terminal)); err != nil {
			return r.wrap(schemas.Terminal, err)
		}
	}
	return nil
}

// checkReserved records the rows of a string column (col) whose symbol is
// the reserved EndSymbol.
func (c *chunk) checkReserved(t *symTable, dst []uint16, col string) {
	if t.intKind {
		return
	}
	code, ok := t.code(EndSymbol)
	if !ok {
		return
	}
	for i, v := range dst {
		if int32(v) == code {
			c.bad = append(c.bad, rowErr{row: int32(i), step: int(c.step[i]), err: ErrReservedSymbol, detail: "in column " + quote(col)})
		}
	}
}

// checkRewards records the rows whose reward is not finite or out of
// range.
func (c *chunk) checkRewards() {
	for i, v := range c.rew {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			c.bad = append(c.bad, rowErr{row: int32(i), step: int(c.step[i]), err: ErrReward, detail: fmt.Sprintf("(%v)", v)})
		case math.Abs(v) > MaxAbsReward:
			c.bad = append(c.bad, rowErr{row: int32(i), step: int(c.step[i]), err: ErrRewardRange, detail: fmt.Sprintf("(%g; rescale the rewards: divide them by a constant)", v)})
		}
	}
}

// checkPropensities records the rows whose propensity is not in (0, 1].
func (c *chunk) checkPropensities() {
	for i, p := range c.prop {
		if !(p > 0 && p <= 1) {
			c.bad = append(c.bad, rowErr{row: int32(i), step: int(c.step[i]), err: ErrPropensity, detail: fmt.Sprintf("(%v)", p)})
		}
	}
}

// setMaxStep sets the largest valid step, ignoring rows with problems.
func (c *chunk) setMaxStep() {
	badRow := map[int32]bool{}
	for _, b := range c.bad {
		badRow[b.row] = true
	}
	for i, s := range c.step {
		if int(s) > c.maxStep && !badRow[int32(i)] {
			c.maxStep = int(s)
		}
	}
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// stepLimit is the largest valid step: the horizon, or MaxHorizon when
// the horizon comes from the data.
func stepLimit(horizon int) int64 {
	if horizon > 0 {
		return int64(horizon)
	}
	return int64(MaxHorizon)
}

// readSteps reads the step column, checking 1 <= step <= horizon (or
// MaxHorizon when the horizon comes from the data). Invalid steps are
// stored as 0 and reported as row errors.
func (c *chunk) readSteps(cc parquet.ColumnChunk, spec colSpec, horizon int) error {
	limit := stepLimit(horizon)
	dec := intDecoder(spec)
	var steps dictSteps
	return walkPages(cc, c.n, func(row, nr int, defs []byte, p parquet.Page) error {
		need := nonNull(defs, spec.max, nr)
		if dict := p.Dictionary(); dict != nil && need == nr {
			return steps.page(c, row, p, dict, dec, limit, horizon)
		}
		vals, err := dec.values(p, need)
		if err != nil {
			return err
		}
		j := 0
		for i := 0; i < nr; i++ {
			if defs != nil && int(defs[i]) != spec.max {
				c.bad = append(c.bad, rowErr{row: int32(row + i), err: ErrNull, detail: "in column " + quote(spec.name)})
				continue
			}
			c.checkStep(row+i, vals[j], limit, horizon)
			j++
		}
		return nil
	})
}

// dictSteps reads the dictionary pages of a step column without nulls
// straight into the chunk's steps: each entry of a dictionary is checked
// once, and a row whose entry is not a valid step goes through checkStep,
// which records it. Most logs hold few distinct steps, so this spares a
// 64-bit value per row.
type dictSteps struct {
	last parquet.Dictionary
	vals []int64  // the last dictionary's values
	step []uint16 // their steps, 0 where invalid
}

// page stores the steps of one dictionary page of nr rows from row on.
func (s *dictSteps) page(c *chunk, row int, p parquet.Page, dict parquet.Dictionary, dec *numDecoder[int64], limit int64, horizon int) error {
	if dict != s.last {
		vals, _, err := dec.dictionary(dict)
		if err != nil {
			return err
		}
		s.last, s.vals, s.step = dict, vals, s.step[:0]
		for _, v := range vals {
			var st uint16
			if v >= 1 && v <= limit {
				st = uint16(v)
			}
			s.step = append(s.step, st)
		}
	}
	nr := int(p.NumRows())
	idx, err := dictIndexes(p, dict, nr)
	if err != nil {
		return err
	}
	out := c.step[row : row+nr]
	for i, x := range idx[:nr] {
		if st := s.step[x]; st != 0 {
			out[i] = st
		} else {
			c.checkStep(row+i, s.vals[x], limit, horizon)
		}
	}
	return nil
}

// checkStep stores step v of a row, or records it as a row error when it
// is not in 1..limit (the horizon, or MaxHorizon when horizon is 0).
func (c *chunk) checkStep(row int, v, limit int64, horizon int) {
	switch {
	case v < 1:
		c.bad = append(c.bad, rowErr{row: int32(row), err: ErrStep, detail: fmt.Sprintf("(%d; steps start at 1)", v)})
	case v > limit && horizon > 0:
		c.bad = append(c.bad, rowErr{row: int32(row), step: int(v), err: ErrTooLong, detail: fmt.Sprintf("(horizon %d)", horizon)})
	case v > limit:
		c.bad = append(c.bad, rowErr{row: int32(row), err: ErrStep, detail: fmt.Sprintf("(%d; the largest horizon is %d)", v, MaxHorizon)})
	default:
		c.step[row] = uint16(v)
	}
}

// symbolReader reads one categorical column into chunk-local codes; it
// keeps the codes of the last dictionary met across pages.
type symbolReader[T int32 | uint16] struct {
	spec      colSpec
	t         *symTable
	dst       []T
	maxCodes  int
	null      func(row int)
	ints      *numDecoder[int64]
	lastDict  parquet.Dictionary
	dictCodes []T
	local     []int32
}

// readSymbols reads a categorical column into chunk-local codes.
func readSymbols[T int32 | uint16](cc parquet.ColumnChunk, spec colSpec, n int, t *symTable, dst []T, maxCodes int, null func(row int)) error {
	r := &symbolReader[T]{spec: spec, t: t, dst: dst, maxCodes: maxCodes, null: null, ints: intDecoder(spec)}
	return walkPages(cc, n, r.page)
}

// tooMany is the error for a column with more than maxCodes symbols.
func (r *symbolReader[T]) tooMany() error {
	return &FileError{File: "", Err: ErrTooManySymbols, Detail: fmt.Sprintf("column %q has more than %d distinct values (%s)", r.spec.name, r.maxCodes, symbolLimitHelp)}
}

// page reads the codes of one page's rows, from its dictionary or from its
// plain values.
func (r *symbolReader[T]) page(row, nr int, defs []byte, p parquet.Page) error {
	need := nonNull(defs, r.spec.max, nr)
	out := r.dst[row : row+nr]
	if dict := p.Dictionary(); dict != nil {
		return r.dictPage(row, defs, p, dict, need, out)
	}
	// Plain pages: a map lookup per value, skipped while the value
	// repeats (rows of an episode are usually adjacent).
	if r.t.intKind {
		return r.plainInts(row, defs, p, need, out)
	}
	return r.plainStrings(row, defs, p, need, out)
}

// mapDict maps a row group's dictionary to codes once.
func (r *symbolReader[T]) mapDict(dict parquet.Dictionary) error {
	var err error
	if r.local, err = dictSymbols(r.local[:0], dict, r.spec, r.t, r.ints.buf); err != nil {
		return err
	}
	r.dictCodes = slices.Grow(r.dictCodes[:0], len(r.local))
	for _, l := range r.local {
		r.dictCodes = append(r.dictCodes, T(l))
	}
	if r.t.len() > r.maxCodes {
		return r.tooMany()
	}
	r.lastDict = dict
	return nil
}

// dictPage reads the codes of a dictionary-encoded page into out.
func (r *symbolReader[T]) dictPage(row int, defs []byte, p parquet.Page, dict parquet.Dictionary, need int, out []T) error {
	if dict != r.lastDict {
		if err := r.mapDict(dict); err != nil {
			return err
		}
	}
	idx, err := dictIndexes(p, dict, need)
	if err != nil {
		return err
	}
	if need == len(out) { // no null
		for i, x := range idx[:need] {
			out[i] = r.dictCodes[x]
		}
		return nil
	}
	r.nullableCodes(row, defs, idx, out)
	return nil
}

// nullableCodes fills out with the codes of the dictionary indexes idx of
// a page's non-null rows, and records its null rows.
func (r *symbolReader[T]) nullableCodes(row int, defs []byte, idx []int32, out []T) {
	j := 0
	for i := range out {
		if int(defs[i]) != r.spec.max {
			r.null(row + i)
			continue
		}
		out[i] = r.dictCodes[idx[j]]
		j++
	}
}

// plainInts reads the codes of a plain page of integer symbols into out.
func (r *symbolReader[T]) plainInts(row int, defs []byte, p parquet.Page, need int, out []T) error {
	vals, err := r.ints.plainValues(p, need)
	if err != nil {
		return err
	}
	at := func(j int) int64 { return vals[j] }
	same := func(a, b int64) bool { return a == b }
	return plainCodes(r, row, defs, out, at, same, r.t.int)
}

// plainStrings reads the codes of a plain page of string symbols into out.
func (r *symbolReader[T]) plainStrings(row int, defs []byte, p parquet.Page, need int, out []T) error {
	data, off, err := byteArrays(p, need)
	if err != nil {
		return err
	}
	at := func(j int) []byte { return data[off[j]:off[j+1]] }
	return plainCodes(r, row, defs, out, at, bytes.Equal, r.t.str)
}

// plainCodes fills out with the codes of a plain page's rows: at(j) is the
// j-th non-null value, and its code is looked up only when it is not the
// same as the previous value's.
func plainCodes[T int32 | uint16, V any](r *symbolReader[T], row int, defs []byte, out []T, at func(j int) V, same func(a, b V) bool, code func(V) int32) error {
	var last V
	var lastCode T
	have := false
	j := 0
	for i := range out {
		if defs != nil && int(defs[i]) != r.spec.max {
			r.null(row + i)
			continue
		}
		v := at(j)
		j++
		if !have || !same(v, last) {
			lastCode, last, have = T(code(v)), v, true
			if r.t.len() > r.maxCodes {
				return r.tooMany()
			}
		}
		out[i] = lastCode
	}
	return nil
}

// readFloats reads a numeric column as float64.
func readFloats(cc parquet.ColumnChunk, spec colSpec, n int, dst []float64, null func(row int)) error {
	dec := floatDecoder(spec)
	return walkPages(cc, n, func(row, nr int, defs []byte, p parquet.Page) error {
		vals, err := dec.values(p, nonNull(defs, spec.max, nr))
		if err != nil {
			return err
		}
		out := dst[row : row+nr]
		if defs == nil {
			copy(out, vals)
			return nil
		}
		j := 0
		for i := range out {
			if int(defs[i]) != spec.max {
				null(row + i)
				continue
			}
			out[i] = vals[j]
			j++
		}
		return nil
	})
}

// rowFlags holds a flag per row of a row group, a bit each.
type rowFlags []uint64

func newRowFlags(n int) rowFlags { return make(rowFlags, (n+63)/64) }

// at is the flag of row i.
func (f rowFlags) at(i int) bool { return f[i>>6]>>(i&63)&1 != 0 }

// set raises the flag of row i.
func (f rowFlags) set(i int) { f[i>>6] |= 1 << (i & 63) }

// readBools reads a boolean column (bit-packed in the page).
func readBools(cc parquet.ColumnChunk, spec colSpec, n int, dst rowFlags, null func(row int)) error {
	return walkPages(cc, n, func(row, nr int, defs []byte, p parquet.Page) error {
		need := nonNull(defs, spec.max, nr)
		if p.Dictionary() != nil {
			return errors.New("dictionary-encoded booleans")
		}
		dv := p.Data()
		bits := dv.Boolean()
		if len(bits)*8 < need {
			return errors.New("page holds fewer values than its rows")
		}
		if need == nr { // no null: the set bits, a byte at a time
			for j, b := range bits[:(nr+7)/8] {
				for ; b != 0; b &= b - 1 {
					if i := j*8 + mbits.TrailingZeros8(b); i < nr {
						dst.set(row + i)
					}
				}
			}
			return nil
		}
		j := 0
		for i := range nr {
			if int(defs[i]) != spec.max {
				null(row + i)
				continue
			}
			if bits[j>>3]>>(j&7)&1 != 0 {
				dst.set(row + i)
			}
			j++
		}
		return nil
	})
}
