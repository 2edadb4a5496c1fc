package genpomdp

import (
	"fmt"
	"math/rand/v2"
)

// Families are the named problem families of the stress study. Draw picks
// the i-th problem's Spec of a family from a seed: sizes, slip, noise and
// the reward and start sets vary within the family's ranges. Small
// families keep the problems to at most 9 states (the reduced study of
// go test); the full ones reach 36 states (a 6×6 maze, the size of the
// maze that motivated the study).
var Families = []string{"maze", "aliased", "dense"}

// Draw returns the Spec of problem i of family at the given scale.
func Draw(family string, small bool, seed uint64, i int) (Spec, error) {
	rng := rand.New(rand.NewPCG(seed, uint64(i)*0x9e3779b97f4a7c15+1))
	sp := Spec{Family: family, Seed: rng.Uint64()}
	d := drawer{rng}
	switch family {
	case "maze":
		d.maze(&sp, small)
	case "aliased":
		d.aliased(&sp, small)
	case "dense":
		d.dense(&sp, small)
	default:
		return sp, fmt.Errorf("genpomdp: unknown family %q (known: %v)", family, Families)
	}
	return sp, nil
}

// drawer draws the sizes and settings of a Spec.
type drawer struct{ rng *rand.Rand }

// between is a uniform integer in [lo, hi].
func (d drawer) between(lo, hi int) int { return lo + d.rng.IntN(hi-lo+1) }

// pick is one of xs, uniformly.
func (d drawer) pick(xs ...float64) float64 { return xs[d.rng.IntN(len(xs))] }

// maze draws the settings of a maze problem.
func (d drawer) maze(sp *Spec, small bool) {
	if small {
		sp.Width, sp.Length = d.between(2, 3), 3
	} else {
		sp.Width, sp.Length = d.between(3, 6), d.between(3, 6)
	}
	S := sp.Width * sp.Length
	sp.Slip, sp.ObsNoise = d.pick(0, 0.1), d.pick(0, 0.05)
	sp.RewardStates, sp.StartStates = max(1, S/3), d.between(1, max(1, S/4))
}

// aliased draws the settings of an aliased problem.
func (d drawer) aliased(sp *Spec, small bool) {
	if small {
		sp.States, sp.Actions = d.between(4, 8), d.between(2, 3)
	} else {
		sp.States, sp.Actions = d.between(6, 30), d.between(2, 6)
	}
	sp.Obs = d.between(2, max(2, sp.States/2))
	sp.Slip, sp.ObsNoise = d.pick(0, 0.1, 0.2), d.pick(0, 0.05)
	sp.RewardStates, sp.StartStates = max(1, sp.States/4), d.between(1, 3)
}

// dense draws the settings of a dense problem.
func (d drawer) dense(sp *Spec, small bool) {
	if small {
		sp.States, sp.Actions, sp.Obs = d.between(3, 6), d.between(2, 3), d.between(2, 4)
	} else {
		sp.States, sp.Actions, sp.Obs = d.between(4, 16), d.between(2, 5), d.between(2, 10)
	}
	sp.RewardStates, sp.StartStates = max(1, sp.States/3), d.between(1, 3)
}
