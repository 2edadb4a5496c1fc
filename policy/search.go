package policy

import (
	"context"
	"math"
	"slices"
	"sync/atomic"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
)

// rec is one node of a policy subtree, stored in preorder (children in
// observation order); size counts the node and its descendants.
type rec struct {
	obs, act int32
	size     int32
	fb       int32   // fallback action chosen for the pruned children, −1 if none
	cond     float64 // P(o_h | parent history, parent's action)
	vr, vb   float64 // reward-to-go and bonus given the node
}

// val is what a subtree search returns.
type val struct {
	r, b  float64 // E[reward-to-go], E[b̂]
	g     float64 // max over policies of Σ_pruned P·(upper bound − stand-in) below
	gm    float64 // Σ_pruned P·(width of the stand-in bonus interval), chosen policy
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
	fz           *estimate.Featurizer
	H, S, O, A   int
	oneStep      bool // one-step tests: the feature is the observation distribution
	shift, scale float64
	endObs       int
	normal, end  []int // actions allowed after an ordinary / the end observation
	allowed      [][]int
	eps          float64
	emax         float64         // the largest emission probability of the model: P(o_{h+1}) ≤ emax for every belief
	bonusObj     bool            // maximise E[b̂] instead of E[R − b̂] (ObjectiveBonus)
	fbt          *fallbackTables // stand-in tables (approximate search only)
	acc          [][]float64     // per depth: per fallback action, the pruned children's sums
	cbel         []float64       // belief of a pruned child
	setU         [][]float64     // per depth: Σ po·belief of a node's pruned children (wide vocabularies)
	// oix, past wideObs observations (nil below, and with one-step
	// features, which need every observation's probability): the
	// observation index of each emission table [table][action], so a
	// node looks only at the children that may reach ε (obsIndex).
	oix  [][]*obsIndex
	scan [][]int32 // per depth: the observations looked at

	bel, pred, probs, feat [][]float64 // index by depth 1..H
	scratch                []float64

	arena []rec
	nodes int64
	stop  bool
	ctx   context.Context

	// counting (searchEpsilon)
	pruned bool
	total  *atomic.Int64
	limit  int64

	frontier int
	collect  bool
	tasks    []task
	results  []taskResult
	next     int
}

// endActions returns the end symbol's observation index (−1 if none) and
// the actions allowed after an ordinary and after the end observation:
// every action but the end action, and the end action alone (every
// ordinary action when the model has none).
func endActions(m *estimate.Model) (endObs int, normal, end []int) {
	endObs, endAct := lastIndex(m.ObsVocab, ingest.EndSymbol), lastIndex(m.ActVocab, ingest.EndSymbol)
	normal = allBut(m.NumActions, endAct)
	end = normal
	if endAct >= 0 {
		end = []int{endAct}
	}
	return endObs, normal, end
}

// allBut lists 0..n−1 but skip (nil when none is left).
func allBut(n, skip int) []int {
	var xs []int
	for i := 0; i < n; i++ {
		if i != skip {
			xs = append(xs, i)
		}
	}
	return xs
}

// lastIndex is the index of the last occurrence of sym in vocab, −1 if
// none.
func lastIndex(vocab []string, sym string) int {
	i := -1
	for j, s := range vocab {
		if s == sym {
			i = j
		}
	}
	return i
}

// newPlanner returns a planner that computes features with fz, its own.
func newPlanner(m *estimate.Model, bonus *pessimism.Bonus, fz *estimate.Featurizer) *planner {
	H, S, O, A := m.Horizon, m.States, m.NumObs, m.NumActions
	p := &planner{m: m, bonus: bonus, fz: fz, H: H, S: S, O: O, A: A,
		oneStep: m.TestLength <= 1 && (m.Horizon < 2 || m.FeatureIsTests(1)), endObs: -1, scratch: make([]float64, bonus.ScratchLen())}
	p.shift, p.scale = m.RewardScale()
	p.emax = maxEmission(m)
	p.endObs, p.normal, p.end = endActions(m)
	p.allowed = p.allowedAfter(O)
	p.allocDepths(slices.Max(append([]int{0}, bonus.Dims...)))
	return p
}

// allowedAfter lists, for each of the O observations, the actions
// allowed after it: p.end after the end observation, p.normal after any
// other.
func (p *planner) allowedAfter(O int) [][]int {
	allowed := make([][]int, O)
	for o := range allowed {
		allowed[o] = p.normal
		if o == p.endObs {
			allowed[o] = p.end
		}
	}
	return allowed
}

// allocDepths allocates the per-depth buffers (depths 0..H+1), with
// feature buffers of length dmax.
func (p *planner) allocDepths(dmax int) {
	H, S := p.H, p.S
	p.bel, p.pred = perDepth(H, S), perDepth(H, S)
	p.probs, p.feat = perDepth(H, p.O), perDepth(H, dmax)
	p.acc = perDepth(H, accLen*p.A)
	p.cbel = make([]float64, S)
	p.setU = perDepth(H, S)
	p.scan = make([][]int32, H+2)
}

// perDepth returns H+2 buffers of n values, one per depth 0..H+1.
func perDepth(H, n int) [][]float64 {
	x := make([][]float64, H+2)
	for h := range x {
		x[h] = make([]float64, n)
	}
	return x
}

// expand prepares the children of a node at step h after action a, with
// predicted state distribution pred and path probability path, and
// returns their number n (child(h, a, i, …) for i < n gives each) and
// rest: with an observation index, only the observations that may reach
// ε are children, and the others' unnormalised joint belief is left in
// p.cbel with its mass rest; without, every observation is a child, its
// probability in p.probs[h].
func (p *planner) expand(h, a int, pred []float64, path float64) (n int, rest float64) {
	ix := p.index(h, a)
	if ix == nil {
		p.m.ObsProbs(h, pred, a, p.probs[h])
		return p.O, 0
	}
	clear(p.cbel)
	p.scan[h], rest = ix.children(pred, p.eps/path, p.scan[h], p.cbel)
	return len(p.scan[h]), rest
}

// child returns the i-th child of the node expand prepared: its
// observation and probability.
func (p *planner) child(h, a, i int, pred []float64) (o int, po float64) {
	if p.index(h, a) == nil {
		return i, p.probs[h][i]
	}
	o = int(p.scan[h][i])
	return o, emitProb(p.m.EmitOf(p.m.Table(h), a), p.O, pred, o)
}

// index returns the observation index for step h and action a when the
// node's children are to be found through it: wide vocabularies, a
// positive ε.
func (p *planner) index(h, a int) *obsIndex {
	if p.oix == nil || p.eps <= 0 {
		return nil
	}
	return p.oix[p.m.Table(h)][a]
}

// maxEmission is max over tables, actions, states and observations of
// P(o | s, a): no observation after any belief is more likely, so a node
// whose path probability times it is below ε has every child pruned.
func maxEmission(m *estimate.Model) float64 {
	x := 0.0
	for t := range m.Emit {
		for a := 0; a < m.NumActions; a++ {
			for _, e := range m.EmitOf(t, a) {
				x = max(x, e)
			}
			if m.Compact {
				break // one table for every action
			}
		}
	}
	return x
}

// root searches the step-1 nodes; o_1 is never pruned.
func (p *planner) root(ctx context.Context) val {
	p.ctx = ctx
	p.next = 0
	first := p.probs[0]
	p.m.FirstObsProbs(first)
	var tot val
	for o, po := range first[:p.O] {
		if po == 0 {
			continue
		}
		tot.add(po, p.solveFirst(o, po))
	}
	return tot
}

// solveFirst searches the step-1 node of observation o (probability po).
func (p *planner) solveFirst(o int, po float64) val {
	p.m.Prior(p.bel[1])
	p.m.ObserveFirst(p.bel[1], o)
	return p.solve(1, o, po, p.bonus.Root, po)
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
		return p.solveFrontier(h, o, cond, sum, path)
	}
	if !p.countVisit() {
		return val{}
	}
	start := len(p.arena)
	p.arena = append(p.arena, rec{obs: int32(o), cond: cond})
	if h == p.H {
		return p.solveLast(start, h, o, cond, sum)
	}
	bestV, bestA, bestFb := p.bestAction(start, h, o, sum, path)
	p.arena[start] = rec{obs: int32(o), act: int32(bestA), size: int32(len(p.arena) - start), fb: bestFb, cond: cond, vr: bestV.r, vb: bestV.b}
	return bestV
}

// countVisit counts a node of the search (checking the context every
// 65536 nodes) and reports whether the search goes on.
func (p *planner) countVisit() bool {
	p.nodes++
	if p.nodes&0xffff == 0 && p.ctx.Err() != nil {
		p.stop = true
	}
	return !p.stop
}

// bestAction searches every allowed action of the node whose record is
// arena[start] and keeps the subtree of the best one (ties to the
// first): its values, with g the largest g of any action, the action and
// its fallback action.
func (p *planner) bestAction(start, h, o int, sum, path float64) (bestV val, bestA int, bestFb int32) {
	best := math.Inf(-1)
	bestA, bestFb = -1, -1
	maxG := 0.0
	for _, a := range p.allowed[o] {
		sub := len(p.arena)
		v, fb := p.solveAction(h, o, a, sum, path)
		maxG = math.Max(maxG, v.g)
		if x := p.objective(v); x > best {
			best, bestV, bestA, bestFb = x, v, a, fb
			p.keepSubtree(start+1, sub)
		} else {
			p.arena = p.arena[:sub]
		}
	}
	bestV.g = maxG
	return bestV, bestA, bestFb
}

// objective is the value the search maximises: E[R − b̂], or E[b̂]
// with ObjectiveBonus.
func (p *planner) objective(v val) float64 {
	x := v.r - v.b
	if p.bonusObj {
		x = v.b
	}
	return x
}

// keepSubtree moves the subtree at arena[sub:] to arena[dst:], dropping
// what was there.
func (p *planner) keepSubtree(dst, sub int) {
	if sub != dst {
		n := copy(p.arena[dst:], p.arena[sub:])
		p.arena = p.arena[:dst+n]
	}
}

// solveFrontier is solve at the frontier depth: collecting, it records the
// node as a task; otherwise it takes the task's result in search order.
func (p *planner) solveFrontier(h, o int, cond, sum, path float64) val {
	if p.collect {
		p.tasks = append(p.tasks, task{h: h, o: o, cond: cond, sum: sum, path: path, bel: append([]float64(nil), p.bel[h]...)})
		return val{}
	}
	r := &p.results[p.next]
	p.next++
	p.arena = append(p.arena, r.recs...)
	return r.v
}

// solveLast is solve at step H: the best last reward, and the bonus of
// the running sum.
func (p *planner) solveLast(start, h, o int, cond, sum float64) val {
	b := p.bel[h]
	bestA, bestR := -1, math.Inf(-1)
	for _, a := range p.allowed[o] {
		r := (p.m.ExpectedReward(h, b, a) - p.shift) * p.scale
		if r > bestR {
			bestA, bestR = a, r
		}
	}
	bon := p.bonus.Value(sum)
	p.arena[start] = rec{obs: int32(o), act: int32(bestA), size: 1, fb: -1, cond: cond, vr: bestR, vb: bon}
	return val{r: bestR, b: bon}
}

// solveAction is the value of action a at the node (τ_{h−1}, o_h), h < H,
// with its subtree appended to the arena, and its fallback action (−1
// when no child was pruned).
func (p *planner) solveAction(h, o, a int, sum, path float64) (val, int32) {
	m, b := p.m, p.bel[h]
	// On wide vocabularies the pruned children of an expanded node are
	// priced as one set too (O(S) each instead of a stand-in each).
	s := actionSearch{h: h, a: a, acts: p.allowed[o], pred: p.pred[h], acc: p.acc[h],
		setU: p.setU[h], // per depth: the recursion below has its own
		path: path, wide: p.O > wideObs}
	r := (m.ExpectedReward(h, b, a) - p.shift) * p.scale
	m.Predict(h, b, a, s.pred)
	n := p.startAction(&s, sum)
	p.searchChildren(&s, n)
	fb := p.actionFallback(&s)
	s.v.r += r
	return s.v, fb
}

// searchChildren adds the action's first n children to its value and
// prices a wide node's pruned set.
func (p *planner) searchChildren(s *actionSearch, n int) {
	for i := 0; i < n; i++ {
		p.searchChild(s, i)
	}
	if s.setMass > 0 {
		p.priceSet(s)
	}
}

// actionFallback is the action's fallback action: the best stand-in
// when a child was pruned, −1 otherwise.
func (p *planner) actionFallback(s *actionSearch) int32 {
	fb := int32(-1)
	if s.pruned {
		fb = int32(p.bestFallback(s.acts, s.acc, &s.v))
	}
	return fb
}

// actionSearch is the search of one action a at a node (τ_{h−1}, o_h):
// the node's per-depth buffers, its bonus sums and the running sums of
// its pruned children.
type actionSearch struct {
	h, a      int
	acts      []int     // the node's allowed actions: the fallback candidates
	pred      []float64 // the predicted belief over s_{h+1}
	acc       []float64 // per fallback candidate, the pruned children's sums
	setU      []float64 // Σ po·belief of the pruned children priced as one set
	setMass   float64   // Σ po of those children
	path      float64   // the node's path probability
	s2        float64   // the bonus sum after the action
	leafBonus float64   // the bonus of every child when they are step-H leaves
	wide      bool      // pruned children are priced as one set (wide vocabularies)
	leaf      bool      // the children are step-H leaves
	pruned    bool      // some child was pruned
	v         val
}

// startAction prepares the children of the action's node, sets the bonus
// sum after the action (and the leaves' bonus), and starts the pruned
// sums with the children priced before the enumeration; it returns the
// number of children to enumerate.
func (p *planner) startAction(s *actionSearch, sum float64) int {
	// Every child of this node has path probability below ε: the whole
	// level below is priced at once by the fallback stand-in at the
	// predicted belief (standInAt), without enumerating |O| children. On
	// wide vocabularies this keeps a node's cost O(|A|²·S²) instead of
	// O(|A|·|O|·(S + |A|·S²)).
	allPruned := p.eps > 0 && s.path*p.emax < p.eps && p.O > wideObs
	n, rest := p.expandAction(s, allPruned)
	s.s2 = sum + p.stepNorm(s.h, s.a, s.pred, p.probs[s.h])
	s.leaf = s.h+1 == p.H && p.frontier != p.H
	if s.leaf {
		s.leafBonus = p.bonus.Value(s.s2)
	}
	p.seedPruned(s, allPruned, rest)
	return n
}

// seedPruned starts the pruned sums with the children priced before the
// enumeration: the whole level below when every child is pruned, and
// the children the index skipped (mass rest).
func (p *planner) seedPruned(s *actionSearch, allPruned bool, rest float64) {
	if allPruned {
		s.pruned = true
		clear(s.acc)
		p.standInAt(s.h, s.acts, s.pred, 1, s.s2, s.acc)
	}
	if rest > 0 {
		// The children the index skipped: part of the pruned set.
		s.pruned = true
		clear(s.acc)
		copy(s.setU, p.cbel)
		s.setMass = rest
	}
}

// expandAction is expand for the action's node, or, when every child is
// pruned, no children (with the observation probabilities the one-step
// features need).
func (p *planner) expandAction(s *actionSearch, allPruned bool) (n int, rest float64) {
	if !allPruned {
		return p.expand(s.h, s.a, s.pred, s.path)
	}
	if p.oneStep {
		p.m.ObsProbs(s.h, s.pred, s.a, p.probs[s.h])
	}
	return 0, 0
}

// searchChild adds the i-th child of the action's node to its value: a
// pruned child to the pruned sums, a step-H leaf with its best last
// action, any other through the search below it.
func (p *planner) searchChild(s *actionSearch, i int) {
	h, a := s.h, s.a
	o2, po := p.child(h, a, i, s.pred)
	if po == 0 {
		return
	}
	if p.eps > 0 && s.path*po < p.eps {
		p.pruneChild(s, o2, po)
		return
	}
	p.searchBelow(s, o2, po)
}

// searchBelow adds the child o2 of probability po, reached, to the
// action's value: a step-H leaf with its best last action, any other
// through the search below it.
func (p *planner) searchBelow(s *actionSearch, o2 int, po float64) {
	h, a := s.h, s.a
	next := p.bel[h+1]
	p.m.Correct(h, s.pred, a, o2, next)
	if s.leaf {
		p.leafChild(o2, po, next, s.leafBonus, &s.v)
		return
	}
	s.v.add(po, p.solve(h+1, o2, po, s.s2, s.path*po))
}

// pruneChild adds the pruned child o2 of probability po to the pruned
// sums: on wide vocabularies to the set priced at once after the
// enumeration (priceSet), otherwise through its own stand-in.
func (p *planner) pruneChild(s *actionSearch, o2 int, po float64) {
	if !s.pruned {
		s.startPruned()
	}
	if s.wide {
		// Priced with the others at once below.
		p.addToSet(s, o2, po)
		return
	}
	p.standIn(s.h, s.a, s.acts, s.pred, o2, po, s.s2, s.acc)
}

// startPruned marks the action's node as having a pruned child and
// clears the pruned sums.
func (s *actionSearch) startPruned() {
	s.pruned = true
	clear(s.acc)
	clear(s.setU)
	s.setMass = 0
}

// addToSet adds the pruned child o2 of probability po to the set of a
// wide node's pruned children: its belief mass and its probability.
func (p *planner) addToSet(s *actionSearch, o2 int, po float64) {
	p.m.Correct(s.h, s.pred, s.a, o2, p.cbel)
	for j, x := range p.cbel {
		s.setU[j] += po * x
	}
	s.setMass += po
}

// priceSet prices the pruned children of a wide node as one set: its
// mean belief Σ po·b_o / Σ po and its mass (standInAt: pricing a set at
// once keeps the stated gap a bound).
func (p *planner) priceSet(s *actionSearch) {
	for j := range s.setU {
		s.setU[j] /= s.setMass
	}
	p.standInAt(s.h, s.acts, s.setU, s.setMass, s.s2, s.acc)
}

// stepNorm is the bonus term ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} of the action a taken
// at the node whose prediction is pred (probs: its observation
// probabilities, for the one-step features).
func (p *planner) stepNorm(h, a int, pred, probs []float64) float64 {
	if p.oneStep {
		return p.bonus.StepNorm2Scratch(h, probs, p.scratch)
	}
	f := p.feat[h][:p.bonus.Dims[h]]
	p.fz.Feature(h, pred, a, f)
	return p.bonus.StepNorm2Scratch(h, f, p.scratch)
}

// leafChild appends the step-H node (τ_{H−1}, o_H = o2) of probability
// po and belief next, which takes the allowed action of the largest
// expected reward (the bonus, leafBonus, is the same for every leaf of
// the action above), and adds its value to v.
func (p *planner) leafChild(o2 int, po float64, next []float64, leafBonus float64, v *val) {
	p.nodes++
	bestA, bestR := -1, math.Inf(-1)
	for _, a2 := range p.allowed[o2] {
		if r := (p.m.ExpectedReward(p.H, next, a2) - p.shift) * p.scale; r > bestR {
			bestA, bestR = a2, r
		}
	}
	p.arena = append(p.arena, rec{obs: int32(o2), act: int32(bestA), size: 1, fb: -1, cond: po, vr: bestR, vb: leafBonus})
	v.r += po * bestR
	v.b += po * leafBonus
}

// toPolicy turns the preorder arena of the step-1 subtrees into a Policy
// in breadth-first order (parents before children, children in
// observation order).
func (p *planner) toPolicy() *Policy {
	pol := &Policy{Horizon: p.H, Nodes: make([]Node, 0, len(p.arena))}
	queue := p.rootItems()
	weights := make([]float64, p.A)
	for len(queue) > 0 {
		it := queue[0]
		queue = p.addNode(pol, it, queue[1:], weights)
	}
	return pol
}

// rootItems returns the queue items of the step-1 subtrees' roots.
func (p *planner) rootItems() []policyItem {
	var queue []policyItem
	for i := 0; i < len(p.arena); i += int(p.arena[i].size) {
		queue = append(queue, policyItem{i, -1, 1})
	}
	return queue
}

// policyItem is an arena record waiting in toPolicy's queue: its index,
// its parent's node ID and its parent's reach probability.
type policyItem struct {
	i      int
	parent int64
	reach  float64
}

// addNode appends the node of it to pol and returns queue with the
// node's children appended; weights is scratch of length A.
func (p *planner) addNode(pol *Policy, it policyItem, queue []policyItem, weights []float64) []policyItem {
	r := p.arena[it.i]
	id := int64(len(pol.Nodes))
	reach := it.reach * r.cond
	// Fallback: the reach-weighted majority action of the children.
	queue, any := p.queueChildren(it.i, id, reach, weights, queue)
	fb := nodeFallback(r, any, weights)
	pol.Nodes = append(pol.Nodes, Node{
		ID: id, Parent: it.parent, Step: int32(p.depthOf(it.parent, pol)),
		Obs: p.m.ObsVocab[r.obs], Action: p.m.ActVocab[r.act], Fallback: p.m.ActVocab[fb],
		ReachProb: reach, ValueReward: r.vr, ValueBonus: r.vb, ValueLCB: r.vr - r.vb,
	})
	return queue
}

// nodeFallback is the fallback action of the node of record r: the
// record's when a child was pruned, else the reach-weighted majority
// action of its children (weights; any: it has some), else its own.
func nodeFallback(r rec, any bool, weights []float64) int {
	if r.fb >= 0 {
		return int(r.fb)
	}
	if any {
		return argmaxAbove(weights, -1, 0)
	}
	return int(r.act)
}

// queueChildren appends the children of record i (node id, reach
// probability reach) to queue and sets weights to their reach-weighted
// actions; it reports whether there was any child.
func (p *planner) queueChildren(i int, id int64, reach float64, weights []float64, queue []policyItem) ([]policyItem, bool) {
	clear(weights)
	any := false
	for c := i + 1; c < i+int(p.arena[i].size); c += int(p.arena[c].size) {
		weights[p.arena[c].act] += p.arena[c].cond
		any = true
		queue = append(queue, policyItem{c, id, reach})
	}
	return queue, any
}

// argmaxAbove is the index of the largest weight above floor (ties to
// the first), none when none is above it.
func argmaxAbove(weights []float64, floor float64, none int) int {
	best, i := floor, none
	for j, w := range weights {
		if w > best {
			best, i = w, j
		}
	}
	return i
}

func (p *planner) depthOf(parent int64, pol *Policy) int {
	if parent < 0 {
		return 1
	}
	return int(pol.Nodes[parent].Step) + 1
}

// accLen is the number of sums standIn keeps per fallback candidate:
// expected reward, estimated bonus, gap term, bonus interval width and the
// pruned probability mass.
const accLen = 5

// fallbackTables hold, per step t and action f, the linear and quadratic
// forms in the belief over s_t that give the stand-in of a pruned node:
// the continuation "play f at every step t..H", which is what the returned
// policy does there (Cursor's fallback rule). Index [t*A+f], t = 1..H+1.
type fallbackTables struct {
	A, S int
	// w: expected rescaled reward-to-go Σ_{t'≥t} (r_{t'} − shift)·scale
	// under f, exact: w·b.
	w [][]float64
	// k (S×S, row-major) and u: the future bonus terms
	// Σ_{t'=t}^{H−1} ‖ψ̄̂(τ_{t'})‖²_{U_{t'}⁻¹}; the feature is linear in the
	// belief b_{t'} (ψ̄̂ = F b_{t'}), so each term is b_{t'}ᵀQb_{t'} with
	// Q = FᵀU⁻¹F, and E[b_{t'}] is the open-loop prediction P·b (the
	// expected posterior is the prior prediction). bᵀkb = Σ E[b_{t'}]ᵀQ
	// E[b_{t'}] ≤ E[Σ] (Jensen, Q ⪰ 0) and u·b = Σ diag(Q)·E[b_{t'}] ≥
	// E[Σ] (a convex function on the simplex lies below its chord
	// through the vertices).
	k, u [][]float64
	// lmax: Σ_{t'} max_s Q_ss, a bound on the future terms on every path.
	lmax []float64
	// vmax[t]: the fully observed MDP's optimal reward-to-go from each
	// state, an upper bound of any policy's reward-to-go: vmax[t]·b.
	vmax [][]float64
}

// newFallbackTables builds the stand-in tables of m under bonus, from
// step H down to step 1.
func newFallbackTables(m *estimate.Model, bonus *pessimism.Bonus) (*fallbackTables, error) {
	H, S, A := m.Horizon, m.States, m.NumActions
	rw := newStateRewards(m)
	fz, err := estimate.NewFeaturizer(m)
	if err != nil {
		return nil, err
	}
	ft := allocFallbackTables(H, S, A)
	sc := newFallbackScratch(m, fz, bonus, rw)
	for t := H; t >= 1; t-- {
		ft.buildStep(t, sc)
	}
	return ft, nil
}

// newFallbackScratch returns the scratch of the fallback tables' steps
// of m: its buffers of S and S×S.
func newFallbackScratch(m *estimate.Model, fz *estimate.Featurizer, bonus *pessimism.Bonus, rw *stateRewards) *fallbackScratch {
	S := m.States
	return &fallbackScratch{m: m, fz: fz, bonus: bonus, rw: rw, unit: make([]float64, S), T: make([]float64, S*S),
		Q: make([]float64, S*S), KT: make([]float64, S*S), cols: make([][]float64, S)}
}

// buildStep fills the tables of step t for every action: at step H the
// rewards (vmax their maximum), before it by backup from step t+1.
func (ft *fallbackTables) buildStep(t int, sc *fallbackScratch) {
	vm := ft.vmax[t]
	fillNegInf(vm)
	for f := 0; f < ft.A; f++ {
		w := ft.w[t*ft.A+f]
		sc.rw.of(t, f, w)
		if t == sc.m.Horizon {
			maxInto(vm, w)
			continue
		}
		sc.stepQ(t, f)
		ft.backup(t, f, sc)
	}
}

// fillNegInf sets every entry of x to −∞.
func fillNegInf(x []float64) {
	for s := range x {
		x[s] = math.Inf(-1)
	}
}

// maxInto sets x to the entrywise maximum of x and y.
func maxInto(x, y []float64) {
	for s := range x {
		x[s] = math.Max(x[s], y[s])
	}
}

// allocFallbackTables returns zeroed tables for steps 0..H+1, S states
// and A actions.
func allocFallbackTables(H, S, A int) *fallbackTables {
	ft := &fallbackTables{A: A, S: S,
		w: make([][]float64, (H+2)*A), k: make([][]float64, (H+2)*A), u: make([][]float64, (H+2)*A),
		lmax: make([]float64, (H+2)*A), vmax: make([][]float64, H+2)}
	for i := range ft.w {
		ft.w[i] = make([]float64, S)
		ft.u[i] = make([]float64, S)
		ft.k[i] = make([]float64, S*S)
	}
	for t := range ft.vmax {
		ft.vmax[t] = make([]float64, S)
	}
	return ft
}

// fallbackScratch holds the model and one (step, action)'s tables while
// newFallbackTables builds them.
type fallbackScratch struct {
	m     *estimate.Model
	fz    *estimate.Featurizer
	bonus *pessimism.Bonus
	rw    *stateRewards
	unit  []float64
	T     []float64 // T[s2*S+s] = T_t(s2|s,f)
	Q     []float64 // FᵀU⁻¹F, S×S
	KT    []float64
	cols  [][]float64
}

// stepQ sets sc.T to the transitions of step t under action f and sc.Q
// to FᵀU_t⁻¹F, F the features of the states' predictions (by
// polarisation of the bonus norms, quadForm).
func (sc *fallbackScratch) stepQ(t, f int) {
	S := sc.m.States
	pred := make([]float64, S)
	for s := 0; s < S; s++ {
		sc.column(t, f, s, pred)
	}
	quadForm(sc.bonus, t, sc.cols, sc.Q)
}

// column sets column s of T to the prediction from state s after action
// f at step t (pred: scratch of S) and cols[s] to its feature.
func (sc *fallbackScratch) column(t, f, s int, pred []float64) {
	S, T := sc.m.States, sc.T
	clear(sc.unit)
	sc.unit[s] = 1
	sc.m.Predict(t, sc.unit, f, pred)
	for s2 := 0; s2 < S; s2++ {
		T[s2*S+s] = pred[s2]
	}
	sc.cols[s] = make([]float64, sc.bonus.Dims[t])
	sc.fz.Feature(t, pred, f, sc.cols[s])
}

// backup runs the recursions of step t < H and action f from step t+1:
// w_t = r + Tᵀw_{t+1}, u_t = diag Q + Tᵀu_{t+1}, k_t = Q + Tᵀk_{t+1}T,
// vmax_t = max_f (r + Tᵀvmax_{t+1}), with sc from stepQ (w_t holds r).
func (ft *fallbackTables) backup(t, f int, sc *fallbackScratch) {
	i, n := t*ft.A+f, (t+1)*ft.A+f
	matMul(ft.k[n], sc.T, sc.KT, ft.S) // KT = k_{t+1}·T
	dmax := 0.0
	for s := 0; s < ft.S; s++ {
		dmax = math.Max(dmax, ft.backupState(t, f, s, sc))
	}
	ft.lmax[i] = dmax + ft.lmax[n]
}

// backupState runs backup's recursions at state s: w_t, u_t and vmax_t
// at s and row s of k_t. It returns Q_ss.
func (ft *fallbackTables) backupState(t, f, s int, sc *fallbackScratch) float64 {
	S, T, Q := ft.S, sc.T, sc.Q
	i, n := t*ft.A+f, (t+1)*ft.A+f
	w, vm := ft.w[i], ft.vmax[t]
	wv, uv, mv := w[s], Q[s*S+s], w[s]
	for s2 := 0; s2 < S; s2++ {
		tp := T[s2*S+s]
		wv += tp * ft.w[n][s2]
		uv += tp * ft.u[n][s2]
		mv += tp * ft.vmax[t+1][s2]
	}
	w[s], ft.u[i][s] = wv, uv
	vm[s] = math.Max(vm[s], mv)
	sc.kRow(s, ft.k[i])
	return Q[s*S+s]
}

// kRow sets row s of k to the row of Q + TᵀKT.
func (sc *fallbackScratch) kRow(s int, k []float64) {
	S, T, Q, KT := len(sc.unit), sc.T, sc.Q, sc.KT
	for s3 := 0; s3 < S; s3++ {
		x := Q[s*S+s3]
		for s2 := 0; s2 < S; s2++ {
			x += T[s2*S+s] * KT[s2*S+s3]
		}
		k[s*S+s3] = x
	}
}

// standIn adds the stand-in of the pruned node (τ_h, o_{h+1} = o2) of
// probability po, reached by action a from a node whose allowed actions
// are acts, to the sums acc of every fallback candidate f ∈ acts: the
// continuation "play f from step h+1 to H". Its reward-to-go is exact
// (w·b). Its bonus E[min{α√Σ, 1}] with Σ = s2 + future terms is not
// linear in the belief; the planner uses the open-loop estimate
// min{α√(s2 + bᵀkb), 1} (the future terms of the mean belief
// propagated without branching), and the exact expected bonus lies in
// [bLo, bHi]: bHi = min{α√(s2 + u·b), 1} (Jensen: the bonus is concave in
// Σ, and u·b ≥ E[Σ] − s2), bLo = the chord of the concave bonus over the
// pathwise range [s2, s2 + lmax] evaluated at s2 + bᵀkb ≤ E[Σ].
func (p *planner) standIn(h, a int, acts []int, pred []float64, o2 int, po, s2 float64, acc []float64) {
	cb := p.cbel
	p.m.Correct(h, pred, a, o2, cb)
	p.standInAt(h, acts, cb, po, s2, acc)
}

// standInAt is standIn for a child (or a set of children) of mass po
// whose belief over s_{h+1} is cb (for a set: the po-weighted mean of the
// children's beliefs).
//
// Pricing a set of children at once is sound: the reward and vmax terms
// are linear in the belief, so they are exact; the bonus interval widens,
// never narrows, since the bonus bound bHi is concave in the belief
// (Value is concave) and the quadratic lbS behind bLo is convex, so by
// Jensen's inequality the set's [bLo, bHi] contains the mass-weighted
// mean of its children's intervals, and the stated gap stays a bound.
func (p *planner) standInAt(h int, acts []int, cb []float64, po, s2 float64, acc []float64) {
	ft, S, t := p.fbt, p.S, h+1
	lo0 := p.bonus.Value(s2)
	hiNode := dot(ft.vmax[t], cb) - lo0
	for i, f := range acts {
		j := t*ft.A + f
		r := dot(ft.w[j], cb)
		bEst, width := lo0, 0.0
		if L := ft.lmax[j]; p.bonus.Alpha > 0 && L > 0 && lo0 < 1 {
			k := ft.k[j]
			lbS := 0.0
			for s, x := range cb[:S] {
				if x == 0 {
					continue
				}
				lbS += x * dot(k[s*S:(s+1)*S], cb)
			}
			lbS = max(lbS, 0)
			bEst = p.bonus.Value(s2 + lbS)
			bHi := p.bonus.Value(s2 + dot(ft.u[j], cb))
			bLo := lo0 + lbS*(p.bonus.Value(s2+L)-lo0)/L
			width = max(bHi-bLo, 0)
		}
		c := acc[i*accLen : (i+1)*accLen]
		c[0] += po * r
		c[1] += po * bEst
		c[2] += po * max(hiNode-(r-bEst), 0)
		c[3] += po * width
		c[4] += po
	}
}

// bestFallback picks the fallback candidate with the largest stand-in
// value (ties to the first), adds its sums to v and returns it.
func (p *planner) bestFallback(acts []int, acc []float64, v *val) int {
	bi := bestStandIn(len(acts), acc, accLen)
	c := acc[bi*accLen : (bi+1)*accLen]
	v.r += c[0]
	v.b += c[1]
	v.g += c[2]
	v.gm += c[3]
	v.pmass += c[4]
	return acts[bi]
}

// bestStandIn is the index of the first of n fallback candidates whose
// sums (stride values each in acc, reward then bonus first) have the
// largest stand-in value reward − bonus.
func bestStandIn(n int, acc []float64, stride int) int {
	best, bi := math.Inf(-1), 0
	for i := 0; i < n; i++ {
		c := acc[i*stride : (i+1)*stride]
		if x := c[0] - c[1]; x > best {
			best, bi = x, i
		}
	}
	return bi
}

func dot(x, y []float64) float64 {
	s := 0.0
	for i, v := range x {
		s += v * y[i]
	}
	return s
}
