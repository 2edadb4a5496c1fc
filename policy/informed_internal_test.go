package policy

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
)

// TestInformedBound: on random models at α = 0 (so the relaxed problem
// is the problem itself), the fast informed bound's value at the root is
// at least the exact optimum (the exact planner's) and at most the fully
// observed values' (the corners' interpolation); its corner values are
// at most the fully observed ones, and strictly lower on some model.
func TestInformedBound(t *testing.T) {
	tighter := 0
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 17))
		sp := pessimismtest.Spec{States: 2 + int(seed%3), Obs: 2 + int(seed%2), Actions: 2 + int(seed%2), Horizon: 3 + int(seed%2)}
		m, b := uniformLogsModel(t, rng, sp, 200)
		b = b.WithAlpha(0)
		_, ex, err := Plan(context.Background(), m, b, PlanOptions{Planner: PlannerExact})
		if err != nil || !ex.Exact {
			t.Fatal(err, ex)
		}
		bp, ft, err := prepareBeliefPlan(context.Background(), m, b, 50, 1)
		if err != nil {
			t.Fatal(err)
		}
		rr, mdp, base := bp.boundRewards(ft)
		fib := bp.informedBound(rr)
		corners := fibCorners(fib, mdp)
		informed, full := bp.rootValues(fib, mdp)
		informed -= base
		full -= base
		if informed < ex.Value-1e-9 {
			t.Fatalf("seed %d: informed bound %v below the optimum %v", seed, informed, ex.Value)
		}
		if informed > full+1e-9 {
			t.Fatalf("seed %d: informed bound %v above the fully observed one %v", seed, informed, full)
		}
		for h := 1; h <= sp.Horizon; h++ {
			for s := range corners[h] {
				if corners[h][s] > mdp[h][s]+1e-12 {
					t.Fatalf("seed %d: corner (%d, %d) %v above the fully observed %v", seed, h, s, corners[h][s], mdp[h][s])
				}
				if corners[h][s] < mdp[h][s]-1e-9 {
					tighter++
				}
			}
		}
		t.Logf("seed %d: optimum %.4f, informed %.4f, fully observed %.4f", seed, ex.Value, informed, full)
	}
	if tighter == 0 {
		t.Fatal("the informed bound never lowered a corner")
	}
}

// uniformLogsModel is a random model of shape sp and its bonus built
// from K episodes of the uniform behaviour, drawn from rng.
func uniformLogsModel(t *testing.T, rng *rand.Rand, sp pessimismtest.Spec, K int) (*estimate.Model, *pessimism.Bonus) {
	t.Helper()
	m := pessimismtest.RandomModel(rng, sp)
	d := pessimismtest.Sample(rng, m, nil, K) // nil: the uniform behaviour
	b, err := pessimism.Build(context.Background(), m, d, pessimismtest.EvenSplits(K, sp.Horizon), pessimism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m, b
}

// boundCase is one random model of the upper bounds' tests, at one α,
// with its bonus and the exact planner's figures.
type boundCase struct {
	seed  uint64
	alpha float64
	m     *estimate.Model
	b     *pessimism.Bonus
	ex    *PlanStats
}

// eachBoundCase calls fn on twelve random models (seeds 1 to 12 of the
// stream, shapes from spec, bonuses from 200 uniform episodes), each at
// α = 0 and α = 1, with the exact planner's optimum.
func eachBoundCase(t *testing.T, stream uint64, spec func(seed uint64) pessimismtest.Spec, fn func(c boundCase)) {
	t.Helper()
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, stream))
		m, b0 := uniformLogsModel(t, rng, spec(seed), 200)
		for _, alpha := range []float64{0, 1} {
			b := b0.WithAlpha(alpha)
			_, ex, err := Plan(context.Background(), m, b, PlanOptions{Planner: PlannerExact})
			if err != nil || !ex.Exact {
				t.Fatal(err, ex)
			}
			fn(boundCase{seed, alpha, m, b, ex})
		}
	}
}

// rootValues is the root's value under the informed bound's vectors and
// under the corners' interpolation: Σ_o P(o_1 = o) times each at the
// step-1 belief after o.
func (p *beliefPlanner) rootValues(fib [][][]float64, vm [][]float64) (informed, full float64) {
	informed = p.rootValue(func(b []float64) float64 { return envelope(fib[1], b) })
	full = p.rootValue(func(b []float64) float64 { return dot(vm[1], b) })
	return informed, full
}
