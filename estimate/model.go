package estimate

import (
	"fmt"
	"math"

	"github.com/psrlcb/psrlcb/errkind"
)

// RewardKind says how the logged reward r_h is emitted given the step
// (s_h, a_h, s_{h+1}, o_{h+1}).
type RewardKind int

const (
	// RewardCategorical: r_h takes one of a few distinct values
	// (Model.RewardValues) with probabilities RewardProb.
	RewardCategorical RewardKind = iota
	// RewardGaussian: r_h ~ N(RewardMean, RewardVar).
	RewardGaussian
)

// Model is a rank-S latent-state model of the environment: a
// time-inhomogeneous input–output HMM. It is a PSR of rank ≤ S whose
// probabilities are valid by construction (docs/design.md, section 4).
//
// Timing: at step h (1-based) the environment is in s_h and emits o_h; the
// agent takes a_h; the state moves to s_{h+1} ~ T_h(·|s_h,a_h), the next
// observation o_{h+1} ~ E_h(·|s_{h+1},a_h) is emitted and the reward r_h is
// emitted given (s_h,a_h,s_{h+1},o_{h+1}). o_1 ~ Obs1(·|s_1), s_1 ~ Init.
// T_H and E_H exist too: o_{H+1} is never logged but r_H depends on it.
//
// Layouts (all row-major, t = step table index, see Table):
//
//	Init[s]                               P(s_1 = s)
//	Obs1[s*O+o]                           P(o_1 = o | s_1 = s)
//	Trans[t][(a*S+s)*S+s2]                P(s_{h+1} = s2 | s_h = s, a_h = a)
//	Emit[t][(a*S+s2)*O+o]                 P(o_{h+1} = o | s_{h+1} = s2, a_h = a)
//	RewardProb[t][RewardIndex(s,a,s2,o)*V+v]  P(r_h = RewardValues[v] | s,a,s2,o)
//	RewardMean[t][RewardIndex(s,a,s2,o)], RewardVar[t][…]   Gaussian rewards
//
// With Stationary, every table slice has length 1 and serves every step;
// otherwise length Horizon, index h−1.
//
// Compact is the form for large vocabularies: the emission does not
// depend on the action, E_h(o|s2), and the reward is emitted given
// (s_h, a_h, s_{h+1}) only, so the model holds S×|O| emissions, S×S
// transitions per action and reward parameters per (s, a, s2) — nothing
// of size |O|·|A| or |O|²:
//
//	Emit[t][s2*O+o]                       P(o_{h+1} = o | s_{h+1} = s2)
//	RewardProb[t][RewardIndex(s,a,s2,·)*V+v]   with RewardIndex = (s*A+a)*S+s2
//
// Use EmitOf and RewardIndex rather than the layouts, and they serve both
// forms.
type Model struct {
	States, NumObs, NumActions, Horizon int
	Stationary                          bool
	Compact                             bool

	// Symbols of the dataset the model was fitted on (codes index these).
	ObsVocab, ActVocab []string

	Init  []float64
	Obs1  []float64
	Trans [][]float64
	Emit  [][]float64

	Reward       RewardKind
	RewardValues []float64   // categorical support, sorted
	RewardProb   [][]float64 // categorical
	RewardMean   [][]float64 // gaussian
	RewardVar    [][]float64 // gaussian

	// ReturnMin and ReturnMax are the range of returns the model can
	// produce in the user's units, H times the smallest and largest logged
	// reward (or a range the user states); the planner rescales returns
	// to [0,1] with them (the paper's R).
	ReturnMin, ReturnMax float64

	// TestLength is m, the length of the core tests (docs/design.md, section 2).
	// Zero means 1.
	TestLength int

	// expReward[t][(a*S+s)] = E[r_h | s_h=s, a_h=a], derived by Prepare.
	expReward [][]float64
	// basisCache holds the feature bases of the prepared parameters
	// (basis.go); Prepare replaces it.
	basisCache *basisCache
}

// ErrModel is returned by Validate for a model whose shapes or
// probabilities are inconsistent.
var ErrModel = errkind.New(errkind.Data, "estimate: invalid model")

// Table is the index into the per-step tables used at step h (1-based).
func (m *Model) Table(h int) int {
	if m.Stationary {
		return 0
	}
	return h - 1
}

// RewardIndex is the index of the step tuple (s, a, s2, o) in the reward
// tables (o is ignored by the Compact form).
func (m *Model) RewardIndex(s, a, s2, o int) int {
	if m.Compact {
		return (s*m.NumActions+a)*m.States + s2
	}
	return ((s*m.NumActions+a)*m.States+s2)*m.NumObs + o
}

// RewardCells is the number of step tuples with reward parameters:
// S·A·S·O, or S·A·S for the Compact form.
func (m *Model) RewardCells() int {
	n := m.States * m.NumActions * m.States
	if m.Compact {
		return n
	}
	return n * m.NumObs
}

// EmitRows is the number of emission distributions per table: one per
// (a, s2), or one per s2 for the Compact form.
func (m *Model) EmitRows() int {
	if m.Compact {
		return m.States
	}
	return m.NumActions * m.States
}

// EmitOf returns the emission table P(o_{h+1} = o | s_{h+1} = s2, a_h = a)
// of step table t, row-major s2*O+o.
func (m *Model) EmitOf(t, a int) []float64 {
	n := m.States * m.NumObs
	if m.Compact {
		return m.Emit[t][:n]
	}
	return m.Emit[t][a*n : (a+1)*n]
}

// ExpectedRewardOf is E[r_h | s, a, s2, o] in the user's units.
func (m *Model) ExpectedRewardOf(t, s, a, s2, o int) float64 {
	i := m.RewardIndex(s, a, s2, o)
	if m.Reward == RewardGaussian {
		return m.RewardMean[t][i]
	}
	V := len(m.RewardValues)
	e := 0.0
	for v, p := range m.RewardProb[t][i*V : (i+1)*V] {
		e += p * m.RewardValues[v]
	}
	return e
}

// Prepare derives the cached expected rewards; call it after changing any
// parameter. Fit returns prepared models.
func (m *Model) Prepare() {
	nt := len(m.Trans)
	m.basisCache = &basisCache{}
	m.expReward = make([][]float64, nt)
	for t := 0; t < nt; t++ {
		m.expReward[t] = m.tableExpectedRewards(t)
	}
}

// tableExpectedRewards is E[r | s, a] at step table t for every action a
// and state s, indexed a*S+s.
func (m *Model) tableExpectedRewards(t int) []float64 {
	S, A := m.States, m.NumActions
	er := make([]float64, A*S)
	for a := 0; a < A; a++ {
		for s := 0; s < S; s++ {
			er[a*S+s] = m.stepExpectedReward(t, s, a)
		}
	}
	return er
}

// stepExpectedReward is E[r | s, a] at step table t: the expected reward
// over s_{h+1} and o_{h+1}.
func (m *Model) stepExpectedReward(t, s, a int) float64 {
	S := m.States
	e := 0.0
	for s2 := 0; s2 < S; s2++ {
		if ps2 := m.Trans[t][(a*S+s)*S+s2]; ps2 != 0 {
			e = m.addNextReward(e, t, s, a, s2, ps2)
		}
	}
	return e
}

// addNextReward adds to the running sum e the reward expected after the
// move to s2 (of probability ps2), over o_{h+1}, and returns the sum.
func (m *Model) addNextReward(e float64, t, s, a, s2 int, ps2 float64) float64 {
	if m.Compact {
		// The reward does not depend on o_{h+1}.
		return e + ps2*m.ExpectedRewardOf(t, s, a, s2, 0)
	}
	O := m.NumObs
	for o, po := range m.EmitOf(t, a)[s2*O : (s2+1)*O] {
		if po != 0 {
			e += ps2 * po * m.ExpectedRewardOf(t, s, a, s2, o)
		}
	}
	return e
}

// Validate checks shapes and that every distribution sums to 1 within
// tol.
func (m *Model) Validate(tol float64) error {
	nt, err := m.checkSizes()
	if err != nil {
		return err
	}
	if err := m.validateFirst(tol); err != nil {
		return err
	}
	return m.validateTables(nt, tol)
}

// checkSizes checks the sizes S, A, O and H and the number of step
// tables, and returns that number nt (1 when stationary, H otherwise).
func (m *Model) checkSizes() (nt int, err error) {
	S, A, O, H := m.States, m.NumActions, m.NumObs, m.Horizon
	if S <= 0 || A <= 0 || O <= 0 || H <= 0 {
		return 0, fmt.Errorf("%w: sizes S=%d A=%d O=%d H=%d", ErrModel, S, A, O, H)
	}
	nt = m.numTables()
	if len(m.Trans) != nt || len(m.Emit) != nt {
		return 0, fmt.Errorf("%w: %d transition and %d emission tables, want %d", ErrModel, len(m.Trans), len(m.Emit), nt)
	}
	return nt, nil
}

// numTables is the number of step tables: 1 when stationary, H
// otherwise.
func (m *Model) numTables() int {
	if m.Stationary {
		return 1
	}
	return m.Horizon
}

// validateFirst checks the distributions of the first step: s_1 (Init)
// and o_1 given s_1 (Obs1).
func (m *Model) validateFirst(tol float64) error {
	if err := checkDist("Init", m.Init, 1, m.States, tol); err != nil {
		return err
	}
	return checkDist("Obs1", m.Obs1, m.States, m.NumObs, tol)
}

// validateTables checks the nt step tables in order.
func (m *Model) validateTables(nt int, tol float64) error {
	for t := 0; t < nt; t++ {
		if err := m.validateTable(t, nt, tol); err != nil {
			return err
		}
	}
	return nil
}

// checkDist checks that p holds n distributions of width entries, each
// non-negative and summing to 1 within tol; name names p in the error.
func checkDist(name string, p []float64, n, width int, tol float64) error {
	if len(p) != n*width {
		return fmt.Errorf("%w: %s has %d entries, want %d", ErrModel, name, len(p), n*width)
	}
	for r := 0; r < n; r++ {
		if err := checkRow(name, r, p[r*width:(r+1)*width], tol); err != nil {
			return err
		}
	}
	return nil
}

// checkRow checks that row r of p (named name) is non-negative and sums
// to 1 within tol.
func checkRow(name string, r int, row []float64, tol float64) error {
	sum := 0.0
	for _, x := range row {
		if x < 0 || math.IsNaN(x) {
			return fmt.Errorf("%w: %s row %d has entry %v", ErrModel, name, r, x)
		}
		sum += x
	}
	if math.Abs(sum-1) > tol {
		return fmt.Errorf("%w: %s row %d sums to %v", ErrModel, name, r, sum)
	}
	return nil
}

// validateTable checks step table t (of nt): its transitions, emissions
// and rewards.
func (m *Model) validateTable(t, nt int, tol float64) error {
	S, A, O := m.States, m.NumActions, m.NumObs
	if err := checkDist(fmt.Sprintf("Trans[%d]", t), m.Trans[t], A*S, S, tol); err != nil {
		return err
	}
	if err := checkDist(fmt.Sprintf("Emit[%d]", t), m.Emit[t], m.EmitRows(), O, tol); err != nil {
		return err
	}
	return m.validateRewards(t, nt, tol)
}

// validateRewards checks the reward tables of step table t (of nt):
// categorical rows summing to 1, or Gaussian means and variances of the
// right shape.
func (m *Model) validateRewards(t, nt int, tol float64) error {
	n := m.RewardCells()
	switch m.Reward {
	case RewardCategorical:
		if len(m.RewardProb) != nt {
			return fmt.Errorf("%w: %d reward tables, want %d", ErrModel, len(m.RewardProb), nt)
		}
		return checkDist(fmt.Sprintf("RewardProb[%d]", t), m.RewardProb[t], n, len(m.RewardValues), tol)
	case RewardGaussian:
		if len(m.RewardMean) != nt || len(m.RewardVar) != nt || len(m.RewardMean[t]) != n || len(m.RewardVar[t]) != n {
			return fmt.Errorf("%w: gaussian reward tables have the wrong shape", ErrModel)
		}
		return nil
	default:
		return fmt.Errorf("%w: unknown reward kind %d", ErrModel, m.Reward)
	}
}

// Prior writes the distribution of s_1 into b.
func (m *Model) Prior(b []float64) { copy(b, m.Init) }

// ObserveFirst conditions the prior b on o_1 in place and returns P(o_1).
// When P(o_1) is 0, b is left all zero.
func (m *Model) ObserveFirst(b []float64, o int) float64 {
	O := m.NumObs
	z := 0.0
	for s := range b {
		b[s] *= m.Obs1[s*O+o]
		z += b[s]
	}
	normalize(b, z)
	return z
}

// Predict writes into pred the distribution of s_{h+1} given the belief b
// over s_h and the action a_h = a: pred[s2] = Σ_s b[s] T_h(s2|s,a).
func (m *Model) Predict(h int, b []float64, a int, pred []float64) {
	S := m.States
	T := m.Trans[m.Table(h)][a*S*S : (a+1)*S*S]
	for s2 := range pred[:S] {
		pred[s2] = 0
	}
	for s, bs := range b[:S] {
		if bs == 0 {
			continue
		}
		row := T[s*S : (s+1)*S]
		for s2, p := range row {
			pred[s2] += bs * p
		}
	}
}

// ObsProbs writes into out[o] = P(o_{h+1} = o | τ_h) = Σ_s2 pred[s2] E_h(o|s2,a),
// where pred is the output of Predict for the same h and a. For h = 0 use
// FirstObsProbs instead.
func (m *Model) ObsProbs(h int, pred []float64, a int, out []float64) {
	S, O := m.States, m.NumObs
	E := m.EmitOf(m.Table(h), a)
	for o := range out[:O] {
		out[o] = 0
	}
	for s2, p := range pred[:S] {
		if p == 0 {
			continue
		}
		row := E[s2*O : (s2+1)*O]
		for o, e := range row {
			out[o] += p * e
		}
	}
}

// FirstObsProbs writes P(o_1 = o) into out: the prediction feature of the
// empty history for one-step tests.
func (m *Model) FirstObsProbs(out []float64) {
	S, O := m.States, m.NumObs
	for o := range out[:O] {
		out[o] = 0
	}
	for s := 0; s < S; s++ {
		for o := 0; o < O; o++ {
			out[o] += m.Init[s] * m.Obs1[s*O+o]
		}
	}
}

// Correct writes into next the belief over s_{h+1} after observing
// o_{h+1} = o, from pred (Predict's output for h and a), and returns
// P(o_{h+1} = o | τ_h). When that probability is 0, next is all zero.
func (m *Model) Correct(h int, pred []float64, a, o int, next []float64) float64 {
	S, O := m.States, m.NumObs
	E := m.EmitOf(m.Table(h), a)
	z := 0.0
	for s2 := 0; s2 < S; s2++ {
		v := pred[s2] * E[s2*O+o]
		next[s2] = v
		z += v
	}
	normalize(next[:S], z)
	return z
}

// ExpectedReward is E[r_h | belief b over s_h, a_h = a] in the user's units.
func (m *Model) ExpectedReward(h int, b []float64, a int) float64 {
	if m.expReward == nil {
		m.Prepare()
	}
	S := m.States
	er := m.expReward[m.Table(h)][a*S : (a+1)*S]
	e := 0.0
	for s, p := range b[:S] {
		e += p * er[s]
	}
	return e
}

// RescaleReturn maps a return in the user's units to the paper's R ∈ [0,1]
// using the model's range of returns. A constant range maps to 0.
func (m *Model) RescaleReturn(ret float64) float64 {
	if m.ReturnMax <= m.ReturnMin {
		return 0
	}
	return (ret - m.ReturnMin) / (m.ReturnMax - m.ReturnMin)
}

// ObsSequences is |O|^H, the number of observation sequences of an
// episode: what an exact walk over every history of a policy enumerates.
func (m *Model) ObsSequences() float64 {
	return math.Pow(float64(m.NumObs), float64(m.Horizon))
}

// ReturnUnits maps a value on the paper's [0,1] scale back to the user's
// units: the inverse of RescaleReturn where the range is not constant.
func (m *Model) ReturnUnits(v float64) float64 {
	return m.ReturnMin + v*(m.ReturnMax-m.ReturnMin)
}

// RewardScale returns (shift per step, scale) such that the rescaled
// return R = Σ_h (r_h − shift)·scale = RescaleReturn(Σ_h r_h).
func (m *Model) RewardScale() (shift, scale float64) {
	if m.ReturnMax <= m.ReturnMin {
		return 0, 0
	}
	return m.ReturnMin / float64(m.Horizon), 1 / (m.ReturnMax - m.ReturnMin)
}

func normalize(b []float64, z float64) {
	if z > 0 {
		inv := 1 / z
		for i := range b {
			b[i] *= inv
		}
		return
	}
	for i := range b {
		b[i] = 0
	}
}

// MaxParamDiff is the largest absolute difference between the parameters
// of m and o (initial distribution, first observation, transitions,
// emissions, reward tables): +Inf when their shapes differ. Tests use it
// to compare fits made different ways.
func (m *Model) MaxParamDiff(o *Model) float64 {
	d := 0.0
	d = maxDiff(d, m.Init, o.Init)
	d = maxDiff(d, m.Obs1, o.Obs1)
	d = maxDiff(d, m.RewardValues, o.RewardValues)
	d = maxDiffAll(d, m.Trans, o.Trans)
	d = maxDiffAll(d, m.Emit, o.Emit)
	d = maxDiffAll(d, m.RewardProb, o.RewardProb)
	d = maxDiffAll(d, m.RewardMean, o.RewardMean)
	d = maxDiffAll(d, m.RewardVar, o.RewardVar)
	return d
}

// maxDiff is the larger of d and max_i |x_i − y_i|, +Inf when the
// lengths differ.
func maxDiff(d float64, x, y []float64) float64 {
	if len(x) != len(y) {
		return math.Inf(1)
	}
	for i := range x {
		d = max(d, math.Abs(x[i]-y[i]))
	}
	return d
}

// maxDiffAll is maxDiff over the tables of x and y, +Inf when their
// numbers differ.
func maxDiffAll(d float64, x, y [][]float64) float64 {
	if len(x) != len(y) {
		return math.Inf(1)
	}
	for i := range x {
		d = maxDiff(d, x[i], y[i])
	}
	return d
}
