package policy

import (
	"context"
	"math"
	"testing"
)

// TestTopBound: the bound exact over the first steps (two at H = 4,
// three at H = 5) lies above the exact optimum on random models (α = 1,
// the exact planner's optimum; 10⁻⁹) and below the bound of the charge
// by history code it takes its tangents from on some model, and it is
// the same with 1 and 3 workers. With its tails' root term scaled by 3 (the
// charge no longer below the bonus) it falls below the optimum on some
// model, so the comparison can fail.
func TestTopBound(t *testing.T) {
	ctx := context.Background()
	ran, tighter, broken := 0, 0, 0
	eachBoundCase(t, 67, chargeSpec, func(c boundCase) {
		if c.alpha == 0 || c.m.Horizon < 4 {
			return
		}
		bp, _, _, byObs := plannedCharges(t, c.m, c.b)
		if byObs == nil {
			t.Fatalf("seed %d: no charge by history code", c.seed)
		}
		ub, _, err := bp.topBound(ctx, byObs)
		if err != nil {
			t.Fatal(err)
		}
		if math.IsInf(ub, 1) {
			t.Fatalf("seed %d: the bound did not run", c.seed)
		}
		ran++
		obs, err := bp.obsBound(ctx, byObs)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d H %d: optimum %.6f, exact first steps %.6f, by history code %.6f", c.seed, c.m.Horizon, c.ex.Value, ub, obs)
		if ub < c.ex.Value-1e-9 {
			t.Errorf("seed %d: bound %v below the optimum %v", c.seed, ub, c.ex.Value)
		}
		if ub < obs-1e-9 {
			tighter++
		}
		bp.workers = 3
		if again, _, _ := bp.topBound(ctx, byObs); again != ub {
			t.Errorf("seed %d: %v with 3 workers, %v with 1", c.seed, again, ub)
		}
		bp.workers = 1
		topRootScale = 3
		if wrong, _, _ := bp.topBound(ctx, byObs); wrong < c.ex.Value-1e-9 {
			broken++
		}
		topRootScale = 1
	})
	if ran == 0 || tighter == 0 || broken == 0 {
		t.Errorf("the bound ran on %d models, was below the charge by history code's on %d and broken by a tripled root term on %d: want all > 0", ran, tighter, broken)
	}
}
