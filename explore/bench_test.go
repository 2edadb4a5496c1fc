package explore

import (
	"context"
	"math"
	"testing"

	"github.com/psrlcb/psrlcb/estimate/estimatetest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/split"
)

// BenchmarkPlanBonus: the exact bonus planner on a random model with
// |O| = 3, |A| = 4, H = 5 (Σ_h |O|^h|A|^{h−1} = 7.8·10⁴ decision nodes).
func BenchmarkPlanBonus(b *testing.B) {
	const S, O, A, H = 4, 3, 4, 5
	m := estimatetest.RandomModel(S, O, A, H, false, []float64{0, 1}, 1)
	m.ObsVocab = []string{"o0", "o1", "o2"}
	m.ActVocab = []string{"a0", "a1", "a2", "a3"}
	m.TestLength = 1
	m.Prepare()
	d := estimatetest.SampleDataset(m, 500, 2)
	splits, err := split.Split(d.NumEpisodes(), H, 1)
	if err != nil {
		b.Fatal(err)
	}
	bonus, err := pessimism.Build(context.Background(), m, d, splits, pessimism.Options{})
	if err != nil {
		b.Fatal(err)
	}
	bonus = bonus.WithAlpha(0.5)
	nodes := 0.0
	for h := 1; h <= H; h++ {
		nodes += math.Pow(O, float64(h)) * math.Pow(A, float64(h-1))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := PlanBonus(context.Background(), m, bonus, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(nodes*float64(b.N)/b.Elapsed().Seconds(), "nodes/s")
}
