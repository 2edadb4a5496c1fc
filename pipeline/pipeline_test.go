package pipeline

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

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
	// Worked by hand: frac 0.2, H 4: K = 5 holds out round(1.0) = 1 and
	// fits 4. Frac 0.5, H 2: K = 3 holds out round(1.5) = 2 and fits 1 < 2;
	// K = 4 holds out 2 and fits 2.
	for _, c := range []struct {
		frac    float64
		H, want int
	}{{0.2, 4, 5}, {0.5, 2, 4}} {
		if got := minHeldOutEpisodes(c.frac, c.H); got != c.want {
			t.Errorf("minHeldOutEpisodes(%v, %d) = %d, want %d", c.frac, c.H, got, c.want)
		}
	}
}

// recorder is a progress.Reporter that keeps each stage's total and the
// units advanced.
type recorder struct {
	stage  string
	totals map[string]int64
	done   map[string]int64
}

func (r *recorder) StartStage(name string, total int64) { r.stage = name; r.totals[name] = total }
func (r *recorder) Advance(n int64, _ string)           { r.done[r.stage] += n }
func (r *recorder) EndStage(string, time.Duration)      {}
func (r *recorder) Info(string, ...any)                 {}

// A run that chooses both α and the rank keeps the rank's evidence (the
// held-out likelihood of every rank tried, from the α-selection fit), and
// every stage announces its work and never advances past it.
func TestAutoRankEvidenceAndProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("fits the example logs")
	}
	logs := []string{filepath.Join("..", "examples", "tiger-logs.parquet")}
	rec := &recorder{totals: map[string]int64{}, done: map[string]int64{}}
	o := Options{Estimate: estimate.Options{MaxRank: 3, Restarts: 1, MaxIter: 20}, Seed: 1, Progress: rec}
	res, err := Run(context.Background(), logs, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Selection == nil {
		t.Fatal("α was not chosen among candidates")
	}
	ranks := res.Run.Ranks
	if len(ranks) != 3 {
		t.Fatalf("%d rank rows, want 3 (ranks 1..3)", len(ranks))
	}
	chosen := 0
	for _, r := range ranks {
		if r.Chosen {
			chosen = r.Rank
		}
	}
	if chosen != res.Model.States {
		t.Errorf("rank table chose %d, model has %d states", chosen, res.Model.States)
	}
	for _, s := range []string{"ingest", "select-α", "split", "estimate", "pessimism", "policy", "report"} {
		tot, ok := rec.totals[s]
		if !ok || tot <= 0 {
			t.Errorf("stage %s: total %d", s, tot)
		}
		if rec.done[s] > tot {
			t.Errorf("stage %s advanced %d past its total %d", s, rec.done[s], tot)
		}
	}
	// EM budget by hand: select-α fits ranks 1..3 on the training part
	// then the chosen rank again, one start of ≤ 20 iterations each.
	if got := rec.totals["select-α"]; got != (3+1)*1*20 {
		t.Errorf("select-α total %d, want 80", got)
	}
	if got := rec.totals["estimate"]; got != 20 {
		t.Errorf("estimate total %d, want 20 (warm start at the chosen rank)", got)
	}
}
