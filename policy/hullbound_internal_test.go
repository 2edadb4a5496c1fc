package policy

import (
	"context"
	"math"
	"testing"

	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
)

// TestHullGainByHand: three states, two kept points b₁ = (½, ½, 0) and
// b₂ = (0, ½, ½) with gains −0.4 and −0.2. At b = (¼, ½, ¼) each point
// alone has weight ½ (the sawtooth's gain min(−0.2, −0.1) = −0.2), while
// b = ½b₁ + ½b₂ exactly, so the hull's gain is −0.3. At b = (½, ½, 0)
// only b₁ can enter (b₂ needs state 3), with weight 1: gain −0.4. At a
// corner (1, 0, 0) neither can: 0.
func TestHullGainByHand(t *testing.T) {
	sw := &sawtooth{H: 1, sets: []ubSet{{}, {
		b:    [][]float64{{0.5, 0.5, 0}, {0, 0.5, 0.5}},
		gain: []float64{-0.4, -0.2},
	}}}
	sc := &hullScratch{}
	for _, c := range []struct {
		b    []float64
		want float64
	}{
		{[]float64{0.25, 0.5, 0.25}, -0.3},
		{[]float64{0.5, 0.5, 0}, -0.4},
		{[]float64{1, 0, 0}, 0},
		{[]float64{0.1, 0.8, 0.1}, -0.12}, // λ = (0.2, 0.2), the first and third states binding; the sawtooth's −0.08
	} {
		if got := sw.hullGain(1, c.b, sc); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("hull gain at %v: %v, want %v", c.b, got, c.want)
		}
	}
}

// TestHullBound: on random models, through Plan, the upper bound with
// HullBound is at or below TightBound's sawtooth (and exact iteration)
// and above the exact planner's optimum, at α = 0 and α = 1, and strictly
// below on some model; the plan itself does not change.
func TestHullBound(t *testing.T) {
	ctx := context.Background()
	tighter := 0
	spec := func(seed uint64) pessimismtest.Spec {
		return pessimismtest.Spec{States: 3 + int(seed%3), Obs: 2 + int(seed%3), Actions: 2 + int(seed%2), Horizon: 3 + int(seed%3)}
	}
	eachBoundCase(t, 31, spec, func(c boundCase) {
		_, saw, err := Plan(ctx, c.m, c.b, PlanOptions{Planner: PlannerBelief, Points: 8, TightBound: true})
		if err != nil {
			t.Fatal(err)
		}
		_, hull, err := Plan(ctx, c.m, c.b, PlanOptions{Planner: PlannerBelief, Points: 8, TightBound: true, HullBound: true, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d α %g: optimum %.6f, sawtooth %.6f, hull %.6f", c.seed, c.alpha, c.ex.Value, saw.UpperBound, hull.UpperBound)
		if hull.UpperBound > saw.UpperBound+1e-12 || hull.UpperBound < c.ex.Value-1e-9 {
			t.Errorf("seed %d α %g: hull bound %v outside [optimum %v, sawtooth %v]", c.seed, c.alpha, hull.UpperBound, c.ex.Value, saw.UpperBound)
		}
		if hull.Value != saw.Value {
			t.Errorf("seed %d α %g: the plan's value moved with the bound: %v, %v", c.seed, c.alpha, hull.Value, saw.Value)
		}
		if hull.UpperBound < saw.UpperBound-1e-6 {
			tighter++
		}
	})
	if tighter == 0 {
		t.Fatal("the hull bound was never below the sawtooth: want it tighter on some model")
	}
}
