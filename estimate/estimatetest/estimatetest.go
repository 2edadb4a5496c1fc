// Package estimatetest generates data for the tests and benchmarks of
// the estimate stage and of its users: random latent-state models whose
// every distribution is drawn from the flat Dirichlet distribution
// (RandomModel), and logs sampled from a model under the uniform
// behaviour policy (SampleDataset). The same arguments give the same
// model and dataset.
package estimatetest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/categorical"
)

// symbolNames returns n names "<prefix>0".."<prefix>n−1", zero-padded so
// that bytewise order equals numeric order (ingest vocabularies are
// sorted).
func symbolNames(prefix string, n int) []string {
	w := len(fmt.Sprint(n - 1))
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%0*d", prefix, w, i)
	}
	return out
}

// RandomModel returns a model with S states, O observations, A actions and
// horizon H whose every distribution is drawn from the flat Dirichlet
// distribution. With rewardValues the reward is categorical over them
// (they must be sorted and distinct); with nil it is Gaussian with means
// uniform in [0,1) and standard deviations uniform in [0.05, 0.25). The
// model is prepared.
func RandomModel(S, O, A, H int, stationary bool, rewardValues []float64, seed uint64) *estimate.Model {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	m := &estimate.Model{States: S, NumObs: O, NumActions: A, Horizon: H, Stationary: stationary,
		ObsVocab: symbolNames("o", O), ActVocab: symbolNames("a", A), TestLength: 1}
	nt := H
	if stationary {
		nt = 1
	}
	addRandomFirst(rng, m)
	setRewardKind(m, rewardValues)
	for t := 0; t < nt; t++ {
		addRandomTable(rng, m)
	}
	m.Prepare()
	return m
}

// addRandomFirst draws m's first-step distributions, of s_1 (Init) and
// of o_1 given s_1 (Obs1), flat-Dirichlet.
func addRandomFirst(rng *rand.Rand, m *estimate.Model) {
	S, O := m.States, m.NumObs
	m.Init = make([]float64, S)
	categorical.Dirichlet1(rng, m.Init)
	m.Obs1 = make([]float64, S*O)
	for s := 0; s < S; s++ {
		categorical.Dirichlet1(rng, m.Obs1[s*O:(s+1)*O])
	}
}

// setRewardKind makes m's rewards categorical over rewardValues, or
// Gaussian when rewardValues is nil.
func setRewardKind(m *estimate.Model, rewardValues []float64) {
	if rewardValues != nil {
		m.Reward = estimate.RewardCategorical
		m.RewardValues = append([]float64(nil), rewardValues...)
	} else {
		m.Reward = estimate.RewardGaussian
	}
}

// addRandomTable appends a step table drawn from rng to m: flat
// Dirichlet transitions and emissions, and rewards (addRandomRewards).
func addRandomTable(rng *rand.Rand, m *estimate.Model) {
	S, O, A := m.States, m.NumObs, m.NumActions
	T := make([]float64, A*S*S)
	E := make([]float64, A*S*O)
	for r := 0; r < A*S; r++ {
		categorical.Dirichlet1(rng, T[r*S:(r+1)*S])
		categorical.Dirichlet1(rng, E[r*O:(r+1)*O])
	}
	m.Trans = append(m.Trans, T)
	m.Emit = append(m.Emit, E)
	addRandomRewards(rng, m)
}

// addRandomRewards appends a reward table drawn from rng to m: flat
// Dirichlet categorical rewards, or Gaussian rewards as RandomModel
// describes.
func addRandomRewards(rng *rand.Rand, m *estimate.Model) {
	n := m.States * m.NumActions * m.States * m.NumObs
	if m.Reward == estimate.RewardCategorical {
		addRandomCatRewards(rng, m, n)
		return
	}
	addRandomGaussRewards(rng, m, n)
}

// addRandomCatRewards appends a table of n flat-Dirichlet reward
// distributions over m's reward values.
func addRandomCatRewards(rng *rand.Rand, m *estimate.Model, n int) {
	V := len(m.RewardValues)
	R := make([]float64, n*V)
	for i := 0; i < n; i++ {
		categorical.Dirichlet1(rng, R[i*V:(i+1)*V])
	}
	m.RewardProb = append(m.RewardProb, R)
}

// addRandomGaussRewards appends tables of n Gaussian reward means,
// uniform on [0,1), and variances of a deviation uniform on [0.05,0.25).
func addRandomGaussRewards(rng *rand.Rand, m *estimate.Model, n int) {
	mu, vr := make([]float64, n), make([]float64, n)
	for i := range mu {
		mu[i] = rng.Float64()
		sd := 0.05 + 0.2*rng.Float64()
		vr[i] = sd * sd
	}
	m.RewardMean = append(m.RewardMean, mu)
	m.RewardVar = append(m.RewardVar, vr)
}

// SampleDataset draws K episodes of m.Horizon steps from m under the
// uniform behaviour policy (every action with probability 1/|A|, logged as
// the propensity). Vocabularies are m's when it has them, otherwise
// "o0", "o1", … and "a0", …; episode ids are zero-padded indexes.
func SampleDataset(m *estimate.Model, K int, seed uint64) *ingest.Dataset {
	rng := rand.New(rand.NewPCG(seed, 0xda7a))
	d := emptyDataset(m, K)
	for k := 0; k < K; k++ {
		d.Length[k] = int32(m.Horizon)
		sampleEpisode(rng, m, d, k)
	}
	return d
}

// emptyDataset is a dataset of K episodes of m's horizon and
// vocabularies (made-up names when m has none), every step zero.
func emptyDataset(m *estimate.Model, K int) *ingest.Dataset {
	H := m.Horizon
	d := &ingest.Dataset{Horizon: H, ObsVocab: vocabOf(m.ObsVocab, "o", m.NumObs), ActVocab: vocabOf(m.ActVocab, "a", m.NumActions)}
	d.EpisodeIDs = symbolNames("", K)
	d.Length = make([]int32, K)
	d.Obs = make([]uint16, K*H)
	d.Act = make([]uint16, K*H)
	d.Reward = make([]float64, K*H)
	d.Propensity = make([]float64, K*H)
	d.Rows = int64(K * H)
	return d
}

// vocabOf is vocab when it has n words, otherwise n names prefixed by
// prefix.
func vocabOf(vocab []string, prefix string, n int) []string {
	if len(vocab) != n {
		return symbolNames(prefix, n)
	}
	return vocab
}

// drawReward draws the reward of reward cell ri at table t of m.
func drawReward(rng *rand.Rand, m *estimate.Model, t, ri int) float64 {
	if m.Reward == estimate.RewardGaussian {
		return m.RewardMean[t][ri] + math.Sqrt(m.RewardVar[t][ri])*rng.NormFloat64()
	}
	V := len(m.RewardValues)
	return m.RewardValues[categorical.Draw(rng, m.RewardProb[t][ri*V:(ri+1)*V])]
}

// sampleEpisode draws episode k of d from m under the uniform behaviour
// policy.
func sampleEpisode(rng *rand.Rand, m *estimate.Model, d *ingest.Dataset, k int) {
	S, O, A, H := m.States, m.NumObs, m.NumActions, m.Horizon
	prop := 1 / float64(A)
	s := categorical.Draw(rng, m.Init)
	o := categorical.Draw(rng, m.Obs1[s*O:(s+1)*O])
	for i := 0; i < H; i++ {
		h := i + 1
		t := m.Table(h)
		a := rng.IntN(A)
		s2 := categorical.Draw(rng, m.Trans[t][(a*S+s)*S:(a*S+s+1)*S])
		o2 := categorical.Draw(rng, m.EmitOf(t, a)[s2*O:(s2+1)*O])
		r := drawReward(rng, m, t, m.RewardIndex(s, a, s2, o2))
		j := k*H + i
		d.Obs[j], d.Act[j], d.Reward[j], d.Propensity[j] = uint16(o), uint16(a), r, prop
		s, o = s2, o2
	}
}
