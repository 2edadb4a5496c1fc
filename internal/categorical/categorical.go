// Package categorical draws from discrete distributions given as
// probability vectors, the one sampling rule the model samplers share,
// and draws such vectors from the flat Dirichlet distribution.
package categorical

import "math/rand/v2"

// Draw returns an index drawn from the distribution p (non-negative,
// summing to 1) with one uniform variate of rng: the first index whose
// cumulative probability exceeds it.
func Draw(rng *rand.Rand, p []float64) int {
	u := rng.Float64()
	for i, x := range p {
		u -= x
		if u < 0 {
			return i
		}
	}
	// Rounding left u ≥ 0: take the last index of positive probability.
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] > 0 {
			return i
		}
	}
	return len(p) - 1
}

// Dirichlet1 fills p with a draw from the flat Dirichlet distribution:
// independent unit exponentials of rng, normalised.
func Dirichlet1(rng *rand.Rand, p []float64) {
	z := 0.0
	for i := range p {
		p[i] = rng.ExpFloat64()
		z += p[i]
	}
	for i := range p {
		p[i] /= z
	}
}
