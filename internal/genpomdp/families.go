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
	between := func(lo, hi int) int { return lo + rng.IntN(hi-lo+1) }
	pick := func(xs ...float64) float64 { return xs[rng.IntN(len(xs))] }
	switch family {
	case "maze":
		if small {
			sp.Width, sp.Length = between(2, 3), 3
		} else {
			sp.Width, sp.Length = between(3, 6), between(3, 6)
		}
		S := sp.Width * sp.Length
		sp.Slip, sp.ObsNoise = pick(0, 0.1), pick(0, 0.05)
		sp.RewardStates, sp.StartStates = max(1, S/3), between(1, max(1, S/4))
	case "aliased":
		if small {
			sp.States, sp.Actions = between(4, 8), between(2, 3)
		} else {
			sp.States, sp.Actions = between(6, 30), between(2, 6)
		}
		sp.Obs = between(2, max(2, sp.States/2))
		sp.Slip, sp.ObsNoise = pick(0, 0.1, 0.2), pick(0, 0.05)
		sp.RewardStates, sp.StartStates = max(1, sp.States/4), between(1, 3)
	case "dense":
		if small {
			sp.States, sp.Actions, sp.Obs = between(3, 6), between(2, 3), between(2, 4)
		} else {
			sp.States, sp.Actions, sp.Obs = between(4, 16), between(2, 5), between(2, 10)
		}
		sp.RewardStates, sp.StartStates = max(1, sp.States/3), between(1, 3)
	default:
		return sp, fmt.Errorf("genpomdp: unknown family %q (known: %v)", family, Families)
	}
	return sp, nil
}
