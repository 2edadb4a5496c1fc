package policy

import (
	"context"
	"math"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
)

// rec is one node of a policy subtree, stored in preorder (children in
// observation order); size counts the node and its descendants.
type rec struct {
	obs, act int32
	size     int32
	cond     float64 // P(o_h | parent history, parent's action)
	vr, vb   float64 // reward-to-go and bonus given the node
}

// val is what a subtree search returns.
type val struct {
	r, b  float64 // E[reward-to-go], E[b̂]
	g     float64 // max over policies of Σ_pruned P·(hi−lo)/2 below
	gm    float64 // the same for the chosen policy
	pmass float64 // probability of reaching a pruned node, chosen policy
}

type task struct {
	h, o            int
	cond, sum, path float64
	bel             []float64
}

type taskResult struct {
	v     val
	recs  []rec
	nodes int64
}

// planner is the state of one search worker: per-depth buffers, so the
// search allocates nothing per node.
type planner struct {
	m            *estimate.Model
	bonus        *pessimism.Bonus
	fz           *pessimism.Featurizer
	H, S, O, A   int
	oneStep      bool // one-step tests: the feature is the observation distribution
	shift, scale float64
	endObs       int
	normal, end  []int // actions allowed after an ordinary / the end observation
	allowed      [][]int
	lo, hi       []float64 // rescaled reward-to-go bounds from step h (index 1..H+1)
	eps          float64

	bel, pred, probs, feat [][]float64 // index by depth 1..H
	scratch                []float64

	arena []rec
	nodes int64
	stop  bool
	ctx   context.Context

	frontier int
	collect  bool
	tasks    []task
	results  []taskResult
	next     int
}

func newPlanner(m *estimate.Model, bonus *pessimism.Bonus) *planner {
	H, S, O, A := m.Horizon, m.States, m.NumObs, m.NumActions
	p := &planner{m: m, bonus: bonus, fz: pessimism.NewFeaturizer(m), H: H, S: S, O: O, A: A,
		oneStep: m.TestLength <= 1, endObs: -1, scratch: make([]float64, bonus.ScratchLen())}
	p.shift, p.scale = m.RewardScale()
	endAct := -1
	for o, s := range m.ObsVocab {
		if s == ingest.EndSymbol {
			p.endObs = o
		}
	}
	for a, s := range m.ActVocab {
		if s == ingest.EndSymbol {
			endAct = a
		}
	}
	for a := 0; a < A; a++ {
		if a != endAct {
			p.normal = append(p.normal, a)
		}
	}
	p.end = p.normal
	if endAct >= 0 {
		p.end = []int{endAct}
	}
	p.allowed = make([][]int, O)
	for o := range p.allowed {
		p.allowed[o] = p.normal
		if o == p.endObs {
			p.allowed[o] = p.end
		}
	}
	dmax := 0
	for _, d := range bonus.Dims {
		dmax = max(dmax, d)
	}
	p.bel = make([][]float64, H+2)
	p.pred = make([][]float64, H+2)
	p.probs = make([][]float64, H+2)
	p.feat = make([][]float64, H+2)
	for h := range p.bel {
		p.bel[h] = make([]float64, S)
		p.pred[h] = make([]float64, S)
		p.probs[h] = make([]float64, O)
		p.feat[h] = make([]float64, dmax)
	}
	// Reward-to-go bounds: per step the least and largest expected reward
	// over states and actions.
	p.lo = make([]float64, H+2)
	p.hi = make([]float64, H+2)
	unit := make([]float64, S)
	for h := H; h >= 1; h-- {
		lo, hi := math.Inf(1), math.Inf(-1)
		for s := 0; s < S; s++ {
			clear(unit)
			unit[s] = 1
			for a := 0; a < A; a++ {
				r := (m.ExpectedReward(h, unit, a) - p.shift) * p.scale
				lo, hi = math.Min(lo, r), math.Max(hi, r)
			}
		}
		p.lo[h], p.hi[h] = p.lo[h+1]+lo, p.hi[h+1]+hi
	}
	return p
}

// root searches the step-1 nodes; o_1 is never pruned.
func (p *planner) root(ctx context.Context) val {
	p.ctx = ctx
	p.next = 0
	m := p.m
	first := p.probs[0]
	m.FirstObsProbs(first)
	var tot val
	for o, po := range first[:p.O] {
		if po == 0 {
			continue
		}
		m.Prior(p.bel[1])
		m.ObserveFirst(p.bel[1], o)
		v := p.solve(1, o, po, p.bonus.Root, po)
		tot.add(po, v)
	}
	return tot
}

func (t *val) add(p float64, v val) {
	t.r += p * v.r
	t.b += p * v.b
	t.g += p * v.g
	t.gm += p * v.gm
	t.pmass += p * v.pmass
}

func (p *planner) runTask(ctx context.Context, t *task) taskResult {
	p.ctx = ctx
	p.arena = p.arena[:0]
	p.nodes = 0
	copy(p.bel[t.h], t.bel)
	v := p.solve(t.h, t.o, t.cond, t.sum, t.path)
	return taskResult{v: v, recs: append([]rec(nil), p.arena...), nodes: p.nodes}
}

// solve searches the node (τ_{h−1}, o_h) whose belief over s_h is in
// p.bel[h], appends its policy subtree to the arena and returns its values.
func (p *planner) solve(h, o int, cond, sum, path float64) val {
	if p.frontier == h {
		if p.collect {
			p.tasks = append(p.tasks, task{h: h, o: o, cond: cond, sum: sum, path: path, bel: append([]float64(nil), p.bel[h]...)})
			return val{}
		}
		r := &p.results[p.next]
		p.next++
		p.arena = append(p.arena, r.recs...)
		return r.v
	}
	p.nodes++
	if p.nodes&0xffff == 0 && p.ctx.Err() != nil {
		p.stop = true
	}
	if p.stop {
		return val{}
	}
	start := len(p.arena)
	p.arena = append(p.arena, rec{obs: int32(o), cond: cond})
	m, b := p.m, p.bel[h]
	acts := p.allowed[o]
	if h == p.H {
		bestA, bestR := -1, math.Inf(-1)
		for _, a := range acts {
			r := (m.ExpectedReward(h, b, a) - p.shift) * p.scale
			if r > bestR {
				bestA, bestR = a, r
			}
		}
		bon := p.bonus.Value(sum)
		p.arena[start] = rec{obs: int32(o), act: int32(bestA), size: 1, cond: cond, vr: bestR, vb: bon}
		return val{r: bestR, b: bon}
	}
	pred, probs, next := p.pred[h], p.probs[h], p.bel[h+1]
	best := math.Inf(-1)
	var bestV val
	bestA := -1
	maxG := 0.0
	for _, a := range acts {
		r := (m.ExpectedReward(h, b, a) - p.shift) * p.scale
		m.Predict(h, b, a, pred)
		m.ObsProbs(h, pred, a, probs)
		var q float64
		if p.oneStep {
			q = p.bonus.StepNorm2Scratch(h, probs, p.scratch)
		} else {
			f := p.feat[h][:p.bonus.Dims[h]]
			p.fz.Feature(h, pred, a, f)
			q = p.bonus.StepNorm2Scratch(h, f, p.scratch)
		}
		s2 := sum + q
		leaf := h+1 == p.H && p.frontier != p.H
		leafBonus := 0.0
		if leaf {
			leafBonus = p.bonus.Value(s2)
		}
		sub := len(p.arena)
		var v val
		for o2 := 0; o2 < p.O; o2++ {
			po := probs[o2]
			if po == 0 {
				continue
			}
			if p.eps > 0 && path*po < p.eps {
				// Pruned: midpoint of the continuation's range.
				lb := p.bonus.Value(s2)
				w := (p.hi[h+1] - p.lo[h+1] + 1 - lb) / 2
				v.r += po * (p.hi[h+1] + p.lo[h+1]) / 2
				v.b += po * (1 + lb) / 2
				v.g += po * w
				v.gm += po * w
				v.pmass += po
				continue
			}
			m.Correct(h, pred, a, o2, next)
			if leaf {
				// Step H inline: the bonus is the same for every leaf of
				// this action, only the last reward is chosen.
				p.nodes++
				bestA, bestR := -1, math.Inf(-1)
				for _, a2 := range p.allowed[o2] {
					if r := (m.ExpectedReward(p.H, next, a2) - p.shift) * p.scale; r > bestR {
						bestA, bestR = a2, r
					}
				}
				p.arena = append(p.arena, rec{obs: int32(o2), act: int32(bestA), size: 1, cond: po, vr: bestR, vb: leafBonus})
				v.r += po * bestR
				v.b += po * leafBonus
				continue
			}
			v.add(po, p.solve(h+1, o2, po, s2, path*po))
		}
		v.r += r
		maxG = math.Max(maxG, v.g)
		if val := v.r - v.b; val > best {
			best, bestV, bestA = val, v, a
			if sub != start+1 {
				n := copy(p.arena[start+1:], p.arena[sub:])
				p.arena = p.arena[:start+1+n]
			}
		} else {
			p.arena = p.arena[:sub]
		}
	}
	bestV.g = maxG
	p.arena[start] = rec{obs: int32(o), act: int32(bestA), size: int32(len(p.arena) - start), cond: cond, vr: bestV.r, vb: bestV.b}
	return bestV
}

// toPolicy turns the preorder arena of the step-1 subtrees into a Policy
// in breadth-first order (parents before children, children in
// observation order).
func (p *planner) toPolicy() *Policy {
	recs := p.arena
	type item struct {
		i      int
		parent int64
		reach  float64
	}
	pol := &Policy{Horizon: p.H, Nodes: make([]Node, 0, len(recs))}
	var queue []item
	for i := 0; i < len(recs); i += int(recs[i].size) {
		queue = append(queue, item{i, -1, 1})
	}
	weights := make([]float64, p.A)
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		r := recs[it.i]
		id := int64(len(pol.Nodes))
		reach := it.reach * r.cond
		// Fallback: the reach-weighted majority action of the children.
		clear(weights)
		fb, any := int(r.act), false
		for c := it.i + 1; c < it.i+int(r.size); c += int(recs[c].size) {
			weights[recs[c].act] += recs[c].cond
			any = true
			queue = append(queue, item{c, id, reach})
		}
		if any {
			best := -1.0
			for a, w := range weights {
				if w > best {
					best, fb = w, a
				}
			}
		}
		pol.Nodes = append(pol.Nodes, Node{
			ID: id, Parent: it.parent, Step: int32(p.depthOf(it.parent, pol)),
			Obs: p.m.ObsVocab[r.obs], Action: p.m.ActVocab[r.act], Fallback: p.m.ActVocab[fb],
			ReachProb: reach, ValueReward: r.vr, ValueBonus: r.vb, ValueLCB: r.vr - r.vb,
		})
	}
	return pol
}

func (p *planner) depthOf(parent int64, pol *Policy) int {
	if parent < 0 {
		return 1
	}
	return int(pol.Nodes[parent].Step) + 1
}
