package explore

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/estimate/estimatetest"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/split"
)

// bonusFixture is a random model with O = 2, A = 3, its sampled logs and
// a bonus built on a random even split.
func bonusFixture(t *testing.T, H int, alpha float64) (*estimate.Model, *ingest.Dataset, *pessimism.Bonus) {
	t.Helper()
	m := estimatetest.RandomModel(2, 2, 3, H, false, []float64{0, 1}, 3)
	m.ObsVocab = []string{"o0", "o1"}
	m.ActVocab = []string{"a0", "a1", "a2"}
	m.TestLength = 1
	m.Prepare()
	d := estimatetest.SampleDataset(m, 30, 5)
	splits, err := split.Split(d.NumEpisodes(), H, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pessimism.Build(context.Background(), m, d, splits, pessimism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m, d, b.WithAlpha(alpha)
}

// bonusValueOf is E_{θ̂,π}[b̂(τ_H)] by enumerating o_{1:H}, with π given as
// a function of the observations so far (the actions are its own).
func bonusValueOf(m *estimate.Model, b *pessimism.Bonus, act func(obs []int) int) float64 {
	H := m.Horizon
	v := 0.0
	obs := make([]int, H)
	var rec func(h int)
	rec = func(h int) {
		if h == H {
			acts := make([]int, H)
			o16 := make([]uint16, H)
			a16 := make([]uint16, H)
			for i := range H {
				acts[i] = act(obs[:i+1])
				o16[i], a16[i] = uint16(obs[i]), uint16(acts[i])
			}
			p := math.Exp(m.ObsLogLik(o16, a16))
			bon, _ := b.Trajectory(obs, acts)
			v += p * bon
			return
		}
		for o := range m.NumObs {
			obs[h] = o
			rec(h + 1)
		}
	}
	rec(0)
	return v
}

// TestPlanBonusBruteForce: at H = 3 the bonus depends on the actions of
// the 2 + 4 decision points of steps 1 and 2; the best of the 3⁶ = 729
// deterministic policies, each valued by enumeration with
// Bonus.Trajectory and Model.ObsLogLik, equals PlanBonus's value, and the
// returned tree achieves it.
func TestPlanBonusBruteForce(t *testing.T) {
	const H = 3
	for _, alpha := range []float64{0.2, 0.6} {
		m, _, b := bonusFixture(t, H, alpha)
		pol, got, err := PlanBonus(context.Background(), m, b, 0)
		if err != nil {
			t.Fatal(err)
		}
		best := math.Inf(-1)
		choice := make([]int, 6)
		for code := 0; code < 729; code++ {
			c := code
			for i := range choice {
				choice[i] = c % 3
				c /= 3
			}
			v := bonusValueOf(m, b, func(obs []int) int {
				switch len(obs) {
				case 1:
					return choice[obs[0]]
				case 2:
					return choice[2+2*obs[0]+obs[1]]
				}
				return 0
			})
			best = math.Max(best, v)
		}
		if math.Abs(got-best) > tol {
			t.Fatalf("α=%v: PlanBonus value %.15g, brute-force optimum %.15g", alpha, got, best)
		}
		own := bonusValueOf(m, b, func(obs []int) int {
			names := make([]string, len(obs))
			for i, o := range obs {
				names[i] = m.ObsVocab[o]
			}
			a, _, ok := pol.Lookup(names)
			if !ok {
				t.Fatalf("no action for %v", names)
			}
			for i, s := range m.ActVocab {
				if s == a {
					return i
				}
			}
			t.Fatalf("unknown action %q", a)
			return 0
		})
		if math.Abs(own-got) > tol {
			t.Fatalf("α=%v: the returned policy's bonus value is %.15g, PlanBonus said %.15g", alpha, own, got)
		}
		if best >= 1 || best <= 0 {
			t.Fatalf("α=%v: optimum %v should lie strictly inside (0,1) for the test to bite", alpha, best)
		}
	}
}

// TestPlanBonusHorizonOne: with H = 1 the bonus sums the empty history
// only, b̂ = min{α·sqrt(‖ψ̄̂(τ_0)‖²_{U_0⁻¹}), 1} for every trajectory.
func TestPlanBonusHorizonOne(t *testing.T) {
	m, _, b := bonusFixture(t, 1, 0.5)
	_, got, err := PlanBonus(context.Background(), m, b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := math.Min(0.5*math.Sqrt(b.Root), 1); math.Abs(got-want) > tol {
		t.Fatalf("value %v, want %v", got, want)
	}
}

// TestPlanBonusFileAndErrors: the plan is a valid policy file; a tree over
// the budget and mismatched bonus are errors, not panics.
func TestPlanBonusFileAndErrors(t *testing.T) {
	m, _, b := bonusFixture(t, 3, 0.5)
	pol, _, err := PlanBonus(context.Background(), m, b, 0)
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/p.arrow"
	if err := policy.WriteFile(path, pol, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := policy.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := PlanBonus(context.Background(), m, b, 10); !errors.Is(err, ErrModel) {
		t.Fatalf("budget 10: err %v, want ErrModel", err)
	}
	_, _, b1 := bonusFixture(t, 1, 0.5)
	if _, _, err := PlanBonus(context.Background(), m, b1, 0); !errors.Is(err, ErrModel) {
		t.Fatalf("horizon mismatch: err %v, want ErrModel", err)
	}
	if _, _, err := PlanBonus(context.Background(), nil, b, 0); !errors.Is(err, ErrModel) {
		t.Fatalf("nil model: err %v", err)
	}
}
