package estimate

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// benchEpisodes is the number of episodes of the EM benchmark: 1e6 (1e7
// steps) unless PSRLCB_BENCH_EPISODES says otherwise.
func benchEpisodes(b *testing.B) int {
	if s := os.Getenv("PSRLCB_BENCH_EPISODES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("PSRLCB_BENCH_EPISODES=%q is not a positive integer", s)
		}
		return n
	}
	return 1_000_000
}

// BenchmarkEMIteration times one EM iteration (E-step over every episode
// and M-step) of a rank-8 model on data from a random model with |O|=8,
// |A|=4, H=10 and two reward values. steps/s counts logged steps;
// GFLOP/s counts the 3·r² multiply-adds per step of the forward, backward
// and accumulation loops (2 flops each).
func BenchmarkEMIteration(b *testing.B) {
	K := benchEpisodes(b)
	const S, O, A, H = 8, 8, 4, 10
	truth := RandomModel(S, O, A, H, true, []float64{0, 1}, 1)
	d := SampleDataset(truth, K, 2)
	kind, values := rewardSupport(d.Reward)
	c := code(d, kind, values)
	m := RandomModel(S, O, A, H, true, values, 3)
	b.Run(fmt.Sprintf("episodes=%d", K), func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		var st *stats
		for b.Loop() {
			k := newKernel(m, c)
			var err error
			st, err = k.estep(ctx, c, runtime.GOMAXPROCS(0))
			if err != nil {
				b.Fatal(err)
			}
			_ = k.mstep(st, c, DefaultSmoothing)
		}
		steps := float64(K*H) * float64(b.N)
		sec := b.Elapsed().Seconds()
		b.ReportMetric(steps/sec, "steps/s")
		b.ReportMetric(steps*3*S*S*2/sec/1e9, "GFLOP/s")
		b.ReportMetric(sec/float64(b.N), "s/iter")
	})
}
