package ope

import (
	"math"
	"testing"
)

// TestRecommendOrder: the summary leads with the first reliable estimator
// of the order the validation study measured (docs/evaluation.md), the
// self-normalised per-decision one when it is reliable, then the model's
// value, then the first estimator with a value.
func TestRecommendOrder(t *testing.T) {
	all := func(reliable bool) []Estimate {
		var es []Estimate
		for _, n := range []string{EstBehavior, EstIS, EstWIS, EstPDIS, EstWPDIS, EstDR, EstWDR, EstModel, EstModelLCB} {
			es = append(es, Estimate{Estimator: n, Value: 1, Reliable: reliable || n == EstModel || n == EstModelLCB || n == EstBehavior})
		}
		return es
	}
	if got := recommend(all(true)); got != EstWPDIS {
		t.Errorf("every estimator reliable: %q, want wpdis", got)
	}
	es := all(true)
	for i := range es {
		if es[i].Estimator == EstWPDIS {
			es[i].Value = math.NaN() // the weights sum to zero
		}
	}
	if got := recommend(es); got != EstWIS {
		t.Errorf("wpdis undefined: %q, want wis", got)
	}
	if got := recommend(all(false)); got != EstModel {
		t.Errorf("no importance-weighted estimator reliable: %q, want the model's value", got)
	}
	es = all(false)
	for i := range es {
		if es[i].Estimator == EstModel {
			es[i].Value = math.NaN()
		}
	}
	if got := recommend(es); got != EstWPDIS {
		t.Errorf("nothing reliable, no model: %q, want the first with a value (wpdis)", got)
	}
}
