package policy

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
)

// Choosing α by cross-fitting.
//
// The logs are cut in two parts, A and B. For every candidate α, the
// policy π_α = argmax_π V_{θ̂_A,R}^π − V_{θ̂_A,αb̂_A}^π is planned with the
// model and the bonus of part A (Algorithm 2 of Huang, Liang, Yang,
// "Provably Efficient UCB-type Algorithms For Learning Predictive State
// Representations", ICLR 2024, arXiv:2307.00405, Section 5), and valued
// under the model θ̂_B fitted on part B alone, minus B's own bonus at the
// evaluation coefficient α_e:
//
//	crit(α) = V_{θ̂_B,R}^{π_α} − V_{θ̂_B, α_e·b̂_B}^{π_α}.
//
// π_α was chosen on A and θ̂_B never saw A, so its value under θ̂_B carries
// no winner's curse of planning: a candidate whose plan exploits A's
// estimation noise is valued at what independent data say. The criterion
// keeps its power at long horizons and many actions, where the trajectory
// importance weights of a deterministic policy are almost all zero and an
// importance-weighted bound cannot tell candidates apart.
//
// α_e is common to all candidates and 0 by default (the criterion is then
// the cross-fitted value). A positive common α_e is not neutral: when A and
// B are alike, V_B − α_e·b̂_B is nearly the objective the candidate α = α_e
// maximised, so that candidate wins by construction (measured: α_e = 1
// chose α = 1 on every hallway run, at twice the regret of α = 0.03). The
// candidate's cross-fitted lower bound at its own α, V_B − α·b̂_B, is
// recorded for each candidate (it is not the criterion: it favours the
// smallest α by its construction).
//
// The final plan is made with the bonus of all K episodes, A's with that
// of |A| < K, and the bonus shrinks as the episodes grow (PlanScale). So
// the candidate α is planned on A with A's bonus at α·PlanScale(|A|, K):
// the bonus it will carry in the final plan. Planned at α itself, a
// candidate near saturation on A (planning bonus 0.86 of its cap, so
// nearly the greedy plan) won, and the final plan at the same α, with a
// bonus 1.4 times smaller and no longer near its cap, traded reward for
// coverage and lost 18% of the gap to the optimum (docs/stress.md).
//
// A candidate is saturated when its planning bonus V_{θ̂_A,αb̂_A}^{π_α} is
// within 10% of the bonus cap 1: the bonus then no longer ranks policies
// (it is 1 nearly everywhere, and the plan is the greedy one). Saturated
// candidates are never chosen unless every candidate is saturated (then the
// smallest α is). Among the others the largest criterion wins; exact ties
// (candidates with the same plan) go to the larger α, whose reported bound
// is the more cautious. Since the criterion of every α, α = 0 included, is
// measured on data its plan was not fitted on, α = 0 wins only on held-out
// evidence.

// SelectCriterion states how Select chooses among the candidate α.
const SelectCriterion = "cross-fitted value: each α's policy is planned on one part of the episodes (with that part's bonus rescaled to the size it has on all episodes) and valued under the model fitted on the other part (minus that model's bonus at a common α_e, 0 by default); saturated candidates (planning bonus ≥ 0.9 of its cap) are excluded; exact ties go to the larger α"

// SaturatedBonus: a candidate whose planning bonus value is at least this
// (the cap is 1) is saturated.
const SaturatedBonus = 0.9

// SelectRowBudget caps the policy table of each belief-planned candidate
// (PlanOptions.RowBudget): a candidate is only scored on held-out episodes,
// and its histories beyond the table play the fallback, which the
// held-out estimate scores like any other action. Ten times fewer rows
// than a full plan keep the α sweep to a fraction of the final plan's
// cost.
const SelectRowBudget = 1_000_000

// SelectOptions configure Select. The zero value means the defaults.
type SelectOptions struct {
	Plan PlanOptions
	// Z is the normal quantile of the held-out interval (default DefaultZ).
	Z float64
	// EvalAlpha is α_e (default 0: the criterion is the cross-fitted
	// value).
	EvalAlpha float64
	// MaxLeaves and Rollouts configure ValueUnder (0: defaults).
	MaxLeaves, Rollouts int
	// Seed seeds the rollouts (the same draws for every candidate).
	Seed uint64
	// PlanScale multiplies each candidate's α when planning with the
	// planning bonus (0 means 1): the bonus the final plan carries at α
	// (see PlanScale, the function).
	PlanScale float64
}

// CrossFit are a candidate's figures under the evaluation model θ̂_B.
type CrossFit struct {
	Reward float64 `json:"cross_value_reward"` // V_{θ̂_B,R}^{π_α}
	Bonus  float64 `json:"cross_value_bonus"`  // V_{θ̂_B,α b̂_B}^{π_α}, at the candidate's α
	LCB    float64 `json:"cross_lcb"`          // Reward − Bonus
	// Criterion is Reward − V_{θ̂_B,α_e b̂_B}^{π_α}, what Select compares.
	Criterion float64 `json:"criterion"`
	StdErr    float64 `json:"cross_stderr"` // Monte Carlo SE of Criterion (0 when exact)
	Exact     bool    `json:"cross_exact"`
}

// Candidate is one α of a selection with its figures.
type Candidate struct {
	Alpha float64 `json:"alpha"`
	// Model values of the candidate's plan under the planning model θ̂_A:
	// V_{θ̂,R}, V_{θ̂,b̂}, LCB (the planner's figures; exact when
	// Plan.Exact).
	Model Value `json:"model"`
	// Cross is the criterion's figures under the evaluation model.
	Cross CrossFit `json:"cross"`
	// Saturated: the planning bonus is at its cap (see SaturatedBonus).
	Saturated bool `json:"saturated"`
	// HeldOut is the importance-weighted estimate on the evaluation
	// episodes, with interval and effective sample size (recorded, not
	// the criterion).
	HeldOut IWResult  `json:"held_out"`
	Plan    PlanStats `json:"plan"`
	Chosen  bool      `json:"chosen"`
	// Policy is the candidate's plan. A caller holding large tables may
	// drop the unchosen candidates' plans once it has their figures
	// (CInf).
	Policy *Policy `json:"-"`
	// CInf is the plan's coverage C∞ on the logs, when the caller
	// computed it before dropping Policy (NaN when not computed).
	CInf float64 `json:"-"`
}

// Selection is the result of Select.
type Selection struct {
	Candidates []Candidate
	Chosen     int // index into Candidates
	Criterion  string
	// EvalAlpha is the α_e of the criterion.
	EvalAlpha float64
	// Reason says in words why the chosen α won.
	Reason string
}

// Policy is the chosen candidate's policy.
func (s *Selection) Policy() *Policy { return s.Candidates[s.Chosen].Policy }

// Alpha is the chosen α.
func (s *Selection) Alpha() float64 { return s.Candidates[s.Chosen].Alpha }

// Select plans one policy per α in alphas with the planning model m and
// bonus (built on part A of the logs), values each under the evaluation
// model em with its bonus eb (built on part B, the episodes heldOut), and
// chooses one by the cross-fitted lower bound (see above). heldOut needs
// propensities (logged or estimated) for the recorded importance-weighted
// figures. Every candidate's figures are kept for the report.
func Select(ctx context.Context, m *estimate.Model, bonus *pessimism.Bonus, em *estimate.Model, eb *pessimism.Bonus, heldOut *ingest.Dataset, alphas []float64, opts SelectOptions) (*Selection, error) {
	if err := checkSelectInputs(em, eb, heldOut, alphas); err != nil {
		return nil, err
	}
	sr := &selector{m: m, bonus: bonus, em: em, eb: eb, heldOut: heldOut, opts: opts}
	if err := sr.setAlphas(); err != nil {
		return nil, err
	}
	sel := &Selection{Criterion: SelectCriterion, Chosen: -1, EvalAlpha: sr.ae}
	var err error
	if sel.Candidates, err = sr.candidates(ctx, alphas); err != nil {
		return nil, err
	}
	sel.pick()
	return sel, nil
}

// pick marks the chosen candidate (choose) and states the reason.
func (s *Selection) pick() {
	s.Chosen = choose(s.Candidates)
	s.Candidates[s.Chosen].Chosen = true
	s.Reason = reason(s)
}

// checkSelectInputs checks that there are candidates, held-out
// episodes and a model with its bonus fitted on them.
func checkSelectInputs(em *estimate.Model, eb *pessimism.Bonus, heldOut *ingest.Dataset, alphas []float64) error {
	if len(alphas) == 0 {
		return fmt.Errorf("%w: no candidate alpha", ErrOptions)
	}
	if heldOut == nil || heldOut.NumEpisodes() == 0 {
		return fmt.Errorf("%w: choosing alpha needs held-out episodes", ErrData)
	}
	if em == nil || eb == nil {
		return fmt.Errorf("%w: choosing alpha needs a model fitted on the held-out episodes", ErrModel)
	}
	return nil
}

// candidates plans and values the candidate of each α in alphas, in
// order.
func (sr *selector) candidates(ctx context.Context, alphas []float64) ([]Candidate, error) {
	var cs []Candidate
	for _, a := range alphas {
		c, err := sr.candidate(ctx, a)
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// selector holds Select's models, bonuses, held-out episodes and
// options, with the evaluation α_e and the plan scale.
type selector struct {
	m, em     *estimate.Model
	bonus, eb *pessimism.Bonus
	heldOut   *ingest.Dataset
	opts      SelectOptions
	ae, scale float64
}

// setAlphas checks and sets the evaluation α_e and the plan scale (0
// means 1) of the options.
func (sr *selector) setAlphas() error {
	sr.ae = sr.opts.EvalAlpha
	if !(sr.ae >= 0) || math.IsInf(sr.ae, 0) {
		return fmt.Errorf("%w: evaluation alpha %v", ErrOptions, sr.ae)
	}
	sr.scale = cmp.Or(sr.opts.PlanScale, 1)
	if !(sr.scale > 0) || math.IsInf(sr.scale, 0) {
		return fmt.Errorf("%w: plan scale %v", ErrOptions, sr.scale)
	}
	return nil
}

// candidate plans the policy of α = a with the planning model and its
// bonus at a·scale (within SelectRowBudget rows), and returns it with its
// held-out and cross-fitted figures.
func (sr *selector) candidate(ctx context.Context, a float64) (Candidate, error) {
	if !(a >= 0) || math.IsInf(a, 0) {
		return Candidate{}, fmt.Errorf("%w: alpha %v", ErrOptions, a)
	}
	pol, st, err := Plan(ctx, sr.m, sr.bonus.WithAlpha(a*sr.scale), sr.planOptions())
	if err != nil {
		return Candidate{}, err
	}
	iw, ro, err := sr.evaluate(ctx, pol)
	if err != nil {
		return Candidate{}, err
	}
	return Candidate{Alpha: a,
		Model: Value{Reward: st.ValueReward, Bonus: st.ValueBonus, LCB: st.Value},
		Cross: crossFit(ro, a, sr.ae), Saturated: st.ValueBonus >= SaturatedBonus, HeldOut: iw, Plan: *st, Policy: pol, CInf: math.NaN()}, nil
}

// evaluate values the candidate policy pol on the held-out logs
// (IWEstimate) and under the evaluation model (ValueUnder).
func (sr *selector) evaluate(ctx context.Context, pol *Policy) (IWResult, *Rollout, error) {
	iw, err := IWEstimate(sr.m, pol, sr.heldOut, sr.opts.Z)
	if err != nil {
		return IWResult{}, nil, err
	}
	ro, err := ValueUnder(ctx, sr.em, sr.eb, pol, sr.opts.MaxLeaves, sr.opts.Rollouts, sr.opts.Seed)
	if err != nil {
		return IWResult{}, nil, err
	}
	return iw, ro, nil
}

// planOptions are the candidates' plan options: the options' Plan with
// the row budget capped at SelectRowBudget.
func (sr *selector) planOptions() PlanOptions {
	po := sr.opts.Plan
	if po.RowBudget <= 0 || po.RowBudget > SelectRowBudget {
		po.RowBudget = SelectRowBudget
	}
	return po
}

// crossFit is the cross-fitted figures of a candidate α = a valued by
// ro, with the criterion at α_e = ae.
func crossFit(ro *Rollout, a, ae float64) CrossFit {
	cf := CrossFit{Reward: ro.Reward, Bonus: ro.Bonus(a), Criterion: ro.Reward - ro.Bonus(ae),
		StdErr: ro.LCBStdErr(ae), Exact: ro.Exact}
	cf.LCB = cf.Reward - cf.Bonus
	return cf
}

// choose returns the index of the winning candidate: the largest
// criterion among the unsaturated ones, exact ties to the larger α; the
// smallest α when all are saturated.
func choose(cs []Candidate) int {
	if best := bestUnsaturated(cs); best >= 0 {
		return best
	}
	best := 0
	for i, c := range cs {
		if c.Alpha < cs[best].Alpha {
			best = i
		}
	}
	return best
}

// bestUnsaturated is the index of the largest criterion among the
// unsaturated candidates, exact ties to the larger α; −1 when all are
// saturated.
func bestUnsaturated(cs []Candidate) int {
	best := -1
	for i, c := range cs {
		if c.Saturated {
			continue
		}
		if best < 0 || c.Cross.Criterion > cs[best].Cross.Criterion ||
			(c.Cross.Criterion == cs[best].Cross.Criterion && c.Alpha > cs[best].Alpha) {
			best = i
		}
	}
	return best
}

// reason is the sentence of the report that says why the chosen α won.
func reason(s *Selection) string {
	c := s.Candidates[s.Chosen]
	sat := saturatedAlphas(s.Candidates)
	var b strings.Builder
	if len(sat) == len(s.Candidates) {
		fmt.Fprintf(&b, "Every candidate α saturated the bonus (planning bonus ≥ %.2g of its cap), so none could rank policies by coverage; α = %g, the smallest, was kept, and the logs are too few for the bonus to tell policies apart.", SaturatedBonus, c.Alpha)
		return b.String()
	}
	chosenReason(&b, s, c)
	runnerUpReason(&b, s, c)
	caveatReasons(&b, sat, c)
	return b.String()
}

// caveatReasons appends the reason's caveats: the saturated α sat that
// were excluded, and a held-out estimate of the chosen candidate c too
// small to choose by.
func caveatReasons(b *strings.Builder, sat []string, c Candidate) {
	if len(sat) > 0 {
		fmt.Fprintf(b, " α = %s saturated the bonus (planning bonus ≥ %.2g of its cap, where it no longer ranks policies) and were excluded.", strings.Join(sat, ", "), SaturatedBonus)
	}
	if c.HeldOut.ESS < 10 {
		fmt.Fprintf(b, " The importance-weighted estimate on the held-out part has effective sample size %.3g, too small to choose by.", c.HeldOut.ESS)
	}
}

// saturatedAlphas lists the α of the saturated candidates.
func saturatedAlphas(cs []Candidate) []string {
	var sat []string
	for _, x := range cs {
		if x.Saturated {
			sat = append(sat, fmt.Sprintf("%g", x.Alpha))
		}
	}
	return sat
}

// chosenReason writes the sentence that says what the chosen candidate c
// scored.
func chosenReason(b *strings.Builder, s *Selection, c Candidate) {
	if s.EvalAlpha == 0 {
		fmt.Fprintf(b, "α = %g was chosen because its policy, planned with the model of one half of the episodes, has the largest value (%.4g on the [0,1] scale) under the model fitted on the other half", c.Alpha, c.Cross.Criterion)
	} else {
		fmt.Fprintf(b, "α = %g was chosen because its policy, planned with the model of one half of the episodes, has the largest cross-fitted bound under the model fitted on the other half: value %.3g − bonus at α_e = %g gives %.4g", c.Alpha, c.Cross.Reward, s.EvalAlpha, c.Cross.Criterion)
	}
	if c.Cross.StdErr > 0 {
		fmt.Fprintf(b, " (Monte Carlo SE %.2g)", c.Cross.StdErr)
	}
	b.WriteString(".")
}

// runnerUpReason writes the sentence on the runner-up among the
// unsaturated candidates, if any: a tie with the chosen c, or its score.
func runnerUpReason(b *strings.Builder, s *Selection, c Candidate) {
	// Runner-up among the unsaturated with a different figure.
	ri := runnerUp(s)
	if ri < 0 {
		return
	}
	r := s.Candidates[ri]
	if r.Cross.Criterion == c.Cross.Criterion {
		fmt.Fprintf(b, " α = %g planned a policy of the same value; the larger α is kept, its reported bound being the more cautious.", r.Alpha)
	} else {
		fmt.Fprintf(b, " The next best, α = %g, scored %.4g.", r.Alpha, r.Cross.Criterion)
	}
}

// runnerUp is the index of the unsaturated candidate other than the
// chosen one with the largest criterion (the first of equal ones), −1
// when there is none.
func runnerUp(s *Selection) int {
	idx := unsaturatedOthers(s)
	sort.SliceStable(idx, func(i, j int) bool {
		return s.Candidates[idx[i]].Cross.Criterion > s.Candidates[idx[j]].Cross.Criterion
	})
	if len(idx) == 0 {
		return -1
	}
	return idx[0]
}

// unsaturatedOthers lists the unsaturated candidates other than the
// chosen one, in order.
func unsaturatedOthers(s *Selection) []int {
	idx := make([]int, 0, len(s.Candidates))
	for i, x := range s.Candidates {
		if i != s.Chosen && !x.Saturated {
			idx = append(idx, i)
		}
	}
	return idx
}

// PlanScale is the factor that gives a bonus built on part episodes the
// size the same α has on a bonus built on all episodes: U_h sums the
// features of the episodes of D_h (Huang, Liang, Yang, arXiv:2307.00405,
// Algorithm 2), so it grows linearly with the episodes, each
// ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} shrinks as their inverse, and b̂ = α·sqrt(Σ_h …)
// as the inverse square root. A candidate planned with the part's bonus
// at α·PlanScale is planned with the bonus the final plan will carry at
// α; without it, the selection compares plans of a bonus sqrt(all/part)
// times larger than the one the chosen α is used with.
func PlanScale(part, all int) float64 {
	if part <= 0 || all <= 0 {
		return 1
	}
	return math.Sqrt(float64(part) / float64(all))
}
