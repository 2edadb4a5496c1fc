package policy

import (
	"cmp"
	"context"
	"encoding/binary"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/internal/parallel"
	"github.com/psrlcb/psrlcb/internal/simd"
	"github.com/psrlcb/psrlcb/pessimism"
)

// Planner names (PlanOptions.Planner).
const (
	// PlannerAuto runs PlannerExact when the history tree fits the node
	// budget and PlannerBelief otherwise, unless the belief planner's
	// backups would pass beliefBackupLimit (thousands of observations and
	// tens of actions): then the exact planner's pruned search.
	PlannerAuto = "auto"
	// PlannerExact is dynamic programming over the history tree (with the
	// pruned search beyond the node budget).
	PlannerExact = "exact"
	// PlannerBelief is point-based planning over the model's beliefs.
	PlannerBelief = "belief"
	// plannerSearch names the exact planner's pruned search in PlanStats.
	plannerSearch = "search"
)

// DefaultPoints is the default number of belief points per step of the
// belief planner. A backup costs O(|A|·|O|·points·r) flops per point, so
// the step costs grow with the square of the points; 500 points keep r =
// 20, |O| = 21, |A| = 5, H = 20 within seconds (BenchmarkPlanBelief) while
// covering every distinct belief of the small benchmark problems for a
// few steps.
const DefaultPoints = 500

// TargetGap is the stated gap (as a share of the return range) above
// which a plan's summary says where the gap comes from.
const TargetGap = 0.02

// MaxPoints is the most belief points per step a plan may ask for (the
// backups' cost grows with the square of the points).
const MaxPoints = 100_000

// DefaultRowBudget is the default largest policy table the belief planner
// writes, in rows (one row per decision node reached). The table is the
// readable view of the controller's most probable decisions (the
// controller decides every history), so it is sized for reading, not for
// coverage: about 3.5 MB of policy.arrow.
const DefaultRowBudget = 50_000

// boundPoints is the number of belief points per step of the upper bound
// (sawtooth interpolation costs O(points·r) per query, so its cost grows
// with the square of this number); with PlanOptions.TightBound (fit's
// final plan) it takes every point of the plan. On the long-horizon cells
// every point instead of 200 took tiger H = 20's stated gap from 0.0204
// to 0.0076 (plan 1.0 → 1.2 s) and mini-hall2 H = 20's from 0.0277 to
// 0.0253 (3.7 → 9.7 s).
const boundPoints = 200

// tangentRounds is the number of tangent points of the surrogate bonus
// tried (see beliefPlan): each round replans at the previous policy's
// E[Σ]; the fixed point is usually reached in two.
const tangentRounds = 3

// beliefGrid is the resolution at which beliefs are merged: two beliefs
// whose every coordinate rounds to the same multiple of 2⁻³⁰ are the same
// point (identical beliefs of different histories, up to round-off).
const beliefGrid = 1 << 30

// stepTables hold what the belief planner needs of step h for action a.
type stepTables struct {
	r []float64 // rescaled expected reward of (s_h, a)
	// m (S×S, row-major): ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} = bᵀ m b for the belief b
	// over s_h (h < H; nil at h = H, which has no bonus term).
	m []float64
	t []float64 // T_h(s'|s,a), row-major s*S+s'
	e []float64 // E_h(o|s',a), row-major s'*O+o
	// wide orders e's observations for the table walk past wideObs
	// observations (nil below).
	wide *obsIndex
}

// obsIndex orders the observations of one emission table by their
// largest probability over states, so that a table walk can find the
// children of a node that reach its threshold without a belief update
// per observation. Under a predicted state distribution p, P(o) =
// Σ_s p(s)·E(o|s) ≤ emax(o)·Σ_s p(s): once emax falls below the
// threshold, so does every later observation's probability, and their
// joint unnormalised belief is p(s)·tail(s).
type obsIndex struct {
	ord  []int32   // observations by decreasing emax (ties by index)
	emax []float64 // max_s E(o|s), in the order of ord
	tail []float64 // tail[i*S+s] = Σ_{j≥i} E(ord[j]|s); (|O|+1)×S
	pos  []int32   // pos[o]: o's place in ord
}

func newObsIndex(e []float64, S, O int) *obsIndex {
	ix := &obsIndex{ord: make([]int32, O), emax: make([]float64, O), tail: make([]float64, (O+1)*S)}
	mx := emissionMax(e, S, O)
	ix.sortBy(mx)
	ix.pos = make([]int32, O)
	for i, o := range ix.ord {
		ix.emax[i] = mx[o]
		ix.pos[o] = int32(i)
	}
	ix.fillTail(e, S, O)
	return ix
}

// sortBy sets ord to the observations by decreasing mx (ties by index).
func (ix *obsIndex) sortBy(mx []float64) {
	for o := range ix.ord {
		ix.ord[o] = int32(o)
	}
	sort.SliceStable(ix.ord, func(i, j int) bool { return mx[ix.ord[i]] > mx[ix.ord[j]] })
}

// emissionMax returns max_s E(o|s) of each observation o of the S×O
// emission table e.
func emissionMax(e []float64, S, O int) []float64 {
	mx := make([]float64, O)
	for s := 0; s < S; s++ {
		for o, x := range e[s*O : (s+1)*O] {
			mx[o] = max(mx[o], x)
		}
	}
	return mx
}

// fillTail sets ix.tail from the emission table e, from the last
// observation of ord back.
func (ix *obsIndex) fillTail(e []float64, S, O int) {
	for i := O - 1; i >= 0; i-- {
		o := int(ix.ord[i])
		for s := 0; s < S; s++ {
			ix.tail[i*S+s] = ix.tail[(i+1)*S+s] + e[s*O+o]
		}
	}
}

// obsIndexes returns the observation index of every emission table
// [table][action] past wideObs observations (nil below): one per
// distinct table, as the Compact form shares one among the actions.
func obsIndexes(m *estimate.Model) [][]*obsIndex {
	if m.NumObs <= wideObs {
		return nil
	}
	seen := map[*float64]*obsIndex{}
	oix := make([][]*obsIndex, len(m.Emit))
	for t := range oix {
		oix[t] = tableIndexes(m, t, seen)
	}
	return oix
}

// tableIndexes returns the observation index of every action's emission
// table of m's table t, one per distinct table (seen: those built so
// far, by their first entry).
func tableIndexes(m *estimate.Model, t int, seen map[*float64]*obsIndex) []*obsIndex {
	ix := make([]*obsIndex, m.NumActions)
	for a := range ix {
		e := m.EmitOf(t, a)
		if seen[&e[0]] == nil {
			seen[&e[0]] = newObsIndex(e, m.States, m.NumObs)
		}
		ix[a] = seen[&e[0]]
	}
	return ix
}

// children returns, for a node with predicted state distribution pred
// and threshold thr on its children's probabilities, the observations
// that may reach thr, sorted (in buf), and the unnormalised belief mass
// of all the others, pred(s)·tail(s), added into rest (with its total).
func (ix *obsIndex) children(pred []float64, thr float64, buf []int32, rest []float64) ([]int32, float64) {
	k := ix.scanLen(sumOf(pred), thr)
	buf = append(buf[:0], ix.ord[:k]...)
	slices.Sort(buf)
	S := len(pred)
	return buf, addTail(pred, ix.tail[k*S:(k+1)*S], rest)
}

// sumOf is Σ x, summed in order.
func sumOf(x []float64) float64 {
	sum := 0.0
	for _, v := range x {
		sum += v
	}
	return sum
}

// addTail adds the belief mass pred(s)·tail(s) of the observations past
// the scan to rest and returns its total.
func addTail(pred, tail, rest []float64) float64 {
	mass := 0.0
	for s, x := range pred {
		v := x * tail[s]
		rest[s] += v
		mass += v
	}
	return mass
}

// emitProb is P(o) = Σ_s pred(s)·E(o|s) for the emission table e.
func emitProb(e []float64, O int, pred []float64, o int) float64 {
	z := 0.0
	for s, x := range pred {
		z += x * e[s*O+o]
	}
	return z
}

// scanLen is the number of leading observations of ord whose
// probability under a predicted distribution of total mass psum can
// reach thr (a relative margin covers the rounding of P(o)).
func (ix *obsIndex) scanLen(psum, thr float64) int {
	return sort.Search(len(ix.emax), func(i int) bool { return ix.emax[i]*psum*(1+1e-9) < thr })
}

// bpoint is a belief point of one step: the belief over s_h after o_h,
// the largest probability of an observation path to it (over action
// sequences), and whether o_h is the end symbol.
type bpoint struct {
	b   []float64
	w   float64
	end bool
	key string
	o   int // the observation o_h the belief was formed on (obsBound)
}

// alphaSet is the point-based value function of one step and one class
// of observation (ordinary or end symbol): V(b) ≈ max_i vec_i·b.
type alphaSet struct {
	vec  []float64 // n×S
	act  []int
	cols []float64 // S×n: vec transposed, for best (set by finish)
	top  []float64 // S: the largest entry of each coordinate (set by finish)
}

func (g *alphaSet) n(S int) int { return len(g.vec) / S }

// finish removes the vectors equal to an earlier one (with their
// actions; max_i vec_i·u and the first index reaching it are unchanged,
// since best keeps the first of equal values) and lays the set out for
// best. Point-based backups give many points the same vector (the same
// action and successor choices), most of all near the horizon.
func (g *alphaSet) finish(S int) {
	k := g.dedup(S)
	g.vec, g.act = g.vec[:k*S], g.act[:k]
	g.cols = make([]float64, k*S)
	g.top = nil
	for i := 0; i < k; i++ {
		for s := 0; s < S; s++ {
			g.cols[s*k+i] = g.vec[i*S+s]
		}
	}
	if k > 0 {
		g.top = make([]float64, S)
		for s := range S {
			g.top[s] = slices.Max(g.cols[s*k : (s+1)*k])
		}
	}
}

// dedup moves the vectors (and actions) not equal to an earlier one to
// the front, in order, and returns their number.
func (g *alphaSet) dedup(S int) int {
	n := g.n(S)
	seen := make(map[string]struct{}, n)
	k := 0
	for i := 0; i < n; i++ {
		v := g.vec[i*S : (i+1)*S]
		key := exactKey(v)
		if _, dup := seen[key]; dup {
			continue
		}
		seen[key] = struct{}{}
		copy(g.vec[k*S:(k+1)*S], v)
		g.act[k] = g.act[i]
		k++
	}
	return k
}

// rowwiseBest: sets of fewer vectors are valued by one dot product per
// vector, where the per-call cost of the column-wise axpys would dominate.
const rowwiseBest = 32

// exactKey is v's bits as a map key.
func exactKey(v []float64) string {
	buf := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(x))
	}
	return string(buf)
}

// best returns max_i vec_i·u and its first index (−1 for an empty set).
// The products are accumulated one coordinate at a time over all
// vectors (an axpy per coordinate, in the order of dot), so each value
// is bit for bit vec_i·u; sc holds them. On amd64 with AVX2 the sets of
// at least bestColsBlock vectors go through bestColsAVX2, which adds the
// same products in the same order, four vectors to a register (eight,
// by bestColsAVX512, where the processor has AVX-512).
func (g *alphaSet) best(S int, u []float64, sc *bestScratch) (float64, int) {
	n := g.n(S)
	if n == 0 {
		return math.Inf(-1), -1
	}
	if n < rowwiseBest {
		return g.bestRowwise(S, u)
	}
	if simd.AVX2 && n >= bestColsBlock {
		if v, i, ok := g.bestCols(S, u, sc); ok {
			return v, i
		}
	}
	vals := grow(sc.vals, n)
	sc.vals = vals
	g.values(S, u, vals)
	return maxFirst(vals)
}

// bestScratch is best's scratch: the values, and the coefficients and
// column offsets of bestCols.
type bestScratch struct {
	vals, coef []float64
	off        []int
}

// bestColsBlock is how many vectors bestColsAVX2 takes per iteration.
const bestColsBlock = 16

// bestCols is best by bestColsAVX2 on the leading multiple of
// bestColsBlock vectors and by one dot product each on the rest. The
// coordinates are those values adds (the first, then every nonzero one),
// in its order, so every value is the same float64. ok is false when the
// largest value is not finite (a NaN or an overflow, which the lanes'
// ordered comparison would treat differently from maxFirst).
func (g *alphaSet) bestCols(S int, u []float64, sc *bestScratch) (float64, int, bool) {
	n := g.n(S)
	coef, off := sc.coef[:0], sc.off[:0]
	for s, x := range u[:S] {
		if s == 0 || x != 0 {
			coef, off = append(coef, x), append(off, 8*s*n)
		}
	}
	sc.coef, sc.off = coef, off
	m := n &^ (bestColsBlock - 1)
	var bv float64
	var bi int
	if simd.AVX512 {
		var out [16]float64
		bestColsAVX512(&g.cols[0], m, &coef[0], &off[0], len(coef), &out)
		bv, bi = laneBest(out[:8], out[8:])
	} else {
		var out [8]float64
		bestColsAVX2(&g.cols[0], m, &coef[0], &off[0], len(coef), &out)
		bv, bi = laneBest(out[:4], out[4:])
	}
	for k := m; k < n; k++ {
		if v := g.colValue(k, n, coef, off); v > bv {
			bv, bi = v, k
		}
	}
	return bv, bi, !math.IsInf(bv, 0) && !math.IsNaN(bv)
}

// laneBest merges the kernels' lanes: the largest of vals and, among
// the lanes holding it, the smallest index (idx holds them as float64s).
func laneBest(vals, idx []float64) (float64, int) {
	bv, bi := vals[0], int(idx[0])
	for l := 1; l < len(vals); l++ {
		if v, i := vals[l], int(idx[l]); v > bv || (v == bv && i < bi) {
			bv, bi = v, i
		}
	}
	return bv, bi
}

// colValue is vector k's value over the coordinates of bestCols, added
// in values' order.
func (g *alphaSet) colValue(k, n int, coef []float64, off []int) float64 {
	v := coef[0] * g.cols[k]
	for j := 1; j < len(coef); j++ {
		v += float64(coef[j] * g.cols[off[j]/8+k])
	}
	return v
}

// maxFirst returns the largest of vals (not empty) and its first index.
func maxFirst(vals []float64) (float64, int) {
	bi, bv := 0, vals[0]
	for i, v := range vals {
		if v > bv {
			bi, bv = i, v
		}
	}
	return bv, bi
}

// bestRowwise is best by one dot product per vector.
func (g *alphaSet) bestRowwise(S int, u []float64) (float64, int) {
	bv, bi := math.Inf(-1), -1
	for i := 0; i < len(g.vec); i += S {
		if v := dot(g.vec[i:i+S], u); v > bv {
			bv, bi = v, i/S
		}
	}
	return bv, bi
}

// values sets vals[i] to vec_i·u, accumulated coordinate by coordinate
// over the columns (see best).
func (g *alphaSet) values(S int, u, vals []float64) {
	n := len(vals)
	// 0 + x·c is x·c (up to the sign of a zero), so the first coordinate
	// sets the values.
	x := u[0]
	for k, c := range g.cols[:n] {
		vals[k] = x * c
	}
	for s := 1; s < S; s++ {
		x := u[s]
		if x == 0 {
			continue // adds ±0: no value changes
		}
		blas64.Axpy(x, blas64.Vector{N: n, Inc: 1, Data: g.cols[s*n : (s+1)*n]}, blas64.Vector{N: n, Inc: 1, Data: vals})
	}
}

// beliefPlanner is the state of one belief-space plan.
type beliefPlanner struct {
	*planner
	tab     [][]stepTables // [h][a], h = 1..H
	kappa   float64        // slope of the surrogate bonus per unit of Σ
	pts     [][]bpoint     // [h], h = 1..H
	gamma   [][2]alphaSet  // [h][class], h = 1..H+1
	points  int
	capped  bool // some step had more distinct beliefs than points
	workers int
	backups int64
	codes   histCodes // the history codes of the charge by observation
	top     topStats  // what the bound exact over the first steps did, when kept
	// topMemory bounds the bytes of the bound exact over the first
	// steps (PlanOptions.BoundMemory); topTried, that it ran.
	topMemory float64
	topTried  bool
	// tightBound: the upper bound takes every point and tries the
	// relaxed problem's exact value iteration (PlanOptions.TightBound).
	tightBound bool
	// hullBound: with tightBound, the upper bound interpolates by the
	// convex hull of its points (PlanOptions.HullBound).
	hullBound bool
	// trials: the upper bound runs up to this many gap-search trials
	// and keeps the beliefs they pass in trialPts (gapsearch.go).
	trials, trialsRun int
	// trialGoal, when goalSet, is the upper bound at which the trials
	// stop before bp.trials of them have run (runTrials).
	trialGoal float64
	goalSet   bool
	trialPts  [][]bpoint
	// guide, during the trials, holds the relaxed problem's lower
	// vectors (relaxedGuide).
	guide *beliefPlanner
	// search is what the gap search did, for PlanStats.
	search struct {
		trials, points int
		replanned      bool
	}
	// chord is the straight line g(lo) + c·(Σ − lo) below the bonus of
	// the last chord charge (chordCharge), for PlanStats.
	chord struct{ lo, c float64 }
	// charge, when set, is the charge the upper bound uses in place of
	// the chord's (csCharge); used is the charge of the last upper bound
	// (boundRewards). With charged set, the plan's expected bonus and the
	// charge's tangent sum as used charges them (relaxedCharge).
	charge, used *boundCharge
	charged      struct {
		set   bool
		bonus float64 // E_π[b̂]
		lin   float64 // E_π[Σ_{h<H} tan_{h,a_h}·b_h]
	}
}

func newBeliefPlanner(m *estimate.Model, bonus *pessimism.Bonus, points, workers int) (*beliefPlanner, error) {
	fz, err := estimate.NewFeaturizer(m)
	if err != nil {
		return nil, err
	}
	bp := &beliefPlanner{planner: newPlanner(m, bonus, fz), points: points, workers: workers}
	bp.tab = stepTablesOf(m, bonus, fz.Clone())
	bp.codes = bp.histCodesOf()
	if oix := obsIndexes(m); oix != nil {
		bp.setIndexes(oix)
	}
	return bp, nil
}

// setIndexes gives each step table its emission table's observation
// index oix[table][action].
func (bp *beliefPlanner) setIndexes(oix [][]*obsIndex) {
	for h := 1; h < len(bp.tab); h++ {
		for a := range bp.tab[h] {
			bp.tab[h][a].wide = oix[bp.m.Table(h)][a]
		}
	}
}

// stepTablesOf computes, per step and action, the reward vector and the
// quadratic form of the bonus term: ψ̄̂(τ_h) = F·pred is linear in the
// predicted state pred = Tᵀb (DESIGN.md section 4 "policy"), so
// ‖ψ̄̂‖²_{U_h⁻¹} = bᵀ T (FᵀU_h⁻¹F) Tᵀ b. fz is the model's Featurizer.
func stepTablesOf(m *estimate.Model, bonus *pessimism.Bonus, fz *estimate.Featurizer) [][]stepTables {
	H, S, A := m.Horizon, m.States, m.NumActions
	tb := &tableBuilder{m: m, bonus: bonus, fz: fz, rw: newStateRewards(m), unit: make([]float64, S),
		Q: make([]float64, S*S), TQ: make([]float64, S*S), cols: make([][]float64, S)}
	tab := make([][]stepTables, H+1)
	for h := 1; h <= H; h++ {
		tab[h] = make([]stepTables, A)
		for a := 0; a < A; a++ {
			tb.build(h, a, &tab[h][a])
		}
	}
	return tab
}

// tableBuilder holds the model and the scratch buffers of stepTablesOf.
type tableBuilder struct {
	m     *estimate.Model
	bonus *pessimism.Bonus
	fz    *estimate.Featurizer
	rw    *stateRewards
	unit  []float64
	Q, TQ []float64 // FᵀU_h⁻¹F and T·Q, S×S
	cols  [][]float64
}

// build fills st, the tables of step h and action a.
func (tb *tableBuilder) build(h, a int, st *stepTables) {
	m, S := tb.m, tb.m.States
	tt := m.Table(h)
	st.t = m.Trans[tt][a*S*S : (a+1)*S*S]
	st.e = m.EmitOf(tt, a) // the Compact form shares one table
	st.r = make([]float64, S)
	tb.rw.of(h, a, st.r)
	if h == m.Horizon {
		return
	}
	tb.featureColumns(h, a)
	quadForm(tb.bonus, h, tb.cols, tb.Q)
	st.m = tb.sandwich(st.t)
}

// featureColumns sets tb.cols[s] to the feature F e_s of each state s
// at step h under action a.
func (tb *tableBuilder) featureColumns(h, a int) {
	d := tb.bonus.Dims[h]
	for s := range tb.cols {
		clear(tb.unit)
		tb.unit[s] = 1
		tb.cols[s] = make([]float64, d)
		tb.fz.Feature(h, tb.unit, a, tb.cols[s])
	}
}

// sandwich returns m = T Q Tᵀ (S×S, row-major) for the transitions t
// and tb.Q.
func (tb *tableBuilder) sandwich(t []float64) []float64 {
	S, TQ := tb.m.States, tb.TQ
	matMul(t, tb.Q, TQ, S)
	m := make([]float64, S*S)
	for s := 0; s < S; s++ {
		for s2 := 0; s2 < S; s2++ {
			m[s*S+s2] = dot(TQ[s*S:(s+1)*S], t[s2*S:(s2+1)*S])
		}
	}
	return m
}

// matMul sets c to the product a·b of S×S row-major matrices, each
// entry summed over k in order.
func matMul(a, b, c []float64, S int) {
	for i := 0; i < S; i++ {
		for j := 0; j < S; j++ {
			x := 0.0
			for k := 0; k < S; k++ {
				x += a[i*S+k] * b[k*S+j]
			}
			c[i*S+j] = x
		}
	}
}

// stateRewards computes the rescaled expected rewards of single states.
type stateRewards struct {
	m            *estimate.Model
	shift, scale float64
	unit         []float64 // a point belief
}

// newStateRewards returns the rescaled rewards of m (RewardScale).
func newStateRewards(m *estimate.Model) *stateRewards {
	shift, scale := m.RewardScale()
	return &stateRewards{m: m, shift: shift, scale: scale, unit: make([]float64, m.States)}
}

// of sets r[s] to the rescaled expected reward (R − shift)·scale of
// action a at step h in each state s.
func (sr *stateRewards) of(h, a int, r []float64) {
	for s := range r {
		clear(sr.unit)
		sr.unit[s] = 1
		r[s] = (sr.m.ExpectedReward(h, sr.unit, a) - sr.shift) * sr.scale
	}
}

// quadForm writes Q = FᵀU_h⁻¹F (S×S) for the feature columns cols[s] =
// F e_s, by polarisation of the norms.
func quadForm(bonus *pessimism.Bonus, h int, cols [][]float64, Q []float64) {
	S := len(cols)
	x := make([]float64, len(cols[0]))
	for s := 0; s < S; s++ {
		Q[s*S+s] = bonus.StepNorm2(h, cols[s])
	}
	for s := 0; s < S; s++ {
		for s2 := s + 1; s2 < S; s2++ {
			q := (bonus.StepNorm2(h, sumInto(x, cols[s], cols[s2])) - Q[s*S+s] - Q[s2*S+s2]) / 2
			Q[s*S+s2], Q[s2*S+s] = q, q
		}
	}
}

// sumInto sets x to a + b and returns it.
func sumInto(x, a, b []float64) []float64 {
	for j := range x {
		x[j] = a[j] + b[j]
	}
	return x
}

// quad is bᵀ m b.
func quad(m, b []float64) float64 {
	S := len(b)
	q := 0.0
	for s, x := range b {
		if x != 0 {
			q += x * dot(m[s*S:(s+1)*S], b)
		}
	}
	return q
}

func beliefKey(b []float64, end bool) string {
	return string(appendBeliefKey(make([]byte, 0, 8*len(b)+1), b, end))
}

// appendBeliefKey appends the bytes of beliefKey(b, end) to buf.
func appendBeliefKey(buf []byte, b []float64, end bool) []byte {
	for _, x := range b {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(math.Round(x*beliefGrid)))
	}
	if end {
		return append(buf, 1)
	}
	return append(buf, 0)
}

// buildPoints collects the belief points of every step by forward
// expansion from the step-1 beliefs under every allowed action and every
// observation of positive probability, merging identical beliefs; when a
// step has more than p.points distinct beliefs it keeps those with the
// largest path probability (ties by key, so the set does not depend on
// the order of expansion).
func (p *beliefPlanner) buildPoints(ctx context.Context) error {
	H, S := p.H, p.S
	p.pts = make([][]bpoint, H+1)
	p.pts[1] = p.capPoints(mergePoints(p.firstPoints()))
	pred := make([]float64, S)
	next := make([]float64, S)
	for h := 1; h < H; h++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		p.pts[h+1] = p.nextPoints(h, pred, next)
	}
	return nil
}

// nextPoints returns the points of step h+1: the successors of step h's
// candidates, merged and capped (pred, next: scratch of S); a cutoff
// marks the points capped.
func (p *beliefPlanner) nextPoints(h int, pred, next []float64) []bpoint {
	cut := p.candidateCutoff(h, pred)
	if cut > 0 {
		p.capped = true
	}
	return p.capPoints(mergePoints(p.candidates(h, cut, pred, next)))
}

// candidates returns the successors of step h's points under every
// allowed action whose path probability reaches cut (pred, next:
// scratch of S).
func (p *beliefPlanner) candidates(h int, cut float64, pred, next []float64) []bpoint {
	var cand []bpoint
	for _, pt := range p.pts[h] {
		for _, a := range p.acts(pt.end) {
			cand = p.successorPoints(h, pt, a, cut, pred, next, cand)
		}
	}
	return cand
}

// firstPoints returns the step-1 beliefs, one per observation of
// positive probability, weighted by it.
func (p *beliefPlanner) firstPoints() []bpoint {
	first := make([]float64, p.O)
	p.m.FirstObsProbs(first)
	var cur []bpoint
	for o, po := range first {
		if po == 0 {
			continue
		}
		cur = append(cur, p.firstPoint(o, po))
	}
	return cur
}

// firstPoint is the point of the step-1 belief after observation o, of
// probability po.
func (p *beliefPlanner) firstPoint(o int, po float64) bpoint {
	b := make([]float64, p.S)
	p.m.Prior(b)
	p.m.ObserveFirst(b, o)
	end := o == p.endObs
	return bpoint{b: b, w: po, end: end, key: beliefKey(b, end), o: o}
}

// successorPoints appends to cand the successors of point pt of step h
// after action a whose path probability reaches cut, and returns it
// (pred, next: scratch of length S).
func (p *beliefPlanner) successorPoints(h int, pt bpoint, a int, cut float64, pred, next []float64, cand []bpoint) []bpoint {
	st := &p.tab[h][a]
	predict(st.t, pt.b, pred)
	for o := 0; o < p.O; o++ {
		z := unnorm(st.e, p.O, pred, o, next)
		if z == 0 || pt.w*z < cut {
			continue
		}
		normalize(next, z)
		cand = append(cand, newPoint(next, pt.w*z, o, o == p.endObs))
	}
	return cand
}

// newPoint is the point of a copy of belief b, of weight w, formed on
// observation o (the end symbol: end).
func newPoint(b []float64, w float64, o int, end bool) bpoint {
	return bpoint{b: append([]float64(nil), b...), w: w, end: end, key: beliefKey(b, end), o: o}
}

// candidateFactor: the forward expansion stores at most this many
// candidate beliefs per kept point (those of largest path probability), so
// its memory stays O(points·r) whatever |A|·|O|.
const candidateFactor = 4

// candidateCutoff returns the path probability below which the successors
// of step h's points are not stored: the (candidateFactor·points)-th
// largest of them (0 when there are fewer).
func (p *beliefPlanner) candidateCutoff(h int, pred []float64) float64 {
	var ws []float64
	for _, pt := range p.pts[h] {
		for _, a := range p.acts(pt.end) {
			ws = p.candidateWeights(h, pt, a, pred, ws)
		}
	}
	k := candidateFactor * p.points
	if len(ws) <= k {
		return 0
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(ws)))
	return ws[k-1]
}

// candidateWeights appends to ws the path probabilities of the
// successors of point pt after action a (pred: scratch of S).
func (p *beliefPlanner) candidateWeights(h int, pt bpoint, a int, pred, ws []float64) []float64 {
	st := &p.tab[h][a]
	predict(st.t, pt.b, pred)
	for o := 0; o < p.O; o++ {
		if z := emitProb(st.e, p.O, pred, o); z > 0 {
			ws = append(ws, pt.w*z)
		}
	}
	return ws
}

func (p *beliefPlanner) acts(end bool) []int {
	if end {
		return p.end
	}
	return p.normal
}

// mergePoints keeps one point per key (the first one's belief, the
// largest weight), sorted by decreasing weight, then key.
func mergePoints(c []bpoint) []bpoint {
	idx := make(map[string]int, len(c))
	var out []bpoint
	for _, pt := range c {
		if i, ok := idx[pt.key]; ok {
			out[i].w = max(out[i].w, pt.w)
			continue
		}
		idx[pt.key] = len(out)
		out = append(out, pt)
	}
	sortPoints(out)
	return out
}

// sortPoints sorts points by decreasing weight, then key.
func sortPoints(out []bpoint) {
	sort.Slice(out, func(i, j int) bool {
		if out[i].w != out[j].w {
			return out[i].w > out[j].w
		}
		return out[i].key < out[j].key
	})
}

// capPoints keeps the first p.points points, noting when it drops some.
func (p *beliefPlanner) capPoints(c []bpoint) []bpoint {
	if len(c) > p.points {
		c = c[:p.points]
		p.capped = true
	}
	return c
}

// enrich replaces half of each step's points by the beliefs the current
// policy reaches (the most probable first, from its table): point-based
// backups are only as good as the points, and those are the beliefs the
// policy's value depends on.
func (p *beliefPlanner) enrich(reached [][]bpoint) {
	for h := 1; h <= p.H && h < len(reached); h++ {
		p.pts[h] = p.enrichStep(h, reached[h])
	}
}

// enrichStep returns step h's points: up to half of them the policy's
// reached beliefs, most probable first, then the current points not
// among them.
func (p *beliefPlanner) enrichStep(h int, reached []bpoint) []bpoint {
	pol := mergePoints(reached)
	if len(pol) > p.points/2 {
		pol = pol[:p.points/2]
	}
	return appendUnseen(pol, p.pts[h], p.points)
}

// appendUnseen appends to pol, in order, the points of pts whose keys
// pol does not hold, while it holds fewer than limit points.
func appendUnseen(pol, pts []bpoint, limit int) []bpoint {
	seen := pointKeys(pol)
	for _, pt := range pts {
		if len(pol) >= limit {
			break
		}
		if !seen[pt.key] {
			pol = append(pol, pt)
		}
	}
	return pol
}

// pointKeys returns the set of the points' belief keys.
func pointKeys(pts []bpoint) map[string]bool {
	seen := make(map[string]bool, len(pts))
	for _, pt := range pts {
		seen[pt.key] = true
	}
	return seen
}

// predict writes pred[s'] = Σ_s b[s] t[s*S+s'].
func predict(t, b, pred []float64) {
	S := len(b)
	clear(pred)
	for s, x := range b {
		if x == 0 {
			continue
		}
		row := t[s*S : (s+1)*S]
		for s2, v := range row {
			pred[s2] += x * v
		}
	}
}

// unnorm writes u[s'] = pred[s'] e[s'*O+o] and returns Σ u.
func unnorm(e []float64, O int, pred []float64, o int, u []float64) float64 {
	z := 0.0
	for s2, x := range pred {
		v := x * e[s2*O+o]
		u[s2] = v
		z += v
	}
	return z
}

// correct is unnorm followed by normalisation (all zero when z = 0).
func correct(e []float64, O int, pred []float64, o int, next []float64) float64 {
	z := unnorm(e, O, pred, o, next)
	normalize(next, z)
	return z
}

func normalize(b []float64, z float64) {
	if z <= 0 {
		clear(b)
		return
	}
	inv := 1 / z
	for i := range b {
		b[i] *= inv
	}
}

// backupScratch is one worker's buffers for backups.
type backupScratch struct {
	pred, u, z, mb []float64
	best           bestScratch
	choice         []int
	top            []float64
	pl             pruneScratch
}

func newBackupScratch(S, O int) *backupScratch {
	return &backupScratch{pred: make([]float64, S), u: make([]float64, S), z: make([]float64, S), mb: make([]float64, S), choice: make([]int, O)}
}

// class is the α-set class of a belief after an observation: 1 after
// the end symbol, 0 after an ordinary one.
func class(end bool) int {
	if end {
		return 1
	}
	return 0
}

// successor returns the α-set that values the belief after observation o.
func (p *beliefPlanner) successor(h, o int) *alphaSet {
	return p.alphaFor(h+1, o == p.endObs)
}

// alphaFor returns the α-set that values a belief of step h after the
// end symbol (end) or not: that class's set, or the other's when it has
// no vector.
func (p *beliefPlanner) alphaFor(h int, end bool) *alphaSet {
	c := class(end)
	g := &p.gamma[h][c]
	if len(g.vec) == 0 {
		g = &p.gamma[h][1-c]
	}
	return g
}

// qValue is the one-step lookahead value of action a at belief b over
// s_h: the rescaled expected reward, minus κ times the bonus term
// bᵀm b, plus Σ_o max_i vec_i·(unnormalised successor belief). It
// records the chosen α-vector per observation in sc.choice (−1 when the
// observation has probability 0).
func (p *beliefPlanner) qValue(h int, b []float64, a int, sc *backupScratch) float64 {
	st := &p.tab[h][a]
	v := p.immediateValue(h, st, b, sc.pred)
	if h == p.H {
		return v
	}
	v, _ = p.addLookahead(h, st, sc, v, nil, math.Inf(-1))
	return v
}

// addLookahead adds to v, observation by observation, the value of the
// best successor vector at each unnormalised successor of the
// prediction sc.pred, recording the choices in sc.choice. With top (the
// largest entry of each coordinate over the successor vectors) it gives
// up, whole false, as soon as the value so far plus top·u_o of the
// observations still to come falls below cut: the action's value is then
// below cut too. Given up or not, the sums are the same, in the same
// order.
func (p *beliefPlanner) addLookahead(h int, st *stepTables, sc *backupScratch, v float64, top []float64, cut float64) (float64, bool) {
	rest := 0.0 // Σ_o top·u_o over the observations to come
	if top != nil {
		rest = dot(top, sc.pred)
	}
	for o := 0; o < p.O; o++ {
		sc.choice[o] = -1
		if unnorm(st.e, p.O, sc.pred, o, sc.u) == 0 {
			continue
		}
		bv, bi := p.successor(h, o).best(p.S, sc.u, &sc.best)
		if bi >= 0 {
			v += bv
			sc.choice[o] = bi
		}
		if top != nil {
			if rest -= dot(top, sc.u); v+rest < cut {
				return v, false
			}
		}
	}
	return v, true
}

// backupStep computes the α-set of step h from that of step h+1: one
// point-based backup per belief point (point-based value iteration of the
// surrogate objective, see beliefPlan). For each action and observation
// the unnormalised successors of all points are valued against the
// successor α-set at once, as one matrix product (blas64.Gemm); the
// (action, observation) pairs are shared among workers and summed in a
// fixed order, so the result does not depend on the worker count.
func (p *beliefPlanner) backupStep(ctx context.Context, h int) error {
	sb := p.newStepBackup(h)
	p.immediateValues(sb)
	if h < p.H {
		if err := p.addSuccessorValues(ctx, sb); err != nil {
			return err
		}
	}
	p.gamma[h] = p.alphaVectors(sb)
	p.backups += int64(sb.n * len(p.normal))
	return nil
}

// stepBackup is backupStep's state: the step's n points and, per action
// and point, the lookahead values, chosen successor vectors and
// predictions.
type stepBackup struct {
	h, n    int
	pts     []bpoint
	q       []float64 // q[a*n+i]: lookahead value of action a at point i (−Inf if not allowed)
	choice  []int32   // [(a*O+o)*n+i]: chosen successor vector, −1 if none
	allowed []bool    // [a*n+i]: action a is allowed at point i
	preds   []float64 // [(a*n+i)*S+s]: prediction of point i after action a
}

// newStepBackup returns the backup state of step h, with no successor
// vector chosen yet.
func (p *beliefPlanner) newStepBackup(h int) *stepBackup {
	pts := p.pts[h]
	n, S, O, A := len(pts), p.S, p.O, p.A
	sb := &stepBackup{h: h, n: n, pts: pts, q: make([]float64, A*n), choice: make([]int32, A*O*n),
		allowed: make([]bool, A*n), preds: make([]float64, A*n*S)}
	for i := range sb.choice {
		sb.choice[i] = -1
	}
	p.allow(sb)
	return sb
}

// allow marks in sb.allowed the actions allowed at each point.
func (p *beliefPlanner) allow(sb *stepBackup) {
	for i, pt := range sb.pts {
		for _, a := range p.acts(pt.end) {
			sb.allowed[a*sb.n+i] = true
		}
	}
}

// immediateValues sets the lookahead value of every allowed (action,
// point) to its rescaled reward minus κ times the bonus term and, before
// step H, the point's prediction after the action.
func (p *beliefPlanner) immediateValues(sb *stepBackup) {
	n, S := sb.n, p.S
	for a := 0; a < p.A; a++ {
		st := &p.tab[sb.h][a]
		for i, pt := range sb.pts {
			if !sb.allowed[a*n+i] {
				sb.q[a*n+i] = math.Inf(-1)
				continue
			}
			sb.q[a*n+i] = p.immediateValue(sb.h, st, pt.b, sb.preds[(a*n+i)*S:(a*n+i+1)*S])
		}
	}
}

// immediateValue is the rescaled reward of the action of tables st at
// belief b minus κ times the bonus term, and sets pred to b's
// prediction (before step H).
func (p *beliefPlanner) immediateValue(h int, st *stepTables, b, pred []float64) float64 {
	v := dot(st.r, b)
	if h < p.H {
		if p.kappa > 0 {
			v -= p.kappa * quad(st.m, b)
		}
		predict(st.t, b, pred)
	}
	return v
}

// addSuccessorValues values every (action, observation)'s successors on
// the workers (valueSuccessors) and adds the chosen vectors' values to
// the lookahead values, observation by observation.
func (p *beliefPlanner) addSuccessorValues(ctx context.Context, sb *stepBackup) error {
	n, S, O, A := sb.n, p.S, p.O, p.A
	best := make([]float64, A*O*n)
	err := parallel.ForWith(ctx, A*O, p.workers, func() *gemmBuf { return &gemmBuf{} }, func(buf *gemmBuf, j int) error {
		a, o := j/O, j%O
		p.valueSuccessors(sb.h, a, o, sb.preds[a*n*S:(a+1)*n*S], sb.allowed[a*n:(a+1)*n], best[j*n:(j+1)*n], sb.choice[j*n:(j+1)*n], buf)
		return nil
	})
	if err != nil {
		return err
	}
	sb.addChosen(best, A, O)
	return nil
}

// addChosen adds best[(a*O+o)*n+i], the value of the chosen successor
// vector, to the lookahead value of (a, i), observation by observation.
func (sb *stepBackup) addChosen(best []float64, A, O int) {
	n := sb.n
	for a := 0; a < A; a++ {
		for o := 0; o < O; o++ {
			for i, c := range sb.choice[(a*O+o)*n : (a*O+o+1)*n] {
				if c >= 0 {
					sb.q[a*n+i] += best[(a*O+o)*n+i]
				}
			}
		}
	}
}

// alphaVectors returns the α-sets of the step, per class (ordinary, end
// observation): the α-vector of each point's best action.
func (p *beliefPlanner) alphaVectors(sb *stepBackup) [2]alphaSet {
	var g [2]alphaSet
	vec := make([]float64, p.S)
	sc := newBackupScratch(p.S, p.O)
	for i, pt := range sb.pts {
		bestA := p.pointVector(sb, i, sc, vec)
		c := class(pt.end)
		g[c].vec = append(g[c].vec, vec...)
		g[c].act = append(g[c].act, bestA)
	}
	g[0].finish(p.S)
	g[1].finish(p.S)
	return g
}

// pointVector writes into vec the α-vector of point i's best allowed
// action (ties to the first) and returns that action.
func (p *beliefPlanner) pointVector(sb *stepBackup, i int, sc *backupScratch, vec []float64) int {
	n, O, pt := sb.n, p.O, sb.pts[i]
	bestA, bestV := -1, math.Inf(-1)
	for _, a := range p.acts(pt.end) {
		if v := sb.q[a*n+i]; v > bestV {
			bestA, bestV = a, v
		}
	}
	for o := 0; o < O; o++ {
		sc.choice[o] = int(sb.choice[(bestA*O+o)*n+i])
	}
	p.vector(sb.h, pt.b, bestA, sc, vec)
	return bestA
}

// gemmBuf is one worker's buffers for valueSuccessors.
type gemmBuf struct{ u, v, z []float64 }

// valueSuccessors values, for action a and observation o, the
// unnormalised successor u_i = pred_i ∘ E(o|·,a) of every point i against
// the successor α-set: best[i] = max_k vec_k·u_i, choice[i] = k (−1 when
// P(o | b_i, a) = 0 or a is not allowed at i).
func (p *beliefPlanner) valueSuccessors(h, a, o int, preds []float64, allowed []bool, best []float64, choice []int32, buf *gemmBuf) {
	n, S := len(allowed), p.S
	e := p.tab[h][a].e
	g := p.successor(h, o)
	m := g.n(S)
	if m == 0 {
		return
	}
	buf.size(n, m, S)
	buf.successors(e, p.O, o, preds, allowed)
	buf.products(n, m, S, g.vec)
	buf.pickBest(m, best, choice)
}

// size grows the buffers for n successors of S states against m
// α-vectors.
func (buf *gemmBuf) size(n, m, S int) {
	buf.u = grow(buf.u, n*S)
	buf.z = grow(buf.z, n)
	buf.v = grow(buf.v, n*m)
}

// products sets buf.v to the n×m products of the successors buf.u (n×S)
// with the α-vectors vec (m×S).
func (buf *gemmBuf) products(n, m, S int, vec []float64) {
	blas64.Gemm(blas.NoTrans, blas.Trans, 1,
		blas64.General{Rows: n, Cols: S, Stride: S, Data: buf.u},
		blas64.General{Rows: m, Cols: S, Stride: S, Data: vec},
		0, blas64.General{Rows: n, Cols: m, Stride: m, Data: buf.v})
}

// successors sets the rows of buf.u to the unnormalised successors after
// observation o (emissions e over O observations) of the predictions
// preds, row by row, and buf.z to their masses (0 where not allowed).
func (buf *gemmBuf) successors(e []float64, O, o int, preds []float64, allowed []bool) {
	S := len(e) / O // e is S×O
	for i := range allowed {
		u := buf.u[i*S : (i+1)*S]
		if !allowed[i] {
			clear(u)
			buf.z[i] = 0
			continue
		}
		buf.z[i] = unnorm(e, O, preds[i*S:(i+1)*S], o, u)
	}
}

// pickBest sets best[i] and choice[i] to the largest value of row i of
// buf.v (m values) and its first index, for every successor of positive
// mass.
func (buf *gemmBuf) pickBest(m int, best []float64, choice []int32) {
	for i, z := range buf.z {
		if z == 0 {
			continue
		}
		row := buf.v[i*m : (i+1)*m]
		bi := firstMax(row)
		best[i], choice[i] = row[bi], int32(bi)
	}
}

// firstMax is the index of the first largest value of row.
func firstMax(row []float64) int {
	bi := 0
	for k, x := range row {
		if x > row[bi] {
			bi = k
		}
	}
	return bi
}

func grow(x []float64, n int) []float64 {
	if cap(x) < n {
		return make([]float64, n)
	}
	return x[:n]
}

// vector writes into vec the α-vector of action a at belief b with the
// successor vectors sc.choice: vec·b equals the backed-up value at b, and
// vec is the value of following those successor vectors from any belief,
// with the bonus term replaced by its tangent at b (bᵀmb is convex, so
// the tangent is exact at b).
func (p *beliefPlanner) vector(h int, b []float64, a int, sc *backupScratch, vec []float64) {
	st := &p.tab[h][a]
	S := p.S
	copy(vec, st.r)
	if h == p.H {
		return
	}
	if p.kappa > 0 {
		// tangent of bᵀmb at b on the simplex: (2mb − bᵀmb·1)·x.
		subtractTangent(st.m, b, sc.mb, p.kappa, vec)
	}
	z := p.successorSum(h, st, sc)
	addMatVec(vec, st.t, z, S)
}

// addMatVec adds T·z to vec (T: S×S, by rows).
func addMatVec(vec, T, z []float64, S int) {
	for s := 0; s < S; s++ {
		vec[s] += dot(T[s*S:(s+1)*S], z)
	}
}

// successorSum returns sc.z set to Σ_o E(o|·)∘α_o over s_{h+1}, α_o the
// successor vector sc.choice chose for observation o.
func (p *beliefPlanner) successorSum(h int, st *stepTables, sc *backupScratch) []float64 {
	S, O := p.S, p.O
	z := sc.z
	clear(z)
	for o := 0; o < O; o++ {
		i := sc.choice[o]
		if i < 0 {
			continue
		}
		av := p.successor(h, o).vec[i*S : (i+1)*S]
		for s2 := 0; s2 < S; s2++ {
			z[s2] += st.e[s2*O+o] * av[s2]
		}
	}
	return z
}

// backward runs the backups from step H to step 1.
func (p *beliefPlanner) backward(ctx context.Context) error {
	p.gamma = make([][2]alphaSet, p.H+2)
	for h := p.H; h >= 1; h-- {
		if err := p.backupStep(ctx, h); err != nil {
			return err
		}
	}
	return nil
}

// lookahead returns the action the belief policy takes at belief b over
// s_h after an observation of class end: the best one-step lookahead
// against the α-sets of step h+1 (ties to the lowest action index).
func (p *beliefPlanner) lookahead(h int, b []float64, end bool, sc *backupScratch) int {
	acts := p.acts(end)
	top := p.successorTop(h, sc)
	if top == nil || len(acts) < 2 {
		bestA, bestV := -1, math.Inf(-1)
		for _, a := range acts {
			if v := p.qValue(h, b, a, sc); v > bestV {
				bestA, bestV = a, v
			}
		}
		return bestA
	}
	return p.prunedLookahead(h, b, acts, top, sc)
}

// prunedLookahead is lookahead by upper bounds first: with the largest
// entry top(s) of any successor vector, Σ_o max_i α_i·u_o ≤
// Σ_o top·u_o = top·pred (the emission rows sum to 1 and u_o ≥ 0), so
// each action's value is at most its immediate value plus top·pred. The
// actions are valued in decreasing order of that bound, and one whose
// bound lies below the best value found (by more than a rounding slack)
// is not valued: it cannot reach the maximum. The action returned is the
// one the plain loop returns, the lowest index among the maxima.
func (p *beliefPlanner) prunedLookahead(h int, b []float64, acts []int, top []float64, sc *backupScratch) int {
	pl := sc.prune(len(acts), p.S)
	for i, a := range acts {
		v := p.immediateValue(h, &p.tab[h][a], b, pl.preds[i])
		pl.imm[i], pl.ub[i], pl.order[i] = v, v+dot(pl.preds[i], top), i
	}
	slices.SortStableFunc(pl.order, func(x, y int) int { return cmp.Compare(pl.ub[y], pl.ub[x]) })
	bestA, bestV := -1, math.Inf(-1)
	for _, i := range pl.order {
		if bestA >= 0 && pl.ub[i] < bestV-pruneSlack*(1+math.Abs(bestV)) {
			continue
		}
		copy(sc.pred, pl.preds[i])
		a := acts[i]
		cut := math.Inf(-1)
		if bestA >= 0 {
			cut = bestV - pruneSlack*(1+math.Abs(bestV))
		}
		v, whole := p.addLookahead(h, &p.tab[h][a], sc, pl.imm[i], top, cut)
		if whole && (v > bestV || (v == bestV && a < bestA)) {
			bestA, bestV = a, v
		}
	}
	return bestA
}

// pruneSlack is prunedLookahead's allowance for rounding: the bound and
// the value add the same terms in different orders, which can differ by
// a few units in the last place, far below 10⁻⁹.
const pruneSlack = 1e-9

// successorTop is the largest entry of each coordinate over the α-sets
// of step h+1 (both classes), nil at the last step or when both are
// empty.
func (p *beliefPlanner) successorTop(h int, sc *backupScratch) []float64 {
	if h >= p.H {
		return nil
	}
	t0, t1 := p.gamma[h+1][0].top, p.gamma[h+1][1].top
	switch {
	case t0 == nil:
		return t1
	case t1 == nil:
		return t0
	}
	top := grow(sc.top, p.S)
	sc.top = top
	for s := range top {
		top[s] = max(t0[s], t1[s])
	}
	return top
}

// pruneScratch is prunedLookahead's scratch, per action: predictions,
// immediate values, bounds and the order of valuation.
type pruneScratch struct {
	preds   [][]float64
	imm, ub []float64
	order   []int
}

// prune returns sc's pruneScratch for A actions of S states.
func (sc *backupScratch) prune(A, S int) *pruneScratch {
	pl := &sc.pl
	if len(pl.preds) < A || (A > 0 && len(pl.preds[0]) != S) {
		pl.preds = make([][]float64, A)
		for i := range pl.preds {
			pl.preds[i] = make([]float64, S)
		}
		pl.imm, pl.ub, pl.order = make([]float64, A), make([]float64, A), make([]int, A)
	}
	pl.order = pl.order[:A]
	return pl
}

// lookaheadCost is the multiply–adds of one lookahead at step h.
func (p *beliefPlanner) lookaheadCost(h int) int {
	n := 0
	if h < p.H {
		n = max(p.gamma[h+1][0].n(p.S), p.gamma[h+1][1].n(p.S))
	}
	return len(p.normal) * p.O * max(n, 1) * p.S
}

// vectorAction is the action of the best α-vector of step h at b (the
// point-based policy), falling back on the lookahead when the class has
// no vector.
func (p *beliefPlanner) vectorAction(h int, b []float64, end bool, sc *backupScratch) int {
	g := &p.gamma[h][class(end)]
	if _, i := g.best(p.S, b, &sc.best); i >= 0 {
		return g.act[i]
	}
	return p.lookahead(h, b, end, sc)
}
