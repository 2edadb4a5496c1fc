package pipeline

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/baseline"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
)

func TestFallbackDecision(t *testing.T) {
	iw := func(lower, ess float64) policy.IWResult {
		return policy.IWResult{Lower: lower, Upper: lower + 0.1, ESS: ess}
	}
	inf := math.Inf(-1)
	for _, c := range []struct {
		name      string
		planB     float64
		plan      policy.IWResult
		cands     []policy.IWResult
		wantBound float64
		wantWin   int
	}{
		{"clone proven above the plan's cross bound", 0.2, iw(0, 1), []policy.IWResult{iw(0.3, 100), iw(0.1, 50)}, 0.2, 0},
		{"second candidate above the first", 0.2, iw(0, 1), []policy.IWResult{iw(0.3, 100), iw(0.35, 50)}, 0.2, 1},
		{"both below the plan's cross bound", 0.4, iw(0, 1), []policy.IWResult{iw(0.3, 100), iw(0.35, 50)}, 0.4, -1},
		{"estimates too thin to count", 0.2, iw(0, 1), []policy.IWResult{iw(0.3, 29), iw(0.35, 10)}, 0.2, -1},
		{"a checked plan must be beaten above its upper bound", 0.2, iw(0.25, 30), []policy.IWResult{iw(0.3, 100)}, 0.35, -1},
		{"a checked plan beaten above its upper bound", 0.2, iw(0.1, 30), []policy.IWResult{iw(0.3, 100)}, 0.2, 0},
		{"plan's own estimate ignored when thin", 0.2, iw(0.35, 29), []policy.IWResult{iw(0.3, 100)}, 0.2, 0},
		{"equal bounds keep the plan", 0.3, iw(0, 1), []policy.IWResult{iw(0.3, 100)}, 0.3, -1},
		{"equal candidates keep the first", 0.1, iw(0, 1), []policy.IWResult{iw(0.3, 100), iw(0.3, 100)}, 0.1, 0},
		{"NaN cross bound counts as no bound", math.NaN(), iw(0, 1), []policy.IWResult{iw(-0.5, 100)}, inf, 0},
	} {
		b, bounds, win := fallbackDecision(c.planB, c.plan, c.cands)
		if b != c.wantBound || win != c.wantWin || len(bounds) != len(c.cands) {
			t.Errorf("%s: bound %v win %d (%d bounds), want %v %d", c.name, b, win, len(bounds), c.wantBound, c.wantWin)
		}
		for i, x := range c.cands {
			want := x.Lower
			if x.ESS < 30 {
				want = inf
			}
			if i < len(bounds) && bounds[i] != want {
				t.Errorf("%s: candidate %d bound %v, want %v", c.name, i, bounds[i], want)
			}
		}
	}
}

// TestFallbackNarrowLogs: tiger logs of a behaviour that listens 98% of
// the time. Every logged episode but a few follows "always listen", so the
// supported policies' held-out bounds are tight, while a plan that opens a
// door has only a few logged steps of each opening to stand on. The
// default run returns the supported policy with the best bound, states
// it, and its policy is worth at least its reported bound; with
// --fallback none the plan is returned.
func TestFallbackNarrowLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("fits simulated logs")
	}
	ctx := context.Background()
	m, err := pomdp.ParseFile(filepath.Join("..", "examples", "tiger.pomdp"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := pomdp.ParseBehavior("fixed:listen:0.02", m)
	if err != nil {
		t.Fatal(err)
	}
	const H, K = 3, 400
	d, err := pomdp.SimulateDataset(ctx, m, H, K, b, 11)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Estimate: estimate.Options{Rank: 2, Restarts: 2, MaxIter: 60}, Seed: 5, Workers: 2}
	out, err := Fit(ctx, d, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	fb := out.Fallback
	x := fb.ChosenCandidate()
	if fb == nil || !fb.Used || x == nil {
		t.Fatalf("fallback %+v, want used", fb)
	}
	// The clone decided: its bound beat the plan's score.
	cl := fb.Candidates[0]
	if cl.Name != PlannerClone || !(float64(cl.Bound) > float64(fb.PlanBound)) || cl.ESS < 30 || (fb.PlanESS >= 30 && !(cl.Bound > fb.PlanIWUpper)) {
		t.Errorf("fallback used with clone %+v, plan bound %v", cl, fb.PlanBound)
	}
	// The improved clone stands in when it was scored and its bound
	// counts, the clone otherwise; the improved behaviour when its bound
	// counts and the paired difference does not favour that one.
	wantName := PlannerClone
	for _, c := range fb.Candidates[1:] {
		if c.Name == PlannerImprovedClone && c.ESS >= 30 {
			wantName = c.Name
		}
	}
	for _, c := range fb.Candidates[1:] {
		if c.Name == PlannerImprovedBehavior && c.ESS >= 30 && !(fb.StandInDiff > 0) {
			wantName = c.Name
		}
	}
	if x.Name != wantName {
		t.Errorf("returned %s, want %s (candidates %+v)", x.Name, wantName, fb.Candidates)
	}
	want, err := baseline.BehaviorCloning(ctx, d, baseline.CloneOptions{AllFirst: true, Improve: x.Name == PlannerImprovedClone,
		Mix: x.Name == PlannerImprovedBehavior})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Policy.Nodes) != len(want.Nodes) {
		t.Fatalf("policy has %d rows, the %s %d", len(out.Policy.Nodes), x.Name, len(want.Nodes))
	}
	for i, n := range out.Policy.Nodes {
		c := want.Nodes[i]
		if n.Obs != c.Obs || n.Action != c.Action || n.Parent != c.Parent || n.Fallback != c.Fallback {
			t.Fatalf("row %d: %+v, %s %+v", i, n, x.Name, c)
		}
	}
	if out.Plan.Planner != x.Name {
		t.Errorf("planner %q, want %q", out.Plan.Planner, x.Name)
	}
	// The reported bound is the clone's held-out bound, in units.
	hl := out.Run.Manifest.Headline
	if math.Abs(float64(hl.LCBUnits)-float64(x.IWLowerUnits)) > 1e-9 {
		t.Errorf("headline LCB %v units, %s's held-out bound %v", hl.LCBUnits, x.Name, x.IWLowerUnits)
	}
	// And it is a bound: the clone's exact value under the true model.
	v, err := pomdp.EvaluatePolicy(ctx, m, H, out.Policy)
	if err != nil {
		t.Fatal(err)
	}
	if float64(hl.LCBUnits) > v {
		t.Errorf("reported bound %v above the returned policy's true value %v", hl.LCBUnits, v)
	}
	t.Logf("returned the %s: true value %.4f, reported bound %.4f (candidates %+v)", x.Name, v, float64(hl.LCBUnits), fb.Candidates)
	if v < -3-1e-9 {
		t.Errorf("returned policy worth %v, below always listening (−3)", v)
	}
	// The report's comparison states the model's gain over the behaviour
	// from the headline's model value, not from the clone's rows (its
	// unlogged first rows are NaN).
	if c := out.Run.Compare; c != nil {
		want := float64(hl.ModelValueUnits - hl.BehaviorUnits)
		if !(math.Abs(c.Total-want) <= 1e-9) {
			t.Errorf("comparison's total gain %v, want the headline's %v", c.Total, want)
		}
	}
	if man := out.Run.Manifest; man.Fallback != fb || man.Parameters["fallback"] != FallbackBehavior {
		t.Errorf("manifest fallback %+v, parameter %v", man.Fallback, man.Parameters["fallback"])
	}
	if !strings.Contains(out.Run.Manifest.Headline.Verdict, "set aside") {
		t.Errorf("verdict does not say the plan was set aside: %s", out.Run.Manifest.Headline.Verdict)
	}

	o.Fallback = FallbackNone
	none, err := Fit(ctx, d, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if none.Fallback != nil || none.Plan.Planner == PlannerClone {
		t.Errorf("--fallback none: fallback %+v, planner %q", none.Fallback, none.Plan.Planner)
	}
}

// TestStandIn: once the clone has set the plan aside, the improved clone
// is the deterministic stand-in when it was scored and its bound counts,
// whatever the two bounds' order, the clone otherwise; the improved
// behaviour replaces it when its bound counts and the paired difference
// does not favour the deterministic one.
func TestStandIn(t *testing.T) {
	inf, nan := math.Inf(-1), math.NaN()
	both := []string{PlannerClone, PlannerImprovedClone}
	all := []string{PlannerClone, PlannerImprovedClone, PlannerImprovedBehavior}
	mixed := []string{PlannerClone, PlannerImprovedBehavior}
	for _, c := range []struct {
		names  []string
		bounds []float64
		diff   float64
		want   string
	}{
		{both, []float64{0.5, 0.4}, nan, PlannerImprovedClone},
		{both, []float64{0.5, 0.6}, nan, PlannerImprovedClone},
		{both, []float64{0.5, inf}, nan, PlannerClone},
		{[]string{PlannerClone}, []float64{0.5}, nan, PlannerClone},
		{all, []float64{0.5, 0.4, 0.45}, -0.01, PlannerImprovedBehavior},
		{all, []float64{0.5, 0.4, 0.3}, 0, PlannerImprovedBehavior},
		{all, []float64{0.5, 0.4, 0.6}, 0.01, PlannerImprovedClone},
		{all, []float64{0.5, inf, 0.45}, 0.01, PlannerClone},
		{all, []float64{0.5, inf, 0.45}, -0.01, PlannerImprovedBehavior},
		{all, []float64{0.5, 0.6, inf}, -0.01, PlannerImprovedClone},
		{mixed, []float64{inf, 0.1}, 0.2, PlannerClone},
		{mixed, []float64{inf, 0.1}, -0.2, PlannerImprovedBehavior},
		{mixed, []float64{inf, inf}, -0.2, PlannerClone},
	} {
		if got := StandIn(c.names, c.bounds, c.diff); got != c.want {
			t.Errorf("%v %v diff %v: %s, want %s", c.names, c.bounds, c.diff, got, c.want)
		}
	}
}

// TestPairedDiff: the paired estimate is the mean of (w_a − w_b)·R over
// the episodes, by hand: one step, actions x (propensity 0.5), y (0.5);
// a takes x, b takes x and y with probabilities 0.25 and 0.75.
func TestPairedDiff(t *testing.T) {
	d := &ingest.Dataset{Horizon: 1, ObsVocab: []string{"s"}, ActVocab: []string{"x", "y"},
		EpisodeIDs: []string{"0", "1", "2"}, Length: []int32{1, 1, 1},
		Obs: []uint16{0, 0, 0}, Act: []uint16{0, 1, 0}, Reward: []float64{1, 0.5, 0}, Propensity: []float64{0.5, 0.5, 0.5}}
	a := &policy.Policy{Horizon: 1, Nodes: []policy.Node{{ID: 0, Parent: -1, Step: 1, Obs: "s", Action: "x", Fallback: "x"}}}
	b := &policy.Policy{Horizon: 1, Nodes: []policy.Node{
		{ID: 0, Parent: -1, Step: 1, Obs: "s", Action: "x", Fallback: "x"},
		{ID: 1, Parent: -1, Step: 1, Obs: "s", Action: "y", Fallback: "x"}}, Probs: []float64{0.25, 0.75}}
	m := &estimate.Model{ReturnMin: 0, ReturnMax: 2} // R = reward / 2
	// w_a = 2, 0, 2; w_b = 0.5, 1.5, 0.5; R = 0.5, 0.25, 0.
	want := ((2-0.5)*0.5 + (0-1.5)*0.25 + 0) / 3
	got, err := PairedDiff(m, a, b, d)
	if err != nil || math.Abs(got-want) > 1e-12 {
		t.Errorf("PairedDiff = %v (%v), want %v", got, err, want)
	}
}
