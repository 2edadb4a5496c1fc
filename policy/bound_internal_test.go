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

// TestTangentSlopeAtTheKink: after a round whose policy saturates the
// bonus, the next tangent round plans at the saturation point 1/α², where
// the slope must be the left derivative α²/2 (a line above g that charges
// Σ), whatever the rounding of 1/α²; below it the slope is g′(x₀) =
// α/(2√x₀), past it 0.
func TestTangentSlopeAtTheKink(t *testing.T) {
	for _, alpha := range []float64{0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30, 100} {
		x0 := saturationPoint(alpha)
		if got, want := tangentSlope(alpha, x0), alpha*alpha/2; math.Abs(got-want) > 1e-12*want {
			t.Errorf("α = %g: slope at 1/α² %v, want α²/2 = %v", alpha, got, want)
		}
		if got, want := tangentSlope(alpha, x0/4), alpha*alpha; math.Abs(got-want) > 1e-12*want {
			t.Errorf("α = %g: slope at 1/(4α²) %v, want α² = %v", alpha, got, want)
		}
		if got := tangentSlope(alpha, x0*(1+1e-9)); got != 0 {
			t.Errorf("α = %g: slope past saturation %v, want 0", alpha, got)
		}
		// The line through (x₀, g(x₀)) with that slope lies above g.
		s := tangentSlope(alpha, x0)
		for _, x := range []float64{0, x0 / 9, x0 / 2, x0, 2 * x0, 10 * x0} {
			g := min(alpha*math.Sqrt(x), 1)
			if line := 1 + s*(x-x0); line < g-1e-12 {
				t.Errorf("α = %g: tangent at the kink %v below g(%v) = %v", alpha, line, x, g)
			}
		}
	}
	if tangentSlope(0, 1) != 0 {
		t.Error("α = 0 has slope 0")
	}
}
