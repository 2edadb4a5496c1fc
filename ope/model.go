package ope

import (
	"github.com/psrlcb/psrlcb/internal/categorical"
	"hash/fnv"
	"math/rand/v2"
	"sync"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pessimism"
)

// Values of a target policy under a fitted model: the expected return
// from a history on, E_θ̂^{π_e}[r_h + … + r_H | τ_{h−1}, o_h] (and, from the
// start, the expected bonus E[b̂(τ_H)] of eq. (6) of Huang, Liang, Yang,
// arXiv:2307.00405). Exact where the tree of the remaining histories is
// small (exactNodes), by Monte Carlo rollouts otherwise (rollouts
// trajectories under the model, seeded by the history, so a value does
// not depend on which worker computes it).

// Defaults of the model's look-ahead.
const (
	// exactNodes bounds the nodes of an exact look-ahead from one history;
	// past it the value is a Monte Carlo mean. 4096 keeps the doubly
	// robust estimator's per-step cost at a few milliseconds.
	exactNodes = 4096
	// defaultRollouts is the number of Monte Carlo rollouts of a value
	// past exactNodes: their standard error is about 2% of the return
	// range, small beside the importance weights' noise it corrects.
	defaultRollouts = 500
)

// valuer computes values of a Target under a model.
type valuer struct {
	m              *estimate.Model
	t              Target
	bonus          *pessimism.Bonus // nil: no bonus
	S, O, A, H     int
	endObs, endAct int
	seed           uint64
	rollouts       int
}

func newValuer(m *estimate.Model, t Target, bonus *pessimism.Bonus, endObs, endAct int, seed uint64) *valuer {
	return &valuer{m: m, t: t, bonus: bonus, S: m.States, O: m.NumObs, A: m.NumActions, H: m.Horizon,
		endObs: endObs, endAct: endAct, seed: seed, rollouts: defaultRollouts}
}

// node is a history τ_{h−1}, o_h: the belief over s_h, the follower that
// has read o_h, π_e there, and the running bonus sum of the steps before.
type node struct {
	h   int
	b   []float64
	f   Follower
	p   []float64
	sum float64
}

// stats are what a look-ahead returns: the expected return from the node
// on (in the logs' units), its expected bonus at the end (the paper's
// [0,1] scale; 0 without a bonus), and Q̂ per action.
type stats struct {
	v, bonus float64
	q        []float64
}

// treeSize is the number of nodes of the exact look-ahead from step h:
// Π_{t=h}^{H} (actions · observations), saturating.
func (v *valuer) treeSize(h, actions int) float64 {
	n := 1.0
	for t := h; t <= v.H; t++ {
		n *= float64(actions * v.O)
		if n > 1e18 {
			return n
		}
	}
	return n
}

// support is the number of actions with positive probability.
func support(p []float64) int {
	n := 0
	for _, x := range p {
		if x > 0 {
			n++
		}
	}
	return n
}

// value computes the node's stats, exactly or by rollouts seeded by key.
func (v *valuer) value(n node, key string) (stats, error) {
	if v.treeSize(n.h, support(n.p)) <= exactNodes {
		return v.exact(n)
	}
	return v.monteCarlo(n, key)
}

// exact is the look-ahead over every action of positive probability and
// every observation.
func (v *valuer) exact(n node) (stats, error) {
	st := stats{q: make([]float64, v.A)}
	buf := lookBufs{pred: make([]float64, v.S), next: make([]float64, v.S), feat: v.featureBuf(n.h)}
	for a, pa := range n.p {
		if pa == 0 {
			continue
		}
		if err := v.exactAction(n, a, pa, &st, buf); err != nil {
			return stats{}, err
		}
	}
	return st, nil
}

// lookBufs are the buffers of one node's exact look-ahead: the
// prediction, the next belief and the bonus features.
type lookBufs struct {
	pred, next, feat []float64
}

// exactAction adds to st the share of action a, of probability pa at the
// node n: Q̂(a) is its expected reward plus, before the last step, the
// values of the children after it.
func (v *valuer) exactAction(n node, a int, pa float64, st *stats, buf lookBufs) error {
	q, bon, err := v.actionQ(n, a, buf)
	if err != nil {
		return err
	}
	st.q[a] = q
	st.v += pa * q
	st.bonus += pa * bon
	return nil
}

// actionQ is Q̂(a) at the node n, its expected reward plus, before the last
// step, the values of the children after a, with the expected bonus at
// the end after a.
func (v *valuer) actionQ(n node, a int, buf lookBufs) (float64, float64, error) {
	q := v.m.ExpectedReward(n.h, n.b, a)
	if n.h == v.H {
		return q, v.endBonus(n.sum), nil
	}
	return v.exactAfter(n, a, q, buf)
}

// endBonus is the bonus at the end of an episode whose running bonus sum
// is sum; 0 without a bonus.
func (v *valuer) endBonus(sum float64) float64 {
	if v.bonus == nil {
		return 0
	}
	return v.bonus.Value(sum)
}

// exactAfter adds to q, the expected reward of action a at the node n
// (before the last step), the probability-weighted values of the node's
// children after a, and returns it with their expected bonus at the end.
func (v *valuer) exactAfter(n node, a int, q float64, buf lookBufs) (float64, float64, error) {
	v.m.Predict(n.h, n.b, a, buf.pred)
	sum, err := v.addBonus(n.h, n.sum, buf.pred, a, buf.feat)
	if err != nil {
		return 0, 0, err
	}
	return v.children(n, a, q, sum, buf)
}

// children adds to q the values of the node's children after action a,
// each weighted by the probability of its observation given the
// prediction in buf, and returns it with their expected bonus at the end;
// sum is the running bonus sum after a.
func (v *valuer) children(n node, a int, q, sum float64, buf lookBufs) (float64, float64, error) {
	var bon float64
	for o := 0; o < v.O; o++ {
		z := v.m.Correct(n.h, buf.pred, a, o, buf.next)
		if z == 0 {
			continue
		}
		cs, err := v.childStats(n, a, o, buf.next, sum)
		if err != nil {
			return 0, 0, err
		}
		q += z * cs.v
		bon += z * cs.bonus
	}
	return q, bon, nil
}

// addBonus returns the running bonus sum plus the bonus's term of step h
// for the prediction pred after action a (feat is a buffer); without a
// bonus, sum itself.
func (v *valuer) addBonus(h int, sum float64, pred []float64, a int, feat []float64) (float64, error) {
	if v.bonus == nil {
		return sum, nil
	}
	fz, err := v.fz()
	if err != nil {
		return 0, err
	}
	fz.Feature(h, pred, a, feat)
	return sum + v.bonus.StepNorm2(h, feat), nil
}

// childStats is the exact look-ahead from the node after action a and
// observation o from n, with the belief next (copied) and the running
// bonus sum sum.
func (v *valuer) childStats(n node, a, o int, next []float64, sum float64) (stats, error) {
	c := node{h: n.h + 1, b: append([]float64(nil), next...), f: n.f.Clone(), p: make([]float64, v.A), sum: sum}
	if err := v.next(c.f, a, o, c.p); err != nil {
		return stats{}, err
	}
	return v.exact(c)
}

// next moves the follower f on with the action a and the observation o,
// writing π_e into p, then forces the end action after the end
// observation.
func (v *valuer) next(f Follower, a, o int, p []float64) error {
	if err := f.Next(a, o, p); err != nil {
		return err
	}
	v.forceEnd(o, p)
	return nil
}

// forceEnd makes π_e (p) take the end action for certain after the end
// observation o, when the logs have one.
func (v *valuer) forceEnd(o int, p []float64) {
	if o == v.endObs && v.endAct >= 0 {
		clear(p)
		p[v.endAct] = 1
	}
}

// monteCarlo estimates the node's stats from rollouts: a hidden state
// drawn from the belief, then actions from π_e, states, observations from
// the model, the expected reward of each step, and the belief filtered
// along (for the bonus and π_e's own history).
func (v *valuer) monteCarlo(n node, key string) (stats, error) {
	rng := v.rng(key)
	st := stats{q: make([]float64, v.A)}
	cnt := make([]float64, v.A)
	for range v.rollouts {
		a, g, bon, err := v.rollout(n, rng)
		if err != nil {
			return stats{}, err
		}
		st.add(a, g, bon, cnt)
	}
	st.mean(float64(v.rollouts), cnt)
	return st, nil
}

// rng is the random stream of the rollouts from the history key: seeded by
// the valuer's seed and the key's hash, so a value does not depend on
// which worker computes it.
func (v *valuer) rng(key string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(key))
	return rand.New(rand.NewPCG(v.seed, h.Sum64()))
}

// add adds a rollout that began with action a, of return g and bonus bon
// at the end, to the sums, and counts it in cnt.
func (st *stats) add(a int, g, bon float64, cnt []float64) {
	st.v += g
	st.bonus += bon
	st.q[a] += g
	cnt[a]++
}

// mean turns the sums of N rollouts into means: of the return and the
// bonus over all of them, of Q̂ per action over the cnt[a] rollouts that
// began with a.
func (st *stats) mean(N float64, cnt []float64) {
	st.v /= N
	st.bonus /= N
	for a := range st.q {
		if cnt[a] > 0 {
			st.q[a] /= cnt[a]
		}
	}
}

// rollout simulates one trajectory from the node and returns its first
// action, its return from the node on and its bonus at the end.
func (v *valuer) rollout(n node, rng *rand.Rand) (first int, ret, bon float64, err error) {
	s := categorical.Draw(rng, n.b)
	r := v.newRollState(n)
	for h := n.h; ; h++ {
		a := categorical.Draw(rng, r.p)
		if h == n.h {
			first = a
		}
		s2, o, rew := v.draw(rng, h, s, a)
		ret += rew
		if h == v.H {
			break
		}
		if err := v.advance(r, h, a, o); err != nil {
			return 0, 0, 0, err
		}
		s = s2
	}
	return first, ret, v.endBonus(r.sum), nil
}

// rollState is a rollout's filter state: the belief and π_e's
// probabilities with its follower, buffers for the prediction, the next
// belief and the bonus features, and the running bonus sum.
type rollState struct {
	b, p, pred, next, feat []float64
	f                      Follower
	sum                    float64
}

// newRollState is the filter state of a rollout from the node n: copies
// of its belief, π_e and follower, and its running bonus sum.
func (v *valuer) newRollState(n node) *rollState {
	return &rollState{
		b: append([]float64(nil), n.b...), p: append([]float64(nil), n.p...), f: n.f.Clone(),
		pred: make([]float64, v.S), next: make([]float64, v.S), feat: v.featureBuf(n.h), sum: n.sum,
	}
}

// draw draws the next state and the observation after action a in state s
// at step h from the model, and returns them with the step's expected
// reward.
func (v *valuer) draw(rng *rand.Rand, h, s, a int) (s2, o int, rew float64) {
	m, S := v.m, v.S
	t := m.Table(h)
	s2 = categorical.Draw(rng, m.Trans[t][(a*S+s)*S:(a*S+s+1)*S])
	o = categorical.Draw(rng, m.EmitOf(t, a)[s2*v.O:(s2+1)*v.O])
	return s2, o, m.ExpectedRewardOf(t, s, a, s2, o)
}

// advance filters the rollout's belief with action a and observation o of
// step h, adds the step's bonus term and moves π_e on.
func (v *valuer) advance(r *rollState, h, a, o int) error {
	m := v.m
	m.Predict(h, r.b, a, r.pred)
	sum, err := v.addBonus(h, r.sum, r.pred, a, r.feat)
	if err != nil {
		return err
	}
	r.sum = sum
	m.Correct(h, r.pred, a, o, r.next)
	r.b, r.next = r.next, r.b
	return v.next(r.f, a, o, r.p)
}

// fz is a featurizer for the bonus; one per call is cheap next to a
// look-ahead (the model caches its bases). The error is
// estimate.NewFeaturizer's.
func (v *valuer) fz() (*estimate.Featurizer, error) { return estimate.NewFeaturizer(v.m) }

func (v *valuer) featureBuf(h int) []float64 {
	if v.bonus == nil {
		return nil
	}
	n := 0
	for t := 0; t < v.H; t++ {
		n = max(n, v.m.FeatureDim(t))
	}
	return make([]float64, n)
}

// root is the start of an episode: the observation o_1 drawn from the
// model, π_e at each.
func (v *valuer) root() (val, bon float64, err error) {
	first := make([]float64, v.O)
	v.m.FirstObsProbs(first)
	sum := v.rootSum()
	for o, po := range first {
		if po == 0 {
			continue
		}
		st, err := v.rootValue(o, sum)
		if err != nil {
			return 0, 0, err
		}
		val += po * st.v
		bon += po * st.bonus
	}
	return val, bon, nil
}

// rootSum is the running bonus sum at the start of an episode: the
// bonus's root term, 0 without a bonus.
func (v *valuer) rootSum() float64 {
	if v.bonus == nil {
		return 0
	}
	return v.bonus.Root
}

// rootValue is the stats of the history of the first observation o alone,
// with the bonus's root term sum.
func (v *valuer) rootValue(o int, sum float64) (stats, error) {
	b := make([]float64, v.S)
	v.m.Prior(b)
	v.m.ObserveFirst(b, o)
	n := node{h: 1, b: b, f: v.t.Follow(), p: make([]float64, v.A), sum: sum}
	if err := n.f.Next(-1, o, n.p); err != nil {
		return stats{}, err
	}
	return v.value(n, "root\x00"+string(rune(o)))
}

// memo caches the stats of the logged histories (Q̂ and V̂ of the doubly
// robust estimator), keyed by the history's symbols: values are a
// function of the history alone, so sharing them across episodes and
// workers changes nothing.
type memo struct {
	mu sync.Mutex
	m  map[string]stats
}

func (c *memo) get(k string) (stats, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[k]
	return s, ok
}

func (c *memo) put(k string, s stats) {
	c.mu.Lock()
	c.m[k] = s
	c.mu.Unlock()
}
