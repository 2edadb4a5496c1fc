// Command gen-card writes the high-cardinality logs of bench/cardinality.sh:
//
//	go run ./bench/gen-card -episodes 200000 -obs 20000 -actions 50 -out logs.parquet
//
// Each episode has a hidden segment g ∈ {0,1,2,3} drawn uniformly. Every
// step emits an item o_h: with probability 0.7 one of the segment's own
// items (those with o mod 4 = g), otherwise any item, both Zipf-distributed
// (exponent 1.1) so that most items are rare. The behaviour policy picks
// one of the actions uniformly (logged propensity 1/|A|); action g·(|A|/4)
// pays 1 with probability 0.8 in segment g, every other action with
// probability 0.1. With -flat F a share F of the steps draws its item
// uniformly instead, so that nearly every item appears. The content is a
// function of the flags only.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/psrlcb/psrlcb/schemas"
)

// row is one logged step (the tool's one row struct).
type row = schemas.Row

func main() {
	out := flag.String("out", "card.parquet", "output file")
	episodes := flag.Int("episodes", 200_000, "episodes")
	horizon := flag.Int("horizon", 5, "steps per episode")
	nObs := flag.Int("obs", 20_000, "distinct observations (a multiple of 4)")
	nAct := flag.Int("actions", 50, "actions (at least 4)")
	seed := flag.Uint64("seed", 1, "random seed")
	flat := flag.Float64("flat", 0, "share of steps whose item is drawn uniformly from all items (the rest as above)")
	flag.Parse()
	if *nObs < 4 || *nAct < 4 || *episodes < 1 || *horizon < 1 {
		fmt.Fprintln(os.Stderr, "gen-card: need -obs ≥ 4, -actions ≥ 4, -episodes ≥ 1, -horizon ≥ 1")
		os.Exit(2)
	}
	if err := write(*out, *episodes, *horizon, *nObs, *nAct, *seed, *flat); err != nil {
		os.Remove(*out + ".tmp")
		fmt.Fprintln(os.Stderr, "gen-card:", err)
		os.Exit(4)
	}
}

// write writes K episodes of H steps over O items and A actions to path
// (through path.tmp, renamed when complete).
func write(path string, K, H, O, A int, seed uint64, flat float64) error {
	gen := newGenerator(O, A, seed, flat)
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	if err := gen.writeParquet(f, K, H); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// generator draws the logged steps: the item and action names, the
// random source, and the Zipf draws of an item among a segment's own
// (own) or among all items (all).
type generator struct {
	rng      *rand.Rand
	own, all *rand.Zipf
	obs, act []string
	flat     float64
}

// newGenerator is the generator of O items and A actions from seed; per
// is the number of items of each segment.
func newGenerator(O, A int, seed uint64, flat float64) *generator {
	rng := rand.New(rand.NewPCG(seed, 0xca4d))
	per := O / 4
	gen := &generator{rng: rng, own: rand.NewZipf(rng, 1.1, 1, uint64(per-1)), all: rand.NewZipf(rng, 1.1, 1, uint64(O-1)), flat: flat}
	gen.obs = make([]string, O)
	for i := range gen.obs {
		gen.obs[i] = fmt.Sprintf("item-%05d", i)
	}
	gen.act = make([]string, A)
	for i := range gen.act {
		gen.act[i] = fmt.Sprintf("act-%02d", i)
	}
	return gen
}

// writeParquet writes K episodes of H steps to f as Parquet (zstd, row
// groups of up to 2²⁰ rows).
func (gen *generator) writeParquet(f *os.File, K, H int) error {
	w := parquet.NewGenericWriter[row](f, parquet.Compression(&zstd.Codec{Level: zstd.SpeedFastest}),
		parquet.MaxRowsPerRowGroup(1<<20))
	if err := gen.writeEpisodes(w, K, H); err != nil {
		return err
	}
	return w.Close()
}

// writeEpisodes draws K episodes of H steps, each with a segment of its
// own, and writes them in batches of 4096 rows.
func (gen *generator) writeEpisodes(w *parquet.GenericWriter[row], K, H int) error {
	buf := make([]row, 0, 4096)
	for e := 0; e < K; e++ {
		g := gen.rng.IntN(4)
		for h := 1; h <= H; h++ {
			buf = append(buf, gen.step(e, h, g))
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

// step draws step h of episode e of segment g: the item (uniform with
// probability flat, else 70% from the segment's own items), a uniform
// action and a click, likelier for the segment's paying action.
func (gen *generator) step(e, h, g int) row {
	A := len(gen.act)
	o := gen.observation(g)
	a := gen.rng.IntN(A)
	r := gen.reward(a, g)
	return row{EpisodeID: int64(e), Step: int64(h), Observation: gen.obs[o], Action: gen.act[a], Reward: r, Propensity: 1 / float64(A)}
}

// observation draws the item of a step of an episode of segment g: with
// probability flat any item, else with probability 0.7 one of the
// segment's own, else one from all.
func (gen *generator) observation(g int) int {
	if gen.flat > 0 && gen.rng.Float64() < gen.flat {
		return gen.rng.IntN(len(gen.obs))
	} else if gen.rng.Float64() < 0.7 {
		return int(gen.own.Uint64())*4 + g
	}
	return int(gen.all.Uint64())
}

// reward draws the reward of action a in an episode of segment g: 1 with
// probability 0.8 for the segment's action, 0.1 for the others.
func (gen *generator) reward(a, g int) float64 {
	p := 0.1
	if a == g*(len(gen.act)/4) {
		p = 0.8
	}
	r := 0.0
	if gen.rng.Float64() < p {
		r = 1
	}
	return r
}
