package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
)

// TestCauchySchwarzCharge: the Cauchy–Schwarz charge is a lower bound of
// the bonus on every trajectory of every policy, and the upper bound it
// gives lies above the exact optimum. On random models (H = 3 to 5, α =
// 1 and, where the cap binds, 10; the plan's tangent points) every
// action and observation sequence is enumerated: base + scale·Σ_h
// tan_{h,a_h}·b_h must be at most g(Σ) = min{α√Σ, 1} at the end of each
// (10⁻¹² of rounding); the charge
// must reach above the chord's on some trajectory (it is a different
// line, not a weaker copy), and the sawtooth bound with it must be at
// least the exact planner's optimum (10⁻⁹), and strictly below the
// chord's bound on some model.
func TestCauchySchwarzCharge(t *testing.T) {
	ctx := context.Background()
	above, tighter := 0, 0
	eachBoundCase(t, 53, chargeSpec, func(c boundCase) {
		if c.alpha == 0 {
			return
		}
		bp, ft, ch, _ := plannedCharges(t, c.m, c.b)
		if ch == nil || ch.name != chargeCS {
			t.Fatalf("seed %d: no Cauchy–Schwarz charge at α = %g", c.seed, c.alpha)
		}
		chord := bp.chordCharge()
		worst, gain := eachTrajectory(bp, c.b, ch, chord)
		if worst > 1e-12 {
			t.Errorf("seed %d: the charge is %g above the bonus on some trajectory", c.seed, worst)
		}
		if gain > 1e-9 {
			above++
		}
		// At α = 10 the cap binds: the charge is scaled by γ < 1.
		big := c.b.WithAlpha(10)
		bb, bft, err := prepareBeliefPlan(ctx, c.m, big, 50, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bb.rounds(ctx, bft, roundRows); err != nil {
			t.Fatal(err)
		}
		chBig, _, err := bb.csCharge(ctx, bft, roundRows, nil)
		if err != nil {
			t.Fatal(err)
		}
		if w, _ := eachTrajectory(bb, big, chBig, bb.chordCharge()); w > 1e-12 {
			t.Errorf("seed %d α 10: the charge is %g above the bonus on some trajectory", c.seed, w)
		}
		if chBig.scale >= 10 {
			t.Errorf("seed %d α 10: scale %v, want γ·α below α (the cap binds)", c.seed, chBig.scale)
		}
		ubChord, err := bp.upperBound(ctx, ft)
		if err != nil {
			t.Fatal(err)
		}
		ubCS := boundWith(t, bp, ft, ch)
		t.Logf("seed %d: optimum %.6f, bound with the chord %.6f, with Cauchy–Schwarz %.6f", c.seed, c.ex.Value, ubChord, ubCS)
		if ubCS < c.ex.Value-1e-9 {
			t.Errorf("seed %d: Cauchy–Schwarz bound %v below the optimum %v", c.seed, ubCS, c.ex.Value)
		}
		if ubCS < ubChord-1e-6 {
			tighter++
		}
	})
	if above == 0 || tighter == 0 {
		t.Errorf("the charge above the chord's on some trajectory on %d models, the bound tighter on %d: want both > 0", above, tighter)
	}
}

// plannedCharges plans m with bonus b (the tangent rounds, 50 points)
// and returns the planner, its fallback tables and the plan's
// Cauchy–Schwarz charges, with one tangent per step and action and by
// observation.
func plannedCharges(t *testing.T, m *estimate.Model, b *pessimism.Bonus) (*beliefPlanner, *fallbackTables, *boundCharge, *boundCharge) {
	t.Helper()
	ctx := context.Background()
	bp, ft, err := prepareBeliefPlan(ctx, m, b, 50, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bp.rounds(ctx, ft, roundRows); err != nil {
		t.Fatal(err)
	}
	ch, byObs, err := bp.csCharge(ctx, ft, roundRows, nil)
	if err != nil {
		t.Fatal(err)
	}
	return bp, ft, ch, byObs
}

// boundWith is bp's upper bound with the charge ch.
func boundWith(t *testing.T, bp *beliefPlanner, ft *fallbackTables, ch *boundCharge) float64 {
	t.Helper()
	bp.charge = ch
	ub, err := bp.upperBound(context.Background(), ft)
	bp.charge = nil
	if err != nil {
		t.Fatal(err)
	}
	return ub
}

// eachTrajectory enumerates every action and observation sequence of
// bp's model and returns the largest excess of the charge ch over the
// bonus g(Σ) at a trajectory's end, and the largest excess of ch over
// the charge other there.
func eachTrajectory(bp *beliefPlanner, bonus *pessimism.Bonus, ch, other *boundCharge) (worst, gain float64) {
	worst, gain = -1, -1
	// c is the history code of (o_{h−1}, a_{h−1}, o_h), the key of the
	// charges' tangents by history.
	var walk func(h, o, c int, b []float64, sum, lin, linOther float64)
	walk = func(h, o, c int, b []float64, sum, lin, linOther float64) {
		if h == bp.H {
			c := ch.base + ch.scale*lin
			worst = max(worst, c-bonus.Value(sum))
			gain = max(gain, c-(other.base+other.scale*linOther))
			return
		}
		for a := 0; a < bp.A; a++ {
			st := &bp.tab[h][a]
			s := sum + max(quad(st.m, b), 0)
			l, lo := lin+dot(ch.vec(h, a, c), b), linOther
			if other.tan != nil {
				lo += dot(other.vec(h, a, c), b)
			}
			pred := make([]float64, bp.S)
			predict(st.t, b, pred)
			for o2 := 0; o2 < bp.O; o2++ {
				next := make([]float64, bp.S)
				if correct(st.e, bp.O, pred, o2, next) > 0 {
					walk(h+1, o2, bp.codes.next(o, a, o2), next, s, l, lo)
				}
			}
		}
	}
	eachFirstBelief(bp, func(o int, _ float64, b []float64) { walk(1, o, bp.codes.first(o), b, bonus.Root, 0, 0) })
	return worst, gain
}

// eachFirstBelief calls f with o_1, P(o_1) and the step-1 belief of each
// first observation o_1 of positive probability.
func eachFirstBelief(bp *beliefPlanner, f func(o int, po float64, b []float64)) {
	first := make([]float64, bp.O)
	bp.m.FirstObsProbs(first)
	for o, po := range first {
		if po == 0 {
			continue
		}
		b := make([]float64, bp.S)
		bp.m.Prior(b)
		bp.m.ObserveFirst(b, o)
		f(o, po, b)
	}
}

// TestCauchySchwarzChargeStops: the charge's rollouts stop with the
// context's error once it is cancelled (an interrupted fit does not wait
// for them).
func TestCauchySchwarzChargeStops(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 53))
	m, b := uniformLogsModel(t, rng, pessimismtest.Spec{States: 3, Obs: 2, Actions: 2, Horizon: 4}, 200)
	bp, ft, err := prepareBeliefPlan(context.Background(), m, b.WithAlpha(1), 50, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bp.rounds(context.Background(), ft, roundRows); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ch, _, err := bp.csCharge(ctx, ft, roundRows, nil); !errors.Is(err, context.Canceled) || ch != nil {
		t.Fatalf("cancelled: charge %v, error %v; want nil and context.Canceled", ch, err)
	}
	if ch, _, err := bp.csCharge(context.Background(), ft, roundRows, nil); err != nil || ch == nil {
		t.Fatalf("not cancelled: charge %v, error %v", ch, err)
	}
}

// TestChargeByObservation: the Cauchy–Schwarz charge with tangents per
// step, action and observation (csCharge's second charge) lies below the
// bonus on every trajectory, and the bound obsBound gives with it lies
// above the exact optimum. Random models as in TestCauchySchwarzCharge
// (α = 1 and 10); every action and observation sequence is enumerated
// (10⁻¹² of rounding; the bound within 10⁻⁹ of the optimum at least).
// The charge must lie above the one-tangent charge on some trajectory
// and the bound below the one-tangent charge's (upperBound, no trials)
// on some model: the observation is what the charge gains. The bound is
// the same with 1 and 3 workers.
func TestChargeByObservation(t *testing.T) {
	ctx := context.Background()
	above, tighter, deeper := 0, 0, 0
	eachBoundCase(t, 59, chargeSpec, func(c boundCase) {
		if c.alpha == 0 {
			return
		}
		for _, alpha := range []float64{c.alpha, 10} {
			b := c.b.WithAlpha(alpha)
			bp, ft, ch, byObs := plannedCharges(t, c.m, b)
			if byObs == nil || byObs.name != chargeCSObs {
				t.Fatalf("seed %d α %g: no charge by observation", c.seed, alpha)
			}
			worst, gain := eachTrajectory(bp, b, byObs, ch)
			if worst > 1e-12 {
				t.Errorf("seed %d α %g: the charge by observation is %g above the bonus on some trajectory", c.seed, alpha, worst)
			}
			if gain > 1e-9 {
				above++
			}
			if alpha != c.alpha {
				continue
			}
			ubObs, err := bp.obsBound(ctx, byObs)
			if err != nil {
				t.Fatal(err)
			}
			bp.workers = 3
			if again, err := bp.obsBound(ctx, byObs); err != nil || again != ubObs {
				t.Errorf("seed %d: bound by observation %v with 3 workers, %v with 1 (%v)", c.seed, again, ubObs, err)
			}
			ubCS := boundWith(t, bp, ft, ch)
			if !bp.codes.deep || byObs.htan == nil {
				t.Fatalf("seed %d: the codes are not of two observations (%v) or the charge has no tangent by them", c.seed, bp.codes)
			}
			// The same with tangents by o_h alone.
			shallowCodes = true
			bp1, _, _, byObs1 := plannedCharges(t, c.m, b)
			shallowCodes = false
			worst1, _ := eachTrajectory(bp1, b, byObs1, ch)
			ub1, err := bp1.obsBound(ctx, byObs1)
			if err != nil || worst1 > 1e-12 || bp1.codes.deep {
				t.Fatalf("seed %d: by o_h alone, excess %g, codes %v (%v)", c.seed, worst1, bp1.codes, err)
			}
			t.Logf("seed %d: optimum %.6f, bound with one tangent %.6f, by o_h %.6f, by (o_{h−1}, a_{h−1}, o_h) %.6f", c.seed, c.ex.Value, ubCS, ub1, ubObs)
			for _, u := range []float64{ubObs, ub1} {
				if u < c.ex.Value-1e-9 {
					t.Errorf("seed %d: bound by observation %v below the optimum %v", c.seed, u, c.ex.Value)
				}
			}
			if ub1 < ubCS-1e-6 {
				tighter++
			}
			if ubObs < ub1-1e-6 {
				deeper++
			}
		}
	})
	if above == 0 || tighter == 0 || deeper == 0 {
		t.Errorf("the charge by observation above the one-tangent charge on some trajectory on %d models, the bound by o_h tighter on %d, by two observations tighter still on %d: want all > 0", above, tighter, deeper)
	}
}

// The charges fitted to the relaxed problem's own plan, alone and pooled
// with the written plan (csBound's rounds), lie below the bonus on every
// trajectory of random models
// (enumerated), and the bound csBound states with them holds the exact
// optimum, is never above the bound of the plan's charges alone, is
// below it on some model, and does not depend on the workers. The
// rounds are forced (chargeRoundGap lowered) on models whose gaps are
// small.
func TestChargeRounds(t *testing.T) {
	defer func(g float64) { chargeRoundGap = g }(chargeRoundGap)
	ctx := context.Background()
	lower := 0
	eachBoundCase(t, 61, chargeSpec, func(c boundCase) {
		if c.alpha == 0 {
			return
		}
		bound := func(workers int, rounds bool) (float64, *beliefPlanner, *fallbackTables) {
			chargeRoundGap = math.Inf(1)
			if rounds {
				chargeRoundGap = -1
			}
			bp, ft, err := prepareBeliefPlan(ctx, c.m, c.b, 50, workers)
			if err != nil {
				t.Fatal(err)
			}
			best, err := bp.rounds(ctx, ft, roundRows)
			if err != nil {
				t.Fatal(err)
			}
			ub, err := bp.csBound(ctx, ft, roundRows, best, math.Inf(1))
			if err != nil {
				t.Fatal(err)
			}
			return ub, bp, ft
		}
		ub0, bp, ft := bound(1, false)
		g, err := bp.relaxedGuide(ctx, bp.relaxedRewards(bp.used))
		if err != nil {
			t.Fatal(err)
		}
		ch, byObs, err := bp.csCharge(ctx, ft, roundRows, g)
		if err != nil {
			t.Fatal(err)
		}
		pch, pbyObs, err := bp.csCharge(ctx, ft, roundRows, nil, g)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range []*boundCharge{ch, byObs, pch, pbyObs} {
			if x == nil {
				continue
			}
			if worst, _ := eachTrajectory(bp, c.b, x, x); worst > 1e-12 {
				t.Errorf("seed %d: the charge %s fitted to the relaxed plan is %g above the bonus on some trajectory", c.seed, x.name, worst)
			}
		}
		ub, _, _ := bound(1, true)
		again, _, _ := bound(3, true)
		t.Logf("seed %d: optimum %.6f, bound %.6f, with the rounds %.6f", c.seed, c.ex.Value, ub0, ub)
		switch {
		case again != ub:
			t.Errorf("seed %d: bound %v with 3 workers, %v with 1", c.seed, again, ub)
		case ub < c.ex.Value-1e-9:
			t.Errorf("seed %d: bound %v below the optimum %v", c.seed, ub, c.ex.Value)
		case ub > ub0:
			t.Errorf("seed %d: bound %v with the rounds above %v without", c.seed, ub, ub0)
		case ub < ub0-1e-6:
			lower++
		}
	})
	if lower == 0 {
		t.Error("the rounds lowered the bound on no model")
	}
}

// chargeSpec is the shape of the random models of the charge tests: 2
// to 4 states, 2 or 3 observations and
// actions, 3 to 5 steps.
func chargeSpec(seed uint64) pessimismtest.Spec {
	return pessimismtest.Spec{States: 2 + int(seed%3), Obs: 2 + int(seed%2), Actions: 2 + int(seed%2), Horizon: 3 + int(seed%3)}
}

// The trials of a Cauchy–Schwarz bound go on while the batches left, at
// the last batch's pace, could reach the goal, and stop once the bound
// meets it (values worked by hand: 512 trials, batches of 64).
func TestTrialsWorthGoing(t *testing.T) {
	bp := &beliefPlanner{trials: 8 * gapTrials}
	for _, c := range []struct {
		run           int
		last, u, goal float64
		want          bool
	}{
		{64, 1.0, 0.9, 0.5, true},   // 7 batches × 0.1 ≥ 0.4
		{64, 1.0, 0.98, 0.5, false}, // 7 × 0.02 < 0.48
		{64, 1.0, 0.5, 0.5, false},  // met
		{448, 1.0, 0.8, 0.5, false}, // 1 × 0.2 < 0.3
		{448, 1.0, 0.7, 0.5, true},  // 1 × 0.3 ≥ 0.2
		{512, 1.0, 0.6, 0.5, false}, // none left
	} {
		bp.trialsRun = c.run
		if got := bp.trialsWorthGoing(c.last, c.u, c.goal); got != c.want {
			t.Errorf("after %d trials, bound %v → %v, goal %v: %v, want %v", c.run, c.last, c.u, c.goal, got, c.want)
		}
	}
}

// TestCSWeights: the Cauchy–Schwarz weights on values worked by hand.
// Root term 0.04 (√ = 0.2) and four steps whose roots sum to 0.6 on
// average: w0 = 0.2/√(0.04 + 0.3²) = 0.55470 and each step's weight
// √(1 − w0²)/2 = 0.41603. Their squares sum to 1; on the trajectory
// with the plan's split (each step's root 0.15) the weighted sum equals
// √Σ = √0.13 (the inequality is tight there), and on a trajectory whose
// steps differ (roots 0.5, 0, 0, 0.1) it stays below √Σ. Without steps
// the root takes the whole weight; with neither term the weights are
// equal. Tolerance 10⁻⁵ on the hand values, 10⁻¹² on the identities.
func TestCSWeights(t *testing.T) {
	w0, w := csWeights(0.04, 0.6, 5)
	if math.Abs(w0-0.55470) > 1e-5 || math.Abs(w-0.41603) > 1e-5 {
		t.Fatalf("weights %v, %v, want 0.55470, 0.41603", w0, w)
	}
	if n := w0*w0 + 4*w*w; math.Abs(n-1) > 1e-12 {
		t.Errorf("squared weights sum to %v, want 1", n)
	}
	if z, want := w0*0.2+w*0.6, math.Sqrt(0.13); math.Abs(z-want) > 1e-12 {
		t.Errorf("weighted sum at the plan's split %v, want √0.13 = %v", z, want)
	}
	if z, root := w0*0.2+w*(0.5+0.1), math.Sqrt(0.04+0.25+0.01); z > root {
		t.Errorf("weighted sum %v above √Σ = %v", z, root)
	}
	if w0, w := csWeights(0.3, 0, 1); w0 != 1 || w != 0 {
		t.Errorf("H = 1: weights %v, %v, want 1, 0", w0, w)
	}
	if w0, w := csWeights(0, 0, 4); w0 != 0.5 || w != 0.5 {
		t.Errorf("no terms: weights %v, %v, want equal 0.5", w0, w)
	}
	// A tiny root term leaves the steps nearly the whole weight.
	if w0, w := csWeights(1e-10, 1, 10); w0 > 1e-4 || math.Abs(w-1/3.0) > 1e-8 {
		t.Errorf("tiny root: weights %v, %v, want ≈ 0 and 1/3", w0, w)
	}
}

// TestHistCodes: the history codes of two observations number the
// suffixes (o_{h−1}, a_{h−1}, o_h) and the step-1 observations one to
// one, within [0, n), each code ending in its observation; next reads
// only the last observation of the code before. With one observation
// the code is o_h.
func TestHistCodes(t *testing.T) {
	const O, A = 3, 2
	k := histCodes{deep: true, A: A, O: O}
	seen := map[int]string{}
	use := func(c int, what string, o int) {
		if c < 0 || c >= k.n() {
			t.Fatalf("%s: code %d outside [0, %d)", what, c, k.n())
		}
		if prev, ok := seen[c]; ok {
			t.Fatalf("%s and %s share code %d", what, prev, c)
		}
		seen[c] = what
		if k.obs(c) != o {
			t.Errorf("%s: code %d ends in %d, want %d", what, c, k.obs(c), o)
		}
	}
	for o := range O {
		use(k.first(o), fmt.Sprint("first ", o), o)
		for op := range O {
			for a := range A {
				use(k.next(op, a, o), fmt.Sprint("(", op, a, o, ")"), o)
			}
		}
		if got := len(k.at(2, o)); got != O*A {
			t.Errorf("codes of step 2 ending in %d: %d, want %d", o, got, O*A)
		}
		if got := k.at(1, o); len(got) != 1 || got[0] != k.first(o) {
			t.Errorf("codes of step 1 ending in %d: %v, want [%d]", o, got, k.first(o))
		}
	}
	if len(seen) != (O+1)*A*O-(A-1)*O {
		t.Errorf("%d codes used, want %d", len(seen), (O+1)*A*O-(A-1)*O)
	}
	one := histCodes{A: A, O: O}
	if one.n() != O || one.first(2) != 2 || one.next(1, 1, 2) != 2 || one.obs(2) != 2 {
		t.Errorf("codes of one observation: n %d, first(2) %d, next(1,1,2) %d", one.n(), one.first(2), one.next(1, 1, 2))
	}
}

// TestShownStep: the least change of a stated gap the summary's %.3g
// shows, on values worked by hand: 0.0258 prints as 0.0258, so a change
// of 0.00005 is the half unit; 0.35 (0.350) → 0.0005; 0.001 → 0.000005; none for
// a gap of 0.
func TestShownStep(t *testing.T) {
	for _, c := range []struct{ g, want float64 }{{0.0258, 0.00005}, {0.35, 0.0005}, {0.001, 0.000005}, {0, 0}} {
		if got := shownStep(c.g); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("shownStep(%v) = %v, want %v", c.g, got, c.want)
		}
	}
	// A change below the step does not show at %.3g.
	if a, b := fmt.Sprintf("%.3g", 0.02581048), fmt.Sprintf("%.3g", 0.02581048-0.3e-6); a != b {
		t.Errorf("%s and %s differ", a, b)
	}
}
