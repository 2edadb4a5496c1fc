package baseline

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/psrlcb/psrlcb/ingest"
)

// benchDataset draws K episodes of H steps from a small two-state process:
// the state flips with probability 0.2 (0.5 after action 0), the
// observation shows the state with probability 0.7, the behaviour acts
// uniformly and the reward is 1 when the action matches the state. With 4
// observations and 3 actions most deep histories are unique, the large-tree
// case for the trie.
func benchDataset(K, H, nObs, nAct int) *ingest.Dataset {
	rng := rand.New(rand.NewPCG(1, 2))
	d := &ingest.Dataset{Horizon: H}
	for i := range nObs {
		d.ObsVocab = append(d.ObsVocab, string(rune('a'+i)))
	}
	for i := range nAct {
		d.ActVocab = append(d.ActVocab, string(rune('A'+i)))
	}
	d.Obs = make([]uint16, K*H)
	d.Act = make([]uint16, K*H)
	d.Reward = make([]float64, K*H)
	for k := range K {
		s := rng.IntN(2)
		for h := range H {
			i := k*H + h
			o := rng.IntN(nObs)
			if rng.Float64() < 0.7 {
				o = s % nObs
			}
			a := rng.IntN(nAct)
			d.Obs[i], d.Act[i] = uint16(o), uint16(a)
			if a%2 == s {
				d.Reward[i] = 1
			}
			flip := 0.2
			if a == 0 {
				flip = 0.5
			}
			if rng.Float64() < flip {
				s = 1 - s
			}
		}
	}
	return d
}

func BenchmarkTabularLCB(b *testing.B) {
	b.Run("episodes=1e5/H=6/O=4/A=3", func(b *testing.B) {
		d := benchDataset(100_000, 6, 4, 3)
		ctx := context.Background()
		b.ReportAllocs()
		var nodes int
		for b.Loop() {
			p, err := TabularLCB(ctx, d, TabularOptions{})
			if err != nil {
				b.Fatal(err)
			}
			nodes = len(p.Nodes)
		}
		b.ReportMetric(float64(d.NumEpisodes())*float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
		b.ReportMetric(float64(nodes), "policy_nodes")
	})
}

func BenchmarkBehaviorCloning(b *testing.B) {
	b.Run("episodes=1e5/H=6/O=4/A=3", func(b *testing.B) {
		d := benchDataset(100_000, 6, 4, 3)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := BehaviorCloning(ctx, d, CloneOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(d.NumEpisodes())*float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
	})
}
