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

// EpisodeLogLik is ln P(o_{1:H}, r_{1:H} | a_{1:H}) of one episode of
// Horizon steps (codes as in ingest.Dataset): the observations and the
// logged rewards given the actions, with the unlogged (s_{H+1}, o_{H+1})
// of the last reward summed out. It is −Inf for an impossible episode.
// It runs the scaled forward recursion; it is the reference the EM
// E-step agrees with.
func (m *Model) EpisodeLogLik(obs, act []uint16, rew []float64) float64 {
	S, O, H := m.States, m.NumObs, m.Horizon
	if len(obs) != H || len(act) != H || len(rew) != H {
		panic("estimate: EpisodeLogLik: episode length differs from the model horizon")
	}
	alpha := make([]float64, S)
	next := make([]float64, S)
	z := 0.0
	for s := 0; s < S; s++ {
		alpha[s] = m.Init[s] * m.Obs1[s*O+int(obs[0])]
		z += alpha[s]
	}
	if !(z > 0) {
		return math.Inf(-1)
	}
	normalize(alpha, z)
	ll := math.Log(z)
	for i := 0; i < H; i++ {
		h := i + 1
		t := m.Table(h)
		a := int(act[i])
		T, E := m.Trans[t], m.EmitOf(t, a)
		if h == H {
			z = 0
			for s := 0; s < S; s++ {
				for s2 := 0; s2 < S; s2++ {
					if m.Compact {
						// Σ_o E(o|s2) = 1 and the reward ignores o.
						z += alpha[s] * T[(a*S+s)*S+s2] * m.RewardLik(t, s, a, s2, 0, rew[i])
						continue
					}
					for o := 0; o < O; o++ {
						z += alpha[s] * T[(a*S+s)*S+s2] * E[s2*O+o] * m.RewardLik(t, s, a, s2, o, rew[i])
					}
				}
			}
			if !(z > 0) {
				return math.Inf(-1)
			}
			return ll + math.Log(z)
		}
		o := int(obs[i+1])
		clear(next)
		for s := 0; s < S; s++ {
			for s2 := 0; s2 < S; s2++ {
				next[s2] += alpha[s] * T[(a*S+s)*S+s2] * E[s2*O+o] * m.RewardLik(t, s, a, s2, o, rew[i])
			}
		}
		z = 0
		for _, x := range next {
			z += x
		}
		if !(z > 0) {
			return math.Inf(-1)
		}
		normalize(next, z)
		ll += math.Log(z)
		alpha, next = next, alpha
	}
	return ll
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
		if math.IsInf(ll, -1) {
			f(h+1, ll)
			continue
		}
		a := int(act[h-1])
		m.Predict(h, b, a, pred)
		z := m.Correct(h, pred, a, int(obs[h]), b)
		if z > 0 {
			ll += math.Log(z)
		} else {
			ll = math.Inf(-1)
		}
		f(h+1, ll)
	}
}
