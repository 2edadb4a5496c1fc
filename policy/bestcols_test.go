package policy

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/psrlcb/psrlcb/internal/simd"
)

// bestByValues is best's portable path: values, then maxFirst.
func bestByValues(g *alphaSet, S int, u []float64) (float64, int) {
	vals := make([]float64, g.n(S))
	g.values(S, u, vals)
	return maxFirst(vals)
}

// randomAlphaSet is a finished set of n vectors over S states. With
// small, the coordinates are small integers (or their negatives, or
// signed zeros), so that many values tie exactly.
func randomAlphaSet(r *rand.Rand, S, n int, small bool) *alphaSet {
	g := &alphaSet{act: make([]int, n)}
	for range n * S {
		x := r.NormFloat64() * 10
		if small {
			x = float64(r.IntN(5) - 2)
			if x == 0 && r.IntN(2) == 0 {
				x = math.Copysign(0, -1)
			}
		}
		g.vec = append(g.vec, x)
	}
	g.finish(S)
	return g
}

// TestBestColsMatchesValues checks the vector kernel against the
// portable path bit for bit: the same largest value (sign of a zero
// included) and the same first index, on sets of every size around the
// kernel's block, with ties, zero coordinates of u and signed zeros.
func TestBestColsMatchesValues(t *testing.T) {
	if !simd.AVX2 {
		t.Skip("no AVX2 on this processor (or PSRLCB_PORTABLE set): best takes the portable path only")
	}
	wide := simd.AVX512
	t.Run("AVX2", func(t *testing.T) {
		simd.AVX512 = false
		defer func() { simd.AVX512 = wide }()
		checkBestCols(t)
	})
	if !wide {
		t.Log("no AVX-512 on this processor: its kernel is not tested")
		return
	}
	t.Run("AVX-512", func(t *testing.T) { checkBestCols(t) })
}

// checkBestCols is TestBestColsMatchesValues with the kernel
// simd.AVX512 selects.
func checkBestCols(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	sc := &bestScratch{}
	for trial := range 3000 {
		S := 1 + r.IntN(12)
		n := bestColsBlock + r.IntN(5*bestColsBlock)
		small := trial%2 == 0
		g := randomAlphaSet(r, S, n, small)
		if g.n(S) < bestColsBlock {
			continue
		}
		u := make([]float64, S)
		for s := range u {
			if r.IntN(4) > 0 {
				u[s] = r.Float64()
				if small {
					u[s] = float64(r.IntN(3))
				}
			}
		}
		wantV, wantI := bestByValues(g, S, u)
		gotV, gotI, ok := g.bestCols(S, u, sc)
		if !ok {
			t.Fatalf("trial %d: the kernel refused finite values", trial)
		}
		if math.Float64bits(gotV) != math.Float64bits(wantV) || gotI != wantI {
			t.Fatalf("trial %d (S=%d, n=%d): kernel %v at %d, portable path %v at %d", trial, S, g.n(S), gotV, gotI, wantV, wantI)
		}
		if g.n(S) < rowwiseBest {
			continue // best takes one dot product per vector
		}
		if v, i := g.best(S, u, sc); math.Float64bits(v) != math.Float64bits(wantV) || i != wantI {
			t.Fatalf("trial %d: best %v at %d, portable path %v at %d", trial, v, i, wantV, wantI)
		}
	}
}

// TestBestColsRefusesOverflow checks that a largest value that is not
// finite sends best back to the portable path.
func TestBestColsRefusesOverflow(t *testing.T) {
	if !simd.AVX2 {
		t.Skip("no AVX2 on this processor (or PSRLCB_PORTABLE set)")
	}
	r := rand.New(rand.NewPCG(3, 5))
	S := 3
	g := randomAlphaSet(r, S, 2*bestColsBlock, false)
	n := g.n(S)
	g.cols[5] = math.MaxFloat64 // vector 5, coordinate 0
	g.cols[n+5] = math.MaxFloat64
	u := []float64{1, 1, 0.5}
	if _, _, ok := g.bestCols(S, u, &bestScratch{}); ok {
		t.Fatal("the kernel accepted an overflowing value")
	}
	wantV, wantI := bestByValues(g, S, u)
	if v, i := g.best(S, u, &bestScratch{}); v != wantV || i != wantI || !math.IsInf(v, 1) || i != 5 {
		t.Fatalf("best %v at %d, want %v at %d (+Inf at 5)", v, i, wantV, wantI)
	}
}

// BenchmarkAlphaSetBest is one best over 300 vectors of 8 states, by
// the kernel (when the processor has it) and by the portable path.
func BenchmarkAlphaSetBest(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	g := randomAlphaSet(r, 8, 300, false)
	u := make([]float64, 8)
	for s := range u {
		u[s] = r.Float64()
	}
	sc := &bestScratch{}
	b.Run("best", func(b *testing.B) {
		for b.Loop() {
			g.best(8, u, sc)
		}
	})
	b.Run("portable", func(b *testing.B) {
		vals := make([]float64, g.n(8))
		for b.Loop() {
			g.values(8, u, vals)
			maxFirst(vals)
		}
	})
}

// TestSawtoothWeightKernel checks sawtoothWeight with the AVX2 kernel
// against its portable loop exactly, on beliefs of 1 to 40 states whose
// points leave states out (weight over the support only), hold none
// (weight +Inf), or tie with the belief (weight 1), and with zero and
// tiny coordinates in the belief.
func TestSawtoothWeightKernel(t *testing.T) {
	if !simd.AVX2 {
		t.Skip("no AVX2 on this processor (or PSRLCB_PORTABLE set): sawtoothWeight takes the portable path only")
	}
	portable := func(b, bi []float64) float64 {
		simd.AVX2 = false
		defer func() { simd.AVX2 = true }()
		return sawtoothWeight(b, bi)
	}
	r := rand.New(rand.NewPCG(3, 5))
	draw := func(S int, zero float64) []float64 {
		v := make([]float64, S)
		for s := range v {
			switch u := r.Float64(); {
			case u < zero:
			case u < zero+0.05:
				v[s] = 1e-300 * r.Float64()
			default:
				v[s] = r.ExpFloat64()
			}
		}
		return v
	}
	var kinds [4]int
	for trial := range 20000 {
		S := 1 + r.IntN(40)
		b, bi := draw(S, 0.2), draw(S, 0.3)
		switch trial % 5 {
		case 1:
			clear(bi)
		case 2:
			copy(bi, b)
		}
		got, want := sawtoothWeight(b, bi), portable(b, bi)
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("trial %d, %d states: weight %v with the kernel, %v without (b %v, point %v)", trial, S, got, want, b, bi)
		}
		switch {
		case math.IsInf(want, 1):
			kinds[0]++
		case want == 1:
			kinds[1]++
		case want == 0:
			kinds[2]++
		default:
			kinds[3]++
		}
	}
	// Every kind of weight was met, so none passed for lack of cases.
	for i, n := range kinds {
		if n == 0 {
			t.Fatalf("no weight of kind %d (+Inf, 1, 0, other) was drawn", i)
		}
	}
}

// BenchmarkSawtoothWeight times the weights of 500 points of 32 states
// at one belief (a fifth of the points' coordinates zero), with the AVX2
// kernel and with the portable loop (docs/speed.md).
func BenchmarkSawtoothWeight(bm *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]float64, 32)
	for s := range b {
		b[s] = r.Float64()
	}
	pts := make([][]float64, 500)
	for i := range pts {
		pts[i] = make([]float64, len(b))
		for s := range pts[i] {
			if r.Float64() < 0.8 {
				pts[i][s] = r.Float64()
			}
		}
	}
	on := simd.AVX2
	for _, kernel := range []bool{true, false} {
		name := "portable"
		if kernel {
			name = "avx2"
		}
		bm.Run(name, func(bm *testing.B) {
			if kernel && !on {
				bm.Skip("no AVX2 on this processor")
			}
			simd.AVX2 = kernel
			defer func() { simd.AVX2 = on }()
			sum := 0.0
			for bm.Loop() {
				for _, p := range pts {
					sum += sawtoothWeight(b, p)
				}
			}
			if sum <= 0 {
				bm.Fatal("the weights should be positive")
			}
		})
	}
}
