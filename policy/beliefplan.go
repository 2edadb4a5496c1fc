package policy

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/internal/parallel"
	"github.com/psrlcb/psrlcb/internal/simd"
	"github.com/psrlcb/psrlcb/pessimism"
)

// beliefPlan is the belief planner of Plan (PlannerBelief).
//
// Objective planned. The paper's bonus b̂ = g(Σ), g(x) = min{α√x, 1},
// Σ = Σ_{h=0}^{H−1} ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} (psr-ucb-lcb.tex Section 5,
// eq. (LCB bonus)) is not additive over steps. g is concave, so its
// tangent at any x₀ > 0 lies above it:
//
//	b̃(τ_H) = g(x₀) + g′(x₀)·(Σ − x₀) ≥ b̂(τ_H)   for every trajectory,
//
// and b̃ is additive: a constant plus κ = g′(x₀) times the step terms, each
// a quadratic form bᵀ m_{h,a} b in the belief b over s_h (ψ̄̂(τ_h) is
// linear in the predicted state). E_π[R − b̃] is therefore a lower bound of
// the paper's objective E_π[R − b̂] for every policy, reached with
// equality in expectation when Σ is constant along the policy's
// trajectories and x₀ = E_π[Σ]. The planner first plans for the reward
// alone (slope 0, the tangent at the point 1/α² where g saturates and
// past it), then at x₀ = E_π[Σ] of the previous round's policy held to at
// most 1/α² (tangentRounds rounds at most; see rounds), and keeps the
// round whose policy has the best evaluated objective (below). When the
// points of some step were capped, half of them are replaced by the
// beliefs reached by the policy of the first round that does not
// saturate the bonus (forward rollout of the current policy), and the
// later rounds plan on them.
//
// Planning. Point-based finite-horizon value iteration over beliefs: the
// belief points of each step are the distinct beliefs reached from o_1
// under every action sequence and observation of positive probability,
// merged when equal (to 2⁻³⁰), the opts.Points most probable kept per
// step. Each backup at a point chooses the action of the best one-step
// lookahead R − κ·bᵀmb + Σ_o max_i α_i·(unnormalised successor) and
// stores the value as a vector (the bonus term by its tangent at the
// point), as in point-based value iteration.
//
// Controller and table. The policy is the controller (Controller): at
// the exact belief of every history it acts by the same one-step
// lookahead (or, where that is too costly, by the best α-vector). Its
// decision tree — the readable view — is written for every history it
// reaches with model probability ≥ the threshold (0 when the whole tree
// fits opts.RowBudget, otherwise the smallest power of two that fits);
// each row's fallback_action, the constant action with the best stand-in
// value, is what a reader of the table alone plays beyond it.
//
// Evaluation (PlanStats): the controller is evaluated under θ̂ with the
// paper's bonus: exactly on the table (rewards, and b̂ from the running Σ
// at step H), and beyond it by rollouts of the controller under θ̂
// (rolloutDensity per unit of probability, each cut history's stream
// seeded by the history), with each step's expected reward given the
// belief and b̂ from each rollout's Σ. Value, ValueReward and ValueBonus
// are then unbiased estimates of the controller's E[R − b̂], E[R] and E[b̂]
// with standard error ValueSE (0 when the table holds every history;
// RolloutMass is the probability the rollouts stand for). UpperBound bounds
// max_π E_θ̂,π[R − b̂] from above:
// a sawtooth point-based upper bound of a relaxed problem whose step
// rewards are linear in the belief (the reward minus a linear lower bound
// of the bonus, see boundRewards; its value function is convex, and the
// fully observed MDP's values bound it at the corners).
// GapBound = UpperBound − Value.
func beliefPlan(ctx context.Context, m *estimate.Model, bonus *pessimism.Bonus, opts PlanOptions, workers int, st *PlanStats) (*Policy, error) {
	points, rows := cmp.Or(opts.Points, DefaultPoints), cmp.Or(opts.RowBudget, DefaultRowBudget)
	if points < 0 || rows < 0 {
		return nil, fmt.Errorf("%w: belief points %d, row budget %d", ErrOptions, points, rows)
	}
	bp, ft, err := prepareBeliefPlan(ctx, m, bonus, points, workers)
	if err != nil {
		return nil, err
	}
	bp.tightBound = opts.TightBound
	bp.hullBound = opts.HullBound && opts.TightBound
	if opts.BoundMemory > 0 {
		bp.topMemory = float64(min(opts.BoundMemory, DefaultBoundMemory))
	}
	best, ub, err := bp.planRounds(ctx, ft, rows)
	if err != nil {
		return nil, err
	}
	bp.stats(st, points, best.pol, best.v, best.eps, best.x0, ub)
	if bp.topTried && bp.topMemory > 0 && bp.topMemory < DefaultBoundMemory {
		st.BoundMemory = int64(bp.topMemory)
	}
	return best.pol, nil
}

// planRounds runs the tangent rounds, builds the full table of the best
// one (within rows rows) and bounds the optimal value; it returns the
// best round and the upper bound.
func (bp *beliefPlanner) planRounds(ctx context.Context, ft *fallbackTables, rows int64) (planRound, float64, error) {
	best, err := bp.rounds(ctx, ft, rows)
	if err != nil {
		return planRound{}, 0, err
	}
	if err := bp.fullTable(ctx, ft, rows, &best); err != nil {
		return planRound{}, 0, err
	}
	// The sawtooth decides and guides the gap search, so that the plan
	// does not depend on HullBound; the hull then bounds the final points.
	hull := bp.hullBound
	bp.hullBound = false
	ub, err := bp.upperBound(ctx, ft)
	if err == nil && bp.tightBound && ub-(best.v.r-best.v.b) > TargetGap {
		best, ub, err = bp.gapSearch(ctx, ft, rows, best, ub)
	}
	bp.hullBound = hull
	if err == nil && hull {
		var ubHull float64
		ubHull, err = bp.upperBound(ctx, ft)
		ub = min(ub, ubHull)
	}
	if err == nil && bp.tightBound && !chordOnly && ub-(best.v.r-best.v.b) > TargetGap {
		ub, err = bp.csBound(ctx, ft, rows, best, ub)
	}
	if err == nil && bp.tightBound && !chordOnly && ub-(best.v.r-best.v.b) > TargetGap {
		ub, err = bp.topBoundOf(ctx, ft, rows, ub, best.v.r-best.v.b+TargetGap)
	}
	if err == nil && bp.tightBound && bp.used.scale > 0 && ub-(best.v.r-best.v.b) > TargetGap {
		err = bp.relaxedCharge(ctx, ft, rows, best)
	}
	return best, ub, err
}

// csBound bounds the optimum once more with the Cauchy–Schwarz charge
// fitted to the plan best (csCharge), with the gap search's trials, then
// with the same charge by observation (obsBound); while the stated gap
// stays above chargeRoundGap, with the same two charges fitted to the
// plan of the last kept charge's relaxed problem, and to it and every
// plan before it pooled (at most chargeRounds times, while each round
// moves the stated gap by as much as the summary shows, shownStep). It
// returns the least of those bounds and ub; the charge of
// the bound kept stays in bp.used.
func (bp *beliefPlanner) csBound(ctx context.Context, ft *fallbackTables, rows int64, best planRound, ub float64) (float64, error) {
	bp.gamma, bp.kappa = best.gamma, best.kappa
	// The trials may stop once the bound states a gap of TargetGap.
	goal := best.v.r - best.v.b + TargetGap
	ub, err := bp.csBoundFrom(ctx, ft, rows, nil, ub, goal)
	pols := []*beliefPlanner{nil} // the written plan, then the rounds' relaxed plans
	for i := 0; err == nil && i < chargeRounds && ub-(best.v.r-best.v.b) > chargeRoundGap; i++ {
		// The relaxed problem's optimum lies above the plan's value where
		// the charge is below the bonus by much on the trajectories of
		// another policy: the relaxed problem's own plan finds that
		// policy. A charge fitted to it alone undercharges the written
		// plan in turn; one fitted to the rollouts of every plan so far,
		// pooled, charges each where it goes (its tangents are per step,
		// action and observation). Both bound once more.
		var g *beliefPlanner
		if g, err = bp.relaxedGuide(ctx, bp.relaxedRewards(bp.used)); err != nil {
			break
		}
		pols = append(pols, g)
		before := ub
		for _, fit := range [][]*beliefPlanner{{g}, pols} {
			if ub, err = bp.csBoundFrom(ctx, ft, rows, fit, ub, goal); err != nil {
				break
			}
		}
		// Another round only after one that moved the stated gap by as
		// much as the summary shows of it.
		if before-ub < shownStep(ub-(best.v.r-best.v.b)) {
			break
		}
	}
	return ub, err
}

// topBoundOf bounds the optimum once more, exactly over the first steps
// and deepened while above goal (topBound), with the tangents of the
// charge by history code the last bounds kept (bp.used) or, when they
// kept another, the one fitted to the plan of bp.gamma (csCharge), and
// returns the lesser of that bound and ub. When it is the lesser, bp.used names it and charges nothing
// along the plan (the bound is no sum of per-step charges, so
// BonusBoundGap is not stated).
func (bp *beliefPlanner) topBoundOf(ctx context.Context, ft *fallbackTables, rows int64, ub, goal float64) (float64, error) {
	if bp.topDepth() == 0 {
		return ub, nil
	}
	ch := bp.used
	if ch == nil || ch.name != chargeCSObs {
		var err error
		if _, ch, err = bp.csCharge(ctx, ft, rows); err != nil {
			return ub, err
		}
	}
	v, ts, err := bp.topBound(ctx, ch, goal)
	bp.topTried = bp.topTried || ts.K > 0
	if err != nil || !(v < ub) {
		return ub, err
	}
	bp.used, bp.top = &boundCharge{name: chargeTop}, ts
	return v, nil
}

// shownStep is the least change of a stated gap g that the summary
// shows: half a unit in the third significant digit (it prints %.3g).
func shownStep(g float64) float64 {
	if !(g > 0) {
		return 0
	}
	return 0.5 * math.Pow(10, math.Floor(math.Log10(g))-2)
}

// csTrials bounds the gap-search trials of each Cauchy–Schwarz bound
// (csBoundFrom), eight batches of gapTrials: they stop once the bound
// meets the target or the batches left, at the last batch's pace, could
// not reach it (trialsWorthGoing).
const csTrials = 8 * gapTrials

// chargeRounds bounds the charges fitted to the relaxed problem's own
// plans (csBound): each costs a backup of the relaxed problem on the
// bound's points, the rollouts of the plans and four bounds.
const chargeRounds = 2

// chargeRoundGap is the stated gap above which csBound fits a charge to
// the relaxed problem's plan: TargetGap (tests lower it).
var chargeRoundGap = TargetGap

// csBoundFrom bounds the optimum with the Cauchy–Schwarz charge, and
// the same charge by observation, fitted to the rollouts of the plans of
// decs pooled (a nil entry, or none, is the plan of bp.gamma), and
// returns the least of those bounds and ub; the charge of the bound kept
// is left in bp.used.
func (bp *beliefPlanner) csBoundFrom(ctx context.Context, ft *fallbackTables, rows int64, decs []*beliefPlanner, ub, goal float64) (float64, error) {
	ch, byObs, err := bp.csCharge(ctx, ft, rows, decs...)
	if err != nil || ch == nil {
		return ub, err
	}
	kept := bp.used
	bp.charge, bp.trials = ch, csTrials
	bp.trialGoal, bp.goalSet = goal, true
	ubCS, err := bp.upperBound(ctx, ft)
	bp.charge, bp.trials, bp.trialPts, bp.goalSet = nil, 0, nil, false
	if err != nil {
		return ub, err
	}
	if ubCS < ub {
		ub, kept = ubCS, ch
	}
	if byObs != nil && !csOnly {
		ubObs, err := bp.obsBound(ctx, byObs)
		if err != nil {
			return ub, err
		}
		if ubObs < ub {
			ub, kept = ubObs, byObs
		}
	}
	bp.used = kept
	return ub, nil
}

// csOnly (tests) leaves the charge by observation out.
var csOnly bool

// relaxedCharge walks the table of the plan best once more (the same
// rows, so the same table and rollouts), summing along its trajectories
// the tangents the last upper bound's charge (bp.used) took in place of
// the step terms, and records the sums in bp.charged for bonusBoundGap.
// Run only when the stated gap misses TargetGap: it costs one more walk.
func (bp *beliefPlanner) relaxedCharge(ctx context.Context, ft *fallbackTables, rows int64, best planRound) error {
	bp.gamma, bp.kappa = best.gamma, best.kappa
	tw := newTableWalker(bp, ft)
	tw.charge = bp.used
	_, v, _, err := tw.table(ctx, rows)
	if err != nil {
		return err
	}
	bp.charged.set, bp.charged.bonus, bp.charged.lin = true, v.b, v.lin
	return nil
}

// prepareBeliefPlan returns the belief planner of m, with its belief
// points built, and the fallback stand-in tables.
func prepareBeliefPlan(ctx context.Context, m *estimate.Model, bonus *pessimism.Bonus, points, workers int) (*beliefPlanner, *fallbackTables, error) {
	bp, err := newBeliefPlanner(m, bonus, points, workers)
	if err != nil {
		return nil, nil, err
	}
	if err := bp.buildPoints(ctx); err != nil {
		return nil, nil, err
	}
	ft, err := newFallbackTables(m, bonus)
	if err != nil {
		return nil, nil, err
	}
	return bp, ft, nil
}

// planRound is a tangent round's outcome: the policy, its root values,
// the α-sets it was planned with, its table's threshold and the tangent
// point.
type planRound struct {
	pol     *Policy
	v       tval
	gamma   [][2]alphaSet
	eps, x0 float64
	kappa   float64 // the tangent's slope at x0
}

// rounds runs the tangent rounds (see beliefPlan), comparing them on
// tables of at most roundRows rows, and returns the best round (ties to
// the first). The first round plans for the reward alone: slope 0, the
// line at the bonus's cap 1, a tangent of g at its kink 1/α² and past
// it. Each later round plans with the tangent at x₀ = E_π[Σ] of the
// round before, held to at most 1/α²: past the kink every tangent is
// that flat line again, and at the kink the slope is the left
// derivative α²/2, the one that charges Σ (tangentSlope). So when the
// reward's policy saturates the bonus, the next round plans against
// it. When the points were capped, the first round whose policy does
// not saturate the bonus replaces half of them by the beliefs its policy
// reaches (enrich); a saturating round does not, since the round after
// it plans a different policy, which reaches other beliefs.
func (bp *beliefPlanner) rounds(ctx context.Context, ft *fallbackTables, rows int64) (planRound, error) {
	alpha := bp.bonus.Alpha
	sat := saturationPoint(alpha)
	x0, kappa := sat, 0.0
	var best planRound
	enriched := false
	for round := 0; round < tangentRounds; round++ {
		r, reached, err := bp.round(ctx, ft, x0, kappa, min(rows, roundRows), bp.capped && !enriched)
		if err != nil {
			return planRound{}, err
		}
		best.keepBetter(r)
		next := min(r.v.sum, sat)
		if reached != nil && next == sat && alpha > 0 && round+1 < tangentRounds {
			// A policy that saturates the bonus is followed by one planned
			// against it (slope α²/2), which reaches other beliefs: the
			// points are enriched by that round's beliefs, not these.
			reached = nil
		}
		converged := alpha == 0 || (round > 0 && math.Abs(next-x0) <= 1e-3*x0)
		if converged && reached == nil {
			break
		}
		if reached != nil {
			bp.enrich(reached)
			enriched = true
		}
		if !converged {
			x0 = next
		}
		kappa = tangentSlope(alpha, x0)
	}
	return best, nil
}

// saturationPoint is 1/α², where g(x) = min{α√x, 1} saturates (0 when
// α is 0): the first round's tangent point, and the largest of the
// others.
func saturationPoint(alpha float64) float64 {
	if alpha > 0 {
		return 1 / (alpha * alpha)
	}
	return 0
}

// keepBetter replaces the round best by r when best is none yet or r's
// value r − b is larger.
func (best *planRound) keepBetter(r planRound) {
	if best.pol == nil || r.v.r-r.v.b > best.v.r-best.v.b {
		*best = r
	}
}

// round plans with the tangent at x0 of slope kappa and builds the
// policy's table within rows rows; with collect set it also returns the
// beliefs the table's nodes reach, per step.
func (bp *beliefPlanner) round(ctx context.Context, ft *fallbackTables, x0, kappa float64, rows int64, collect bool) (planRound, [][]bpoint, error) {
	bp.kappa = kappa
	if err := bp.backward(ctx); err != nil {
		return planRound{}, nil, err
	}
	tw := newTableWalker(bp, ft)
	if collect {
		tw.reached = make([][]bpoint, bp.H+1)
	}
	pol, v, eps, err := tw.table(ctx, rows)
	if err != nil {
		return planRound{}, nil, err
	}
	return planRound{pol: pol, v: v, gamma: bp.gamma, eps: eps, x0: x0, kappa: kappa}, tw.reached, nil
}

// fullTable rebuilds the table of round best within the full row
// budget when that one held less than the whole tree: the rounds were
// compared on tables of roundRows rows; the chosen one gets its table
// within the full budget.
func (bp *beliefPlanner) fullTable(ctx context.Context, ft *fallbackTables, rows int64, best *planRound) error {
	if !(rows > roundRows && (best.eps > 0 || best.v.out > 0)) {
		return nil
	}
	bp.gamma, bp.kappa = best.gamma, best.kappa
	pol, v, eps, err := newTableWalker(bp, ft).table(ctx, rows)
	if err != nil {
		return err
	}
	best.pol, best.v, best.eps = pol, v, eps
	return nil
}

// stats records the plan's figures in st: the policy best of value v,
// its table's threshold eps, its tangent point x0 and the upper bound ub.
func (bp *beliefPlanner) stats(st *PlanStats, points int, best *Policy, v tval, eps, x0, ub float64) {
	st.Planner = PlannerBelief
	st.Points = points
	st.PointsCapped = bp.capped
	st.HullBound = bp.hullBound
	st.GapTrials, st.GapPoints, st.GapReplanned = bp.search.trials, bp.search.points, bp.search.replanned
	st.Backups = bp.backups
	st.Nodes = int64(len(best.Nodes))
	st.Threshold = eps
	st.UncoveredMass, st.PrunedMass = 0, 0
	st.RolloutMass, st.ValueSE = v.out, v.se()
	st.TangentPoint = x0
	st.ValueReward, st.ValueBonus = v.r, v.b
	st.Value = v.r - v.b
	st.UpperBound = max(ub, st.Value)
	st.GapBound = st.UpperBound - st.Value
	st.BonusBoundGap = min(bp.bonusBoundGap(v), st.GapBound)
	if statedCharge != nil {
		statedCharge(bp.used)
	}
	if bp.used != nil {
		st.BoundCharge = bp.used.name
		if bp.used.name == chargeTop {
			st.TopDepth, st.TopExpanded = bp.top.K, bp.top.expanded
		}
	}
}

// chordOnly (tests) leaves the Cauchy–Schwarz charge out.
var chordOnly bool

// statedCharge, when set (tests), is called with the charge of each
// stated upper bound.
var statedCharge func(*boundCharge)

// bonusBoundGap is how much less than π's bonus the last upper bound's
// relaxation charges the policy π of values v (at least 0; 0 before any
// bound). The relaxation charges base + scale·Σ_{h<H} tan_{h,a_h}·b_h
// (boundCharge). With the tangent sums of relaxedCharge, that charge
// itself. Otherwise (the stated gap is within TargetGap, and the table
// was not walked for the sums), for the chord's charge g(Σ_lo) + c·(Σ_0 +
// Σ_{h<H} ℓ_{h,a_h}·b_h − Σ_lo), the chord at E_π[Σ], which the tangents
// can only lower; for the Cauchy–Schwarz charge, 0 (unknown).
func (bp *beliefPlanner) bonusBoundGap(v tval) float64 {
	ch := bp.used
	if ch == nil {
		return 0
	}
	if bp.charged.set {
		return max(bp.charged.bonus-(ch.base+ch.scale*bp.charged.lin), 0)
	}
	if ch.name != chargeChord {
		return 0
	}
	g0, c, lo := bp.bonus.Value(bp.chord.lo), bp.chord.c, bp.chord.lo
	return max(v.b-(g0+c*(v.sum-lo)), 0)
}

// tangentSlope is the slope of a tangent of g(x) = min{α√x, 1} at x₀:
// α/(2√x₀) up to the saturation point 1/α² included, 0 past it. At the
// kink itself every slope in [0, α²/2] makes a line above g; the left
// derivative α²/2 is the one that charges Σ, which the round after a
// saturating one needs (rounds). (The test α·√x₀ ≥ 1 this replaced was
// true at x₀ = 1/α² in floating point for every α.)
func tangentSlope(alpha, x0 float64) float64 {
	if alpha == 0 || x0 > saturationPoint(alpha) {
		return 0
	}
	x0 = max(x0, 1e-300)
	return alpha / (2 * math.Sqrt(x0))
}

// roundRows bounds the tables on which the tangent rounds are compared;
// the chosen round's table is then rebuilt within the row budget.
const roundRows = 100_000

// upperBound returns a sawtooth upper bound of max_π E_θ̂,π[R − b̂] (the
// relaxed problem of boundRewards, every action allowed everywhere, which
// can only raise the optimum): per step, the values at up to boundPoints belief
// points are backed up against the interpolation of the next step, whose
// corners are the fully observed MDP's optimal values (fallbackTables.
// vmax). The optimal value function of the relaxed problem is convex in
// the belief, so the sawtooth interpolation of upper values is an upper
// value (Hauskrecht 2000, "Value-function approximations for partially
// observable Markov decision processes", JAIR 13).
func (p *beliefPlanner) upperBound(ctx context.Context, ft *fallbackTables) (float64, error) {
	sw, base := p.newSawtooth(ft)
	for h := p.H; h >= 1; h-- {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		pts := p.pts[h]
		n := min(len(pts), boundPoints)
		if p.tightBound {
			n = len(pts)
		}
		if p.hullBound {
			if err := p.addHullPoints(ctx, sw, h, pts[:n]); err != nil {
				return 0, err
			}
			continue
		}
		for i := range n {
			p.addSawtoothPoint(sw, h, pts[i].b)
		}
	}
	if p.trials > 0 {
		if err := p.runTrials(ctx, sw, p.trialGoal+base); err != nil {
			return 0, err
		}
	}
	ub := p.rootUpper(sw)
	if p.tightBound {
		exact, ok, err := p.exactRelaxedBound(ctx, sw)
		if err != nil {
			return 0, err
		}
		if ok {
			ub = min(ub, exact)
		}
	}
	return ub - base, nil
}

// newSawtooth returns the sawtooth with the relaxed rewards and corner
// values of boundRewards and no point yet, and the bound's constant base.
func (p *beliefPlanner) newSawtooth(ft *fallbackTables) (*sawtooth, float64) {
	H, S := p.H, p.S
	sw := &sawtooth{H: H, sets: make([]ubSet, H+2), sc: newSwScratch(S)}
	if p.hullBound {
		sw.sc.hull = &hullScratch{}
	}
	var base float64
	sw.rr, sw.vm, base = p.boundRewards(ft)
	if p.fibAffordable() {
		sw.fib = p.informedBound(sw.rr)
		sw.vm = fibCorners(sw.fib, sw.vm)
	}
	return sw, base
}

// fibCost bounds the multiply–adds of informedBound, |A|²·|O|·S² per
// step: 2²² keeps it to a fraction of a second per plan (the bench's
// problem takes 8192, tiger-grid's 36 states 5.5·10⁵), while a
// vocabulary of thousands of observations and dozens of actions, where
// it would cost seconds per plan, keeps the fully observed corners.
const fibCost = 1 << 22

// fibAffordable is whether informedBound fits fibCost per step.
func (p *beliefPlanner) fibAffordable() bool {
	return float64(p.A)*float64(p.A)*float64(p.O)*float64(p.S)*float64(p.S) <= fibCost
}

// informedBound returns the relaxed problem's fast informed bound
// (Hauskrecht 2000, JAIR 13, section 4.3): per step h and action a the
// vector α_{h,a}(s) = rr_{h,a}(s) + Σ_o max_{a′} Σ_{s′} T_h(s′|s,a)
// E_h(o|s′,a) α_{h+1,a′}(s′), fib[h][a]; max_a α_{h,a}·b bounds the
// relaxed problem's optimal value at every belief b over s_h from above
// (it lets the action after each observation depend on the state before
// it), and it is at most the fully observed values at the corners.
func (p *beliefPlanner) informedBound(rr [][][]float64) [][][]float64 {
	H, A := p.H, p.A
	fib := make([][][]float64, H+2)
	for h := H; h >= 1; h-- {
		fib[h] = make([][]float64, A)
		for a := range A {
			fib[h][a] = p.informedVector(rr, fib, h, a)
		}
	}
	return fib
}

// informedVector is α_{h,a} of informedBound, from the vectors of step
// h+1.
func (p *beliefPlanner) informedVector(rr, fib [][][]float64, h, a int) []float64 {
	S, O := p.S, p.O
	v := append([]float64(nil), rr[h][a]...)
	if h == p.H {
		return v
	}
	st := &p.tab[h][a]
	w := make([]float64, S) // E_h(o|s′,a)·α_{h+1,a′}(s′)
	for s := range S {
		row := st.t[s*S : (s+1)*S]
		for o := range O {
			best := math.Inf(-1)
			for _, next := range fib[h+1] {
				for s2 := range S {
					w[s2] = st.e[s2*O+o] * next[s2]
				}
				best = max(best, dot(row, w))
			}
			v[s] += best
		}
	}
	return v
}

// fibCorners is the informed bound's value at each corner (the belief
// certain of one state), max_a α_{h,a}(s), in place of the fully
// observed values vm where it is lower (it never is higher, up to
// rounding).
func fibCorners(fib [][][]float64, vm [][]float64) [][]float64 {
	out := make([][]float64, len(vm))
	for h, row := range vm {
		out[h] = append([]float64(nil), row...)
		if h >= len(fib) || fib[h] == nil {
			continue
		}
		for s := range out[h] {
			c := math.Inf(-1)
			for _, a := range fib[h] {
				c = max(c, a[s])
			}
			out[h][s] = min(out[h][s], c)
		}
	}
	return out
}

// addSawtoothPoint backs up the relaxed value at point b of step h and
// keeps the point when the value is below the corners' interpolation.
func (p *beliefPlanner) addSawtoothPoint(sw *sawtooth, h int, b []float64) {
	sw.keepPoint(h, b, p.upperBackup(sw, h, b))
}

// keepPoint keeps point b of step h, of backed-up value v, when v is
// below the corners' interpolation.
func (sw *sawtooth) keepPoint(h int, b []float64, v float64) {
	if g := v - dot(sw.vm[h], b); g < 0 {
		sw.sets[h].b = append(sw.sets[h].b, b)
		sw.sets[h].gain = append(sw.sets[h].gain, g)
	}
}

// sawtooth is upperBound's state: the relaxed rewards rr[h][a] and the
// corner values vm[h] (boundRewards), and per step the points whose
// upper value is below the corners' interpolation.
type sawtooth struct {
	H    int
	rr   [][][]float64
	vm   [][]float64
	fib  [][][]float64 // the informed bound's vectors [h][a], nil when too costly
	sets []ubSet
	sc   swScratch // the scratch of sequential backups; its hull is set with HullBound
}

// ubSet is one step's sawtooth points.
type ubSet struct {
	b    [][]float64
	gain []float64 // v_i − corner·b_i (< 0 kept only)
}

// interp is the sawtooth upper value at belief b over s_h (0 past step
// H): the corners' value, lowered by each kept point's gain in
// proportion to its weight at b, by the hull interpolation's gain when
// hull is set (hullbound.go), and by the informed bound where that is
// lower (each bounds the convex optimal value from above, so their
// minimum does).
func (sw *sawtooth) interp(h int, b []float64, hull *hullScratch) float64 {
	if h > sw.H {
		return 0
	}
	c := dot(sw.vm[h], b)
	best := c
	for i, bi := range sw.sets[h].b {
		best = min(best, c+sawtoothWeight(b, bi)*sw.sets[h].gain[i])
	}
	if hull != nil && len(sw.sets[h].b) > 1 {
		best = min(best, c+sw.hullGain(h, b, hull))
	}
	if sw.fib != nil {
		informed := math.Inf(-1)
		for _, a := range sw.fib[h] {
			informed = max(informed, dot(a, b))
		}
		best = min(best, informed)
	}
	return best
}

// sawtoothWeight is the weight of the kept point bi at belief b,
// min_s b(s)/bi(s) over bi's support. Its quotients are most of the
// upper bound's time, so on a processor with AVX2 the leading multiple of
// 4 of them are taken four at a time (minRatioAVX2); each quotient is
// rounded as here, so the weight is the same.
func sawtoothWeight(b, bi []float64) float64 {
	phi, s0 := math.Inf(1), 0
	if n := len(bi) &^ 3; simd.AVX2 && n > 0 {
		_ = b[n-1]
		phi, s0 = minRatioAVX2(&b[0], &bi[0], n), n
	}
	for s := s0; s < len(bi); s++ {
		if x := bi[s]; x > 0 {
			phi = min(phi, b[s]/x)
		}
	}
	return phi
}

// upperBackup is the relaxed problem's backed-up value at belief b over
// s_h: the best action's relaxed reward plus, before step H, the
// sawtooth values of its successors.
func (p *beliefPlanner) upperBackup(sw *sawtooth, h int, b []float64) float64 {
	return p.upperBackupWith(sw, &sw.sc, h, b)
}

// upperBackupWith is upperBackup with the scratch sc.
func (p *beliefPlanner) upperBackupWith(sw *sawtooth, sc *swScratch, h int, b []float64) float64 {
	v := math.Inf(-1)
	for _, q := range p.upperQs(sw, sc, h, b) {
		v = max(v, q)
	}
	return v
}

// upperQs returns upperQ's value of each action at b, in sc's buffer.
// The sequential backups (upperBound's points, the gap search's trials)
// leave the other workers idle, so before the last step, with no hull
// and more than one worker, the actions are valued on the workers, each
// with its own scratch of sc's (sc.acts, made once); the values are the
// same as in turn.
func (p *beliefPlanner) upperQs(sw *sawtooth, sc *swScratch, h int, b []float64) []float64 {
	if len(sc.qs) != p.A {
		sc.qs = make([]float64, p.A)
	}
	qs := sc.qs
	if h >= p.H || sc.hull != nil || parallel.Workers(p.workers) < 2 {
		for a := range p.A {
			qs[a] = p.upperQ(sw, sc, h, a, b)
		}
		return qs
	}
	if len(sc.acts) != p.A {
		sc.acts = make([]swScratch, p.A)
		for a := range sc.acts {
			sc.acts[a] = newSwScratch(p.S)
		}
	}
	_ = parallel.For(context.Background(), p.A, p.workers, func(a int) error {
		qs[a] = p.upperQ(sw, &sc.acts[a], h, a, b)
		return nil
	})
	return qs
}

// upperQ is upperBackup's value of action a: its relaxed reward at b
// plus, before step H, its successors' sawtooth values.
func (p *beliefPlanner) upperQ(sw *sawtooth, sc *swScratch, h, a int, b []float64) float64 {
	O := p.O
	st := &p.tab[h][a]
	q := dot(sw.rr[h][a], b)
	if h < p.H {
		predict(st.t, b, sc.pred)
		for o := 0; o < O; o++ {
			if z := correct(st.e, O, sc.pred, o, sc.next); z > 0 {
				q += z * sw.interp(h+1, sc.next, sc.hull)
			}
		}
	}
	return q
}

// rootUpper is the sawtooth upper value of the root: Σ_o P(o_1 = o)
// times the value at the step-1 belief after o.
func (p *beliefPlanner) rootUpper(sw *sawtooth) float64 {
	return p.rootValue(func(b []float64) float64 { return sw.interp(1, b, sw.sc.hull) })
}

// rootValue is Σ_o P(o_1 = o)·value(b_o), b_o the step-1 belief after o.
func (p *beliefPlanner) rootValue(value func(b []float64) float64) float64 {
	return p.rootValueOf(func(_ int, b []float64) float64 { return value(b) })
}

// rootValueOf is Σ_o P(o_1 = o)·value(o, b_o).
func (p *beliefPlanner) rootValueOf(value func(o int, b []float64) float64) float64 {
	first := make([]float64, p.O)
	p.m.FirstObsProbs(first)
	b := make([]float64, p.S)
	v := 0.0
	for o, po := range first {
		if po == 0 {
			continue
		}
		p.m.Prior(b)
		p.m.ObserveFirst(b, o)
		v += po * value(o, b)
	}
	return v
}

// boundRewards returns the per-step rewards of the relaxed problem whose
// optimum bounds max_π E[R − b̂] from above, the optimal values of its
// fully observed version (the corners of the sawtooth) and the charge's
// constant base (subtracted at the end, see upperBound). The charge is
// p.charge when set (csCharge), otherwise the chord's (chordCharge).
func (p *beliefPlanner) boundRewards(ft *fallbackTables) (rr [][][]float64, vm [][]float64, base float64) {
	ch := p.charge
	if ch == nil {
		ch = p.chordCharge()
	}
	p.used = ch
	rr = p.relaxedRewards(ch)
	return rr, p.cornerValues(rr), ch.base
}

// boundCharge is a lower bound of the bonus that is linear in the
// beliefs along each trajectory: b̂(τ_H) ≥ base + scale·Σ_{1≤h<H}
// tan[h][a_h]·b_h for every trajectory, so that the relaxed problem with
// step rewards (r − scale·tan)·b is an ordinary POMDP whose optimum
// bounds max_π E[R − b̂] from above.
type boundCharge struct {
	base, scale float64
	tan         [][][]float64 // [h][a], 1 ≤ h < H (nil when scale is 0)
	// otan, when not nil, holds the tangents that also depend on the
	// observation o_h on which a_h is chosen, keyed by obsKey, and htan
	// those that depend on the history code c_h (histCodes: o_{h−1},
	// a_{h−1} and o_h), keyed by codeKey; a triple htan lacks takes
	// otan's pair, and a pair otan lacks takes tan[h][a] (obsBound).
	otan, htan map[int][]float64
	codes      histCodes // the keys' sizes and codes
	// stepW is the Cauchy–Schwarz weight of each step term its tangents
	// carry (csWeights; 0 for the chord).
	stepW float64
	// name is chargeChord, chargeCS or chargeCSObs (PlanStats.BoundCharge).
	name string
}

// The names of the charges (PlanStats.BoundCharge).
const (
	chargeChord = "chord"                         // chordCharge
	chargeCS    = "cauchy-schwarz"                // csCharge
	chargeCSObs = "cauchy-schwarz-by-observation" // csCharge's otan, obsBound
	chargeTop   = "exact-first-steps"             // topBound
)

// vec is the charge's vector at step h for action a chosen on the
// history of code c (histCodes): the one of (h, a, c) when the charge
// has it, else the one of (h, a, o_h), else tan[h][a].
func (ch *boundCharge) vec(h, a, c int) []float64 {
	if ch.htan != nil {
		if v, ok := ch.htan[codeKey(h, a, c, ch.codes)]; ok {
			return v
		}
	}
	if ch.otan != nil {
		if v, ok := ch.otan[obsKey(h, a, ch.codes.obs(c), ch.codes.A, ch.codes.O)]; ok {
			return v
		}
	}
	return ch.tan[h][a]
}

// codeKey is the key of (h, a, c) for the codes k.
func codeKey(h, a, c int, k histCodes) int { return (h*k.A+a)*k.n() + c }

// obsKey is the key of (h, a, o) among A actions and O observations.
func obsKey(h, a, o, A, O int) int { return (h*A+a)*O + o }

// chordCharge is the charge of the bonus's chord (and records the chord
// in p.chord).
//
// Every trajectory has Σ ∈ [Σ_lo, Σ_0 + L] with Σ_0 = ‖ψ̄̂(τ_0)‖²_{U_0⁻¹},
// L = Σ_{h≥1} max_{a,s} (m_{h,a})_{ss} (a convex quadratic form on the
// simplex peaks at a vertex) and Σ_lo = Σ_0 + Lmin, Lmin = Σ_{h≥1}
// min_a min_b bᵀm_{h,a}b (simplexQuadLower). On that interval the concave
// bonus lies above its chord, g(Σ) ≥ g(Σ_lo) + c·(Σ − Σ_lo), so E[b̂] ≥
// base + c·E[Σ_h q_h] with base = g(Σ_lo) − c·Lmin; and q_h = bᵀm b ≥ ℓ·b
// for the tangent ℓ of the quadratic form at any fixed belief (here the
// mean of the step's bound points, boundTangents).
func (p *beliefPlanner) chordCharge() *boundCharge {
	L := p.quadMaxSum()
	// Every trajectory also has Σ ≥ Σ_lo = Σ_0 + Lmin, Lmin = Σ_{h≥1}
	// min_a min_{b∈Δ} bᵀm_{h,a}b: the chord over [Σ_lo, Σ_0 + L] is a
	// tighter lower bound of g there (g is concave), and the constant
	// g(Σ_lo) − c·Lmin replaces g(Σ_0) (see upperBound).
	Lmin := min(p.quadMinSum(), L)
	lo, hi := p.bonus.Root+Lmin, p.bonus.Root+L
	c := p.chordSlope(lo, hi)
	p.chord.lo, p.chord.c = lo, c
	ch := &boundCharge{base: p.bonus.Value(lo) - c*Lmin, scale: c, name: chargeChord}
	if c != 0 {
		ch.tan = p.boundTangents()
	}
	return ch
}

// chordSlope is the slope of the bonus's chord over [lo, hi], 0 when
// the interval is empty.
func (p *beliefPlanner) chordSlope(lo, hi float64) float64 {
	if hi > lo {
		return (p.bonus.Value(hi) - p.bonus.Value(lo)) / (hi - lo)
	}
	return 0
}

// quadMaxSum is L = Σ_{1≤h<H} max_{a,s} (m_{h,a})_{ss}, the most the
// step terms past step 0 sum to on any trajectory.
func (p *beliefPlanner) quadMaxSum() float64 {
	L := 0.0
	for h := 1; h < p.H; h++ {
		L += p.quadMax(h)
	}
	return L
}

// quadMax is max_{a,s} (m_{h,a})_{ss}, the largest step-h term on any
// belief (a convex quadratic form on the simplex peaks at a vertex).
func (p *beliefPlanner) quadMax(h int) float64 {
	S := p.S
	mx := 0.0
	for a := 0; a < p.A; a++ {
		for s := 0; s < S; s++ {
			mx = max(mx, p.tab[h][a].m[s*S+s])
		}
	}
	return mx
}

// quadMinSum is Lmin = Σ_{1≤h<H} max(min_a simplexQuadLower(m_{h,a}), 0),
// the least the step terms past step 0 sum to on any trajectory.
func (p *beliefPlanner) quadMinSum() float64 {
	H, S, A := p.H, p.S, p.A
	Lmin := 0.0
	for h := 1; h < H; h++ {
		mn := math.Inf(1)
		for a := 0; a < A; a++ {
			mn = min(mn, simplexQuadLower(p.tab[h][a].m, S))
		}
		Lmin += max(mn, 0)
	}
	return Lmin
}

// relaxedRewards returns the relaxed step rewards rr[h][a] = r −
// scale·tan[h][a] of the charge ch (r alone at step H and when the scale
// is 0).
func (p *beliefPlanner) relaxedRewards(ch *boundCharge) [][][]float64 {
	rr := make([][][]float64, p.H+1)
	for h := 1; h <= p.H; h++ {
		rr[h] = make([][]float64, p.A)
		for a := range p.A {
			rr[h][a] = append([]float64(nil), p.tab[h][a].r...)
			if h == p.H || ch.scale == 0 {
				continue
			}
			for s, t := range ch.tan[h][a] {
				rr[h][a][s] -= ch.scale * t
			}
		}
	}
	return rr
}

// boundTangents returns per step h < H and action a the tangent ℓ of
// the step term bᵀm_{h,a}b at the mean of the step's bound points
// (boundMean): ℓ·b ≤ bᵀm_{h,a}b on the simplex, since the form is
// convex. The chord's charge takes ℓ·b in place of the step term.
func (p *beliefPlanner) boundTangents() [][][]float64 {
	S := p.S
	mu, mmu := make([]float64, S), make([]float64, S)
	tan := make([][][]float64, p.H)
	for h := 1; h < p.H; h++ {
		p.boundMean(h, mu)
		tan[h] = make([][]float64, p.A)
		for a := range p.A {
			tan[h][a] = make([]float64, S)
			subtractTangent(p.tab[h][a].m, mu, mmu, -1, tan[h][a])
		}
	}
	return tan
}

// boundMean sets mu to the mean belief of step h's bound points (the
// first boundPoints).
func (p *beliefPlanner) boundMean(h int, mu []float64) {
	clear(mu)
	n := min(len(p.pts[h]), boundPoints)
	for _, pt := range p.pts[h][:n] {
		for s, x := range pt.b {
			mu[s] += x / float64(n)
		}
	}
}

// subtractTangent subtracts c times the tangent of bᵀmb at b0 on the
// simplex, (2mb0 − b0ᵀmb0·1)·b, from the vector v (mb: scratch).
func subtractTangent(m, b0, mb []float64, c float64, v []float64) {
	S := len(b0)
	for s := 0; s < S; s++ {
		mb[s] = dot(m[s*S:(s+1)*S], b0)
	}
	q := dot(mb, b0)
	for s := range v {
		v[s] -= c * (2*mb[s] - q)
	}
}

// cornerValues returns the optimal values vm[h] of the relaxed problem's
// fully observed version from each state (vm[H+1] = 0).
func (p *beliefPlanner) cornerValues(rr [][][]float64) [][]float64 {
	H, S := p.H, p.S
	vm := make([][]float64, H+2)
	vm[H+1] = make([]float64, S)
	for h := H; h >= 1; h-- {
		vm[h] = make([]float64, S)
		for s := 0; s < S; s++ {
			vm[h][s] = p.cornerValue(rr, vm, h, s)
		}
	}
	return vm
}

// cornerValue is vm[h][s]: the best action's relaxed reward in state s
// plus, before step H, its expected vm[h+1].
func (p *beliefPlanner) cornerValue(rr [][][]float64, vm [][]float64, h, s int) float64 {
	S := p.S
	best := math.Inf(-1)
	for a := 0; a < p.A; a++ {
		v := rr[h][a][s]
		if h < p.H {
			v += dot(p.tab[h][a].t[s*S:(s+1)*S], vm[h+1])
		}
		best = max(best, v)
	}
	return best
}

// simplexQuadLower is a lower bound of min_{b∈Δ} bᵀMb for a positive
// semi-definite S×S matrix M (row-major). Accelerated projected gradient
// (FISTA, step 1/(2·trace M)) approaches the minimiser; at each iterate
// the linearisation certifies f(b) + min_s ∇f(b)_s − ∇f(b)·b ≤ min f (f
// is convex, so it lies above its tangent plane, whose minimum over the
// simplex is at a vertex). The best certificate is returned: exact at the
// minimiser (where the gradient is constant on the support and no smaller
// off it), a valid bound before it.
func simplexQuadLower(M []float64, S int) float64 {
	tr := trace(M, S)
	if !(tr > 0) {
		return 0
	}
	q := &simplexQuad{M: M, g: make([]float64, S), best: math.Inf(-1)}
	q.run(1/(2*tr), S)
	return q.best
}

// run runs 500 iterations of accelerated projected gradient (FISTA) of
// step size step from the simplex's centre, certifying each iterate.
func (q *simplexQuad) run(step float64, S int) {
	b := uniform(S)
	y := append([]float64(nil), b...)
	prev := make([]float64, S)
	tk := 1.0
	for it := 0; it < 500; it++ {
		q.gradStep(b, y, prev, step)
		tn := (1 + math.Sqrt(1+4*tk*tk)) / 2
		extrapolate(y, b, prev, (tk-1)/tn)
		tk = tn
	}
}

// gradStep is FISTA's projected gradient step from y into b (prev: the
// last b), with the certificate of the new point.
func (q *simplexQuad) gradStep(b, y, prev []float64, step float64) {
	q.grad(y)
	copy(prev, b)
	for s := range b {
		b[s] = y[s] - step*q.g[s]
	}
	projectSimplex(b)
	q.certify(b)
}

// uniform is the uniform distribution on S states.
func uniform(S int) []float64 {
	b := make([]float64, S)
	for s := range b {
		b[s] = 1 / float64(S)
	}
	return b
}

// extrapolate sets y to FISTA's next point b + c·(b − prev).
func extrapolate(y, b, prev []float64, c float64) {
	for s := range y {
		y[s] = b[s] + c*(b[s]-prev[s])
	}
}

// trace is the trace of the S×S matrix M (row-major).
func trace(M []float64, S int) float64 {
	tr := 0.0
	for s := 0; s < S; s++ {
		tr += M[s*S+s]
	}
	return tr
}

// simplexQuad is simplexQuadLower's f(b) = bᵀMb (M S×S, row-major): its
// gradient g at the last point and the best certificate so far.
type simplexQuad struct {
	M, g []float64
	best float64
}

// grad sets g to ∇f(x) = 2Mx.
func (q *simplexQuad) grad(x []float64) {
	S := len(q.g)
	for s := 0; s < S; s++ {
		q.g[s] = 2 * dot(q.M[s*S:(s+1)*S], x)
	}
}

// certify raises best to the bound f(x) + min_s ∇f(x)_s − ∇f(x)·x on
// min f that the linearisation at x certifies.
func (q *simplexQuad) certify(x []float64) {
	q.grad(x)
	gx := dot(q.g, x)
	mn := q.g[0]
	for _, v := range q.g {
		mn = min(mn, v)
	}
	q.best = max(q.best, gx/2+mn-gx)
}

// projectSimplex replaces x by its Euclidean projection on the
// probability simplex (Duchi et al. 2008: shift by the threshold that
// makes the positive parts sum to one).
func projectSimplex(x []float64) {
	theta := simplexShift(x)
	for i := range x {
		x[i] = max(x[i]-theta, 0)
	}
}

// simplexShift is the threshold θ of projectSimplex: over x sorted in
// decreasing order, the last (Σ_{j≤i} x_j − 1)/i still below x_i.
func simplexShift(x []float64) float64 {
	u := append([]float64(nil), x...)
	slices.Sort(u)
	sum, theta := 0.0, 0.0
	for i := len(u) - 1; i >= 0; i-- {
		sum += u[i]
		if t := (sum - 1) / float64(len(u)-i); u[i] > t {
			theta = t
		} else {
			break
		}
	}
	return theta
}
