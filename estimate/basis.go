package estimate

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// Prediction features of the Compact form in r dimensions.
//
// In the Compact form the emission does not depend on the action, so the
// predictions of the tests at step h are linear in the predicted state
// p = P(s_{h+1} | τ_h) through a matrix that depends on the model only:
//
//	ψ(τ_h) = G_h·p,   [G_h]_{ℓ,s} = P(test ℓ's observations | s_{h+1} = s, test ℓ's actions),
//
// with d_h = |O|^k·|A|^(k−1) rows (k = min(m, H−h)) and S columns. Every
// quantity the bonus needs is an inner product of such vectors, and
// G_h = Q_h·L_h with Q_h orthonormal (d_h × S) and L_h = (G_hᵀG_h)^{1/2}
// (S × S, the symmetric square root). So the S-dimensional feature
// y = L_h·p gives
//
//	‖ψ(τ_h)‖²_{(λI + Σψψᵀ)⁻¹} = ‖y‖²_{(λI + Σyyᵀ)⁻¹}
//
// exactly (the d_h-dimensional U_h restricted to the span of G_h is
// Q_h(λI + Σyyᵀ)Q_hᵀ, and λI on its complement is never reached). The
// bonus of the paper's tests is computed in r dimensions, whatever |O|
// is. The Gram matrix G_hᵀG_h is built by a recursion over the test
// levels, O(k·(S²·|O| + |A|·S⁴)) per step, never forming G_h.

// FeatureBasis returns L_h (row-major S×S) for h = 0..H−1 of a Compact
// model; see the comment above. It panics for a full-form model.
func (m *Model) FeatureBasis() [][]float64 {
	if !m.Compact {
		panic("estimate: FeatureBasis of a full-form model")
	}
	out := make([][]float64, m.Horizon)
	for h := range out {
		out[h] = sqrtPSD(m.testGram(h), m.States)
	}
	return out
}

// testGram is G_hᵀG_h (row-major S×S) of the tests at step h.
func (m *Model) testGram(h int) []float64 {
	S, O, A := m.States, m.NumObs, m.NumActions
	k := m.testLen(h)
	var next []float64 // W_{j+1}, nil at the last level
	for j := k; j >= 1; j-- {
		E := m.emitRow(h+j-1, 0) // Compact: the same for every action
		W := make([]float64, S*S)
		for s := 0; s < S; s++ {
			for s2 := s; s2 < S; s2++ {
				x := 0.0
				for o := 0; o < O; o++ {
					x += E[s*O+o] * E[s2*O+o]
				}
				W[s*S+s2], W[s2*S+s] = x, x
			}
		}
		if next != nil {
			// Σ_a T_a W_{j+1} T_aᵀ, entrywise times W.
			t := m.Table(h + j)
			acc := make([]float64, S*S)
			tmp := make([]float64, S*S)
			for a := 0; a < A; a++ {
				T := m.Trans[t][a*S*S : (a+1)*S*S]
				clear(tmp)
				for s := 0; s < S; s++ {
					for u2 := 0; u2 < S; u2++ {
						x := 0.0
						for u := 0; u < S; u++ {
							x += T[s*S+u] * next[u*S+u2]
						}
						tmp[s*S+u2] = x
					}
				}
				for s := 0; s < S; s++ {
					for s2 := 0; s2 < S; s2++ {
						x := 0.0
						for u2 := 0; u2 < S; u2++ {
							x += tmp[s*S+u2] * T[s2*S+u2]
						}
						acc[s*S+s2] += x
					}
				}
			}
			for i := range W {
				W[i] *= acc[i]
			}
		}
		next = W
	}
	return next
}

// sqrtPSD returns the symmetric square root of the positive
// semi-definite n×n matrix w (row-major); eigenvalues below zero by
// rounding count as zero.
func sqrtPSD(w []float64, n int) []float64 {
	var eig mat.EigenSym
	if !eig.Factorize(mat.NewSymDense(n, append([]float64(nil), w...)), true) {
		panic("estimate: eigendecomposition of a test Gram matrix failed")
	}
	vals := eig.Values(nil)
	var V mat.Dense
	eig.VectorsTo(&V)
	out := make([]float64, n*n)
	for l, v := range vals {
		r := math.Sqrt(max(v, 0))
		if r == 0 {
			continue
		}
		for i := 0; i < n; i++ {
			vi := V.At(i, l) * r
			for j := 0; j < n; j++ {
				out[i*n+j] += vi * V.At(j, l)
			}
		}
	}
	return out
}

// mulVec writes L·p into out (L row-major n×n).
func mulVec(L []float64, n int, p, out []float64) {
	for i := 0; i < n; i++ {
		x := 0.0
		for j, pj := range p[:n] {
			x += L[i*n+j] * pj
		}
		out[i] = x
	}
}
