package estimate

import (
	"errors"
	"math"
	"testing"
)

// TestSqrtPSDNonFinite: a Gram matrix with an entry that is not finite
// has no square root (its eigendecomposition is NaN throughout); sqrtPSD
// reports ErrModel instead of panicking, and still returns the square
// root of a finite one.
func TestSqrtPSDNonFinite(t *testing.T) {
	for _, w := range [][]float64{
		{math.NaN(), 0, 0, 1},
		{1, math.NaN(), math.NaN(), 1},
		{math.Inf(1), 0, 0, 1},
	} {
		L, err := sqrtPSD(w, 2)
		if !errors.Is(err, ErrModel) || L != nil {
			t.Errorf("sqrtPSD(%v) = %v, %v; want ErrModel", w, L, err)
		}
	}
	L, err := sqrtPSD([]float64{4, 0, 0, 9}, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{2, 0, 0, 3} {
		if math.Abs(L[i]-want) > 1e-12 {
			t.Fatalf("sqrt of diag(4, 9) = %v", L)
		}
	}
}

// TestFeatureBasisError: a model with a NaN in its first emission (which
// Validate rejects) has no feature basis at step 0, in the Compact and in
// the reduced full form; FeatureBasis, NewFeaturizer (twice, the second
// time from the prepared model's cache) and FeatureFromPred return
// ErrModel rather than panic.
func TestFeatureBasisError(t *testing.T) {
	for _, compact := range []bool{false, true} {
		m := randomModel(2, 7, 3, 4, true, []float64{0, 1}, 11)
		if compact {
			m = firstActionCompact(m)
		}
		m.Obs1 = append([]float64(nil), m.Obs1...)
		m.Obs1[0] = math.NaN()
		m.Prepare()
		if !m.Compact && !m.reduced(0) {
			t.Fatal("expected the reduced feature at step 0")
		}
		if _, err := m.FeatureBasis(); !errors.Is(err, ErrModel) {
			t.Errorf("compact=%v: FeatureBasis: %v, want ErrModel", compact, err)
		}
		for range 2 {
			if fz, err := NewFeaturizer(m); !errors.Is(err, ErrModel) || fz != nil {
				t.Errorf("compact=%v: NewFeaturizer: %v, want ErrModel", compact, err)
			}
		}
		out := make([]float64, m.FeatureDim(0))
		if err := m.FeatureFromPred(0, m.Init, 0, out); !errors.Is(err, ErrModel) {
			t.Errorf("compact=%v: FeatureFromPred: %v, want ErrModel", compact, err)
		}
	}
}
