package pomdp

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/psrlcb/psrlcb/ingest"
)

func behavior(t testing.TB, spec string, m *POMDP) Behavior {
	t.Helper()
	b, err := ParseBehavior(spec, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSimulateDeterministicAcrossWorkers(t *testing.T) {
	m := tiger(t)
	b := behavior(t, "myopic:0.3", m)
	ctx := context.Background()
	K := 3*chunkEpisodes + 17
	ref, err := simulate(ctx, m, 5, K, b, 42, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{2, 3, 8} {
		got, err := simulate(ctx, m, 5, K, b, 42, w)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, ref) {
			t.Fatalf("logs with %d workers differ from 1 worker", w)
		}
	}
	other, _ := simulate(ctx, m, 5, K, b, 43, 2)
	if reflect.DeepEqual(other.Act, ref.Act) {
		t.Fatalf("seeds 42 and 43 gave the same actions")
	}
}

// The empirical mean return must match the exact behaviour value within
// 4 standard errors (a false alarm about once in 16 000 runs; the seeds
// are fixed, so the test is reproducible).
func TestSimulateMeanMatchesBehaviorValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	cases := []struct {
		m    *POMDP
		spec string
		H    int
	}{
		{tiger(t), "uniform", 4},
		{tiger(t), "myopic:0.3", 4},
		{tiger(t), "fixed:listen:0.5", 3},
		{gamble(t), "myopic:0.5", 5},
		{randomPOMDP(rng, 4, 3, 3), "uniform", 4},
		{randomPOMDP(rng, 4, 3, 3), "myopic:0.2", 4},
		{randomPOMDP(rng, 5, 2, 4), "fixed:a1:0.4", 5},
	}
	const K = 20000
	for i, c := range cases {
		b := behavior(t, c.spec, c.m)
		l, err := Simulate(context.Background(), c.m, c.H, K, b, uint64(100+i))
		if err != nil {
			t.Fatal(err)
		}
		sum, sum2 := 0.0, 0.0
		for k := range K {
			r := l.Return(k)
			sum += r
			sum2 += r * r
		}
		mean := sum / K
		se := math.Sqrt((sum2/K - mean*mean) / (K - 1))
		want := behaviorValue(c.m, c.H, b)
		if math.Abs(mean-want) > 4*se+1e-12 {
			t.Errorf("%s %s H=%d: mean return %v ± %v, exact %v", c.m.Name, c.spec, c.H, mean, se, want)
		}
	}
}

func TestSimulatePropensitiesAreTrue(t *testing.T) {
	m := tiger(t)
	b := behavior(t, "myopic:0.3", m)
	const H, K = 4, 500
	l, err := Simulate(context.Background(), m, H, K, b, 9)
	if err != nil {
		t.Fatal(err)
	}
	probs := make([]float64, m.NumActions())
	for k := range K {
		obs := make([]int, 0, H)
		act := make([]int, 0, H)
		for h := 1; h <= H; h++ {
			i := k*H + h - 1
			o := int(l.Obs[i])
			if (h == 1) != (o == ObsInit) || o >= m.NumObs() {
				t.Fatalf("episode %d step %d: observation %d", k, h, o)
			}
			obs = append(obs, o)
			belief, ok := m.Belief(obs, act)
			if !ok {
				t.Fatalf("episode %d step %d: logged history has probability 0", k, h)
			}
			b.Probs(h, belief, probs)
			if p := probs[l.Act[i]]; math.Abs(p-l.Propensity[i]) > 1e-12 {
				t.Fatalf("episode %d step %d: propensity %v, behaviour gives %v", k, h, l.Propensity[i], p)
			}
			act = append(act, int(l.Act[i]))
		}
	}
}

func TestWriteParquetRoundTrip(t *testing.T) {
	m := tiger(t)
	l, err := Simulate(context.Background(), m, 3, 50, behavior(t, "uniform", m), 1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "logs.parquet")
	if err := WriteParquetFile(path, l); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	rows, err := parquet.ReadFile[LogRow](path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 150 {
		t.Fatalf("%d rows, want 150", len(rows))
	}
	for i, r := range rows {
		k, h := i/3, i%3+1
		want := LogRow{
			EpisodeID: int64(k + 1), Step: int64(h),
			Observation: m.ObsName(int(l.Obs[i])), Action: m.Actions[l.Act[i]],
			Reward: l.Reward[i], Propensity: 1.0 / 3,
		}
		if r != want {
			t.Fatalf("row %d = %+v, want %+v", i, r, want)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]parquet.Kind{}
	for _, col := range pf.Schema().Fields() {
		kinds[col.Name()] = col.Type().Kind()
		if col.Optional() {
			t.Errorf("column %s is nullable", col.Name())
		}
	}
	want := map[string]parquet.Kind{"episode_id": parquet.Int64, "step": parquet.Int64, "observation": parquet.ByteArray, "action": parquet.ByteArray, "reward": parquet.Double, "propensity": parquet.Double, "terminal": parquet.Boolean}
	if len(kinds) != len(want) {
		t.Errorf("columns %v", kinds)
	}
	for c, k := range want {
		if got, ok := kinds[c]; !ok || got != k {
			t.Errorf("column %s has kind %v, want %v", c, got, k)
		}
	}
	if v, _ := pf.Lookup("psrlcb.seed"); v != "1" {
		t.Errorf("seed metadata %q", v)
	}
	// Same logs, same bytes.
	var a, b bytes.Buffer
	if err := WriteParquet(&a, l); err != nil {
		t.Fatal(err)
	}
	if err := WriteParquet(&b, l); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("two writes of the same logs differ")
	}
}

func TestWriteParquetFileFailureLeavesNothing(t *testing.T) {
	m := tiger(t)
	l, _ := Simulate(context.Background(), m, 2, 3, behavior(t, "uniform", m), 1)
	dir := filepath.Join(t.TempDir(), "missing")
	if err := WriteParquetFile(filepath.Join(dir, "x.parquet"), l); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
}

func TestLogsDataset(t *testing.T) {
	m := tiger(t)
	const H, K = 3, 12
	l, err := Simulate(context.Background(), m, H, K, behavior(t, "myopic:0.5", m), 3)
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Dataset()
	if err != nil {
		t.Fatal(err)
	}
	// Integer episode ids 1..12, in numeric order as ingest orders them.
	wantIDs := []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"}
	if !slices.Equal(d.EpisodeIDs, wantIDs) {
		t.Fatalf("episode ids %v", d.EpisodeIDs)
	}
	if !slices.IsSorted(d.ObsVocab) || !slices.IsSorted(d.ActVocab) || !slices.Contains(d.ObsVocab, InitSymbol) {
		t.Fatalf("vocabularies %v %v", d.ObsVocab, d.ActVocab)
	}
	if d.Horizon != H || d.NumEpisodes() != K || d.Rows != H*K {
		t.Fatalf("shape %d×%d rows %d", d.NumEpisodes(), d.Horizon, d.Rows)
	}
	for j, id := range d.EpisodeIDs {
		k, _ := strconv.Atoi(id)
		k--
		if d.Length[j] != H || d.Return(j) != l.Return(k) {
			t.Errorf("episode %s: length %d return %v, want %v", id, d.Length[j], d.Return(j), l.Return(k))
		}
		for h := range H {
			r := l.Row(k*H + h)
			if d.ObsVocab[d.Obs[j*H+h]] != r.Observation || d.ActVocab[d.Act[j*H+h]] != r.Action || d.Propensity[j*H+h] != r.Propensity {
				t.Fatalf("episode %s step %d differs", id, h+1)
			}
		}
	}
}

func TestSimulateCancelled(t *testing.T) {
	m := tiger(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Simulate(ctx, m, 4, 10000, behavior(t, "uniform", m), 1); err == nil {
		t.Fatal("cancelled simulation returned no error")
	}
}

func BenchmarkSimulate(b *testing.B) {
	for _, c := range []struct {
		name, spec string
		hallway    bool
	}{
		{"model=tiger/behavior=uniform", "uniform", false},
		{"model=tiger/behavior=myopic", "myopic:0.3", false},
		{"model=hallway/behavior=myopic", "myopic:0.3", true},
	} {
		b.Run(c.name+"/episodes=1e5/H=8", func(b *testing.B) {
			m := tiger(b)
			if c.hallway {
				var err error
				m, err = ParseFile(filepath.Join(sharedDir(b), "hallway.pomdp"))
				if err != nil {
					b.Fatal(err)
				}
			}
			beh := behavior(b, c.spec, m)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Simulate(context.Background(), m, 8, 100000, beh, 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(8e5*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

func BenchmarkWriteParquet(b *testing.B) {
	m := tiger(b)
	l, err := Simulate(context.Background(), m, 8, 100000, behavior(b, "uniform", m), 1)
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := WriteParquet(&buf, l); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportMetric(8e5*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// The Dataset built in memory is exactly what ingesting the written
// Parquet file gives.
func TestLogsDatasetMatchesIngest(t *testing.T) {
	m := tiger(t)
	l, err := Simulate(context.Background(), m, 4, 300, behavior(t, "fixed:open-left:0.2", m), 8)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "logs.parquet")
	if err := WriteParquetFile(path, l); err != nil {
		t.Fatal(err)
	}
	got, err := ingest.Read(context.Background(), []string{path}, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := l.Dataset()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ingested dataset differs from Logs.Dataset:\n got vocab %v %v ids %v…\nwant vocab %v %v ids %v…",
			got.ObsVocab, got.ActVocab, got.EpisodeIDs[:3], want.ObsVocab, want.ActVocab, want.EpisodeIDs[:3])
	}
}
