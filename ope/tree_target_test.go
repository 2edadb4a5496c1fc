package ope_test

import (
	"context"
	"math"
	"testing"

	"github.com/psrlcb/psrlcb/ope"
	"github.com/psrlcb/psrlcb/ope/opetest"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
)

// stochasticTiny is opetest.StochasticTiny:
//
//	step 1, x: L 0.8 (row 0), R 0.2 (row 1)
//	after L, x: L 0.3, R 0.7;  after L, y: R 1
//	after R, x: L 1;  after R, y: no row (row 1's fallback, R)
func stochasticTiny() *policy.Policy { return opetest.StochasticTiny() }

// TestStochasticTreeRatiosByHand: the ratios of stochasticTiny on
// tinyLogs (propensity ½ everywhere) are π(a_h | τ_{h−1}, o_h)/½:
//
//	episode  step 1        step 2
//	1 (L, L)  0.8/½ = 1.6   0.3/½ = 0.6
//	2 (L, R)  1.6           1/½ = 2
//	3 (R, L)  0.2/½ = 0.4   1/½ = 2
//	4 (L, L)  1.6           0 (after L, y the policy takes R only)
//
// so the trajectory weights are 0.96, 3.2, 0.8, 0 and, with the returns
// 3, 4, 6, 2,
//
//	is   = (0.96·3 + 3.2·4 + 0.8·6 + 0)/4 = 20.48/4 = 5.12
//	pdis = [(1.6·1 + 0.96·2) + (1.6·0 + 3.2·4) + (0.4·5 + 0.8·1) + (1.6·2 + 0)]/4 = 22.32/4 = 5.58
func TestStochasticTreeRatiosByHand(t *testing.T) {
	d := tinyLogs()
	tgt, err := ope.NewTreeTarget(stochasticTiny(), d)
	if err != nil {
		t.Fatal(err)
	}
	if tgt.Deterministic() {
		t.Error("a stochastic tree says it is deterministic")
	}
	rho, err := ope.Ratios(context.Background(), d, tgt, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1.6, 0.6, 1.6, 2, 0.4, 2, 1.6, 0}
	for i := range want {
		if !near(rho[i], want[i]) {
			t.Errorf("ratios %v, want %v", rho, want)
			break
		}
	}
	res, err := ope.Evaluate(context.Background(), d, rho, tgt, ope.Options{Bootstrap: -1})
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]float64{ope.EstIS: 5.12, ope.EstPDIS: 5.58} {
		if e := res.Get(name); e == nil || !near(e.Value, w) {
			t.Errorf("%s = %+v, want %v", name, e, w)
		}
	}
}

// TestStochasticTreeFollowerBranches: a follower gives the policy's
// probabilities of every action, and clones branch on the action taken:
// after x, L then y the policy takes R; after x, R then x it takes L;
// after x, R then y it has left the rows for row 1's fallback R.
func TestStochasticTreeFollowerBranches(t *testing.T) {
	d := tinyLogs()
	tgt, err := ope.NewTreeTarget(stochasticTiny(), d)
	if err != nil {
		t.Fatal(err)
	}
	const L, R, x, y = 0, 1, 0, 1
	p := make([]float64, 2)
	next := func(f ope.Follower, prev, obs int, want []float64, what string) {
		t.Helper()
		if err := f.Next(prev, obs, p); err != nil || !near(p[0], want[0]) || !near(p[1], want[1]) {
			t.Errorf("%s: %v, %v; want %v", what, p, err, want)
		}
	}
	f := tgt.Follow()
	next(f, -1, x, []float64{0.8, 0.2}, "step 1, x")
	afterR, afterR2 := f.Clone(), f.Clone()
	next(f, L, y, []float64{0, 1}, "x, L, y")
	next(afterR, R, x, []float64{1, 0}, "x, R, x")
	next(afterR2, R, y, []float64{0, 1}, "x, R, y (fallback)")
}

// stochasticTigerTree is pomdp's H = 2 stochastic tiger tree
// (pomdp/stochastic_tree_test.go): listen 0.6 or open-left 0.4, then
// mixtures of opening and listening.
func stochasticTigerTree() *policy.Policy {
	return &policy.Policy{Horizon: 2, Nodes: []policy.Node{
		{ID: 0, Parent: -1, Step: 1, Obs: pomdp.InitSymbol, Action: "listen", Fallback: "listen"},
		{ID: 1, Parent: -1, Step: 1, Obs: pomdp.InitSymbol, Action: "open-left", Fallback: "open-right"},
		{ID: 2, Parent: 0, Step: 2, Obs: "hear-left", Action: "open-right", Fallback: "listen"},
		{ID: 3, Parent: 0, Step: 2, Obs: "hear-left", Action: "listen", Fallback: "open-left"},
		{ID: 4, Parent: 0, Step: 2, Obs: "hear-right", Action: "open-left", Fallback: "open-right"},
		{ID: 5, Parent: 1, Step: 2, Obs: "hear-left", Action: "listen", Fallback: "listen"},
		{ID: 6, Parent: 1, Step: 2, Obs: "hear-right", Action: "open-right", Fallback: "open-left"},
		{ID: 7, Parent: 1, Step: 2, Obs: "hear-right", Action: "open-left", Fallback: "listen"},
	}, Probs: []float64{0.6, 0.4, 0.5, 0.5, 1, 1, 0.25, 0.75}}
}

// TestStochasticTreeValues: on uniform tiger logs the true model's value
// of the stochastic tree (exact look-ahead through the follower's clones,
// H = 3, past the rows at step 3) is its exact value under the POMDP
// (pomdp.EvaluatePolicy, which branches over the tree's actions itself),
// and the importance-sampling estimate from 20,000 episodes is within
// four of its standard errors of it.
func TestStochasticTreeValues(t *testing.T) {
	ctx := context.Background()
	d, m := tigerLogs(t, 3, 20000, 2)
	want, err := pomdp.EvaluatePolicy(ctx, m, 3, stochasticTigerTree())
	if err != nil {
		t.Fatal(err)
	}
	truth, err := m.TrueModel(d)
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := ope.NewTreeTarget(stochasticTigerTree(), d)
	if err != nil {
		t.Fatal(err)
	}
	rho, err := ope.Ratios(ctx, d, tgt, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ope.Evaluate(ctx, d, rho, tgt, ope.Options{Bootstrap: -1, Model: truth, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Get(ope.EstModel).Value; math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
		t.Errorf("model value %v, exact %v", got, want)
	}
	is := res.Get(ope.EstIS)
	// The normal interval is the estimate ± 1.96 standard errors.
	se := (is.NormalUpper - is.Value) / 1.96
	if !(se > 0) || math.Abs(is.Value-want) > 4*se {
		t.Errorf("is %v ± %v, exact %v", is.Value, se, want)
	}
}
