package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/policy"
)

// modelEvaluation is evaluate --model's JSON output.
type modelEvaluation struct {
	Model       string  `json:"model"`
	Policy      string  `json:"policy"`
	PolicyNodes int     `json:"policy_nodes"`
	Stochastic  bool    `json:"stochastic,omitempty"`
	Horizon     int     `json:"horizon"`
	Rank        int     `json:"rank"`
	ModelValue  float64 `json:"model_value_units"` // E_θ̂^π[Σ r_h], the user's units
	ModelScaled float64 `json:"model_value"`       // the same on the paper's [0,1] scale
	Unmatched   float64 `json:"unmatched_mass"`    // model probability of first observations the policy has no row for
	// StdErr is the Monte Carlo standard error of ModelValue, from
	// Episodes trajectories of the model when its histories are too many
	// to enumerate (0 and absent when exact).
	StdErr   float64 `json:"model_value_se,omitempty"`
	Episodes int     `json:"episodes,omitempty"`
}

// runEvaluateModel values a policy table under a fitted model (a run
// directory's model.arrow): what the model thinks of any policy, such as
// the incumbent one.
func runEvaluateModel(ctx context.Context, w io.Writer, o evaluateOptions) error {
	if o.pomdp != "" {
		return usagef("give either --pomdp (a known true model) or --model (a fitted run), not both")
	}
	m, pol, err := readModelAndPolicy(o)
	if err != nil {
		return err
	}
	var res modelEvaluation
	err = o.stage("value", func() (err error) {
		res, err = modelValue(ctx, o, m, pol)
		return err
	})
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(w, res)
	}
	return printModelEvaluation(w, m, res)
}

// readModelAndPolicy reads the fitted model and the policy of o, and
// checks that the model's horizon covers the policy's.
func readModelAndPolicy(o evaluateOptions) (*estimate.Model, *policy.Policy, error) {
	m, err := estimate.ReadModel(o.model)
	if err != nil {
		return nil, nil, err
	}
	pol, _, err := policy.ReadFile(o.policy)
	if err != nil {
		return nil, nil, err
	}
	return m, pol, checkModelHorizon(o, m, pol)
}

// checkModelHorizon refuses a --horizon or a policy planned for another
// horizon than the model's.
func checkModelHorizon(o evaluateOptions, m *estimate.Model, pol *policy.Policy) error {
	if o.horizon != 0 && o.horizon != m.Horizon {
		return usagef("--horizon %d, but the model %s was fitted for horizon %d", o.horizon, o.model, m.Horizon)
	}
	if pol.Horizon != 0 && pol.Horizon != m.Horizon {
		return usagef("%s was planned for horizon %d, the model %s has horizon %d", o.policy, pol.Horizon, o.model, m.Horizon)
	}
	return nil
}

// modelValue is pol's expected return under m: exact when the model's
// histories (and, for a stochastic policy, its action sequences) can be
// enumerated (at most policy.DefaultMaxLeaves), else the
// Monte Carlo mean over o.rollouts (at least 2) of its trajectories.
func modelValue(ctx context.Context, o evaluateOptions, m *estimate.Model, pol *policy.Policy) (modelEvaluation, error) {
	var v, se, un float64
	var err error
	episodes := 0
	if policy.Leaves(m, pol) <= policy.DefaultMaxLeaves {
		v, un, err = policy.ModelReturn(ctx, m, pol)
	} else {
		// Too many histories to enumerate: trajectories of the model.
		episodes = max(o.rollouts, 2)
		v, se, un, err = policy.ModelReturnSampled(ctx, m, pol, episodes, o.seed)
	}
	if err != nil {
		return modelEvaluation{}, fmt.Errorf("%s under %s: %w", o.policy, o.model, err)
	}
	return modelEvaluation{Model: o.model, Policy: o.policy, PolicyNodes: len(pol.Nodes), Stochastic: pol.Stochastic(), Horizon: m.Horizon, Rank: m.States,
		ModelValue: v, ModelScaled: m.RescaleReturn(v), Unmatched: un, StdErr: se, Episodes: episodes}, nil
}

// printModelEvaluation writes res of the model m as the table a person
// reads.
func printModelEvaluation(w io.Writer, m *estimate.Model, res modelEvaluation) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "model\t%s (fitted, rank %d, %d actions, %d observations)\n", res.Model, m.States, m.NumActions, m.NumObs)
	fmt.Fprintf(tw, "policy\t%s (%d nodes%s)\n", res.Policy, res.PolicyNodes, stochasticWord(res.Stochastic))
	fmt.Fprintf(tw, "horizon\t%d\n", m.Horizon)
	if res.Episodes > 0 {
		fmt.Fprintf(tw, "model value\t%.10g ± %.3g (expected return under the fitted model, Monte Carlo over %d of its trajectories: too many histories to enumerate; %.6g on the [0,1] scale)\n", res.ModelValue, res.StdErr, res.Episodes, res.ModelScaled)
	} else {
		fmt.Fprintf(tw, "model value\t%.10g (expected return under the fitted model; %.6g on the [0,1] scale)\n", res.ModelValue, res.ModelScaled)
	}
	if res.Unmatched > 0 {
		fmt.Fprintf(tw, "unmatched mass\t%.3g (model probability of first observations the policy has no row for; they count as return 0)\n", res.Unmatched)
	}
	return tw.Flush()
}
