package pipeline

import (
	"context"
	"fmt"
	"math"
	"slices"

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
// The fallback adds to the cross-fitted selection the policies that keep
// to the logged actions, fitted on part A (baseline.BehaviorCloning): the
// behaviour's clone (the action logged most often at each history) and
// the improved clone (the same, except where the logs show another logged
// action with a larger mean return-to-go, the behaviour acting after it:
// one step of policy iteration from the behaviour). A deterministic clone
// of a behaviour that mixes its actions can be worth less than the
// behaviour itself, when the rarer action is the better one; by the
// policy improvement theorem the improved clone is not, wherever the logs
// tell the actions apart. It is left out when it equals the clone. The
// third candidate is the improved behaviour (baseline.CloneOptions.Mix):
// the behaviour's own action distribution at each history (its logged
// propensities, renormalised over the logged actions), except where the
// logs show one logged action better than the behaviour's other choices
// there, which it then takes alone, and without a logged action the logs
// show worse than them. It is a stochastic policy (policy.Policy.Probs),
// and the one of the three the policy improvement theorem puts at or
// above the behaviour whatever the behaviour's most logged action is
// worth, up to what the logs never show (an action never logged at a
// history, an observation never logged after an action; on 4x3 at
// K = 10³ that left it 0.3% of V* − V^b below the behaviour): a
// deterministic clone can lose to the behaviour wherever the behaviour's
// rarer action is the better one and the logs cannot yet tell. The plan
// and the clone are scored on part B, which neither was made from:
//
//	L(π_c) = the importance-weighted 95% lower bound of V^{π_c} on B,
//	S(π_α) = V_{θ̂_B,R}^{π_α} − V_{θ̂_B,α_B b̂_B}^{π_α}, or its importance-weighted upper bound on B if larger,
//
// with α_B = max(α, pessimism.DefaultAlpha): the plan's bound under the
// model that did not make it, at the α the reported lower bound is
// corrected to (LCBCorrectionCrossFit). The plan is set aside when
// L(π_c) > S(π_α). An importance-weighted figure counts only with an
// effective sample size of at least policy.MinClaimESS: below it
// the normal interval is too narrow to trust. So when the logs can check
// the plan, the clone must be shown better than the plan; when they
// cannot, its proven value must beat the plan's bound. The final policy is
// then the improved behaviour fitted on all episodes when its own
// held-out bound counts and the held-out episodes do not estimate the
// deterministic stand-in (the improved clone when its bound counts, the
// clone otherwise) worth more, that stand-in otherwise (StandIn), with the
// returned policy's bound as the reported one.
//
// The improved clone and the improved behaviour stand in for the behaviour
// once the plan is set aside, but do not decide whether it is: its
// departures are where the logs are thinnest, and at an effective sample
// size of a few dozen its normal interval is optimistic. Letting it
// compete with the plan returned it over the optimal plan on the README's
// tiger logs (uniform behaviour: its held-out lower bound beat the plan's,
// and a worse policy was returned). On generated problems with narrow logs
// the clone was sometimes worse than the behaviour and the improved clone
// never (docs/stress.md, "The behaviour's clone and its improved clone",
// has the measured figures of both).
//
// When the behaviour is narrow, most logged episodes follow its clone, so
// L(π_c) is tight, and a plan that departs from the logged actions has to
// be shown better by B's model at the default confidence. When the
// behaviour spreads its actions (uniform logs), every deterministic policy
// is followed by equally few episodes, and the clone's bound is weak or
// absent.
//
// Scoring the plan at its own α instead (the objective it maximised) kept
// more good plans on narrow logs but let plans the model overvalued
// through: on generated problems with narrow logs, more ended worse than
// the behaviour than with α_B (docs/validation.md, "Narrow logs", has the
// comparison).

// Values of Options.Fallback.
const (
	// FallbackBehavior: with α chosen among candidates, return the
	// behaviour's clone or improved clone when its held-out lower bound
	// beats the plan's (above).
	FallbackBehavior = "behavior"
	// FallbackNone always returns the plan.
	FallbackNone = "none"
)

// Names of the fallback's candidates, PlanStats.Planner when the
// fallback returned one.
const (
	// PlannerClone: the behaviour's clone.
	PlannerClone = "clone"
	// PlannerImprovedClone: the clone improved where the logs show a
	// better logged action.
	PlannerImprovedClone = "improved_clone"
	// PlannerImprovedBehavior: the behaviour's own estimated action
	// distribution, improved where the logs show a logged action better
	// than the behaviour's other choices (a stochastic policy;
	// baseline.CloneOptions.Mix).
	PlannerImprovedBehavior = "improved_behavior"
)

// cloneOptions are the options of the fallback's candidate name, with a
// step-1 row for every observation, so that a model can value it.
func cloneOptions(name string) baseline.CloneOptions {
	return baseline.CloneOptions{AllFirst: true, Improve: name == PlannerImprovedClone, Mix: name == PlannerImprovedBehavior}
}

// fitClone is the fallback's candidate name fitted on d.
func fitClone(ctx context.Context, d *ingest.Dataset, name string) (*policy.Policy, error) {
	return baseline.BehaviorCloning(ctx, d, cloneOptions(name))
}

// candidateNames are the fallback's candidates, the clone first.
var candidateNames = []string{PlannerClone, PlannerImprovedClone, PlannerImprovedBehavior}

// FitCandidates fits the fallback's candidates on d (one history tree for
// all): the clone, then the improved clone and the improved behaviour,
// each unless it is a policy already listed.
func FitCandidates(ctx context.Context, d *ingest.Dataset) (names []string, pols []*policy.Policy, err error) {
	opts := make([]baseline.CloneOptions, len(candidateNames))
	for i, n := range candidateNames {
		opts[i] = cloneOptions(n)
	}
	all, err := baseline.BehaviorClonings(ctx, d, opts...)
	if err != nil {
		return nil, nil, err
	}
	for i, p := range all {
		if slices.ContainsFunc(pols, func(q *policy.Policy) bool { return sameActions(q, p) }) {
			continue
		}
		names, pols = append(names, candidateNames[i]), append(pols, p)
	}
	return names, pols, nil
}

// sameActions says whether two clones of one dataset take the same
// actions with the same probabilities at every row (then they are the
// same policy, row for row).
func sameActions(a, b *policy.Policy) bool {
	if len(a.Nodes) != len(b.Nodes) || a.Stochastic() != b.Stochastic() || !slices.Equal(a.Probs, b.Probs) {
		return false
	}
	for i := range a.Nodes {
		if a.Nodes[i].Action != b.Nodes[i].Action || a.Nodes[i].Obs != b.Nodes[i].Obs || a.Nodes[i].Parent != b.Nodes[i].Parent {
			return false
		}
	}
	return true
}

// fallbackDecision compares the chosen plan with the candidates that keep
// to the logged actions, on part B (see above). planB is the plan's bound under B's model at α_B;
// planIW and cands are the importance-weighted estimates on B, all on B's
// model's [0,1] scale. It returns the figure a candidate must beat (the
// plan's score), each candidate's bound (−Inf when its effective sample
// size is too small) and the index of the winning candidate, −1 for the
// plan. Ties keep the plan, then the earlier candidate.
//
// When enough held-out episodes follow the plan for its importance-weighted
// estimate to count, a candidate must beat the plan's importance-weighted
// upper bound: the logs must show the candidate better than the plan, not
// only a higher lower bound, which two estimates of equal precision differ
// by noise alone (on 1d.noisy with uniform logs, comparing lower bounds
// returned a clone worth less than the plan; docs/validation.md, "Narrow
// logs").
func fallbackDecision(planB float64, planIW policy.IWResult, cands []policy.IWResult) (planScore float64, bounds []float64, win int) {
	planScore = planB
	if math.IsNaN(planScore) {
		planScore = math.Inf(-1)
	}
	if counts(planIW) && !math.IsNaN(planIW.Upper) {
		planScore = math.Max(planScore, planIW.Upper)
	}
	win, best := -1, planScore
	for i, c := range cands {
		b := CandidateBound(c)
		bounds = append(bounds, b)
		if b > best {
			win, best = i, b
		}
	}
	return planScore, bounds, win
}

// StandIn is the candidate returned once the clone has set the plan
// aside. Of the deterministic candidates, the improved clone when it was
// scored (it differs from the clone) and its bound counts, the clone
// otherwise (DeterministicStandIn). The improved behaviour replaces it
// when its own bound counts and the held-out episodes do not estimate the
// deterministic one worth more: diff, the paired importance-weighted
// estimate of V(deterministic) − V(improved behaviour) on the same
// episodes (PairedDiff), is not positive. Both keep to the logged
// actions and their bounds count; the paired difference compares them on
// the episodes each one's weights come from, so its noise is far below
// that of either estimate (on narrow tiger logs the improved behaviour's
// interval was the tighter, its lower bound above the clone's, while the
// clone, always listening, is worth 0.9 more). The improved behaviour
// keeps the behaviour's mix wherever the logs show no better action, so
// it is not worse than the behaviour, where a deterministic clone of a
// behaviour that mixes can be when its rarer action is the better one.
func StandIn(names []string, bounds []float64, diff float64) string {
	det := DeterministicStandIn(names, bounds)
	if i := slices.Index(names, PlannerImprovedBehavior); i >= 0 && !math.IsInf(bounds[i], -1) && !(diff > 0) {
		return PlannerImprovedBehavior
	}
	return det
}

// DeterministicStandIn is the deterministic candidate StandIn weighs
// against the improved behaviour: the improved clone when it was scored
// and its bound counts, the clone otherwise.
func DeterministicStandIn(names []string, bounds []float64) string {
	for i, n := range names {
		if n == PlannerImprovedClone && !math.IsInf(bounds[i], -1) {
			return n
		}
	}
	return PlannerClone
}

// PairedDiff is the importance-weighted estimate of V(a) − V(b) on the
// episodes d, paired: the mean over the episodes of (w_a − w_b)·R, R the
// return rescaled by m (policy.Weights). NaN without episodes.
func PairedDiff(m *estimate.Model, a, b *policy.Policy, d *ingest.Dataset) (float64, error) {
	wa, err := policy.Weights(a, d)
	if err != nil {
		return 0, err
	}
	wb, err := policy.Weights(b, d)
	if err != nil {
		return 0, err
	}
	sum := 0.0
	for k := range wa {
		sum += (wa[k] - wb[k]) * m.RescaleReturn(d.Return(k))
	}
	return sum / float64(len(wa)), nil
}

// counts says whether an importance-weighted figure counts: an effective
// sample size of at least policy.MinClaimESS.
func counts(r policy.IWResult) bool {
	return r.ESS >= policy.MinClaimESS && !math.IsNaN(r.Lower)
}

// CandidateBound is a candidate's bound: its importance-weighted lower bound when
// it counts, −Inf otherwise.
func CandidateBound(r policy.IWResult) float64 {
	if counts(r) {
		return r.Lower
	}
	return math.Inf(-1)
}

// checkFallback measures the fallback's figures for the chosen candidate
// of sel, whose bound under evalB (the model of held) at α_B is planB: the
// clone fitted on train, and both policies' importance-weighted estimates
// on held, rescaled with evalB.
func checkFallback(ctx context.Context, sel *policy.Selection, planB float64, train, held *ingest.Dataset, evalB *estimate.Model) (*report.Fallback, error) {
	c := sel.Candidates[sel.Chosen]
	cs, err := ScoreCandidates(ctx, train, held, evalB)
	if err != nil {
		return nil, err
	}
	planIW, err := policy.IWEstimate(evalB, c.Policy, held, policy.DefaultZ)
	if err != nil {
		return nil, err
	}
	// The clone decides whether the plan is set aside (see above).
	score, _, win := fallbackDecision(planB, planIW, cs.IWs[:1])
	units := func(v float64) report.Float {
		return report.Float(evalB.ReturnUnits(v))
	}
	fb := &report.Fallback{Chosen: "plan",
		PlanCrossBound: report.Float(planB), PlanCrossAlpha: report.Float(math.Max(c.Alpha, pessimism.DefaultAlpha)),
		PlanIWLower: report.Float(planIW.Lower), PlanIWUpper: report.Float(planIW.Upper), PlanESS: report.Float(planIW.ESS),
		PlanBound: report.Float(score), PlanBoundUnits: units(score),
		HeldOutEpisodes: held.NumEpisodes(),
		Candidates:      fallbackRows(cs.Names, cs.IWs, cs.Bounds, units),
	}
	if win >= 0 {
		chosen, diff, err := cs.Returned(evalB, held)
		if err != nil {
			return nil, err
		}
		fb.Used, fb.Chosen = true, chosen
		if !math.IsNaN(diff) {
			fb.StandInDiff = report.Float(diff)
		}
	}
	return fb, nil
}

// Candidates are the fallback's candidates fitted on part A, with their
// importance-weighted estimates on part B (rescaled by B's model) and
// the bounds the fallback compares (CandidateBound).
type Candidates struct {
	Names  []string
	Pols   []*policy.Policy
	IWs    []policy.IWResult
	Bounds []float64
}

// ScoreCandidates fits the fallback's candidates on train
// (FitCandidates) and scores them on held, returns rescaled by m.
func ScoreCandidates(ctx context.Context, train, held *ingest.Dataset, m *estimate.Model) (*Candidates, error) {
	names, pols, err := FitCandidates(ctx, train)
	if err != nil {
		return nil, err
	}
	cs := &Candidates{Names: names, Pols: pols, IWs: make([]policy.IWResult, len(pols)), Bounds: make([]float64, len(pols))}
	for i, p := range pols {
		if cs.IWs[i], err = policy.IWEstimate(m, p, held, policy.DefaultZ); err != nil {
			return nil, err
		}
		cs.Bounds[i] = CandidateBound(cs.IWs[i])
	}
	return cs, nil
}

// Returned is the candidate the fallback returns once the plan is set
// aside (StandIn) and the paired difference on held it rests on, NaN when
// the improved behaviour was not scored.
func (cs *Candidates) Returned(m *estimate.Model, held *ingest.Dataset) (string, float64, error) {
	diff := math.NaN()
	if i := slices.Index(cs.Names, PlannerImprovedBehavior); i >= 0 {
		det := cs.Pols[slices.Index(cs.Names, DeterministicStandIn(cs.Names, cs.Bounds))]
		var err error
		if diff, err = PairedDiff(m, det, cs.Pols[i], held); err != nil {
			return "", 0, err
		}
	}
	return StandIn(cs.Names, cs.Bounds, diff), diff, nil
}

// fallbackRows are the manifest's rows of the behaviour's clones: each
// one's held-out estimate and the bound the fallback compares.
func fallbackRows(names []string, iws []policy.IWResult, bounds []float64, units func(float64) report.Float) []report.FallbackCandidate {
	var rows []report.FallbackCandidate
	for i, iw := range iws {
		rows = append(rows, report.FallbackCandidate{Name: names[i],
			IWValue: report.Float(iw.Mean), IWLower: report.Float(iw.Lower), IWLowerUnits: units(iw.Lower),
			ESS: report.Float(iw.ESS), Bound: report.Float(bounds[i])})
	}
	return rows
}

// clonePlan is the fallback's final policy: the chosen candidate fitted
// on all episodes, with its figures under the final model and bonus (the
// value's reward and bonus parts), and as the reported bound the
// held-out importance-weighted lower bound fb measured, mapped onto m's
// scale.
func clonePlan(ctx context.Context, d *ingest.Dataset, m *estimate.Model, bonus *pessimism.Bonus, fb *report.Fallback, seed uint64) (*policy.Policy, *policy.PlanStats, *policy.Value, error) {
	x := fb.ChosenCandidate()
	if x == nil {
		return nil, nil, nil, fmt.Errorf("%w: no fallback policy chosen", ErrOptions)
	}
	pol, err := fitClone(ctx, d, x.Name)
	if err != nil {
		return nil, nil, nil, err
	}
	r, err := policy.ValueUnder(ctx, m, bonus, pol, 0, 0, seed)
	if err != nil {
		return nil, nil, nil, err
	}
	// Exact: nothing was planned with the model, so there is no planning
	// gap to state.
	st := &policy.PlanStats{Nodes: int64(len(pol.Nodes)), Exact: true, Planner: x.Name, Alpha: bonus.Alpha,
		ValueReward: r.Reward, ValueBonus: r.Bonus(bonus.Alpha)}
	st.Value = st.ValueReward - st.ValueBonus
	lcb := m.RescaleReturn(float64(x.IWLowerUnits))
	return pol, st, &policy.Value{Reward: st.ValueReward, Bonus: st.ValueReward - lcb, LCB: lcb}, nil
}
