package ope

import (
	"context"
	"fmt"

	"github.com/parquet-go/parquet-go"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/parallel"
	"github.com/psrlcb/psrlcb/internal/pqcol"
)

// blockEpisodes is the episodes one task of a pass over the logs handles;
// each episode's figures are computed alone, so results do not depend on
// the blocks or the workers.
const blockEpisodes = 4096

// forBlocks runs f on consecutive blocks of the K episodes in parallel.
func forBlocks(ctx context.Context, K, workers int, f func(k0, k1 int) error) error {
	nb := (K + blockEpisodes - 1) / blockEpisodes
	return parallel.For(ctx, nb, workers, func(b int) error {
		return f(b*blockEpisodes, min((b+1)*blockEpisodes, K))
	})
}

// checkLogs checks that d can be weighted: episodes and propensities.
func checkLogs(d *ingest.Dataset) error {
	if d == nil || d.NumEpisodes() == 0 {
		return fmt.Errorf("%w: no episodes", ErrData)
	}
	if !d.HasPropensity() {
		return fmt.Errorf("%w: importance weights need the behaviour's propensities (a propensity column, or estimated ones)", ErrData)
	}
	return nil
}

// Ratios returns ρ_{k,h} = π_e(a_h | τ_{h−1}, o_h) / π^b(a_h | τ_{h−1}, o_h)
// for every logged step of d (K·H, row-major by episode); steps past an
// early end (the end symbol) have ratio one, the action being forced for
// every policy.
func Ratios(ctx context.Context, d *ingest.Dataset, t Target, workers int) ([]float64, error) {
	if err := checkLogs(d); err != nil {
		return nil, err
	}
	K, H := d.NumEpisodes(), d.Horizon
	endObs, _ := endCodes(d)
	rw := &ratioWalk{d: d, t: t, endObs: endObs, rho: make([]float64, K*H)}
	err := forBlocks(ctx, K, workers, rw.block)
	return rw.rho, err
}

// ratioWalk stores in rho the ratios of the steps of the logs d under the
// target t; steps with the end observation endObs have ratio one.
type ratioWalk struct {
	d      *ingest.Dataset
	t      Target
	endObs int
	rho    []float64
}

// block stores the ratios of episodes k0..k1−1, with one buffer for π_e.
func (rw *ratioWalk) block(k0, k1 int) error {
	p := make([]float64, rw.d.NumActions())
	for k := k0; k < k1; k++ {
		if err := rw.episode(k, p); err != nil {
			return err
		}
	}
	return nil
}

// episode stores the ratios of episode k's steps, following the episode
// with the target (p is a buffer for π_e).
func (rw *ratioWalk) episode(k int, p []float64) error {
	d, H := rw.d, rw.d.Horizon
	f := rw.t.Follow()
	prev := -1
	for h := range H {
		i := k*H + h
		if err := rw.step(f, i, prev, p); err != nil {
			return fmt.Errorf("episode %s step %d: %w", d.EpisodeIDs[k], h+1, err)
		}
		prev = int(d.Act[i])
	}
	return nil
}

// step stores the ratio of the logged step i after the action prev,
// moving the follower f on (p is a buffer for π_e); a step with the end
// observation has ratio one and leaves f where it is.
func (rw *ratioWalk) step(f Follower, i, prev int, p []float64) error {
	o, a := int(rw.d.Obs[i]), int(rw.d.Act[i])
	if o == rw.endObs {
		rw.rho[i] = 1
		return nil
	}
	if err := f.Next(prev, o, p); err != nil {
		return err
	}
	rw.rho[i] = p[a] / rw.d.Propensity[i]
	return nil
}

// ColumnRatios reads the evaluated policy's probability of each logged
// action from the column name of the Parquet logs (rows matched to d's
// episodes by episode id and step; epCol and stepCol name those columns)
// and returns the ratios to the logged propensities. A missing, null or
// out-of-range value is an error naming the file, episode and step.
func ColumnRatios(ctx context.Context, files []string, name, epCol, stepCol string, d *ingest.Dataset) ([]float64, error) {
	if err := checkLogs(d); err != nil {
		return nil, err
	}
	c := newColumnProbs(d, name)
	if err := c.readFiles(ctx, files, epCol, stepCol); err != nil {
		return nil, err
	}
	return c.ratios(d)
}

// readFiles collects the probabilities of the Parquet logs files, whose
// columns epCol and stepCol hold the episode id and the step.
func (c *columnProbs) readFiles(ctx context.Context, files []string, epCol, stepCol string) error {
	for _, path := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := pqcol.Columns(path, []string{epCol, stepCol, c.name}, c.batch); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrTarget, path, err)
		}
	}
	return nil
}

// columnProbs collects the evaluated policy's probabilities of the logged
// actions from the column name: pe[k·H+h−1] for step h of episode k
// (index maps episode ids to k), seen where one was read.
type columnProbs struct {
	index map[string]int
	H     int
	name  string
	pe    []float64
	seen  []bool
}

// newColumnProbs collects the probabilities of the column name for the
// episodes of d.
func newColumnProbs(d *ingest.Dataset, name string) *columnProbs {
	K, H := d.NumEpisodes(), d.Horizon
	c := &columnProbs{index: make(map[string]int, K), H: H, name: name, pe: make([]float64, K*H), seen: make([]bool, K*H)}
	for k, id := range d.EpisodeIDs {
		c.index[id] = k
	}
	return c
}

// batch reads a batch of rows of (episode id, step, probability) values.
func (c *columnProbs) batch(first int64, vals [][]parquet.Value) error {
	for r := range vals[0] {
		if err := c.row(vals[0][r], vals[1][r], vals[2][r]); err != nil {
			return err
		}
	}
	return nil
}

// row stores the probability v of the row of episode ep and step st; rows
// of unknown episodes or steps out of range are skipped.
func (c *columnProbs) row(ep, st, v parquet.Value) error {
	id, k, ok := c.episode(ep)
	if !ok {
		return nil
	}
	h, ok := c.step(st)
	if !ok {
		return nil
	}
	x, ok := floatOf(v)
	if !ok || !(x >= 0 && x <= 1) {
		return fmt.Errorf("episode %s step %d: %s is %v, not a probability in [0,1]", id, h, c.name, v)
	}
	c.pe[k*c.H+h-1], c.seen[k*c.H+h-1] = x, true
	return nil
}

// step is the step of a row from its value st; false when it is null or
// out of 1..H.
func (c *columnProbs) step(st parquet.Value) (int, bool) {
	h := int(st.Int64())
	if st.IsNull() || h < 1 || h > c.H {
		return 0, false
	}
	return h, true
}

// episode is the id and the index of the episode of the row whose episode
// id is ep; false for rows of no episode or of an episode not in the logs.
func (c *columnProbs) episode(ep parquet.Value) (string, int, bool) {
	id, ok := pqcol.Symbol(ep)
	if !ok {
		return "", 0, false // the ingest reports rows without an episode
	}
	k, known := c.index[id]
	if !known {
		return "", 0, false // a quarantined episode
	}
	return id, k, true
}

// ratios divides each logged step's probability by its propensity; steps
// with the end observation have ratio one, and a step without a
// probability is an error.
func (c *columnProbs) ratios(d *ingest.Dataset) ([]float64, error) {
	endObs, _ := endCodes(d)
	rho := make([]float64, len(c.pe))
	for i := range rho {
		var err error
		if rho[i], err = c.ratio(d, i, endObs); err != nil {
			return nil, err
		}
	}
	return rho, nil
}

// ratio is the ratio of the logged step i of d: one with the end
// observation endObs, else its probability over its propensity.
func (c *columnProbs) ratio(d *ingest.Dataset, i, endObs int) (float64, error) {
	H := c.H
	if int(d.Obs[i]) == endObs {
		return 1, nil
	}
	if !c.seen[i] {
		return 0, fmt.Errorf("%w: episode %s step %d has no %s", ErrTarget, d.EpisodeIDs[i/H], i%H+1, c.name)
	}
	return c.pe[i] / d.Propensity[i], nil
}

// floatOf reads a floating-point (or integer) value.
func floatOf(v parquet.Value) (float64, bool) {
	if v.IsNull() {
		return 0, false
	}
	if x, ok := doubleOf(v); ok {
		return x, true
	}
	switch v.Kind() {
	case parquet.Int32, parquet.Int64:
		return float64(v.Int64()), true
	}
	return 0, false
}

// doubleOf reads a double or float value.
func doubleOf(v parquet.Value) (float64, bool) {
	switch v.Kind() {
	case parquet.Double:
		return v.Double(), true
	case parquet.Float:
		return float64(v.Float()), true
	}
	return 0, false
}
