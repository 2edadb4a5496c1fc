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
// The relaxed problem's reward at step h then depends on (b_h, o_h): its
// value V_h(b, o) is convex in b for each o (a POMDP's value whose step-h
// reward is ν_{h,a,o}·b), so the sawtooth bounds it from above with
// points and corners of the same o: the points formed on o (bpoint.o)
// and the fully observed values of the MDP over (s, o), whose state
// moves s → s′ ∼ T_h(·|s,a) and emits o′ ∼ E_h(·|s′,a). The bound is
// Σ_o P(o_1 = o)·V_1(b_o, o) − base.

// obsBoundCells bounds H·|O|·S, the corner values the bound keeps (8
// bytes each): past it (wide vocabularies) the charge keeps one tangent
// per step and action.
const obsBoundCells = 1 << 22

// obsAffordable is whether obsBound's corner values fit obsBoundCells.
func (p *beliefPlanner) obsAffordable() bool {
	return float64(p.H+2)*float64(p.O)*float64(p.S) <= obsBoundCells
}

// obsSawtooth is obsBound's state: the corner values vm[h][o] over s
// and, per step and observation, the points below them.
type obsSawtooth struct {
	vm   [][][]float64 // [h][o], h = 1..H+1
	fib  [][][]float64 // the informed bound's vectors [h][a·O+o], nil when too costly
	nA   int
	sets []map[int]*ubSet
}

// obsScratch is one goroutine's prediction and successor buffers.
type obsScratch struct{ pred, next []float64 }

// obsBound returns the sawtooth upper bound of max_π E_θ̂,π[R − b̂] under
// the charge ch, whose tangents may depend on the observation (ch.vec):
// one backward pass over every belief point of the plan, each backed up
// for the observation it was formed on. It stops with ctx's error.
func (p *beliefPlanner) obsBound(ctx context.Context, ch *boundCharge) (float64, error) {
	sw := &obsSawtooth{vm: p.obsCorners(ch), sets: make([]map[int]*ubSet, p.H+2), nA: p.A}
	if p.fibAffordable() {
		sw.fib = p.obsInformed(ch)
		obsFibCorners(sw)
	}
	for h := p.H; h >= 1; h-- {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		sw.sets[h] = map[int]*ubSet{}
		pts := p.pts[h]
		// The points' backups read step h+1 only: they run in parallel,
		// and are kept in their order, whatever the workers.
		vals := make([]float64, len(pts))
		newScratch := func() *obsScratch { return &obsScratch{pred: make([]float64, p.S), next: make([]float64, p.S)} }
		err := parallel.ForWith(ctx, len(pts), p.workers, newScratch, func(sc *obsScratch, i int) error {
			vals[i] = p.obsBackup(sw, sc, ch, h, pts[i].o, pts[i].b)
			return nil
		})
		if err != nil {
			return 0, err
		}
		for i, pt := range pts {
			if g := vals[i] - dot(sw.vm[h][pt.o], pt.b); g < 0 {
				set := sw.sets[h][pt.o]
				if set == nil {
					set = &ubSet{}
					sw.sets[h][pt.o] = set
				}
				set.b = append(set.b, pt.b)
				set.gain = append(set.gain, g)
			}
		}
	}
	v := p.rootValueOf(func(o int, b []float64) float64 { return sw.interp(p.H, 1, o, b) })
	return v - ch.base, nil
}

// obsReward is the relaxed reward of action a at belief b of step h
// formed on observation o: the expected reward less the charge's term
// (none at step H).
func (p *beliefPlanner) obsReward(ch *boundCharge, h, a, o int, b []float64) float64 {
	r := dot(p.tab[h][a].r, b)
	if h < p.H && ch.scale != 0 {
		r -= ch.scale * dot(ch.vec(h, a, o), b)
	}
	return r
}

// obsRewardAt is obsReward at the corner of state s.
func (p *beliefPlanner) obsRewardAt(ch *boundCharge, h, a, o, s int) float64 {
	r := p.tab[h][a].r[s]
	if h < p.H && ch.scale != 0 {
		r -= ch.scale * ch.vec(h, a, o)[s]
	}
	return r
}

// obsBackup is the relaxed value backed up at belief b of step h formed
// on observation o: the best action's relaxed reward plus, before step
// H, its successors' sawtooth values, each at its own observation (sc:
// the caller's scratch).
func (p *beliefPlanner) obsBackup(sw *obsSawtooth, sc *obsScratch, ch *boundCharge, h, o int, b []float64) float64 {
	best := math.Inf(-1)
	for a := range p.A {
		q := p.obsReward(ch, h, a, o, b)
		if h < p.H {
			st := &p.tab[h][a]
			predict(st.t, b, sc.pred)
			for o2 := range p.O {
				if z := correct(st.e, p.O, sc.pred, o2, sc.next); z > 0 {
					q += z * sw.interp(p.H, h+1, o2, sc.next)
				}
			}
		}
		best = max(best, q)
	}
	return best
}

// interp is the sawtooth value at belief b of step h formed on
// observation o (0 past step H): the corners' value, lowered by each
// point's gain of the same o in proportion to its weight at b.
func (sw *obsSawtooth) interp(H, h, o int, b []float64) float64 {
	if h > H {
		return 0
	}
	c := dot(sw.vm[h][o], b)
	best := c
	if set := sw.sets[h][o]; set != nil {
		for i, bi := range set.b {
			best = min(best, c+sawtoothWeight(b, bi)*set.gain[i])
		}
	}
	if sw.fib != nil {
		O := len(sw.vm[h])
		informed := math.Inf(-1)
		for a := range sw.nA {
			informed = max(informed, dot(sw.fib[h][a*O+o], b))
		}
		best = min(best, informed)
	}
	return best
}

// obsInformed returns the fast informed bound (informedBound) of the
// relaxed problem by observation: per step h, action a and observation
// o the vector α_{h,a,o} = r_{h,a,o} + f_{h,a}, r_{h,a,o} the relaxed
// reward (obsReward) and f_{h,a}(s) = Σ_{o′} max_{a′} Σ_{s′} T_h(s′|s,a)
// E_h(o′|s′,a) α_{h+1,a′,o′}(s′); max_a α_{h,a,o}·b bounds V_h(b, o)
// from above.
func (p *beliefPlanner) obsInformed(ch *boundCharge) [][][]float64 {
	H, S, O, A := p.H, p.S, p.O, p.A
	fib := make([][][]float64, H+2)
	w := make([]float64, S)
	for h := H; h >= 1; h-- {
		fib[h] = make([][]float64, A*O)
		for a := range A {
			f := make([]float64, S)
			if h < H {
				st := &p.tab[h][a]
				for s := range S {
					row := st.t[s*S : (s+1)*S]
					for o2 := range O {
						best := math.Inf(-1)
						for a2 := range A {
							next := fib[h+1][a2*O+o2]
							for s2 := range S {
								w[s2] = st.e[s2*O+o2] * next[s2]
							}
							best = max(best, dot(row, w))
						}
						f[s] += best
					}
				}
			}
			for o := range O {
				v := make([]float64, S)
				for s := range S {
					v[s] = p.obsRewardAt(ch, h, a, o, s) + f[s]
				}
				fib[h][a*O+o] = v
			}
		}
	}
	return fib
}

// obsFibCorners lowers the corner values of sw to the informed bound's,
// max_a α_{h,a,o}(s), where that is lower.
func obsFibCorners(sw *obsSawtooth) {
	for h, byObs := range sw.vm {
		if h >= len(sw.fib) || sw.fib[h] == nil {
			continue
		}
		for o, row := range byObs {
			for s := range row {
				c := math.Inf(-1)
				for a := range sw.nA {
					c = max(c, sw.fib[h][a*len(byObs)+o][s])
				}
				row[s] = min(row[s], c)
			}
		}
	}
}

// obsCorners returns the optimal values vm[h][o][s] of the relaxed
// problem's fully observed version over (s_h, o_h) (vm[H+1] = 0): the
// best action's relaxed reward in s under o plus the expected next value,
// T_h(·|s,a)·w_{h,a}, w_{h,a}(s′) = Σ_{o′} E_h(o′|s′,a)·vm[h+1][o′](s′).
func (p *beliefPlanner) obsCorners(ch *boundCharge) [][][]float64 {
	H, S, O, A := p.H, p.S, p.O, p.A
	vm := make([][][]float64, H+2)
	vm[H+1] = make([][]float64, O)
	for o := range O {
		vm[H+1][o] = make([]float64, S)
	}
	next := make([][]float64, A) // T_h(·|s,a)·w_{h,a} per action, over s
	w := make([]float64, S)
	for h := H; h >= 1; h-- {
		for a := range A {
			st := &p.tab[h][a]
			for s2 := range S {
				w[s2] = 0
				for o2 := range O {
					w[s2] += st.e[s2*O+o2] * vm[h+1][o2][s2]
				}
			}
			next[a] = make([]float64, S)
			for s := range S {
				next[a][s] = dot(st.t[s*S:(s+1)*S], w)
			}
		}
		vm[h] = make([][]float64, O)
		for o := range O {
			vm[h][o] = make([]float64, S)
			for s := range S {
				best := math.Inf(-1)
				for a := range A {
					best = max(best, p.obsRewardAt(ch, h, a, o, s)+next[a][s])
				}
				vm[h][o][s] = best
			}
		}
	}
	return vm
}
