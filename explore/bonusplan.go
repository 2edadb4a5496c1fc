package explore

import (
	"context"
	"fmt"
	"math"

	"github.com/psrlcb/psrlcb/errkind"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
)

// Sentinel errors of the explore package.
var (
	// ErrOptions is returned for option values out of range.
	ErrOptions = errkind.New(errkind.Options, "explore: invalid options")
	// ErrData is returned for logs that cannot drive a round (missing or
	// inconsistent round / explore_step tags, empty input).
	ErrData = errkind.New(errkind.Data, "explore: invalid data")
	// ErrModel is returned when a model and a bonus do not fit together or
	// the history tree is too large for the bonus planner.
	ErrModel = errkind.New(errkind.Data, "explore: invalid model")
)

// DefaultPlanBudget bounds the history tree PlanBonus searches, in nodes
// (decision points (τ_{h−1}, o_h)). The search keeps every node of the tree
// in memory (about 100 bytes each), so 5·10⁶ nodes stay under a gigabyte.
const DefaultPlanBudget = 5_000_000

// bnode is a node of the bonus search tree.
type bnode struct {
	obs, act int
	cond     float64 // P_θ̂(o_h | parent history, parent's action)
	vb, vr   float64 // E[b̂ | node], E[rescaled reward-to-go | node]
	children []*bnode
}

// PlanBonus computes π^k = argmax_π V_{θ̂,b̂}^π = argmax_π E_{θ̂,π}[b̂(τ_H)]
// over deterministic history-dependent policies (Huang, Liang, Yang (ICLR 2024, arXiv:2307.00405),
// Algorithm 1, line 9), exactly, by dynamic programming over the history
// tree: the bonus is not additive over steps, so each branch carries the
// belief and the running Σ_h ‖ψ̄̂(τ_h)‖²_{U_h⁻¹}, and min{α·sqrt(Σ), 1} is
// charged at the leaves. It returns the policy and its value
// V_{θ̂,b̂}^{π^k}, the termination statistic of line 10.
//
// b̂(τ_H) depends on a_1..a_{H−1} only (τ_{H−1} is the last prefix of the
// sum), so the action at step H is free: PlanBonus takes the one with the
// largest expected reward, ties to the lowest index. Ties elsewhere go to
// the lowest action index. The end symbol is handled as in policy.Plan.
// Node values: value_bonus is E[b̂ | node], value_reward the rescaled
// reward-to-go of the policy, value_lcb their difference.
// budget ≤ 0 means DefaultPlanBudget; a larger tree is an ErrModel error.
func PlanBonus(ctx context.Context, m *estimate.Model, b *pessimism.Bonus, budget int64) (*policy.Policy, float64, error) {
	if m == nil || b == nil {
		return nil, 0, fmt.Errorf("%w: no model or no bonus", ErrModel)
	}
	if b.Horizon != m.Horizon || len(b.Dims) != m.Horizon || m.Horizon <= 0 {
		return nil, 0, fmt.Errorf("%w: bonus for horizon %d, model horizon %d", ErrModel, b.Horizon, m.Horizon)
	}
	if len(m.ObsVocab) != m.NumObs || len(m.ActVocab) != m.NumActions {
		return nil, 0, fmt.Errorf("%w: vocabularies do not match the model sizes", ErrModel)
	}
	for h := 0; h < m.Horizon; h++ {
		if b.Dims[h] != m.FeatureDim(h) {
			return nil, 0, fmt.Errorf("%w: bonus feature dimension %d at step %d, model %d", ErrModel, b.Dims[h], h, m.FeatureDim(h))
		}
	}
	if budget <= 0 {
		budget = DefaultPlanBudget
	}
	size := 0.0
	for h := 1; h <= m.Horizon; h++ {
		size += math.Pow(float64(m.NumObs), float64(h)) * math.Pow(float64(m.NumActions), float64(h-1))
	}
	if size > float64(budget) {
		return nil, 0, fmt.Errorf("%w: history tree of %.3g nodes exceeds the bonus planner's budget %d", ErrModel, size, budget)
	}
	s := newSearch(m, b)
	if len(s.normal) == 0 {
		return nil, 0, fmt.Errorf("%w: no action other than %s", ErrModel, ingest.EndSymbol)
	}
	s.ctx = ctx
	first := make([]float64, m.NumObs)
	m.FirstObsProbs(first)
	var roots []*bnode
	total := 0.0
	for o, po := range first {
		if po == 0 {
			continue
		}
		bel := s.bel[1]
		m.Prior(bel)
		m.ObserveFirst(bel, o)
		n := s.solve(1, o, po, b.Root)
		if s.err != nil {
			return nil, 0, s.err
		}
		roots = append(roots, n)
		total += po * n.vb
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	return s.toPolicy(roots), total, nil
}

type search struct {
	m                      *estimate.Model
	b                      *pessimism.Bonus
	fz                     *estimate.Featurizer
	H                      int
	shift, scale           float64
	normal, end            []int
	endObs                 int
	bel, pred, probs, feat [][]float64
	scratch                []float64
	ctx                    context.Context
	count                  int
	err                    error
}

func newSearch(m *estimate.Model, b *pessimism.Bonus) *search {
	H := m.Horizon
	s := &search{m: m, b: b, fz: estimate.NewFeaturizer(m), H: H, endObs: -1, scratch: make([]float64, b.ScratchLen())}
	s.shift, s.scale = m.RewardScale()
	endAct := -1
	for o, v := range m.ObsVocab {
		if v == ingest.EndSymbol {
			s.endObs = o
		}
	}
	for a, v := range m.ActVocab {
		if v == ingest.EndSymbol {
			endAct = a
		}
	}
	for a := 0; a < m.NumActions; a++ {
		if a != endAct {
			s.normal = append(s.normal, a)
		}
	}
	s.end = s.normal
	if endAct >= 0 {
		s.end = []int{endAct}
	}
	dmax := 0
	for _, d := range b.Dims {
		dmax = max(dmax, d)
	}
	for range H + 2 {
		s.bel = append(s.bel, make([]float64, m.States))
		s.pred = append(s.pred, make([]float64, m.States))
		s.probs = append(s.probs, make([]float64, m.NumObs))
		s.feat = append(s.feat, make([]float64, dmax))
	}
	return s
}

func (s *search) allowed(o int) []int {
	if o == s.endObs {
		return s.end
	}
	return s.normal
}

// solve searches the node (τ_{h−1}, o_h) whose belief over s_h is s.bel[h];
// sum is Σ_{t<h} ‖ψ̄̂(τ_t)‖²_{U_t⁻¹}.
func (s *search) solve(h, o int, cond, sum float64) *bnode {
	s.count++
	if s.count&0xfff == 0 && s.ctx.Err() != nil {
		s.err = s.ctx.Err()
	}
	if s.err != nil {
		return &bnode{obs: o}
	}
	m, bel := s.m, s.bel[h]
	if h == s.H {
		bestA, bestR := -1, math.Inf(-1)
		for _, a := range s.allowed(o) {
			if r := (m.ExpectedReward(h, bel, a) - s.shift) * s.scale; r > bestR {
				bestA, bestR = a, r
			}
		}
		return &bnode{obs: o, act: bestA, cond: cond, vb: s.b.Value(sum), vr: bestR}
	}
	var best *bnode
	pred, probs, next := s.pred[h], s.probs[h], s.bel[h+1]
	for _, a := range s.allowed(o) {
		m.Predict(h, bel, a, pred)
		m.ObsProbs(h, pred, a, probs)
		f := s.feat[h][:s.b.Dims[h]]
		s.fz.Feature(h, pred, a, f)
		s2 := sum + s.b.StepNorm2Scratch(h, f, s.scratch)
		n := &bnode{obs: o, act: a, cond: cond, vr: (m.ExpectedReward(h, bel, a) - s.shift) * s.scale}
		for o2, po := range probs {
			if po == 0 {
				continue
			}
			// The recursion reuses the buffers of deeper levels only, so
			// pred and probs of this level stay valid.
			m.Correct(h, pred, a, o2, next)
			c := s.solve(h+1, o2, po, s2)
			n.children = append(n.children, c)
			n.vb += po * c.vb
			n.vr += po * c.vr
		}
		if best == nil || n.vb > best.vb {
			best = n
		}
	}
	return best
}

// toPolicy lays the chosen tree out breadth-first (parents before children,
// children in observation order), with the fallback rule of policy.Plan:
// the reach-weighted majority action of a node's children, or its own
// action when it has none.
func (s *search) toPolicy(roots []*bnode) *policy.Policy {
	type item struct {
		n      *bnode
		parent int64
		reach  float64
	}
	pol := &policy.Policy{Horizon: s.H}
	queue := make([]item, 0, len(roots))
	for _, r := range roots {
		queue = append(queue, item{r, -1, 1})
	}
	weights := make([]float64, s.m.NumActions)
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		id := int64(len(pol.Nodes))
		reach := it.reach * it.n.cond
		clear(weights)
		fb := it.n.act
		for _, c := range it.n.children {
			weights[c.act] += c.cond
			queue = append(queue, item{c, id, reach})
		}
		if len(it.n.children) > 0 {
			bw := -1.0
			for a, w := range weights {
				if w > bw {
					bw, fb = w, a
				}
			}
		}
		step := int32(1)
		if it.parent >= 0 {
			step = pol.Nodes[it.parent].Step + 1
		}
		pol.Nodes = append(pol.Nodes, policy.Node{
			ID: id, Parent: it.parent, Step: step,
			Obs: s.m.ObsVocab[it.n.obs], Action: s.m.ActVocab[it.n.act], Fallback: s.m.ActVocab[fb],
			ReachProb: reach, ValueReward: it.n.vr, ValueBonus: it.n.vb, ValueLCB: it.n.vr - it.n.vb,
		})
	}
	return pol
}
