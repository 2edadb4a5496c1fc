package ope

import (
	"context"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
)

// ReasonCompareDR is why psrlcb fit --compare leaves out the doubly
// robust estimators.
const ReasonCompareDR = "skipped by fit --compare: the doubly robust estimators fit a model on each half of the logs; psrlcb evaluate --logs runs them"

// Compare estimates the value of t from the logs d a model m was fitted
// on, for psrlcb fit --compare: the importance-sampling estimators, and
// m's value of t and its lower bound with bonus b (built for m). The
// doubly robust estimators, which need models that never saw the
// episodes they score, are skipped (ReasonCompareDR). Logs without
// propensities get the behaviour's estimated ones
// (estimate.EstimateBehavior), d itself unchanged.
func Compare(ctx context.Context, d *ingest.Dataset, t Target, m *estimate.Model, b *pessimism.Bonus, o Options) (*Result, error) {
	d = withPropensities(d)
	rho, err := Ratios(ctx, d, t, o.Workers)
	if err != nil {
		return nil, err
	}
	o.Model, o.Bonus = m, b
	o.Folds, o.Fold = [2]*estimate.Model{}, nil
	o.Skipped = map[string]string{EstDR: ReasonCompareDR, EstWDR: ReasonCompareDR}
	return Evaluate(ctx, d, rho, t, o)
}

// withPropensities is d, or a copy of d with the behaviour's estimated
// propensities when d has none.
func withPropensities(d *ingest.Dataset) *ingest.Dataset {
	if d.HasPropensity() {
		return d
	}
	c := *d
	c.Propensity = estimate.EstimateBehavior(d)
	return &c
}
