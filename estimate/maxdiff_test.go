package estimate

import (
	"math"
	"testing"
)

// TestMaxParamDiff: 0 for a model and its copy, the perturbation for one
// changed entry, +Inf for another shape.
func TestMaxParamDiff(t *testing.T) {
	m := randomModel(2, 3, 2, 4, true, []float64{0, 1}, 5)
	c := cloneModel(m)
	if d := m.MaxParamDiff(c); d != 0 {
		t.Errorf("copy differs by %v", d)
	}
	c.Trans[0][1] += 0.25
	c.Emit[0][0] -= 0.5
	if d := m.MaxParamDiff(c); d != 0.5 {
		t.Errorf("diff %v, want 0.5", d)
	}
	other := randomModel(3, 3, 2, 4, true, []float64{0, 1}, 5)
	if d := m.MaxParamDiff(other); !math.IsInf(d, 1) {
		t.Errorf("other shape: %v, want +Inf", d)
	}
}
