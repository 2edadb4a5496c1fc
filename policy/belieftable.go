package policy

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/psrlcb/psrlcb/internal/parallel"
)

// The table's action is the one-step lookahead when it costs at most
// lookaheadMaxCost multiply–adds per node (|A|·|O|·|Γ_{h+1}|·r) and at
// most lookaheadTotal over the largest table the walk can build
// (min(rows, Σ_h |O|^h) nodes), and the action of the best α-vector of the
// step (|Γ_h|·r) otherwise: the lookahead is the better policy, the
// vector keeps tables of millions of rows affordable. Memoised beliefs
// cost nothing either way.
const (
	lookaheadMaxCost = 1 << 19
	lookaheadTotal   = 1 << 35
)

// memoLimit bounds the entries of the belief → action memo of the table
// walk (an entry holds a belief key of 8·r bytes): beyond it actions are
// recomputed, which costs time but no memory.
const memoLimit = 1 << 20

// tableWalker extracts the belief policy's decision tree over the
// histories it reaches with model probability ≥ eps and evaluates the
// resulting policy (table plus fallback) under the model with the paper's
// bonus.
type tableWalker struct {
	bp    *beliefPlanner
	ft    *fallbackTables
	eps   float64
	limit int64
	count int64
	over  bool
	build bool
	nodes []Node
	ctrl  *Controller // the policy the table is the tree of
	// dec, when set, is the planner whose controller decides (the
	// relaxed problem's plan, csBound); bp still values the decisions.
	dec *beliefPlanner
	cx  *ctrlScratch
	ctx context.Context

	bel, pred [][]float64
	weights   [][]float64
	acc       [][]float64 // per depth: per fallback candidate, the cut children's sums
	set       [][]float64 // per depth: a wide node's cut children's belief mass, Σ z·b_o (standIn as one set)
	scan      [][]int32   // per depth: a wide node's observations to look at
	sc        *backupScratch
	smp       *obsSampler // draws observations on wide vocabularies (rollouts)
	rbel      []float64   // a rollout's belief
	rpred     []float64   // a rollout's prediction
	rprobs    []float64   // a rollout's observation probabilities
	rw        []float64   // a tail set's state weights
	// reached, when not nil, collects the beliefs of the table's nodes per
	// step (with their reach probability) during the building walk.
	reached [][]bpoint
	// charge, when not nil, is the upper bound's charge, whose vector
	// per step h < H, action and observation o_h (boundCharge.vec) takes
	// the place of the step term; the values then sum it (tval.lin).
	charge *boundCharge
	// oa holds per depth the observation and action of the node being
	// visited there, for its children's history codes (code).
	oa [][2]int

	// Parallel walks (see walk). The top walker cuts the tree at depth
	// frontier: collecting, it records the frontier nodes as tasks;
	// replaying, it takes their results in the same order. The workers'
	// walkers (pool, kept across walks) add their visits to the shared
	// count (pending: visits not yet added).
	frontier int
	collect  bool
	tasks    []walkTask
	results  []walkResult
	next     int
	pool     []*tableWalker
	shared   *atomic.Int64
	pending  int64
	err      error // a worker's failure (ctx or a panic) in the last walk

	// Placing (see walk): the subtree sizes of the last complete
	// parallel walk and its threshold and frontier; while placed, the
	// replay writes the levels above the frontier at pos in a table of
	// full length, around subtrees the workers wrote in place.
	sizes         []int64
	sizesEps      float64
	sizesFrontier int
	placed        bool
	pos           int64
	offs          []int64
}

// walkTask is a frontier node of a parallel walk: the arguments of its
// visit and its belief.
type walkTask struct {
	h, o             int
	po, pa           int // the parent's observation and action (w.oa[h−1])
	cond, reach, sum float64
	bel              []float64
	above            int64 // nodes visited above the frontier before this one
}

// walkResult is a frontier node's subtree: its values, action, nodes
// (ids from 0, the task's node first, parent −1) and reached beliefs.
type walkResult struct {
	v       tval
	a       int
	count   int64
	nodes   []Node
	reached [][]bpoint
}

// actionMemo maps a belief key of each step to the policy's action there,
// shared by the walkers of a table. The action is a function of the key
// (see action), so what the memo holds does not depend on which walker
// computed it first. Lookups do not allocate (the map is indexed by the
// key bytes), which matters on tables of millions of rows.
type actionMemo struct {
	seed   maphash.Seed
	shards [memoShards]memoShard
	n      atomic.Int64
}

type memoShard struct {
	mu sync.RWMutex
	m  map[string]int
}

const memoShards = 64

func newActionMemo() *actionMemo {
	am := &actionMemo{seed: maphash.MakeSeed()}
	for i := range am.shards {
		am.shards[i].m = map[string]int{}
	}
	return am
}

func (am *actionMemo) shard(key []byte) *memoShard {
	return &am.shards[maphash.Bytes(am.seed, key)%memoShards]
}

func (am *actionMemo) load(key []byte) (int, bool) {
	sh := am.shard(key)
	sh.mu.RLock()
	a, ok := sh.m[string(key)]
	sh.mu.RUnlock()
	return a, ok
}

func (am *actionMemo) store(key []byte, a int) {
	if am.n.Load() >= memoLimit {
		return
	}
	sh := am.shard(key)
	sh.mu.Lock()
	if _, ok := sh.m[string(key)]; !ok {
		sh.m[string(key)] = a
		am.n.Add(1)
	}
	sh.mu.Unlock()
}

// tval is what a table subtree returns, conditional on reaching its node:
// E[reward-to-go], an upper bound of E[b̂], the probability of leaving the
// table, and an estimate of E[Σ_h ‖ψ̄̂(τ_h)‖²_{U_h⁻¹}] (for the tangent
// of the surrogate).
//
// Beyond the table the values are Monte Carlo: rollouts of the controller
// under the model (rollouts), rolloutDensity of them per unit of model
// probability. mc is their part of r − b, sq the part of Σ (R − b̂)² and n
// of the count (all scaled like the values, so at the root
// mc = Σ_k x_k / rolloutDensity, sq = Σ_k x_k² / rolloutDensity and
// n = N / rolloutDensity): the root's standard error follows (se).
type tval struct {
	r, b, out, sum float64
	mc, sq, n      float64
	// lin is E[Σ_{h<H} t_{h,a_h}·b_h] for the walker's tangents tan (0
	// when it has none): the step terms as the upper bound charges them.
	lin float64
}

// se is the Monte Carlo standard error of the root value r − b: the
// rollouts' spread, √(Σ_k (x_k − x̄)²) / rolloutDensity.
func (t tval) se() float64 {
	if t.n <= 0 {
		return 0
	}
	return math.Sqrt(max(t.sq-t.mc*t.mc/t.n, 0) / rolloutDensity)
}

func newTableWalker(bp *beliefPlanner, ft *fallbackTables) *tableWalker {
	H, S := bp.H, bp.S
	w := &tableWalker{bp: bp, ft: ft, sc: newBackupScratch(S, bp.O)}
	w.rbel, w.rpred, w.rw = make([]float64, S), make([]float64, S), make([]float64, S)
	w.bel, w.pred = perDepth(H, S), perDepth(H, S)
	w.weights, w.acc = perDepth(H, bp.A), perDepth(H, 4*bp.A)
	w.set = perDepth(H, S)
	w.scan = make([][]int32, H+2)
	w.oa = make([][2]int, H+2)
	return w
}

// code is the history code (histCodes) of the node (…, o_h) of step h
// whose parent is the node being visited at step h−1.
func (w *tableWalker) code(h, o int) int {
	if h <= 1 {
		return w.bp.codes.first(o)
	}
	return w.bp.codes.next(w.oa[h-1][0], w.oa[h-1][1], o)
}

// action is the controller's action at belief b over s_h.
func (w *tableWalker) action(h int, b []float64, end bool) int {
	return w.ctrl.decide(h, b, end, w.cx)
}

// walk visits every node of the policy's tree with reach ≥ eps (all of
// step 1), counting them, and, when build is set, appends them to nodes.
// It returns the root values (unconditional).
//
// With more than one worker the tree is cut at the shallowest depth that
// has at least walkTasks nodes per worker (the levels above are few and
// cheap): a first pass over the levels above collects the frontier
// nodes, the workers walk their subtrees, and a second pass over the
// levels above joins the results in the order of the sequential walk.
// Nodes, values and reached beliefs are therefore those of the
// sequential walk, whatever the worker count. Every visit is added to
// one shared count; the walk is over the limit exactly when the
// sequential one would be (the full count exceeds it), since a worker
// stops only once the shared count, a part of the full one, has passed
// the limit.
func (w *tableWalker) walk(ctx context.Context, eps float64, limit int64, build bool) tval {
	w.ctx, w.eps, w.limit, w.build, w.err = ctx, eps, limit, build, nil
	workers := parallel.Workers(w.bp.workers)
	if workers <= 1 || w.bp.H == 1 {
		w.frontier = 0
		return w.walkLevels(false)
	}
	return w.walkParallel(workers)
}

// walkParallel is walk with workers workers: it collects the frontier
// tasks, walks their subtrees with the pool and replays the levels above
// the frontier with their results.
func (w *tableWalker) walkParallel(workers int) tval {
	w.collectTasks(workers)
	if w.over {
		return tval{}
	}
	top := w.count
	w.growPool(workers)
	w.tryPlace(top)
	var shared atomic.Int64
	shared.Store(top)
	if !w.runTasks(&shared, workers) {
		return tval{}
	}
	return w.replay(&shared)
}

// collectTasks walks the levels above the frontier collecting its nodes
// as tasks: the shallowest frontier with enough tasks (every level-1
// node is one on wide vocabularies, where a deeper frontier would hold
// |O|² tasks).
func (w *tableWalker) collectTasks(workers int) {
	w.collect = true
	for w.frontier = 1; ; w.frontier++ {
		w.tasks = w.tasks[:0]
		w.walkLevels(false)
		if w.over || len(w.tasks) >= walkTasks*workers || w.frontier == w.bp.H {
			break
		}
	}
	w.collect = false
}

// growPool adds walkers to the pool until it has one per worker.
func (w *tableWalker) growPool(workers int) {
	for len(w.pool) < workers {
		c := newTableWalker(w.bp, w.ft)
		c.ctrl, c.cx, c.smp, c.charge = w.ctrl, w.ctrl.newScratch(), w.smp, w.charge
		w.pool = append(w.pool, c)
	}
}

// runTasks walks the frontier subtrees with the pool's walkers, which add
// their visits to shared; it reports false, the walk over, on a worker's
// failure or once the count passes the limit.
func (w *tableWalker) runTasks(shared *atomic.Int64, workers int) bool {
	ctx, build := w.ctx, w.build
	w.results = make([]walkResult, len(w.tasks))
	free := chanOf(w.pool[:workers])
	err := parallel.ForWith(ctx, len(w.tasks), workers, func() *tableWalker {
		return w.readyWorker(<-free, shared)
	}, func(c *tableWalker, i int) error { return w.walkTask(c, i, build) })
	return w.tasksDone(err, shared)
}

// readyWorker readies worker c for the walk's tasks: the walk's context,
// threshold, limit and building flag, and the shared count.
func (w *tableWalker) readyWorker(c *tableWalker, shared *atomic.Int64) *tableWalker {
	c.ctx, c.eps, c.limit, c.build, c.over = w.ctx, w.eps, w.limit, w.build, false
	c.shared, c.pending, c.frontier = shared, 0, 0
	return c
}

// tasksDone reports whether the walk goes on after its tasks: false, the
// walk over and not placed, on a worker's failure err or once the shared
// count passes the limit.
func (w *tableWalker) tasksDone(err error, shared *atomic.Int64) bool {
	if err != nil {
		w.over, w.err, w.placed = true, err, false
		return false
	}
	if shared.Load() > w.limit {
		w.over, w.placed = true, false
		return false
	}
	return true
}

// replay keeps the subtrees' sizes for a later placed walk and walks the
// levels above the frontier again, joining the tasks' results in the
// order of the sequential walk; it returns the root values.
func (w *tableWalker) replay(shared *atomic.Int64) tval {
	w.keepSizes()
	// Replay the levels above the frontier with the results (into a
	// table of the exact size when not placed).
	w.next, w.pos = 0, 0
	if w.build && !w.placed {
		w.nodes = make([]Node, 0, shared.Load())
	}
	v := w.walkLevels(true)
	w.count = shared.Load()
	w.results, w.placed = nil, false
	return v
}

// tryPlace places the table (place) when the walk can. A building walk
// at the threshold of the last complete walk knows every subtree's size:
// the table is allocated at full length and each worker writes its
// subtrees in place, so a table of millions of rows is never held twice.
func (w *tableWalker) tryPlace(top int64) {
	w.placed = w.build && w.sizes != nil && w.eps == w.sizesEps && w.frontier == w.sizesFrontier && len(w.sizes) == len(w.tasks)
	if w.placed {
		w.place(top)
	}
}

// keepSizes keeps the subtrees' sizes of this walk, with its threshold
// and frontier, for a later placed walk.
func (w *tableWalker) keepSizes() {
	w.sizes, w.sizesEps, w.sizesFrontier = make([]int64, len(w.results)), w.eps, w.frontier
	for i := range w.results {
		w.sizes[i] = w.results[i].count
	}
}

// place allocates the table at its full length (top nodes above the
// frontier plus the subtrees' sizes of the last complete walk) and sets
// each task's offset in it.
func (w *tableWalker) place(top int64) {
	w.offs = make([]int64, len(w.tasks))
	total, below := top, int64(0)
	for i := range w.tasks {
		w.offs[i] = w.tasks[i].above + below
		below += w.sizes[i]
	}
	total += below
	w.nodes = make([]Node, total)
}

// walkTask walks frontier subtree i with worker c and stores its result
// (with the nodes it built, renumbered in place when the table is
// placed).
func (w *tableWalker) walkTask(c *tableWalker, i int, build bool) error {
	if c.over {
		return nil
	}
	t := &w.tasks[i]
	off := w.startTask(c, i, build)
	copy(c.bel[t.h], t.bel)
	if t.h > 1 {
		c.oa[t.h-1] = [2]int{t.po, t.pa}
	}
	v, a := c.visit(t.h, t.o, -1, t.cond, t.reach, t.sum)
	c.flush()
	return w.storeResult(c, i, off, build, walkResult{v: v, a: a, count: c.count, reached: c.reached})
}

// storeResult stores worker c's result r of frontier subtree i: its
// nodes renumbered in place at offset off when the table is placed,
// copied when building.
func (w *tableWalker) storeResult(c *tableWalker, i int, off int64, build bool, r walkResult) error {
	switch {
	case w.placed:
		if err := w.renumberPlaced(c, i, off); err != nil {
			return err
		}
	case build:
		r.nodes = append([]Node(nil), c.nodes...)
	}
	w.results[i] = r
	return nil
}

// startTask resets worker c for frontier subtree i: its count, its
// nodes (written in place at the subtree's offset, returned, when the
// table is placed) and, building, its reached beliefs.
func (w *tableWalker) startTask(c *tableWalker, i int, build bool) (off int64) {
	c.count = 0
	c.nodes = c.nodes[:0]
	if w.placed {
		off = w.offs[i]
		c.nodes = w.nodes[off : off : off+w.sizes[i]]
	}
	c.reached = nil
	if build && w.reached != nil {
		c.reached = make([][]bpoint, w.bp.H+1)
	}
	return off
}

// renumberPlaced checks that worker c wrote subtree i in place, at
// offset off of the table, with its earlier walk's size, and shifts its
// nodes' ids and parents by off.
func (w *tableWalker) renumberPlaced(c *tableWalker, i int, off int64) error {
	if int64(len(c.nodes)) != w.sizes[i] || (len(c.nodes) > 0 && &c.nodes[0] != &w.nodes[off]) {
		return fmt.Errorf("internal error: subtree %d of the table walk has %d nodes, its earlier walk %d", i, len(c.nodes), w.sizes[i])
	}
	for k := range c.nodes {
		n := &c.nodes[k]
		n.ID += off
		if n.Parent >= 0 {
			n.Parent += off
		}
	}
	c.nodes = nil
	return nil
}

// walkTasks is the least number of frontier subtrees per worker of a
// parallel walk: enough for the subtrees' unequal sizes to even out.
const walkTasks = 16

// walkLevels is the sequential walk from the root (to the frontier, when
// there is one). The count starts at zero; replaying, the frontier
// results' counts are not added (walk adds them).
func (w *tableWalker) walkLevels(replay bool) tval {
	bp := w.bp
	w.count, w.over = 0, false
	if !w.placed {
		w.nodes = w.nodes[:0]
	}
	first := make([]float64, bp.O)
	bp.m.FirstObsProbs(first)
	return w.visitFirsts(first)
}

// visitFirsts visits the step-1 nodes of the observations of positive
// probability first[o], in order until the walk is over, and returns the
// sum of their values weighted by those probabilities.
func (w *tableWalker) visitFirsts(first []float64) tval {
	var tot tval
	for o, po := range first {
		if po == 0 {
			continue
		}
		v := w.visitFirst(o, po)
		tot.add(po, v)
		if w.over {
			break
		}
	}
	return tot
}

// visitFirst visits the step-1 node of observation o (probability po)
// and returns its values.
func (w *tableWalker) visitFirst(o int, po float64) tval {
	bp := w.bp
	bp.m.Prior(w.bel[1])
	bp.m.ObserveFirst(w.bel[1], o)
	v, _ := w.visit(1, o, -1, po, po, bp.bonus.Root)
	return v
}

// flush adds a worker's pending visits to the shared count and marks the
// walk over once the count passes the limit.
func (w *tableWalker) flush() {
	if w.shared == nil {
		return
	}
	if w.shared.Add(w.pending) > w.limit {
		w.over = true
	}
	w.pending = 0
}

func (t *tval) add(p float64, v tval) {
	t.r += p * v.r
	t.b += p * v.b
	t.out += p * v.out
	t.sum += p * v.sum
	t.lin += p * v.lin
	t.mc += p * v.mc
	t.sq += p * v.sq
	t.n += p * v.n
}

// visit evaluates the node (τ_{h−1}, o_h) with belief w.bel[h], reached
// with probability reach (cond given its parent) and running bonus sum
// sum. It returns the node's values and its action.
func (w *tableWalker) visit(h, o int, parent int64, cond, reach, sum float64) (tval, int) {
	bp := w.bp
	if h == w.frontier {
		return w.visitFrontier(h, o, parent, cond, reach, sum)
	}
	if !w.tick() {
		return tval{}, 0
	}
	end := o == bp.endObs
	a := w.action(h, w.bel[h], end)
	id := w.addNode(h, o, a, parent, reach, end)
	return w.valueNode(h, o, a, id, reach, sum, end)
}

// valueNode values node id of step h (action a) and, below step H, its
// children (expand). It returns the node's values (zero when only the
// tree's shape is wanted) and its action, or action 0 when the walk is
// over.
func (w *tableWalker) valueNode(h, o, a int, id int64, reach, sum float64, end bool) (tval, int) {
	bp, b := w.bp, w.bel[h]
	// Only the building walk's values are used: a count or a collecting
	// pass needs the tree's shape alone.
	values := w.build && !w.collect
	if !values && h == bp.H {
		return tval{}, a
	}
	v := tval{r: dot(bp.tab[h][a].r, b)}
	if h == bp.H {
		return w.leafValue(id, a, sum, v), a
	}
	if w.charge != nil {
		v.lin = dot(w.charge.vec(h, a, w.code(h, o)), b)
	}
	w.oa[h] = [2]int{o, a}
	v, fb, ok := w.expand(h, a, id, reach, sum, end, values, v)
	if !ok {
		return tval{}, 0
	}
	if !values {
		return tval{}, a
	}
	w.finish(id, v, fb)
	return v, a
}

// leafValue completes the values v of the step-H node id (action a,
// running sum sum) with its bonus, stores them and returns them.
func (w *tableWalker) leafValue(id int64, a int, sum float64, v tval) tval {
	v.b, v.sum = w.bp.bonus.Value(sum), sum
	w.finish(id, v, a)
	return v
}

// visitFrontier is visit at the frontier of a parallel walk: collecting,
// it records the node as a task; replaying, it takes the task's result
// (and, building, its nodes and reached beliefs) in the walk's order.
func (w *tableWalker) visitFrontier(h, o int, parent int64, cond, reach, sum float64) (tval, int) {
	if w.collect {
		w.collectTask(h, o, cond, reach, sum)
		return tval{}, 0
	}
	return w.takeResult(parent)
}

// takeResult takes the next task's result under parent: its values and
// action and, building, its reached beliefs and its nodes (in place
// when the table is placed).
func (w *tableWalker) takeResult(parent int64) (tval, int) {
	r := &w.results[w.next]
	w.next++
	w.takeReached(r)
	if w.placed {
		w.takePlaced(r, parent)
	} else {
		w.takeNodes(r, parent)
	}
	return r.v, r.a
}

// takeReached appends, building, the reached beliefs of result r to the
// walk's.
func (w *tableWalker) takeReached(r *walkResult) {
	if w.build && w.reached != nil {
		for t := range r.reached {
			w.reached[t] = append(w.reached[t], r.reached[t]...)
		}
	}
}

// takeNodes appends, building, the nodes of result r to the table under
// parent and lets the result's copies go.
func (w *tableWalker) takeNodes(r *walkResult, parent int64) {
	if w.build {
		w.appendSubtree(r.nodes, parent)
	}
	// The subtree is in w.nodes now: let its copy go.
	r.nodes, r.reached = nil, nil
}

// takePlaced links a subtree a worker wrote in place to parent and moves
// the replay's position past it.
func (w *tableWalker) takePlaced(r *walkResult, parent int64) {
	if r.count > 0 {
		w.nodes[w.pos].Parent = parent
	}
	w.pos += r.count
}

// collectTask records the frontier node (τ_{h−1}, o_h) as a task of the
// parallel walk.
func (w *tableWalker) collectTask(h, o int, cond, reach, sum float64) {
	// Every task is at least one row: past the limit the walk is
	// over, as counting the rows would find.
	if int64(len(w.tasks))+w.count+1 > w.limit {
		w.over = true
		return
	}
	t := walkTask{h: h, o: o, cond: cond, reach: reach, sum: sum, bel: append([]float64(nil), w.bel[h]...), above: w.count}
	if h > 1 {
		t.po, t.pa = w.oa[h-1][0], w.oa[h-1][1]
	}
	w.tasks = append(w.tasks, t)
}

// appendSubtree appends a frontier subtree's nodes (ids from 0, its root
// first with parent −1) to the table, renumbered after its rows, its
// root under parent.
func (w *tableWalker) appendSubtree(nodes []Node, parent int64) {
	off := int64(len(w.nodes))
	for _, n := range nodes {
		n.ID += off
		if n.Parent >= 0 {
			n.Parent += off
		} else {
			n.Parent = parent
		}
		w.nodes = append(w.nodes, n)
	}
}

// tick counts a visit against the limit (and the context, every 4096
// visits) and reports whether the walk goes on.
func (w *tableWalker) tick() bool {
	w.count++
	if w.shared != nil {
		if w.pending++; w.pending >= 1<<10 {
			w.flush()
		}
	} else if w.count > w.limit {
		w.over = true
	}
	if w.over || (w.count&0xfff == 0 && w.ctx.Err() != nil) {
		w.over = true
		return false
	}
	return true
}

// addNode numbers the node of step h, records its belief for the
// enrichment and, building, writes its row; it returns the row's id.
func (w *tableWalker) addNode(h, o, a int, parent int64, reach float64, end bool) int64 {
	bp, b := w.bp, w.bel[h]
	id := int64(len(w.nodes))
	if w.placed {
		id = w.pos
		w.pos++
	}
	if w.build && w.reached != nil && !w.collect {
		w.addReached(h, o, b, reach, end)
	}
	if w.build {
		w.writeRow(Node{ID: id, Parent: parent, Step: int32(h), Obs: bp.m.ObsVocab[o], Action: bp.m.ActVocab[a], ReachProb: reach})
	}
	return id
}

// addReached records the belief b of a step-h node reached with
// probability reach on observation o (the end symbol: end) for the
// enrichment.
func (w *tableWalker) addReached(h, o int, b []float64, reach float64, end bool) {
	w.reached[h] = append(w.reached[h], newPoint(b, reach, o, end))
}

// writeRow writes row n at its id in a placed table, appends it
// otherwise.
func (w *tableWalker) writeRow(n Node) {
	if w.placed {
		w.nodes[n.ID] = n
	} else {
		w.nodes = append(w.nodes, n)
	}
}

// expand visits the children of node id (step h < H, action a) that
// reach the threshold and values the others by rollouts of the
// controller, adding both into v (which holds the node's own reward). It
// returns v, the node's fallback action and false when the walk is over.
//
// Past wideObs observations (st.wide set) the children are found by the
// observation index: only the leading observations whose emission bound
// reaches the threshold are looked at, and those past them are valued by
// rollouts from observations drawn among them (tailRollouts), so a node
// costs O(kept·r + |A|·r) instead of O(|O|·|A|·r). For the fallback
// action the cut children are then priced as one set, at their mean
// belief.
func (w *tableWalker) expand(h, a int, id int64, reach, sum float64, end, values bool, v tval) (tval, int, bool) {
	bp, b := w.bp, w.bel[h]
	st := &bp.tab[h][a]
	s2 := sum
	if w.build { // the collecting pass hands the sums to the frontier tasks
		s2 += max(quad(st.m, b), 0)
	}
	x := expansion{h: h, a: a, id: id, st: st, reach: reach, s2: s2, values: values, v: v,
		pred: w.pred[h], weights: w.weights[h], acc: w.acc[h], set: w.set[h]}
	predict(st.t, b, x.pred)
	clear(x.weights)
	clear(x.acc)
	x.acts = bp.acts(end)
	x.wide = st.wide != nil
	scan, n := w.childScan(&x)
	if !w.expandChildren(&x, scan, n) {
		return tval{}, 0, false
	}
	if !values {
		return x.v, a, true
	}
	return x.v, w.fallback(&x), true
}

// expandChildren visits or cuts the node's first n children: the
// observations in scan on a wide node, 0..n−1 otherwise. It reports
// false when the walk is over.
func (w *tableWalker) expandChildren(x *expansion, scan []int32, n int) bool {
	for i := 0; i < n; i++ {
		o2 := i
		if x.wide {
			o2 = int(scan[i])
		}
		if !w.expandChild(x, o2) {
			return false
		}
	}
	return true
}

// expansion is expand's state at one node: the node's per-depth buffers
// and the sums over its children.
type expansion struct {
	h, a    int
	id      int64
	st      *stepTables
	reach   float64
	s2      float64 // the running bonus sum after the node's action
	values  bool    // the values are wanted, not the tree's shape alone
	wide    bool    // the children are found by the observation index
	acts    []int   // the fallback candidates
	pred    []float64
	weights []float64 // per action, the probability of the visited children playing it
	acc     []float64 // per fallback candidate, the cut children's sums
	set     []float64 // a wide node's cut children's belief mass, Σ z·b_o
	setMass float64   // their probability
	cut     bool      // some child was cut
	mc      tval      // the cut children's rollouts (unscaled sums)
	v       tval
}

// childScan returns the number of children to enumerate: on a wide
// node, the observations to look at (startWide, returned), otherwise
// every observation.
func (w *tableWalker) childScan(x *expansion) ([]int32, int) {
	if !x.wide {
		return nil, w.bp.O
	}
	scan := w.startWide(x)
	return scan, len(scan)
}

// startWide returns the observations of a wide node to look at
// (wideScan) and, when values are wanted, values the observations past
// them by rollouts.
func (w *tableWalker) startWide(x *expansion) []int32 {
	scan, setMass := w.wideScan(x.h, x.st, x.pred, x.reach, x.set)
	x.setMass = setMass
	x.cut = setMass > 0
	if x.values && setMass > 0 {
		// The observations past the scan, valued by rollouts.
		w.tailRollouts(x.h, x.a, x.pred, len(scan), x.reach*setMass, x.s2, &x.mc)
		x.v.out += setMass
	}
	return scan
}

// expandChild visits the child o2 of the node when it reaches the
// threshold and cuts it otherwise; it reports false when the walk is
// over.
func (w *tableWalker) expandChild(x *expansion, o2 int) bool {
	next := w.bel[x.h+1]
	z := correct(x.st.e, w.bp.O, x.pred, o2, next)
	if z == 0 {
		return true
	}
	if x.reach*z < w.eps {
		w.cut(x, o2, z, next)
		return true
	}
	return w.visitChild(x, o2, z)
}

// cut marks the child o2 (probability z, belief next) of the node cut
// and, when values are wanted, values it (cutChild).
func (w *tableWalker) cut(x *expansion, o2 int, z float64, next []float64) {
	x.cut = true
	if x.values {
		w.cutChild(x, o2, z, next)
	}
}

// visitChild visits the child o2 (probability z) of the node and adds
// its values and action weight to the node's; it reports false when the
// walk is over.
func (w *tableWalker) visitChild(x *expansion, o2 int, z float64) bool {
	cv, ca := w.visit(x.h+1, o2, x.id, z, x.reach*z, x.s2)
	if w.over {
		return false
	}
	x.v.add(z, cv)
	x.weights[ca] += z
	return true
}

// cutChild values the cut child o2 of probability z and belief next by
// rollouts and adds it to the fallback sums: on a wide node to the set
// priced at once (fallback), otherwise by its own stand-in.
func (w *tableWalker) cutChild(x *expansion, o2 int, z float64, next []float64) {
	w.rollouts(x.h+1, o2, next, x.reach*z, x.s2, &x.mc)
	x.v.out += z
	if x.wide {
		for s, y := range next {
			x.set[s] += z * y
		}
		x.setMass += z
		return
	}
	w.standIn(x.h, x.acts, next, z, x.s2, x.acc)
}

// fallback adds the cut children's rollouts to the node's values, prices
// a wide node's cut set at its mean belief, and returns the node's
// fallback action: the best stand-in when a child was cut, else the
// action the visited children play with the most probability (the
// node's own when none).
func (w *tableWalker) fallback(x *expansion) int {
	x.v.addRollouts(x.mc, x.reach)
	if x.setMass > 0 {
		for s := range x.set {
			x.set[s] /= x.setMass
		}
		w.standIn(x.h, x.acts, x.set, x.setMass, x.s2, x.acc)
	}
	if x.cut {
		return w.bestFallback(x.acts, x.acc)
	}
	return argmaxAbove(x.weights, 0, x.a)
}

// wideScan returns the observations of a wide node that may reach the
// threshold (sorted) and the probability of the others, whose belief
// mass it writes into set.
func (w *tableWalker) wideScan(h int, st *stepTables, pred []float64, reach float64, set []float64) ([]int32, float64) {
	thr := 0.0 // the whole tree: every observation
	if w.eps > 0 {
		thr = math.Inf(1)
		if reach > 0 {
			thr = w.eps / reach
		}
	}
	clear(set)
	scan, mass := st.wide.children(pred, thr, w.scan[h], set)
	w.scan[h] = scan
	return scan, mass
}

// addRollouts adds the rollouts' sums mc of a node reached with
// probability reach, scaled to values conditional on the node.
func (t *tval) addRollouts(mc tval, reach float64) {
	if mc.n <= 0 {
		return
	}
	t.add(1/(reach*rolloutDensity), mc) // mc.out is 0: rollouts leave no table
}

// finish stores the values v of node id and its fallback action fb (a
// leaf's is its own action).
func (w *tableWalker) finish(id int64, v tval, fb int) {
	if w.build {
		n := &w.nodes[id]
		n.Fallback = w.bp.m.ActVocab[fb]
		n.ValueReward, n.ValueBonus, n.ValueLCB = v.r, v.b, v.r-v.b
	}
}

// standIn adds, for every fallback candidate f, the cut child (belief cb
// over s_{h+1}, probability z) played with f from step h+1 to H: its
// expected rescaled reward-to-go w_f·cb (exact) and an upper bound of its
// expected bonus, min{α·sqrt(s2 + u_f·cb), 1} (Jensen: the bonus is
// concave in Σ and u_f·cb bounds the expected future terms; see
// fallbackTables), with the same bound of E[Σ].
func (w *tableWalker) standIn(h int, acts []int, cb []float64, z, s2 float64, acc []float64) {
	ft, t := w.ft, h+1
	for i, f := range acts {
		j := t*ft.A + f
		r := dot(ft.w[j], cb)
		sum := s2 + max(dot(ft.u[j], cb), 0)
		c := acc[4*i : 4*i+4]
		c[0] += z * r
		c[1] += z * w.bp.bonus.Value(sum)
		c[2] += z
		c[3] += z * sum
	}
}

// bestFallback picks the candidate with the largest stand-in value (ties
// to the first): the fallback_action of the node, which a reader of the
// table alone plays beyond it (the controller decides those histories).
func (w *tableWalker) bestFallback(acts []int, acc []float64) int {
	return acts[bestStandIn(len(acts), acc, 4)]
}

// rolloutDensity is the number of controller rollouts per unit of model
// probability that value the histories beyond the table: at most 2¹⁵ in
// all, so a Monte Carlo standard error of about 0.006 of the return range
// when half of the probability is beyond the table.
const rolloutDensity = 1 << 15

// rolloutRNG is the random stream of the rollouts from one cut child: a
// function of the child (its step, observation, belief, running sum and
// probability), so the values do not depend on the order of the walk or
// the worker count.
func rolloutRNG(h, o int, bel []float64, sum, mass float64) *rand.Rand {
	f := fnv.New64a()
	var buf [8]byte
	put := func(x uint64) {
		binary.LittleEndian.PutUint64(buf[:], x)
		f.Write(buf[:])
	}
	put(uint64(h))
	put(uint64(int64(o)))
	for _, x := range bel {
		put(math.Float64bits(x))
	}
	put(math.Float64bits(sum))
	put(math.Float64bits(mass))
	return rand.New(rand.NewPCG(f.Sum64(), 0x5eed))
}

// rolloutCount is the number of rollouts for a cut child of probability
// mass: mass·rolloutDensity, rounded up with the probability of its
// fraction (so its expectation is exact).
func rolloutCount(mass float64, rng *rand.Rand) int {
	x := mass * rolloutDensity
	n := int(x)
	if rng.Float64() < x-float64(n) {
		n++
	}
	return n
}

// rollouts values the cut child (τ_{h−1}, o_h) with belief bel over s_h,
// model probability mass and running bonus sum sum by rollouts of the
// controller under the model, adding the sums of their values into acc.
func (w *tableWalker) rollouts(h, o int, bel []float64, mass, sum float64, acc *tval) {
	rng := rolloutRNG(h, o, bel, sum, mass)
	for range rolloutCount(mass, rng) {
		w.rollout(h, o, bel, sum, rng, acc)
	}
}

// tailRollouts values the observations of a wide node past its scan (the
// first k of its index's order), of total probability mass, by rollouts
// from observations drawn among them: the next state s with probability
// ∝ pred(s)·tail(s), then o ∝ E(o|s) among the tail's observations (by
// rejection from the whole emission row, then by a scan of the tail).
func (w *tableWalker) tailRollouts(h, a int, pred []float64, k int, mass, sum float64, acc *tval) {
	bp := w.bp
	st := &bp.tab[h][a]
	S, O := bp.S, bp.O
	rng := rolloutRNG(h, -1-k, pred, sum, mass)
	n := rolloutCount(mass, rng)
	if n == 0 {
		return
	}
	tail := st.wide.tail[k*S : (k+1)*S]
	tot := w.tailWeights(pred, tail)
	if !(tot > 0) {
		return
	}
	cum := w.smp.cum[&st.e[0]]
	bel := make([]float64, S)
	for range n {
		s := drawWeighted(rng, w.rw, tot)
		o := st.drawTailObs(rng, cum[s*O:(s+1)*O], s, k, tail[s])
		if o < 0 || correct(st.e, O, pred, o, bel) == 0 {
			continue
		}
		w.rollout(h+1, o, bel, sum, rng, acc)
	}
}

// tailWeights sets w.rw to the states' weights pred(s)·tail(s) for the
// draw of a tail observation's state, and returns their sum.
func (w *tableWalker) tailWeights(pred, tail []float64) float64 {
	tot := 0.0
	for s, x := range pred {
		w.rw[s] = x * tail[s]
		tot += w.rw[s]
	}
	return tot
}

// drawWeighted draws an index with probability ∝ its weight, tot being
// the weights' sum (the last index when rounding leaves none).
func drawWeighted(rng *rand.Rand, weights []float64, tot float64) int {
	u := rng.Float64() * tot
	s := len(weights) - 1
	for i, x := range weights {
		if u < x {
			s = i
			break
		}
		u -= x
	}
	return s
}

// drawTailObs draws an observation o ∝ E(o|s) among the observations
// past the first k of the wide index's order (tailMass: their emission
// probability in state s), by rejection from the emission row (cum: its
// cumulative sums), then by a scan of the tail; −1 when none is drawn.
func (st *stepTables) drawTailObs(rng *rand.Rand, cum []float64, s, k int, tailMass float64) int {
	ix := st.wide
	for try := 0; try < 64; try++ {
		if c := search(cum, rng.Float64()); int(ix.pos[c]) >= k {
			return c
		}
	}
	return st.scanTail(rng.Float64()*tailMass, s, k, len(cum))
}

// scanTail returns the tail observation (past the first k of the wide
// index's order, O in all) at which u, uniform on the tail's emission
// probability in state s, falls; the last one of positive probability
// when rounding leaves none, −1 when there is none.
func (st *stepTables) scanTail(u float64, s, k, O int) int {
	o := -1
	for _, c := range st.wide.ord[k:] {
		if x := st.e[s*O+int(c)]; x > 0 {
			o = int(c)
			if u < x {
				break
			}
			u -= x
		}
	}
	return o
}

// rollout follows the controller from the history (…, o_h) with belief
// bel over s_h and running bonus sum sum to step H under the model,
// drawing the observations, and adds its expected rescaled reward-to-go
// (the reward of each step given the belief: lower variance, same mean),
// its bonus b̂ = min{α√Σ, 1} and Σ into acc.
func (w *tableWalker) rollout(h, o int, bel []float64, sum float64, rng *rand.Rand, acc *tval) {
	bp := w.bp
	b := w.rbel
	copy(b, bel)
	ret, lin := 0.0, 0.0
	c := w.code(h, o)
	for t := h; ; t++ {
		a := w.action(t, b, o == bp.endObs)
		st := &bp.tab[t][a]
		ret += dot(st.r, b)
		if t == bp.H {
			break
		}
		sum += max(quad(st.m, b), 0)
		if w.charge != nil {
			lin += dot(w.charge.vec(t, a, c), b)
		}
		predict(st.t, b, w.rpred)
		o2 := w.drawObs(rng, t, a, st)
		c, o = bp.codes.next(o, a, o2), o2
		if correct(st.e, bp.O, w.rpred, o, b) == 0 {
			break // not reached: o was drawn with positive probability
		}
	}
	acc.addRollout(ret, bp.bonus.Value(sum), sum, lin)
}

// drawObs draws a rollout's o_{t+1} after action a (tables st) from the
// prediction w.rpred: by the sampler on wide vocabularies, otherwise
// from the observation probabilities.
func (w *tableWalker) drawObs(rng *rand.Rand, t, a int, st *stepTables) int {
	if w.smp != nil {
		return w.smp.draw(rng, t, w.rpred, a)
	}
	O := w.bp.O
	w.rprobs = grow(w.rprobs, O)
	for i := range w.rprobs {
		w.rprobs[i] = emitProb(st.e, O, w.rpred, i)
	}
	return draw(rng, w.rprobs)
}

// addRollout adds a rollout of rescaled return ret, bonus bon, bonus
// sum sum and tangent sum lin to the sums acc.
func (acc *tval) addRollout(ret, bon, sum, lin float64) {
	x := ret - bon
	acc.r += ret
	acc.b += bon
	acc.sum += sum
	acc.lin += lin
	acc.mc += x
	acc.sq += x * x
	acc.n++
}

// table builds the policy's table within rows rows and returns the
// policy, its root values and the reach threshold. Under a fixed policy
// the reach probabilities of one step's histories sum to at most 1, so at
// most 1/ε of them reach ε: the threshold starts at the smallest ε = 2^−k
// with Σ_h min(|O|^h, 1/ε) ≤ rows (0 when the whole tree fits), which
// always fits. It is then lowered by 2^−j while a count of the rows it
// keeps (stopping at the budget) still fits, j extrapolated from the
// growth of the count per halving (aiming at 90% of the budget, halved
// after a miss), refineSteps counts at most.
func (w *tableWalker) table(ctx context.Context, rows int64) (*Policy, tval, float64, error) {
	w.setController(rows)
	eps, err := w.refine(ctx, rows)
	if err != nil {
		return nil, tval{}, 0, err
	}
	v := w.walk(ctx, eps, math.MaxInt64, true)
	if err := cmp.Or(w.err, ctx.Err()); err != nil {
		return nil, tval{}, 0, err
	}
	return w.takePolicy(), v, eps, nil
}

// takePolicy returns the policy of the built table and its controller.
func (w *tableWalker) takePolicy() *Policy {
	// The walker is done: the policy takes its nodes.
	levelOrder(w.nodes) // rows in level order: policy.arrow's lookup index
	pol := &Policy{Horizon: w.bp.H, Nodes: w.nodes, Ctrl: w.ctrl}
	w.nodes = nil
	return pol
}

// setController sets the controller the table is the tree of (with the
// one-step lookahead at the steps where a table of up to rows rows
// affords it) and, on wide vocabularies, the rollouts' observation
// sampler.
func (w *tableWalker) setController(rows int64) {
	dec := w.bp
	if w.dec != nil {
		dec = w.dec
	}
	w.ctrl = newController(dec, dec.lookaheadSteps(rows))
	w.cx = w.ctrl.newScratch()
	if w.bp.O > wideObs {
		first := make([]float64, w.bp.O)
		w.bp.m.FirstObsProbs(first)
		w.smp = newObsSampler(w.bp.m, first)
	}
}

// lookaheadSteps marks the steps 1..H where the one-step lookahead is
// affordable on a table of up to rows rows (lookaheadMaxCost,
// lookaheadTotal).
func (bp *beliefPlanner) lookaheadSteps(rows int64) []bool {
	nodes := math.Min(float64(rows), treeRows(bp.O, bp.H))
	look := make([]bool, bp.H+1)
	for h := 1; h <= bp.H; h++ {
		c := float64(bp.lookaheadCost(h))
		look[h] = c <= lookaheadMaxCost && c*nodes <= lookaheadTotal
	}
	return look
}

// refine returns the reach threshold of the table: the guaranteed one
// (startThreshold), lowered by 2^−j while a count of the rows it keeps
// still fits rows (see table).
func (w *tableWalker) refine(ctx context.Context, rows int64) (float64, error) {
	r := refinement{eps: startThreshold(w.bp.O, w.bp.H, rows), growth: 2, j: 1}
	for i := 0; i < refineSteps && r.eps > 0 && r.j >= 1; i++ {
		try := halved(r.eps, r.j)
		w.walk(ctx, try, rows, false)
		if err := cmp.Or(w.err, ctx.Err()); err != nil {
			return 0, err
		}
		if w.over {
			r.j /= 2
			continue
		}
		r.keep(try, float64(w.count), rows)
	}
	return r.eps, nil
}

// refinement is refine's state: the threshold kept so far, its count c,
// the count's growth per halving and the next exponent j.
type refinement struct {
	eps, c, growth float64
	j              int
}

// keep keeps the threshold try, whose count n fits rows, and sets the
// next exponent from the count's growth.
func (r *refinement) keep(try, n float64, rows int64) {
	r.growth = growthPer(r.c, n, r.j, r.growth)
	r.eps, r.c = try, n
	r.j = nextStep(r.j, r.growth, float64(rows), n)
}

// halved is ε·2^−j, 0 below 1e-300.
func halved(eps float64, j int) float64 {
	try := math.Ldexp(eps, -j)
	if try < 1e-300 {
		try = 0
	}
	return try
}

// growthPer is the growth of the row count per halving from c to n rows
// over j halvings, or growth unchanged when there is no earlier count or
// the count did not grow.
func growthPer(c, n float64, j int, growth float64) float64 {
	if c > 0 && n > c {
		return math.Pow(n/c, 1/float64(j))
	}
	return growth
}

// nextStep is the next exponent of refine's halving after a count of n
// rows at exponent j: doubled while the count does not grow, else
// extrapolated from growth, the count's growth per halving, to 90% of
// rows.
func nextStep(j int, growth, rows, n float64) int {
	if growth <= 1.0001 {
		return j * 2
	}
	return max(1, int(math.Log(0.9*rows/n)/math.Log(growth)))
}

// refineSteps bounds the counts that lower the table threshold past the
// guaranteed one (each costs at most the row budget in nodes).
const refineSteps = 6

// treeRows is Σ_{h=1}^H |O|^h, the most rows a policy's tree can have.
func treeRows(O, H int) float64 {
	n := 0.0
	for h := 1; h <= H; h++ {
		n += math.Pow(float64(O), float64(h))
	}
	return n
}

// startThreshold is the smallest ε = 2^−k (or 0) for which the bound
// Σ_{h=1}^H min(|O|^h, 1/ε) on the table's rows fits rows (step 1 is
// always kept whole).
func startThreshold(O, H int, rows int64) float64 {
	if rowBound(O, H, 0) <= float64(rows) {
		return 0
	}
	eps := 1.0
	for k := 0; k < 1000 && rowBound(O, H, eps/2) <= float64(rows); k++ {
		eps /= 2
	}
	return eps
}

// rowBound is Σ_{h=1}^H min(|O|^h, 1/ε), step 1 whole (ε = 0: no
// threshold): the most rows a table of threshold ε can have.
func rowBound(O, H int, eps float64) float64 {
	n := 0.0
	for h := 1; h <= H; h++ {
		c := math.Pow(float64(O), float64(h))
		if eps > 0 && h > 1 {
			c = math.Min(c, 1/eps)
		}
		n += c
	}
	return n
}
