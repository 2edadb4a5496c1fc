package pomdp

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

// OptimalBounds brackets the exact V* (OptimalContext) of tiger and of
// random models whose belief trees exceed the planner's points per step,
// and its bracket is narrow: within 2% of the return range H·(max R −
// min R).
func TestOptimalBoundsBracketExact(t *testing.T) {
	type cell struct {
		name string
		m    *POMDP
		H    int
	}
	cells := []cell{{"tiger", tiger(t), 8}}
	rng := rand.New(rand.NewPCG(11, 3))
	for i := range 4 {
		cells = append(cells, cell{"random " + string(rune('a'+i)), randomPOMDP(rng, 5, 3, 3), 6})
	}
	ctx := context.Background()
	for _, c := range cells {
		exact, _, err := OptimalContext(ctx, c.m, c.H)
		if err != nil {
			t.Fatal(err)
		}
		b, err := OptimalBounds(ctx, c.m, c.H, 2)
		if err != nil {
			t.Fatal(err)
		}
		span := float64(c.H) * (slices.Max(c.m.Reward) - slices.Min(c.m.Reward))
		const tol = 1e-9
		if b.Lower-2*b.LowerSE > exact+tol*span || b.Upper < exact-tol*span {
			t.Errorf("%s H=%d: bounds [%v ± %v, %v] miss V* = %v", c.name, c.H, b.Lower, b.LowerSE, b.Upper, exact)
		}
		if b.Upper-b.Lower > 0.02*span {
			t.Errorf("%s H=%d: bounds [%v, %v] wider than 2%% of the return range %v", c.name, c.H, b.Lower, b.Upper, span)
		}
		t.Logf("%s H=%d: V* = %.6g in [%.6g, %.6g] (%d points)", c.name, c.H, exact, b.Lower, b.Upper, b.Points)
	}
}

// A model whose rewards are all equal has V* = H·r, given exactly; H = 0
// gives 0.
func TestOptimalBoundsConstantReward(t *testing.T) {
	m := tiger(t)
	for i := range m.Reward {
		m.Reward[i] = 2
	}
	b, err := OptimalBounds(context.Background(), m, 5, 1)
	if err != nil || b.Lower != 10 || b.Upper != 10 {
		t.Errorf("constant reward 2, H = 5: %+v, %v; want [10, 10]", b, err)
	}
	if b, err := OptimalBounds(context.Background(), tiger(t), 0, 1); err != nil || b.Lower != 0 || b.Upper != 0 {
		t.Errorf("H = 0: %+v, %v; want [0, 0]", b, err)
	}
}
