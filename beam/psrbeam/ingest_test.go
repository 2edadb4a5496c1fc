package psrbeam

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/psrlcb/psrlcb/ingest"
)

type logRow struct {
	Episode    *string `parquet:"episode_id,optional"`
	Step       int64   `parquet:"step"`
	Obs        string  `parquet:"observation"`
	Act        string  `parquet:"action"`
	Reward     float64 `parquet:"reward"`
	Propensity float64 `parquet:"propensity"`
}

func writeLogs(t *testing.T, path string, rows []logRow) string {
	t.Helper()
	if err := parquet.WriteFile(path, rows, parquet.MaxRowsPerRowGroup(3)); err != nil {
		t.Fatal(err)
	}
	return path
}

func row(id string, step int64, obs string, reward, prop float64) logRow {
	r := logRow{Step: step, Obs: obs, Act: "a", Reward: reward, Propensity: prop}
	if id != "" {
		r.Episode = &id
	}
	return r
}

// TestPrismIngestEqualsRead: the ingest pipeline on Prism returns
// ingest.Read's dataset (quarantine list included) with --on-invalid=skip
// and Read's error message otherwise, on logs whose episodes span row
// groups and files, with every kind of episode problem; and the example
// logs read equal.
func TestPrismIngestEqualsRead(t *testing.T) {
	dir := t.TempDir()
	a := writeLogs(t, filepath.Join(dir, "a.parquet"), []logRow{
		row("e1", 1, "x", 0, 0.5), row("e1", 2, "y", 1, 0.5), row("e2", 1, "y", 0, 0.5),
		row("dup", 1, "x", 0, 0.5), row("dup", 2, "x", 0, 0.5), row("gap", 1, "x", 0, 0.5),
		row("gap", 3, "x", 0, 0.5), row("nan", 1, "x", math.NaN(), 0.5), row("", 2, "x", 0, 0.5),
	})
	b := writeLogs(t, filepath.Join(dir, "b.parquet"), []logRow{
		row("e2", 2, "z", 2, 0.25), row("dup", 2, "x", 0, 0.5), row("dup", 3, "x", 0, 0.5),
		row("e1", 3, "x", 0, 1), row("e2", 3, "x", 0, 1), row("zero", 1, "x", 0, 0),
		row("nan", 2, "x", 0, 0.5), row("nan", 3, "x", 0, 0.5), row("gap", 2, "w", 0, 0.5),
	})
	r := &Runner{Name: "prism"}
	defer r.Close(context.Background())
	cases := []struct {
		files []string
		opts  ingest.Options
	}{
		{[]string{a, b}, ingest.Options{OnInvalid: ingest.OnInvalidSkip}},
		{[]string{a, b}, ingest.Options{}},
		{[]string{b, a}, ingest.Options{Horizon: 2, OnInvalid: ingest.OnInvalidSkip}},
		{[]string{"../../examples/tiger-logs.parquet"}, ingest.Options{}},
	}
	for _, tc := range cases {
		want, werr := ingest.Read(context.Background(), tc.files, tc.opts)
		got, gerr := r.Ingest(context.Background(), tc.files, tc.opts)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Errorf("%v %+v: error %v, Read's %v", tc.files, tc.opts, gerr, werr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v %+v: dataset\n%+v\nRead's\n%+v", tc.files, tc.opts, got, want)
		}
		if want != nil && tc.opts.OnInvalid == ingest.OnInvalidSkip && len(want.Quarantined) < 4 {
			t.Errorf("only %d episodes quarantined: the test logs lost their problems", len(want.Quarantined))
		}
	}
}

// TestReadCheckedKeepsOneRecordPerEpisode: a retried bundle can leave a
// second part file holding the same episodes; the driver keeps one record
// per episode (and one set of null-id errors).
func TestReadCheckedKeepsOneRecordPerEpisode(t *testing.T) {
	dir := t.TempDir()
	w := &writeRecordsFn{Dir: dir}
	for _, rec := range []checkedRecord{
		{H: 2, ID: "a", Data: &ingest.Dataset{Horizon: 2, EpisodeIDs: []string{"a"}}},
		{H: 2, ID: "b", Err: &wireError{File: "f", Episode: "b", Step: 1, Class: ingest.ErrStepGap.Error()}},
		{H: 2, Orphan: true, Orphans: []wireError{{File: "f", Row: 7, Class: ingest.ErrNull.Error()}}},
	} {
		b, err := gobBytes(rec)
		if err != nil {
			t.Fatal(err)
		}
		w.ProcessElement(b)
	}
	saved := append([]byte(nil), w.buf...)
	for range 2 { // the bundle and its retry
		w.buf = append(w.buf[:0], saved...)
		if err := w.FinishBundle(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	r := &Runner{}
	eps, orphans, H, err := r.readChecked(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != 2 || len(orphans) != 1 || H != 2 {
		t.Fatalf("%d episodes, %d null-id errors, H %d; want 2, 1, 2", len(eps), len(orphans), H)
	}
	if e := orphans[0]; !errors.Is(e, ingest.ErrNull) || e.Row != 7 {
		t.Errorf("null-id error %+v", e)
	}
	for _, e := range eps {
		if e.ID == "b" && (e.Err == nil || !errors.Is(e.Err, ingest.ErrStepGap)) {
			t.Errorf("episode b: error %v, want a step gap", e.Err)
		}
	}
}
