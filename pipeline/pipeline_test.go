package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/psrlcb/psrlcb/errkind"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
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

// TestDefaultRunRecordsRankSearchAndSelection: with rank and α automatic
// (the defaults, here with a small rank cap and few iterations), the run
// records every tried rank (fit.arrow kind = rank), the restarts asked for
// (not the single warm start of the later fits), a selection whose
// chosen candidate is not saturated and whose reason names the chosen α,
// and, with the default bound correction, a reported bound no higher than
// the planner's own. Every stage announces its work and never advances
// past it.
func TestDefaultRunRecordsRankSearchAndSelection(t *testing.T) {
	if testing.Short() {
		t.Skip("fits the example logs")
	}
	logs := []string{filepath.Join("..", "examples", "tiger-logs.parquet")}
	rec := &recorder{totals: map[string]int64{}, done: map[string]int64{}}
	o := Options{Estimate: estimate.Options{MaxRank: 3, MaxIter: 40}, Seed: 3, Progress: rec}
	res, err := Run(context.Background(), logs, o)
	if err != nil {
		t.Fatal(err)
	}
	rows := res.Fit.RankTable
	if len(rows) < 2 || rows[0].Rank != 1 {
		t.Fatalf("rank rows %+v", rows)
	}
	chosen := 0
	for _, r := range rows {
		if r.Chosen {
			chosen++
			if r.Rank != res.Model.States {
				t.Errorf("chosen rank %d, model has %d states", r.Rank, res.Model.States)
			}
		}
	}
	if chosen != 1 || len(res.Run.Ranks) != len(rows) {
		t.Errorf("%d chosen ranks, %d report rank rows for %d tried", chosen, len(res.Run.Ranks), len(rows))
	}
	if got := res.Run.Manifest.Parameters["restarts"]; got != estimate.DefaultRestarts {
		t.Errorf("restarts recorded %v, want %d", got, estimate.DefaultRestarts)
	}
	sel := res.Selection
	if sel == nil || len(sel.Candidates) != len(pessimism.AutoAlphas()) {
		t.Fatalf("selection %+v", sel)
	}
	c := sel.Candidates[sel.Chosen]
	if c.Saturated || !strings.Contains(sel.Reason, fmt.Sprintf("α = %g", c.Alpha)) {
		t.Errorf("chosen %+v, reason %q", c, sel.Reason)
	}
	// Only the chosen candidate's plan is kept past the estimate stage;
	// the others' coverage was computed before they were dropped.
	for i, c := range sel.Candidates {
		if (c.Policy != nil) != (i == sel.Chosen) {
			t.Errorf("candidate %d (chosen %v): policy kept %v", i, i == sel.Chosen, c.Policy != nil)
		}
	}
	if len(res.Run.Alphas) != len(sel.Candidates) {
		t.Fatalf("%d α rows for %d candidates", len(res.Run.Alphas), len(sel.Candidates))
	}
	for _, r := range res.Run.Alphas {
		if math.IsNaN(r.CInf) || r.CInf < 1 {
			t.Errorf("α = %v: C∞ %v (want ≥ 1)", r.Alpha, r.CInf)
		}
	}
	// Uniform logs: the clone is followed by as few held-out episodes as
	// the plan, and the plan keeps its place. The improved clone and the
	// improved behaviour are scored too but do not decide (on these logs
	// the improved clone's optimistic interval would have set the optimal
	// plan aside).
	var names []string
	if fb := res.Fallback; fb != nil {
		for _, c := range fb.Candidates {
			names = append(names, c.Name)
		}
	}
	if fb := res.Fallback; fb == nil || fb.Used || fb.Chosen != "plan" ||
		!slices.Equal(names, []string{PlannerClone, PlannerImprovedClone, PlannerImprovedBehavior}) {
		t.Errorf("fallback %+v, planner %q: want checked and not used", fb, res.Plan.Planner)
	}
	hl := res.Run.Manifest.Headline
	if planned := res.Plan.ValueReward - res.Plan.ValueBonus; float64(hl.LCB) > planned+1e-12 {
		t.Errorf("reported bound %v above the planner's %v", hl.LCB, planned)
	}
	if res.Bound != nil && !res.Fallback.Used && !(res.BoundAlpha > res.Alpha) {
		t.Errorf("bound corrected at α_r %v, not above α %v", res.BoundAlpha, res.Alpha)
	}
	for _, s := range []string{"ingest", "split", "estimate", "pessimism", "policy", "report"} {
		if tot, ok := rec.totals[s]; !ok || tot <= 0 {
			t.Errorf("stage %s: total %d", s, tot)
		}
	}
	// The rank search's total is unknown, but it reports its EM work.
	if tot, ok := rec.totals["rank"]; !ok || tot != 0 || rec.done["rank"] <= 0 {
		t.Errorf("stage rank: total %d (want 0, unknown), advanced %d", tot, rec.done["rank"])
	}
	// Every stage with a known total ends at it: past its total would be
	// a wrong total, short of it a log that ends with time left.
	for s, tot := range rec.totals {
		if tot > 0 && rec.done[s] != tot {
			t.Errorf("stage %s ended at %d of its total %d", s, rec.done[s], tot)
		}
	}
}

// TestPolicyStageProgressEnds: a belief plan whose table is far smaller
// than the history tree (10 rows here) still ends the policy stage's
// progress at its total, so no reader sees the finished stage at a few
// per cent with minutes left; so does the estimate stage, whose EM stops
// well short of its iteration cap.
func TestPolicyStageProgressEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("fits the example logs")
	}
	logs := []string{filepath.Join("..", "examples", "tiger-logs.parquet")}
	rec := &recorder{totals: map[string]int64{}, done: map[string]int64{}}
	o := Options{Estimate: estimate.Options{Rank: 2, Restarts: 1, MaxIter: 20}, Alpha: pessimism.AlphaSpec{Mode: pessimism.AlphaFixed, Values: []float64{1}},
		Planner: policy.PlannerBelief, PlanRows: 10, Seed: 3, Progress: rec}
	res, err := Run(context.Background(), logs, o)
	if err != nil {
		t.Fatal(err)
	}
	tot := rec.totals["policy"]
	if res.Plan.Planner != policy.PlannerBelief || res.Plan.Nodes >= tot {
		t.Fatalf("planner %q with %d rows against a total of %d: want a belief table smaller than the tree", res.Plan.Planner, res.Plan.Nodes, tot)
	}
	for _, s := range []string{"policy", "estimate"} {
		if rec.done[s] != rec.totals[s] {
			t.Errorf("stage %s ended at %d of its total %d", s, rec.done[s], rec.totals[s])
		}
	}
}
