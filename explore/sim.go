package explore

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/internal/categorical"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
)

// Collect simulates one round of Algorithm 1 (lines 3–6) against the known
// POMDP m: for each switch step h = 1..H, perStep episodes that follow
// prev (π^{k−1}) at steps 1..h−1 and take uniformly random actions from
// step h on. prev nil means uniform actions throughout (π^0, the first
// round). The logged propensity is prev's probability of the action on the
// steps prev decides (1 for a deterministic prev; a stochastic one's action
// is drawn with policy.Cursor.Sample) and 1/|A| on uniform steps; steps[k]
// is episode k's switch step. Episodes are ordered by switch step, then by
// draw. The random stream of each (round, h) batch is fixed by seed, so
// the logs do not depend on the machine.
func Collect(ctx context.Context, m *pomdp.POMDP, H int, prev *policy.Policy, perStep, round int, seed uint64) (*pomdp.Logs, []int, error) {
	if err := m.Check(); err != nil {
		return nil, nil, err
	}
	if H <= 0 || perStep <= 0 {
		return nil, nil, fmt.Errorf("%w: horizon %d and episodes per step %d must be positive", ErrOptions, H, perStep)
	}
	c := newCollector(m, H, prev, H*perStep, seed)
	steps := make([]int, H*perStep)
	k := 0
	for sw := 1; sw <= H; sw++ {
		rng := rand.New(rand.NewPCG(seed, uint64(round)<<32|uint64(sw)))
		for range perStep {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			steps[k] = sw
			if err := c.episode(rng, k, sw); err != nil {
				return nil, nil, err
			}
			k++
		}
	}
	return c.l, steps, nil
}

// collector simulates the episodes of one Collect call into l.
type collector struct {
	m        *pomdp.POMDP
	H, A     int
	prev     *policy.Policy // π^{k−1}, nil in the first round
	actIndex map[string]int // action index of each action name of m
	l        *pomdp.Logs
}

// newCollector allocates logs of K episodes of H steps.
func newCollector(m *pomdp.POMDP, H int, prev *policy.Policy, K int, seed uint64) *collector {
	A := m.NumActions()
	actIndex := make(map[string]int, A)
	for a, name := range m.Actions {
		actIndex[name] = a
	}
	l := &pomdp.Logs{Model: m, Horizon: H, Behavior: "psr-ucb exploration", Seed: seed,
		Obs: make([]int32, K*H), Act: make([]int32, K*H), Reward: make([]float64, K*H), Propensity: make([]float64, K*H)}
	return &collector{m: m, H: H, A: A, prev: prev, actIndex: actIndex, l: l}
}

// episode simulates episode k, which follows prev before its switch step
// sw and acts uniformly from sw on, drawing from rng.
func (c *collector) episode(rng *rand.Rand, k, sw int) error {
	cur := c.cursor()
	s := categorical.Draw(rng, c.m.Start)
	o := pomdp.ObsInit
	for h := 1; h <= c.H; h++ {
		i := k*c.H + h - 1
		a, prop, err := c.action(rng, cur, h, sw, o)
		if err != nil {
			return err
		}
		s, o = c.step(rng, i, s, o, a, prop)
	}
	return nil
}

// cursor is a fresh cursor of the previous round's policy, nil when
// there is none.
func (c *collector) cursor() *policy.Cursor {
	if c.prev == nil {
		return nil
	}
	return c.prev.NewCursor()
}

// step draws the next state and observation after action a (of
// propensity prop) in state s, records step i of the logs and returns
// the next state and observation.
func (c *collector) step(rng *rand.Rand, i, s, o, a int, prop float64) (int, int) {
	m := c.m
	s2 := categorical.Draw(rng, m.T[a][s])
	o2 := categorical.Draw(rng, m.O[a][s2])
	c.l.Obs[i], c.l.Act[i], c.l.Propensity[i] = int32(o), int32(a), prop
	c.l.Reward[i] = m.R(a, s, s2, o2)
	return s2, o2
}

// action is the action at step h after observation o with its logged
// propensity: prev's (with its probability) before the switch step sw when
// prev has a row, else uniform (1/|A|).
func (c *collector) action(rng *rand.Rand, cur *policy.Cursor, h, sw, o int) (int, float64, error) {
	a, prop := -1, 1.0/float64(c.A)
	if cur != nil && h < sw {
		name, _, q, ok := cur.Draw(c.m.ObsName(o), rng)
		if ok {
			ai, found := c.actIndex[name]
			if !found {
				return 0, 0, fmt.Errorf("%w: exploration policy action %q at step %d is not an action of %s", ErrModel, name, h, c.m.Name)
			}
			a, prop = ai, q
		}
	}
	if a < 0 {
		a = rng.IntN(c.A)
	}
	return a, prop, nil
}

// Append returns the logs a followed by b (same model and horizon).
func Append(a, b *pomdp.Logs) *pomdp.Logs {
	if a == nil {
		return b
	}
	out := *a
	out.Obs = append(append([]int32(nil), a.Obs...), b.Obs...)
	out.Act = append(append([]int32(nil), a.Act...), b.Act...)
	out.Reward = append(append([]float64(nil), a.Reward...), b.Reward...)
	out.Propensity = append(append([]float64(nil), a.Propensity...), b.Propensity...)
	return &out
}

// StochasticPolicy gives the action distribution of a history-dependent
// policy: obs are o_1..o_h as observation indices of the true model (obs[0]
// is pomdp.ObsInit), act the actions a_1..a_{h−1}; it writes π(·|τ_{h−1},
// o_h) into p (length |A|).
type StochasticPolicy func(obs, act []int, p []float64)

// Uniform is the uniform policy.
func Uniform(obs, act []int, p []float64) {
	for a := range p {
		p[a] = 1 / float64(len(p))
	}
}

// Deterministic wraps a deterministic policy.
func Deterministic(f pomdp.PolicyFunc) StochasticPolicy {
	return func(obs, act []int, p []float64) {
		clear(p)
		p[f(obs, act)] = 1
	}
}

// TV is the exact total-variation distance between the trajectory laws of
// the model and of the true POMDP under the policy pol,
//
//	D_TV(P_θ̂^π(τ_H), P_θ*^π(τ_H)) = ½ Σ_{τ_H} π(a_{1:H}|o_{1:H}) |P_θ̂(o_{1:H}|a_{1:H}) − P_θ*(o_{1:H}|a_{1:H})|,
//
// the quantity Theorem "online PSR" bounds by ε. τ_H = (o_1, a_1, …, o_H,
// a_H) is enumerated, the two laws filtered side by side; a branch where one
// of them is 0 contributes the other's whole mass without being expanded
// (its subtree sums to the prefix's probability). Observations are matched
// by name (the model's vocabulary is the logged symbols; pomdp.InitSymbol
// is o_1); mass the model puts on symbols the true model never emits at
// that step counts fully. The cost is the number of histories with positive
// probability under both, at most (|O||A|)^H.
func TV(ctx context.Context, truth *pomdp.POMDP, m *estimate.Model, H int, pol StochasticPolicy) (float64, error) {
	if err := checkTV(truth, m, H); err != nil {
		return 0, err
	}
	t := newTVSearch(ctx, truth, m, H, pol)
	initCode := vocabCode(m.ObsVocab, pomdp.InitSymbol)
	// Step 1: o_1 = init with probability 1 under the truth.
	q := firstObsProb(m, initCode)
	if q == 0 {
		return 1, nil // disjoint supports
	}
	bel := firstBelief(m, initCode)
	total := (1 - q) // model mass on other first symbols
	alpha := append([]float64(nil), truth.Start...)
	total += t.node(1, []int{pomdp.ObsInit}, nil, alpha, 1, bel, q, 1)
	if t.err != nil {
		return 0, t.err
	}
	return total / 2, nil
}

// checkTV checks TV's arguments: a valid true model and a model whose
// horizon covers H ≥ 1 steps.
func checkTV(truth *pomdp.POMDP, m *estimate.Model, H int) error {
	if err := truth.Check(); err != nil {
		return err
	}
	if m == nil || m.Horizon < H || H <= 0 {
		return fmt.Errorf("%w: model horizon does not cover %d steps", ErrModel, H)
	}
	return nil
}

// firstBelief is the model's belief after its prior sees the first
// observation initCode.
func firstBelief(m *estimate.Model, initCode int) []float64 {
	bel := make([]float64, m.States)
	m.Prior(bel)
	m.ObserveFirst(bel, initCode)
	return bel
}

// firstObsProb is the model's probability of the first observation of
// code c, 0 when c < 0 (a symbol the model does not know).
func firstObsProb(m *estimate.Model, c int) float64 {
	if c < 0 {
		return 0
	}
	first := make([]float64, m.NumObs)
	m.FirstObsProbs(first)
	return first[c]
}

// vocabCode is the index of name in vocab, −1 if absent.
func vocabCode(vocab []string, name string) int {
	for i, v := range vocab {
		if v == name {
			return i
		}
	}
	return -1
}

type tvSearch struct {
	ctx              context.Context
	truth            *pomdp.POMDP
	m                *estimate.Model
	H, O, A, S       int
	obsCode, actCode []int
	pol              StochasticPolicy
	count            int
	err              error
}

// newTVSearch is the search of TV, with the model's code of every
// observation and action of truth (−1 for those the model does not know).
func newTVSearch(ctx context.Context, truth *pomdp.POMDP, m *estimate.Model, H int, pol StochasticPolicy) *tvSearch {
	O, A, S := truth.NumObs(), truth.NumActions(), truth.NumStates()
	obsCode := make([]int, O)
	for o := range O {
		obsCode[o] = vocabCode(m.ObsVocab, truth.ObsName(o))
	}
	actCode := make([]int, A)
	for a := range A {
		actCode[a] = vocabCode(m.ActVocab, truth.Actions[a])
	}
	return &tvSearch{ctx: ctx, truth: truth, m: m, H: H, O: O, A: A, S: S, obsCode: obsCode, actCode: actCode, pol: pol}
}

// node returns Σ over the subtree of |P̂ − P*|·π, given the history
// o_1..o_h, a_1..a_{h−1}, the true unnormalised state vector alpha (mass p)
// and the model belief bel (mass q), w the policy's probability of the
// actions so far.
func (t *tvSearch) node(h int, obs, act []int, alpha []float64, p float64, bel []float64, q, w float64) float64 {
	if t.stopped() {
		return 0
	}
	if h == t.H {
		return w * math.Abs(p-q)
	}
	pa := make([]float64, t.A)
	t.pol(obs, act, pa)
	n := &tvNode{t: t, h: h, obs: obs, act: act, alpha: alpha, bel: bel, q: q,
		pred: make([]float64, t.m.States), probs: make([]float64, t.m.NumObs), next: make([]float64, t.m.States)}
	for a, wa := range pa {
		if wa == 0 {
			continue
		}
		n.action(a, w*wa)
	}
	return n.sum
}

// stopped counts a node and says whether the search has stopped on an
// error; every 4096 nodes it checks ctx.
func (t *tvSearch) stopped() bool {
	t.count++
	if t.count&0xfff == 0 && t.ctx.Err() != nil {
		t.err = t.ctx.Err()
	}
	return t.err != nil
}

// tvNode is an inner node of the TV search being expanded: its history,
// true state vector and model belief (mass q), scratch vectors of the
// model's prediction, observation probabilities and correction, and the
// running sum over its subtree.
type tvNode struct {
	t                 *tvSearch
	h                 int
	obs, act          []int
	alpha, bel        []float64
	q                 float64
	pred, probs, next []float64
	sum               float64
}

// action adds to the sum the subtrees of action a, taken with the policy's
// probability w2 of the actions so far.
func (n *tvNode) action(a int, w2 float64) {
	t, m := n.t, n.t.m
	joint := t.trueJoint(n.alpha, a)
	ca := t.actCode[a]
	mapped := 0.0
	if ca >= 0 {
		m.Predict(n.h, n.bel, ca, n.pred)
		m.ObsProbs(n.h, n.pred, ca, n.probs)
	}
	for o2 := 0; o2 < t.O; o2++ {
		p2 := t.obsMass(joint, o2)
		q2 := 0.0
		if c := t.obsCode[o2]; ca >= 0 && c >= 0 {
			q2 = n.q * n.probs[c]
			mapped += n.probs[c]
		}
		n.branch(a, o2, joint, p2, q2, w2)
	}
	if ca >= 0 {
		// Model mass on symbols the true model does not emit.
		n.sum += w2 * n.q * math.Max(0, 1-mapped)
	}
}

// trueJoint is the true joint of (s', o') after a from the unnormalised
// state vector alpha, indexed s'·O + o'.
func (t *tvSearch) trueJoint(alpha []float64, a int) []float64 {
	joint := make([]float64, t.S*t.O)
	for s, as := range alpha {
		if as == 0 {
			continue
		}
		for s2, ts := range t.truth.T[a][s] {
			if ts == 0 {
				continue
			}
			for o2, po := range t.truth.O[a][s2] {
				joint[s2*t.O+o2] += as * ts * po
			}
		}
	}
	return joint
}

// obsMass is the true probability of observation o2 in joint, summed
// over the states s' in order.
func (t *tvSearch) obsMass(joint []float64, o2 int) float64 {
	p2 := 0.0
	for s2 := 0; s2 < t.S; s2++ {
		p2 += joint[s2*t.O+o2]
	}
	return p2
}

// branch adds to the sum the branch (a, o2) with true mass p2 and model
// mass q2: nothing when both are 0, the other's whole mass when one is,
// else the subtree below it.
func (n *tvNode) branch(a, o2 int, joint []float64, p2, q2, w2 float64) {
	t, h := n.t, n.h
	switch {
	case p2 == 0 && q2 == 0:
	case p2 == 0 || q2 == 0:
		n.sum += w2 * (p2 + q2)
	default:
		alpha2 := make([]float64, t.S)
		for s2 := range alpha2 {
			alpha2[s2] = joint[s2*t.O+o2]
		}
		t.m.Correct(h, n.pred, t.actCode[a], t.obsCode[o2], n.next)
		bel2 := append([]float64(nil), n.next...)
		n.sum += t.node(h+1, append(n.obs[:h:h], o2), append(n.act[:h-1:h-1], a), alpha2, p2, bel2, q2, w2)
	}
}
