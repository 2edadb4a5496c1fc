package policy

import (
	"cmp"
	"context"
	"encoding/binary"
	"math"
	"slices"
	"unsafe"

	"github.com/psrlcb/psrlcb/internal/parallel"
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
// Where that bound is still above the goal, the nodes the bound's own
// plan reaches are expanded further, one step at a time, most probable
// first (deepen), each new node bounded by the tails of its step.

// topMaxDepth is the most steps expanded exactly (topDepth; tests
// lower it).
var topMaxDepth = 3

// topRootWeights are the root weights w_0 = cos θ of the tails, θ in
// steps of π/16 from 0 (the first K steps' terms alone) to π/2 (the tail
// alone): the split of the weight between √σ_K and the tail's terms.
var topRootWeights = func() []float64 {
	w := make([]float64, topTails)
	for i := range w {
		w[i] = math.Cos(float64(i) * math.Pi / 16)
	}
	w[8] = 0 // cos(π/2) rounds to 6·10⁻¹⁷
	return w
}()

// topTails is the number of tails, one per root weight.
const topTails = 9

// topRootScale (tests) scales the tails' root term; 1 otherwise.
var topRootScale = 1.0

// topCost bounds the top tree's work: its nodes of depth K, (|A|·|O|)^K,
// times the tails, times S per point of a step's sawtooth.
const topCost = 1 << 32

// topWork bounds the multiply–adds of the tails' values at the nodes
// below the exact steps, those of step K+1 included (topTree.fill,
// obsInterpWork): about 12 s of this machine's two cores (bench/fit.sh's
// model reaches its goal after 7·10⁹ of them).
const topWork = 2 * topCost

// topNodes bounds the nodes topTree keeps (topDepth, deepen): each
// holds its belief in its key, 16 + 8S bytes, and its tails' values.
const topNodes = 1 << 21

// DefaultBoundMemory is the most bytes the bound exact over the first
// steps may hold while it deepens (PlanOptions.BoundMemory): its nodes,
// the expanded nodes' actions, and the tails of the steps past K+1 (a
// step's nine sawtooths, obsSawtooth.bytes).
const DefaultBoundMemory = 1 << 29

// topTail is one tail of topBound: root weight w0, the cap's scale gam,
// the scale of its charge (topTree.ch's tangents at its step weight)
// and the charge's sawtooth.
type topTail struct {
	w0, gam, scale float64
	sw             *obsSawtooth
}

// topDepth is K, the steps topBound expands exactly: the most, up to
// topMaxDepth, whose cost fits topCost, whose nodes of step K+1,
// |O|·(|A|·|O|)^K at most, fit topNodes, and that leave a step of tail
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
		if nodes*float64(len(topRootWeights))*float64(max(pts, 1))*float64(p.S) <= topCost && nodes*float64(p.O) <= topNodes {
			return K
		}
	}
	return 0
}

// topStats is what topBound did: K, the steps expanded exactly, the
// nodes below them that deepen expanded one step further, and the bytes
// counted once the first K steps were expanded and valued.
type topStats struct {
	K, expanded int
	bytes       float64
}

// topBound returns the bound exact over the first K = topDepth() steps
// with the tangents of the charge by history code ch (whose step weight
// is ch.stepW), deepened (topTree.deepen) until it is at most goal or
// topWork is spent, and what it did; +Inf when ch is none or K is 0. It
// stops with ctx's error.
func (p *beliefPlanner) topBound(ctx context.Context, ch *boundCharge, goal float64) (float64, topStats, error) {
	K := p.topDepth()
	if ch == nil || ch.stepW <= 0 || K == 0 {
		return math.Inf(1), topStats{K: K}, nil
	}
	t := &topTree{p: p, ch: ch, K: K, alpha: p.bonus.Alpha, root: max(p.bonus.Root, 0), memory: cmp.Or(p.topMemory, DefaultBoundMemory),
		tails: make([][]topTail, p.H+1), nodes: map[string]*topNode{}, first: make([]float64, p.O)}
	v, err := t.bound(ctx)
	bytes := t.bytes
	if err == nil && !math.IsInf(v, 1) {
		v, err = t.deepen(ctx, v, goal)
	}
	return v, topStats{K: K, expanded: t.expanded, bytes: bytes}, err
}

// tailsFrom makes the tails of the nodes of step from, once: per root
// weight w_0, the charge ch from step from on with step weight
// w = √((1 − w_0²)/(H − from)), the cap's scale γ of the bonus bounded
// with it, and the charge's sawtooth from step from on.
func (t *topTree) tailsFrom(ctx context.Context, from int) error {
	p := t.p
	if t.tails[from] != nil {
		return nil
	}
	sigMax := t.root
	for h := 1; h < from; h++ {
		sigMax += p.quadMax(h)
	}
	tails := make([]topTail, 0, len(topRootWeights))
	t.setBytes = 0
	for _, w0 := range topRootWeights {
		w := math.Sqrt(max(1-w0*w0, 0) / float64(p.H-from))
		y := w0 * math.Sqrt(sigMax)
		for h := from; h < p.H; h++ {
			y += w * math.Sqrt(p.quadMax(h))
		}
		gam := 1.0
		if t.alpha*y > 1 {
			gam = 1 / (t.alpha * y)
		}
		// The tail's charge is t.ch's tangents at step weight w: its
		// scale carries the factor (the sawtooth reads the tangents only
		// times the scale, obsReward), so the tangents are shared. Its
		// sawtooth reads only the steps from from on.
		tc := *t.ch
		tc.scale, tc.base = gam*t.alpha*w/t.ch.stepW, 0
		sw, err := p.obsSawtoothOf(ctx, &tc, from)
		if err != nil {
			return err
		}
		tails = append(tails, topTail{w0: w0, gam: gam, scale: tc.scale, sw: sw})
		b := sw.bytes()
		if from > t.K+1 {
			t.bytes += b
		}
		t.setBytes += b
	}
	t.tails[from] = tails
	return nil
}

// topTree is topBound's expansion: per step the tails of its nodes
// (nil until some node of that step needs them), the first
// observation's probabilities and the root nodes (step 1, one per first
// observation of positive probability), every node keyed by step,
// history code and belief, the nodes whose tails' values are still to
// compute, the nodes whose are computed, the multiply–adds that took
// (deepen stops at topWork), the nodes expanded past step K, and the
// bytes of the nodes, of the expanded nodes' actions and of the tails of
// the steps past K+1 (deepen stops at memory), and those of the last
// step's tails built; and expand's scratch of successors.
type topTree struct {
	p           *beliefPlanner
	ch          *boundCharge
	K           int
	alpha, root float64
	tails       [][]topTail
	first       []float64
	roots       []*topNode
	nodes       map[string]*topNode
	fresh       []*topNode
	filled      int
	work        float64
	expanded    int
	bytes       float64
	memory      float64
	setBytes    float64
	kids        []topKid
}

// topNode is a node of the tree: its step, last observation, history
// code, its key (the step, code and belief's bits: the belief is read
// back from it, belief), its tails' values (none at the exact steps;
// without the root term; in single precision rounded up, so each stays
// an upper bound at half the bytes), its actions once expanded, and its
// reach probability in deepen's last pass.
type topNode struct {
	h, o, c int32
	tv      [topTails]float32 // beside the int32s: 96 bytes in all, no padding
	key     string
	acts    []topAct
	mass    float64
}

// topAct is an action of an expanded node: its exact reward, its bonus
// term q and its successors of positive probability.
type topAct struct {
	r, q float64
	kids []topKid
}

// topKid is a successor and its probability.
type topKid struct {
	z float64
	n *topNode
}

// bound expands the first K steps exactly (every node of a step of at
// most K, from the roots down), computes the tails' values of the nodes
// of step K+1 in parallel, and returns the root's value.
func (t *topTree) bound(ctx context.Context) (float64, error) {
	p := t.p
	if err := t.tailsFrom(ctx, t.K+1); err != nil {
		return 0, err
	}
	p.m.FirstObsProbs(t.first)
	b := make([]float64, p.S)
	for o, po := range t.first {
		if po > 0 {
			p.m.Prior(b)
			p.m.ObserveFirst(b, o)
			t.roots = append(t.roots, t.node(1, o, p.codes.first(o), b))
		}
	}
	// The nodes are made in order, so each is expanded once, after its
	// parents. Past t.memory the bound is let go (+Inf: the planner's
	// other bounds stand).
	for i := 0; i < len(t.fresh); i++ {
		if n := t.fresh[i]; int(n.h) <= t.K && n.acts == nil {
			if t.bytes > t.memory {
				return math.Inf(1), nil
			}
			t.expand(n)
		}
	}
	t.expanded = 0
	if err := t.fill(ctx); err != nil {
		return 0, err
	}
	// No node of step K+1 is made after this: their tails' sawtooths
	// are let go before deepen builds the next step's.
	for i := range t.tails[t.K+1] {
		t.tails[t.K+1][i].sw = nil
	}
	return t.rootValue(), nil
}

// rootValue is the root's value: the roots' values at the root's sum,
// weighted by their first observation's probability.
func (t *topTree) rootValue() float64 {
	v := 0.0
	for _, n := range t.roots {
		nv, _ := t.nodeValue(n, t.root)
		v += t.first[n.o] * nv
	}
	return v
}

// deepen lowers the bound v while it is above goal, in rounds. Each
// round collects the unexpanded nodes that the bound's plan reaches, and
// those reached through actions whose value is within (v − goal)/m of
// their node's best (m the node's reach probability): they may take the
// best's place once the root has fallen by v − goal. It expands them one
// step exactly, the most probable first (grow), and takes the root's
// value again. A node's value is the least of its tails' and,
// once expanded, of its best action's, both bounds on the relaxed
// problem's value there (its successors bounded by the tails of the next
// step), so each round's value is a bound and no more than the last. The
// rounds stop at the goal, when less than a 32nd of topWork or of
// t.memory is left (after about a dozen rounds), or after two rounds in
// a row that each moved the stated gap by less than the summary shows
// (shownStep).
func (t *topTree) deepen(ctx context.Context, v, goal float64) (float64, error) {
	stalled := 0 // rounds in a row that moved the stated gap by less than shown
	for v > goal && topWork-t.work > topWork/32 && t.memory-t.bytes > t.memory/32 && stalled < 2 {
		var cands []*topNode
		for _, n := range t.roots {
			t.collect(n, t.root, t.first[n.o], v-goal, &cands)
		}
		if len(cands) == 0 {
			break
		}
		grown, err := t.grow(ctx, cands)
		if err != nil {
			return 0, err
		}
		if err := t.fill(ctx); err != nil {
			return 0, err
		}
		if grown == 0 {
			break
		}
		before := v
		v = min(v, t.rootValue())
		// goal is the plan's value plus TargetGap; with no goal, the
		// rounds go on until the work is spent.
		if g := v - goal + TargetGap; !math.IsInf(g, 1) && before-v < shownStep(g) {
			stalled++
		} else {
			stalled = 0
		}
	}
	return v, nil
}

// grow expands the candidates, the most probable first, until a quarter
// of the work left of topWork or of the bytes left of t.memory (less
// the tails it builds) is spent, or the tree holds topNodes nodes, and
// returns how many it expanded; the next round collects anew through
// what this one expanded, a step deeper, so where a budget binds the
// rounds shrink and follow the plan. It resets their masses.
func (t *topTree) grow(ctx context.Context, cands []*topNode) (int, error) {
	grown, limit := 0, t.work+(topWork-t.work)/4
	memLimit := t.bytes + (t.memory-t.bytes)/4
	for _, n := range mostProbableFirst(cands) {
		n.mass = 0
		// The fresh nodes are priced at the mean so far, and a step's
		// first expansion, which builds the next step's tails, at the
		// last step's tails' bytes.
		full := t.filled == 0 || t.work+float64(len(t.fresh))*t.work/float64(t.filled) >= limit ||
			len(t.nodes) >= topNodes || t.bytes >= memLimit || t.tails[n.h+1] == nil && t.bytes+t.setBytes >= t.memory
		if n.acts != nil || full {
			continue
		}
		// A step's tails are built once, whatever the round: the round's
		// quarter is of the nodes' bytes.
		before := t.bytes
		if err := t.tailsFrom(ctx, int(n.h)+1); err != nil {
			return grown, err
		}
		memLimit += t.bytes - before
		t.expand(n)
		grown++
	}
	return grown, nil
}

// mostProbableFirst returns the candidates by mass, the largest first,
// ties in their order in cands: what a stable sort gives, by a sort of
// O(n log n) on (node, place) pairs, where a stable sort of the nodes
// (O(n log² n)) took half of deepen's time on bench/fit.sh's model.
func mostProbableFirst(cands []*topNode) []*topNode {
	type cand struct {
		n *topNode
		i int
	}
	ord := make([]cand, len(cands))
	for i, n := range cands {
		ord[i] = cand{n, i}
	}
	slices.SortFunc(ord, func(x, y cand) int {
		if c := cmp.Compare(y.n.mass, x.n.mass); c != 0 {
			return c
		}
		return cmp.Compare(x.i, y.i)
	})
	out := make([]*topNode, len(ord))
	for i, c := range ord {
		out[i] = c.n
	}
	return out
}

// roundUp32 is x in single precision, rounded up.
func roundUp32(x float64) float32 {
	f := float32(x)
	if float64(f) < x {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

// node returns the node of step h, history code c and belief b, made
// (its tails' values still to compute) if new.
func (t *topTree) node(h, o, c int, b []float64) *topNode {
	key := make([]byte, 0, 16+8*len(b))
	key = binary.LittleEndian.AppendUint64(key, uint64(h))
	key = binary.LittleEndian.AppendUint64(key, uint64(c))
	for _, x := range b {
		key = binary.LittleEndian.AppendUint64(key, math.Float64bits(x))
	}
	if n, ok := t.nodes[string(key)]; ok {
		return n
	}
	n := &topNode{h: int32(h), o: int32(o), c: int32(c), key: string(key)}
	t.nodes[n.key] = n
	// The key, the node (with its tails' values) and the map's entry.
	t.bytes += float64(len(key) + int(unsafe.Sizeof(topNode{})) + 64)
	t.fresh = append(t.fresh, n)
	return n
}

// belief sets b to n's belief, read from its key.
func (n *topNode) belief(b []float64) {
	for s := range b {
		b[s] = math.Float64frombits(binary.LittleEndian.Uint64([]byte(n.key[16+8*s : 24+8*s])))
	}
}

// topScratch is fill's scratch: a belief, and each action's reward and
// charge (t.ch's) there.
type topScratch struct {
	b, r, ch []float64
	wc       weightCache // the tails' sawtooth weights at b
}

// fill computes the tails' values of the fresh nodes, in parallel, and
// adds up the multiply–adds they took.
func (t *topTree) fill(ctx context.Context) error {
	p, fresh := t.p, t.fresh
	t.fresh = nil
	newScratch := func() *topScratch {
		return &topScratch{b: make([]float64, p.S), r: make([]float64, p.A), ch: make([]float64, p.A)}
	}
	work := make([]float64, len(fresh))
	err := parallel.ForWith(ctx, len(fresh), p.workers, newScratch, func(sc *topScratch, i int) error {
		n := fresh[i]
		h, c := int(n.h), int(n.c)
		if h <= t.K {
			return nil // a node of the exact steps has no tails
		}
		n.belief(sc.b)
		// The tails' charges are t.ch's tangents with their own scales:
		// each action's reward and tangent at b are computed once for
		// all of them, and so is each sawtooth point's weight at b
		// (their sawtooths keep the same points: sc.wc).
		for a := range p.A {
			sc.r[a], sc.ch[a] = dot(p.tab[h][a].r, sc.b), 0
			if h < p.H {
				sc.ch[a] = dot(t.ch.vec(h, a, c), sc.b)
			}
		}
		tails := t.tails[h]
		sc.wc.reset()
		for j, tl := range tails {
			n.tv[j] = roundUp32(p.obsInterpWith(tl.sw, h, c, sc.b, func(a int) float64 { return sc.r[a] - tl.scale*sc.ch[a] }, &sc.wc))
			work[i] += p.obsInterpWork(tl.sw, h, c)
		}
		return nil
	})
	for i, n := range fresh {
		if int(n.h) > t.K {
			t.work += work[i]
			t.filled++
		}
	}
	return err
}

// expand gives n its actions: each action's exact reward and bonus
// term, and its successors of positive probability one step on.
func (t *topTree) expand(n *topNode) {
	p := t.p
	t.expanded++ // bound resets it after the exact steps
	b, pred, next := make([]float64, p.S), make([]float64, p.S), make([]float64, p.S)
	n.belief(b)
	n.acts = make([]topAct, p.A)
	h, o := int(n.h), int(n.o)
	// The actions and their successors, in the bytes deepen counts.
	t.bytes += float64(p.A) * float64(unsafe.Sizeof(topAct{}))
	for a := range p.A {
		st := &p.tab[h][a]
		act := topAct{r: dot(st.r, b), q: max(quad(st.m, b), 0)}
		predict(st.t, b, pred)
		kids := t.kids[:0]
		for o2 := range p.O {
			if z := correct(st.e, p.O, pred, o2, next); z > 0 {
				kids = append(kids, topKid{z: z, n: t.node(h+1, o2, p.codes.next(o, a, o2), next)})
			}
		}
		act.kids, t.kids = slices.Clone(kids), kids
		t.bytes += float64(len(kids)) * float64(unsafe.Sizeof(topKid{}))
		n.acts[a] = act
	}
}

// tailValue is the least over n's tails of the tail's value less its
// root term, at running sum sig.
func (t *topTree) tailValue(n *topNode, sig float64) float64 {
	best := math.Inf(1)
	for j, tl := range t.tails[n.h] {
		best = min(best, float64(n.tv[j])-topRootScale*tl.gam*t.alpha*tl.w0*math.Sqrt(sig))
	}
	return best
}

// nodeValue is n's value at running sum sig: the least of its tails'
// value and, once expanded, its best action's; the best action (-1 when
// the tails' value is the lesser or n is not expanded).
func (t *topTree) nodeValue(n *topNode, sig float64) (float64, int) {
	v, best := t.tailValue(n, sig), -1
	if n.acts == nil {
		return v, best
	}
	e, ea := math.Inf(-1), -1
	for a, act := range n.acts {
		if x := t.actValue(act, sig); x > e {
			e, ea = x, a
		}
	}
	if e < v {
		v, best = e, ea
	}
	return v, best
}

// actValue is the value of an expanded node's action at running sum sig:
// its exact reward plus its successors' values, their sum run on by its
// bonus term.
func (t *topTree) actValue(act topAct, sig float64) float64 {
	x := act.r
	for _, k := range act.kids {
		kv, _ := t.nodeValue(k.n, sig+act.q)
		x += k.z * kv
	}
	return x
}

// collect adds to cands the unexpanded nodes reached from n (at running
// sum sig, with probability mass) through the actions whose value is
// within d/mass of the best's (the bound's plan, and the actions that
// may take its place once the root's value has fallen by d), each once,
// adding the mass to theirs; not past a node whose tails' value is below
// its actions' by more than d/mass. Nodes of the last step but one are
// not expanded (a tail needs a step).
func (t *topTree) collect(n *topNode, sig, mass, d float64, cands *[]*topNode) {
	if n.acts == nil {
		if int(n.h)+1 < t.p.H {
			if n.mass == 0 {
				*cands = append(*cands, n)
			}
			n.mass += mass
		}
		return
	}
	qs := make([]float64, len(n.acts))
	best := math.Inf(-1)
	for a, act := range n.acts {
		qs[a] = t.actValue(act, sig)
		best = max(best, qs[a])
	}
	if best-d/mass > t.tailValue(n, sig) {
		return
	}
	for a, act := range n.acts {
		if qs[a] < best-d/mass {
			continue
		}
		for _, k := range act.kids {
			t.collect(k.n, sig+act.q, mass*k.z, d, cands)
		}
	}
}
