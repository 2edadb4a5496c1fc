package policy

import (
	"context"
	"math"
	"math/rand/v2"
)

// The Cauchy–Schwarz charge: a second lower bound of the bonus that is
// linear in the beliefs along each trajectory, for the upper bound of
// the belief planner (docs/planning.md, "The Cauchy–Schwarz charge").
//
// The chord's charge (chordCharge) must hold on every Σ from the least
// to the largest a trajectory can reach. When a few poorly covered
// actions make that range wide while the plan's trajectories stay at its
// low end, the chord lies far below the bonus there, and the upper bound
// cannot tell the plan from the optimum. This charge bounds the square
// root step by step instead. For weights w_0, …, w_{H−1} ≥ 0 with
// Σ_h w_h² ≤ 1, the Cauchy–Schwarz inequality gives on every trajectory
//
//	√Σ = √(Σ_h q_h) ≥ Σ_h w_h √q_h,
//
// q_0 = Σ_0 the root term and q_h = bᵀm_{h,a}b the step terms (the
// bonus's b̂ = min{α√Σ, 1} of PSR-LCB, Huang, Liang, Yang, ICLR 2024,
// arXiv:2307.00405, Section 5, eq. (6)). It is tight where √q_h ∝ w_h,
// whatever the size of Σ. Each m_{h,a} is positive semi-definite, so
// √(bᵀm b) is a (semi-)norm of b and lies above its tangent at any
// belief μ: √(bᵀm b) ≥ μᵀm b / √(μᵀm μ) (Cauchy–Schwarz again, in the
// form's inner product). Since b̂ = min{α√Σ, 1} ≥ min{αz, 1} for
// z = Σ_h w_h √q_h ≤ √Σ, and min{y, 1} ≥ γ·y for 0 ≤ y ≤ y_max with
// γ = min{1, 1/y_max}, y_max = α·Σ_h w_h √(max q_h) (each q_h peaks at a
// vertex of the simplex, max_{a,s} (m_{h,a})_{ss}; by Cauchy–Schwarz
// this is at most α√Σ_hi). Together, on every trajectory,
//
//	b̂ ≥ γα·(w_0√Σ_0 + Σ_{1≤h<H} w_h ν_{h,a_h}·b_h),  ν_{h,a} = m_{h,a}μ_{h,a}/√(μ_{h,a}ᵀm_{h,a}μ_{h,a}),
//
// linear in the beliefs, whatever w and μ are. The step weights are
// equal, the root's is fitted to the plan's split between the root term
// and the steps (csWeights), and μ_{h,a} is the plan's mean belief where
// it takes a at step h (its mean belief at step h for an action it does
// not take), from csRollouts rollouts of its controller under the model.

// csRollouts is the number of rollouts that choose the charge's tangent
// points. Any choice gives a valid bound; more rollouts only fit them
// closer to the plan.
const csRollouts = 4096

// csSeed seeds those rollouts, so the same plan gets the same charge.
const csSeed = 0xc5c5

// csCharge returns the Cauchy–Schwarz charge with the weights of
// csWeights and the tangent points of the plan of the α-sets bp.gamma
// (its controller with the lookahead of a table of rows rows), or of the
// plans of decs pooled (csStats), and the same charge with tangent
// points also chosen by the observation o_h each action is chosen on
// (obsBound; nil when obsAffordable says no), or nil when the bonus is
// 0. It stops with ctx's error when ctx is done.
func (bp *beliefPlanner) csCharge(ctx context.Context, ft *fallbackTables, rows int64, decs ...*beliefPlanner) (ch, byObs *boundCharge, err error) {
	alpha := bp.bonus.Alpha
	if alpha <= 0 {
		return nil, nil, nil
	}
	st, err := bp.csStats(ctx, ft, rows, decs...)
	if err != nil {
		return nil, nil, err
	}
	w0, w := csWeights(bp.bonus.Root, st.meanStepRoots(), bp.H)
	// The weighted sum z = Σ_h w_h √q_h is at most Σ_h w_h √(max q_h),
	// often far below √Σ_hi: the cap's scale γ is taken there.
	zMax := w0 * math.Sqrt(max(bp.bonus.Root, 0))
	for h := 1; h < bp.H; h++ {
		zMax += w * math.Sqrt(bp.quadMax(h))
	}
	yMax := alpha * zMax
	gam := 1.0
	if yMax > 1 {
		gam = 1 / yMax
	}
	ch = &boundCharge{scale: gam * alpha, base: gam * alpha * w0 * math.Sqrt(max(bp.bonus.Root, 0)), name: chargeCS, stepW: w}
	ch.tan = make([][][]float64, bp.H)
	S := bp.S
	mb := make([]float64, S)
	for h := 1; h < bp.H; h++ {
		ch.tan[h] = make([][]float64, bp.A)
		for a := range bp.A {
			ch.tan[h][a] = normTangent(bp.tab[h][a].m, st.mean(h, a), mb, w)
		}
	}
	if st.byObs == nil {
		return ch, nil, nil
	}
	byObs = &boundCharge{scale: ch.scale, base: ch.base, tan: ch.tan, name: chargeCSObs,
		otan: st.byObs.tangents(bp, bp.O, mb, w), codes: bp.codes, stepW: w}
	if st.byCode != nil {
		byObs.htan = st.byCode.tangents(bp, bp.codes.n(), mb, w)
	}
	return ch, byObs, nil
}

// keyedSums holds sums of beliefs and their counts per key (h·A + a)·n
// + j, j < n an observation or a history code.
type keyedSums struct {
	sum map[int][]float64
	n   map[int]int
}

func newKeyedSums() *keyedSums { return &keyedSums{sum: map[int][]float64{}, n: map[int]int{}} }

// add adds belief b to the sums of key k; nothing when ks is nil.
func (ks *keyedSums) add(k int, b []float64) {
	if ks == nil {
		return
	}
	sum, ok := ks.sum[k]
	if !ok {
		sum = make([]float64, len(b))
		ks.sum[k] = sum
	}
	addTo(sum, b)
	ks.n[k]++
}

// tangents returns per key the tangent w·ν of √(bᵀm_{h,a}b) at the
// key's mean belief (normTangent; mb: scratch).
func (ks *keyedSums) tangents(bp *beliefPlanner, n int, mb []float64, w float64) map[int][]float64 {
	out := make(map[int][]float64, len(ks.sum))
	for k, sum := range ks.sum {
		h, a := k/(bp.A*n), k/n%bp.A
		mu := make([]float64, len(sum))
		for i, v := range sum {
			mu[i] = v / float64(ks.n[k])
		}
		out[k] = normTangent(bp.tab[h][a].m, mu, mb, w)
	}
	return out
}

// csWeights returns the Cauchy–Schwarz weights: w0 for the root term
// and w for each of the H−1 step terms, w0² + (H−1)·w² = 1. The root
// term Σ_0 is the same on every trajectory, so its weight cannot be
// exploited by another policy: it is the one that makes the inequality
// tight at the plan's own split between root and steps,
// w0 ∝ √Σ_0 and √(1 − w0²) ∝ z̄/√(H−1), z̄ = E_π[Σ_{1≤h<H} √q_h] (the
// steps' sum with unit weights then has mean z̄/√(H−1)). The steps keep
// equal weights: weights fitted to the plan's profile leave the steps
// where it has small terms nearly free, and the relaxed problem's
// optimum goes there (docs/planning.md, "The Cauchy–Schwarz charge").
// With no step (H = 1) the root takes the whole weight; with neither
// term, the weights are equal.
func csWeights(root, zbar float64, H int) (w0, w float64) {
	if H <= 1 {
		return 1, 0
	}
	r0, zs := math.Sqrt(max(root, 0)), zbar/math.Sqrt(float64(H-1))
	if !(r0+zs > 0) {
		w = 1 / math.Sqrt(float64(H))
		return w, w
	}
	w0 = r0 / math.Hypot(r0, zs)
	return w0, math.Sqrt(max(1-w0*w0, 0) / float64(H-1))
}

// normTangent returns c·ν, ν = m μ / √(μᵀm μ) the tangent of √(bᵀm b)
// at μ (mb: scratch); 0 when μᵀm μ is 0, where √(bᵀm b) ≥ 0 is the
// bound.
func normTangent(m, mu, mb []float64, c float64) []float64 {
	S := len(mu)
	out := make([]float64, S)
	for s := 0; s < S; s++ {
		mb[s] = dot(m[s*S:(s+1)*S], mu)
	}
	q := dot(mb, mu)
	if !(q > 0) || c == 0 {
		return out
	}
	f := c / math.Sqrt(q)
	for s := range out {
		out[s] = f * mb[s]
	}
	return out
}

// csTally holds what the rollouts of a plan saw: per step and action
// the sum of beliefs and their count, per step the sum of all beliefs.
type csTally struct {
	bsum [][][]float64 // [h][a]
	cnt  [][]int       // [h][a]
	step [][]float64   // [h]
	// byObs: the sums of beliefs per step, action and the observation
	// the action was chosen on, keyed by obsKey (nil when obsAffordable
	// says no); byCode the same per history code, keyed by codeKey (nil
	// unless the codes are of two observations).
	byObs, byCode *keyedSums
	// roots is the sum over the rollouts of Σ_{1≤h<H} √q_h, n their
	// number (meanStepRoots).
	roots float64
	n     int
}

// meanStepRoots is the rollouts' mean of Σ_{1≤h<H} √q_h (0 with none).
func (st *csTally) meanStepRoots() float64 {
	if st.n == 0 {
		return 0
	}
	return st.roots / float64(st.n)
}

// csStats rolls the controller of each planner of decs (the plan's for
// a nil entry, or when decs is empty) out csRollouts times under the
// model from a fixed seed, into one tally (one goroutine: the same plans
// give the same tally whatever the worker count).
func (bp *beliefPlanner) csStats(ctx context.Context, ft *fallbackTables, rows int64, decs ...*beliefPlanner) (*csTally, error) {
	H, S, A := bp.H, bp.S, bp.A
	st := &csTally{bsum: make([][][]float64, H), cnt: make([][]int, H), step: perDepth(H-1, S)}
	if bp.obsAffordable() {
		st.byObs = newKeyedSums()
		if bp.codes.deep {
			st.byCode = newKeyedSums()
		}
	}
	for h := 1; h < H; h++ {
		st.bsum[h] = perDepth(A-1, S)
		st.cnt[h] = make([]int, A)
	}
	if len(decs) == 0 {
		decs = []*beliefPlanner{nil}
	}
	for _, dec := range decs {
		if err := bp.csRollouts(ctx, ft, rows, dec, st); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// csRollouts adds to st the beliefs of csRollouts rollouts, from csSeed,
// of the controller of dec (the plan's when nil).
func (bp *beliefPlanner) csRollouts(ctx context.Context, ft *fallbackTables, rows int64, dec *beliefPlanner, st *csTally) error {
	H, S, A, O := bp.H, bp.S, bp.A, bp.O
	w := newTableWalker(bp, ft)
	w.dec = dec
	w.setController(rows)
	first := make([]float64, O)
	bp.m.FirstObsProbs(first)
	rng := rand.New(rand.NewPCG(csSeed, 0))
	b := make([]float64, S)
	for k := range csRollouts {
		if k%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		o := w.smp.start(rng, first)
		c := bp.codes.first(o)
		st.n++
		bp.m.Prior(b)
		bp.m.ObserveFirst(b, o)
		for t := 1; t < H; t++ {
			a := w.action(t, b, o == bp.endObs)
			tb := &bp.tab[t][a]
			addTo(st.bsum[t][a], b)
			addTo(st.step[t], b)
			st.cnt[t][a]++
			st.byObs.add(obsKey(t, a, o, A, O), b)
			st.byCode.add(codeKey(t, a, c, bp.codes), b)
			st.roots += math.Sqrt(max(quad(tb.m, b), 0))
			predict(tb.t, b, w.rpred)
			o2 := w.drawObs(rng, t, a, tb)
			c, o = bp.codes.next(o, a, o2), o2
			if correct(tb.e, O, w.rpred, o, b) == 0 {
				break // not reached: o was drawn with positive probability
			}
		}
	}
	return nil
}

// addTo adds x to acc.
func addTo(acc, x []float64) {
	for i, v := range x {
		acc[i] += v
	}
}

// mean returns the rollouts' mean belief where the plan took a at step
// h, or their mean belief at step h when it never did.
func (st *csTally) mean(h, a int) []float64 {
	sum, n := st.bsum[h][a], st.cnt[h][a]
	if n == 0 {
		sum, n = st.step[h], 0
		for _, c := range st.cnt[h] {
			n += c
		}
	}
	out := make([]float64, len(sum))
	if n == 0 {
		return out
	}
	for i, v := range sum {
		out[i] = v / float64(n)
	}
	return out
}
