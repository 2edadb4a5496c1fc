package report

import (
	"container/heap"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/policy"
)

// DefaultPolicyRows is how many decision nodes of π̄ the report and
// `inspect --policy` show: the most probable ones under the model. A few
// hundred rows read in a minute and cover most of the reach mass of
// small problems; policy.arrow has every node.
const DefaultPolicyRows = 300

// ReturnRange is the logged range of returns that maps the user's units to
// the paper's [0,1] scale: R = (return − Min)/(Max − Min).
type ReturnRange struct{ Min, Max float64 }

// ToGo converts a node's rescaled reward-to-go from step h (of H) into the
// user's units: every step contributes Min/H of the shift.
func (r ReturnRange) ToGo(v float64, h, H int) float64 {
	return v*(r.Max-r.Min) + r.Min*float64(H-h+1)/float64(H)
}

// PolicyRow is one decision node of π̄ as the report shows it.
type PolicyRow struct {
	Node, Parent int64
	Step         int
	// History is τ_{h−1} followed by o_h: "o_1 a_1 … o_h" in the user's
	// symbols, the path from the root to this node.
	History []string
	Obs     string
	Action  string
	// Prob is the probability the policy takes Action at the history
	// (policy.Policy.Prob: 1 for a deterministic policy).
	Prob float64
	// Reach is P_θ̂^π̄ of reaching the node (the model's share of episodes
	// under π̄).
	Reach float64
	// Logged is the number of logged episodes whose history so far
	// follows π̄ into this node; ActionShare the share of them that took
	// Action there and MostLogged the action they took most (Logs false:
	// no logs were given).
	Logs        bool
	Logged      int64
	LoggedShare float64 // Logged / K
	ActionShare float64
	MostLogged  string
	MostShare   float64 // share of the logged visits that took MostLogged
	// Departs says the logs clearly favour MostLogged over Action here
	// (clearlyMore).
	Departs bool
	// Value to go from this step in the user's units: model reward, bonus
	// (a penalty in the same units) and their difference.
	Value, Bonus, LCB float64
}

// PolicyView is the part of π̄'s decision tree the report lists.
type PolicyView struct {
	Rows       []PolicyRow
	TotalNodes int
	Horizon    int
	// Stochastic says the policy gives its rows probabilities: the rows
	// under one parent with one observation are the actions it may take
	// there (policy.Policy.Probs).
	Stochastic bool
}

// row describes node id; v may be nil (no logged columns).
func row(pol *policy.Policy, id int64, rng ReturnRange, v *policy.Visits) PolicyRow {
	n := &pol.Nodes[id]
	h := int(n.Step)
	r := PolicyRow{
		Node: id, Parent: n.Parent, Step: h, Obs: n.Obs, Action: n.Action, Prob: pol.Prob(id), Reach: n.ReachProb, History: history(pol, id),
		Value: rng.ToGo(n.ValueReward, h, pol.Horizon),
		Bonus: n.ValueBonus * (rng.Max - rng.Min),
	}
	r.LCB = r.Value - r.Bonus
	r.ActionShare = math.NaN()
	if v != nil {
		r.addVisits(v, n.Action)
	}
	return r
}

// history is node id's path from the root: o_1 a_1 … o_h.
func history(pol *policy.Policy, id int64) []string {
	var hist []string
	for j := id; j >= 0; j = pol.Nodes[j].Parent {
		if j != id {
			hist = append(hist, pol.Nodes[j].Action)
		}
		hist = append(hist, pol.Nodes[j].Obs)
	}
	slices.Reverse(hist)
	return hist
}

// addVisits fills the row's logged columns from v; action is the
// policy's action at the node.
func (r *PolicyRow) addVisits(v *policy.Visits, action string) {
	id := r.Node
	r.Logs = true
	r.Logged = v.N[id]
	r.LoggedShare = float64(v.N[id]) / float64(max(v.K, 1))
	if v.N[id] == 0 {
		return
	}
	r.ActionShare = float64(v.Count(id, action)) / float64(v.N[id])
	r.MostLogged = v.MostLogged(id)
	r.MostShare = float64(v.Count(id, r.MostLogged)) / float64(v.N[id])
	r.Departs = r.Prob == 1 && r.MostLogged != action && clearlyMore(v.Count(id, r.MostLogged), v.Count(id, action))
}

// NewPolicyView lists the top most probable nodes of pol (all when top ≤
// 0) in tree order, each under its parent, siblings by decreasing reach.
// v may be nil (no logged columns).
func NewPolicyView(pol *policy.Policy, rng ReturnRange, v *policy.Visits, top int) *PolicyView {
	view := &PolicyView{TotalNodes: len(pol.Nodes), Horizon: pol.Horizon, Stochastic: pol.Stochastic()}
	keep := topNodes(pol, top)
	children := map[int64][]int64{}
	for i := range pol.Nodes {
		if keep[i] {
			children[pol.Nodes[i].Parent] = append(children[pol.Nodes[i].Parent], int64(i))
		}
	}
	var walk func(parent int64)
	walk = func(parent int64) {
		ids := children[parent]
		sortSiblings(pol, ids)
		for _, id := range ids {
			view.Rows = append(view.Rows, row(pol, id, rng, v))
			walk(id)
		}
	}
	walk(-1)
	return view
}

// sortSiblings orders sibling nodes by decreasing reach, then by
// observation. The rows of a stochastic policy that share the
// observation stay together: by the reach of their observation (the
// sum of theirs), then by decreasing probability.
func sortSiblings(pol *policy.Policy, ids []int64) {
	reach := siblingReach(pol, ids)
	sort.SliceStable(ids, func(a, b int) bool {
		na, nb := &pol.Nodes[ids[a]], &pol.Nodes[ids[b]]
		if ra, rb := reach(na), reach(nb); ra != rb {
			return ra > rb
		}
		if na.Obs != nb.Obs {
			return na.Obs < nb.Obs
		}
		return pol.Prob(ids[a]) > pol.Prob(ids[b])
	})
}

// siblingReach is the reach sortSiblings orders the siblings ids by: a
// node's own, or in a stochastic policy the sum over the siblings with
// its observation.
func siblingReach(pol *policy.Policy, ids []int64) func(n *policy.Node) float64 {
	if !pol.Stochastic() {
		return func(n *policy.Node) float64 { return n.ReachProb }
	}
	byObs := map[string]float64{}
	for _, id := range ids {
		byObs[pol.Nodes[id].Obs] += pol.Nodes[id].ReachProb
	}
	return func(n *policy.Node) float64 { return byObs[n.Obs] }
}

// topNodes marks the top nodes of largest reach probability together with
// their ancestors (a child is never more probable than its parent, so the
// ancestors are almost always in the set already).
func topNodes(pol *policy.Policy, top int) []bool {
	keep := make([]bool, len(pol.Nodes))
	if top <= 0 || top >= len(pol.Nodes) {
		for i := range keep {
			keep[i] = true
		}
		return keep
	}
	for _, i := range mostReached(pol.Nodes, top) {
		for j := int64(i); j >= 0 && !keep[j]; j = pol.Nodes[j].Parent {
			keep[j] = true
		}
	}
	return keep
}

// mostReached is the top nodes by reach (ties to the earlier node): a
// heap of the best top seen so far, its worst node at the root, so the
// cost is O(n log top) on tables of millions of rows.
func mostReached(nodes []policy.Node, top int) []int {
	h := &reachHeap{nodes: nodes}
	for i := range nodes {
		if len(h.idx) < top {
			heap.Push(h, i)
		} else if nodes[i].ReachProb > nodes[h.idx[0]].ReachProb {
			h.idx[0] = i
			heap.Fix(h, 0)
		}
	}
	return h.idx
}

// reachHeap is a min-heap of node indices by reach, the later node
// first among equal reaches (it is the one a stable sort ranks lower).
type reachHeap struct {
	nodes []policy.Node
	idx   []int
}

func (h *reachHeap) Len() int { return len(h.idx) }
func (h *reachHeap) Less(a, b int) bool {
	ra, rb := h.nodes[h.idx[a]].ReachProb, h.nodes[h.idx[b]].ReachProb
	if ra != rb {
		return ra < rb
	}
	return h.idx[a] > h.idx[b]
}
func (h *reachHeap) Swap(a, b int) { h.idx[a], h.idx[b] = h.idx[b], h.idx[a] }
func (h *reachHeap) Push(x any)    { h.idx = append(h.idx, x.(int)) }
func (h *reachHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}

// clearlyMore says a count a is clearly above b among the a+b visits that
// took one of the two actions: a − b > 2·√(a+b). If both actions were
// equally likely, a − b would have mean 0 and standard deviation √(a+b),
// so a uniform behaviour rarely (about 2% of nodes) shows a clear
// favourite. A reading aid against calling a near-tie a departure, not a
// test corrected for the choice of the most logged action.
func clearlyMore(a, b int64) bool {
	return float64(a-b) > 2*math.Sqrt(float64(a+b))
}

// HistoryString joins a node's history for display: "o_1 → a_1 → o_2".
func (r PolicyRow) HistoryString() string { return strings.Join(r.History, " → ") }

// Departure is a decision node where π̄ takes another action than the one
// most logged there.
type Departure struct {
	Row PolicyRow
	// Gain is V_R(π̄) − V_R(π̄ with the most logged action at this node),
	// in the user's units: how much of the model's expected return this
	// departure brings (NaN when not computed).
	Gain float64
}

// Comparison is the "compared with the behaviour" paragraph: where π̄
// departs from the most logged action, and what that brings under the
// model.
type Comparison struct {
	Departures []Departure
	// DepartMass is the model's probability under π̄ that an episode
	// meets at least one departure (sum of the reach of the first
	// departures on each path).
	DepartMass float64
	// Steps lists the steps with a departure.
	Steps []int
	// Gain is V_R(π̄) − V_R(π̄ with the most logged action at every
	// logged node) in the user's units (NaN when not computed), Total the
	// model's expected gain of π̄ over the behaviour's logged mean return.
	Gain, Total float64
	// Checked is the number of departures whose gain was computed.
	Checked int
	// Ties counts the logged nodes where another action was logged more
	// often than π̄'s, but not clearly (clearlyMore); Agree those where
	// π̄ takes the most logged action.
	Ties, Agree int
}

// Departures lists where π̄ departs from the most logged action at the
// nodes the logs visit (v), with the model's share of episodes that meet
// one; modelValue is V_{θ̂,R}^π̄ on the [0,1] scale (the headline's, which
// the policy table's values need not be: a clone's rows hold logged
// estimates, and its unlogged first rows NaN) and behaviourUnits the
// behaviour's mean return in the user's units. The gains of undoing
// departures (Departure.Gain, Comparison.Gain) are the pipeline's to
// evaluate; they are NaN here.
func Departures(m *estimate.Model, pol *policy.Policy, v *policy.Visits, modelValue, behaviourUnits float64) *Comparison {
	rng := ReturnRange{m.ReturnMin, m.ReturnMax}
	c := &Comparison{Gain: math.NaN()}
	t := departureTest{pol, v}
	steps := map[int]bool{}
	for id := range pol.Nodes {
		if !t.departs(int64(id)) {
			t.tally(c, int64(id))
			continue
		}
		r := row(pol, int64(id), rng, v)
		c.Departures = append(c.Departures, Departure{Row: r, Gain: math.NaN()})
		steps[r.Step] = true
		if t.firstOnPath(r.Parent) {
			c.DepartMass += r.Reach
		}
	}
	for h := range steps {
		c.Steps = append(c.Steps, h)
	}
	sort.Ints(c.Steps)
	sort.SliceStable(c.Departures, func(i, j int) bool { return c.Departures[i].Row.Reach > c.Departures[j].Row.Reach })
	c.Total = rng.ToGo(modelValue, 1, max(pol.Horizon, 1)) - behaviourUnits
	return c
}

// departureTest finds the nodes of pol where the logged visits v
// clearly favour another action than the policy's.
type departureTest struct {
	pol *policy.Policy
	v   *policy.Visits
}

// departs says the logs visit node id and clearly favour another action
// there (clearlyMore). A row of a stochastic policy that shares its
// history with other actions (probability below one) keeps the logged
// mix and is no departure.
func (t departureTest) departs(id int64) bool {
	if t.v.N[id] == 0 || t.pol.Prob(id) < 1 {
		return false
	}
	ml, a := t.v.MostLogged(id), t.pol.Nodes[id].Action
	return ml != a && clearlyMore(t.v.Count(id, ml), t.v.Count(id, a))
}

// tally counts a logged node that is not a departure: π̄ takes its most
// logged action there (Agree) or another action not clearly less logged
// (Ties); a history where a stochastic policy keeps the logged mix counts
// once, as agreeing.
func (t departureTest) tally(c *Comparison, id int64) {
	if t.v.N[id] == 0 {
		return
	}
	mix := t.pol.Prob(id) < 1
	if mix && t.v.MostLogged(id) != t.pol.Nodes[id].Action {
		return // the history counts once, at its most logged action's row
	}
	if t.v.MostLogged(id) == t.pol.Nodes[id].Action {
		c.Agree++
	} else {
		c.Ties++
	}
}

// firstOnPath says no ancestor of a node (from its parent up) is a
// departure, so the node's reach counts once per path in DepartMass.
func (t departureTest) firstOnPath(parent int64) bool {
	for p := parent; p >= 0; p = t.pol.Nodes[p].Parent {
		if t.departs(p) {
			return false
		}
	}
	return true
}
