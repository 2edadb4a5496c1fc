package psrbeam

import (
	"context"
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
