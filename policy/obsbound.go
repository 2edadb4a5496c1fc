package policy

import (
	"context"
	"math"

	"github.com/psrlcb/psrlcb/internal/parallel"
)

// The upper bound by observation: the Cauchy–Schwarz charge (csbound.go)
// with tangent points chosen per step, action and observation.
//
// The charge replaces each step's √q_{h,a}(b) by a tangent ν·b below it.
// One tangent per (h, a), taken at the plan's mean belief there, lies
// far below √q at the beliefs away from that mean: E_π[√q(b)] −
// √q(E_π b) is Jensen's gap, and no single line does better in
// expectation. The observation o_h on which a_h is chosen is part of the
// history, so the charge may take a tangent ν_{h,a,o} per observation
// too, at the plan's mean belief where it chose a on o: every such line
// is still below √q, and the charge still lies below the bonus on every
// trajectory. On mini-hall2 at H = 10 (α = 1) the tangents' share of the
// charge's deficit at the plan falls from 0.020 to 0.0001 of the return
// range (docs/planning.md, "The charge by observation").
//
// Any function of the history may choose the tangent, and the plan's
// beliefs where it takes a after the same last two observations and the
// action between them lie closer together than after the same last
// observation alone: on query.s2's fitted model at H = 10 (α = 3) the
// tangents' share of the deficit falls from 0.0126 to 0.0032 of the
// return range, 20,000 rollouts of the plan. So the tangents are taken
// per history code c_h (histCodes): (o_{h−1}, a_{h−1}, o_h) where the
// corner values fit obsBoundCells, o_h otherwise; a code the plan's
// rollouts never met takes the tangent of its o_h, and an o_h they
// never met the one of (h, a).
//
// The relaxed problem's reward at step h then depends on (b_h, c_h),
// and c_{h+1} on (c_h, a_h, o_{h+1}) alone: its value V_h(b, c) is
// convex in b for each c (a POMDP's value whose step-h reward is
// ν_{h,a,c}·b), so the sawtooth bounds it from above with points and
// corners of the same c: each point backed up for every code of its
// step that ends in the observation it was formed on, and the fully
// observed values of the MDP over (s, c), whose state moves
// s → s′ ∼ T_h(·|s,a) and emits o′ ∼ E_h(·|s′,a), c′ = (o(c), a, o′).
// The bound is Σ_o P(o_1 = o)·V_1(b_o, c_1(o)) − base.

// obsBoundCells bounds H·C·S, the corner values the bound keeps (8
// bytes each) for C history codes: where the codes of two observations
// pass it (wide vocabularies) the codes are of o_h alone, and where
// those pass it too the charge keeps one tangent per step and action.
const obsBoundCells = 1 << 22

// histCodes numbers the history suffixes the charge's tangents may
// depend on. The relaxed problem must carry the suffix from step to
// step, so it is a function of the last code, the action and the next
// observation: with deep set, the code of step h is
// c = (o_{h−1}·A + a_{h−1})·O + o_h (at step 1, o_{h−1} = O and
// a_{h−1} = 0), (O+1)·A·O codes; otherwise it is o_h, O codes.
type histCodes struct {
	deep bool
	A, O int
}

// n is the number of codes.
func (k histCodes) n() int {
	if k.deep {
		return (k.O + 1) * k.A * k.O
	}
	return k.O
}

// first is the code of step 1 after observation o.
func (k histCodes) first(o int) int {
	if k.deep {
		return k.O*k.A*k.O + o
	}
	return o
}

// next is the code of step h+1 after action a and observation o2, the
// observation of step h being o.
func (k histCodes) next(o, a, o2 int) int {
	if k.deep {
		return (o*k.A+a)*k.O + o2
	}
	return o2
}

// obs is the observation o_h of code c.
func (k histCodes) obs(c int) int { return c % k.O }

// futures is the number of distinct successor sets: the successors'
// codes depend on the code's last observation with two observations,
// on nothing with one.
func (k histCodes) futures() int {
	if k.deep {
		return k.O
	}
	return 1
}

// future is the index, below futures, of code c's successor set.
func (k histCodes) future(c int) int {
	if k.deep {
		return k.obs(c)
	}
	return 0
}

// at returns the codes of step h that end in observation o.
func (k histCodes) at(h, o int) []int {
	if h <= 1 || !k.deep {
		return []int{k.first(o)}
	}
	cs := make([]int, 0, k.O*k.A)
	for op := range k.O {
		for a := range k.A {
			cs = append(cs, k.next(op, a, o))
		}
	}
	return cs
}

// histCodesOf returns the planner's history codes: two observations
// when their corner values fit obsBoundCells, else one.
func (p *beliefPlanner) histCodesOf() histCodes {
	k := histCodes{deep: !shallowCodes, A: p.A, O: p.O}
	if !p.codeCellsFit(k) {
		k.deep = false
	}
	return k
}

// codeCellsFit is whether the corner values of codes k fit
// obsBoundCells.
func (p *beliefPlanner) codeCellsFit(k histCodes) bool {
	return float64(p.H+2)*float64(k.n())*float64(p.S) <= obsBoundCells
}

// shallowCodes (tests) keeps the codes of one observation.
var shallowCodes bool

// obsAffordable is whether obsBound's corner values fit obsBoundCells.
func (p *beliefPlanner) obsAffordable() bool { return p.codeCellsFit(p.codes) }

// obsSawtooth is obsBound's state: the corner values vm[h][c] over s
// and, per step and history code, the points below them.
type obsSawtooth struct {
	vm [][][]float64 // [h][c], h = 1..H+1
	// fut holds the informed bound's future part f_{h,a,o},
	// [h][a·futures+future(c)], nil when too costly; with the relaxed
	// reward of (a, c) it makes the vector α_{h,a,c} (obsInformed).
	fut  [][][]float64
	sets []map[int]*ubSet
}

// obsScratch is one goroutine's buffers: prediction, successor and the
// actions' future values.
type obsScratch struct{ pred, next, fut []float64 }

// obsBound returns the sawtooth upper bound of max_π E_θ̂,π[R − b̂] under
// the charge ch, whose tangents may depend on the history code (ch.vec):
// one backward pass over every belief point of the plan, each backed up
// for every code of its step that ends in the observation it was formed
// on (the successors, hence the costly part of the backup, depend on that
// observation alone). It stops with ctx's error.
func (p *beliefPlanner) obsBound(ctx context.Context, ch *boundCharge) (float64, error) {
	sw, err := p.obsSawtoothOf(ctx, ch, 1)
	if err != nil {
		return 0, err
	}
	v := p.rootValueOf(func(o int, b []float64) float64 { return p.obsInterp(sw, ch, 1, p.codes.first(o), b) })
	return v - ch.base, nil
}

// obsSawtoothOf returns obsBound's sawtooth of V_h(b, c) under the
// charge ch at the steps from from on (its corners, informed bound and
// points; the earlier steps are left out, and the charge's tangents
// there are not read).
func (p *beliefPlanner) obsSawtoothOf(ctx context.Context, ch *boundCharge, from int) (*obsSawtooth, error) {
	k := p.codes
	sw := &obsSawtooth{vm: p.obsCorners(ch, from), sets: make([]map[int]*ubSet, p.H+2)}
	if p.obsFibAffordable() {
		sw.fut = p.obsInformed(ch, from)
		p.obsFibCorners(sw, ch, from)
	}
	for h := p.H; h >= from; h-- {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sw.sets[h] = map[int]*ubSet{}
		pts := p.pts[h]
		// The points' backups read step h+1 only: they run in parallel,
		// and are kept in their order, whatever the workers.
		vals := make([][]float64, len(pts))
		newScratch := func() *obsScratch {
			return &obsScratch{pred: make([]float64, p.S), next: make([]float64, p.S), fut: make([]float64, p.A)}
		}
		err := parallel.ForWith(ctx, len(pts), p.workers, newScratch, func(sc *obsScratch, i int) error {
			vals[i] = p.obsBackup(sw, sc, ch, h, pts[i].o, pts[i].b)
			return nil
		})
		if err != nil {
			return nil, err
		}
		for i, pt := range pts {
			for j, c := range k.at(h, pt.o) {
				if g := vals[i][j] - dot(sw.vm[h][c], pt.b); g < 0 {
					set := sw.sets[h][c]
					if set == nil {
						set = &ubSet{}
						sw.sets[h][c] = set
					}
					set.b = append(set.b, pt.b)
					set.gain = append(set.gain, g)
				}
			}
		}
	}
	return sw, nil
}

// obsReward is the relaxed reward of action a at belief b of step h
// with history code c: the expected reward less the charge's term (none
// at step H).
func (p *beliefPlanner) obsReward(ch *boundCharge, h, a, c int, b []float64) float64 {
	r := dot(p.tab[h][a].r, b)
	if h < p.H && ch.scale != 0 {
		r -= ch.scale * dot(ch.vec(h, a, c), b)
	}
	return r
}

// obsRewardVec sets out to the relaxed reward of action a at step h
// with history code c at each state's corner.
func (p *beliefPlanner) obsRewardVec(ch *boundCharge, h, a, c int, out []float64) {
	copy(out, p.tab[h][a].r)
	if h < p.H && ch.scale != 0 {
		for s, t := range ch.vec(h, a, c) {
			out[s] -= ch.scale * t
		}
	}
}

// obsBackup returns the relaxed values backed up at belief b of step h
// formed on observation o, one per code of p.codes.at(h, o): the best
// action's relaxed reward under the code plus, before step H, its
// successors' sawtooth values, each at its own code (sc: the caller's
// scratch).
func (p *beliefPlanner) obsBackup(sw *obsSawtooth, sc *obsScratch, ch *boundCharge, h, o int, b []float64) []float64 {
	k := p.codes
	for a := range p.A {
		f := 0.0
		if h < p.H {
			st := &p.tab[h][a]
			predict(st.t, b, sc.pred)
			for o2 := range p.O {
				if z := correct(st.e, p.O, sc.pred, o2, sc.next); z > 0 {
					f += z * p.obsInterp(sw, ch, h+1, k.next(o, a, o2), sc.next)
				}
			}
		}
		sc.fut[a] = f
	}
	cs := k.at(h, o)
	out := make([]float64, len(cs))
	for j, c := range cs {
		best := math.Inf(-1)
		for a := range p.A {
			best = max(best, p.obsReward(ch, h, a, c, b)+sc.fut[a])
		}
		out[j] = best
	}
	return out
}

// obsInterp is the sawtooth value at belief b of step h with history
// code c (0 past step H): the corners' value, lowered by each point's
// gain of the same code in proportion to its weight at b, and by the
// informed bound where it is lower.
func (p *beliefPlanner) obsInterp(sw *obsSawtooth, ch *boundCharge, h, c int, b []float64) float64 {
	return p.obsInterpBy(sw, h, c, b, func(a int) float64 { return p.obsReward(ch, h, a, c, b) })
}

// obsInterpBy is obsInterp with the informed bound's relaxed reward of
// each action a given, reward(a).
func (p *beliefPlanner) obsInterpBy(sw *obsSawtooth, h, c int, b []float64, reward func(a int) float64) float64 {
	return p.obsInterpWith(sw, h, c, b, reward, nil)
}

// weightCache holds the sawtooth weights at one belief of the entries of
// a set, by place (the belief each was computed for, and the weight):
// the sawtooths of topTree's tails keep the same points in the same
// order (the same slices of the planner's points), so at a node each
// weight is computed once for all of them.
type weightCache struct {
	b   [][]float64
	phi []float64
}

// weight is the sawtooth weight at b of bi, the i-th entry of a set
// (sawtoothWeight), from wc when its i-th entry is the same belief (the
// same slice), else computed and kept there; wc nil keeps nothing.
func (wc *weightCache) weight(i int, b, bi []float64) float64 {
	if wc == nil {
		return sawtoothWeight(b, bi)
	}
	if i < len(wc.b) && &wc.b[i][0] == &bi[0] {
		return wc.phi[i]
	}
	w := sawtoothWeight(b, bi)
	if i == len(wc.b) {
		wc.b, wc.phi = append(wc.b, bi), append(wc.phi, w)
	} else {
		wc.b[i], wc.phi[i] = bi, w
	}
	return w
}

// reset empties wc for another belief.
func (wc *weightCache) reset() { wc.b, wc.phi = wc.b[:0], wc.phi[:0] }

// obsInterpWith is obsInterpBy with the weights taken from and kept in
// wc (nil: none), all at the belief b.
func (p *beliefPlanner) obsInterpWith(sw *obsSawtooth, h, c int, b []float64, reward func(a int) float64, wc *weightCache) float64 {
	if h > p.H {
		return 0
	}
	v := dot(sw.vm[h][c], b)
	best := v
	if set := sw.sets[h][c]; set != nil {
		for i, bi := range set.b {
			best = min(best, v+wc.weight(i, b, bi)*set.gain[i])
		}
	}
	if sw.fut != nil {
		nf, of := p.codes.futures(), p.codes.future(c)
		informed := math.Inf(-1)
		for a := range p.A {
			informed = max(informed, reward(a)+dot(sw.fut[h][a*nf+of], b))
		}
		best = min(best, informed)
	}
	return best
}

// obsInterpWork is the multiply–adds of obsInterp at step h and code c:
// S for the corners, S per point of the code's set, and per action 2S
// for the informed bound (its reward and future part).
func (p *beliefPlanner) obsInterpWork(sw *obsSawtooth, h, c int) float64 {
	if h > p.H {
		return 0
	}
	n := 1
	if set := sw.sets[h][c]; set != nil {
		n += len(set.b)
	}
	if sw.fut != nil {
		n += 2 * p.A
	}
	return float64(n * p.S)
}

// bytes is about what sw holds: its corners, its informed bound's
// future parts and its points' entries (a belief's slice header and a
// gain each, the belief shared with the planner's points).
func (sw *obsSawtooth) bytes() float64 {
	n := 0
	for _, vs := range [][][][]float64{sw.vm, sw.fut} {
		for _, row := range vs {
			for _, v := range row {
				n += 24 + 8*len(v)
			}
		}
	}
	for _, sets := range sw.sets {
		for _, set := range sets {
			n += 64 + 32*len(set.b)
		}
	}
	return float64(n)
}

// obsFibAffordable is whether obsInformed fits fibCost per step:
// |A|²·|O|·S² multiply–adds for each observation its future part
// depends on.
func (p *beliefPlanner) obsFibAffordable() bool {
	return float64(p.codes.futures())*float64(p.A)*float64(p.A)*float64(p.O)*float64(p.S)*float64(p.S) <= fibCost
}

// obsInformed returns the future part of the fast informed bound
// (informedBound) of the relaxed problem by history code: per step h,
// action a and code c the vector α_{h,a,c} = r_{h,a,c} + f_{h,a,o(c)}
// bounds V_h(b, c) from above as max_a α_{h,a,c}·b, r_{h,a,c} the relaxed
// reward (obsRewardAt) and f_{h,a,o}(s) = Σ_{o′} max_{a′} Σ_{s′}
// T_h(s′|s,a) E_h(o′|s′,a) α_{h+1,a′,c′}(s′), c′ = next(o, a, o′): the
// successors' codes depend on the code's last observation only, so f is
// kept per (a, o), [h][a·futures+future(c)] (histCodes). Steps before
// from are left nil.
func (p *beliefPlanner) obsInformed(ch *boundCharge, from int) [][][]float64 {
	H, S, O, A := p.H, p.S, p.O, p.A
	k := p.codes
	nf := k.futures()
	fut := make([][][]float64, H+2)
	ew := perDepth(A-2, S) // per a′, α_{h+1,a′,c′} weighted by E_h(o′|·,a)
	alpha := make([]float64, S)
	for h := H; h >= from; h-- {
		fut[h] = make([][]float64, A*nf)
		for a := range A {
			st := &p.tab[h][a]
			for of := range nf {
				f := make([]float64, S)
				fut[h][a*nf+of] = f
				if h == H {
					continue
				}
				for o2 := range O {
					// α_{h+1,a′,c′}(s′) per a′, weighted by E_h(o′|s′,a).
					c2 := k.next(of, a, o2)
					for a2 := range A {
						p.obsAlpha(ch, fut, h+1, a2, c2, alpha)
						for s2 := range S {
							ew[a2][s2] = st.e[s2*O+o2] * alpha[s2]
						}
					}
					for s := range S {
						best := math.Inf(-1)
						row := st.t[s*S : (s+1)*S]
						for a2 := range A {
							best = max(best, dot(row, ew[a2]))
						}
						f[s] += best
					}
				}
			}
		}
	}
	return fut
}

// obsAlpha sets alpha to the informed vector α_{h,a,c} = r_{h,a,c} +
// f_{h,a,o(c)} (obsInformed).
func (p *beliefPlanner) obsAlpha(ch *boundCharge, fut [][][]float64, h, a, c int, alpha []float64) {
	p.obsRewardVec(ch, h, a, c, alpha)
	for s, x := range fut[h][a*p.codes.futures()+p.codes.future(c)] {
		alpha[s] += x
	}
}

// obsFibCorners lowers the corner values of sw to the informed bound's,
// max_a α_{h,a,c}(s), where that is lower, at the steps from from on.
func (p *beliefPlanner) obsFibCorners(sw *obsSawtooth, ch *boundCharge, from int) {
	alpha := make([]float64, p.S)
	for h := from; h <= p.H; h++ {
		for c, row := range sw.vm[h] {
			best := make([]float64, p.S)
			for s := range best {
				best[s] = math.Inf(-1)
			}
			for a := range p.A {
				p.obsAlpha(ch, sw.fut, h, a, c, alpha)
				for s := range best {
					best[s] = max(best[s], alpha[s])
				}
			}
			for s := range row {
				row[s] = min(row[s], best[s])
			}
		}
	}
}

// obsCorners returns the optimal values vm[h][c][s] of the relaxed
// problem's fully observed version over (s_h, c_h) (vm[H+1] = 0): the
// best action's relaxed reward in s under c plus the expected next value
// T_h(·|s,a)·w_{h,a,o}, w_{h,a,o}(s′) = Σ_{o′} E_h(o′|s′,a)·vm[h+1][c′](s′),
// c′ = next(o, a, o′) with o the code's last observation; steps before
// from are left nil.
func (p *beliefPlanner) obsCorners(ch *boundCharge, from int) [][][]float64 {
	H, S, O, A := p.H, p.S, p.O, p.A
	k := p.codes
	C, nf := k.n(), k.futures()
	vm := make([][][]float64, H+2)
	vm[H+1] = perDepth(C-1, S)
	next := make([][]float64, A*nf) // T_h(·|s,a)·w_{h,a,o}, over s
	w, rw := make([]float64, S), make([]float64, S)
	for h := H; h >= from; h-- {
		for a := range A {
			st := &p.tab[h][a]
			for of := range nf {
				for s2 := range S {
					w[s2] = 0
					for o2 := range O {
						w[s2] += st.e[s2*O+o2] * vm[h+1][k.next(of, a, o2)][s2]
					}
				}
				nx := make([]float64, S)
				for s := range S {
					nx[s] = dot(st.t[s*S:(s+1)*S], w)
				}
				next[a*nf+of] = nx
			}
		}
		vm[h] = make([][]float64, C)
		for c := range C {
			of := k.future(c)
			row := make([]float64, S)
			for s := range row {
				row[s] = math.Inf(-1)
			}
			for a := range A {
				p.obsRewardVec(ch, h, a, c, rw)
				for s, nx := range next[a*nf+of] {
					row[s] = max(row[s], rw[s]+nx)
				}
			}
			vm[h][c] = row
		}
	}
	return vm
}
