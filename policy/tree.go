package policy

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// Node is one decision node of a history-dependent policy: the history
// o_1,a_1,…,o_h that leads to it is the path from the root, and Action is
// what the policy takes there. One Node is one row of policy.arrow.
type Node struct {
	ID       int64  // "node": its index in Policy.Nodes
	Parent   int64  // "parent": −1 at step 1
	Step     int32  // "step": h, 1-based
	Obs      string // "observation": o_h, the user's symbol
	Action   string // "action": a_h, the user's symbol
	Fallback string // "fallback_action": used for every later step once a history leaves the tree

	ReachProb   float64 // "reach_prob": P_θ̂^π̄ of reaching the node
	ValueReward float64 // "value_reward": E_θ̂,π̄[R | node], R rescaled to [0,1]
	ValueBonus  float64 // "value_bonus": E_θ̂,π̄[b̂ | node]
	ValueLCB    float64 // "value_lcb": value_reward − value_bonus
}

// MaxRows is the most rows a policy table may hold (the child index
// numbers them in 32 bits, four bytes a row where 64 bits took eight).
const MaxRows = math.MaxInt32 - 2

// Policy is a deterministic history-dependent policy as a tree of decision
// nodes. Nodes are ordered so that a parent precedes its children and
// Nodes[i].ID == i.
type Policy struct {
	Horizon int
	Nodes   []Node
	// Ctrl, when set, is the policy for every history (the belief
	// planner's controller): Nodes is then its most probable decisions,
	// and a history that leaves them continues with Ctrl, not with the
	// fallback_action (see Cursor).
	Ctrl *Controller
	// Probs, when set, makes the policy stochastic: Probs[i] is the
	// probability π(a | τ, o) that the policy takes row i's action at
	// the row's history (column "probability"). The rows that share a
	// parent and an observation are then the actions the policy may take
	// there, their probabilities summing to one, and each row's children
	// continue the history with its action. nil: every row has
	// probability one and no two rows share a parent and an observation.
	// A stochastic policy has no controller.
	Probs []float64

	// The child index (built on first use): the children of node k
	// (k = −1 for step 1) are kids[first[k+1]:first[k+2]], sorted by
	// observation, then by row. Four to eight bytes per node, where a
	// map would take several times that on tables of millions of rows.
	first []int32
	kids  []int32
}

// index builds the child index on first use.
func (p *Policy) index() {
	if p.first != nil {
		return
	}
	n := len(p.Nodes)
	if n > MaxRows {
		panic(fmt.Sprintf("policy: %d rows, more than the %d a table may hold", n, MaxRows))
	}
	first, kids := groupRows(n, func(i int) int64 { return p.Nodes[i].Parent + 1 })
	p.sortGroups(first, kids, n)
	p.first, p.kids = first, kids
}

// sortGroups sorts each of the n+1 groups of rows kids[first[k]:first[k+1]]
// by observation.
func (p *Policy) sortGroups(first, kids []int32, n int) {
	for k := 0; k <= n; k++ {
		p.sortByObs(kids[first[k]:first[k+1]])
	}
}

// sortByObs sorts the rows seg by observation, then row.
func (p *Policy) sortByObs(seg []int32) {
	slices.SortFunc(seg, func(a, b int32) int {
		return cmp.Or(strings.Compare(p.Nodes[a].Obs, p.Nodes[b].Obs), cmp.Compare(a, b))
	})
}

// Child returns the node reached from parent (−1 for the root level) on
// observation obs, and whether it exists. Should two children share the
// observation (a stochastic policy's actions, or a deterministic policy
// that ReadFile would refuse), the later row wins.
func (p *Policy) Child(parent int64, obs string) (int64, bool) {
	rows := p.rowsWithObs(parent, obs)
	if len(rows) == 0 {
		return 0, false
	}
	return int64(rows[len(rows)-1]), true
}

// rowsWithObs returns the rows under parent (−1 for the root level) whose
// observation is obs: one row at most in a deterministic policy, one per
// action the policy may take in a stochastic one.
func (p *Policy) rowsWithObs(parent int64, obs string) []int32 {
	p.index()
	if parent < -1 || parent >= int64(len(p.Nodes)) {
		return nil
	}
	seg := p.kids[p.first[parent+1]:p.first[parent+2]]
	lo, _ := slices.BinarySearchFunc(seg, obs, func(id int32, o string) int { return strings.Compare(p.Nodes[id].Obs, o) })
	hi := lo
	for hi < len(seg) && p.Nodes[seg[hi]].Obs == obs {
		hi++
	}
	return seg[lo:hi]
}

// Cursor follows one episode through the policy with the lookup rule of the
// policy file contract: at step 1 take the row with parent −1 and the first
// observation; at step h the child of the current node whose observation is
// o_h; when no such row exists, act from then on with the fallback_action of
// the last node found. A policy with a controller (Policy.Ctrl) continues
// with the controller instead, which agrees with the rows where they exist
// and is defined for every history; the fallback_action then serves only
// histories the model gives probability 0. It is the one implementation of
// that rule, shared by serving (act), evaluation and the reports. A Cursor
// may be copied to branch an episode: the copies share working memory
// (so must not be used concurrently) but no state.
type Cursor struct {
	p        *Policy
	node     int64  // current node, −1 before the first observation
	fallback string // set once the history has left the tree
	left     bool
	cs       ctrlState // the controller's filter (Ctrl set)
	x        *cursorScratch
}

// cursorScratch is a Cursor's working memory, shared by its copies.
type cursorScratch struct {
	pred []float64
	cx   *ctrlScratch
}

// NewCursor starts an episode.
func (p *Policy) NewCursor() *Cursor { return &Cursor{p: p, node: -1} }

// Act takes the next observation o_h and returns the action a_h and the node
// used (−1 once the history has left the tree). ok is false only when the
// very first observation has no row (and, with a controller, the model
// cannot follow it either), in which case there is no fallback either;
// callers treat that as "no action known". On a stochastic policy Act
// plays the most probable action (the first of equals); callers that
// follow the policy's distribution use Choices, Take or Sample.
func (c *Cursor) Act(obs string) (action string, node int64, ok bool) {
	ctrl := c.p.Ctrl
	follows := ctrl != nil && c.filter(ctrl, obs)
	action, node, ok = c.treeAct(obs)
	if follows && node < 0 {
		a := ctrl.decide(c.cs.h, c.cs.bel, ctrl.obs[obs] == ctrl.bp.endObs, c.x.cx)
		action, ok = ctrl.bp.m.ActVocab[a], true
	}
	if follows {
		c.played(ctrl, action)
	}
	return action, node, ok
}

// filter advances the controller's filter by obs and reports whether
// the model follows the history.
func (c *Cursor) filter(ctrl *Controller, obs string) bool {
	if c.x == nil {
		c.x = &cursorScratch{pred: make([]float64, ctrl.bp.S), cx: ctrl.newScratch()}
	}
	var follows bool
	c.cs, follows = ctrl.step(c.cs, obs, c.x.pred)
	return follows
}

// played records action as the action taken in the filter, which loses
// the history when the model does not know it.
func (c *Cursor) played(ctrl *Controller, action string) {
	if a, known := ctrl.act[action]; known {
		c.cs.a = a
	} else {
		c.cs = ctrlState{lost: true}
	}
}

// treeAct is the rule of the rows and their fallback_action.
func (c *Cursor) treeAct(obs string) (action string, node int64, ok bool) {
	if c.left {
		return c.fallback, -1, true
	}
	id, found := c.p.Child(c.node, obs)
	if c.p.Stochastic() {
		id, found = c.p.mode(c.node, obs)
	}
	if !found {
		return c.leave()
	}
	c.node = id
	return c.p.Nodes[id].Action, id, true
}

// mode is the row of the most probable action under parent on
// observation obs (the first of equals), and whether there is one.
func (p *Policy) mode(parent int64, obs string) (int64, bool) {
	best := int64(-1)
	for _, r := range p.rowsWithObs(parent, obs) {
		if best < 0 || p.Probs[r] > p.Probs[best] {
			best = int64(r)
		}
	}
	return best, best >= 0
}

// leave moves the cursor out of the tree at an observation its node has
// no child for and returns the node's fallback action; it is false at
// the root, where there is none.
func (c *Cursor) leave() (action string, node int64, ok bool) {
	if c.node < 0 {
		return "", -1, false
	}
	c.left = true
	c.fallback = c.p.Nodes[c.node].Fallback
	return c.fallback, -1, true
}

// Lookup returns the action for the observation history obs[0..h-1] (the
// actions in between are the policy's own, so only observations matter).
func (p *Policy) Lookup(obs []string) (action string, node int64, ok bool) {
	c := p.NewCursor()
	for _, o := range obs {
		action, node, ok = c.Act(o)
		if !ok {
			return "", -1, false
		}
	}
	return action, node, ok
}

// levelOrder renumbers nodes in place in level order: the step-1 rows
// first, then the children of each row in the order of their parents,
// siblings in their present order. Parents then never decrease along the
// rows, which the lookup index of policy.arrow (MetaBatchIndex) needs.
// Node ids must equal the row indices and parents precede children.
func levelOrder(nodes []Node) {
	n := len(nodes)
	start, kids := childIndex(nodes)
	order := levelOrderOf(start, kids, n)
	newID := start[:n] // reuse: newID[old] = new
	for pos, old := range order {
		newID[old] = int32(pos)
	}
	renumber(nodes, newID)
	permuteNodes(nodes, newID)
}

// renumber sets every node's id and parent id to their new ids
// (newID[old]).
func renumber(nodes []Node, newID []int32) {
	for i := range nodes {
		nodes[i].ID = int64(newID[i])
		if p := nodes[i].Parent; p >= 0 {
			nodes[i].Parent = int64(newID[p])
		}
	}
}

// levelOrderOf is the level order of the old ids of n rows with
// children kids[start[p]:start[p+1]] (childIndex): the roots, then each
// listed row's children in turn (a breadth-first queue over the order
// itself).
func levelOrderOf(start, kids []int32, n int) []int32 {
	order := make([]int32, 0, n)
	order = append(order, kids[start[n]:start[n+1]]...)
	for q := 0; q < len(order); q++ {
		o := order[q]
		order = append(order, kids[start[o]:start[o+1]]...)
	}
	return order
}

// childIndex lists the children of each row, by a counting sort on the
// parent (row n stands for the parent −1): the children of row p are
// kids[start[p]:start[p+1]], in row order.
func childIndex(nodes []Node) (start, kids []int32) {
	n := len(nodes)
	return groupRows(n, func(i int) int64 {
		if p := nodes[i].Parent; p >= 0 {
			return p
		}
		return int64(n)
	})
}

// groupRows groups the rows 0..n−1 by key(i) ∈ [0, n] by a counting sort
// (rows whose key falls outside are left out): the rows of key k are
// kids[start[k]:start[k+1]], in row order.
func groupRows(n int, key func(i int) int64) (start, kids []int32) {
	start = keyStarts(n, key)
	kids = make([]int32, start[n+1])
	next := append([]int32(nil), start[:n+1]...)
	for i := 0; i < n; i++ {
		if k := key(i); k >= 0 && k <= int64(n) {
			kids[next[k]] = int32(i)
			next[k]++
		}
	}
	return start, kids
}

// keyStarts counts the rows of each key in 0..n (other keys are left
// out) and returns where each key's group starts in the grouped order:
// start[k] for key k, start[n+1] the rows grouped.
func keyStarts(n int, key func(i int) int64) []int32 {
	start := make([]int32, n+2)
	for i := 0; i < n; i++ {
		if k := key(i); k >= 0 && k <= int64(n) {
			start[k+1]++
		}
	}
	for k := 1; k < len(start); k++ {
		start[k] += start[k-1]
	}
	return start
}

// permuteNodes moves every row i to its new index newID[i], following
// the permutation's cycles (newID ends as the identity).
func permuteNodes(nodes []Node, newID []int32) {
	// Move every row to its new index, following the permutation's cycles.
	for i := range nodes {
		for int(newID[i]) != i {
			j := newID[i]
			nodes[i], nodes[j] = nodes[j], nodes[i]
			newID[i], newID[j] = newID[j], newID[i]
		}
	}
}

// Stochastic says whether the policy gives probabilities to its rows
// (Policy.Probs), so that a history may have more than one action.
func (p *Policy) Stochastic() bool { return p.Probs != nil }

// Prob is the probability of row i's action at its history: Probs[i],
// or 1 for a deterministic policy.
func (p *Policy) Prob(i int64) float64 {
	if p.Probs == nil {
		return 1
	}
	return p.Probs[i]
}

// Choice is one action a policy may take at a history: the action, its
// probability and its row (−1 once the history has left the tree).
type Choice struct {
	Action string
	Prob   float64
	Node   int64
}

// Choices returns the actions the policy may take on the next observation
// obs, with their probabilities, without moving the cursor. A
// deterministic policy (or a history that has left the tree) has one
// choice of probability one, the action Act returns. ok is as for Act.
func (c *Cursor) Choices(obs string) (choices []Choice, ok bool) {
	if !c.p.Stochastic() || c.left {
		cc := *c
		a, node, ok := cc.Act(obs)
		if !ok {
			return nil, false
		}
		return []Choice{{Action: a, Prob: 1, Node: node}}, true
	}
	rows := c.p.rowsWithObs(c.node, obs)
	if len(rows) == 0 {
		if c.node < 0 {
			return nil, false
		}
		return []Choice{{Action: c.p.Nodes[c.node].Fallback, Prob: 1, Node: -1}}, true
	}
	choices = make([]Choice, len(rows))
	for i, r := range rows {
		choices[i] = Choice{Action: c.p.Nodes[r].Action, Prob: c.p.Probs[r], Node: int64(r)}
	}
	return choices, true
}

// Take moves the cursor by the next observation obs and the action taken
// there, and returns the probability the policy gives that action (0
// when it never takes it: the cursor then has left the policy and must
// not be used further). ok is as for Act.
func (c *Cursor) Take(obs, action string) (prob float64, ok bool) {
	if !c.p.Stochastic() || c.left {
		a, _, ok := c.Act(obs)
		if !ok {
			return 0, false
		}
		if a != action {
			return 0, true
		}
		return 1, true
	}
	rows := c.p.rowsWithObs(c.node, obs)
	if len(rows) == 0 {
		a, _, ok := c.leave()
		if !ok {
			return 0, false
		}
		if a != action {
			return 0, true
		}
		return 1, true
	}
	for _, r := range rows {
		if c.p.Nodes[r].Action == action {
			c.node = int64(r)
			return c.p.Probs[r], true
		}
	}
	c.left, c.fallback = true, c.p.Nodes[rows[0]].Fallback
	return 0, true
}

// Sample moves the cursor by the next observation obs with an action
// drawn from the policy's choices there: the first whose cumulative
// probability exceeds u ∈ [0, 1) (the last, should rounding leave u
// above them all). It returns the action, its row (−1 outside the tree)
// and ok as Act does; for a deterministic policy it is Act.
func (c *Cursor) Sample(obs string, u float64) (action string, node int64, ok bool) {
	if !c.p.Stochastic() || c.left {
		return c.Act(obs)
	}
	choices, ok := c.Choices(obs)
	if !ok {
		return "", -1, false
	}
	k := len(choices) - 1
	cum := 0.0
	for i, ch := range choices {
		cum += ch.Prob
		if u < cum {
			k = i
			break
		}
	}
	c.Take(obs, choices[k].Action)
	return choices[k].Action, choices[k].Node, true
}

// Draw moves the cursor by the next observation obs with the policy's
// action there and returns it with its row (−1 outside the tree), its
// probability and ok as Act does. A stochastic policy's action is drawn
// with one number from rng (Sample); a deterministic policy's is Act's,
// with probability one, and draws none, so that its figures do not
// depend on the random stream (rng may then be nil).
func (c *Cursor) Draw(obs string, rng *rand.Rand) (action string, node int64, prob float64, ok bool) {
	if !c.p.Stochastic() {
		action, node, ok = c.Act(obs)
		return action, node, 1, ok
	}
	action, node, ok = c.Sample(obs, rng.Float64())
	prob = 1 // past the rows: their fallback action, for certain
	if node >= 0 {
		prob = c.p.Probs[node]
	}
	return action, node, prob, ok
}
