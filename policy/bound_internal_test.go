package policy

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSimplexQuadLower: the Frank–Wolfe certificate is a lower bound of
// min_{b∈Δ} bᵀMb, within 10⁻⁶ of the minimum found by a grid over the
// simplex (step 1/200, S = 3), for random positive semi-definite M of
// rank 1 to 3 (rank 1 and 2 have interior minima or zeros).
func TestSimplexQuadLower(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const S, n = 3, 200
	for trial := 0; trial < 30; trial++ {
		r := 1 + trial%3
		F := make([]float64, r*S)
		for i := range F {
			F[i] = rng.NormFloat64()
		}
		M := make([]float64, S*S) // FᵀF
		for i := 0; i < S; i++ {
			for j := 0; j < S; j++ {
				for k := 0; k < r; k++ {
					M[i*S+j] += F[k*S+i] * F[k*S+j]
				}
			}
		}
		grid := math.Inf(1)
		b := make([]float64, S)
		for i := 0; i <= n; i++ {
			for j := 0; i+j <= n; j++ {
				b[0], b[1], b[2] = float64(i)/n, float64(j)/n, float64(n-i-j)/n
				grid = min(grid, quad(M, b))
			}
		}
		lb := simplexQuadLower(M, S)
		if lb > grid+1e-12 {
			t.Fatalf("trial %d: bound %v above a point's value %v", trial, lb, grid)
		}
		// The grid's minimum is within O(1/n²) of the true minimum.
		if lb < grid-1e-3*(1+grid) {
			t.Fatalf("trial %d (rank %d): bound %v far below the minimum ≈ %v", trial, r, lb, grid)
		}
	}
}
