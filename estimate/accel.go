package estimate

import "math"

// SQUAREM acceleration of EM (Varadhan & Roland 2008, "Simple and globally
// convergent methods for accelerating the convergence of any EM
// algorithm", Scand. J. Statist. 35, scheme S3).
//
// EM is a fixed-point map θ ↦ M(θ) whose rate is linear and slow when the
// latent states are weakly identified by the data (the fraction of
// missing information is close to 1). From θ0, SQUAREM takes two EM steps
// θ1 = M(θ0), θ2 = M(θ1), forms r = θ1 − θ0 and v = θ2 − 2θ1 + θ0, and
// jumps to
//
//	θ' = θ0 + 2α·r + α²·v,   α = ‖r‖/‖v‖ clamped to [1, stepMax]
//
// (the paper writes the step as −α; α = 1 gives θ' = θ2, plain EM). For a
// map that contracts every direction at the same rate λ, α = 1/(1−λ) and
// θ' is the fixed point itself. M is the M-step EM uses, smoothing prior
// and variance floor included, so the extrapolation targets the same
// fixed point as plain EM.
//
// Parameter space. Probabilities are extrapolated as logarithms and θ' is
// mapped back by exponentiating and renormalising each distribution, so
// every probability row of θ' is valid whatever α; the cells EM drives
// towards 0 (emissions a state never makes) shrink geometrically, which is
// a straight line in log space that the extrapolation follows.
// Log-probabilities are floored at logFloor so that cells EM sets to
// exactly 0 (no smoothing) stay finite. Reward means are extrapolated as
// they are and reward variances too; a variance below the M-step's floor
// makes θ' infeasible and α is halved towards 1 ((α+1)/2) until it is
// feasible (with log-variances, two of four Gaussian test fits ended in
// clearly worse local maxima).
//
// Safeguards (runEM). Decisions use the penalised log-likelihood
// F(θ) = ln P(D|θ) + ln p(θ) (logPrior), the objective EM with the
// smoothing prior raises at every step (F is the log-likelihood when
// there is no smoothing). The E-step at θ' gives F(θ') exactly; θ' is
// accepted only if F and the log-likelihood are at least those of θ1 and
// the EM step from θ' does not lower F (that step is the stabilising step
// of the reference implementation and the θ1 of the next cycle, which
// starts from θ'). Otherwise EM goes on from θ2. When α = 1 the next cycle
// starts from θ1 with θ2 as its first EM step, so a cycle without
// extrapolation costs one E-step. Convergence is judged on the gain of one
// EM step, as without acceleration: the gain of an extrapolation is no
// test, a poor one can gain little far from the fixed point. The bound
// stepMax follows the reference implementation (R package SQUAREM): it
// starts at 1, is multiplied by stepFactor each time α reaches it and
// divided by stepFactor (not below 1) after a rejected extrapolation.
const (
	// stepFactor is the growth (and shrink) factor of stepMax, the value of
	// the SQUAREM reference implementation (R package SQUAREM, mstep = 4).
	stepFactor = 4
	// logFloor is the least log-probability of the extrapolation space:
	// ln of a probability far below any one that changes a likelihood of
	// 1e7 steps, yet whose exp and square stay finite.
	logFloor = -600
	// minStep: a step length this close to 1 is no acceleration worth an
	// E-step of its own; θ2 is taken instead.
	minStep = 1.01
)

// paramKind says how a block of parameters is mapped to the
// extrapolation space.
type paramKind int

const (
	kindSimplex  paramKind = iota // rows of probabilities: ln p, rows renormalised back
	kindReal                      // reward means: as they are
	kindPositive                  // reward variances: as they are, at least the variance floor
)

type paramBlock struct {
	p    []float64
	row  int // distribution length for kindSimplex
	kind paramKind
}

// paramBlocks lists the free parameters of m in a fixed order: Init,
// Obs1, then per step table the transitions, emissions and reward
// parameters.
func paramBlocks(m *Model) []paramBlock {
	S, O := m.States, m.NumObs
	bs := []paramBlock{{m.Init, S, kindSimplex}, {m.Obs1, O, kindSimplex}}
	for t := range m.Trans {
		bs = append(bs, paramBlock{m.Trans[t], S, kindSimplex}, paramBlock{m.Emit[t], O, kindSimplex})
		if m.Reward == RewardCategorical {
			bs = append(bs, paramBlock{m.RewardProb[t], len(m.RewardValues), kindSimplex})
		} else {
			bs = append(bs, paramBlock{m.RewardMean[t], 1, kindReal}, paramBlock{m.RewardVar[t], 1, kindPositive})
		}
	}
	return bs
}

// flatten writes the parameters of m in the extrapolation space into dst
// (resized as needed) and returns it.
func flatten(m *Model, dst []float64) []float64 {
	dst = dst[:0]
	for _, b := range paramBlocks(m) {
		for _, x := range b.p {
			dst = append(dst, flatValue(b.kind, x))
		}
	}
	return dst
}

// flatValue is the coordinate of a parameter x of kind kind in the flat
// vector: ln x, floored at logFloor, for a probability; x otherwise.
func flatValue(kind paramKind, x float64) float64 {
	if kind != kindSimplex {
		return x
	}
	l := math.Log(x)
	if !(l >= logFloor) {
		l = logFloor
	}
	return l
}

// unflatten returns a model of the shape of like whose parameters are x
// mapped back from the extrapolation space; varFloor is the least reward
// variance (the M-step's). ok is false if x holds a non-finite value or a
// variance below varFloor.
func unflatten(like *Model, x []float64, varFloor float64) (*Model, bool) {
	m := zerosLike(like)
	i := 0
	for _, b := range paramBlocks(m) {
		n := len(b.p)
		src := x[i : i+n]
		i += n
		if !b.set(src, varFloor) {
			return nil, false
		}
	}
	m.Prepare()
	return m, true
}

// zerosLike returns a model of the shape of like with zero parameters.
func zerosLike(like *Model) *Model {
	m := shapeLike(like)
	m.Init, m.Obs1 = zerosOf(like.Init), zerosOf(like.Obs1)
	m.Trans, m.Emit = zerosOfAll(like.Trans), zerosOfAll(like.Emit)
	m.RewardProb, m.RewardMean, m.RewardVar = zerosOfAll(like.RewardProb), zerosOfAll(like.RewardMean), zerosOfAll(like.RewardVar)
	return m
}

// zerosOf is a zero vector of p's length.
func zerosOf(p []float64) []float64 { return make([]float64, len(p)) }

// zerosOfAll is zero vectors of the lengths of ps's (nil for nil ps).
func zerosOfAll(ps [][]float64) [][]float64 {
	if ps == nil {
		return nil
	}
	out := make([][]float64, len(ps))
	for i, p := range ps {
		out[i] = zerosOf(p)
	}
	return out
}

// set maps src back from the extrapolation space into the block's
// parameters: log-probabilities to distributions (softmaxRows),
// variances as they are. It is false if src holds a non-finite value or
// a variance below varFloor.
func (b paramBlock) set(src []float64, varFloor float64) bool {
	if !allFinite(src) {
		return false
	}
	switch b.kind {
	case kindSimplex:
		softmaxRows(b.p, src, b.row)
	case kindPositive:
		return b.setPositive(src, varFloor)
	default:
		copy(b.p, src)
	}
	return true
}

// allFinite says whether no entry of xs is NaN or infinite.
func allFinite(xs []float64) bool {
	for _, y := range xs {
		if math.IsNaN(y) || math.IsInf(y, 0) {
			return false
		}
	}
	return true
}

// setPositive copies the variances src into b, in order, and says
// whether all of them were at least varFloor (stopping at the first one
// below).
func (b paramBlock) setPositive(src []float64, varFloor float64) bool {
	for j, v := range src {
		if !(v >= varFloor) {
			return false
		}
		b.p[j] = v
	}
	return true
}

// softmaxRows sets every row of width entries of p to the normalised
// exp of the log-probabilities logs (floored at logFloor), shifted by
// the row's largest for stability.
func softmaxRows(p, logs []float64, width int) {
	for r := 0; r < len(p); r += width {
		softmaxRow(p[r:r+width], logs[r:r+width])
	}
}

// softmaxRow sets row to the softmax of the logs ls (floored at
// logFloor), shifted by their maximum.
func softmaxRow(row, ls []float64) {
	mx := math.Inf(-1)
	for _, l := range ls {
		mx = max(mx, l)
	}
	z := 0.0
	for j, l := range ls {
		row[j] = math.Exp(max(l, logFloor) - mx)
		z += row[j]
	}
	inv := 1 / z
	for j := range row {
		row[j] *= inv
	}
}

// squarem holds the scratch vectors of the extrapolation.
type squarem struct {
	x0, x1, x2, xn []float64
	stepMax        float64
}

func newSquarem() *squarem { return &squarem{stepMax: 1} }

// extrapolate returns the SQUAREM point from θ0 = m0, θ1 = m1 = M(m0),
// θ2 = m2 = M(m1) and its step length α ≥ 1. When α = 1 it returns m2
// itself. α is halved towards 1 while the point is infeasible; below
// minStep it is taken as 1.
func (q *squarem) extrapolate(m0, m1, m2 *Model, varFloor float64) (*Model, float64) {
	q.x0 = flatten(m0, q.x0)
	q.x1 = flatten(m1, q.x1)
	q.x2 = flatten(m2, q.x2)
	rr, vv := q.norms()
	if !(vv > 0) || math.IsInf(rr, 0) || math.IsNaN(rr) {
		return m2, 1
	}
	alpha := min(max(math.Sqrt(rr/vv), 1), q.stepMax)
	if alpha == 1 {
		// θ2 is taken as it is; a step capped at 1 still lets the bound
		// grow.
		q.accepted(alpha, true)
		return m2, 1
	}
	for ; alpha > minStep; alpha = (alpha + 1) / 2 {
		q.point(alpha)
		if m, ok := unflatten(m2, q.xn, varFloor); ok {
			return m, alpha
		}
	}
	return m2, 1
}

// norms returns ‖r‖² and ‖v‖² for r = θ1 − θ0 and v = θ2 − 2θ1 + θ0.
func (q *squarem) norms() (rr, vv float64) {
	for i := range q.x0 {
		r := q.x1[i] - q.x0[i]
		v := q.x2[i] - 2*q.x1[i] + q.x0[i]
		rr += r * r
		vv += v * v
	}
	return rr, vv
}

// point sets q.xn to the extrapolation θ0 + 2α·r + α²·v of step length
// alpha.
func (q *squarem) point(alpha float64) {
	q.xn = q.xn[:0]
	for i := range q.x0 {
		r := q.x1[i] - q.x0[i]
		v := q.x2[i] - 2*q.x1[i] + q.x0[i]
		q.xn = append(q.xn, q.x0[i]+2*alpha*r+alpha*alpha*v)
	}
}

// accepted updates the step bound after the extrapolation of length
// alpha was accepted (ok) or rejected.
func (q *squarem) accepted(alpha float64, ok bool) {
	switch {
	case ok && alpha == q.stepMax:
		q.stepMax *= stepFactor
	case !ok:
		q.stepMax = max(1, q.stepMax/stepFactor)
	}
}

// logPrior is ln p(θ) of the smoothing prior whose posterior mode the
// M-step computes (up to a constant): a Dirichlet with eps + 1 per cell on
// every distribution, so that the mode is (counts + eps)/Σ, and for
// Gaussian rewards eps pseudo-observations with the data's mean gm and
// variance gv, whose log-density −½ln σ² − (gv + (gm−μ)²)/(2σ²) per
// pseudo-observation gives the M-step's mean and variance. Zero when eps
// is 0.
func logPrior(m *Model, eps float64, c *coded) float64 {
	if eps == 0 {
		return 0
	}
	lp := simplexLogSum(m)
	lp = c.addGaussPrior(lp, m)
	return eps * lp
}

// simplexLogSum is Σ ln p over every probability of m, block by block.
func simplexLogSum(m *Model) float64 {
	lp := 0.0
	for _, b := range paramBlocks(m) {
		if b.kind != kindSimplex {
			continue
		}
		for _, p := range b.p {
			lp += math.Log(p)
		}
	}
	return lp
}

// addGaussPrior adds to lp the log-density terms of m's Gaussian reward
// cells under the prior centred on the logs' reward mean and variance,
// and returns the sum.
func (c *coded) addGaussPrior(lp float64, m *Model) float64 {
	gm, gv := c.rewMean, c.rewVar
	for t := range m.RewardMean {
		for i, mu := range m.RewardMean[t] {
			v := m.RewardVar[t][i]
			d := gm - mu
			lp += -0.5*math.Log(v) - (gv+d*d)/(2*v)
		}
	}
	return lp
}
