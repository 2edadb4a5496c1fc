package ingest

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// readInPieces is Read done the way a data-parallel engine does it: row
// groups read one by one (in reverse order, as an engine may), rows
// grouped by episode id, each episode checked alone, then merged.
func readInPieces(files []string, opts Options) (*Dataset, error) {
	groups, err := ListRowGroups(files, opts)
	if err != nil {
		return nil, err
	}
	byID := map[string][]EpisodeRows{}
	var order []string
	var orphanRows []EpisodeRows
	var rows int64
	for i := len(groups) - 1; i >= 0; i-- {
		g := groups[i]
		rows += g.Rows
		eps, err := ReadRowGroup(g, opts)
		if err != nil {
			return nil, err
		}
		for _, e := range eps {
			if e.Orphans {
				orphanRows = append([]EpisodeRows{e}, orphanRows...)
				continue
			}
			if _, ok := byID[e.ID]; !ok {
				order = append(order, e.ID)
			}
			byID[e.ID] = append(byID[e.ID], e)
		}
	}
	H := opts.Horizon
	if H == 0 {
		for _, parts := range byID {
			H = max(H, EpisodeMaxStep(parts))
		}
	}
	var orphans []*EpisodeError
	for _, e := range orphanRows {
		orphans = append(orphans, OrphanErrors(e)...)
	}
	var checked []CheckedEpisode
	for _, id := range order {
		ce, err := CheckEpisode(context.Background(), byID[id], H)
		if err != nil {
			return nil, err
		}
		checked = append(checked, ce)
	}
	return Merge(checked, orphans, H, rows, opts)
}

// TestReadInPiecesEqualsRead: the pieces give Read's dataset (skip mode)
// and Read's error, message included (fail mode), on valid logs, on every
// class of invalid episode, with episodes spanning row groups and files.
func TestReadInPiecesEqualsRead(t *testing.T) {
	optional := func(tb *table, col int) *table {
		tb.nodes[col] = parquet.Optional(tb.nodes[col])
		return tb
	}
	intIDs := func() *table {
		tb := &table{}
		tb.col("episode_id", parquet.Int(64)).col("step", parquet.Int(64)).
			col("observation", parquet.Int(64)).col("action", parquet.String()).col("reward", parquet.Leaf(parquet.DoubleType))
		for _, id := range []int64{10, 9, 100} {
			for h := int64(1); h <= 2; h++ {
				tb.add(id, h, id%3+h, "a", float64(h))
			}
		}
		return tb
	}
	cases := map[string]struct {
		files []*table
		opts  Options
	}{
		"valid":                   {[]*table{goodRows(logTable(true, true), true, true)}, Options{}},
		"integer ids and symbols": {[]*table{intIDs()}, Options{}},
		"duplicate across files": {[]*table{
			goodRows(logTable(true, false), true, false).add("bad", int64(1), "o", "a", 0.0, 0.5).add("bad", int64(2), "o", "a", 0.0, 0.5),
			logTable(true, false).add("bad", int64(2), "o", "a", 0.0, 0.5).add("bad", int64(3), "o", "a", 0.0, 0.5)}, Options{}},
		"gap and terminal": {[]*table{goodRows(logTable(true, true), true, true).
			add("gap", int64(1), "o", "a", 0.0, 0.5, false).add("gap", int64(3), "o", "a", 0.0, 0.5, false).
			add("term", int64(1), "o", "a", 0.0, 0.5, true).add("term", int64(2), "o", "a", 0.0, 0.5, false).
			add("short", int64(1), "o", "b", 0.0, 0.5, true).add("short2", int64(1), "o", "a", 0.0, 0.5, false)}, Options{}},
		"too long": {[]*table{goodRows(logTable(false, false), false, false).add("ok", int64(1), "x", "a", 0.0).add("ok", int64(2), "o", "a", 0.0)}, Options{Horizon: 2}},
		"numbers": {[]*table{goodRows(logTable(true, false), true, false).
			add("p", int64(2), "o", "a", 0.0, 0.0).add("r", int64(1), "o", "a", math.NaN(), 0.5).add("s", int64(0), "o", "a", 0.0, 0.5)}, Options{}},
		"nulls and reserved": {[]*table{optional(optional(goodRows(logTable(false, false), false, false), 0), 2).
			add("n", int64(2), nil, "a", 0.0).add(nil, int64(2), "o", "a", 0.0).add("end", int64(1), EndSymbol, "a", 0.0)}, Options{}},
		"all invalid": {[]*table{logTable(false, false).add("x", int64(1), "o", "a", math.Inf(1))}, Options{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			var files []string
			for i, tb := range tc.files {
				files = append(files, tb.write(t, filepath.Join(dir, "f"+string(rune('0'+i))+".parquet"), 2))
			}
			for _, mode := range []string{OnInvalidFail, OnInvalidSkip} {
				o := tc.opts
				o.OnInvalid = mode
				want, werr := Read(context.Background(), files, o)
				got, gerr := readInPieces(files, o)
				if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
					t.Fatalf("%s: error %v, Read's %v", mode, gerr, werr)
				}
				var we, ge *EpisodeError
				if errors.As(werr, &we) != errors.As(gerr, &ge) || we != nil && !errors.Is(gerr, we.Err) {
					t.Errorf("%s: error class %v, Read's %v", mode, gerr, werr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: dataset\n%+v\nRead's\n%+v", mode, got, want)
				}
			}
		})
	}
}

// TestReadInPiecesExamples: the shipped example logs and the DuckDB-written
// files read in pieces equal Read.
func TestReadInPiecesExamples(t *testing.T) {
	for _, f := range []string{"../examples/tiger-logs.parquet", "testdata/duckdb_ints.parquet", "testdata/duckdb_strings.parquet", "testdata/duckdb_nulls.parquet"} {
		for _, mode := range []string{OnInvalidFail, OnInvalidSkip} {
			want, werr := Read(context.Background(), []string{f}, Options{OnInvalid: mode})
			got, gerr := readInPieces([]string{f}, Options{OnInvalid: mode})
			if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
				t.Fatalf("%s %s: error %v, Read's %v", f, mode, gerr, werr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: datasets differ", f, mode)
			}
		}
	}
}

// BenchmarkReadInPieces: Read against Read in pieces (row groups, episodes
// checked one by one, merge) on PSRLCB_BENCH_LOGS, in one process.
func BenchmarkReadInPieces(b *testing.B) {
	path := os.Getenv("PSRLCB_BENCH_LOGS")
	if path == "" {
		b.Skip("PSRLCB_BENCH_LOGS=file.parquet names the logs")
	}
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if _, err := Read(context.Background(), []string{path}, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pieces", func(b *testing.B) {
		for b.Loop() {
			if _, err := readInPieces([]string{path}, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// recArrays is an Arrays that keeps what it allocated.
type recArrays struct {
	u16 [][]uint16
	f64 [][]float64
}

func (r *recArrays) Uint16s(n int) ([]uint16, error) {
	s := make([]uint16, n)
	r.u16 = append(r.u16, s)
	return s, nil
}

func (r *recArrays) Float64s(n int) ([]float64, error) {
	s := make([]float64, n)
	r.f64 = append(r.f64, s)
	return s, nil
}

// TestArraysKeepSkippedDataset: with Options.Arrays (a spill file in
// fit), the dataset's step arrays are the ones it allocated, also when
// invalid episodes were skipped (the kept ones move in place: the
// skipped one sorts first), and the dataset equals the one read onto the
// heap.
func TestArraysKeepSkippedDataset(t *testing.T) {
	dir := t.TempDir()
	f := goodRows(logTable(true, true), true, true).
		add("a-gap", int64(1), "o", "a", 0.0, 0.5, false).add("a-gap", int64(3), "o", "a", 0.0, 0.5, false).
		write(t, filepath.Join(dir, "f.parquet"), 2)
	want, err := Read(context.Background(), []string{f}, Options{OnInvalid: OnInvalidSkip})
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Quarantined) == 0 {
		t.Fatal("no episode was skipped; the test needs one")
	}
	rec := &recArrays{}
	got, err := Read(context.Background(), []string{f}, Options{OnInvalid: OnInvalidSkip, Arrays: rec})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("dataset\n%+v\non the heap\n%+v", got, want)
	}
	if len(rec.u16) != 2 || len(rec.f64) < 1 || &got.Obs[0] != &rec.u16[0][0] || &got.Act[0] != &rec.u16[1][0] || &got.Reward[0] != &rec.f64[0][0] {
		t.Fatal("the step arrays are not the ones Options.Arrays allocated")
	}
}
