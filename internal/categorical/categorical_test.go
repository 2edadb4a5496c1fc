package categorical

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Frequencies of many draws match p within 5 standard errors, indices of
// zero probability are never drawn, and rounding never leaves the support.
func TestDraw(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := []float64{0.1, 0, 0.6, 0.3, 0}
	const n = 200000
	count := make([]int, len(p))
	for range n {
		count[Draw(rng, p)]++
	}
	for i, q := range p {
		f := float64(count[i]) / n
		if se := math.Sqrt(q * (1 - q) / n); math.Abs(f-q) > 5*se+1e-12 {
			t.Errorf("index %d: frequency %.4f, want %.4f ± %.4f", i, f, q, 5*se)
		}
	}
	// Probabilities summing to slightly less than 1 by rounding.
	short := []float64{0.5, 0.5 - 1e-12, 0}
	for range 1000 {
		if i := Draw(rng, short); i == 2 {
			t.Fatal("drew an index of zero probability")
		}
	}
}
