package estimate

// Prediction features ψ̄(τ_h) for the core tests (docs/design.md, section 2; Section 3 of
// Huang, Liang, Yang (ICLR 2024, arXiv:2307.00405)).
//
// A core test of length k at step h is (o_{h+1}, a_{h+1}, …, a_{h+k−1},
// o_{h+k}); [ψ̄(τ_h)]_ℓ = P(test ℓ's observations | τ_h, test ℓ's actions).
// k = min(m, H−h), so near the end of the episode tests are truncated to
// the steps that remain. Tests are ordered lexicographically over
// (o_{h+1}, a_{h+1}, o_{h+2}, …, o_{h+k}): index ((o1·A + a1)·O + o2)·A + …

// testLen is the length of the core tests at step h (0 ≤ h < H).
func (m *Model) testLen(h int) int {
	k := m.TestLength
	if k <= 0 {
		k = 1
	}
	if r := m.Horizon - h; k > r {
		k = r
	}
	return k
}

// FeatureDim is d_h, the dimension of ψ̄(τ_h) at step h (0 ≤ h < H): the
// rank S for the Compact form; for the full form the number of tests of
// length min(m, H−h), |O|^k·|A|^(k−1), or the reduced dimension B_h·S
// when that is smaller (see basis.go).
func (m *Model) FeatureDim(h int) int {
	if m.Compact {
		return m.States
	}
	if m.reduced(h) {
		return m.blocks(h) * m.States
	}
	return m.testCount(h)
}

// maxTests caps testCount: any count past it is "more than a reduced
// feature can ever have" and only compared, never allocated.
const maxTests = 1 << 40

// testCount is the number of tests of length min(m, H−h) at step h, or
// maxTests when it is larger.
func (m *Model) testCount(h int) int {
	k := m.testLen(h)
	d := 1
	for j := 0; j < k; j++ {
		d = min(d*m.NumObs, maxTests)
		if j > 0 {
			d = min(d*m.NumActions, maxTests)
		}
	}
	return d
}

// FeatureFromPred writes ψ̄(τ_h) into out (length FeatureDim(h)), given
// pred, the distribution of s_{h+1} given τ_h (for h = 0 the prior Init),
// and a = a_h (ignored for h = 0). For one-step tests this is
// ObsProbs(h, pred, a) (FirstObsProbs for h = 0). Callers computing many
// features keep a Featurizer instead, which does not allocate. The error
// is NewFeaturizer's.
func (m *Model) FeatureFromPred(h int, pred []float64, a int, out []float64) error {
	f, err := NewFeaturizer(m)
	if err != nil {
		return err
	}
	f.Feature(h, pred, a, out)
	return nil
}

// Featurizer computes prediction features ψ̄(τ_h) without allocating: it
// owns the scratch vectors of every test level. A Featurizer is not safe
// for concurrent use; give each worker its own.
type Featurizer struct {
	m    *Model
	w    [][]float64 // per test level: joint of observations so far and the state
	next [][]float64 // per test level: predicted state after the level's action
	// basis[h] is the n×n map L_h from the predicted state (in block
	// a_h of n = B_h·S coordinates) to the reduced feature (basis.go);
	// basis[h] nil: the feature is the tests' probabilities.
	basis [][]float64
}

// NewFeaturizer returns a Featurizer for m, or FeatureBasis's error when
// the model's features have no basis.
func NewFeaturizer(m *Model) (*Featurizer, error) {
	basis, err := m.featureBases()
	if err != nil {
		return nil, err
	}
	return newFeaturizer(m, basis), nil
}

// Clone returns a Featurizer of the same model with its own scratch, for
// another worker; it shares f's bases, so it cannot fail.
func (f *Featurizer) Clone() *Featurizer { return newFeaturizer(f.m, f.basis) }

func newFeaturizer(m *Model, basis [][]float64) *Featurizer {
	k := max(m.TestLength, 1)
	f := &Featurizer{m: m, w: make([][]float64, k+1), next: make([][]float64, k+1), basis: basis}
	for j := range f.w {
		f.w[j] = make([]float64, m.States)
		f.next[j] = make([]float64, m.States)
	}
	return f
}

// Feature is FeatureFromPred with the Featurizer's scratch.
func (f *Featurizer) Feature(h int, pred []float64, a int, out []float64) {
	m := f.m
	if L := f.basis[h]; L != nil {
		blk := 0
		if h > 0 && !m.Compact {
			blk = a
		}
		mulBlock(L, m.FeatureDim(h), blk*m.States, pred[:m.States], out)
		return
	}
	f.Tests(h, pred, a, out)
}

// Tests writes the predictions of every test at step h (testCount(h) of
// them, lexicographic order) into out: ψ̄(τ_h) of the full form, and the
// vector the Compact form's feature is an isometric image of.
func (f *Featurizer) Tests(h int, pred []float64, a int, out []float64) {
	m := f.m
	k := m.testLen(h)
	if k == 1 {
		if h == 0 {
			m.FirstObsProbs(out)
		} else {
			m.ObsProbs(h, pred, a, out)
		}
		return
	}
	f.rec(h, 1, k, pred, a, 0, out)
}

// emitRow returns the table P(o | s, a) (row-major s*O+o) of the
// observation that follows action a at step hAct (1-based); hAct = 0
// means o_1, emitted by Obs1.
func (m *Model) emitRow(hAct, a int) []float64 {
	if hAct == 0 {
		return m.Obs1
	}
	return m.EmitOf(m.Table(hAct), a)
}

// rec expands level j of the tests: v is the unnormalised joint of the
// test's observations so far and s_{h+j}; aPrev is a_{h+j−1}.
func (f *Featurizer) rec(h, j, k int, v []float64, aPrev, idx int, out []float64) {
	m := f.m
	S, O, A := m.States, m.NumObs, m.NumActions
	E := m.emitRow(h+j-1, aPrev)
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
				m.zeroBlock(j+1, k, sub, out)
				continue
			}
			m.Predict(h+j, w, a, next)
			f.rec(h, j+1, k, next, a, sub, out)
		}
	}
}

// zeroBlock clears the entries below prefix idx at level j: O^(k−j+1)·A^(k−j)
// of them, contiguous in the lexicographic order.
func (m *Model) zeroBlock(j, k, idx int, out []float64) {
	n := 1
	for l := j; l <= k; l++ {
		n *= m.NumObs
		if l < k {
			n *= m.NumActions
		}
	}
	clear(out[idx*n : (idx+1)*n])
}

// PredictHistory returns the distribution of s_{h+1} given the history
// τ_h = (o_1, a_1, …, o_h, a_h) (h = len(obs) = len(act); h = 0 gives
// Init) and P(o_{1:h} | a_{1:h}). When the history has probability 0 the
// returned distribution is all zero.
func (m *Model) PredictHistory(obs, act []int) (pred []float64, prob float64) {
	S := m.States
	b := make([]float64, S)
	m.Prior(b)
	prob = 1
	if len(obs) == 0 {
		return b, 1
	}
	prob = m.ObserveFirst(b, obs[0])
	pred = make([]float64, S)
	for h := 1; ; h++ {
		m.Predict(h, b, act[h-1], pred)
		if h == len(obs) || prob == 0 {
			if prob == 0 {
				normalize(pred, 0)
			}
			return pred, prob
		}
		prob *= m.Correct(h, pred, act[h-1], obs[h], b)
	}
}

// Feature writes ψ̄(τ_h) for the history τ_h = (obs[i], act[i])_{i<h} into
// out (length FeatureDim(h)); h = len(obs) = len(act). The error is
// NewFeaturizer's.
func (m *Model) Feature(obs, act []int, out []float64) error {
	h := len(obs)
	pred, _ := m.PredictHistory(obs, act)
	a := 0
	if h > 0 {
		a = act[h-1]
	}
	return m.FeatureFromPred(h, pred, a, out)
}
