package pessimism

import (
	"context"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/parallel"
)

// EpisodeNorms holds the per-step bonus terms ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} of every
// logged episode: the bonus distribution the report shows per step.
type EpisodeNorms struct {
	Horizon int
	// Norm2[k*Horizon+h] is the term of the length-h prefix of episode k,
	// h = 0..H−1.
	Norm2 []float64
}

// Sum is Σ_h ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} of episode k; Bonus.Value turns it into
// b̂(τ_H).
func (e *EpisodeNorms) Sum(k int) float64 {
	s := 0.0
	for _, v := range e.Norm2[k*e.Horizon : (k+1)*e.Horizon] {
		s += v
	}
	return s
}

// Episodes computes the bonus terms of every episode of d (which must use
// the model's vocabularies). workers ≤ 0 means GOMAXPROCS.
func (b *Bonus) Episodes(ctx context.Context, d *ingest.Dataset, workers int) (*EpisodeNorms, error) {
	if err := checkInputs(b.m, d, make([][]int, b.Horizon)); err != nil {
		return nil, err
	}
	H, K := b.Horizon, d.NumEpisodes()
	out := &EpisodeNorms{Horizon: H, Norm2: make([]float64, K*H)}
	nb := (K + blockSize - 1) / blockSize
	err := parallel.ForWith(ctx, nb, workers, func() *walker { return newWalker(b) }, func(wk *walker, blk int) error {
		lo := blk * blockSize
		for k := lo; k < min(lo+blockSize, K); k++ {
			row := out.Norm2[k*H : (k+1)*H]
			row[0] = b.Root
			wk.start()
			for h := 1; h < H; h++ {
				row[h] = wk.step(h, int(d.Obs[k*H+h-1]), int(d.Act[k*H+h-1]))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
