package estimate

import (
	"context"
	"reflect"
	"testing"
)

// TestCompactFitDeterministic: a Compact fit on more episodes than the
// starts' sample (fitSampleEpisodes), with rank auto, gives the same model
// for 1 and 2 workers and on a repeat run.
func TestCompactFitDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("fits 12,000 episodes three times")
	}
	m := randomCompactModel(3, 30, 2, 4, []float64{0, 1}, 41)
	m.Prepare()
	d := sampleDataset(m, fitSampleEpisodes+2000, 42)
	var ref *Model
	for _, w := range []int{1, 2, 2} {
		res, err := Fit(context.Background(), d, Options{Form: FormCompact, MaxRank: 4, Restarts: 2, MaxIter: 30, Seed: 5, Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = res.Model
			continue
		}
		if !reflect.DeepEqual(ref.Trans, res.Model.Trans) || !reflect.DeepEqual(ref.Emit, res.Model.Emit) || !reflect.DeepEqual(ref.RewardProb, res.Model.RewardProb) {
			t.Fatalf("workers %d: a different model (rank %d vs %d)", w, res.Model.States, ref.States)
		}
	}
}
