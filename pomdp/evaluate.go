package pomdp

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/psrlcb/psrlcb/policy"
)

// PolicyFunc is a deterministic history-dependent policy: given the
// observations o_1..o_h (obs[0] is ObsInit) and the actions a_1..a_{h−1}
// taken so far, it returns the action index a_h. The slices are only valid
// during the call.
type PolicyFunc func(obs, act []int) int

// ctxEvery is how many tree nodes the exact recursions visit between two
// looks at the context: often enough to stop within milliseconds, rarely
// enough to cost nothing.
const ctxEvery = 1 << 12

// walker carries what every exact recursion needs.
type walker struct {
	mm    *model
	H     int
	ctx   context.Context
	nodes int
	limit int // the node budget, 0 for none
	err   error
}

// stop reports whether the walk must end (context cancelled, node budget
// spent or an error).
func (w *walker) stop() bool {
	if w.err != nil {
		return true
	}
	w.nodes++
	return w.overBudget() || w.cancelled()
}

// overBudget reports whether the walk has visited more nodes than its
// budget, recording ErrTooLarge then.
func (w *walker) overBudget() bool {
	if w.limit > 0 && w.nodes > w.limit {
		w.err = fmt.Errorf("%w: more than %d nodes at horizon %d", ErrTooLarge, w.limit, w.H)
		return true
	}
	return false
}

// cancelled looks at the context once every ctxEvery nodes and reports
// whether it is cancelled, recording its error then.
func (w *walker) cancelled() bool {
	if w.nodes%ctxEvery == 1 && w.ctx != nil {
		if err := w.ctx.Err(); err != nil {
			w.err = err
			return true
		}
	}
	return false
}

// result is v, the walk's value, or the error that stopped the walk.
func (w *walker) result(v float64) (float64, error) {
	if w.err != nil {
		return 0, w.err
	}
	return v, nil
}

// memoized returns memo[h][key] when known; otherwise, unless the walk
// must stop (then 0), it computes the value with f and stores it when f
// reports it complete.
func (w *walker) memoized(memo []map[string]float64, h int, key string, f func() (float64, bool)) float64 {
	if v, ok := memo[h][key]; ok {
		return v
	}
	if w.stop() {
		return 0
	}
	v, ok := f()
	if ok {
		memo[h][key] = v
	}
	return v
}

// prepareHorizon prepares m for an exact recursion of horizon H, which
// must not be negative.
func prepareHorizon(m *POMDP, H int) (*model, error) {
	mm, err := prepare(m)
	if err != nil {
		return nil, err
	}
	if H < 0 {
		return nil, fmt.Errorf("%w: horizon %d is negative", ErrPolicy, H)
	}
	return mm, nil
}

// EvaluateContext is the exact value V^π = E^π[r_1+…+r_H] of a
// deterministic policy under the true model, computed by enumerating the
// tree of observation histories with the true belief; branches of
// probability 0 are skipped. It fails when m is invalid, pol returns an
// action out of range or ctx is cancelled. The cost is the number of
// reachable histories, at most Σ_h |O|^(h−1).
func EvaluateContext(ctx context.Context, m *POMDP, H int, pol PolicyFunc) (float64, error) {
	mm, err := prepareHorizon(m, H)
	if err != nil {
		return 0, err
	}
	if H == 0 {
		return 0, nil
	}
	w := &funcWalk{walker: walker{mm: mm, H: H, ctx: ctx}, pol: pol, obs: make([]int, H), act: make([]int, H)}
	w.obs[0] = ObsInit
	return w.result(w.value(1, append([]float64(nil), mm.Start...)))
}

// funcWalk evaluates a PolicyFunc by enumerating the histories: obs and
// act hold the history being walked.
type funcWalk struct {
	walker
	pol      PolicyFunc
	obs, act []int
}

// value is the policy's expected return from step h on at belief b, the
// observations of the history up to o_h in obs.
func (w *funcWalk) value(h int, b []float64) float64 {
	if w.stop() {
		return 0
	}
	a, ok := w.action(h)
	if !ok {
		return 0
	}
	w.act[h-1] = a
	return w.mm.backup(b, a, h == w.H, func(o int, post []float64) float64 {
		w.obs[h] = o
		return w.value(h+1, post)
	})
}

// action is the policy's action at step h of the history in obs and act;
// false, with w.err set, when it is not an action of the model.
func (w *funcWalk) action(h int) (int, bool) {
	a := w.pol(w.obs[:h], w.act[:h-1])
	if a < 0 || a >= w.mm.nA {
		w.err = fmt.Errorf("%w: the policy returned action %d at step %d (the model has %d actions)", ErrPolicy, a, h, w.mm.nA)
		return 0, false
	}
	return a, true
}

// EvaluatePolicy is the exact value under m of a policy tree read from
// policy.arrow, following it with policy.Cursor: the observations are the
// model's observation names with InitSymbol at step 1, and the actions
// the tree names must be actions of m (ErrPolicy otherwise). A stochastic
// tree (Policy.Probs) is valued as it acts: at each history the values
// of its actions are weighted by their probabilities,
// V_h(τ, o) = Σ_a π(a | τ, o) Q_h(τ, o, a).
func EvaluatePolicy(ctx context.Context, m *POMDP, H int, p *policy.Policy) (float64, error) {
	return EvaluatePolicyWithin(ctx, m, H, p, 0)
}

// EvaluatePolicyWithin is EvaluatePolicy with a budget: it fails with
// ErrTooLarge after visiting maxNodes histories (0: no budget). A history
// is one decision point (τ_{h−1}, o_h); a stochastic tree has one for
// each of its actions' branches, so more than a deterministic tree of the
// same rows.
func EvaluatePolicyWithin(ctx context.Context, m *POMDP, H int, p *policy.Policy, maxNodes int) (float64, error) {
	mm, err := prepare(m)
	if err != nil {
		return 0, err
	}
	if err := checkPolicyTree(p, H); err != nil {
		return 0, err
	}
	w := &policyWalk{walker: walker{mm: mm, H: H, ctx: ctx, limit: maxNodes}, m: m, actIdx: actionIndex(m), stochastic: p.Stochastic()}
	return w.result(w.value(1, append([]float64(nil), mm.Start...), *p.NewCursor(), ObsInit))
}

// checkPolicyTree checks that the policy tree p is given and the horizon
// H positive.
func checkPolicyTree(p *policy.Policy, H int) error {
	if p == nil {
		return fmt.Errorf("%w: nil policy", ErrPolicy)
	}
	if H <= 0 {
		return fmt.Errorf("%w: horizon %d must be positive", ErrPolicy, H)
	}
	return nil
}

// policyWalk evaluates a policy tree under m by enumerating the histories;
// actIdx maps the model's action names to their indices, and stochastic
// says whether the tree has probabilities to branch over.
type policyWalk struct {
	walker
	m          *POMDP
	actIdx     map[string]int
	stochastic bool
}

// value is the policy's expected return from step h on at belief b, after
// the observation o, with the policy's cursor cur there.
func (w *policyWalk) value(h int, b []float64, cur policy.Cursor, o int) float64 {
	if w.stop() {
		return 0
	}
	if w.stochastic {
		return w.mix(h, b, cur, o)
	}
	a, ok := w.action(h, &cur, o)
	if !ok {
		return 0
	}
	return w.after(h, b, cur, a)
}

// after is the return from step h on of the action a at belief b: its
// expected reward and the values of the observations that follow, each
// branch continuing from a copy of the cursor cur (already moved by a).
func (w *policyWalk) after(h int, b []float64, cur policy.Cursor, a int) float64 {
	return w.mm.backup(b, a, h == w.H, func(o int, post []float64) float64 { return w.value(h+1, post, cur, o) })
}

// mix is a stochastic tree's return from step h on at belief b after the
// observation o: Σ_a π(a | τ, o)·after(a), each action from its own copy
// of the cursor cur; actions of probability 0 are skipped.
func (w *policyWalk) mix(h int, b []float64, cur policy.Cursor, o int) float64 {
	name := w.m.ObsName(o)
	choices, ok := cur.Choices(name)
	if !ok {
		w.err = noInitRow()
		return 0
	}
	v := 0.0
	for _, ch := range choices {
		if ch.Prob == 0 {
			continue
		}
		a, ok := w.index(h, ch.Action, ch.Node)
		if !ok {
			return 0
		}
		branch := cur
		branch.Take(name, ch.Action)
		v += ch.Prob * w.after(h, b, branch, a)
	}
	return v
}

// action moves the cursor on with the observation o of step h and returns
// the index of the action it names; false, with w.err set, when the
// policy has no row there or names an action the model does not have.
func (w *policyWalk) action(h int, cur *policy.Cursor, o int) (int, bool) {
	name, node, ok := cur.Act(w.m.ObsName(o))
	if !ok {
		w.err = noInitRow()
		return 0, false
	}
	return w.index(h, name, node)
}

// index is the model's index of the action name that the policy's node
// takes at step h; false, with w.err set, when m has no such action.
func (w *policyWalk) index(h int, name string, node int64) (int, bool) {
	a, known := w.actIdx[name]
	if !known {
		w.err = fmt.Errorf("%w: action %q at step %d (%s) is not an action of %s", ErrPolicy, name, h, nodeWhere(node), w.m.Name)
		return 0, false
	}
	return a, true
}

// noInitRow is the error of a policy without a step-1 row for the initial
// observation.
func noInitRow() error {
	return fmt.Errorf("%w: the policy has no step-1 row for the initial observation %q", ErrPolicy, InitSymbol)
}

// nodeWhere names the policy row node in messages: "node N", or the
// fallback action for a negative node.
func nodeWhere(node int64) string {
	if node < 0 {
		return "the fallback_action"
	}
	return fmt.Sprintf("node %d", node)
}

// beliefKey is an exact key for a belief: equal bits, equal future.
func beliefKey(b []float64) string {
	buf := make([]byte, 8*len(b))
	for i, v := range b {
		u := math.Float64bits(v)
		for k := range 8 {
			buf[8*i+k] = byte(u >> (8 * k))
		}
	}
	return string(buf)
}

// solver computes the optimal finite-horizon values by dynamic programming
// over the belief tree, memoised on (step, exact belief): histories with
// the same belief have the same optimal future.
type solver struct {
	walker
	mu   sync.Mutex
	memo []map[string]float64 // memo[h]: V*_h(b)
}

// value is V*_h(b) = max_a Q*_h(b,a), and 0 after step H.
func (sv *solver) value(h int, b []float64) float64 {
	if h > sv.H {
		return 0
	}
	return sv.memoized(sv.memo, h, beliefKey(b), func() (float64, bool) {
		best := math.Inf(-1)
		for a := range sv.mm.nA {
			best = max(best, sv.q(h, b, a))
		}
		return best, true
	})
}

// q is Q*_h(b,a) = E[r_h|b,a] + Σ_o P(o|b,a) V*_{h+1}(b_{a,o}).
func (sv *solver) q(h int, b []float64, a int) float64 {
	return sv.mm.backup(b, a, h == sv.H, func(_ int, post []float64) float64 { return sv.value(h+1, post) })
}

// argmax is the optimal action at step h for belief b, ties to the lowest
// index.
func (sv *solver) argmax(h int, b []float64) int {
	best, bestV := 0, math.Inf(-1)
	for a := range sv.mm.nA {
		v := sv.q(h, b, a)
		if a == 0 || v > bestV+tieTol*(1+math.Abs(bestV)) {
			best, bestV = a, v
		}
	}
	return best
}

// OptimalContext is the exact optimal value V* = max_π E^π[r_1+…+r_H] over all
// history-dependent policies, by dynamic programming over the belief tree
// (at each node the best action's expected immediate reward plus
// Σ_o P(o) V*(child)), and an optimal policy (ties to the lowest action
// index). The policy is safe for concurrent use; for histories of
// probability 0 it returns action 0. It fails when m is invalid, H < 0 or
// ctx is cancelled.
//
// The cost grows like (|A||O|)^H in the worst case; histories that lead
// to the same belief are solved once.
func OptimalContext(ctx context.Context, m *POMDP, H int) (float64, PolicyFunc, error) {
	return OptimalWithin(ctx, m, H, 0)
}

// OptimalWithin is OptimalContext with a budget: it fails with
// ErrTooLarge after solving maxNodes distinct (step, belief) nodes (0: no
// budget). The returned policy has no budget.
func OptimalWithin(ctx context.Context, m *POMDP, H int, maxNodes int) (float64, PolicyFunc, error) {
	mm, err := prepareHorizon(m, H)
	if err != nil {
		return 0, nil, err
	}
	sv := &solver{walker: walker{mm: mm, H: H, ctx: ctx, limit: maxNodes}, memo: newMemo(H)}
	v := sv.value(1, mm.Start)
	if sv.err != nil {
		return 0, nil, sv.err
	}
	sv.ctx, sv.limit = nil, 0 // the policy outlives ctx and the budget
	return v, sv.policy(), nil
}

// newMemo is an empty memo of values for each step 0..H+1, keyed by
// beliefKey.
func newMemo(H int) []map[string]float64 {
	memo := make([]map[string]float64, H+2)
	for h := range memo {
		memo[h] = make(map[string]float64)
	}
	return memo
}

// policy is the solved optimal policy: the best action at the history's
// belief, action 0 for histories of probability 0 or past the horizon.
func (sv *solver) policy() PolicyFunc {
	mm, H := sv.mm, sv.H
	return func(obs, act []int) int {
		b, ok := mm.belief(obs, act)
		if !ok || len(obs) > H {
			return 0
		}
		sv.mu.Lock()
		defer sv.mu.Unlock()
		return sv.argmax(len(obs), b)
	}
}

// BehaviorValueContext is the exact value V^b of a behaviour policy under
// the true model, by enumerating the history tree with the true belief and
// weighting each action by its probability; it fails when m is invalid or
// ctx is cancelled. Since a Behavior depends on the history only
// through the step and the belief, histories with the same belief are
// evaluated once.
func BehaviorValueContext(ctx context.Context, m *POMDP, H int, beh Behavior) (float64, error) {
	return BehaviorValueWithin(ctx, m, H, beh, 0)
}

// BehaviorValueWithin is BehaviorValueContext with a budget: it fails
// with ErrTooLarge after valuing maxNodes distinct (step, belief) nodes
// (0: no budget).
func BehaviorValueWithin(ctx context.Context, m *POMDP, H int, beh Behavior, maxNodes int) (float64, error) {
	mm, err := prepareHorizon(m, H)
	if err != nil {
		return 0, err
	}
	if !beh.UsesBelief() {
		return openLoopValue(mm, H, beh), nil
	}
	w := &behaviorWalk{walker: walker{mm: mm, H: H, ctx: ctx, limit: maxNodes}, beh: beh, memo: newMemo(H)}
	return w.result(w.value(1, mm.Start))
}

// behaviorWalk values a belief-dependent behaviour over the history tree,
// memoised on (step, exact belief).
type behaviorWalk struct {
	walker
	beh  Behavior
	memo []map[string]float64 // memo[h]: V^b_h(b)
}

// value is V^b_h(b) = Σ_a π^b_h(a|b) Q^b_h(b,a), and 0 after step H.
func (w *behaviorWalk) value(h int, b []float64) float64 {
	if h > w.H {
		return 0
	}
	return w.memoized(w.memo, h, beliefKey(b), func() (float64, bool) { return w.expand(h, b), true })
}

// expand is V^b_h(b) computed from the actions' Q^b_h(b,a).
func (w *behaviorWalk) expand(h int, b []float64) float64 {
	mm := w.mm
	probs := make([]float64, mm.nA)
	w.beh.Probs(h, b, probs)
	pred, post := make([]float64, mm.nS), make([]float64, mm.nS)
	v := 0.0
	for a, pa := range probs {
		if pa == 0 {
			continue
		}
		v += pa * w.q(h, b, a, pred, post)
	}
	return v
}

// q is Q^b_h(b,a) = E[r_h|b,a] + Σ_o P(o|b,a) V^b_{h+1}(b_{a,o}); pred and
// post are buffers.
func (w *behaviorWalk) q(h int, b []float64, a int, pred, post []float64) float64 {
	mm := w.mm
	q := mm.expectedReward(b, a)
	if h < w.H {
		mm.predict(b, a, pred)
		for o := range mm.nO {
			po := mm.update(pred, a, o, post)
			if po == 0 {
				continue
			}
			q += po * w.value(h+1, post)
		}
	}
	return q
}

// openLoopValue is the exact value of a behaviour that ignores the
// belief (its action probabilities depend on the step alone): the state
// distribution is propagated step by step, p_{h+1}(s') = Σ_s p_h(s)
// Σ_a π_h(a) T(s'|s,a), and V^b = Σ_h Σ_s p_h(s) Σ_a π_h(a) E[r | s, a],
// in O(H·|A|·|S|²) whatever the number of histories.
func openLoopValue(mm *model, H int, beh Behavior) float64 {
	p := append([]float64(nil), mm.Start...)
	next := make([]float64, mm.nS)
	probs := make([]float64, mm.nA)
	v := 0.0
	for h := 1; h <= H; h++ {
		beh.Probs(h, p, probs)
		clear(next)
		for a, pa := range probs {
			if pa == 0 {
				continue
			}
			v = mm.openLoopAction(a, pa, p, next, v)
		}
		p, next = next, p
	}
	return v
}

// openLoopAction adds to v the expected reward of action a, taken with
// probability pa from the state distribution p, and to next the
// distribution of the states it leads to; it returns v.
func (mm *model) openLoopAction(a int, pa float64, p, next []float64, v float64) float64 {
	S := mm.nS
	for s, ps := range p {
		if ps == 0 {
			continue
		}
		v += pa * ps * mm.er[a*S+s]
		for _, t := range mm.tNZ[a][s] {
			next[t.i] += pa * ps * t.p
		}
	}
	return v
}
