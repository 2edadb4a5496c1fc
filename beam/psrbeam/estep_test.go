package psrbeam

import (
	"context"
	"flag"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/estimate/estimatetest"
	"github.com/psrlcb/psrlcb/pessimism"
)

func TestMain(m *testing.M) {
	flag.Parse()
	beam.Init()
	os.Exit(m.Run())
}

// TestPrismFitMatchesLocal: estimate.Fit with every E-step pass run as a
// Beam pipeline on Prism ends at the locally fitted model within 1e-9.
func TestPrismFitMatchesLocal(t *testing.T) {
	truth := estimatetest.RandomModel(2, 3, 2, 4, true, []float64{0, 1}, 5)
	d := estimatetest.SampleDataset(truth, 300, 6)
	o := estimate.Options{Rank: 2, Restarts: 1, MaxIter: 12, Seed: 1}
	want, err := estimate.Fit(context.Background(), d, o)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Name: "prism", ShardEpisodes: 70}
	defer r.Close(context.Background())
	o.EStepper = r
	got, err := estimate.Fit(context.Background(), d, o)
	if err != nil {
		t.Fatal(err)
	}
	if diff := want.Model.MaxParamDiff(got.Model); diff > 1e-9 {
		t.Errorf("models differ by %g", diff)
	}
	t.Logf("%d passes in %v", r.Passes, r.PassTime)
	if r.Passes < len(want.Trace) {
		t.Errorf("%d Beam passes, want at least one per E-step (%d)", r.Passes, len(want.Trace))
	}
}

// TestPrismEStepBadData: episodes a model cannot score fail the pass with
// the E-step's message (episode and step), not a panic or a hang.
func TestPrismEStepBadData(t *testing.T) {
	m := estimatetest.RandomModel(2, 3, 2, 3, true, []float64{0, 1}, 5)
	d := estimatetest.SampleDataset(m, 20, 6)
	d.Obs[3*3+1] = 7 // episode 3, step 2: no observation 7 in the model
	r := &Runner{Name: "prism", ShardEpisodes: 8}
	defer r.Close(context.Background())
	_, err := r.EStep(context.Background(), m, d)
	if err == nil || !strings.HasSuffix(err.Error(), "episode 3 step 2: code out of vocabulary") || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v", err)
	}
}

// TestPrismUSumsMatchLocal: the bonus built with the U_h sums run as a
// Beam pipeline on Prism (shards of 70 episodes, so the splits cut
// across shards) equals the bonus built in process: the root term and
// every episode's bonus within 1e-12.
func TestPrismUSumsMatchLocal(t *testing.T) {
	m := estimatetest.RandomModel(2, 3, 2, 4, true, []float64{0, 1}, 5)
	d := estimatetest.SampleDataset(m, 300, 6)
	splits := make([][]int, 4)
	for k := range 300 {
		splits[(k*7)%4] = append(splits[(k*7)%4], k)
	}
	want, err := pessimism.Build(context.Background(), m, d, splits, pessimism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Name: "prism", ShardEpisodes: 70}
	defer r.Close(context.Background())
	got, err := pessimism.Build(context.Background(), m, d, splits, pessimism.Options{USummer: r})
	if err != nil {
		t.Fatal(err)
	}
	if r.Passes != 1 {
		t.Errorf("%d Beam passes, want 1", r.Passes)
	}
	if math.Abs(got.Root-want.Root) > 1e-12 {
		t.Errorf("root %v, want %v", got.Root, want.Root)
	}
	for k := range 300 {
		obs, act := make([]int, 4), make([]int, 4)
		for h := range 4 {
			obs[h], act[h] = int(d.Obs[4*k+h]), int(d.Act[4*k+h])
		}
		gv, _ := got.Trajectory(obs, act)
		wv, _ := want.Trajectory(obs, act)
		if math.Abs(gv-wv) > 1e-12 {
			t.Fatalf("episode %d: bonus %v, want %v", k, gv, wv)
		}
	}
}

// TestPrismScoresMatchLocal: the per-episode log-likelihoods scored as a
// Beam pipeline on Prism are the local ones, bit for bit (each episode is
// scored alone by the same code).
func TestPrismScoresMatchLocal(t *testing.T) {
	m := estimatetest.RandomModel(2, 3, 2, 4, true, []float64{0, 1}, 5)
	d := estimatetest.SampleDataset(m, 300, 6)
	wantO, wantR, err := estimate.ScoreEpisodes(context.Background(), m, d, 2)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Name: "prism", ShardEpisodes: 70}
	defer r.Close(context.Background())
	gotO, gotR, err := r.ScoreEpisodes(context.Background(), m, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(gotO) != 300 || len(gotR) != 300 {
		t.Fatalf("%d and %d scores for 300 episodes", len(gotO), len(gotR))
	}
	for k := range 300 {
		if gotO[k] != wantO[k] || gotR[k] != wantR[k] {
			t.Fatalf("episode %d: %v, %v; want %v, %v", k, gotO[k], gotR[k], wantO[k], wantR[k])
		}
	}
}
