package psrbeam

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/psrlcb/psrlcb/estimate"
)

func TestMain(m *testing.M) {
	flag.Parse()
	beam.Init()
	os.Exit(m.Run())
}

// TestPrismFitMatchesLocal: estimate.Fit with every E-step pass run as a
// Beam pipeline on Prism ends at the locally fitted model within 1e-9.
func TestPrismFitMatchesLocal(t *testing.T) {
	truth := estimate.RandomModel(2, 3, 2, 4, true, []float64{0, 1}, 5)
	d := estimate.SampleDataset(truth, 300, 6)
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
	m := estimate.RandomModel(2, 3, 2, 3, true, []float64{0, 1}, 5)
	d := estimate.SampleDataset(m, 20, 6)
	d.Obs[3*3+1] = 7 // episode 3, step 2: no observation 7 in the model
	r := &Runner{Name: "prism", ShardEpisodes: 8}
	defer r.Close(context.Background())
	_, err := r.EStep(context.Background(), m, d)
	if err == nil || !strings.HasSuffix(err.Error(), "episode 3 step 2: code out of vocabulary") || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v", err)
	}
}
