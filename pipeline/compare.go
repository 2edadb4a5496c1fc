package pipeline

import (
	"context"
	"fmt"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/ope"
	"github.com/psrlcb/psrlcb/progress"
	"github.com/psrlcb/psrlcb/report"
)

// checkCompare reads every --compare policy before the logs are read, so
// a missing or malformed file fails the run before any long work. Their
// symbols are checked against the logs when they are evaluated.
func checkCompare(paths []string) error {
	for _, p := range paths {
		if err := ope.CheckTarget(p); err != nil {
			return fmt.Errorf("--compare %s: %w", p, err)
		}
	}
	return nil
}

// comparePolicies evaluates the run's own policy and every --compare
// policy on the logs d (psrlcb fit --compare): the importance-sampling
// estimators and the fitted model's value and lower bound with the run's
// bonus (ope.Compare), so the report puts the incumbent beside the plan.
// The run's policy comes first, named report.PlanName; the others by
// their paths as given.
func comparePolicies(ctx context.Context, d *ingest.Dataset, out *report.Outcome, opts Options, prog progress.Reporter) ([]report.ComparedPolicy, error) {
	eo := ope.Options{Seed: opts.Seed, Workers: opts.Workers, ModelNote: "this run's model"}
	own, err := ope.NewTreeTarget(out.Policy, d)
	if err != nil {
		return nil, err
	}
	res, err := ope.Compare(ctx, d, own, out.Model, out.Bonus, eo)
	if err != nil {
		return nil, err
	}
	cmp := []report.ComparedPolicy{report.NewComparedPolicy(report.PlanName, res)}
	prog.Advance(1, report.PlanName)
	for _, p := range opts.Compare {
		c, err := compareOne(ctx, d, out, p, eo)
		if err != nil {
			return nil, fmt.Errorf("--compare %s: %w", p, err)
		}
		cmp = append(cmp, c)
		prog.Advance(1, p)
	}
	return cmp, nil
}

// compareOne estimates the policy of --compare path p on the logs.
func compareOne(ctx context.Context, d *ingest.Dataset, out *report.Outcome, p string, eo ope.Options) (report.ComparedPolicy, error) {
	t, err := ope.ReadTarget(p, d)
	if err != nil {
		return report.ComparedPolicy{}, err
	}
	res, err := ope.Compare(ctx, d, t, out.Model, out.Bonus, eo)
	if err != nil {
		return report.ComparedPolicy{}, err
	}
	return report.NewComparedPolicy(p, res), nil
}
