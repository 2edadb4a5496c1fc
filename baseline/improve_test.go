package baseline

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
)

// repeat returns n copies of the episode ep.
func repeat(n int, ep []step) [][]step {
	out := make([][]step, n)
	for i := range out {
		out[i] = ep
	}
	return out
}

// TestImproveHand: two steps; at the start the behaviour took x 90 times
// and y 40 times.
func TestImproveHand(t *testing.T) {
	ctx := context.Background()
	obs, act := []string{"a", "b", "s"}, []string{"x", "y"}
	// Case 1: y pays nothing at once but leads to b, where every action
	// pays 1; x leads to a, which pays 0. Q^b(s,x) = 0, Q^b(s,y) = 1
	// with no spread, so any z departs to y; the plain clone takes x.
	var eps [][]step
	eps = append(eps, repeat(90, []step{{"s", "x", 0}, {"a", "x", 0}})...)
	eps = append(eps, repeat(40, []step{{"s", "y", 0}, {"b", "x", 1}})...)
	d := mkDataset(t, 2, obs, act, eps)
	cases := []struct {
		name string
		opts CloneOptions
		want string
	}{
		{"plain", CloneOptions{}, "x"},
		{"improved", CloneOptions{Improve: true}, "y"},
		// 40 visits of y, fewer than 41 asked: no departure.
		{"too few visits", CloneOptions{Improve: true, MinVisits: 41}, "x"},
	}
	for _, c := range cases {
		p, err := BehaviorCloning(ctx, d, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Nodes[0].Action; p.Nodes[0].Obs != "s" || got != c.want {
			t.Errorf("%s: step 1 takes %q, want %q", c.name, got, c.want)
		}
	}
}

// thresholdLogs are the one-step logs of the standard-error tests: x
// logged 1000 times paying 0.45, y logged ny times paying 0 and 1
// alternately.
func thresholdLogs(t *testing.T, ny int) *ingest.Dataset {
	eps := repeat(1000, []step{{"s", "x", 0.45}})
	for i := range ny {
		eps = append(eps, []step{{"s", "y", float64(i % 2)}})
	}
	return mkDataset(t, 1, []string{"s"}, []string{"x", "y"}, eps)
}

// actionsOf lists the actions of p's rows in row order.
func actionsOf(p *policy.Policy) []string {
	var out []string
	for _, n := range p.Nodes {
		out = append(out, n.Action)
	}
	return out
}

// TestImproveStandardError checks the test's threshold against a figure
// computed by hand. One step; x (the most logged) always pays 0.45; y
// pays 0 and 1 alternately, mean 0.5, sample variance n/(4(n−1)), so the
// standard error of its mean is sqrt(1/(4(n−1))) and that of the
// difference the same (x has none). The difference 0.05 exceeds
// 1.96·SE only when n − 1 > (1.96/0.1)² = 384.16: y with 384 visits keeps
// x, y with 386 departs. Returns are rescaled by their range 1, which
// changes no comparison.
func TestImproveStandardError(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		ny   int
		want string
	}{{384, "x"}, {386, "y"}} {
		p, err := BehaviorCloning(ctx, thresholdLogs(t, c.ny), CloneOptions{Improve: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Nodes[0].Action; got != c.want {
			t.Errorf("y logged %d times: step 1 takes %q, want %q", c.ny, got, c.want)
		}
	}
}

// TestMixHand: the improved behaviour (CloneOptions.Mix) on the two-step
// logs of TestImproveHand. Where y is better than the rest of the
// behaviour's choices it takes y alone (a deterministic policy, no
// probabilities); where the two start actions are worth the same it keeps
// their logged shares, 90/130 and 40/130, with the children of each row
// below it, the reach probabilities the shares and the values the mean
// return of the episodes through each row.
func TestMixHand(t *testing.T) {
	ctx := context.Background()
	obs, act := []string{"a", "b", "s"}, []string{"x", "y"}
	var eps [][]step
	eps = append(eps, repeat(90, []step{{"s", "x", 0}, {"a", "x", 0}})...)
	eps = append(eps, repeat(40, []step{{"s", "y", 0}, {"b", "x", 1}})...)
	p, err := BehaviorCloning(ctx, mkDataset(t, 2, obs, act, eps), CloneOptions{Mix: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Stochastic() || len(p.Nodes) != 2 || p.Nodes[0].Action != "y" || p.Nodes[1].Obs != "b" || p.Nodes[1].Action != "x" {
		t.Fatalf("better y: %+v (probabilities %v), want s→y, b→x", p.Nodes, p.Probs)
	}

	// Equal worth: x then 1 always; y then 0 and 2 alternately (mean 1).
	eps = repeat(90, []step{{"s", "x", 0}, {"a", "x", 1}})
	for i := range 40 {
		eps = append(eps, []step{{"s", "y", 0}, {"b", "x", float64(2 * (i % 2))}})
	}
	p, err = BehaviorCloning(ctx, mkDataset(t, 2, obs, act, eps), CloneOptions{Mix: true})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		parent           int64
		obs, act         string
		prob, reach, val float64
	}
	// Returns rescaled by their range [0, 2]: x's episodes 0.5, y's mean 0.5.
	want := []row{{-1, "s", "x", 90. / 130, 90. / 130, 0.5}, {-1, "s", "y", 40. / 130, 40. / 130, 0.5},
		{0, "a", "x", 1, 90. / 130, 0.5}, {1, "b", "x", 1, 40. / 130, 0.5}}
	if !p.Stochastic() || len(p.Nodes) != len(want) {
		t.Fatalf("equal worth: %+v (probabilities %v), want %d rows with probabilities", p.Nodes, p.Probs, len(want))
	}
	for i, w := range want {
		n := p.Nodes[i]
		if n.Parent != w.parent || n.Obs != w.obs || n.Action != w.act || math.Abs(p.Probs[i]-w.prob) > tol ||
			math.Abs(n.ReachProb-w.reach) > tol || math.Abs(n.ValueReward-w.val) > tol {
			t.Errorf("row %d: %+v probability %v, want %+v", i, n, p.Probs[i], w)
		}
	}
}

// TestMixStandardError: the improved behaviour's test compares an action
// with the rest of the behaviour's choices at the history. With x paying
// 0.45 always and y 0 and 1 alternately, the rest of y's visits is x
// alone, so the threshold is TestImproveStandardError's: 384 visits of y
// keep the mix (shares 1000/1384 and 384/1384), 386 take y; x, worse
// than the rest, is never taken alone.
func TestMixStandardError(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		ny   int
		want []string
	}{{384, []string{"x", "y"}}, {386, []string{"y"}}} {
		p, err := BehaviorCloning(ctx, thresholdLogs(t, c.ny), CloneOptions{Mix: true})
		if err != nil {
			t.Fatal(err)
		}
		got := actionsOf(p)
		if !slices.Equal(got, c.want) {
			t.Fatalf("y logged %d times: actions %v, want %v", c.ny, got, c.want)
		}
		if len(got) == 2 {
			n := float64(1000 + c.ny)
			if math.Abs(p.Probs[0]-1000/n) > tol || math.Abs(p.Probs[1]-float64(c.ny)/n) > tol {
				t.Errorf("y logged %d times: probabilities %v", c.ny, p.Probs)
			}
		}
	}
}

// TestMixPropensities: with logged propensities the improved behaviour
// takes each logged action with its propensity, renormalised over the
// logged actions, whatever the visit counts: x, y, z logged 50, 40 and
// 10 times with propensities 0.6, 0.3, 0.1 give 0.6, 0.3, 0.1; without z's
// visits, 0.6/0.9 and 0.3/0.9.
func TestMixPropensities(t *testing.T) {
	ctx := context.Background()
	prop := map[string]float64{"x": 0.6, "y": 0.3, "z": 0.1}
	for _, c := range []struct {
		counts map[string]int
		want   []float64
	}{
		{map[string]int{"x": 50, "y": 40, "z": 10}, []float64{0.6, 0.3, 0.1}},
		{map[string]int{"x": 50, "y": 40}, []float64{0.6 / 0.9, 0.3 / 0.9}},
	} {
		var eps [][]step
		var ps []float64
		for _, a := range []string{"x", "y", "z"} {
			for i := range c.counts[a] {
				eps = append(eps, []step{{"s", a, float64(i % 2)}})
				ps = append(ps, prop[a])
			}
		}
		d := mkDataset(t, 1, []string{"s"}, []string{"x", "y", "z"}, eps)
		d.Propensity = ps
		p, err := BehaviorCloning(ctx, d, CloneOptions{Mix: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Probs) != len(c.want) {
			t.Fatalf("%v: probabilities %v, want %v", c.counts, p.Probs, c.want)
		}
		for i, w := range c.want {
			if math.Abs(p.Probs[i]-w) > tol {
				t.Errorf("%v: probabilities %v, want %v", c.counts, p.Probs, c.want)
			}
		}
	}
}

// TestMixDropsWorse: the improved behaviour leaves out a logged action
// the logs show worse than the history's other logged visits. x and y,
// 1000 visits each, pay 0 and 1 alternately (mean 0.5); z, 40 visits,
// pays 0. z against the rest: 0.5 − 0 above 1.96 × 0.0112 (the rest's
// standard error; z has none), so it is dropped. x against y and z:
// 0.5 − 500/1040 = 0.019, below 1.96 × hypot(0.0158, 0.0155) = 0.043, so
// the history keeps the mix of x and y, 1000/2000 each.
func TestMixDropsWorse(t *testing.T) {
	ctx := context.Background()
	var eps [][]step
	for i := range 2000 {
		eps = append(eps, []step{{"s", []string{"x", "y"}[i/1000], float64(i % 2)}})
	}
	eps = append(eps, repeat(40, []step{{"s", "z", 0}})...)
	d := mkDataset(t, 1, []string{"s"}, []string{"x", "y", "z"}, eps)
	p, err := BehaviorCloning(ctx, d, CloneOptions{Mix: true})
	if err != nil {
		t.Fatal(err)
	}
	got := actionsOf(p)
	if !slices.Equal(got, []string{"x", "y"}) || !slices.Equal(p.Probs, []float64{0.5, 0.5}) {
		t.Errorf("actions %v probabilities %v, want x and y at 0.5", got, p.Probs)
	}
	// With z's visits fewer than MinVisits it is kept, at 40/2040.
	p, err = BehaviorCloning(ctx, d, CloneOptions{Mix: true, MinVisits: 41})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Nodes) != 3 || math.Abs(p.Probs[2]-40./2040) > tol {
		t.Errorf("z below MinVisits: %d rows, probabilities %v", len(p.Nodes), p.Probs)
	}
}
