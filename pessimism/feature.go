package pessimism

import "github.com/psrlcb/psrlcb/estimate"

// Featurizer computes prediction features ψ̄̂(τ_h) like
// estimate.Model.FeatureFromPred, but without allocating: it owns the
// scratch vectors of every test level. A Featurizer is not safe for
// concurrent use; give each worker its own.
type Featurizer struct {
	m    *estimate.Model
	k    int         // TestLength (≥ 1)
	w    [][]float64 // per test level: joint of observations so far and the state
	next [][]float64 // per test level: predicted state after the level's action
}

// NewFeaturizer returns a Featurizer for m.
func NewFeaturizer(m *estimate.Model) *Featurizer {
	k := m.TestLength
	if k <= 0 {
		k = 1
	}
	f := &Featurizer{m: m, k: k, w: make([][]float64, k+1), next: make([][]float64, k+1)}
	for j := range f.w {
		f.w[j] = make([]float64, m.States)
		f.next[j] = make([]float64, m.States)
	}
	return f
}

// testLen is min(m, H−h), the length of the core tests at step h.
func (f *Featurizer) testLen(h int) int {
	k := f.k
	if r := f.m.Horizon - h; k > r {
		k = r
	}
	return k
}

// Feature writes ψ̄̂(τ_h) into out (length m.FeatureDim(h)) given pred,
// the distribution of s_{h+1} given τ_h (Init for h = 0), and a = a_h
// (ignored for h = 0). The tests are ordered as in estimate (feature.go).
func (f *Featurizer) Feature(h int, pred []float64, a int, out []float64) {
	k := f.testLen(h)
	if k == 1 {
		if h == 0 {
			f.m.FirstObsProbs(out)
		} else {
			f.m.ObsProbs(h, pred, a, out)
		}
		return
	}
	f.rec(h, 1, k, pred, a, 0, out)
}

// emitRow returns the table P(o | s, a) (row-major s*O+o) of the
// observation that follows action a at step hAct; hAct = 0 means o_1.
func (f *Featurizer) emitRow(hAct, a int) []float64 {
	m := f.m
	if hAct == 0 {
		return m.Obs1
	}
	S, O := m.States, m.NumObs
	return m.Emit[m.Table(hAct)][a*S*O : (a+1)*S*O]
}

func (f *Featurizer) rec(h, j, k int, v []float64, aPrev, idx int, out []float64) {
	m := f.m
	S, O, A := m.States, m.NumObs, m.NumActions
	E := f.emitRow(h+j-1, aPrev)
	w, next := f.w[j], f.next[j]
	for o := 0; o < O; o++ {
		p := 0.0
		for s := 0; s < S; s++ {
			w[s] = v[s] * E[s*O+o]
			p += w[s]
		}
		if j == k {
			out[idx*O+o] = p
			continue
		}
		for a := 0; a < A; a++ {
			sub := (idx*O+o)*A + a
			if p == 0 {
				zeroBlock(m, j+1, k, sub, out)
				continue
			}
			m.Predict(h+j, w, a, next)
			f.rec(h, j+1, k, next, a, sub, out)
		}
	}
}

// zeroBlock clears the entries below prefix idx at level j: O^(k−j+1)·A^(k−j)
// of them, contiguous in the lexicographic order.
func zeroBlock(m *estimate.Model, j, k, idx int, out []float64) {
	n := 1
	for l := j; l <= k; l++ {
		n *= m.NumObs
		if l < k {
			n *= m.NumActions
		}
	}
	clear(out[idx*n : (idx+1)*n])
}
