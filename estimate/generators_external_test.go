package estimate_test

import (
	"reflect"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/estimate/estimatetest"
)

// TestGeneratorsMatchEstimatetest: the internal tests' randomModel and
// sampleDataset (generators_test.go) give the same models and datasets as
// estimatetest's, for categorical and Gaussian rewards, stationary or
// not, so the package's tests and its users' draw the same data.
func TestGeneratorsMatchEstimatetest(t *testing.T) {
	for _, c := range []struct {
		S, O, A, H int
		stationary bool
		rewards    []float64
		seed       uint64
	}{
		{3, 4, 2, 5, false, []float64{0, 1}, 1},
		{2, 12, 3, 4, true, []float64{-1, 0, 2}, 7},
		{4, 3, 2, 3, false, nil, 11},
	} {
		got := estimatetest.RandomModel(c.S, c.O, c.A, c.H, c.stationary, c.rewards, c.seed)
		want := estimate.RandomModelInternal(c.S, c.O, c.A, c.H, c.stationary, c.rewards, c.seed)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%+v: RandomModel differs from the internal tests' generator", c)
		}
		gd := estimatetest.SampleDataset(got, 50, c.seed+1)
		wd := estimate.SampleDatasetInternal(want, 50, c.seed+1)
		if !reflect.DeepEqual(gd, wd) {
			t.Fatalf("%+v: SampleDataset differs from the internal tests' generator", c)
		}
	}
}
