package estimate

import (
	"math"
	"sort"
)

// RewardLik is the probability (categorical) or density (Gaussian) of the
// reward r at the step (s, a, s2, o) of table t. A categorical reward
// outside RewardValues has probability 0.
func (m *Model) RewardLik(t, s, a, s2, o int, r float64) float64 {
	i := m.RewardIndex(s, a, s2, o)
	if m.Reward == RewardGaussian {
		v := m.RewardVar[t][i]
		d := r - m.RewardMean[t][i]
		return math.Exp(-0.5*d*d/v) / math.Sqrt(2*math.Pi*v)
	}
	V := len(m.RewardValues)
	j := sort.SearchFloat64s(m.RewardValues, r)
	if j == V || m.RewardValues[j] != r {
		return 0
	}
	return m.RewardProb[t][i*V+j]
}

// valueIndex is the index of r in RewardValues, −1 when r is not one.
func (m *Model) valueIndex(r float64) int {
	j := sort.SearchFloat64s(m.RewardValues, r)
	if j == len(m.RewardValues) || m.RewardValues[j] != r {
		return -1
	}
	return j
}

// lastStepSums returns, per step table t, g[t][(a·V+v)·S+s] = Σ_{s2,o}
// T(s2|s,a)·E(o|s2,a)·R(v|s,a,s2,o): the probability of the last logged
// reward value v from s under a, the unlogged s_{H+1} and o_{H+1} summed
// out (full form, categorical rewards). A prepared model computes it once.
func (m *Model) lastStepSums() [][]float64 {
	c := m.basisCache
	if c == nil {
		return m.computeLastStepSums()
	}
	c.lastOnce.Do(func() { c.last = m.computeLastStepSums() })
	return c.last
}

// computeLastStepSums computes lastStepSums.
func (m *Model) computeLastStepSums() [][]float64 {
	S, A, V := m.States, m.NumActions, len(m.RewardValues)
	out := make([][]float64, len(m.Trans))
	for t := range out {
		g := make([]float64, A*V*S)
		for a := 0; a < A; a++ {
			for s := 0; s < S; s++ {
				m.addLastStepSums(t, a, s, g)
			}
		}
		out[t] = g
	}
	return out
}

// addLastStepSums adds into g[(a·V+v)·S+s] the probability of every
// reward value v from s under a at table t, over s2 and o.
func (m *Model) addLastStepSums(t, a, s int, g []float64) {
	S, O, V := m.States, m.NumObs, len(m.RewardValues)
	T, E := m.Trans[t], m.EmitOf(t, a)
	for s2 := 0; s2 < S; s2++ {
		ts := T[(a*S+s)*S+s2]
		if ts == 0 {
			continue
		}
		for o := 0; o < O; o++ {
			te := ts * E[s2*O+o]
			if te == 0 {
				continue
			}
			R := m.RewardProb[t][m.RewardIndex(s, a, s2, o)*V:]
			for v := 0; v < V; v++ {
				g[(a*V+v)*S+s] += te * R[v]
			}
		}
	}
}

// EpisodeLogLik is ln P(o_{1:H}, r_{1:H} | a_{1:H}) of one episode of
// Horizon steps (codes as in ingest.Dataset): the observations and the
// logged rewards given the actions, with the unlogged (s_{H+1}, o_{H+1})
// of the last reward summed out. It is −Inf for an impossible episode.
// It runs the scaled forward recursion; it is the reference the EM
// E-step agrees with.
func (m *Model) EpisodeLogLik(obs, act []uint16, rew []float64) float64 {
	S, H := m.States, m.Horizon
	if len(obs) != H || len(act) != H || len(rew) != H {
		panic("estimate: EpisodeLogLik: episode length differs from the model horizon")
	}
	alpha := make([]float64, S)
	next := make([]float64, S)
	z := m.firstLik(alpha, int(obs[0]))
	if !(z > 0) {
		return math.Inf(-1)
	}
	normalize(alpha, z)
	ll := math.Log(z)
	for i := 0; i < H-1; i++ {
		z = m.stepLik(i+1, int(act[i]), int(obs[i+1]), rew[i], alpha, next)
		if !(z > 0) {
			return math.Inf(-1)
		}
		normalize(next, z)
		ll += math.Log(z)
		alpha, next = next, alpha
	}
	z = m.lastStepLik(int(act[H-1]), rew[H-1], alpha)
	if !(z > 0) {
		return math.Inf(-1)
	}
	return ll + math.Log(z)
}

// firstLik sets alpha to the unnormalised Init(s)·Obs1(o1|s) and returns
// its sum P(o_1 = o1).
func (m *Model) firstLik(alpha []float64, o1 int) float64 {
	O := m.NumObs
	z := 0.0
	for s := range alpha {
		alpha[s] = m.Init[s] * m.Obs1[s*O+o1]
		z += alpha[s]
	}
	return z
}

// stepLik sets next to the unnormalised forward vector of step h (action
// a, next observation o, reward r) from the normalised alpha and returns
// its sum (0 when r is not a categorical reward value).
func (m *Model) stepLik(h, a, o int, r float64, alpha, next []float64) float64 {
	S, O := m.States, m.NumObs
	t := m.Table(h)
	T, E := m.Trans[t], m.EmitOf(t, a)
	clear(next)
	if m.Reward == RewardCategorical {
		// The reward's value index found once per step.
		v := m.valueIndex(r)
		if v < 0 {
			return 0
		}
		V, R := len(m.RewardValues), m.RewardProb[t]
		for s := 0; s < S; s++ {
			for s2 := 0; s2 < S; s2++ {
				next[s2] += alpha[s] * T[(a*S+s)*S+s2] * E[s2*O+o] * R[m.RewardIndex(s, a, s2, o)*V+v]
			}
		}
		return sumOf(next)
	}
	for s := 0; s < S; s++ {
		for s2 := 0; s2 < S; s2++ {
			next[s2] += alpha[s] * T[(a*S+s)*S+s2] * E[s2*O+o] * m.RewardLik(t, s, a, s2, o, r)
		}
	}
	return sumOf(next)
}

// sumOf is Σ x over xs, in order.
func sumOf(xs []float64) float64 {
	z := 0.0
	for _, x := range xs {
		z += x
	}
	return z
}

// lastStepLik is the probability of the last reward r under action a
// given the normalised forward vector alpha of step H, the unlogged
// (s_{H+1}, o_{H+1}) summed out (0 when r is not a categorical reward
// value).
func (m *Model) lastStepLik(a int, r float64, alpha []float64) float64 {
	S, O, H := m.States, m.NumObs, m.Horizon
	t := m.Table(H)
	if m.Reward == RewardCategorical && !m.Compact {
		return m.lastStepLikCat(t, a, r, alpha)
	}
	T, E := m.Trans[t], m.EmitOf(t, a)
	z := 0.0
	for s := 0; s < S; s++ {
		for s2 := 0; s2 < S; s2++ {
			if m.Compact {
				// Σ_o E(o|s2) = 1 and the reward ignores o.
				z += alpha[s] * T[(a*S+s)*S+s2] * m.RewardLik(t, s, a, s2, 0, r)
				continue
			}
			for o := 0; o < O; o++ {
				z += alpha[s] * T[(a*S+s)*S+s2] * E[s2*O+o] * m.RewardLik(t, s, a, s2, o, r)
			}
		}
	}
	return z
}

// lastStepLikCat is lastStepLik for categorical rewards in the full form:
// the unlogged (s_{H+1}, o_{H+1}) summed out once per model
// (lastStepSums), O(S) here instead of O(S²·|O|).
func (m *Model) lastStepLikCat(t, a int, r float64, alpha []float64) float64 {
	v := m.valueIndex(r)
	if v < 0 {
		return 0
	}
	g := m.lastStepSums()[t][(a*len(m.RewardValues)+v)*m.States:]
	z := 0.0
	for s, x := range alpha {
		z += x * g[s]
	}
	return z
}

// ObsLogLik is ln P(o_{1:h} | a_{1:h}) for the history τ_h = (obs[i],
// act[i])_{i<h}, h = len(obs) = len(act) ≤ Horizon, with the rewards
// summed out (−Inf for an impossible history, 0 for h = 0). The last
// action does not change the probability; it completes τ_h.
func (m *Model) ObsLogLik(obs, act []uint16) float64 {
	ll := 0.0
	m.obsPrefixLogLik(obs, act, func(_ int, x float64) { ll = x })
	return ll
}

// obsPrefixLogLik calls f(h, ln P(o_{1:h}|a_{1:h−1})) for h = 1..len(obs).
func (m *Model) obsPrefixLogLik(obs, act []uint16, f func(h int, ll float64)) {
	if len(obs) == 0 {
		return
	}
	S := m.States
	b := make([]float64, S)
	pred := make([]float64, S)
	m.Prior(b)
	z := m.ObserveFirst(b, int(obs[0]))
	if !(z > 0) {
		for h := 1; h <= len(obs); h++ {
			f(h, math.Inf(-1))
		}
		return
	}
	ll := math.Log(z)
	f(1, ll)
	for h := 1; h < len(obs); h++ {
		if !math.IsInf(ll, -1) {
			if lz, ok := m.filterStep(h, int(act[h-1]), int(obs[h]), b, pred); ok {
				ll += lz
			} else {
				ll = math.Inf(-1)
			}
		}
		f(h+1, ll)
	}
}

// filterStep moves the belief b (scratch pred) through step h under
// action a and observation o, and returns ln P(o | b, a); ok is false
// when o is impossible.
func (m *Model) filterStep(h, a, o int, b, pred []float64) (float64, bool) {
	m.Predict(h, b, a, pred)
	if z := m.Correct(h, pred, a, o, b); z > 0 {
		return math.Log(z), true
	}
	return 0, false
}
