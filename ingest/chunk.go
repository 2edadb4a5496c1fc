package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"math"

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
	term []bool    // nil when the file has no terminal column

	bad     []rowErr
	maxStep int // over rows without row errors
}

// readChunk reads one row group column by column, page by page.
func readChunk(of *openedFile, fileIdx int, rgIdx int, rowBase int64, horizon int) (c *chunk, err error) {
	name := of.src.name
	defer recoverUnreadable(name, &err)
	rg := of.f.RowGroups()[rgIdx]
	n := int(rg.NumRows())
	cc := rg.ColumnChunks()
	c = &chunk{file: fileIdx, rowBase: rowBase, n: n}
	cols := &of.cols

	wrap := func(r schemas.Role, err error) error {
		if err == nil {
			return nil
		}
		var fe *FileError
		if errors.As(err, &fe) {
			if fe.File == "" {
				fe.File = name
			}
			return err
		}
		return &FileError{File: name, Err: ErrUnreadable, Detail: fmt.Sprintf("column %q, row group %d: %v", cols[r].name, rgIdx, err)}
	}

	// Episode ids first, so later problems can name the episode.
	c.ids = newSymTable(cols[schemas.Episode].kind == schemas.KindInt)
	c.ep = make([]int32, n)
	if err := readSymbols(cc[cols[schemas.Episode].index], cols[schemas.Episode], n, c.ids, c.ep, math.MaxInt32, func(row int) {
		c.ep[row] = -1
		c.bad = append(c.bad, rowErr{row: int32(row), err: ErrNull, detail: "in column " + quote(cols[schemas.Episode].name)})
	}); err != nil {
		return nil, wrap(schemas.Episode, err)
	}

	c.step = make([]uint16, n)
	if err := c.readSteps(cc[cols[schemas.Step].index], cols[schemas.Step], horizon); err != nil {
		return nil, wrap(schemas.Step, err)
	}

	nullIn := func(r schemas.Role) func(row int) {
		detail := "in column " + quote(cols[r].name)
		return func(row int) {
			c.bad = append(c.bad, rowErr{row: int32(row), step: int(c.step[row]), err: ErrNull, detail: detail})
		}
	}
	for _, r := range []schemas.Role{schemas.Observation, schemas.Action} {
		t := newSymTable(cols[r].kind == schemas.KindInt)
		dst := make([]uint16, n)
		if err := readSymbols(cc[cols[r].index], cols[r], n, t, dst, MaxSymbols-1, nullIn(r)); err != nil {
			return nil, wrap(r, err)
		}
		c.checkReserved(t, dst, cols[r].name)
		if r == schemas.Observation {
			c.obsT, c.obs = t, dst
		} else {
			c.actT, c.act = t, dst
		}
	}

	c.rew = make([]float64, n)
	if err := readFloats(cc[cols[schemas.Reward].index], cols[schemas.Reward], n, c.rew, nullIn(schemas.Reward)); err != nil {
		return nil, wrap(schemas.Reward, err)
	}
	c.checkRewards()

	if spec := cols[schemas.Propensity]; spec.index >= 0 {
		c.prop = make([]float64, n)
		if err := readFloats(cc[spec.index], spec, n, c.prop, nullIn(schemas.Propensity)); err != nil {
			return nil, wrap(schemas.Propensity, err)
		}
		c.checkPropensities()
	}

	if spec := cols[schemas.Terminal]; spec.index >= 0 {
		c.term = make([]bool, n)
		if err := readBools(cc[spec.index], spec, n, c.term, nullIn(schemas.Terminal)); err != nil {
			return nil, wrap(schemas.Terminal, err)
		}
	}

	c.setMaxStep()
	return c, nil
}

// checkReserved records the rows of a string column (col) whose symbol is
// the reserved EndSymbol.
func (c *chunk) checkReserved(t *symTable, dst []uint16, col string) {
	if t.intKind {
		return
	}
	code, ok := t.strs[EndSymbol]
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

// readSteps reads the step column, checking 1 <= step <= horizon (or
// MaxHorizon when the horizon comes from the data). Invalid steps are
// stored as 0 and reported as row errors.
func (c *chunk) readSteps(cc parquet.ColumnChunk, spec colSpec, horizon int) error {
	limit := int64(MaxHorizon)
	if horizon > 0 {
		limit = int64(horizon)
	}
	dec := intDecoder(spec)
	check := func(row int, v int64) {
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
	return walkPages(cc, c.n, func(row, nr int, defs []byte, p parquet.Page) error {
		vals, err := dec.values(p, nonNull(defs, spec.max, nr))
		if err != nil {
			return err
		}
		j := 0
		for i := 0; i < nr; i++ {
			if defs != nil && int(defs[i]) != spec.max {
				c.bad = append(c.bad, rowErr{row: int32(row + i), err: ErrNull, detail: "in column " + quote(spec.name)})
				continue
			}
			check(row+i, vals[j])
			j++
		}
		return nil
	})
}

// readSymbols reads a categorical column into chunk-local codes.
func readSymbols[T int32 | uint16](cc parquet.ColumnChunk, spec colSpec, n int, t *symTable, dst []T, maxCodes int, null func(row int)) error {
	var lastDict parquet.Dictionary
	var dictCodes []T
	var local []int32
	ints := intDecoder(spec)
	tooMany := func() error {
		return &FileError{File: "", Err: ErrTooManySymbols, Detail: fmt.Sprintf("column %q has more than %d distinct values (%s)", spec.name, maxCodes, symbolLimitHelp)}
	}
	return walkPages(cc, n, func(row, nr int, defs []byte, p parquet.Page) error {
		need := nonNull(defs, spec.max, nr)
		out := dst[row : row+nr]
		if dict := p.Dictionary(); dict != nil {
			if dict != lastDict {
				// Map the row group's dictionary to codes once.
				var err error
				if local, err = dictSymbols(local[:0], dict, spec, t, ints.buf); err != nil {
					return err
				}
				dictCodes = dictCodes[:0]
				for _, l := range local {
					dictCodes = append(dictCodes, T(l))
				}
				if t.len() > maxCodes {
					return tooMany()
				}
				lastDict = dict
			}
			idx, err := dictIndexes(p, dict, need)
			if err != nil {
				return err
			}
			if defs == nil {
				for i, x := range idx {
					out[i] = dictCodes[x]
				}
				return nil
			}
			j := 0
			for i := range out {
				if int(defs[i]) != spec.max {
					null(row + i)
					continue
				}
				out[i] = dictCodes[idx[j]]
				j++
			}
			return nil
		}
		// Plain pages: a map lookup per value, skipped while the value
		// repeats (rows of an episode are usually adjacent).
		if t.intKind {
			vals, err := ints.plainValues(p, need)
			if err != nil {
				return err
			}
			var last int64
			var lastCode T
			have := false
			j := 0
			for i := range out {
				if defs != nil && int(defs[i]) != spec.max {
					null(row + i)
					continue
				}
				v := vals[j]
				j++
				if !have || v != last {
					lastCode, last, have = T(t.int(v)), v, true
					if t.len() > maxCodes {
						return tooMany()
					}
				}
				out[i] = lastCode
			}
			return nil
		}
		data, off, err := byteArrays(p, need)
		if err != nil {
			return err
		}
		var last []byte
		var lastCode T
		have := false
		j := 0
		for i := range out {
			if defs != nil && int(defs[i]) != spec.max {
				null(row + i)
				continue
			}
			b := data[off[j]:off[j+1]]
			j++
			if !have || !bytes.Equal(b, last) {
				lastCode, last, have = T(t.str(b)), b, true
				if t.len() > maxCodes {
					return tooMany()
				}
			}
			out[i] = lastCode
		}
		return nil
	})
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

// readBools reads a boolean column (bit-packed in the page).
func readBools(cc parquet.ColumnChunk, spec colSpec, n int, dst []bool, null func(row int)) error {
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
		out := dst[row : row+nr]
		j := 0
		for i := range out {
			if defs != nil && int(defs[i]) != spec.max {
				null(row + i)
				continue
			}
			out[i] = bits[j>>3]>>(j&7)&1 != 0
			j++
		}
		return nil
	})
}
