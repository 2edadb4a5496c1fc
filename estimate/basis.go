package estimate

import (
	"fmt"
	"math"
	"sync"

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

//
// The full form's emission depends on the action a_h, so its predictions
// are ψ(τ_h) = G_{h,a_h}·p, a different matrix per action; together they
// span at most B_h·S dimensions (B_h = |A| blocks, 1 at h = 0 where o_1
// follows no action). With x the B_h·S vector holding p in block a_h and
// zeros elsewhere, ψ = [G_{h,1} … G_{h,B}]·x, and the same argument with
// L_h = (GᵀG)^{1/2} (B_h·S square) gives a feature y = L_h·x of dimension
// B_h·S whose inner products are those of the tests' probabilities. It is
// used whenever B_h·S is less than the number of tests (large |O|, or
// tests of several steps): the bonus is then computed in B_h·S
// dimensions instead of |O|^k·|A|^(k−1), with the same values.

// FeatureBasis returns L_h (row-major n×n, n = FeatureDim(h)) for h =
// 0..H−1, nil at steps whose feature is the tests' probabilities
// themselves (the full form with fewer tests than B_h·S); see the
// comment above. The error (ErrModel) says that a Gram matrix GᵀG has
// no square root: it has an entry that is not finite (a model that
// Validate rejects), or its eigendecomposition did not converge.
func (m *Model) FeatureBasis() ([][]float64, error) {
	out := make([][]float64, m.Horizon)
	for h := range out {
		var err error
		if out[h], err = m.stepBasis(h); err != nil {
			return nil, fmt.Errorf("step %d: %w", h, err)
		}
	}
	return out, nil
}

// stepBasis is step h's basis: the square root of the tests' Gram matrix
// in the Compact form, of the blocks' Gram matrix when step h is
// reduced, nil otherwise.
func (m *Model) stepBasis(h int) ([]float64, error) {
	switch {
	case m.Compact:
		return sqrtPSD(m.testGram(h), m.States)
	case m.reduced(h):
		return sqrtPSD(m.blockGram(h), m.FeatureDim(h))
	}
	return nil, nil
}

// featureBases is FeatureBasis, computed once per prepared model: every
// Featurizer of the model shares it (a basis costs O(B²·S²·|O|) to build).
func (m *Model) featureBases() ([][]float64, error) {
	c := m.basisCache
	if c == nil {
		return m.FeatureBasis()
	}
	c.once.Do(func() { c.bases, c.basesErr = m.FeatureBasis() })
	return c.bases, c.basesErr
}

// basisCache holds what a prepared model derives once on demand: its
// feature bases (or why they do not exist) and its last-step sums
// (loglik.go). Prepare replaces it.
type basisCache struct {
	once     sync.Once
	bases    [][]float64
	basesErr error
	lastOnce sync.Once
	last     [][]float64
}

// blocks is B_h, the number of actions whose emission the observation
// after step h depends on: |A|, or 1 at h = 0 (o_1).
func (m *Model) blocks(h int) int {
	if h == 0 {
		return 1
	}
	return m.NumActions
}

// FeatureIsTests says whether ψ̄(τ_h) is the vector of the tests'
// probabilities itself (the full form with no more tests than B_h·S),
// rather than its r-dimensional image (the Compact form, or the reduced
// full form).
func (m *Model) FeatureIsTests(h int) bool { return !m.Compact && !m.reduced(h) }

// reduced says whether the full form's feature at step h is the reduced
// one: B_h·S dimensions are fewer than the tests.
func (m *Model) reduced(h int) bool {
	return !m.Compact && m.blocks(h)*m.States < m.testCount(h)
}

// emitGram returns Σ_o E(o|u)·F(o|u′) (row-major S×S) of two emission
// tables (row-major s*O+o).
func emitGram(E, F []float64, S, O int) []float64 {
	W := make([]float64, S*S)
	for u := 0; u < S; u++ {
		for u2 := 0; u2 < S; u2++ {
			x := 0.0
			for o := 0; o < O; o++ {
				x += E[u*O+o] * F[u2*O+o]
			}
			W[u*S+u2] = x
		}
	}
	return W
}

// sandwichSum returns Σ_a T_a·W_a·T_aᵀ (row-major S×S) over the actions'
// transition matrices of step table t.
func (m *Model) sandwichSum(t int, W func(a int) []float64) []float64 {
	S := m.States
	acc := make([]float64, S*S)
	tmp := make([]float64, S*S)
	for a := 0; a < m.NumActions; a++ {
		T := m.Trans[t][a*S*S : (a+1)*S*S]
		Wa := W(a)
		for s := 0; s < S; s++ {
			for u2 := 0; u2 < S; u2++ {
				x := 0.0
				for u := 0; u < S; u++ {
					x += T[s*S+u] * Wa[u*S+u2]
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
	return acc
}

// blockGram is GᵀG (row-major n×n, n = B_h·S) of the full form's tests at
// step h, G = [G_{h,1} … G_{h,B}]: block (a, a′) is Σ_o E_a(o|s)E_a′(o|s′)
// times, entrywise, the Gram of the tests' later levels (all ones for
// one-step tests), which no longer depends on a or a′.
func (m *Model) blockGram(h int) []float64 {
	S, O, B := m.States, m.NumObs, m.blocks(h)
	rest := m.laterGram(h)
	n := B * S
	g := make([]float64, n*n)
	for a := 0; a < B; a++ {
		for a2 := a; a2 < B; a2++ {
			w := emitGram(m.emitRow(h, a), m.emitRow(h, a2), S, O)
			for s := 0; s < S; s++ {
				for s2 := 0; s2 < S; s2++ {
					x := w[s*S+s2]
					if rest != nil {
						x *= rest[s*S+s2]
					}
					g[(a*S+s)*n+a2*S+s2] = x
					g[(a2*S+s2)*n+a*S+s] = x
				}
			}
		}
	}
	return g
}

// laterGram is rest[u*S+u2]: Σ over the later levels' observations and
// actions of the tests at step h of the products of their probabilities
// from s_{h+1} = u and u2 (nil for one-step tests).
func (m *Model) laterGram(h int) []float64 {
	S, O := m.States, m.NumObs
	k := m.testLen(h)
	if k <= 1 {
		return nil
	}
	var next [][]float64 // W_{j+1}^{(a)} per action a; nil at j = k
	for j := k; j >= 2; j-- {
		var acc []float64
		if next != nil {
			acc = m.sandwichSum(m.Table(h+j), func(a int) []float64 { return next[a] })
		}
		cur := make([][]float64, m.NumActions)
		for a := range cur {
			E := m.emitRow(h+j-1, a)
			w := emitGram(E, E, S, O)
			for i := range acc {
				w[i] *= acc[i]
			}
			cur[a] = w
		}
		next = cur
	}
	return m.sandwichSum(m.Table(h+1), func(a int) []float64 { return next[a] })
}

// testGram is G_hᵀG_h (row-major S×S) of the tests at step h of the
// Compact form, whose emission is the same for every action.
func (m *Model) testGram(h int) []float64 {
	S, O := m.States, m.NumObs
	var next []float64 // W_{j+1}, nil at the last level
	for j := m.testLen(h); j >= 1; j-- {
		E := m.emitRow(h+j-1, 0)
		W := emitGram(E, E, S, O)
		if next != nil {
			acc := m.sandwichSum(m.Table(h+j), func(int) []float64 { return next })
			for i := range W {
				W[i] *= acc[i]
			}
		}
		next = W
	}
	return next
}

// checkFiniteGram fails (ErrModel) when an entry of the n×n test Gram
// matrix w is not finite.
func checkFiniteGram(w []float64, n int) error {
	for i, x := range w {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%w: entry (%d, %d) of a %d×%d test Gram matrix is %v", ErrModel, i/n, i%n, n, n, x)
		}
	}
	return nil
}

// sqrtPSD returns the symmetric square root of the positive
// semi-definite n×n matrix w (row-major); eigenvalues below zero by
// rounding count as zero. It fails (ErrModel) when w has an entry that is
// not finite, whose eigendecomposition would be NaN throughout, or when
// the eigendecomposition does not converge.
func sqrtPSD(w []float64, n int) ([]float64, error) {
	if err := checkFiniteGram(w, n); err != nil {
		return nil, err
	}
	var eig mat.EigenSym
	if !eig.Factorize(mat.NewSymDense(n, append([]float64(nil), w...)), true) {
		return nil, fmt.Errorf("%w: the eigendecomposition of a %d×%d test Gram matrix failed", ErrModel, n, n)
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
	return out, nil
}

// mulBlock writes L·x into out (L row-major n×n), where x holds p in the
// coordinates off..off+len(p)−1 and zeros elsewhere.
func mulBlock(L []float64, n, off int, p, out []float64) {
	for i := 0; i < n; i++ {
		row := L[i*n+off : i*n+off+len(p)]
		x := 0.0
		for j, pj := range p {
			x += row[j] * pj
		}
		out[i] = x
	}
}
