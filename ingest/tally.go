package ingest

import (
	"maps"
	"math"
	"slices"

	"github.com/parquet-go/parquet-go"
)

// A summary needs of the propensities only their multiset (quantiles and
// ι), so ReadSummary does not store them cell by cell: the direct path
// tallies each row group's dictionary-encoded propensities by dictionary
// entry and keeps the values of plain pages as they are. On 10⁷ rows
// with a handful of distinct propensities that spares the 80 MB array
// and the summary's pass over it.

// propTally is a multiset of logged propensities: counts by value (keyed
// by their bits) and values not tallied, in segments (those of one row
// group's plain pages each). counted says that the direct path filled it
// in place of Dataset.Propensity.
type propTally struct {
	counted bool
	counts  map[uint64]int64
	extra   [][]float64
}

// add merges t2 into t.
func (t *propTally) add(t2 *propTally) {
	if t.counts == nil {
		t.counts = map[uint64]int64{}
	}
	for b, c := range t2.counts {
		t.counts[b] += c
	}
	t.extra = append(t.extra, t2.extra...)
}

// plain keeps the values of a plain page, in the row group's one segment,
// made with room for the row group's n rows.
func (t *propTally) plain(vals []float64, n int) {
	if len(t.extra) == 0 {
		t.extra = [][]float64{make([]float64, 0, n)}
	}
	t.extra[0] = append(t.extra[0], vals...)
}

// n is the number of values.
func (t *propTally) n() int {
	n := 0
	for _, seg := range t.extra {
		n += len(seg)
	}
	for _, c := range t.counts {
		n += int(c)
	}
	return n
}

// quantiles returns the quantiles qs of the multiset, as Summarize
// computes them from the array: from the distinct values' counts when
// they are few, otherwise by streamQuantiles over the values.
func (t *propTally) quantiles(qs []float64) []float64 {
	n := t.n()
	if n == 0 {
		return nanQuantiles(len(qs))
	}
	c := &fewCounter{max: fewDistinct, ok: true}
	for _, b := range slices.Sorted(maps.Keys(t.counts)) {
		c.addCount(math.Float64frombits(b), int(t.counts[b]))
	}
	for _, seg := range t.extra {
		c.add(seg)
	}
	if c.ok {
		c.sortCounts()
		return c.quantiles(n, qs)
	}
	return streamQuantiles(n, t.visit, qs)
}

// visit passes the multiset's values, the counted ones repeated through
// a buffer.
func (t *propTally) visit(f func([]float64)) {
	buf := make([]float64, 4096)
	for _, b := range slices.Sorted(maps.Keys(t.counts)) {
		v := math.Float64frombits(b)
		for i := range buf {
			buf[i] = v
		}
		for c := int(t.counts[b]); c > 0; c -= len(buf) {
			f(buf[:min(c, len(buf))])
		}
	}
	for _, seg := range t.extra {
		f(seg)
	}
}

// tallyScatter tallies one row group's propensities (a cellScatter whose
// cells are not used): dictionary pages by entry, flushed into the
// counts by value when the dictionary changes or the column ends, plain
// pages kept as values. A value outside (0, 1] abandons the direct path.
type tallyScatter struct {
	dec      *numDecoder[float64]
	t        *propTally
	last     parquet.Dictionary
	dictVals []float64 // the last dictionary's values
	byEntry  []int64   // their tallies since
	rows     int       // of the row group
}

// tallyFloats tallies a propensity column into t.
func tallyFloats(cc parquet.ColumnChunk, spec colSpec, cell []int32, t *propTally) error {
	s := &tallyScatter{dec: floatDecoder(spec), t: t, rows: len(cell)}
	if err := scatterPages(cc, spec, cell, s); err != nil {
		return err
	}
	s.flush()
	return nil
}

// flush moves the tallies by dictionary entry into the counts by value.
func (s *tallyScatter) flush() {
	if s.t.counts == nil {
		s.t.counts = map[uint64]int64{}
	}
	for i, c := range s.byEntry {
		if c > 0 {
			s.t.counts[math.Float64bits(s.dictVals[i])] += c
		}
	}
	s.byEntry = s.byEntry[:0]
}

func (s *tallyScatter) dictPage(p parquet.Page, dict parquet.Dictionary, dst []int32) error {
	if dict != s.last {
		s.flush() // before the decoder's buffer takes the new values
		dictVals, _, err := s.dec.dictionary(dict)
		if err != nil {
			return err
		}
		for _, v := range dictVals {
			if !(v > 0 && v <= 1) {
				return errExact
			}
		}
		s.last, s.dictVals = dict, dictVals
		s.byEntry = slices.Grow(s.byEntry[:0], len(dictVals))[:len(dictVals)]
		clear(s.byEntry)
	}
	idx, err := pageIndexes(p, len(dst)) // byEntry has the dictionary's length
	if err != nil {
		return err
	}
	for _, x := range idx {
		s.byEntry[x]++
	}
	return nil
}

func (s *tallyScatter) plainPage(p parquet.Page, dst []int32) error {
	vals, err := s.dec.plainValues(p, len(dst))
	if err != nil {
		return err
	}
	for _, v := range vals {
		if !(v > 0 && v <= 1) {
			return errExact
		}
	}
	s.t.plain(vals, s.rows)
	return nil
}
