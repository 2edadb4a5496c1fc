package policy

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
)

// plainLookahead is lookahead without the bounds: every action valued,
// the first of the largest kept.
func (p *beliefPlanner) plainLookahead(h int, b []float64, end bool, sc *backupScratch) int {
	bestA, bestV := -1, 0.0
	for _, a := range p.acts(end) {
		if v := p.qValue(h, b, a, sc); bestA < 0 || v > bestV {
			bestA, bestV = a, v
		}
	}
	return bestA
}

// TestPrunedLookaheadMatchesPlain: on random models planned at α = 0 and
// α = 1, the lookahead that skips actions by their upper bounds returns
// the action of the plain loop at every step, at the planned points and
// at random beliefs (ties included: the vectors' values repeat at the
// corners).
func TestPrunedLookaheadMatchesPlain(t *testing.T) {
	pruned := 0
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 23))
		sp := pessimismtest.Spec{States: 3 + int(seed%3), Obs: 3, Actions: 3 + int(seed%2), Horizon: 4}
		m, bonus := uniformLogsModel(t, rng, sp, 300)
		for _, alpha := range []float64{0, 1} {
			bp, _, err := prepareBeliefPlan(context.Background(), m, bonus.WithAlpha(alpha), 60, 1)
			if err != nil {
				t.Fatal(err)
			}
			bp.kappa = tangentSlope(alpha, bonus.Root)
			if err := bp.backward(context.Background()); err != nil {
				t.Fatal(err)
			}
			sc := newBackupScratch(bp.S, bp.O)
			for h := 1; h < bp.H; h++ {
				beliefs := [][]float64{}
				for _, pt := range bp.pts[h] {
					beliefs = append(beliefs, pt.b)
				}
				for range 50 {
					b := make([]float64, bp.S)
					z := 0.0
					for s := range b {
						b[s] = rng.ExpFloat64()
						if rng.IntN(3) == 0 {
							b[s] = 0
						}
						z += b[s]
					}
					if z == 0 {
						b[0], z = 1, 1
					}
					for s := range b {
						b[s] /= z
					}
					beliefs = append(beliefs, b)
				}
				for _, b := range beliefs {
					want := bp.plainLookahead(h, b, false, sc)
					if got := bp.lookahead(h, b, false, sc); got != want {
						t.Fatalf("seed %d, α %g, step %d, belief %v: pruned lookahead %d, plain %d", seed, alpha, h, b, got, want)
					}
					pruned++
				}
			}
		}
	}
	if pruned == 0 {
		t.Fatal("no belief compared")
	}
}
