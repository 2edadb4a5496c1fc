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
	K, H, A := d.NumEpisodes(), d.Horizon, d.NumActions()
	endObs, _ := endCodes(d)
	rho := make([]float64, K*H)
	err := forBlocks(ctx, K, workers, func(k0, k1 int) error {
		p := make([]float64, A)
		for k := k0; k < k1; k++ {
			if err := episodeRatios(d, t, k, endObs, p, rho); err != nil {
				return err
			}
		}
		return nil
	})
	return rho, err
}

// episodeRatios stores the ratios of episode k's steps in rho, following
// the episode with t (p is a buffer for π_e); steps with the end
// observation endObs have ratio one.
func episodeRatios(d *ingest.Dataset, t Target, k, endObs int, p, rho []float64) error {
	H := d.Horizon
	f := t.Follow()
	prev := -1
	for h := range H {
		i := k*H + h
		o, a := int(d.Obs[i]), int(d.Act[i])
		if o == endObs {
			rho[i] = 1
			prev = a
			continue
		}
		if err := f.Next(prev, o, p); err != nil {
			return fmt.Errorf("episode %s step %d: %w", d.EpisodeIDs[k], h+1, err)
		}
		rho[i] = p[a] / d.Propensity[i]
		prev = a
	}
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
	for _, path := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := pqcol.Columns(path, []string{epCol, stepCol, name}, c.batch); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrTarget, path, err)
		}
	}
	return c.ratios(d)
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
	h := int(st.Int64())
	if st.IsNull() || h < 1 || h > c.H {
		return nil
	}
	x, ok := floatOf(v)
	if !ok || !(x >= 0 && x <= 1) {
		return fmt.Errorf("episode %s step %d: %s is %v, not a probability in [0,1]", id, h, c.name, v)
	}
	c.pe[k*c.H+h-1], c.seen[k*c.H+h-1] = x, true
	return nil
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
	H := c.H
	endObs, _ := endCodes(d)
	rho := make([]float64, len(c.pe))
	for i := range rho {
		if int(d.Obs[i]) == endObs {
			rho[i] = 1
			continue
		}
		if !c.seen[i] {
			return nil, fmt.Errorf("%w: episode %s step %d has no %s", ErrTarget, d.EpisodeIDs[i/H], i%H+1, c.name)
		}
		rho[i] = c.pe[i] / d.Propensity[i]
	}
	return rho, nil
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
