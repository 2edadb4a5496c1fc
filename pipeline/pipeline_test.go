package pipeline

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/psrlcb/psrlcb/errkind"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
)

// The Go zero value and the command line's "auto" are one run: the same
// resolved parameters, so the same run id.
func TestZeroOptionsAreTheCLIDefaults(t *testing.T) {
	auto, err := pessimism.ParseAlpha("auto")
	if err != nil {
		t.Fatal(err)
	}
	a, err := Options{}.resolved()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Options{Alpha: auto, Lambda: pessimism.DefaultLambda, SelectHeldOut: DefaultSelectHeldOut}.resolved()
	if err != nil {
		t.Fatal(err)
	}
	d := &ingest.Dataset{Horizon: 4}
	if pa, pb := a.params(d), b.params(d); !reflect.DeepEqual(pa, pb) {
		t.Errorf("params differ:\n%+v\n%+v", pa, pb)
	}
	if got := a.params(d).AlphaOption; got != "auto" {
		t.Errorf("alpha option %q, want auto", got)
	}
}

// Invalid options fail before any input is read (the input here does not
// exist, so reading it would be an I/O error instead).
func TestOptionsCheckedBeforeWork(t *testing.T) {
	missing := []string{filepath.Join(t.TempDir(), "none.parquet")}
	for name, o := range map[string]Options{
		"budget":  {PlanBudget: -5},
		"lambda":  {Lambda: -1},
		"heldout": {SelectHeldOut: 1.5},
		"theory":  {Alpha: pessimism.AlphaSpec{Mode: pessimism.AlphaTheory}},
		"alpha":   {Alpha: pessimism.AlphaSpec{Mode: pessimism.AlphaFixed, Values: []float64{-1}}},
	} {
		_, err := Run(context.Background(), missing, o)
		if !errors.Is(err, ErrOptions) || errkind.Of(err) != errkind.Options {
			t.Errorf("%s: err = %v, want an options error", name, err)
		}
	}
}

// The run id covers the ingest options too: the same logs read with
// another invalid-episode policy are another run, and the manifest
// records the horizon and that policy.
func TestRunIDCoversIngestOptions(t *testing.T) {
	if testing.Short() {
		t.Skip("fits the example logs twice")
	}
	logs := []string{filepath.Join("..", "examples", "tiger-logs.parquet")}
	base := Options{Estimate: estimate.Options{Rank: 2, Restarts: 1, MaxIter: 30},
		Alpha: pessimism.AlphaSpec{Mode: pessimism.AlphaFixed, Values: []float64{0.3}}, Seed: 1}
	ids := map[string]string{}
	for _, mode := range []string{ingest.OnInvalidFail, ingest.OnInvalidSkip} {
		o := base
		o.Ingest.OnInvalid = mode
		res, err := Run(context.Background(), logs, o)
		if err != nil {
			t.Fatal(err)
		}
		m := res.Run.Manifest
		if m.Parameters["on_invalid"] != mode || m.Parameters["horizon"] != 4 {
			t.Errorf("manifest parameters %v", m.Parameters)
		}
		if _, ok := m.StageTimes["ingest"]; !ok {
			t.Error("no ingest stage time")
		}
		ids[mode] = res.Run.RunID
	}
	if ids[ingest.OnInvalidFail] == ids[ingest.OnInvalidSkip] {
		t.Errorf("run id %s does not depend on the invalid-episode policy", ids[ingest.OnInvalidFail])
	}
}

func TestTooFewEpisodesForHeldOut(t *testing.T) {
	// Worked by hand (H episodes on each side): frac 0.2, H 4: K = 17
	// holds out round(3.4) = 3 < 4; K = 18 holds out round(3.6) = 4 and
	// fits 14. Frac 0.5, H 2: K = 3 holds out round(1.5) = 2 and fits
	// 1 < 2; K = 4 holds out 2 and fits 2.
	for _, c := range []struct {
		frac    float64
		H, want int
	}{{0.2, 4, 18}, {0.5, 2, 4}} {
		if got := minHeldOutEpisodes(c.frac, c.H); got != c.want {
			t.Errorf("minHeldOutEpisodes(%v, %d) = %d, want %d", c.frac, c.H, got, c.want)
		}
	}
}

// TestCalibrateAlpha: bound(x) = 0.8 − 0.1·min(x, 5) reaches 0.5 at x = 3
// exactly; from a = 4 it is already below; 0.2 is out of reach.
func TestCalibrateAlpha(t *testing.T) {
	bound := func(x float64) float64 { return 0.8 - 0.1*math.Min(x, 5) }
	if got := calibrateAlpha(bound, 0.03, 0.5); math.Abs(got-3) > 1e-5 {
		t.Errorf("α_r = %v, want 3", got)
	}
	if got := calibrateAlpha(bound, 4, 0.5); got != 4 {
		t.Errorf("α_r = %v, want the planning α 4", got)
	}
	if got := calibrateAlpha(bound, 0.03, 0.2); !math.IsInf(got, 1) {
		t.Errorf("α_r = %v, want +Inf", got)
	}
}
