// Package pessimismtest builds random valid models and datasets for the
// tests of the pessimism and policy stages (and of their users): small
// latent-state models with every probability positive, and logs sampled
// from them under a known behaviour policy.
package pessimismtest

import (
	"fmt"
	"math/rand/v2"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
)

// Spec gives the sizes of a random model.
type Spec struct {
	States, Obs, Actions, Horizon int
	TestLength                    int  // m (0 means 1)
	Stationary                    bool // one table for every step
	// Gaussian rewards instead of categorical ones on {0, 1}.
	Gaussian bool
}

// randDist fills p with a random distribution whose entries are at least
// floor/len(p)-ish, so that every probability is positive.
func randDist(rng *rand.Rand, p []float64) {
	s := 0.0
	for i := range p {
		x := rng.Float64()
		x = x*x*x + 0.02 // skewed, bounded away from 0
		p[i] = x
		s += x
	}
	for i := range p {
		p[i] /= s
	}
}

// RandomModel returns a prepared random model. Vocabularies are "o0",
// "o1", … and "a0", "a1", …; rewards lie in [0,1] per step, and the
// return range is [0, H].
func RandomModel(rng *rand.Rand, sp Spec) *estimate.Model {
	S, O, A, H := sp.States, sp.Obs, sp.Actions, sp.Horizon
	m := &estimate.Model{States: S, NumObs: O, NumActions: A, Horizon: H, Stationary: sp.Stationary, TestLength: sp.TestLength}
	m.ObsVocab, m.ActVocab = names("o", O), names("a", A)
	addRandomFirst(rng, m)
	nt := H
	if sp.Stationary {
		nt = 1
	}
	for t := 0; t < nt; t++ {
		addRandomTable(rng, m, sp.Gaussian)
	}
	m.ReturnMin, m.ReturnMax = 0, float64(H)
	m.Prepare()
	if err := m.Validate(1e-9); err != nil {
		panic(err) // a bug in this generator
	}
	return m
}

// addRandomFirst draws m's first-step distributions, of s_1 (Init) and
// of o_1 given s_1 (Obs1), with randDist.
func addRandomFirst(rng *rand.Rand, m *estimate.Model) {
	S, O := m.States, m.NumObs
	m.Init = make([]float64, S)
	randDist(rng, m.Init)
	m.Obs1 = make([]float64, S*O)
	for s := 0; s < S; s++ {
		randDist(rng, m.Obs1[s*O:(s+1)*O])
	}
}

// names returns the n names "<prefix>0", "<prefix>1", ….
func names(prefix string, n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// addRandomTable appends a random step table to m: transitions,
// emissions and rewards (addRandomRewards).
func addRandomTable(rng *rand.Rand, m *estimate.Model, gaussian bool) {
	S, O, A := m.States, m.NumObs, m.NumActions
	T := make([]float64, A*S*S)
	for r := 0; r < A*S; r++ {
		randDist(rng, T[r*S:(r+1)*S])
	}
	E := make([]float64, A*S*O)
	for r := 0; r < A*S; r++ {
		randDist(rng, E[r*O:(r+1)*O])
	}
	m.Trans = append(m.Trans, T)
	m.Emit = append(m.Emit, E)
	addRandomRewards(rng, m, gaussian)
}

// addRandomRewards appends a random reward table to m: Gaussian rewards
// (means in [0,1], variance 0.01) or categorical ones on {0, 1}.
func addRandomRewards(rng *rand.Rand, m *estimate.Model, gaussian bool) {
	n := m.States * m.NumActions * m.States * m.NumObs
	if gaussian {
		addRandomGaussRewards(rng, m, n)
		return
	}
	addRandomBinaryRewards(rng, m, n)
}

// addRandomGaussRewards appends tables of n Gaussian reward means,
// uniform on [0,1), of variance 0.01.
func addRandomGaussRewards(rng *rand.Rand, m *estimate.Model, n int) {
	mu := make([]float64, n)
	v := make([]float64, n)
	for i := range mu {
		mu[i] = rng.Float64()
		v[i] = 0.01
	}
	m.Reward = estimate.RewardGaussian
	m.RewardMean = append(m.RewardMean, mu)
	m.RewardVar = append(m.RewardVar, v)
}

// addRandomBinaryRewards appends a table of n random reward distributions
// over the values 0 and 1.
func addRandomBinaryRewards(rng *rand.Rand, m *estimate.Model, n int) {
	m.Reward = estimate.RewardCategorical
	m.RewardValues = []float64{0, 1}
	p := make([]float64, 2*n)
	for i := 0; i < n; i++ {
		randDist(rng, p[2*i:2*i+2])
	}
	m.RewardProb = append(m.RewardProb, p)
}

// Behaviour is a stochastic behaviour policy: the probability of action a
// at step h (1-based) after observation o. Nil means uniform.
type Behaviour func(h, o int, probs []float64)

// Sample draws K episodes from m under the behaviour policy beh (uniform
// when nil), logging its propensities. Episode IDs are "e000000", … .
func Sample(rng *rand.Rand, m *estimate.Model, beh Behaviour, K int) *ingest.Dataset {
	H := m.Horizon
	d := &ingest.Dataset{Horizon: H, ObsVocab: m.ObsVocab, ActVocab: m.ActVocab,
		EpisodeIDs: make([]string, K), Length: make([]int32, K),
		Obs: make([]uint16, K*H), Act: make([]uint16, K*H), Reward: make([]float64, K*H), Propensity: make([]float64, K*H)}
	sm := &sampler{rng: rng, m: m, beh: beh, probs: make([]float64, m.NumActions)}
	for k := 0; k < K; k++ {
		d.EpisodeIDs[k] = fmt.Sprintf("e%06d", k)
		d.Length[k] = int32(H)
		sm.episode(d, k)
	}
	d.Rows = int64(K * H)
	return d
}

// sampler draws Sample's episodes from m under beh; probs is the
// behaviour's scratch.
type sampler struct {
	rng   *rand.Rand
	m     *estimate.Model
	beh   Behaviour
	probs []float64
}

// draw samples an index from the distribution p.
func (sm *sampler) draw(p []float64) int {
	u := sm.rng.Float64()
	for i, x := range p {
		u -= x
		if u < 0 {
			return i
		}
	}
	return len(p) - 1
}

// behave sets probs to the behaviour's action probabilities at step h
// after observation o (uniform when beh is nil).
func (sm *sampler) behave(h, o int) {
	if sm.beh == nil {
		for a := range sm.probs {
			sm.probs[a] = 1 / float64(len(sm.probs))
		}
		return
	}
	sm.beh(h, o, sm.probs)
}

// reward is the reward of the step of reward cell i at table t: the
// Gaussian mean, or a draw of the categorical value.
func (sm *sampler) reward(t, i int) float64 {
	m := sm.m
	if m.Reward == estimate.RewardGaussian {
		return m.RewardMean[t][i]
	}
	return m.RewardValues[sm.draw(m.RewardProb[t][2*i:2*i+2])]
}

// episode draws episode k into d.
func (sm *sampler) episode(d *ingest.Dataset, k int) {
	m, probs := sm.m, sm.probs
	S, O, H := m.States, m.NumObs, m.Horizon
	s := sm.draw(m.Init)
	o := sm.draw(m.Obs1[s*O : (s+1)*O])
	for h := 1; h <= H; h++ {
		sm.behave(h, o)
		a := sm.draw(probs)
		t := m.Table(h)
		s2 := sm.draw(m.Trans[t][(a*S+s)*S : (a*S+s+1)*S])
		o2 := sm.draw(m.EmitOf(t, a)[s2*O : (s2+1)*O])
		r := sm.reward(t, m.RewardIndex(s, a, s2, o2))
		i := k*H + h - 1
		d.Obs[i], d.Act[i], d.Reward[i], d.Propensity[i] = uint16(o), uint16(a), r, probs[a]
		s, o = s2, o2
	}
}

// EvenSplits deals episodes 0..K−1 round-robin into H splits.
func EvenSplits(K, H int) [][]int {
	s := make([][]int, H)
	for k := 0; k < K; k++ {
		s[k%H] = append(s[k%H], k)
	}
	return s
}
