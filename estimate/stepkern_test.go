package estimate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// forwardScalar and backwardScalar are the scalar forms of forwardStep's
// product and backwardStepCat, the reference of the vector kernels.
func forwardScalar(cur, M []float64) []float64 {
	S := len(cur)
	nxt := make([]float64, S)
	for s, as := range cur {
		for s2 := range nxt {
			nxt[s2] += as * M[s*S+s2]
		}
	}
	return nxt
}

func backwardScalar(cur, bp, M, B []float64) []float64 {
	S := len(cur)
	beta := make([]float64, S)
	for s, as := range cur {
		sum := 0.0
		for s2, b := range bp {
			B[s*S+s2] += as * b
			sum += M[s*S+s2] * b
		}
		beta[s] = sum
	}
	return beta
}

func sameBits(a, b []float64) bool {
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return len(a) == len(b)
}

// TestStepKernelsMatchScalar checks forwardStep and backwardStepCat with
// the vector kernels against the scalar loops bit for bit, for every S
// from 1 to 21 (so every column tail), with zeros among the entries.
func TestStepKernelsMatchScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	for S := 1; S <= 21; S++ {
		for trial := range 50 {
			vec := func() []float64 {
				v := make([]float64, S)
				for i := range v {
					if r.IntN(5) > 0 {
						v[i] = r.Float64() * math.Pow(10, float64(r.IntN(7)-3))
					}
				}
				return v
			}
			M := make([]float64, S*S)
			for i := range M {
				if r.IntN(4) > 0 {
					M[i] = r.Float64()
				}
			}
			MT := make([]float64, S*S)
			for s := range S {
				for s2 := range S {
					MT[s2*S+s] = M[s*S+s2]
				}
			}
			cur, bp := vec(), vec()
			cur[0] = 1 // the forward sum is positive
			want := forwardScalar(cur, M)
			got := make([]float64, S)
			forwardStep(cur, got, M)
			wantN := append([]float64(nil), want...)
			normalize(wantN, sumOf(wantN))
			if !sameBits(got, wantN) {
				t.Fatalf("S=%d trial %d: forward %v, scalar %v", S, trial, got, wantN)
			}
			B0 := vec()
			for range S - 1 {
				B0 = append(B0, vec()...)
			}
			Bw, Bg := append([]float64(nil), B0...), append([]float64(nil), B0...)
			wantBeta := backwardScalar(cur, bp, M, Bw)
			beta := make([]float64, S)
			backwardStepCat(cur, bp, beta, M, MT, Bg)
			if !sameBits(beta, wantBeta) || !sameBits(Bg, Bw) {
				t.Fatalf("S=%d trial %d: backward differs from the scalar loop", S, trial)
			}
		}
	}
}
