package policy_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
	"github.com/psrlcb/psrlcb/policy"
)

// TestPlanScaleHand: sqrt(part/all), 1 for empty counts.
func TestPlanScaleHand(t *testing.T) {
	for _, c := range []struct {
		part, all int
		want      float64
	}{{50, 200, 0.5}, {100, 100, 1}, {1, 4, 0.5}, {0, 10, 1}, {10, 0, 1}} {
		if got := policy.PlanScale(c.part, c.all); got != c.want {
			t.Fatalf("PlanScale(%d, %d) = %v, want %v", c.part, c.all, got, c.want)
		}
	}
}

// TestPlanScaleMatchesBonus checks the premise of PlanScale: the bonus
// built on every episode twice (2n episodes, each D_h twice as large) at
// α equals the bonus built on the n episodes at α·PlanScale(n, 2n),
// trajectory by trajectory. With λ → 0, U_h doubles exactly, so each
// ‖ψ̄̂‖²_{U_h⁻¹} halves; the tolerance 1e-6 (relative) covers λ = 1e-9.
func TestPlanScaleMatchesBonus(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 71))
	sp := pessimismtest.Spec{States: 3, Obs: 2, Actions: 2, Horizon: 3}
	m := pessimismtest.RandomModel(rng, sp)
	const n = 400
	d := pessimismtest.Sample(rng, m, nil, n)
	twice := make([]int, 0, 2*n)
	for k := range n {
		twice = append(twice, k, k)
	}
	d2 := d.Subset(twice)
	splits := pessimismtest.EvenSplits(n, 3)
	splits2 := make([][]int, len(splits))
	for h, s := range splits {
		for _, k := range s {
			splits2[h] = append(splits2[h], 2*k, 2*k+1)
		}
	}
	ctx := context.Background()
	opts := pessimism.Options{Lambda: 1e-9}
	b, err := pessimism.Build(ctx, m, d, splits, opts)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := pessimism.Build(ctx, m, d2, splits2, opts)
	if err != nil {
		t.Fatal(err)
	}
	pol, _, err := policy.Plan(ctx, m, b.WithAlpha(0), policy.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := policy.ValueUnder(ctx, m, b, pol, 0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := policy.ValueUnder(ctx, m, b2, pol, 0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Exact || len(r.Sums) != len(r2.Sums) {
		t.Fatalf("rollouts: exact %v, %d and %d trajectories", r.Exact, len(r.Sums), len(r2.Sums))
	}
	s := policy.PlanScale(n, 2*n)
	for _, alpha := range []float64{0.1, 0.5, 2} {
		got, want := r.Bonus(alpha*s), r2.Bonus(alpha)
		if math.Abs(got-want) > 1e-6*want {
			t.Fatalf("α = %v: bonus on n episodes at α·scale %v, on 2n episodes at α %v", alpha, got, want)
		}
	}
}

// TestSelectPlanScale: with PlanScale s, the candidate α is planned with
// the planning bonus at α·s, so it has the plan of the candidate α·s
// without scaling; its saturation is that of α·s too,
// while its recorded cross-fitted bonus stays at its own α.
func TestSelectPlanScale(t *testing.T) {
	ctx := context.Background()
	m, b, eb, held := selectFixture(t, 72)
	scaled, err := policy.Select(ctx, m, b, m, eb, held, []float64{1, 4, 40}, policy.SelectOptions{PlanScale: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := policy.Select(ctx, m, b, m, eb, held, []float64{0.25, 1, 10}, policy.SelectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range scaled.Candidates {
		p := plain.Candidates[i]
		if c.Model != p.Model || c.Saturated != p.Saturated || c.Cross.Reward != p.Cross.Reward {
			t.Fatalf("candidate α = %v at scale 0.25: %+v; unscaled α = %v: %+v", c.Alpha, c, p.Alpha, p)
		}
		v, err := policy.ModelValue(m, eb.WithAlpha(c.Alpha), c.Policy)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(v.Bonus-c.Cross.Bonus) > 1e-12 {
			t.Fatalf("candidate α = %v: cross bonus %v, want the evaluation bonus at its own α %v", c.Alpha, c.Cross.Bonus, v.Bonus)
		}
	}
	if _, err := policy.Select(ctx, m, b, m, eb, held, []float64{1}, policy.SelectOptions{PlanScale: -1}); err == nil {
		t.Fatal("a negative plan scale is accepted")
	}
}

// selectFixture is the setting of the selection tests: a random model
// (3 states, 2 observations, 2 actions, H = 3), the bonus of 60 training
// episodes, and 2000 held-out episodes with their bonus.
func selectFixture(t *testing.T, seed uint64) (*estimate.Model, *pessimism.Bonus, *pessimism.Bonus, *ingest.Dataset) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	sp := pessimismtest.Spec{States: 3, Obs: 2, Actions: 2, Horizon: 3}
	m := pessimismtest.RandomModel(rng, sp)
	train := pessimismtest.Sample(rng, m, nil, 60)
	held := pessimismtest.Sample(rng, m, nil, 2000)
	ctx := context.Background()
	b, err := pessimism.Build(ctx, m, train, pessimismtest.EvenSplits(60, 3), pessimism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eb, err := pessimism.Build(ctx, m, held, pessimismtest.EvenSplits(2000, 3), pessimism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m, b, eb, held
}
