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
// round). The logged propensity is 1 on the steps prev decides and 1/|A| on
// uniform steps; steps[k] is episode k's switch step. Episodes are ordered
// by switch step, then by draw. The random stream of each (round, h) batch
// is fixed by seed, so the logs do not depend on the machine.
func Collect(ctx context.Context, m *pomdp.POMDP, H int, prev *policy.Policy, perStep, round int, seed uint64) (*pomdp.Logs, []int, error) {
	if err := m.Check(); err != nil {
		return nil, nil, err
	}
	if H <= 0 || perStep <= 0 {
		return nil, nil, fmt.Errorf("%w: horizon %d and episodes per step %d must be positive", ErrOptions, H, perStep)
	}
	A := m.NumActions()
	actIndex := make(map[string]int, A)
	for a, name := range m.Actions {
		actIndex[name] = a
	}
	K := H * perStep
	l := &pomdp.Logs{Model: m, Horizon: H, Behavior: "psr-ucb exploration", Seed: seed,
		Obs: make([]int32, K*H), Act: make([]int32, K*H), Reward: make([]float64, K*H), Propensity: make([]float64, K*H)}
	steps := make([]int, K)
	k := 0
	for sw := 1; sw <= H; sw++ {
		rng := rand.New(rand.NewPCG(seed, uint64(round)<<32|uint64(sw)))
		for range perStep {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			steps[k] = sw
			var cur *policy.Cursor
			if prev != nil {
				cur = prev.NewCursor()
			}
			s := categorical.Draw(rng, m.Start)
			o := pomdp.ObsInit
			for h := 1; h <= H; h++ {
				i := k*H + h - 1
				a, prop := -1, 1.0/float64(A)
				if cur != nil && h < sw {
					name, _, ok := cur.Act(m.ObsName(o))
					if ok {
						ai, found := actIndex[name]
						if !found {
							return nil, nil, fmt.Errorf("%w: exploration policy action %q at step %d is not an action of %s", ErrModel, name, h, m.Name)
						}
						a, prop = ai, 1
					}
				}
				if a < 0 {
					a = rng.IntN(A)
				}
				s2 := categorical.Draw(rng, m.T[a][s])
				o2 := categorical.Draw(rng, m.O[a][s2])
				l.Obs[i], l.Act[i], l.Propensity[i] = int32(o), int32(a), prop
				l.Reward[i] = m.R(a, s, s2, o2)
				s, o = s2, o2
			}
			k++
		}
	}
	return l, steps, nil
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
	if err := truth.Check(); err != nil {
		return 0, err
	}
	if m == nil || m.Horizon < H || H <= 0 {
		return 0, fmt.Errorf("%w: model horizon does not cover %d steps", ErrModel, H)
	}
	O, A, S := truth.NumObs(), truth.NumActions(), truth.NumStates()
	code := func(vocab []string, name string) int {
		for i, v := range vocab {
			if v == name {
				return i
			}
		}
		return -1
	}
	obsCode := make([]int, O)
	for o := range O {
		obsCode[o] = code(m.ObsVocab, truth.ObsName(o))
	}
	actCode := make([]int, A)
	for a := range A {
		actCode[a] = code(m.ActVocab, truth.Actions[a])
	}
	initCode := code(m.ObsVocab, pomdp.InitSymbol)
	t := &tvSearch{ctx: ctx, truth: truth, m: m, H: H, O: O, A: A, S: S, obsCode: obsCode, actCode: actCode, pol: pol}
	// Step 1: o_1 = init with probability 1 under the truth.
	q := 0.0
	bel := make([]float64, m.States)
	if initCode >= 0 {
		first := make([]float64, m.NumObs)
		m.FirstObsProbs(first)
		q = first[initCode]
	}
	if q == 0 {
		return 1, nil // disjoint supports
	}
	m.Prior(bel)
	m.ObserveFirst(bel, initCode)
	total := (1 - q) // model mass on other first symbols
	alpha := append([]float64(nil), truth.Start...)
	total += t.node(1, []int{pomdp.ObsInit}, nil, alpha, 1, bel, q, 1)
	if t.err != nil {
		return 0, t.err
	}
	return total / 2, nil
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

// node returns Σ over the subtree of |P̂ − P*|·π, given the history
// o_1..o_h, a_1..a_{h−1}, the true unnormalised state vector alpha (mass p)
// and the model belief bel (mass q), w the policy's probability of the
// actions so far.
func (t *tvSearch) node(h int, obs, act []int, alpha []float64, p float64, bel []float64, q, w float64) float64 {
	t.count++
	if t.count&0xfff == 0 && t.ctx.Err() != nil {
		t.err = t.ctx.Err()
	}
	if t.err != nil {
		return 0
	}
	if h == t.H {
		return w * math.Abs(p-q)
	}
	m, truth := t.m, t.truth
	pa := make([]float64, t.A)
	t.pol(obs, act, pa)
	pred := make([]float64, m.States)
	probs := make([]float64, m.NumObs)
	next := make([]float64, m.States)
	sum := 0.0
	for a, wa := range pa {
		if wa == 0 {
			continue
		}
		w2 := w * wa
		// True joint of (s', o') after a.
		joint := make([]float64, t.S*t.O)
		for s, as := range alpha {
			if as == 0 {
				continue
			}
			for s2, ts := range truth.T[a][s] {
				if ts == 0 {
					continue
				}
				for o2, po := range truth.O[a][s2] {
					joint[s2*t.O+o2] += as * ts * po
				}
			}
		}
		ca := t.actCode[a]
		mapped := 0.0
		if ca >= 0 {
			m.Predict(h, bel, ca, pred)
			m.ObsProbs(h, pred, ca, probs)
		}
		for o2 := 0; o2 < t.O; o2++ {
			p2 := 0.0
			for s2 := 0; s2 < t.S; s2++ {
				p2 += joint[s2*t.O+o2]
			}
			q2 := 0.0
			if c := t.obsCode[o2]; ca >= 0 && c >= 0 {
				q2 = q * probs[c]
				mapped += probs[c]
			}
			switch {
			case p2 == 0 && q2 == 0:
			case p2 == 0 || q2 == 0:
				sum += w2 * (p2 + q2)
			default:
				alpha2 := make([]float64, t.S)
				for s2 := range alpha2 {
					alpha2[s2] = joint[s2*t.O+o2]
				}
				m.Correct(h, pred, ca, t.obsCode[o2], next)
				bel2 := append([]float64(nil), next...)
				sum += t.node(h+1, append(obs[:h:h], o2), append(act[:h-1:h-1], a), alpha2, p2, bel2, q2, w2)
			}
		}
		if ca >= 0 {
			// Model mass on symbols the true model does not emit.
			sum += w2 * q * math.Max(0, 1-mapped)
		}
	}
	return sum
}
