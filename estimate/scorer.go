package estimate

import (
	"context"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/parallel"
)

// EpisodeScorer computes, for every episode of d, the log-likelihoods
// that episodes.arrow reports: ln P_θ(o_{1:H} | a_{1:H}) (ObsLogLik) and the
// reward part ln P_θ(r_{1:H} | o_{1:H}, a_{1:H}) (RewardLogLik). The local
// one is ScoreEpisodes; a data-parallel engine (psrbeam) runs
// ScoreEpisodes on parts of the episodes.
type EpisodeScorer interface {
	ScoreEpisodes(ctx context.Context, m *Model, d *ingest.Dataset) (obs, reward []float64, err error)
}

// scoreBlock is the episodes scored by one task of ScoreEpisodes.
const scoreBlock = 4096

// ScoreEpisodes is the EpisodeScorer of this process: the two
// log-likelihoods of every episode of d under m, in parallel over blocks
// of episodes (workers ≤ 0: GOMAXPROCS). Each episode's figures are
// computed alone, so they do not depend on the blocks or workers.
func ScoreEpisodes(ctx context.Context, m *Model, d *ingest.Dataset, workers int) (obs, reward []float64, err error) {
	K := d.NumEpisodes()
	obs, reward = make([]float64, K), make([]float64, K)
	nb := (K + scoreBlock - 1) / scoreBlock
	err = parallel.For(ctx, nb, workers, func(b int) error {
		scoreBlockOf(m, d, b, obs, reward)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return obs, reward, nil
}

// scoreBlockOf sets obs[k] and reward[k] of the episodes k of block b
// (scoreBlock episodes): ln P(o|a) and ln P(o,r|a) − ln P(o|a).
func scoreBlockOf(m *Model, d *ingest.Dataset, b int, obs, reward []float64) {
	K, H := d.NumEpisodes(), d.Horizon
	for k := b * scoreBlock; k < min((b+1)*scoreBlock, K); k++ {
		o, a, r := d.Obs[k*H:(k+1)*H], d.Act[k*H:(k+1)*H], d.Reward[k*H:(k+1)*H]
		obs[k] = m.ObsLogLik(o, a)
		reward[k] = m.EpisodeLogLik(o, a, r) - obs[k]
	}
}
