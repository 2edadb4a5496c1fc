package pessimism

import (
	"context"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/parallel"
)

// EpisodeNorms holds the per-step bonus terms ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} of every
// logged episode, for the bonus distribution the report shows per step,
// and their sums, from which each episode's bonus is computed.
type EpisodeNorms struct {
	Horizon int
	// Norm2[k*Horizon+h] is the term of the length-h prefix of episode k,
	// h = 0..H−1, in single precision: it is only drawn (four bytes a
	// step where double precision took eight), while Sums keeps the
	// double-precision sums.
	Norm2 []float32
	// Sums[k] is Σ_h ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} of episode k, added in double
	// precision in step order.
	Sums []float64
}

// Sum is Σ_h ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} of episode k; Bonus.Value turns it into
// b̂(τ_H).
func (e *EpisodeNorms) Sum(k int) float64 { return e.Sums[k] }

// episode writes the terms ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} of episode k of d into row
// and returns their sum, added in step order.
func (wk *walker) episode(d *ingest.Dataset, k int, row []float32) float64 {
	b, H := wk.b, d.Horizon
	sum := b.Root
	row[0] = float32(b.Root)
	wk.start()
	for h := 1; h < H; h++ {
		v := wk.step(h, int(d.Obs[k*H+h-1]), int(d.Act[k*H+h-1]))
		row[h] = float32(v)
		sum += v
	}
	return sum
}

// Episodes computes the bonus terms of every episode of d (which must use
// the model's vocabularies). workers ≤ 0 means GOMAXPROCS.
func (b *Bonus) Episodes(ctx context.Context, d *ingest.Dataset, workers int) (*EpisodeNorms, error) {
	if err := checkInputs(b.m, d, make([][]int, b.Horizon)); err != nil {
		return nil, err
	}
	H, K := b.Horizon, d.NumEpisodes()
	out := &EpisodeNorms{Horizon: H, Norm2: make([]float32, K*H), Sums: make([]float64, K)}
	nb := (K + blockSize - 1) / blockSize
	err := parallel.ForWith(ctx, nb, workers, func() *walker { return newWalker(b) }, func(wk *walker, blk int) error {
		wk.episodesBlock(d, blk, out)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// episodesBlock sets into out the squared norms and their sums of the
// episodes of block blk (blockSize episodes).
func (w *walker) episodesBlock(d *ingest.Dataset, blk int, out *EpisodeNorms) {
	H, K := out.Horizon, len(out.Sums)
	lo := blk * blockSize
	for k := lo; k < min(lo+blockSize, K); k++ {
		out.Sums[k] = w.episode(d, k, out.Norm2[k*H:(k+1)*H])
	}
}
