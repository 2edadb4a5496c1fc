package pomdp

import (
	"fmt"
	"slices"
	"sort"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
)

// TrueModel writes m as the estimate.Model a fit of the logs d would
// return if it recovered m exactly: the same states, d's observation and
// action vocabularies (InitSymbol is o_1, emitted by every state), a
// stationary model of d's horizon, and the reward R(a,s,s′,o) as a point
// mass on its value (categorical over d's logged reward values when they
// hold every value of m, so the model can warm-start a fit of d;
// otherwise over the union). Observations or actions of m that d never
// logged are an error: the model could not place their probability.
//
// It lets a study compare a fit with the truth in the fit's own terms:
// log-likelihoods of the same logs, EM started from the truth, the value
// a fitted model gives a policy beside the value the truth gives it.
func (m *POMDP) TrueModel(d *ingest.Dataset) (*estimate.Model, error) {
	lo, hi := returnRange(d)
	return m.trueModel(d, lo, hi)
}

// trueModel is TrueModel with the return range [lo, hi].
func (m *POMDP) trueModel(d *ingest.Dataset, lo, hi float64) (*estimate.Model, error) {
	S, A, O := m.NumStates(), m.NumActions(), len(d.ObsVocab)
	obsCode, actCode, err := m.trueCodes(d)
	if err != nil {
		return nil, err
	}
	vals := rewardValues(m, d.Reward)
	mod := trueShell(m, d, vals, obsCode[0])
	t := &trueTables{m: m, mod: mod, obsCode: obsCode, actCode: actCode,
		T: make([]float64, A*S*S), E: make([]float64, A*S*O), R: make([]float64, S*A*S*O*len(vals))}
	t.fillAll()
	mod.Trans, mod.Emit, mod.RewardProb = [][]float64{t.T}, [][]float64{t.E}, [][]float64{t.R}
	mod.ReturnMin, mod.ReturnMax = lo, hi
	mod.Prepare()
	return mod, nil
}

// trueCodes are the codes in d's vocabularies of m's observations
// (InitSymbol first) and actions; every action of d must be m's.
func (m *POMDP) trueCodes(d *ingest.Dataset) (obsCode, actCode []int, err error) {
	obsCode, err = codes(d.ObsVocab, append([]string{InitSymbol}, m.Observations...), "observation", m.Name)
	if err != nil {
		return nil, nil, err
	}
	actCode, err = codes(d.ActVocab, m.Actions, "action", m.Name)
	if err != nil {
		return nil, nil, err
	}
	if len(d.ActVocab) != m.NumActions() {
		return nil, nil, fmt.Errorf("%w: the logs have %d actions, %s has %d", ErrPolicy, len(d.ActVocab), m.Name, m.NumActions())
	}
	return obsCode, actCode, nil
}

// trueShell is the estimate.Model of m for the logs d without its
// transition, emission and reward tables: its dimensions, d's
// vocabularies, the reward values vals, m's start and the certain first
// observation of code init.
func trueShell(m *POMDP, d *ingest.Dataset, vals []float64, init int) *estimate.Model {
	S, A, O := m.NumStates(), m.NumActions(), len(d.ObsVocab)
	mod := &estimate.Model{States: S, NumObs: O, NumActions: A, Horizon: d.Horizon, Stationary: true,
		ObsVocab: d.ObsVocab, ActVocab: d.ActVocab, Reward: estimate.RewardCategorical, RewardValues: vals, TestLength: 1}
	mod.Init = slices.Clone(m.Start)
	mod.Obs1 = make([]float64, S*O)
	for s := range S {
		mod.Obs1[s*O+init] = 1
	}
	return mod
}

// trueTables are the stationary tables T, E and R of mod, the fitted form
// of m, in the logs' codes of m's observations (obsCode, InitSymbol first)
// and actions (actCode).
type trueTables struct {
	m                *POMDP
	mod              *estimate.Model
	obsCode, actCode []int
	T, E, R          []float64
}

// fillAll sets the entries of every action and state.
func (t *trueTables) fillAll() {
	for a := range t.m.NumActions() {
		for s := range t.m.NumStates() {
			t.fill(a, s)
		}
	}
}

// fill sets the entries of action a from state s: the transitions, the
// reward's point mass after each next state and observation symbol, and
// the emissions.
func (t *trueTables) fill(a, s int) {
	for s2 := range t.m.NumStates() {
		t.fillNext(a, s, s2)
	}
	t.emissions(a, s)
}

// fillNext sets the transition of action a from s to s2 and the reward's
// point mass after s2 and each observation symbol.
func (t *trueTables) fillNext(a, s, s2 int) {
	S := t.m.NumStates()
	t.T[(t.actCode[a]*S+s)*S+s2] = t.m.T[a][s][s2]
	for c := range t.mod.NumObs {
		t.rewardMass(a, s, s2, c)
	}
}

// emissions adds the emission probabilities of action a into the state
// s, in the logs' codes of the observations.
func (t *trueTables) emissions(a, s int) {
	S, O := t.m.NumStates(), t.mod.NumObs
	ca := t.actCode[a]
	for o := range t.m.NumObs() {
		t.E[(ca*S+s)*O+t.obsCode[o+1]] += t.m.O[a][s][o]
	}
}

// rewardMass puts the reward's probability one on the value of R(a, s,
// s′, o) where c is the code of o.
func (t *trueTables) rewardMass(a, s, s2, c int) {
	vals := t.mod.RewardValues
	// Symbols m never emits after a step (o_1's) get the
	// first value: any valid row serves.
	v := 0
	if o := slices.Index(t.obsCode[1:], c); o >= 0 {
		v = sort.SearchFloat64s(vals, t.m.R(a, s, s2, o))
	}
	t.R[t.mod.RewardIndex(s, t.actCode[a], s2, c)*len(vals)+v] = 1
}

// codes maps each name to its code in vocab.
func codes(vocab, names []string, what, model string) ([]int, error) {
	out := make([]int, len(names))
	for i, n := range names {
		c := slices.Index(vocab, n)
		if c < 0 {
			return nil, fmt.Errorf("%w: %s %q of %s never occurs in the logs", ErrPolicy, what, n, model)
		}
		out[i] = c
	}
	return out, nil
}

// rewardValues is the sorted categorical support of the true model: the
// logged values when they hold every reward m can pay, else their union
// with m's.
func rewardValues(m *POMDP, logged []float64) []float64 {
	set := map[float64]bool{}
	addAll(set, logged)
	addAll(set, m.Reward)
	return sortedKeys(set)
}

// addAll adds the values xs to set.
func addAll(set map[float64]bool, xs []float64) {
	for _, x := range xs {
		set[x] = true
	}
}

// sortedKeys are the values in set, sorted.
func sortedKeys(set map[float64]bool) []float64 {
	vals := make([]float64, 0, len(set))
	for v := range set {
		vals = append(vals, v)
	}
	sort.Float64s(vals)
	return vals
}

// returnRange is the fit's range of returns: H times the least and the
// largest logged reward.
func returnRange(d *ingest.Dataset) (lo, hi float64) {
	lo, hi = slices.Min(d.Reward), slices.Max(d.Reward)
	H := float64(d.Horizon)
	return H * lo, H * hi
}
