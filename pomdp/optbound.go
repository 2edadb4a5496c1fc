package pomdp

import (
	"context"
	"slices"

	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
)

// Bounds brackets the optimal H-step value V* of a POMDP whose belief
// tree is too large to solve exactly (OptimalWithin): Lower ≤ V* ≤
// Upper, in the model's reward units.
type Bounds struct {
	// Lower is the value of the policy the belief planner returns, under
	// the true model: no policy is worth more than V*. LowerSE is its
	// Monte Carlo standard error when the policy's table did not hold all
	// its probability (0 when exact).
	Lower, LowerSE float64
	// Upper is the planner's upper bound on V* (the sawtooth bound of
	// docs/planning.md): rigorous, whatever the points.
	Upper float64
	// Points is the number of belief points per step the planner used.
	Points int
}

// OptimalBounds brackets V* of m at horizon H with the belief planner of
// package policy run on m itself, written as the model a fit would
// return if it recovered m exactly (TrueModel), with no bonus (α = 0):
// the planner's policy gives the lower end, its upper bound the upper
// end. The planner is point-based value iteration over the beliefs its
// policy and the behaviours reach (policy.PlanOptions.TightBound, with
// the default points); the bounds, like the plan, do not depend on
// workers. It fails when m is invalid, H < 0 or ctx is cancelled.
func OptimalBounds(ctx context.Context, m *POMDP, H, workers int) (Bounds, error) {
	if _, err := prepareHorizon(m, H); err != nil {
		return Bounds{}, err
	}
	lo, hi := float64(H)*slices.Min(m.Reward), float64(H)*slices.Max(m.Reward)
	if lo == hi {
		// Every policy earns the same return (H = 0 included).
		return Bounds{Lower: lo, Upper: hi}, nil
	}
	d := newDataset(H, 0, append([]string{InitSymbol}, m.Observations...), slices.Clone(m.Actions))
	mod, err := m.trueModel(d, lo, hi)
	if err != nil {
		return Bounds{}, err
	}
	bonus, err := pessimism.Build(ctx, mod, d, make([][]int, H), pessimism.Options{Workers: workers})
	if err != nil {
		return Bounds{}, err
	}
	_, st, err := policy.Plan(ctx, mod, bonus.WithAlpha(0), policy.PlanOptions{
		Planner: policy.PlannerBelief, TightBound: true, Workers: workers})
	if err != nil {
		return Bounds{}, err
	}
	scale := hi - lo
	return Bounds{Lower: lo + st.Value*scale, LowerSE: st.ValueSE * scale, Upper: lo + st.UpperBound*scale, Points: st.Points}, nil
}
