package estimate

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/psrlcb/psrlcb/ingest"
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

// BenchmarkEMConverge runs one EM start to convergence (DefaultTol) twice
// on the same data and from the same informed start: plain EM and EM
// accelerated by SQUAREM. Data as BenchmarkEMIteration, 1e5 episodes
// unless PSRLCB_BENCH_EPISODES says otherwise. Reported per run: E-steps
// and seconds of each, their ratios (plain/accelerated) and the
// log-likelihood gained by the accelerated run over plain EM.
// PSRLCB_BENCH_LOGS=file.parquet fits those logs instead (e.g. the logs
// bench/fit.sh caches), at rank 8.
func BenchmarkEMConverge(b *testing.B) {
	K := 100_000
	if os.Getenv("PSRLCB_BENCH_EPISODES") != "" {
		K = benchEpisodes(b)
	}
	const S, O, A, H = 8, 8, 4, 10
	var d *ingest.Dataset
	if f := os.Getenv("PSRLCB_BENCH_LOGS"); f != "" {
		var err error
		if d, err = ingest.Read(context.Background(), []string{f}, ingest.Options{}); err != nil {
			b.Fatal(err)
		}
		K = d.NumEpisodes()
	} else {
		truth := RandomModel(S, O, A, H, true, []float64{0, 1}, 1)
		d = SampleDataset(truth, K, 2)
	}
	kind, values := rewardSupport(d.Reward)
	c := code(d, kind, values)
	o, err := Options{Rank: S, Restarts: 1, Seed: 1, Workers: runtime.GOMAXPROCS(0)}.withDefaults()
	if err != nil {
		b.Fatal(err)
	}
	proto := protoModel(d, c, &o)
	// Start 0 of Fit with seed 1 (fitRank), as `psrlcb fit --seed 1`.
	m0 := informedStart(c, proto, S, o.Seed*0x9e3779b97f4a7c15+S*1000003)
	b.Run(fmt.Sprintf("episodes=%d", K), func(b *testing.B) {
		ctx := context.Background()
		var plainSteps, accelSteps, plainSec, accelSec, dll float64
		for b.Loop() {
			run := func(plain bool) (emResult, float64) {
				oo := o
				oo.PlainEM = plain
				t0 := time.Now()
				r := runEM(ctx, c, m0, &oo, runtime.GOMAXPROCS(0), TraceRow{}, func(TraceRow) {})
				if r.err != nil {
					b.Fatal(r.err)
				}
				return r, time.Since(t0).Seconds()
			}
			p, ps := run(true)
			a, as := run(false)
			plainSteps += float64(p.esteps)
			accelSteps += float64(a.esteps)
			plainSec += ps
			accelSec += as
			dll += a.ll - p.ll
			b.Logf("plain: %d E-steps %.2f s ll %.4f converged %v; squarem: %d E-steps %.2f s ll %.4f converged %v",
				p.esteps, ps, p.ll, p.converged, a.esteps, as, a.ll, a.converged)
		}
		n := float64(b.N)
		b.ReportMetric(plainSteps/n, "plain-esteps")
		b.ReportMetric(accelSteps/n, "squarem-esteps")
		b.ReportMetric(plainSteps/accelSteps, "esteps-ratio")
		b.ReportMetric(plainSec/n, "plain-s")
		b.ReportMetric(accelSec/n, "squarem-s")
		b.ReportMetric(plainSec/accelSec, "time-ratio")
		b.ReportMetric(dll/n, "squarem-dLL")
	})
}
