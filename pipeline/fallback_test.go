package pipeline

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/baseline"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
)

func TestFallbackDecision(t *testing.T) {
	iw := func(lower, ess float64) policy.IWResult { return policy.IWResult{Lower: lower, ESS: ess} }
	for _, c := range []struct {
		name         string
		planB        float64
		plan, clone  policy.IWResult
		wantBound    float64
		wantFallback bool
	}{
		{"clone proven above the plan's cross bound", 0.2, iw(0, 1), iw(0.3, 100), 0.2, true},
		{"clone below the plan's cross bound", 0.4, iw(0, 1), iw(0.3, 100), 0.4, false},
		{"clone's estimate too thin to count", 0.2, iw(0, 1), iw(0.3, 29), 0.2, false},
		{"plan's own estimate counts when thick enough", 0.2, iw(0.35, 30), iw(0.3, 100), 0.35, false},
		{"plan's own estimate ignored when thin", 0.2, iw(0.35, 29), iw(0.3, 100), 0.2, true},
		{"equal bounds keep the plan", 0.3, iw(0, 1), iw(0.3, 100), 0.3, false},
		{"NaN cross bound counts as no bound", math.NaN(), iw(0, 1), iw(-0.5, 100), math.Inf(-1), true},
	} {
		b, fb := fallbackDecision(c.planB, c.plan, c.clone)
		if b != c.wantBound || fb != c.wantFallback {
			t.Errorf("%s: bound %v fallback %v, want %v %v", c.name, b, fb, c.wantBound, c.wantFallback)
		}
	}
}

// TestFallbackNarrowLogs: tiger logs of a behaviour that listens 98% of
// the time. Every logged episode but a few follows "always listen", so the
// clone's held-out bound is tight, while a plan that opens a door has
// only a few logged steps of each opening to stand on. The default run
// returns the clone, states it, and its policy is worth what the logs
// say; with --fallback none the plan is returned.
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
	if fb == nil || !fb.Used {
		t.Fatalf("fallback %+v, want used", fb)
	}
	if !(float64(fb.CloneIWLower) > float64(fb.PlanBound)) || fb.CloneESS < 30 {
		t.Errorf("fallback used with clone bound %v (ESS %v), plan bound %v", fb.CloneIWLower, fb.CloneESS, fb.PlanBound)
	}
	clone, err := baseline.BehaviorCloning(ctx, d, baseline.CloneOptions{AllFirst: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Policy.Nodes) != len(clone.Nodes) {
		t.Fatalf("policy has %d rows, the clone %d", len(out.Policy.Nodes), len(clone.Nodes))
	}
	for i, n := range out.Policy.Nodes {
		c := clone.Nodes[i]
		if n.Obs != c.Obs || n.Action != c.Action || n.Parent != c.Parent || n.Fallback != c.Fallback {
			t.Fatalf("row %d: %+v, clone %+v", i, n, c)
		}
	}
	if out.Plan.Planner != PlannerClone {
		t.Errorf("planner %q, want %q", out.Plan.Planner, PlannerClone)
	}
	// The reported bound is the clone's held-out bound, in units.
	hl := out.Run.Manifest.Headline
	if math.Abs(float64(hl.LCBUnits)-float64(fb.CloneIWLowerUnits)) > 1e-9 {
		t.Errorf("headline LCB %v units, clone's held-out bound %v", hl.LCBUnits, fb.CloneIWLowerUnits)
	}
	// And it is a bound: the clone's exact value under the true model.
	v, err := pomdp.EvaluatePolicy(ctx, m, H, out.Policy)
	if err != nil {
		t.Fatal(err)
	}
	if float64(hl.LCBUnits) > v {
		t.Errorf("reported bound %v above the returned policy's true value %v", hl.LCBUnits, v)
	}
	if v < -3-1e-9 {
		t.Errorf("returned policy worth %v, below always listening (−3)", v)
	}
	if man := out.Run.Manifest; man.Fallback != fb || man.Parameters["fallback"] != FallbackClone {
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
