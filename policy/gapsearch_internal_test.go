package policy

import (
	"context"
	"testing"

	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
)

// TestGapSearch: on random models planned with too few belief points for
// their stated gap to meet TargetGap, the gap search (run directly,
// after the rounds and the upper bound a fit's final plan computes)
// keeps the plan's value or raises it, keeps the upper bound or lowers
// it, and the upper bound stays above the exact planner's optimum, at
// α = 0 and α = 1 (the value never above the optimum); on some model it
// shrinks the stated gap. With 3 workers, which value the actions of
// the sequential backups on the workers (upperQs), every figure is the
// same exactly.
func TestGapSearch(t *testing.T) {
	ctx := context.Background()
	shrunk, searched := 0, 0
	spec := func(seed uint64) pessimismtest.Spec {
		return pessimismtest.Spec{States: 3 + int(seed%3), Obs: 2 + int(seed%3), Actions: 2 + int(seed%2), Horizon: 4 + int(seed%2)}
	}
	// plan returns the plan's rounds and upper bound with 3 points a
	// step and the workers given, and its gap search when the stated
	// gap is above TargetGap.
	type planned struct {
		best, after planRound
		ub, ub2     float64
		searched    bool
	}
	plan := func(c boundCase, workers int) planned {
		bp, ft, err := prepareBeliefPlan(ctx, c.m, c.b, 3, workers)
		if err != nil {
			t.Fatal(err)
		}
		bp.tightBound = true
		var p planned
		if p.best, err = bp.rounds(ctx, ft, DefaultRowBudget); err != nil {
			t.Fatal(err)
		}
		if p.ub, err = bp.upperBound(ctx, ft); err != nil {
			t.Fatal(err)
		}
		if p.searched = p.ub-(p.best.v.r-p.best.v.b) > TargetGap; p.searched {
			if p.after, p.ub2, err = bp.gapSearch(ctx, ft, DefaultRowBudget, p.best, p.ub); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	eachBoundCase(t, 37, spec, func(c boundCase) {
		p := plan(c, 1)
		if !p.searched {
			return
		}
		searched++
		before, value, ub, ub2 := p.best.v.r-p.best.v.b, p.after.v.r-p.after.v.b, p.ub, p.ub2
		t.Logf("seed %d α %g: optimum %.6f; value %.6f → %.6f, upper bound %.6f → %.6f", c.seed, c.alpha, c.ex.Value, before, value, ub, ub2)
		if value < before || ub2 > ub || ub2 < c.ex.Value-1e-9 || value > c.ex.Value+1e-9 {
			t.Errorf("seed %d α %g: value %v → %v, upper bound %v → %v, optimum %v", c.seed, c.alpha, before, value, ub, ub2, c.ex.Value)
		}
		if ub2-value < ub-before-1e-6 {
			shrunk++
		}
		// With 3 workers the sequential backups value the actions on
		// the workers (upperQs): the same bounds and plan exactly.
		if p3 := plan(c, 3); p3.ub != ub || p3.ub2 != ub2 || p3.after.v != p.after.v {
			t.Errorf("seed %d α %g: with 3 workers upper bound %v → %v, value %v; with 1: %v → %v, %v", c.seed, c.alpha, p3.ub, p3.ub2, p3.after.v.r-p3.after.v.b, ub, ub2, value)
		}
	})
	if searched == 0 || shrunk == 0 {
		t.Fatalf("the gap search ran on %d models and shrank the gap on %d: want some of each", searched, shrunk)
	}
}

// TestRelaxedGuideBounds: the gap search's guide holds lower vectors of
// the relaxed problem the sawtooth bounds from above. On random models
// (α = 0 and 1, 4 points per step) its root value must lie at or below
// the relaxed problem's exact optimum (exact value iteration, 10⁻⁹),
// before and after point backups, deepest first, at the beliefs a
// planner of 50 points per step has, and the sawtooth's root value at
// or above it; the backups must raise the guide's value on some model
// (they are the trials' lower-bound updates).
func TestRelaxedGuideBounds(t *testing.T) {
	ctx := context.Background()
	raised := 0
	spec := func(seed uint64) pessimismtest.Spec {
		return pessimismtest.Spec{States: 2 + int(seed%3), Obs: 2 + int(seed%2), Actions: 2 + int(seed%2), Horizon: 3 + int(seed%3)}
	}
	eachBoundCase(t, 59, spec, func(c boundCase) {
		bp, ft, err := prepareBeliefPlan(ctx, c.m, c.b, 4, 1)
		if err != nil {
			t.Fatal(err)
		}
		sw, base := bp.newSawtooth(ft)
		exact, _, ok, err := bp.exactRelaxedValue(ctx, sw)
		if err != nil || !ok {
			t.Fatalf("seed %d α %g: exact value iteration failed (%v, %v)", c.seed, c.alpha, ok, err)
		}
		guide, err := bp.relaxedGuide(ctx, sw.rr)
		if err != nil {
			t.Fatal(err)
		}
		root := func() float64 {
			return guide.rootValue(func(b []float64) float64 {
				v, _ := guide.alphaFor(1, false).bestRowwise(bp.S, b)
				return v
			})
		}
		before := root()
		more, _, err := prepareBeliefPlan(ctx, c.m, c.b, 50, 1)
		if err != nil {
			t.Fatal(err)
		}
		for h := bp.H; h >= 1; h-- {
			for _, pt := range more.pts[h] {
				guide.backupPoint(h, pt)
			}
		}
		after := root()
		for h := bp.H; h >= 1; h-- {
			for _, pt := range bp.pts[h] {
				bp.addSawtoothPoint(sw, h, pt.b)
			}
		}
		upper := bp.rootUpper(sw)
		t.Logf("seed %d α %g: guide %.6f → %.6f, exact relaxed %.6f, sawtooth %.6f (base %.4f)", c.seed, c.alpha, before, after, exact, upper, base)
		if before > exact+1e-9 || after > exact+1e-9 || upper < exact-1e-9 {
			t.Errorf("seed %d α %g: guide %v → %v, exact %v, sawtooth %v", c.seed, c.alpha, before, after, exact, upper)
		}
		if after > before+1e-9 {
			raised++
		}
	})
	if raised == 0 {
		t.Error("the point backups never raised the guide's value")
	}
}
