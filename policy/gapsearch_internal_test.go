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
// shrinks the stated gap.
func TestGapSearch(t *testing.T) {
	ctx := context.Background()
	shrunk, searched := 0, 0
	spec := func(seed uint64) pessimismtest.Spec {
		return pessimismtest.Spec{States: 3 + int(seed%3), Obs: 2 + int(seed%3), Actions: 2 + int(seed%2), Horizon: 4 + int(seed%2)}
	}
	eachBoundCase(t, 37, spec, func(c boundCase) {
		bp, ft, err := prepareBeliefPlan(ctx, c.m, c.b, 3, 1)
		if err != nil {
			t.Fatal(err)
		}
		bp.tightBound = true
		best, err := bp.rounds(ctx, ft, DefaultRowBudget)
		if err != nil {
			t.Fatal(err)
		}
		ub, err := bp.upperBound(ctx, ft)
		if err != nil {
			t.Fatal(err)
		}
		before := best.v.r - best.v.b
		if ub-before <= TargetGap {
			return
		}
		searched++
		after, ub2, err := bp.gapSearch(ctx, ft, DefaultRowBudget, best, ub)
		if err != nil {
			t.Fatal(err)
		}
		value := after.v.r - after.v.b
		t.Logf("seed %d α %g: optimum %.6f; value %.6f → %.6f, upper bound %.6f → %.6f", c.seed, c.alpha, c.ex.Value, before, value, ub, ub2)
		if value < before || ub2 > ub || ub2 < c.ex.Value-1e-9 || value > c.ex.Value+1e-9 {
			t.Errorf("seed %d α %g: value %v → %v, upper bound %v → %v, optimum %v", c.seed, c.alpha, before, value, ub, ub2, c.ex.Value)
		}
		if ub2-value < ub-before-1e-6 {
			shrunk++
		}
	})
	if searched == 0 || shrunk == 0 {
		t.Fatalf("the gap search ran on %d models and shrank the gap on %d: want some of each", searched, shrunk)
	}
}
