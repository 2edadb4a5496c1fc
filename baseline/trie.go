package baseline

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
)

// ctxEvery is how many episodes a loop handles between context checks:
// often enough to stop within milliseconds, rarely enough to cost nothing.
const ctxEvery = 1024

// trie is the empirical history tree. A node is an observation history
// τ = (o_1, a_1, …, o_h); an edge is a pair (τ, a) with n(τ,a) > 0. Nodes
// and edges are numbered in creation order, so a node's children and an
// edge's child nodes always have larger numbers than their parents.
type trie struct {
	d       *ingest.Dataset
	H, K    int
	scale   float64 // r'_h = (r_h − shift)·scale
	shift   float64 // m/H
	endObs  int     // code of ingest.EndSymbol in ObsVocab, −1 if absent
	endAct  int     // code of ingest.EndSymbol in ActVocab, −1 if absent
	ret     []float64
	path    []int32 // node of episode k at step h, index k*H+h
	nodeObs []uint16
	nodeStp []int32 // 0-based step
	nodePar []int32 // parent edge, −1 at step 1
	nodeCnt []int32 // episodes through the node

	edgeNode []int32
	edgeAct  []uint16
	edgeN    []int32   // n(τ,a)
	edgeR    []float64 // Σ of rescaled immediate rewards over the n(τ,a) visits
	// edgeOf maps (node, action) to the edge, keyed node<<16 | action.
	edgeOf map[uint64]int32

	nodesByStep [][]int32
	edgesByStep [][]int32
}

func episodeName(d *ingest.Dataset, k int) string {
	if k < len(d.EpisodeIDs) {
		return fmt.Sprintf("%q", d.EpisodeIDs[k])
	}
	return fmt.Sprintf("#%d", k)
}

// validate checks the Dataset invariants the baselines rely on, so that bad
// input gives an error instead of an index panic.
func validate(d *ingest.Dataset) error {
	if err := validateShape(d); err != nil {
		return err
	}
	endObs, endAct := vocabIndex(d.ObsVocab, ingest.EndSymbol), vocabIndex(d.ActVocab, ingest.EndSymbol)
	for i := range d.Obs {
		if err := validateStep(d, i, endObs, endAct); err != nil {
			return err
		}
	}
	return nil
}

// validateShape checks that d holds whole episodes of a positive horizon
// within the baselines' size limits and has vocabularies of 1..65536 codes.
func validateShape(d *ingest.Dataset) error {
	if d == nil {
		return fmt.Errorf("%w: nil dataset", ErrInvalidDataset)
	}
	H := d.Horizon
	if H <= 0 {
		return fmt.Errorf("%w: horizon %d, want ≥ 1", ErrInvalidDataset, H)
	}
	if len(d.Obs) == 0 {
		return fmt.Errorf("%w: no episodes", ErrInvalidDataset)
	}
	if err := validateLengths(d); err != nil {
		return err
	}
	if len(d.ObsVocab) == 0 || len(d.ActVocab) == 0 || len(d.ObsVocab) > 1<<16 || len(d.ActVocab) > 1<<16 {
		return fmt.Errorf("%w: vocabularies of %d observations and %d actions, want 1..65536 each",
			ErrInvalidDataset, len(d.ObsVocab), len(d.ActVocab))
	}
	return nil
}

// validateLengths checks that d's observations, actions and rewards form
// whole episodes of d.Horizon steps, at most math.MaxInt32 steps in all.
func validateLengths(d *ingest.Dataset) error {
	H := d.Horizon
	if len(d.Obs)%H != 0 || len(d.Act) != len(d.Obs) || len(d.Reward) != len(d.Obs) {
		return fmt.Errorf("%w: %d observations, %d actions and %d rewards do not form episodes of %d steps",
			ErrInvalidDataset, len(d.Obs), len(d.Act), len(d.Reward), H)
	}
	if len(d.Obs) > math.MaxInt32 {
		return fmt.Errorf("%w: %d steps exceed the baseline limit of %d", ErrInvalidDataset, len(d.Obs), math.MaxInt32)
	}
	return nil
}

// validateStep checks logged step i of d: codes inside the vocabularies, a
// finite reward, and the forced end action after the end observation
// (endObs and endAct are the end symbol's codes, −1 if absent).
func validateStep(d *ingest.Dataset, i, endObs, endAct int) error {
	k, h := i/d.Horizon, i%d.Horizon
	o, a, r := int(d.Obs[i]), int(d.Act[i]), d.Reward[i]
	switch {
	case o >= len(d.ObsVocab):
		return fmt.Errorf("%w: episode %s step %d: observation code %d outside a vocabulary of %d",
			ErrInvalidDataset, episodeName(d, k), h+1, o, len(d.ObsVocab))
	case a >= len(d.ActVocab):
		return fmt.Errorf("%w: episode %s step %d: action code %d outside a vocabulary of %d",
			ErrInvalidDataset, episodeName(d, k), h+1, a, len(d.ActVocab))
	case math.IsNaN(r) || math.IsInf(r, 0):
		return fmt.Errorf("%w: episode %s step %d: reward %v is not finite",
			ErrInvalidDataset, episodeName(d, k), h+1, r)
	case o == endObs && a != endAct:
		return fmt.Errorf("%w: episode %s step %d: observation %q with action %q, want the forced action %q",
			ErrInvalidDataset, episodeName(d, k), h+1, ingest.EndSymbol, d.ActVocab[a], ingest.EndSymbol)
	}
	return nil
}

func vocabIndex(v []string, s string) int {
	for i, x := range v {
		if x == s {
			return i
		}
	}
	return -1
}

// buildTrie validates d, rescales the rewards and counts every logged
// history.
func buildTrie(ctx context.Context, d *ingest.Dataset) (*trie, error) {
	if err := validate(d); err != nil {
		return nil, err
	}
	t := newTrie(d)
	if err := t.rescale(); err != nil {
		return nil, err
	}
	if err := t.count(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// newTrie is the empty trie of the validated d, with its end codes and
// per-episode and per-step slices allocated.
func newTrie(d *ingest.Dataset) *trie {
	H := d.Horizon
	K := len(d.Obs) / H
	return &trie{
		d: d, H: H, K: K,
		endObs:      vocabIndex(d.ObsVocab, ingest.EndSymbol),
		endAct:      vocabIndex(d.ActVocab, ingest.EndSymbol),
		ret:         make([]float64, K),
		path:        make([]int32, K*H),
		nodesByStep: make([][]int32, H),
		edgesByStep: make([][]int32, H),
	}
}

// rescale sets the reward scale and shift that map the returns onto
// [0, 1] and stores every episode's rescaled return.
func (t *trie) rescale() error {
	lo, hi := t.returns()
	if math.IsInf(hi-lo, 0) {
		return fmt.Errorf("%w: the range of returns [%v, %v] overflows", ErrInvalidDataset, lo, hi)
	}
	t.scale = 1
	if hi > lo {
		t.scale = 1 / (hi - lo)
	}
	t.shift = lo / float64(t.H)
	for k := range t.K {
		t.ret[k] = (t.ret[k] - lo) * t.scale
	}
	return nil
}

// returns stores every episode's return in t.ret and returns the
// smallest and the largest.
func (t *trie) returns() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for k := range t.K {
		r := t.d.Return(k)
		t.ret[k] = r
		lo, hi = min(lo, r), max(hi, r)
	}
	return lo, hi
}

// count walks every episode down the trie, creating its nodes and edges
// and counting visits and rescaled rewards.
func (t *trie) count(ctx context.Context) error {
	// Keys pack (parent edge + 1, observation) and (node, action) into 64
	// bits; codes are < 2^16 and indices < 2^31.
	nodeMap := make(map[uint64]int32)
	t.edgeOf = make(map[uint64]int32)
	for k := range t.K {
		if k%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		t.countEpisode(nodeMap, k)
	}
	return nil
}

// countEpisode walks episode k down the trie, creating its nodes and
// edges and counting its visits and rescaled rewards.
func (t *trie) countEpisode(nodeMap map[uint64]int32, k int) {
	par := int32(-1)
	for h := range t.H {
		i := k*t.H + h
		n := t.node(nodeMap, par, h, t.d.Obs[i])
		t.nodeCnt[n]++
		t.path[i] = n
		e := t.edge(n, h, t.d.Act[i])
		t.edgeN[e]++
		t.edgeR[e] += (t.d.Reward[i] - t.shift) * t.scale
		par = e
	}
}

// node returns the step-(h+1) node reached by observing o after parent
// edge par, creating it if new; nodeMap keys it (par+1)<<16 | o.
func (t *trie) node(nodeMap map[uint64]int32, par int32, h int, o uint16) int32 {
	nk := uint64(par+1)<<16 | uint64(o)
	n, ok := nodeMap[nk]
	if !ok {
		n = int32(len(t.nodeObs))
		nodeMap[nk] = n
		t.nodeObs = append(t.nodeObs, o)
		t.nodeStp = append(t.nodeStp, int32(h))
		t.nodePar = append(t.nodePar, par)
		t.nodeCnt = append(t.nodeCnt, 0)
		t.nodesByStep[h] = append(t.nodesByStep[h], n)
	}
	return n
}

// edge returns the edge (n, a) of step h+1, creating it if new.
func (t *trie) edge(n int32, h int, a uint16) int32 {
	ek := uint64(n)<<16 | uint64(a)
	e, ok := t.edgeOf[ek]
	if !ok {
		e = int32(len(t.edgeNode))
		t.edgeOf[ek] = e
		t.edgeNode = append(t.edgeNode, n)
		t.edgeAct = append(t.edgeAct, a)
		t.edgeN = append(t.edgeN, 0)
		t.edgeR = append(t.edgeR, 0)
		t.edgesByStep[h] = append(t.edgesByStep[h], e)
	}
	return e
}

// fallbacks returns, per 0-based step h, the fallback action code of a
// step-(h+1) node: the non-end action logged most often over steps
// h+2..H (step H for the last step), ties to the lowest code; the end
// action when nothing else was logged there.
func (t *trie) fallbacks() []int {
	H, A := t.H, len(t.d.ActVocab)
	perStep := t.actionCounts()
	out := make([]int, H)
	pooled := make([]int, A)
	for h := H - 1; h >= 0; h-- {
		// pooled holds the counts of steps h+1..H-1 (0-based).
		counts := pooled
		if h == H-1 {
			counts = perStep[H-1]
		}
		out[h] = t.mostCounted(counts)
		for a, c := range perStep[h] {
			pooled[a] += c
		}
	}
	return out
}

// actionCounts counts, per 0-based step, the logged steps of every action
// code.
func (t *trie) actionCounts() [][]int {
	perStep := make([][]int, t.H)
	for h := range t.H {
		perStep[h] = make([]int, len(t.d.ActVocab))
	}
	for i, a := range t.d.Act {
		perStep[i%t.H][a]++
	}
	return perStep
}

// mostCounted is the non-end action of the largest positive count, ties
// to the lowest code; the end action (or 0 without one) when there is
// none.
func (t *trie) mostCounted(counts []int) int {
	best := -1
	for a, c := range counts {
		if a == t.endAct || c == 0 {
			continue
		}
		if best < 0 || c > counts[best] {
			best = a
		}
	}
	if best < 0 {
		best = max(t.endAct, 0)
	}
	return best
}

// childIndex lists the child nodes of every edge, sorted by observation
// code (compressed rows: children of e are kids[start[e]:start[e+1]]).
func (t *trie) childIndex() (start, kids []int32) {
	start = t.childStarts()
	kids = make([]int32, start[len(t.edgeNode)])
	fill := slices.Clone(start[:len(t.edgeNode)])
	for n, p := range t.nodePar {
		if p >= 0 {
			kids[fill[p]] = int32(n)
			fill[p]++
		}
	}
	for e := range t.edgeNode {
		slices.SortFunc(kids[start[e]:start[e+1]], t.byObs)
	}
	return start, kids
}

// childStarts returns, per edge e, the index start[e] of its first child
// in the compressed rows of childIndex, and start[len] = the child count.
func (t *trie) childStarts() []int32 {
	start := make([]int32, len(t.edgeNode)+1)
	for _, p := range t.nodePar {
		if p >= 0 {
			start[p+1]++
		}
	}
	for e := range t.edgeNode {
		start[e+1] += start[e]
	}
	return start
}

// byObs orders nodes by observation code.
func (t *trie) byObs(x, y int32) int { return int(t.nodeObs[x]) - int(t.nodeObs[y]) }

// emit lays out the policy tree that follows choice[node] (an edge) from
// every logged first observation: nodes level by level, roots by
// observation code, then by parent and observation code. It fills ID,
// Parent, Step, Obs, Action, Fallback and ReachProb (the empirical
// probability of the history under the policy) and returns, per output
// node, the trie node it came from.
func (t *trie) emit(choice []int32) (*policy.Policy, []int32) {
	p, from, _ := t.emitMixed(choice, nil)
	return p, from
}

// emitMixed is emit for a policy that, at the trie nodes where mix is
// true, takes every logged action with its share of the behaviour's
// estimated distribution there (behaviourShares): one row per logged
// action, in action-code order, with that share as its probability (a
// stochastic policy, Probs set when some node mixes). ReachProb is then
// the probability of the history (by the logged frequencies) times the
// row's probability. It also returns, per output row, the trie edge of
// its action. mix nil: emit.
func (t *trie) emitMixed(choice []int32, mix *mixing) (*policy.Policy, []int32, []int32) {
	start, kids := t.childIndex()
	em := &emitter{t: t, choice: choice, mix: mix, fb: t.fallbacks(), p: &policy.Policy{Horizon: t.H}}
	if mix != nil {
		em.edges, em.share = t.edgesByNode(), t.behaviourShares()
	}
	em.addRoots()
	em.addChildren(start, kids)
	if !em.mixed {
		em.p.Probs = nil
	}
	return em.p, em.from, em.edge
}

// behaviourShares is, per edge (τ, a), the weight of a in the behaviour's
// estimated distribution at τ: the mean logged propensity π^b(a | τ) over
// the edge's visits when the logs carry propensities (the behaviour's own
// probability, exact wherever it depends on the logged history alone),
// else the edge's visit count. A mixing node takes each logged action
// with its weight over the sum of its logged actions' weights.
func (t *trie) behaviourShares() []float64 {
	w := make([]float64, len(t.edgeNode))
	d := t.d
	if len(d.Propensity) != len(d.Act) {
		for e, n := range t.edgeN {
			w[e] = float64(n)
		}
		return w
	}
	for i, a := range d.Act {
		w[t.edgeOf[uint64(t.path[i])<<16|uint64(a)]] += d.Propensity[i]
	}
	for e, n := range t.edgeN {
		w[e] /= float64(n)
	}
	return w
}

// edgesByNode lists every node's edges in action-code order.
func (t *trie) edgesByNode() [][]int32 {
	out := make([][]int32, len(t.nodeObs))
	for e, v := range t.edgeNode {
		out[v] = append(out[v], int32(e))
	}
	for _, es := range out {
		slices.SortFunc(es, func(x, y int32) int { return int(t.edgeAct[x]) - int(t.edgeAct[y]) })
	}
	return out
}

// addRoots adds the trie's first-step nodes, in the order of their
// observations, with their shares of the episodes as reach
// probabilities.
func (em *emitter) addRoots() {
	t := em.t
	roots := slices.Clone(t.nodesByStep[0])
	slices.SortFunc(roots, t.byObs)
	for _, n := range roots {
		em.add(n, -1, float64(t.nodeCnt[n])/float64(t.K))
	}
}

// addChildren adds, breadth first, the children of every added row along
// its edge (start and kids index them, childIndex), with its reach
// probability times the edge's share of episodes reaching each.
func (em *emitter) addChildren(start, kids []int32) {
	t := em.t
	for i := 0; i < len(em.p.Nodes); i++ {
		e := em.edge[i]
		for _, c := range kids[start[e]:start[e+1]] {
			em.add(c, int64(i), em.p.Nodes[i].ReachProb*float64(t.nodeCnt[c])/float64(t.edgeN[e]))
		}
	}
}

// emitter builds the policy p of trie.emit: choice[node] is the chosen
// edge, mix[node] (when mix is set) whether the node takes every logged
// action instead, edges the nodes' edges (with mix), fb the fallback
// action per step; from[i] and edge[i] are the trie node and edge of
// output row i, and mixed says whether some row has a probability below
// one.
type emitter struct {
	t      *trie
	choice []int32
	mix    *mixing
	edges  [][]int32
	share  []float64 // behaviourShares, with mix
	fb     []int
	p      *policy.Policy
	from   []int32
	edge   []int32
	mixed  bool
}

// add appends the output rows of trie node n with the given parent output
// row and reach probability of the history: the chosen edge's row, or at
// a mixing node one row per logged action, with its share of the
// behaviour's estimated distribution there.
func (em *emitter) add(n int32, parent int64, reach float64) {
	if !em.mix.mixes(n) {
		em.addRow(n, em.choice[n], parent, reach, 1)
		return
	}
	total := 0.0
	for _, e := range em.edges[n] {
		if !em.mix.drop[e] {
			total += em.share[e]
		}
	}
	for _, e := range em.edges[n] {
		if em.mix.drop[e] {
			continue
		}
		q := em.share[e] / total
		em.mixed = em.mixed || q < 1
		em.addRow(n, e, parent, reach*q, q)
	}
}

// addRow appends the row of trie node n taking edge e's action with
// probability q.
func (em *emitter) addRow(n, e int32, parent int64, reach, q float64) {
	t := em.t
	node := policy.Node{
		ID:        int64(len(em.p.Nodes)),
		Parent:    parent,
		Step:      t.nodeStp[n] + 1,
		Obs:       t.d.ObsVocab[t.nodeObs[n]],
		Action:    t.d.ActVocab[t.edgeAct[e]],
		Fallback:  t.d.ActVocab[em.fb[t.nodeStp[n]]],
		ReachProb: reach,
	}
	if int(t.nodeObs[n]) == t.endObs {
		node.Fallback = ingest.EndSymbol
	}
	em.p.Nodes = append(em.p.Nodes, node)
	if em.mix != nil {
		em.p.Probs = append(em.p.Probs, q)
	}
	em.from = append(em.from, n)
	em.edge = append(em.edge, e)
}
