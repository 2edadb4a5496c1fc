// Package synth writes synthetic trajectory logs for benchmarks: episodes
// of a fixed horizon with string observation and action symbols, uniform
// random rewards and logged propensities, in the default log schema
// (package schemas). The content is a function of the seed only.
package synth

import (
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/psrlcb/psrlcb/schemas"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// Row is one logged step (the tool's one row struct, schemas.Row).
type Row = schemas.Row

// Options of Write; zero fields take the defaults of the ingest benchmark.
type Options struct {
	Episodes     int    // default 1,000,000
	Horizon      int    // default 10
	Observations int    // distinct observation symbols, default 8
	Actions      int    // distinct action symbols, default 4
	RowGroups    int    // default 10
	Seed         uint64 // default 1
}

func (o *Options) defaults() {
	if o.Episodes == 0 {
		o.Episodes = 1_000_000
	}
	if o.Horizon == 0 {
		o.Horizon = 10
	}
	if o.Observations == 0 {
		o.Observations = 8
	}
	if o.Actions == 0 {
		o.Actions = 4
	}
	if o.RowGroups == 0 {
		o.RowGroups = 10
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
}

// Write writes the logs to path (zstd-compressed Parquet, rows in episode
// order). The behaviour policy picks action j with probability
// w_j = (j+1)/Σ(i+1), logged as the propensity.
func Write(path string, opts Options) error {
	opts.defaults()
	b := newBehaviour(opts)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	rows := opts.Episodes * opts.Horizon
	perGroup := (rows + opts.RowGroups - 1) / opts.RowGroups
	w := parquet.NewGenericWriter[Row](f, parquet.Compression(&zstd.Codec{Level: zstd.SpeedFastest}),
		parquet.MaxRowsPerRowGroup(int64(perGroup)))
	if err := b.writeEpisodes(w, opts); err != nil {
		f.Close()
		return err
	}
	if err := w.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// behaviour draws the logged steps: uniform observations and rewards,
// actions from the behaviour policy.
type behaviour struct {
	rng     *rand.Rand
	obs     []string
	act     []string
	weights []float64 // w_j, the probability of action j
}

// newBehaviour names the symbols and sets the weights of the options.
func newBehaviour(opts Options) *behaviour {
	b := &behaviour{rng: rand.New(rand.NewPCG(opts.Seed, 7))}
	b.obs = make([]string, opts.Observations)
	for i := range b.obs {
		b.obs[i] = fmt.Sprintf("obs-%d", i)
	}
	b.act = make([]string, opts.Actions)
	b.weights = make([]float64, opts.Actions)
	total := float64(opts.Actions*(opts.Actions+1)) / 2
	for i := range b.act {
		b.act[i] = fmt.Sprintf("act-%d", i)
		b.weights[i] = float64(i+1) / total
	}
	return b
}

// writeEpisodes writes the rows of every episode to w, 4096 at a time.
func (b *behaviour) writeEpisodes(w *parquet.GenericWriter[Row], opts Options) error {
	buf := make([]Row, 0, 4096)
	for e := range opts.Episodes {
		for h := 1; h <= opts.Horizon; h++ {
			buf = append(buf, b.row(e, h))
			if len(buf) == cap(buf) {
				if _, err := w.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
	}
	_, err := w.Write(buf)
	return err
}

// row draws step h of episode e: the action first, then the observation
// and the reward.
func (b *behaviour) row(e, h int) Row {
	u := b.rng.Float64()
	a := 0
	for a < len(b.act)-1 && u >= b.weights[a] {
		u -= b.weights[a]
		a++
	}
	return Row{EpisodeID: int64(e), Step: int64(h), Observation: b.obs[b.rng.IntN(len(b.obs))], Action: b.act[a], Reward: b.rng.Float64(), Propensity: b.weights[a]}
}
