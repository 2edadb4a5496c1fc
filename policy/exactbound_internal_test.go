package policy

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"

	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
)

// TestExactRelaxedBound: on random models at α = 0 the relaxed problem
// is the problem itself, so its exact value iteration must give the exact
// planner's optimum (within 10⁻⁹, before the pruning slack is added); at
// α = 1 it must, with the slack, lie above the exact optimum, and at or
// below the sawtooth bound of the same relaxed problem. The sets must
// stay within their limits on these sizes, and on some model the value
// must be strictly below the sawtooth's. Through Plan, TightBound must state an upper
// bound at or below the sawtooth's alone and above the optimum, strictly
// below on some model.
func TestExactRelaxedBound(t *testing.T) {
	ctx := context.Background()
	tighter, tighterPlan := 0, 0
	spec := func(seed uint64) pessimismtest.Spec {
		return pessimismtest.Spec{States: 2 + int(seed%3), Obs: 2 + int(seed%2), Actions: 2 + int(seed%2), Horizon: 3 + int(seed%3)}
	}
	eachBoundCase(t, 29, spec, func(c boundCase) {
		seed, alpha, m, b, ex := c.seed, c.alpha, c.m, c.b, c.ex
		bp, ft, err := prepareBeliefPlan(ctx, m, b, 50, 1)
		if err != nil {
			t.Fatal(err)
		}
		sw, base := bp.newSawtooth(ft)
		exact, slack, ok, err := bp.exactRelaxedValue(ctx, sw)
		if err != nil || !ok {
			t.Fatalf("seed %d α %g: exact value iteration failed (%v, %v)", seed, alpha, ok, err)
		}
		exact -= base
		for h := bp.H; h >= 1; h-- {
			for _, pt := range bp.pts[h][:min(len(bp.pts[h]), boundPoints)] {
				bp.addSawtoothPoint(sw, h, pt.b)
			}
		}
		saw := bp.rootUpper(sw) - base
		t.Logf("seed %d α %g: optimum %.6f, exact relaxed %.6f, sawtooth %.6f", seed, alpha, ex.Value, exact, saw)
		if alpha == 0 && math.Abs(exact-ex.Value) > 1e-9 {
			t.Errorf("seed %d α 0: exact relaxed value %v, exact optimum %v", seed, exact, ex.Value)
		}
		if exact+slack < ex.Value-1e-9 || exact > saw+1e-9 {
			t.Errorf("seed %d α %g: exact relaxed value %v outside [optimum %v, sawtooth %v]", seed, alpha, exact, ex.Value, saw)
		}
		if exact < saw-1e-6 {
			tighter++
		}
		// Through Plan: with TightBound the stated upper bound is at or
		// below the sawtooth's alone, and still above the optimum.
		var ub [2]float64
		for i, withExact := range []bool{false, true} {
			_, st, err := Plan(ctx, m, b, PlanOptions{Planner: PlannerBelief, Points: 50, TightBound: withExact})
			if err != nil {
				t.Fatal(err)
			}
			ub[i] = st.UpperBound
		}
		if ub[1] > ub[0]+1e-12 || ub[1] < ex.Value-1e-9 {
			t.Errorf("seed %d α %g: stated upper bound %v with TightBound, %v without, optimum %v", seed, alpha, ub[1], ub[0], ex.Value)
		}
		if ub[1] < ub[0]-1e-6 {
			tighterPlan++
		}
	})
	if tighter == 0 || tighterPlan == 0 {
		t.Fatalf("the exact relaxed value was below the sawtooth on %d models, and Plan's stated bound on %d: want some of each", tighter, tighterPlan)
	}
}

// TestSimplexMaxMatchesGonum: witness's simplex against gonum's on
// random programs of Lark's filter (a vector against up to 40 others, in
// up to 8 dimensions, with ties and duplicates), optima within 10⁻⁹, and
// the witness belief attaining the advantage.
func TestSimplexMaxMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 300; trial++ {
		S := 1 + rng.IntN(8)
		n := 1 + rng.IntN(40)
		vec := func() []float64 {
			v := make([]float64, S)
			for s := range v {
				v[s] = math.Round(rng.Float64()*8) / 8 // coarse values: ties and degenerate vertices
			}
			return v
		}
		v := vec()
		kept := make([][]float64, n)
		for j := range kept {
			kept[j] = vec()
		}
		if trial%7 == 0 {
			kept[0] = append([]float64(nil), v...) // a duplicate: advantage ≤ 0
		}
		b, adv, _, ok := witness(v, kept, S)
		if !ok {
			t.Fatalf("trial %d: simplex failed", trial)
		}
		want := gonumAdvantage(t, v, kept, S)
		if math.Abs(adv-want) > 1e-9 {
			t.Fatalf("trial %d (S %d, n %d): advantage %v, gonum %v", trial, S, n, adv, want)
		}
		at := math.Inf(1)
		for _, k := range kept {
			at = min(at, dot(v, b)-dot(k, b))
		}
		if math.Abs(at-adv) > 1e-9 {
			t.Fatalf("trial %d: the witness belief gives %v, not the advantage %v", trial, at, adv)
		}
	}
}

// gonumAdvantage is max_b min_j (v − k_j)·b over the simplex by gonum's
// simplex, in the standard form (b, δ⁺, δ⁻, slacks).
func gonumAdvantage(t *testing.T, v []float64, kept [][]float64, S int) float64 {
	n := len(kept)
	cols := S + 2 + n
	A := mat.NewDense(n+1, cols, nil)
	for j, k := range kept {
		for s := range S {
			A.Set(j, s, v[s]-k[s])
		}
		A.Set(j, S, -1)
		A.Set(j, S+1, 1)
		A.Set(j, S+2+j, -1)
	}
	for s := range S {
		A.Set(n, s, 1)
	}
	c := make([]float64, cols)
	c[S], c[S+1] = -1, 1
	rhs := make([]float64, n+1)
	rhs[n] = 1
	opt, _, err := lp.Simplex(c, A, rhs, 1e-12, nil)
	if err != nil {
		t.Fatal(err)
	}
	return -opt
}
