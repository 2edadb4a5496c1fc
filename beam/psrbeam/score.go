package psrbeam

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
)

func init() {
	register.DoFn3x1[context.Context, string, []byte, error](&scoreFn{})
}

// ScoreEpisodes computes the per-episode log-likelihoods of episodes.arrow
// (estimate.EpisodeScorer) as one Beam pipeline: each shard is scored at
// the side-input model and writes its episodes' figures to a file of its
// own beside the shard (a retried bundle writes the same bytes); the
// driver reads them back in shard order.
func (r *Runner) ScoreEpisodes(ctx context.Context, m *estimate.Model, d *ingest.Dataset) (obs, reward []float64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	shards, err := r.shards(ctx, d)
	if err != nil {
		return nil, nil, err
	}
	model, err := json.Marshal(m)
	if err != nil {
		return nil, nil, fmt.Errorf("psrbeam: encode model: %w", err)
	}
	r.passes++
	outs := make([]string, len(shards))
	for i, s := range shards {
		outs[i] = fmt.Sprintf("%s.score-%06d", s, r.passes)
	}
	start := time.Now()
	if err := r.run(ctx, ScorePipeline(shards, model, r.passes)); err != nil {
		return nil, nil, fmt.Errorf("episode scores on the %s runner: %s", r.Name, lastCause(err))
	}
	r.Passes++
	r.PassTime += time.Since(start)
	K := d.NumEpisodes()
	obs, reward = make([]float64, 0, K), make([]float64, 0, K)
	for _, p := range outs {
		r.written = append(r.written, p)
		raw, err := readFile(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		if len(raw)%16 != 0 {
			return nil, nil, fmt.Errorf("%s: %d bytes, not pairs of float64", p, len(raw))
		}
		for i := 0; i < len(raw); i += 16 {
			obs = append(obs, math.Float64frombits(binary.LittleEndian.Uint64(raw[i:])))
			reward = append(reward, math.Float64frombits(binary.LittleEndian.Uint64(raw[i+8:])))
		}
	}
	if len(obs) != K {
		return nil, nil, fmt.Errorf("psrbeam: %d episode scores for %d episodes", len(obs), K)
	}
	return obs, reward, nil
}

// ScorePipeline is the pipeline of one scoring pass over the shards at
// the given paths: each writes SHARD.score-PASS.
func ScorePipeline(shards []string, model []byte, pass int) *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	s = s.Scope("score")
	theta := beam.Create(s, model)
	paths := beam.Reshuffle(s, beam.CreateList(s, shards))
	beam.ParDo0(s, &scoreFn{Pass: pass}, paths, beam.SideInput{Input: theta})
	return p
}

// scoreFn scores one shard's episodes and writes their figures, in episode
// order, as (ObsLogLik, RewardLogLik) float64 pairs.
type scoreFn struct {
	Pass  int
	cache modelCache
}

func (f *scoreFn) ProcessElement(ctx context.Context, path string, model []byte) error {
	m, _, err := f.cache.get(model)
	if err != nil {
		return err
	}
	blk, err := readShard(ctx, path)
	if err != nil {
		return err
	}
	H := blk.Horizon
	n := len(blk.Obs) / H
	out := make([]byte, 0, 16*n)
	for k := range n {
		o, a, r := blk.Obs[k*H:(k+1)*H], blk.Act[k*H:(k+1)*H], blk.Reward[k*H:(k+1)*H]
		ll := m.ObsLogLik(o, a)
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(ll))
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(m.EpisodeLogLik(o, a, r)-ll))
	}
	return writeFile(ctx, fmt.Sprintf("%s.score-%06d", path, f.Pass), out)
}
