package policy

import (
	"context"
	"math"
)

// The bound exact over the first steps (docs/planning.md, "The bound
// exact over the first steps").
//
// Every charge of the other bounds is a sum of per-step terms, so it
// must stay below the bonus b̂ = min{α√Σ, 1} (PSR-LCB, Huang, Liang,
// Yang, ICLR 2024, arXiv:2307.00405, Section 5, eq. (6)) on every
// trajectory with one set of weights for all of them, and a trajectory
// whose terms differ in size from the weights' profile is undercharged.
// The relaxed problem can instead be expanded exactly over its first K
// steps: every action, every observation of positive probability, the
// belief of each node exact. A node of depth K then knows its running
// sum σ_K = Σ_0 + Σ_{h≤K} q_h, and by Cauchy–Schwarz, for any w_0 ∈
// [0, 1] and w = √((1 − w_0²)/(H − 1 − K)),
//
//	√(σ_K + Σ_{h>K} q_h) ≥ w_0·√σ_K + w·Σ_{h>K} √q_h,
//
// so the rest of the episode is bounded by the relaxed problem of the
// charge by history code (obsbound.go) from step K+1 on, with step
// weight w, less γα·w_0·√σ_K (γ the cap's scale, csCharge). Each w_0 of
// topRootWeights gives such a tail (one sawtooth each), and each node
// takes the least: w_0 = 1 charges the tail nothing and bounds the bonus
// by the first K steps' terms alone, exactly; a small w_0 is the charge
// by history code again. Above the nodes the rewards are exact and every
// action is allowed, so the root's value bounds max_π E_θ̂,π[R − b̂].

// topMaxDepth is the most steps expanded exactly (topDepth).
const topMaxDepth = 3

// topRootWeights are the root weights w_0 = cos θ of the tails, θ in
// steps of π/16 from 0 (the first K steps' terms alone) to π/2 (the tail
// alone): the split of the weight between √σ_K and the tail's terms.
var topRootWeights = func() []float64 {
	w := make([]float64, 9)
	for i := range w {
		w[i] = math.Cos(float64(i) * math.Pi / 16)
	}
	w[8] = 0 // cos(π/2) rounds to 6·10⁻¹⁷
	return w
}()

// topRootScale (tests) scales the tails' root term; 1 otherwise.
var topRootScale = 1.0

// topCost bounds the top tree's work: its nodes of depth K, (|A|·|O|)^K,
// times the tails, times S per point of a step's sawtooth.
const topCost = 1 << 32

// topTail is one tail of topBound: root weight w0, the cap's scale gam,
// the charge and its sawtooth.
type topTail struct {
	w0, gam float64
	ch      *boundCharge
	sw      *obsSawtooth
}

// topDepth is K, the steps topBound expands exactly: the most, up to
// topMaxDepth, whose cost fits topCost and that leave a step of tail
// (0: none does, or no charge by history code is affordable).
func (p *beliefPlanner) topDepth() int {
	if !p.obsAffordable() {
		return 0
	}
	for K := min(topMaxDepth, p.H-2); K >= 1; K-- {
		pts := 0
		for h := K + 1; h <= p.H; h++ {
			pts = max(pts, len(p.pts[h]))
		}
		nodes := math.Pow(float64(p.A)*float64(p.O), float64(K))
		if nodes*float64(len(topRootWeights))*float64(max(pts, 1))*float64(p.S) <= topCost {
			return K
		}
	}
	return 0
}

// topBound returns the bound exact over the first K = topDepth() steps
// with the tangents of the charge by history code ch (whose step weight
// is ch.stepW), and K; +Inf when ch is none or K is 0. It stops with
// ctx's error.
func (p *beliefPlanner) topBound(ctx context.Context, ch *boundCharge) (float64, int, error) {
	K, alpha := p.topDepth(), p.bonus.Alpha
	if ch == nil || ch.stepW <= 0 || K == 0 {
		return math.Inf(1), K, nil
	}
	root := max(p.bonus.Root, 0)
	sigMax := root
	for h := 1; h <= K; h++ {
		sigMax += p.quadMax(h)
	}
	tails := make([]topTail, 0, len(topRootWeights))
	for _, w0 := range topRootWeights {
		w := math.Sqrt(max(1-w0*w0, 0) / float64(p.H-1-K))
		y := w0 * math.Sqrt(sigMax)
		for h := K + 1; h < p.H; h++ {
			y += w * math.Sqrt(p.quadMax(h))
		}
		gam := 1.0
		if alpha*y > 1 {
			gam = 1 / (alpha * y)
		}
		// The tail's sawtooth reads only the steps past K.
		tc := ch.rescaled(w / ch.stepW)
		tc.scale, tc.base = gam*alpha, 0
		sw, err := p.obsSawtoothOf(ctx, tc, K+1)
		if err != nil {
			return 0, K, err
		}
		tails = append(tails, topTail{w0: w0, gam: gam, ch: tc, sw: sw})
	}
	t := &topTree{p: p, K: K, tails: tails, alpha: alpha, pred: perDepth(K, p.S), next: perDepth(K, p.S)}
	return p.rootValueOf(func(o int, b []float64) float64 {
		return t.value(1, o, p.codes.first(o), b, root)
	}), K, nil
}

// rescaled returns a copy of ch with every tangent scaled by f.
func (ch *boundCharge) rescaled(f float64) *boundCharge {
	out := *ch
	scale := func(v []float64) []float64 {
		o := make([]float64, len(v))
		for i, x := range v {
			o[i] = x * f
		}
		return o
	}
	out.tan = make([][][]float64, len(ch.tan))
	for h, row := range ch.tan {
		if row == nil {
			continue
		}
		out.tan[h] = make([][]float64, len(row))
		for a, v := range row {
			out.tan[h][a] = scale(v)
		}
	}
	out.otan, out.htan = rescaledMap(ch.otan, scale), rescaledMap(ch.htan, scale)
	return &out
}

// rescaledMap applies scale to each tangent of m (nil for nil).
func rescaledMap(m map[int][]float64, scale func([]float64) []float64) map[int][]float64 {
	if m == nil {
		return nil
	}
	out := make(map[int][]float64, len(m))
	for key, v := range m {
		out[key] = scale(v)
	}
	return out
}

// topTree is topBound's exact expansion: its tails, and per depth the
// prediction and successor buffers.
type topTree struct {
	p          *beliefPlanner
	K          int
	tails      []topTail
	alpha      float64
	pred, next [][]float64
}

// value is the relaxed value of the node of step h with last
// observation o, history code c, belief b and running sum sig: the best
// action's exact reward plus its successors' values down to step K, and
// at step K+1 the least over the tails of the tail's sawtooth value less
// its root term.
func (t *topTree) value(h, o, c int, b []float64, sig float64) float64 {
	p := t.p
	if h > t.K {
		best := math.Inf(1)
		for _, tl := range t.tails {
			best = min(best, p.obsInterp(tl.sw, tl.ch, h, c, b)-topRootScale*tl.gam*t.alpha*tl.w0*math.Sqrt(sig))
		}
		return best
	}
	pred, next := t.pred[h-1], t.next[h-1]
	best := math.Inf(-1)
	for a := range p.A {
		st := &p.tab[h][a]
		v := dot(st.r, b)
		q := max(quad(st.m, b), 0)
		predict(st.t, b, pred)
		for o2 := range p.O {
			if z := correct(st.e, p.O, pred, o2, next); z > 0 {
				v += z * t.value(h+1, o2, p.codes.next(o, a, o2), next, sig+q)
			}
		}
		best = max(best, v)
	}
	return best
}
