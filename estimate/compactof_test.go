package estimate

import (
	"math"
	"testing"
)

// fullOf is the compact model c in the full form: every action's
// emission is c's, and every observation's reward is c's.
func fullOf(c *Model) *Model {
	f := *c
	f.Compact = false
	S, A, O := c.States, c.NumActions, c.NumObs
	f.Emit, f.RewardProb, f.RewardMean, f.RewardVar = nil, nil, nil, nil
	for t := range c.Trans {
		var E []float64
		for range A {
			E = append(E, c.Emit[t]...)
		}
		f.Emit = append(f.Emit, E)
		var R, mu, vr []float64
		for i := range S * A * S {
			for range O {
				switch c.Reward {
				case RewardCategorical:
					V := len(c.RewardValues)
					R = append(R, c.RewardProb[t][i*V:(i+1)*V]...)
				case RewardGaussian:
					mu, vr = append(mu, c.RewardMean[t][i]), append(vr, c.RewardVar[t][i])
				}
			}
		}
		if c.Reward == RewardCategorical {
			f.RewardProb = append(f.RewardProb, R)
		} else {
			f.RewardMean, f.RewardVar = append(f.RewardMean, mu), append(f.RewardVar, vr)
		}
	}
	f.Prepare()
	return &f
}

// TestCompactOf: a full model whose emissions ignore the action and
// whose rewards ignore the observation goes back to its compact model
// exactly; a general full model keeps its transitions and every step's
// expected reward E[r | s, a] and, for Gaussian rewards, E[r² | s, a,
// s2], the emission is the actions' average (checked against sums by
// hand), and the result is a valid model.
func TestCompactOf(t *testing.T) {
	const tol = 1e-12
	c := randomCompactModel(3, 4, 2, 3, []float64{0, 1, 5}, 7)
	back := CompactOf(fullOf(c))
	if !back.Compact {
		t.Fatal("CompactOf did not return the compact form")
	}
	closeSlices(t, "emission", back.Emit[0], c.Emit[0], tol)
	closeSlices(t, "reward", back.RewardProb[0], c.RewardProb[0], tol)
	closeSlices(t, "transitions", back.Trans[0], c.Trans[0], tol)
	if CompactOf(c) != c {
		t.Fatal("a compact model is not returned as it is")
	}

	for _, values := range [][]float64{{-1, 0, 2}, nil} {
		f := randomModel(3, 4, 2, 3, false, values, 11)
		g := CompactOf(f)
		if err := g.Validate(1e-9); err != nil {
			t.Fatalf("values %v: %v", values, err)
		}
		S, A, O := f.States, f.NumActions, f.NumObs
		for tb := range f.Trans {
			closeSlices(t, "transitions", g.Trans[tb], f.Trans[tb], 0)
			closeSlices(t, "expected rewards", g.expReward[tb], f.expReward[tb], 1e-12)
			for s2 := range S {
				for o := range O {
					want := 0.0
					for a := range A {
						want += f.Emit[tb][(a*S+s2)*O+o]
					}
					if got := g.Emit[tb][s2*O+o]; math.Abs(got-want/float64(A)) > tol {
						t.Fatalf("emission (%d, %d): %g, want %g", s2, o, got, want/float64(A))
					}
				}
			}
			if values != nil {
				continue
			}
			for s := range S {
				for a := range A {
					for s2 := range S {
						want := 0.0
						for o := range O {
							mu := f.RewardMean[tb][f.RewardIndex(s, a, s2, o)]
							want += f.Emit[tb][(a*S+s2)*O+o] * (f.RewardVar[tb][f.RewardIndex(s, a, s2, o)] + mu*mu)
						}
						i := g.RewardIndex(s, a, s2, 0)
						mu := g.RewardMean[tb][i]
						if got := g.RewardVar[tb][i] + mu*mu; math.Abs(got-want) > 1e-12 {
							t.Fatalf("E[r² | %d, %d, %d]: %g, want %g", s, a, s2, got, want)
						}
					}
				}
			}
		}
	}
}
