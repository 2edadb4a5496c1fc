package estimate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/spill"
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
// and accumulation loops (2 flops each); dgemm-GFLOP/s is the rate of a
// dense matrix product on the same machine in the same run (dgemmRate)
// and peak-share the EM pass's GFLOP/s as a share of it.
func BenchmarkEMIteration(b *testing.B) {
	K := benchEpisodes(b)
	peak := dgemmRate(512, 300*time.Millisecond)
	fma := fmaPeak(300 * time.Millisecond)
	const S, O, A, H = 8, 8, 4, 10
	truth := randomModel(S, O, A, H, true, []float64{0, 1}, 1)
	d := sampleDataset(truth, K, 2)
	kind, values := rewardSupport(d.Reward)
	c := code(d, kind, values)
	m := randomModel(S, O, A, H, true, values, 3)
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
		gflops := steps * 3 * S * S * 2 / sec / 1e9
		b.ReportMetric(gflops, "GFLOP/s")
		b.ReportMetric(peak, "dgemm-GFLOP/s")
		b.ReportMetric(gflops/peak, "peak-share")
		if fma > 0 {
			b.ReportMetric(fma, "fma-peak-GFLOP/s")
			b.ReportMetric(gflops/fma, "fma-share")
		}
		b.ReportMetric(sec/float64(b.N), "s/iter")
	})
}

// dgemmRate is the GFLOP/s of gonum's DGEMM (blas64.Gemm, which runs on
// every core) on n×n matrices, timed over at least d: the dense rate this
// machine attains in Go, the reference the EM benchmark's GFLOP/s is
// reported against. It is not the cores' FMA peak, which a Go DGEMM does
// not reach. bench/em.sh prints both beside its Baum–Welch anchor.
func dgemmRate(n int, d time.Duration) float64 {
	mat := func(seed uint64) blas64.General {
		r := rand.New(rand.NewPCG(seed, 1))
		g := blas64.General{Rows: n, Cols: n, Stride: n, Data: make([]float64, n*n)}
		for i := range g.Data {
			g.Data[i] = r.Float64()
		}
		return g
	}
	x, y, z := mat(1), mat(2), mat(3)
	reps, start := 0, time.Now()
	for reps == 0 || time.Since(start) < d {
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, x, y, 0, z)
		reps++
	}
	return 2 * float64(n) * float64(n) * float64(n) * float64(reps) / time.Since(start).Seconds() / 1e9
}

// fmaPeak is the GFLOP/s of the widest fused multiply–add loop the
// processor has (fmaLoop: registers only, independent chains), run on
// every core at once for at least d: the machine's arithmetic peak, which
// no memory-bound kernel reaches; 0 where there is no such loop.
func fmaPeak(d time.Duration) float64 {
	loop, flops := fmaLoop()
	if loop == nil {
		return 0
	}
	const n = 1 << 22
	P := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	start := time.Now()
	reps := make([]int, P)
	for w := range P {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for reps[w] == 0 || time.Since(start) < d {
				loop(n)
				reps[w]++
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, r := range reps {
		total += r
	}
	return flops * n * float64(total) / time.Since(start).Seconds() / 1e9
}

// BenchmarkEMIterationCardinality times one EM iteration of a rank-8
// model with |A| = 50 on 2·10⁵ episodes × 5 steps (PSRLCB_BENCH_EPISODES
// overrides) at |O| = 8 and |O| = 20,000, each in the model form Fit
// chooses (full at 8, compact at 20,000). Steps are uniformly random
// symbols and rewards in {0,1}: the cost of an iteration does not depend on
// how well the model explains them. The target of bench/cardinality.sh:
// steps/s at |O| = 20,000 at least half of that at |O| = 8.
func BenchmarkEMIterationCardinality(b *testing.B) {
	K := 200_000
	if os.Getenv("PSRLCB_BENCH_EPISODES") != "" {
		K = benchEpisodes(b)
	}
	const S, A, H = 8, 50, 5
	for _, O := range []int{8, 20_000} {
		d := uniformDataset(K, H, O, A, 2)
		kind, values := rewardSupport(d.Reward)
		c := code(d, kind, values)
		var m *Model
		if chooseForm(FormAuto, c, S, 1) {
			m = randomCompactModel(S, O, A, H, values, 3)
		} else {
			m = randomModel(S, O, A, H, true, values, 3)
		}
		b.Run(fmt.Sprintf("obs=%d,actions=%d,compact=%v", O, A, m.Compact), func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				k := newKernel(m, c)
				st, err := k.estep(ctx, c, runtime.GOMAXPROCS(0))
				if err != nil {
					b.Fatal(err)
				}
				_ = k.mstep(st, c, DefaultSmoothing)
			}
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(K*H)*float64(b.N)/sec, "steps/s")
			b.ReportMetric(sec/float64(b.N), "s/iter")
		})
	}
}

// uniformDataset is K episodes of H steps of uniformly random
// observations (O), actions (A) and rewards in {0,1}.
func uniformDataset(K, H, O, A int, seed uint64) *ingest.Dataset {
	rng := rand.New(rand.NewPCG(seed, 0xb0b))
	d := &ingest.Dataset{Horizon: H, ObsVocab: symbolNames("o", O), ActVocab: symbolNames("a", A),
		EpisodeIDs: symbolNames("", K), Length: make([]int32, K),
		Obs: make([]uint16, K*H), Act: make([]uint16, K*H), Reward: make([]float64, K*H)}
	for i := range d.Obs {
		d.Obs[i], d.Act[i], d.Reward[i] = uint16(rng.IntN(O)), uint16(rng.IntN(A)), float64(rng.IntN(2))
	}
	for k := range d.Length {
		d.Length[k] = int32(H)
	}
	return d
}

// randomCompactModel is a stationary Compact model with flat Dirichlet
// draws for every distribution and categorical rewards over values.
func randomCompactModel(S, O, A, H int, values []float64, seed uint64) *Model {
	rng := rand.New(rand.NewPCG(seed, 0xc0c))
	V := len(values)
	m := &Model{States: S, NumObs: O, NumActions: A, Horizon: H, Stationary: true, Compact: true,
		ObsVocab: symbolNames("o", O), ActVocab: symbolNames("a", A), TestLength: 1,
		Reward: RewardCategorical, RewardValues: values,
		Init: make([]float64, S), Obs1: make([]float64, S*O),
		Trans: [][]float64{make([]float64, A*S*S)}, Emit: [][]float64{make([]float64, S*O)},
		RewardProb: [][]float64{make([]float64, S*A*S*V)}}
	dirichlet1(rng, m.Init)
	for s := 0; s < S; s++ {
		dirichlet1(rng, m.Obs1[s*O:(s+1)*O])
		dirichlet1(rng, m.Emit[0][s*O:(s+1)*O])
	}
	for r := 0; r < A*S; r++ {
		dirichlet1(rng, m.Trans[0][r*S:(r+1)*S])
	}
	for i := 0; i < S*A*S; i++ {
		dirichlet1(rng, m.RewardProb[0][i*V:(i+1)*V])
	}
	m.Prepare()
	return m
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
		truth := randomModel(S, O, A, H, true, []float64{0, 1}, 1)
		d = sampleDataset(truth, K, 2)
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

// BenchmarkEMIterationSpilled times one EM iteration with the logs' step
// codes on the heap and in a spill file (internal/spill, trimmed every
// second as fit does), on the data of BenchmarkEMIteration: the cost of
// streaming the codes through the page cache at every pass.
func BenchmarkEMIterationSpilled(b *testing.B) {
	K := benchEpisodes(b)
	const S, O, A, H = 8, 8, 4, 10
	truth := randomModel(S, O, A, H, true, []float64{0, 1}, 1)
	heap := sampleDataset(truth, K, 2)
	arena, err := spill.New(b.TempDir(), int64(K*H)*12+64)
	if err != nil {
		b.Skip(err)
	}
	defer arena.Close()
	spilled := *heap
	spilled.Obs, _ = arena.Uint16s(K * H)
	spilled.Act, _ = arena.Uint16s(K * H)
	spilled.Reward, _ = arena.Float64s(K * H)
	copy(spilled.Obs, heap.Obs)
	copy(spilled.Act, heap.Act)
	copy(spilled.Reward, heap.Reward)
	arena.StartTrimming(time.Second)
	for _, c := range []struct {
		name string
		d    *ingest.Dataset
	}{{"heap", heap}, {"spilled", &spilled}} {
		kind, values := rewardSupport(c.d.Reward)
		cd := code(c.d, kind, values)
		m := randomModel(S, O, A, H, true, values, 3)
		b.Run(fmt.Sprintf("%s/episodes=%d", c.name, K), func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				k := newKernel(m, cd)
				st, err := k.estep(ctx, cd, runtime.GOMAXPROCS(0))
				if err != nil {
					b.Fatal(err)
				}
				_ = k.mstep(st, cd, DefaultSmoothing)
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/iter")
		})
	}
}
