package policy

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/psrlcb/psrlcb/errkind"
	"github.com/psrlcb/psrlcb/internal/parallel"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
)

// Sentinel errors of the policy stage.
var (
	// ErrOptions is returned for option values out of range.
	ErrOptions = errkind.New(errkind.Options, "policy: invalid options")
	// ErrModel is returned when the model and the bonus do not fit
	// together or the model has no valid action.
	ErrModel = errkind.New(errkind.Data, "policy: invalid model")
	// ErrData is returned for logs the policy cannot be evaluated on.
	ErrData = errkind.New(errkind.Data, "policy: invalid data")
)

// DefaultBudget is the default node budget of Plan: a tree of this size is
// planned in seconds on two cores (BenchmarkPlan gives the rate on the
// machine at hand), and the exact planner keeps only the chosen branches,
// so memory stays small.
const DefaultBudget = 50_000_000

// DefaultSearchBudget is the default node budget of the approximate
// search. A node there costs about a hundred exact nodes (every pruned
// child is priced by a stand-in for each fallback action, O(S²) each;
// BenchmarkPlanApprox against BenchmarkPlan), so this budget also takes
// seconds; on a 10⁵-episode fit at |O| = 8, |A| = 4, S = 8 a budget five
// times larger narrowed the stated gap by less than a tenth for four times
// the time.
const DefaultSearchBudget = 1_000_000

// wideObs: past this many observations the approximate search is sized
// by the work of its nodes rather than their number. A node there
// enumerates |A|·|O| children (a belief update each), so its search
// budget is DefaultSearchBudget·wideRefChildren/(|A|·|O|) nodes, and a
// node whose children are all below ε prices them at once (standInAt).
// 256 keeps every benchmark POMDP (at most a few dozen observations) on
// the search as measured; logs with thousands of observations plan in
// bounded time until the belief-space planner replaces this search.
var wideObs = 256

// wideRefChildren is |A|·|O| of the size DefaultSearchBudget was measured
// at (|O| = 8, |A| = 4).
const wideRefChildren = 32

// frontierTasks is the least number of subtrees the exact search is cut
// into for the workers; fixed (not derived from the worker count) so the
// work split, like the result, is the same for every worker count.
const frontierTasks = 64

// PlanOptions configure Plan. The zero value means the documented
// defaults.
type PlanOptions struct {
	// Workers bounds the goroutines (default GOMAXPROCS). The policy does
	// not depend on it.
	Workers int
	// Budget is the largest history tree searched exactly, in nodes
	// (decision points (τ_{h−1}, o_h)); default DefaultBudget. Larger
	// trees are searched with pruning (see Plan).
	Budget int64
	// SearchBudget bounds the nodes of the approximate search; default
	// min(Budget, DefaultSearchBudget), scaled down by the work per node
	// past wideObs observations.
	SearchBudget int64
	// Planner is PlannerExact, PlannerBelief or PlannerAuto (the default,
	// also for ""): exact when the history tree fits Budget, belief
	// otherwise. PlannerExact beyond the budget runs the pruned search.
	Planner string
	// Points is the number of belief points per step of the belief
	// planner (default DefaultPoints).
	Points int
	// TightBound: the belief planner's upper bound spends more, for a
	// smaller stated gap: its sawtooth takes every belief point of the
	// plan (not the first boundPoints), and the exact value iteration of
	// its relaxed problem is tried (exactRelaxedBound), at up to half a
	// second when the vector sets grow too large. fit sets it for its
	// final plan, whose gap it states, not for the α selection's.
	TightBound bool
	// HullBound: with TightBound, the upper bound interpolates between
	// its points by their convex hull, one small linear program per
	// successor belief, instead of the sawtooth's one point at a time
	// (hullbound.go): a smaller stated gap for several times the
	// bound's cost. fit sets it with --hull-bound.
	HullBound bool
	// SearchAbove: under PlannerAuto, when the belief planner's stated
	// gap is above it, the exact planner's pruned search plans the model
	// too, and its policy is kept when it is certainly the better one
	// (searchInstead). 0 never searches; fit sets TargetGap for every
	// plan, the α selection's included, so that α is chosen among the
	// policies the fit may return.
	SearchAbove float64
	// RowBudget bounds the rows of the belief planner's policy table
	// (default DefaultRowBudget).
	RowBudget int64
	// BoundMemory bounds the bytes the upper bound exact over the first
	// steps may hold while it deepens (docs/planning.md, "Deepened where
	// the bound's plan goes"): default, and at most, DefaultBoundMemory.
	// fit lowers it under --memory-limit.
	BoundMemory int64
	// Objective is what the plan maximises: ObjectiveLCB (the default,
	// also "") is E_θ̂,π[R − b̂], the output policy of Algorithm 2;
	// ObjectiveBonus is E_θ̂,π[b̂], the exploration policy π^k of
	// Algorithm 1, line 9 (package explore). The bonus objective is
	// planned by the exact search only: a history tree larger than Budget
	// is an ErrModel error.
	Objective string
}

// The objectives of PlanOptions.Objective.
const (
	ObjectiveLCB   = "lcb"
	ObjectiveBonus = "bonus"
)

// PlanStats describes a planning run.
type PlanStats struct {
	// Exact is true when the whole history tree was searched; then the
	// policy maximises E_θ̂,π[R − b̂] exactly.
	Exact bool
	// TreeNodes bounds the number of nodes of the full history tree
	// (Σ_h |O|^h |A|^{h−1}, fewer with the end symbol).
	TreeNodes float64
	// Nodes is the number of nodes searched.
	Nodes int64
	// Epsilon is the pruning threshold of the approximate search (0 when
	// exact): nodes whose observation path has probability below it under
	// the actions that lead to them (so under every policy) were not
	// expanded.
	Epsilon float64
	// GapBound bounds E_θ̂[R − b̂] of the best policy minus that of the
	// returned one, both evaluated exactly (0 when exact); see Plan.
	GapBound float64
	// PrunedMass is the probability, under the returned policy and θ̂,
	// of reaching a pruned node (0 when exact).
	PrunedMass float64
	// Value, ValueReward, ValueBonus are the planner's E_θ̂,π̄[R − b̂],
	// E[R] and E[b̂] (with the midpoint stand-ins at pruned nodes when not
	// exact; ModelValue gives the exact figures of the returned policy).
	Value, ValueReward, ValueBonus float64
	// Alpha is the bonus coefficient the plan used.
	Alpha float64

	// Planner is the planner that ran: PlannerExact, "search" (the exact
	// planner's pruned search) or PlannerBelief.
	Planner string
	// Belief planner only (see beliefPlan): Points per step, Backups
	// (point–action backups), Threshold (the model probability below
	// which the policy's histories are left out of the table),
	// UncoveredMass (the probability, under θ̂ and the policy, of leaving
	// the table and playing the fallback: 0, the controller decides every
	// history), UpperBound (an upper bound of
	// max_π E_θ̂,π[R − b̂]; GapBound = UpperBound − Value) and
	// TangentPoint (x₀ of the surrogate bonus).
	Points                   int
	Backups                  int64
	Threshold, UncoveredMass float64
	UpperBound, TangentPoint float64
	// RolloutMass is the probability, under θ̂ and the controller, of
	// the histories beyond the table: the controller decides them (no
	// fallback; UncoveredMass is 0) and they are valued by rollouts of it
	// under θ̂; ValueSE is the Monte Carlo standard error this puts on
	// Value (and on ValueReward and ValueBonus).
	RolloutMass, ValueSE float64
	// BeliefGap and SearchGap, when the pruned search planned beside the
	// belief planner (PlanOptions.SearchAbove; BeliefGap > 0 says it
	// ran): the belief plan's own stated gap and the search's gap bound.
	// Planner says which policy was kept; UpperBound is the lesser of the
	// two upper bounds and GapBound the kept policy's distance to it
	// (the search's own gap bound when the search was kept).
	BeliefGap float64 `json:",omitempty"`
	SearchGap float64 `json:",omitempty"`
	// PointsCapped: some step had more distinct beliefs than Points, so
	// more points (fit --plan-points) may plan closer to the optimum;
	// false when the points held every belief the model reaches, so the
	// gap is the surrogate's and the upper bound's, not the points'.
	PointsCapped bool
	// HullBound: the upper bound interpolated between its points by
	// their convex hull (PlanOptions.HullBound), not by the sawtooth
	// alone.
	HullBound bool `json:",omitempty"`
	// GapTrials and GapPoints: the trials of the gap search that ran
	// because the final plan stated a gap above TargetGap, and the
	// beliefs they added to the plan's points (0: it did not run;
	// gapsearch.go); GapReplanned says that the plan with them was the
	// better one and is the policy.
	GapTrials    int  `json:",omitempty"`
	GapPoints    int  `json:",omitempty"`
	GapReplanned bool `json:",omitempty"`
	// BonusBoundGap (belief planner) is how much the upper bound
	// overvalues the written policy π itself: E_π[b̂] minus what the
	// bound's relaxed problem charges π in its place, ℓ(Σ_0 + Σ_h
	// t_{h,a_h}·b_h) with ℓ the straight line below the bonus (its chord
	// over every trajectory's Σ) and t_{h,a} the tangents below the step
	// terms (or, when BoundCharge is "cauchy-schwarz", that charge's
	// weighted sum of the norms' tangents). The relaxed problem values π at Value + BonusBoundGap, so
	// were π optimal, GapBound would still be at least this. The tangents
	// are summed (one more walk of the table) only when GapBound is above
	// TargetGap; otherwise the figure is the chord's alone, E_π[b̂] −
	// ℓ(E_π[Σ]), which the tangents can only raise. At most GapBound; 0
	// when the pruned search's certificate set the upper bound.
	BonusBoundGap float64 `json:",omitempty"`
	// BoundCharge (belief planner) names the lower bound of the bonus
	// the stated upper bound charges in its place: "chord" (a straight
	// line in Σ), "cauchy-schwarz" (a weighted sum of the step terms'
	// square roots, csbound.go) or "cauchy-schwarz-by-observation" (the
	// same sum with its tangents chosen by the observation each action is
	// chosen on, the observation and action before it, obsbound.go), the
	// one of the least bound, or "exact-first-steps" when the least is
	// the bound exact over the first steps (topbound.go: no charge along
	// the plan, so BonusBoundGap is 0 then); empty before any bound.
	BoundCharge string `json:",omitempty"`
	// TopDepth is K, the steps the bound exact over the first steps
	// expanded, when BoundCharge is "exact-first-steps"; 0 otherwise.
	TopDepth int `json:",omitempty"`
	// TopExpanded is the nodes below those K steps that the bound
	// expanded one step further where its own plan goes; 0 otherwise.
	TopExpanded int `json:",omitempty"`
	// BoundMemory is the bytes PlanOptions.BoundMemory held the bound
	// exact over the first steps to, when below DefaultBoundMemory and
	// that bound ran; absent otherwise.
	BoundMemory int64 `json:",omitempty"`
}

// ChargeWords describes BoundCharge for the summary and the report: how
// the upper bound charges the bonus.
func (s *PlanStats) ChargeWords() string {
	switch s.BoundCharge {
	case chargeCS:
		return "a weighted sum of the step terms' square roots, each by a tangent below it, which lies below the bonus by the Cauchy–Schwarz inequality"
	case chargeCSObs:
		return "a weighted sum of the step terms' square roots, each by a tangent below it chosen by the step's action, the observation it is chosen on and the observation and action before it, which lies below the bonus by the Cauchy–Schwarz inequality"
	}
	return "a straight line in Σ below the bonus, its chord over every trajectory's Σ, each step's term by a tangent below it"
}

// Plan computes π̄ = argmax_π E_θ̂,π[R(τ_H) − b̂(τ_H)] over deterministic
// history-dependent policies (Algorithm 2 of Huang, Liang, Yang (ICLR 2024, arXiv:2307.00405),
// output policy; docs/design.md, section 4), where R = Σ_h (r_h − shift)·scale is the
// return rescaled to [0,1] (estimate.Model.RewardScale) and b̂ is
// bonus (with its Alpha).
//
// Exact planner: the bonus is not additive over steps, so the search is
// dynamic programming over the history tree, carrying the belief and the
// running Σ_h ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} down each branch and charging
// min{α·sqrt(Σ), 1} at the leaves. Ties go to the lowest action index.
// The subtrees below a fixed frontier depth are searched in parallel; the
// result is the same for every worker count. Only the chosen branches are
// kept, so the policy has Σ_h |O|^h nodes at most.
//
// Approximate planner (tree larger than Budget): nodes at depth ≥ 2 whose
// observation path has probability below ε given the actions leading to
// them — hence below ε under every policy — are not expanded; ε is the
// smallest power of 2 for which the count bound Σ_h |A|^{h−1}·min(|O|^h,
// 1/ε) fits the budget. A pruned node's continuation value lies in
// [lo, hi] (lo, hi: the least and largest rescaled reward-to-go the model
// allows, minus the bonus range [min{α√Σ,1}, 1]); the planner uses the
// midpoint. For any policy π the planner's objective is then within
// Σ_pruned P^π·(hi−lo)/2 of the exact one, so the returned policy is
// within GapBound = max_π Σ_pruned P^π (hi−lo)/2 + Σ_pruned P^π̄ (hi−lo)/2
// of the exact optimum (both terms computed by the same recursion). The
// returned policy acts at a pruned node with the fallback_action of its
// parent (the lookup rule of Cursor), which the bound covers.
//
// Fallback: each node's fallback_action is the action its policy takes at
// the next step with the largest probability (the reach-weighted majority
// of its children's actions, ties to the lowest index); a node without
// children (step H, or every child pruned) falls back on its own action.
// Histories leave the tree only through observations of model probability
// 0 (exact) or pruned nodes (approximate).
//
// The end symbol: after the observation ingest.EndSymbol the only action
// is ingest.EndSymbol; elsewhere that action is never chosen.
//
// Node values: ValueReward is the expected rescaled reward-to-go
// E[Σ_{t≥h} (r_t − shift)·scale | node] (for step-1 nodes, E[R | o_1]),
// ValueBonus = E[b̂(τ_H) | node], ValueLCB their difference.
func Plan(ctx context.Context, m *estimate.Model, bonus *pessimism.Bonus, opts PlanOptions) (*Policy, *PlanStats, error) {
	budget, err := checkPlanInputs(m, bonus, opts)
	if err != nil {
		return nil, nil, err
	}
	workers := parallel.Workers(opts.Workers)
	proto, st, err := setUpPlan(m, bonus, opts, budget)
	if err != nil {
		return nil, nil, err
	}
	if wantsBelief(m, opts, st) {
		pol, bst, err := planBelief(ctx, m, bonus, opts, workers, st)
		if err != nil || !wantsSecondOpinion(opts, bst) {
			return pol, bst, err
		}
		return searchInstead(ctx, m, bonus, opts, budget, workers, pol, bst)
	}
	return exactPlan(ctx, m, bonus, opts, proto, budget, workers, st)
}

// wantsSecondOpinion says whether the pruned search should plan beside
// the belief plan of stats bst: under auto (an explicit --planner belief
// gets the belief plan alone), its stated gap is above opts.SearchAbove,
// and its table holds all but that share of the plan's probability
// (RolloutMass). Past the table the plan's histories are too many and
// too improbable to list, and the search, which must also list every
// other action's, would prune them: on bench/fit.sh's model (all of the
// probability past a table of 33 228 rows) a search of 2¹⁴ nodes cost
// about a second of counting and pricing stand-ins per plan and stated a
// gap of 0.2.
func wantsSecondOpinion(opts PlanOptions, bst *PlanStats) bool {
	return opts.Planner != PlannerBelief && opts.SearchAbove > 0 && bst.GapBound > opts.SearchAbove && bst.RolloutMass <= opts.SearchAbove
}

// secondOpinionBudget is the default node budget of searchInstead's
// search: an eighth of DefaultSearchBudget, about a second on
// bench/fit.sh's model (8 states, 8 observations, 4 actions, H = 10),
// where the full budget took 8 s for nothing (its gap bound 0.17 against
// the belief plan's 0.03); on 1d.noisy at H = 10 it holds all but 2·10⁻⁷
// of the probability and certifies the optimum to 10⁻⁸.
const secondOpinionBudget = DefaultSearchBudget / 8

// secondOpinionStart is the first budget of searchInstead's search,
// which it doubles while that pays.
const secondOpinionStart = 1 << 14

// searchInstead plans m by the exact planner's pruned search beside the
// belief planner's policy pol, whose stated gap was too large, and
// returns the better of the two (betterPlan). The search runs at
// opts.SearchBudget nodes when set; otherwise at secondOpinionStart
// nodes, doubled up to secondOpinionBudget while the stated gap of the
// better plan is above opts.SearchAbove and each doubling at least halves
// the search's gap bound. Where the probable part of the tree is small
// the gap falls by orders of magnitude with each doubling (1d.noisy at
// H = 10: 0.007 at 2¹⁵ nodes, 10⁻⁸ at 2¹⁷); where it is not, the gap
// hardly moves (bench/fit.sh's model: 0.18 at 2¹⁷, 0.17 at 2²⁰), and the
// search stops after two small budgets, so that the α selection's plans
// can afford it.
//
// The search's gap bound is exact arithmetic over the probable part of
// the history tree: where the model's observations are few or nearly
// deterministic, that part is small and the search is exact but for a
// negligible mass, while the belief planner's upper bound relaxes the
// bonus along every path (a chord of the concave bonus) and can state a
// gap many times the true one (1d.noisy at H = 10, α = 10:
// docs/planning.md). Its value less its gap bound is a lower bound of
// its policy's exact value, so the search's policy is kept only when
// that lower bound is above the belief plan's value (plus two of its
// standard errors when rollouts valued it): only when it is certainly
// the better policy. It keeps the belief planner's controller for the
// histories past its table, so it still decides every history.
func searchInstead(ctx context.Context, m *estimate.Model, bonus *pessimism.Bonus, opts PlanOptions, budget int64, workers int, pol *Policy, bst *PlanStats) (*Policy, *PlanStats, error) {
	fixed := opts.SearchBudget > 0
	limit := opts.SearchBudget
	if !fixed {
		limit = searchBudget(m, PlanOptions{}, min(budget, secondOpinionBudget))
		opts.SearchBudget = min(limit, secondOpinionStart)
	}
	var prevGap float64
	for first := true; ; first = false {
		proto, st, err := setUpPlan(m, bonus, opts, budget)
		if err != nil {
			return nil, nil, err
		}
		st.Exact = false
		spol, sst, err := exactPlan(ctx, m, bonus, opts, proto, budget, workers, st)
		if err != nil {
			return nil, nil, err
		}
		kept, kst := betterPlan(pol, bst, spol, sst)
		paid := first || sst.GapBound <= prevGap/2
		if fixed || opts.SearchBudget >= limit || kst.GapBound <= opts.SearchAbove || !paid {
			return kept, kst, nil
		}
		prevGap = sst.GapBound
		opts.SearchBudget = min(2*opts.SearchBudget, limit)
	}
}

// betterPlan is searchInstead's choice between the belief plan pol and
// the search's spol: the search's only when it is certainly better (its
// value less its gap bound above the belief plan's value, plus two
// standard errors), with the belief controller past its rows; either way
// with the lesser of the two upper bounds, and the stats of the other
// recorded (BeliefGap, SearchGap), in a copy of the kept plan's stats.
func betterPlan(pol *Policy, bst *PlanStats, spol *Policy, sst *PlanStats) (*Policy, *PlanStats) {
	upper := min(bst.UpperBound, sst.Value+sst.GapBound)
	if !(sst.Value-sst.GapBound > bst.Value+2*bst.ValueSE) {
		b := *bst
		b.BeliefGap, b.SearchGap = bst.GapBound, sst.GapBound
		if upper < bst.UpperBound {
			b.BonusBoundGap = 0 // the search's certificate, not the relaxed bound
		}
		b.UpperBound = upper
		b.GapBound = max(upper-b.Value, 0)
		return pol, &b
	}
	s := *sst
	s.BeliefGap, s.SearchGap = bst.GapBound, sst.GapBound
	s.UpperBound = upper
	spol.Ctrl = pol.Ctrl
	return spol, &s
}

// setUpPlan returns the tree search's planner of m, with opts' objective
// set, and the plan's stats.
func setUpPlan(m *estimate.Model, bonus *pessimism.Bonus, opts PlanOptions, budget int64) (*planner, *PlanStats, error) {
	proto, err := newSearchPlanner(m, bonus)
	if err != nil {
		return nil, nil, err
	}
	st := newPlanStats(m, bonus, budget)
	if err := proto.applyOptions(opts, st, budget); err != nil {
		return nil, nil, err
	}
	return proto, st, nil
}

// checkPlanInputs checks the model, the bonus and its α, and returns
// the node budget of opts.
func checkPlanInputs(m *estimate.Model, bonus *pessimism.Bonus, opts PlanOptions) (int64, error) {
	if err := checkPlan(m, bonus); err != nil {
		return 0, err
	}
	if !(bonus.Alpha >= 0) || math.IsInf(bonus.Alpha, 0) {
		return 0, fmt.Errorf("%w: alpha %v", ErrOptions, bonus.Alpha)
	}
	return planBudget(opts)
}

// planBelief is Plan by the belief planner.
func planBelief(ctx context.Context, m *estimate.Model, bonus *pessimism.Bonus, opts PlanOptions, workers int, st *PlanStats) (*Policy, *PlanStats, error) {
	st.Exact = false
	pol, err := beliefPlan(ctx, m, bonus, opts, workers, st)
	if err != nil {
		return nil, nil, err
	}
	return pol, st, nil
}

// newPlanStats returns the stats of a plan of m under bonus: α, the
// history tree's size, and whether it fits the budget (exact planning).
func newPlanStats(m *estimate.Model, bonus *pessimism.Bonus, budget int64) *PlanStats {
	st := &PlanStats{Alpha: bonus.Alpha, TreeNodes: treeSize(m.NumObs, m.NumActions, m.Horizon)}
	st.Exact = st.TreeNodes <= float64(budget)
	return st
}

// planBudget is the node budget of opts (DefaultBudget when 0).
func planBudget(opts PlanOptions) (int64, error) {
	budget := opts.Budget
	if budget == 0 {
		budget = DefaultBudget
	}
	if budget < 0 {
		return 0, fmt.Errorf("%w: budget %d", ErrOptions, budget)
	}
	return budget, nil
}

// newSearchPlanner returns the tree search's planner of m, with the
// observation index when the features are not one-step.
func newSearchPlanner(m *estimate.Model, bonus *pessimism.Bonus) (*planner, error) {
	fz, err := estimate.NewFeaturizer(m)
	if err != nil {
		return nil, err
	}
	proto := newPlanner(m, bonus, fz)
	if !proto.oneStep {
		proto.oix = obsIndexes(m)
	}
	if len(proto.allowed[0]) == 0 {
		return nil, fmt.Errorf("%w: no action other than %s", ErrModel, ingest.EndSymbol)
	}
	return proto, nil
}

// applyOptions checks opts' planner and objective and sets the
// objective; the bonus objective is planned exactly only.
func (p *planner) applyOptions(opts PlanOptions, st *PlanStats, budget int64) error {
	if err := checkPlanner(opts); err != nil {
		return err
	}
	return p.setObjective(opts, st, budget)
}

// checkPlanner checks that opts names a planner (or none).
func checkPlanner(opts PlanOptions) error {
	switch opts.Planner {
	case "", PlannerAuto, PlannerExact, PlannerBelief:
	default:
		return fmt.Errorf("%w: planner %q (want %q, %q or %q)", ErrOptions, opts.Planner, PlannerExact, PlannerBelief, PlannerAuto)
	}
	return nil
}

// setObjective checks opts' objective and sets it; the bonus objective
// is planned exactly only.
func (p *planner) setObjective(opts PlanOptions, st *PlanStats, budget int64) error {
	switch opts.Objective {
	case "", ObjectiveLCB:
	case ObjectiveBonus:
		p.bonusObj = true
		if opts.Planner == PlannerBelief || !st.Exact {
			return fmt.Errorf("%w: history tree of %.3g nodes exceeds the budget %d (the bonus objective is planned exactly only)", ErrModel, st.TreeNodes, budget)
		}
	default:
		return fmt.Errorf("%w: objective %q (want %q or %q)", ErrOptions, opts.Objective, ObjectiveLCB, ObjectiveBonus)
	}
	return nil
}

// wantsBelief says whether the belief planner plans: when asked for, or
// under auto when the tree exceeds the budget and the belief backups are
// affordable.
func wantsBelief(m *estimate.Model, opts PlanOptions, st *PlanStats) bool {
	points := opts.Points
	if points <= 0 {
		points = DefaultPoints
	}
	auto := opts.Planner != PlannerExact && opts.Planner != PlannerBelief
	return opts.Planner == PlannerBelief || (auto && !st.Exact && beliefAffordable(m, points))
}

// exactPlan is the exact planner (with its pruned search past the
// budget): the tree is cut at a frontier depth, the subtrees below it are
// searched in parallel, and the levels above are searched again with
// their results.
func exactPlan(ctx context.Context, m *estimate.Model, bonus *pessimism.Bonus, opts PlanOptions, proto *planner, budget int64, workers int, st *PlanStats) (*Policy, *PlanStats, error) {
	st.Planner = exactPlanner(st.Exact)
	proto.frontier = frontierDepth(m)
	if !st.Exact {
		if err := proto.pruneFor(ctx, opts, budget, workers, st); err != nil {
			return nil, nil, err
		}
	}
	v, results, err := proto.searchFrontier(ctx, workers)
	if err != nil {
		return nil, nil, err
	}
	proto.setStats(st, v, results)
	return proto.toPolicy(), st, nil
}

// searchFrontier collects the frontier subtrees, searches them with
// workers workers and the levels above them with their results; it
// returns the root values and the subtrees' results.
func (p *planner) searchFrontier(ctx context.Context, workers int) (val, []taskResult, error) {
	p.collectTasks(ctx)
	results, err := p.searchTasks(ctx, p.tasks, workers)
	if err != nil {
		return val{}, nil, err
	}
	v := p.searchAbove(ctx, results)
	return v, results, ctx.Err()
}

// exactPlanner names the exact planner: its pruned search past the
// budget (exact false).
func exactPlanner(exact bool) string {
	if exact {
		return PlannerExact
	}
	return plannerSearch
}

// frontierDepth is the depth the exact planner cuts the tree at: the
// shallowest with frontierTasks nodes (H at most).
func frontierDepth(m *estimate.Model) int {
	frontier := 1
	for frontier < m.Horizon && treeLevel(m.NumObs, m.NumActions, frontier) < frontierTasks {
		frontier++
	}
	return frontier
}

// collectTasks is pass 1: it collects the frontier subtrees in search
// order (p.tasks) and returns the root values of the levels above them.
func (p *planner) collectTasks(ctx context.Context) val {
	p.collect = true
	p.tasks = nil
	p.nodes = 0
	v := p.root(ctx)
	p.arena = p.arena[:0]
	return v
}

// searchTasks is pass 2: it searches the subtrees in parallel, each
// worker with a planner of its own.
func (p *planner) searchTasks(ctx context.Context, tasks []task, workers int) ([]taskResult, error) {
	results := make([]taskResult, len(tasks))
	if err := parallel.ForWith(ctx, len(tasks), workers, p.newWorker, func(w *planner, i int) error {
		results[i] = w.runTask(ctx, &tasks[i])
		return nil
	}); err != nil {
		return nil, err
	}
	return results, nil
}

// newWorker returns a search worker's planner: its own buffers and
// featurizer, p's threshold, stand-in tables, objective and index.
func (p *planner) newWorker() *planner {
	w := newPlanner(p.m, p.bonus, p.fz.Clone())
	w.eps, w.fbt, w.bonusObj, w.oix = p.eps, p.fbt, p.bonusObj, p.oix
	return w
}

// searchAbove is pass 3: it searches the levels above the frontier,
// using the subtree results, and returns the root values.
func (p *planner) searchAbove(ctx context.Context, results []taskResult) val {
	p.collect = false
	p.nodes = 0
	p.results = results
	p.arena = p.arena[:0]
	return p.root(ctx)
}

// setStats records the search's node count and root values v in st
// (with the pruned mass and the gap bound past the budget).
func (p *planner) setStats(st *PlanStats, v val, results []taskResult) {
	st.Nodes = p.nodes
	for i := range results {
		st.Nodes += results[i].nodes
	}
	st.ValueReward, st.ValueBonus = v.r, v.b
	st.Value = v.r - v.b
	if !st.Exact {
		st.PrunedMass = v.pmass
		st.GapBound = v.g + v.gm
	}
}

// pruneFor prepares the pruned search past the budget: the stand-in
// tables of the pruned nodes and the threshold ε that fits the search
// budget.
func (p *planner) pruneFor(ctx context.Context, opts PlanOptions, budget int64, workers int, st *PlanStats) error {
	var err error
	if p.fbt, err = newFallbackTables(p.m, p.bonus); err != nil {
		return err
	}
	eps, err := p.searchEpsilon(ctx, searchBudget(p.m, opts, budget), workers)
	if err != nil {
		return err
	}
	p.eps = eps
	st.Epsilon = eps
	return nil
}

// searchBudget is the node budget of the pruned search: opts'
// SearchBudget, by default the least of budget and DefaultSearchBudget,
// scaled down on wide vocabularies by the children a node has.
func searchBudget(m *estimate.Model, opts PlanOptions, budget int64) int64 {
	search := opts.SearchBudget
	if search <= 0 {
		search = min(budget, DefaultSearchBudget)
		if m.NumObs > wideObs {
			search = max(1, search*wideRefChildren/int64(m.NumObs*m.NumActions))
		}
	}
	return search
}

func checkPlan(m *estimate.Model, bonus *pessimism.Bonus) error {
	if m == nil || bonus == nil {
		return fmt.Errorf("%w: no model or no bonus", ErrModel)
	}
	if bonus.Horizon != m.Horizon || len(bonus.Dims) != m.Horizon {
		return fmt.Errorf("%w: bonus for horizon %d, model horizon %d", ErrModel, bonus.Horizon, m.Horizon)
	}
	if err := checkModelSizes(m); err != nil {
		return err
	}
	return checkFeatureDims(m, bonus)
}

// checkModelSizes checks the model's sizes, its vocabularies' lengths
// and the symbol limit.
func checkModelSizes(m *estimate.Model) error {
	if m.Horizon <= 0 || m.States <= 0 || m.NumObs <= 0 || m.NumActions <= 0 {
		return fmt.Errorf("%w: sizes S=%d O=%d A=%d H=%d", ErrModel, m.States, m.NumObs, m.NumActions, m.Horizon)
	}
	if len(m.ObsVocab) != m.NumObs || len(m.ActVocab) != m.NumActions {
		return fmt.Errorf("%w: vocabularies of %d observations and %d actions for sizes %d and %d", ErrModel, len(m.ObsVocab), len(m.ActVocab), m.NumObs, m.NumActions)
	}
	if m.NumObs > ingest.MaxSymbols || m.NumActions > ingest.MaxSymbols {
		return fmt.Errorf("%w: more than %d observations or actions", ErrModel, ingest.MaxSymbols)
	}
	return nil
}

// checkFeatureDims checks that bonus has the model's feature dimension
// at every step.
func checkFeatureDims(m *estimate.Model, bonus *pessimism.Bonus) error {
	for h := 0; h < m.Horizon; h++ {
		if bonus.Dims[h] != m.FeatureDim(h) {
			return fmt.Errorf("%w: bonus feature dimension %d at step %d, model %d", ErrModel, bonus.Dims[h], h, m.FeatureDim(h))
		}
	}
	return nil
}

// beliefBackupLimit bounds the multiply–adds of the belief planner's
// backups under PlannerAuto: H·|A|·|O|·points²·r per tangent round (every
// point's successor under every action and observation valued against
// every next-step vector). Past it — thousands of observations and tens of
// actions — auto runs the pruned tree search instead, which is sized by
// the work of its nodes and prices whole levels of rare observations at
// once. 2⁴⁰ is about ten minutes of backups on two cores.
const beliefBackupLimit = 1 << 40

// beliefAffordable says whether the belief planner's backups fit
// beliefBackupLimit for m.
func beliefAffordable(m *estimate.Model, points int) bool {
	cost := float64(m.Horizon) * float64(m.NumActions) * float64(m.NumObs) * float64(points) * float64(points) * float64(m.States)
	return cost <= beliefBackupLimit
}

// treeLevel is the number of nodes at depth h: |O|^h |A|^{h−1}.
func treeLevel(O, A, h int) float64 {
	return math.Pow(float64(O), float64(h)) * math.Pow(float64(A), float64(h-1))
}

func treeSize(O, A, H int) float64 {
	n := 0.0
	for h := 1; h <= H; h++ {
		n += treeLevel(O, A, h)
	}
	return n
}

// chooseEpsilon returns the smallest ε = 2^−k (k ≥ 0) whose node-count
// bound fits the budget: under any fixed action sequence the nodes of
// one depth with path probability ≥ ε number at most 1/ε, and depth 1 is
// always expanded.
func chooseEpsilon(O, A, H int, budget int64) float64 {
	eps := 1.0
	for k := 0; k < 60; k++ {
		if nodeBound(O, A, H, eps/2) > float64(budget) {
			break
		}
		eps /= 2
	}
	return eps
}

// nodeBound is chooseEpsilon's bound on the nodes of the search with
// threshold eps: |O| + Σ_{h≥2} |A|^{h−1}·min(|O|^h, 1/ε).
func nodeBound(O, A, H int, eps float64) float64 {
	n := float64(O)
	for h := 2; h <= H; h++ {
		n += math.Pow(float64(A), float64(h-1)) * math.Min(math.Pow(float64(O), float64(h)), 1/eps)
	}
	return n
}

// searchEpsilon returns the smallest pruning threshold ε = 2^−k whose
// search it has verified to fit the budget, counting nodes rather than
// trusting the worst-case bound of chooseEpsilon (which it starts from):
// a count traverses the nodes of path probability ≥ ε like the search but
// without bonus, feature or stand-in work, and stops as soon as the total
// passes the budget. After each count the next ε is extrapolated from the
// growth of the count per halving (aiming at 90% of the budget), so the
// counts grow geometrically and their total work is a small multiple of
// the final search's. Counts are exact sums, so ε does not depend on the
// worker count.
func (p *planner) searchEpsilon(ctx context.Context, budget int64, workers int) (float64, error) {
	pool := p.countPool(workers)
	eps := chooseEpsilon(p.O, p.A, p.H, budget)
	c, full, _, err := p.countNodes(ctx, pool, eps, budget)
	if err != nil || full {
		return eps, err
	}
	es := &epsSearch{c: c, eps: eps, kFail: 64}
	if err := p.lowerEps(ctx, pool, budget, es); err != nil {
		return 0, err
	}
	return es.eps, nil
}

// lowerEps halves the threshold of es while the counts fit the budget
// (halveEps), 64 times at most.
func (p *planner) lowerEps(ctx context.Context, pool []*planner, budget int64, es *epsSearch) error {
	for iter := 0; iter < 64; iter++ {
		done, err := p.halveEps(ctx, pool, budget, es)
		if err != nil || done {
			return err
		}
	}
	return nil
}

// epsSearch is searchEpsilon's state: the threshold verified so far, its
// count c, the count before it and the halvings between them, and the
// fewest halvings found not to fit (less those since).
type epsSearch struct {
	c, cPrev, eps float64
	kLast, kFail  int
}

// halveEps counts the next threshold of searchEpsilon and keeps it when
// it fits the budget; it reports whether the search is over.
func (p *planner) halveEps(ctx context.Context, pool []*planner, budget int64, es *epsSearch) (bool, error) {
	k, ok := es.nextHalvings(budget)
	if !ok {
		return true, nil
	}
	try := math.Ldexp(es.eps, -k)
	if try == 0 {
		return true, nil
	}
	c2, full2, ok, err := p.countNodes(ctx, pool, try, budget)
	if err != nil || !ok {
		es.kFail = k
		return false, err
	}
	es.keep(c2, try, k)
	return full2, nil
}

// nextHalvings is the number of halvings of ε for the next count
// (halvings, at least 1, below the fewest found not to fit and at most
// 40); it is false when the search is over.
func (es *epsSearch) nextHalvings(budget int64) (int, bool) {
	k, fits := halvings(es.c, es.cPrev, es.kLast, budget)
	if !fits {
		return 0, false // one more halving is predicted not to fit
	}
	if k = min(max(k, 1), es.kFail-1, 40); k < 1 {
		return 0, false
	}
	return k, true
}

// keep keeps the threshold try, k halvings below the last, of count c2.
func (es *epsSearch) keep(c2, try float64, k int) {
	es.cPrev, es.c, es.eps, es.kLast = es.c, c2, try, k
	es.kFail -= k
}

// countPool returns one counting planner per worker (at least one).
func (p *planner) countPool(workers int) []*planner {
	pool := make([]*planner, max(workers, 1))
	for i := range pool {
		pool[i] = newPlanner(p.m, p.bonus, p.fz.Clone())
		pool[i].oix = p.oix
	}
	return pool
}

// halvings is the number of halvings of ε for the next count: 1 after
// the first count, then extrapolated from the growth per halving between
// the last two counts cPrev and c (kLast halvings apart) to 90% of the
// budget, or doubled when the count did not grow. It is false when one
// more halving is predicted not to fit.
func halvings(c, cPrev float64, kLast int, budget int64) (int, bool) {
	k := 1
	if cPrev > 0 {
		r := math.Pow(c/cPrev, 1/float64(kLast))
		if r > 1+1e-9 {
			if c*r > float64(budget) {
				return 0, false
			}
			k = int(math.Log(0.9*float64(budget)/c) / math.Log(r))
		} else {
			k = 2 * kLast
		}
	}
	return k, true
}

// countNodes counts the nodes the search with threshold eps would visit
// (stopping once the total passes limit: ok false) and reports whether
// any node was pruned (full: none was).
func (p *planner) countNodes(ctx context.Context, pool []*planner, eps float64, limit int64) (n float64, full, ok bool, err error) {
	p.eps = eps
	p.arena = p.arena[:0]
	top := p.collectTasks(ctx)
	if err := ctx.Err(); err != nil {
		return 0, false, false, err
	}
	var total atomic.Int64
	total.Store(p.nodes)
	pruned, err := p.countTasks(ctx, pool, eps, limit, &total)
	if err != nil {
		return 0, false, false, err
	}
	pruned = top.pmass > 0 || pruned
	n = float64(total.Load())
	return n, !pruned, n <= float64(limit), nil
}

// countTasks counts the collected frontier subtrees with the pool's
// planners, adding to total, and reports whether any of them pruned a
// node.
func (p *planner) countTasks(ctx context.Context, pool []*planner, eps float64, limit int64, total *atomic.Int64) (bool, error) {
	pruned := false
	// Each pool member counts the subtrees handed to it; ForWith hands
	// them out one goroutine per member, so no member is shared.
	var mu sync.Mutex
	members := chanOf(pool)
	err := parallel.ForWith(ctx, len(p.tasks), len(pool), func() *planner {
		return (<-members).startCount(ctx, eps, limit, total)
	}, func(w *planner, i int) error {
		w.countTask(&p.tasks[i])
		if w.pruned {
			mu.Lock()
			pruned = true
			mu.Unlock()
		}
		return nil
	})
	return pruned, err
}

// startCount readies the pool member p for a count with threshold eps
// that stops once the shared total passes limit.
func (p *planner) startCount(ctx context.Context, eps float64, limit int64, total *atomic.Int64) *planner {
	p.ctx, p.eps, p.stop, p.pruned = ctx, eps, false, false
	p.total, p.limit = total, limit
	return p
}

// chanOf returns a channel holding the elements of xs, in order.
func chanOf[T any](xs []T) chan T {
	c := make(chan T, len(xs))
	for _, x := range xs {
		c <- x
	}
	return c
}

// countTask counts the frontier subtree t, unless the count has stopped.
func (p *planner) countTask(t *task) {
	if p.stop {
		return
	}
	copy(p.bel[t.h], t.bel)
	p.nodes = 0
	p.count(t.h, t.o, t.path)
	p.flush()
}

// flush adds the nodes counted since the last flush to the shared total
// and stops the count once it passes the limit.
func (p *planner) flush() {
	if p.total.Add(p.nodes) > p.limit || p.ctx.Err() != nil {
		p.stop = true
	}
	p.nodes = 0
}

// count visits the node (τ_{h−1}, o_h) (belief in p.bel[h]) and its
// descendants of path probability ≥ p.eps, as solve does, counting them.
func (p *planner) count(h, o int, path float64) {
	p.countNode()
	if p.stop || h == p.H {
		return
	}
	if path*p.emax < p.eps {
		// Every child is pruned (no observation is likelier than emax;
		// solve prices them at once).
		p.pruned = true
		return
	}
	p.countActions(h, o, path)
}

// countNode counts a node, flushing the count to the shared total every
// 4096 nodes.
func (p *planner) countNode() {
	p.nodes++
	if p.nodes >= 1<<12 {
		p.flush()
	}
}

// countActions counts the children of the node (τ_{h−1}, o_h) after
// each allowed action, until the count stops.
func (p *planner) countActions(h, o int, path float64) {
	for _, a := range p.allowed[o] {
		if !p.countAction(h, a, path) {
			return
		}
	}
}

// countAction counts the children of the node after action a and their
// descendants; it reports false when the count has stopped.
func (p *planner) countAction(h, a int, path float64) bool {
	pred := p.pred[h]
	p.m.Predict(h, p.bel[h], a, pred)
	n, rest := p.expand(h, a, pred, path)
	if rest > 0 {
		p.pruned = true
	}
	for i := 0; i < n; i++ {
		if !p.countChild(h, a, i, path) {
			return false
		}
	}
	return true
}

// countChild counts the i-th child (expand) of the node after action a
// and its descendants; it reports false when the count has stopped.
func (p *planner) countChild(h, a, i int, path float64) bool {
	pred := p.pred[h]
	o2, po := p.child(h, a, i, pred)
	if po == 0 {
		return true
	}
	if path*po < p.eps {
		p.pruned = true
		return true
	}
	return p.countBelow(h, a, o2, path*po)
}

// countBelow counts the child o2 (path probability path) of the node
// after action a and its descendants; it reports false when the count
// has stopped.
func (p *planner) countBelow(h, a, o2 int, path float64) bool {
	if h+1 == p.H {
		p.nodes++
		return true
	}
	p.m.Correct(h, p.pred[h], a, o2, p.bel[h+1])
	p.count(h+1, o2, path)
	return !p.stop
}
