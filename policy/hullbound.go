package policy

import (
	"context"
	"math"

	"github.com/psrlcb/psrlcb/internal/parallel"
)

// The convex-hull interpolation of the belief planner's upper bound
// (PlanOptions.HullBound).
//
// The sawtooth (Hauskrecht 2000, JAIR 13) lowers the corners' value at a
// belief b by one kept point at a time: vm·b + min_i w_i(b)·g_i, with
// w_i(b) = min_s b(s)/b_i(s) and g_i = v_i − vm·b_i < 0 the kept point's
// gain. Any λ ≥ 0 with Σ_i λ_i b_i ≤ b (componentwise) writes b as
// Σ_i λ_i b_i plus a remainder r ≥ 0 of mass 1 − Σ_i λ_i, a sum of
// corners, so by the convexity of the relaxed problem's optimal value V
//
//	V(b) ≤ Σ_i λ_i v_i + Σ_s r(s)·vm(s) = vm·b + Σ_i λ_i g_i,
//
// and the least such value is the linear program
//
//	max Σ_i λ_i·(−g_i)   subject to   Σ_i λ_i b_i(s) ≤ b(s) for every s,  λ ≥ 0,
//
// the lower convex hull of the points and the corners at b (the
// interpolation of the first heuristic search value iteration, Smith &
// Simmons 2004, which the sawtooth approximates). λ_i = w_i(b) alone is
// feasible, so the hull is at or below the sawtooth. The program packs
// (the origin is feasible); it is solved by the tableau simplex with the
// most negative reduced cost, whose every iterate is feasible, so a solve
// stopped at hullPivots still gives an upper bound. The λ found is scaled
// back into the constraints, which rounding may cross by an ulp, before
// it is used.
//
// Only the points whose support lies in b's can enter (w_i(b) > 0), and
// only b's support gives constraints, so a program has at most the
// step's kept points as columns and the rank as rows. One program per
// successor belief of every backup makes the bound several times the
// sawtooth's cost (bench/fit.sh's true model at H = 10 and 500 points:
// 14.5 s of planning instead of 3.0 s), which is why fit asks for it only
// with --hull-bound.

// hullPivots bounds the simplex pivots of one program, per row and
// column: far above what these programs take, a guard against cycling
// on degenerate vertices, which the most negative reduced cost does not
// exclude.
const hullPivots = 20

// hullScratch is one worker's memory for the hull's programs.
type hullScratch struct {
	rows  []int     // b's support
	cols  []int     // the kept points that can enter
	T     []float64 // the tableau
	basis []int
	lam   []float64 // λ over cols
}

// hullGain is the hull interpolation's gain at belief b over s_h, the
// least Σ_i λ_i g_i of a feasible λ (at most 0; see above).
func (sw *sawtooth) hullGain(h int, b []float64, sc *hullScratch) float64 {
	set := &sw.sets[h]
	sc.rows, sc.cols = sc.rows[:0], sc.cols[:0]
	for s, x := range b {
		if x > 0 {
			sc.rows = append(sc.rows, s)
		}
	}
	for i, bi := range set.b {
		if sawtoothWeight(b, bi) > 0 {
			sc.cols = append(sc.cols, i)
		}
	}
	if len(sc.cols) == 0 {
		return 0
	}
	lam := sc.solve(set, b)
	return sc.feasibleGain(set, b, lam)
}

// solve runs the simplex on the program of sc.rows and sc.cols and
// returns λ over sc.cols (the last iterate: feasible up to rounding).
func (sc *hullScratch) solve(set *ubSet, b []float64) []float64 {
	m, n := len(sc.rows), len(sc.cols)
	w := n + m + 1 // columns: λ, slacks, right-hand side
	sc.T = grow(sc.T, (m+1)*w)
	clear(sc.T)
	if cap(sc.basis) < m {
		sc.basis = make([]int, m)
	}
	sc.basis = sc.basis[:m]
	T := sc.T
	for r, s := range sc.rows {
		row := T[r*w : (r+1)*w]
		for j, i := range sc.cols {
			row[j] = set.b[i][s]
		}
		row[n+r] = 1
		row[w-1] = b[s]
		sc.basis[r] = n + r
	}
	z := T[m*w : (m+1)*w] // the objective row, −(−g) = g
	for j, i := range sc.cols {
		z[j] = set.gain[i]
	}
	for range hullPivots * (m + n) {
		e := mostNegative(z[:w-1])
		if e < 0 {
			break
		}
		r := ratioRow(T, w, m, e)
		if r < 0 {
			break // unbounded: cannot happen, every λ_i ≤ 1/max_s b_i(s)
		}
		pivot(T, w, m, r, e)
		sc.basis[r] = e
	}
	sc.lam = grow(sc.lam, n)
	lam := sc.lam
	clear(lam)
	for r, j := range sc.basis {
		if j < n {
			lam[j] = max(T[r*w+w-1], 0)
		}
	}
	return lam
}

// mostNegative is the column of the most negative reduced cost below
// −10⁻¹², −1 when none is (the program is solved).
func mostNegative(z []float64) int {
	e, best := -1, -1e-12
	for j, x := range z {
		if x < best {
			e, best = j, x
		}
	}
	return e
}

// ratioRow is the ratio test's row for entering column e, −1 when no
// row limits it.
func ratioRow(T []float64, w, m, e int) int {
	r, ratio := -1, 0.0
	for i := range m {
		if a := T[i*w+e]; a > 1e-12 {
			if q := T[i*w+w-1] / a; r < 0 || q < ratio {
				r, ratio = i, q
			}
		}
	}
	return r
}

// feasibleGain is Σ_j λ_j g_j after scaling λ by the largest t ≤ 1 that
// keeps Σ_j λ_j b_j ≤ b on b's support (off it every entering point is
// 0), so the gain is that of a feasible λ whatever the rounding.
func (sc *hullScratch) feasibleGain(set *ubSet, b []float64, lam []float64) float64 {
	t := 1.0
	for _, s := range sc.rows {
		u := 0.0
		for j, i := range sc.cols {
			u += lam[j] * set.b[i][s]
		}
		if u > b[s] {
			t = min(t, b[s]/u)
		}
	}
	g := 0.0
	for j, i := range sc.cols {
		g += lam[j] * set.gain[i]
	}
	if math.IsNaN(g) || g > 0 {
		return 0
	}
	return t * g
}

// swScratch is one worker's memory for the upper bound's backups.
type swScratch struct {
	pred, next []float64
	hull       *hullScratch // nil: the sawtooth alone
	qs         []float64    // upperQs's values, one per action
	acts       []swScratch  // upperQs's scratch of each action on the workers
}

// newSwScratch is a scratch for beliefs over S states, without the hull.
func newSwScratch(S int) swScratch {
	return swScratch{pred: make([]float64, S), next: make([]float64, S)}
}

// addHullPoints backs up the relaxed values at the points pts of step h
// on the workers, against step h+1's hull interpolation, and keeps, in
// the points' order, those below the corners' interpolation.
func (p *beliefPlanner) addHullPoints(ctx context.Context, sw *sawtooth, h int, pts []bpoint) error {
	vals := make([]float64, len(pts))
	newScratch := func() *swScratch {
		sc := newSwScratch(p.S)
		sc.hull = &hullScratch{}
		return &sc
	}
	err := parallel.ForWith(ctx, len(pts), p.workers, newScratch, func(sc *swScratch, i int) error {
		vals[i] = p.upperBackupWith(sw, sc, h, pts[i].b)
		return nil
	})
	if err != nil {
		return err
	}
	for i, pt := range pts {
		sw.keepPoint(h, pt.b, vals[i])
	}
	return nil
}
