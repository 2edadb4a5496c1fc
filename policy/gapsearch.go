package policy

import (
	"context"
	"math"
)

// The gap search: points where the stated gap comes from.
//
// The belief planner's points are the most probable beliefs of the
// forward expansion and those its own policy reaches. The upper bound is
// only as tight as its points where the relaxed problem's best actions
// lead, and the plan only as good as its points where the better actions
// lead; neither need be where the points are. When the final plan's
// stated gap is above TargetGap, trials of heuristic search value
// iteration's kind (Smith & Simmons, "Heuristic search value iteration
// for POMDPs", UAI 2004) go and look: from the root, each trial follows
// the action of the largest upper value and the observation of the
// largest probability-weighted excess of the upper bound over a lower
// bound of the same relaxed problem (relaxedGuide), to the horizon or
// until no observation has an excess, and backs both bounds up at the
// beliefs it passed, deepest first. A trial that passes no belief not
// already passed ends them; at most gapTrials are run. The beliefs the
// trials passed then join the plan's points, the plan is backed up again
// at the same tangent point, and it replaces the first when its value on
// the model is larger by more than two Monte Carlo standard errors of
// each (rollouts value the histories past the tables). The upper bound
// is computed once more with the new points and new trials, and the
// stated upper bound is the least of the bounds computed (each is one).
//
// The trials cannot make the stated figures wrong: the upper bound's
// backups are valid at any belief, and the plan kept is the one of larger
// value. They can only cost time: on the long-horizon cells where the
// gap was above 0.02 it cost seconds to tens of seconds
// (docs/planning.md, "The gap search").

// gapTrials bounds the trials of one gap search. On mini-hall2 at H = 20
// they go stale (pass no new belief) before 50; on bench/fit.sh's model
// they do not, and 64 keep them to about 3 s of its 44 s fit, where 500
// took 9 s for a stated gap of 0.0258 instead of 0.0265.
const gapTrials = 64

// trialExcess is the least excess, upper bound over the plan's value at
// a belief weighted by its observation's probability, that a trial
// follows.
const trialExcess = 1e-9

// gapSearch runs the gap search (above) for the round best of upper
// bound ub, within rows table rows, and returns the round kept and the
// stated upper bound.
func (bp *beliefPlanner) gapSearch(ctx context.Context, ft *fallbackTables, rows int64, best planRound, ub float64) (planRound, float64, error) {
	bp.gamma, bp.kappa = best.gamma, best.kappa
	bp.trials = gapTrials
	ubTrials, err := bp.upperBound(ctx, ft)
	bp.trials = 0
	if err != nil {
		return best, ub, err
	}
	ub = min(ub, ubTrials)
	bp.search.trials = bp.trialsRun
	if bp.trialPts == nil {
		return best, ub, nil
	}
	for h := 1; h <= bp.H; h++ {
		extra := mergePoints(bp.trialPts[h])
		bp.search.points += len(extra)
		bp.pts[h] = appendUnseen(extra, bp.pts[h], len(extra)+len(bp.pts[h]))
	}
	bp.trialPts = nil
	if err := bp.backward(ctx); err != nil {
		return best, ub, err
	}
	pol, v, eps, err := newTableWalker(bp, ft).table(ctx, rows)
	if err != nil {
		return best, ub, err
	}
	// Rollouts value both plans past their tables: the new one must be
	// better by two standard errors of each, not by their noise.
	if v.r-v.b-2*v.se() > best.v.r-best.v.b+2*best.v.se() {
		best = planRound{pol: pol, v: v, gamma: bp.gamma, eps: eps, x0: best.x0, kappa: best.kappa}
		bp.search.replanned = true
	}
	bp.trials = gapTrials
	ubPoints, err := bp.upperBound(ctx, ft)
	bp.trials, bp.trialPts = 0, nil
	if err != nil {
		return best, ub, err
	}
	return best, min(ub, ubPoints), nil
}

// runTrials runs up to bp.trials trials on the sawtooth sw (see above)
// and keeps the beliefs they passed in bp.trialPts. With a goal
// (bp.goalSet: the bound bp.trialGoal, here goal with the bound's
// constant base added back) they stop early, checked after every
// gapTrials trials (trialsWorthGoing).
func (bp *beliefPlanner) runTrials(ctx context.Context, sw *sawtooth, goal float64) error {
	guide, err := bp.relaxedGuide(ctx, sw.rr)
	if err != nil {
		return err
	}
	bp.guide = guide
	defer func() { bp.guide = nil }()
	seen := map[string]bool{}
	bp.trialsRun = 0
	var last float64
	if bp.goalSet {
		last = bp.rootUpper(sw)
	}
	for range bp.trials {
		if bp.goalSet && bp.trialsRun > 0 && bp.trialsRun%gapTrials == 0 {
			u := bp.rootUpper(sw)
			if !bp.trialsWorthGoing(last, u, goal) {
				break
			}
			last = u
		}
		bp.trialsRun++
		if err := ctx.Err(); err != nil {
			return err
		}
		path, hs := bp.trialPath(sw)
		fresh := false
		for i := len(path) - 1; i >= 0; i-- {
			bp.addSawtoothPoint(sw, hs[i], path[i].b)
			guide.backupPoint(hs[i], path[i])
			if !seen[path[i].key] {
				seen[path[i].key], fresh = true, true
				bp.keepTrialPoint(hs[i], path[i])
			}
		}
		if !fresh {
			break
		}
	}
	return nil
}

// trialsWorthGoing says whether trials should go on after a batch of
// gapTrials that took the root bound from last to u: not once u meets
// the goal, nor when the batches left, each lowering the bound as much
// as this one did, could not reach it (the bound's decrease per trial
// falls as the trials go: the straight line is optimistic).
func (bp *beliefPlanner) trialsWorthGoing(last, u, goal float64) bool {
	if u <= goal {
		return false
	}
	left := float64(bp.trials-bp.trialsRun) / gapTrials
	return left*(last-u) >= u-goal
}

// keepTrialPoint records the belief pt that a trial passed at step h.
func (bp *beliefPlanner) keepTrialPoint(h int, pt bpoint) {
	if bp.trialPts == nil {
		bp.trialPts = make([][]bpoint, bp.H+1)
	}
	bp.trialPts[h] = append(bp.trialPts[h], pt)
}

// trialPath is one trial's path: the beliefs it passes and their steps.
func (bp *beliefPlanner) trialPath(sw *sawtooth) (path []bpoint, hs []int) {
	pt, ok := bp.firstTrialPoint(sw)
	for h := 1; ok; h++ {
		path, hs = append(path, pt), append(hs, h)
		if h == bp.H {
			break
		}
		pt, ok = bp.nextTrialPoint(sw, h, pt.b)
	}
	return path, hs
}

// firstTrialPoint is the step-1 belief of the largest weighted excess;
// false when none has an excess.
func (bp *beliefPlanner) firstTrialPoint(sw *sawtooth) (bpoint, bool) {
	first := make([]float64, bp.O)
	bp.m.FirstObsProbs(first)
	var best bpoint
	bestX := trialExcess
	for o, po := range first {
		if po == 0 {
			continue
		}
		pt := bp.firstPoint(o, po)
		if x := po * bp.excess(sw, 1, pt.b, pt.end); x > bestX {
			best, bestX = pt, x
		}
	}
	return best, bestX > trialExcess
}

// nextTrialPoint is the successor of belief b of step h under the action
// of the largest upper value, after the observation of the largest
// weighted excess; false when none has an excess.
func (bp *beliefPlanner) nextTrialPoint(sw *sawtooth, h int, b []float64) (bpoint, bool) {
	sc := &sw.sc
	act, top := 0, math.Inf(-1)
	for a, q := range bp.upperQs(sw, sc, h, b) {
		if q > top {
			act, top = a, q
		}
	}
	st := &bp.tab[h][act]
	pred, next := sc.pred, sc.next // free again once upperQ has returned
	predict(st.t, b, pred)
	var best bpoint
	bestX := trialExcess
	for o := 0; o < bp.O; o++ {
		z := correct(st.e, bp.O, pred, o, next)
		if z <= 0 {
			continue
		}
		end := o == bp.endObs
		if x := z * bp.excess(sw, h+1, next, end); x > bestX {
			best, bestX = newPoint(next, z, o, end), x
		}
	}
	return best, bestX > trialExcess
}

// excess is the upper bound's value at belief b of step h less the
// guide's lower vectors' (relaxedGuide: both bound the same relaxed
// problem's optimal value, from above and below).
func (bp *beliefPlanner) excess(sw *sawtooth, h int, b []float64, end bool) float64 {
	g := bp.guide.alphaFor(h, end)
	lower := 0.0
	if len(g.vec) > 0 {
		lower, _ = g.bestRowwise(bp.S, b)
	}
	return sw.interp(h, b, nil) - lower
}

// relaxedGuide returns a copy of the planner whose step rewards are the
// relaxed problem's rr (κ = 0), with its point-based vectors backed up
// on the bound's points. Its rewards are linear in the belief, so the
// relaxed problem's optimal value is convex and each vector lies below
// it: the trials compare the sawtooth with a lower bound of the same
// function (heuristic search value iteration's two bounds), in the same
// units. The plan's own vectors price the surrogate bonus without its
// constant and, being tangent planes of a concave reward, overvalue it
// away from their points (docs/planning.md, "The gap search").
func (bp *beliefPlanner) relaxedGuide(ctx context.Context, rr [][][]float64) (*beliefPlanner, error) {
	g := *bp
	g.kappa, g.trials, g.trialPts = 0, 0, nil
	g.tab = make([][]stepTables, len(bp.tab))
	g.pts = make([][]bpoint, len(bp.pts))
	for h := 1; h <= bp.H; h++ {
		g.tab[h] = make([]stepTables, bp.A)
		for a := range bp.A {
			g.tab[h][a] = bp.tab[h][a]
			g.tab[h][a].r = rr[h][a]
		}
		g.pts[h] = bp.pts[h][:min(len(bp.pts[h]), boundPoints)]
	}
	if err := g.backward(ctx); err != nil {
		return nil, err
	}
	return &g, nil
}

// backupPoint adds to the guide's vectors of step h the backup at the
// belief pt (heuristic search value iteration's lower-bound update), so
// that the next trial goes elsewhere once this belief's bounds meet.
func (bp *beliefPlanner) backupPoint(h int, pt bpoint) {
	sc := newBackupScratch(bp.S, bp.O)
	bestA, bestV := -1, math.Inf(-1)
	choice := make([]int, bp.O) // the best action's successor vectors
	for _, a := range bp.acts(pt.end) {
		if v := bp.qValue(h, pt.b, a, sc); v > bestV {
			bestA, bestV = a, v
			copy(choice, sc.choice)
		}
	}
	if bestA < 0 {
		return
	}
	copy(sc.choice, choice)
	vec := make([]float64, bp.S)
	bp.vector(h, pt.b, bestA, sc, vec)
	g := &bp.gamma[h][class(pt.end)]
	g.vec = append(g.vec, vec...)
	g.act = append(g.act, bestA)
	g.finish(bp.S)
}
