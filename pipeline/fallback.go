package pipeline

import (
	"context"
	"math"

	"github.com/psrlcb/psrlcb/baseline"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/report"
)

// The behaviour fallback.
//
// PSR-LCB returns argmax_π V_{θ̂,R}^π − V_{θ̂,b̂}^π (Huang, Liang, Yang,
// "Provably Efficient UCB-type Algorithms For Learning Predictive State
// Representations", ICLR 2024, arXiv:2307.00405, Algorithm 2, Section 5).
// Its guarantee (Theorem 2) is against any policy the logs cover, the
// behaviour's own choices included, but only while the bonus covers the
// model's error. On narrow logs it does not: the bonus ‖ψ̄̂(τ_h)‖ measures
// how well the logs span the model's predictions, and a history that ends
// with an action the behaviour almost never takes gets about the bonus of a
// logged one (docs/validation.md, "Diagnosis"). The plan then leaves the
// logged actions on the strength of the model's extrapolation, and can be
// worse than the behaviour.
//
// The fallback adds one candidate to the cross-fitted selection, the
// behaviour's clone π_c (the action logged most often at each history,
// baseline.BehaviorCloning, fitted on part A), and keeps the rule that the
// returned policy is the one with the largest lower bound, each bound
// measured on part B, which neither policy was made from:
//
//	L(π_c) = the importance-weighted 95% lower bound of V^{π_c} on B,
//	L(π_α) = max(V_{θ̂_B,R}^{π_α} − V_{θ̂_B,α_B b̂_B}^{π_α}, its importance-weighted lower bound on B)
//
// with α_B = max(α, pessimism.DefaultAlpha), the cross-fitted bound the
// reported LCB is corrected to (LCBCorrectionCrossFit). An importance-
// weighted bound counts only with an effective sample size of at least
// report.MinEpisodesForClaim: below it the normal interval is too narrow
// to trust. The clone wins when L(π_c) > L(π_α); the final policy is then
// the clone of all episodes.
//
// When the behaviour is narrow, most logged episodes follow its clone, so
// L(π_c) is a tight bound from the logs alone; a plan that departs from
// the logged actions has to be shown better by B's model at the default
// confidence. When the behaviour spreads its actions (uniform logs), the
// clone is one arbitrary deterministic policy that few episodes follow, its
// bound is weak or absent, and the plan is kept.

// Values of Options.Fallback.
const (
	// FallbackClone: with α chosen among candidates, return the behaviour's
	// clone when its held-out lower bound beats the plan's (above).
	FallbackClone = "clone"
	// FallbackNone always returns the plan.
	FallbackNone = "none"
)

// PlannerClone is PlanStats.Planner when the fallback returned the clone.
const PlannerClone = "clone"

// fallbackDecision compares the chosen plan with the behaviour's clone on
// part B (see above). planB is the plan's bound under B's model at α_B;
// planIW and cloneIW are their importance-weighted estimates on B, all on
// B's model's [0,1] scale.
func fallbackDecision(planB float64, planIW, cloneIW policy.IWResult) (planBound float64, clone bool) {
	planBound = planB
	if planIW.ESS >= report.MinEpisodesForClaim {
		planBound = math.Max(planBound, planIW.Lower)
	}
	if math.IsNaN(planBound) {
		planBound = math.Inf(-1)
	}
	return planBound, cloneIW.ESS >= report.MinEpisodesForClaim && cloneIW.Lower > planBound
}

// checkFallback measures the fallback's figures for the chosen candidate
// of sel: the clone of train, both policies' importance-weighted estimates
// on held (rescaled with evalB, the model of held), and the plan's bound
// under evalB.
func checkFallback(ctx context.Context, sel *policy.Selection, train, held *ingest.Dataset, evalB *estimate.Model, bonusB *pessimism.Bonus, seed uint64) (*report.Fallback, error) {
	c := sel.Candidates[sel.Chosen]
	clone, err := baseline.BehaviorCloning(ctx, train, baseline.CloneOptions{})
	if err != nil {
		return nil, err
	}
	cloneIW, err := policy.IWEstimate(evalB, clone, held, policy.DefaultZ)
	if err != nil {
		return nil, err
	}
	planIW, err := policy.IWEstimate(evalB, c.Policy, held, policy.DefaultZ)
	if err != nil {
		return nil, err
	}
	rb, err := policy.ValueUnder(ctx, evalB, bonusB, c.Policy, 0, 0, seed)
	if err != nil {
		return nil, err
	}
	alphaB := math.Max(c.Alpha, pessimism.DefaultAlpha)
	planB := rb.Reward - rb.Bonus(alphaB)
	bound, used := fallbackDecision(planB, planIW, cloneIW)
	units := func(v float64) report.Float {
		return report.Float(evalB.ReturnMin + v*(evalB.ReturnMax-evalB.ReturnMin))
	}
	return &report.Fallback{
		Used:           used,
		PlanCrossBound: report.Float(planB), PlanCrossAlpha: report.Float(alphaB),
		PlanIWLower: report.Float(planIW.Lower), PlanESS: report.Float(planIW.ESS),
		PlanBound: report.Float(bound), PlanBoundUnits: units(bound),
		CloneIWValue: report.Float(cloneIW.Mean), CloneIWLower: report.Float(cloneIW.Lower),
		CloneIWLowerUnits: units(cloneIW.Lower), CloneESS: report.Float(cloneIW.ESS),
		HeldOutEpisodes: held.NumEpisodes(),
	}, nil
}

// clonePlan is the fallback's final policy: the clone of all episodes,
// with its figures under the final model and bonus (the value's reward
// and bonus parts), and as the reported bound the clone's held-out
// importance-weighted lower bound fb measured, mapped onto m's scale.
func clonePlan(ctx context.Context, d *ingest.Dataset, m *estimate.Model, bonus *pessimism.Bonus, fb *report.Fallback, seed uint64) (*policy.Policy, *policy.PlanStats, *policy.Value, error) {
	pol, err := baseline.BehaviorCloning(ctx, d, baseline.CloneOptions{AllFirst: true})
	if err != nil {
		return nil, nil, nil, err
	}
	r, err := policy.ValueUnder(ctx, m, bonus, pol, 0, 0, seed)
	if err != nil {
		return nil, nil, nil, err
	}
	// Exact: nothing was planned, so there is no planning gap to state.
	st := &policy.PlanStats{Nodes: int64(len(pol.Nodes)), Exact: true, Planner: PlannerClone, Alpha: bonus.Alpha,
		ValueReward: r.Reward, ValueBonus: r.Bonus(bonus.Alpha)}
	st.Value = st.ValueReward - st.ValueBonus
	lcb := m.RescaleReturn(float64(fb.CloneIWLowerUnits))
	return pol, st, &policy.Value{Reward: st.ValueReward, Bonus: st.ValueReward - lcb, LCB: lcb}, nil
}
