package pomdp

import (
	"context"
	"fmt"
	"strconv"
)

// StochasticPolicy is a stochastic policy that depends on the history
// only through the step h, the current observation o (ObsInit at h = 1)
// and the true belief over the state after it: it writes π(·|τ_{h−1}, o_h)
// over the action indices into p (summing to 1). Behaviours, the optimal
// policy and any policy of the observation alone are of this form.
type StochasticPolicy func(h, o int, belief []float64, p []float64)

// StochasticValueWithin is the exact value E^π[r_1+…+r_H] of pol under
// the true model, by enumerating the history tree with the true belief,
// memoised on (step, observation, belief); it fails with ErrTooLarge
// after maxNodes distinct nodes (0: no budget), when pol's probabilities
// do not form a distribution, or when ctx is cancelled.
func StochasticValueWithin(ctx context.Context, m *POMDP, H int, pol StochasticPolicy, maxNodes int) (float64, error) {
	mm, err := prepareHorizon(m, H)
	if err != nil {
		return 0, err
	}
	w := &stochWalk{walker: walker{mm: mm, H: H, ctx: ctx, limit: maxNodes}, pol: pol, memo: newMemo(H)}
	return w.result(w.value(1, ObsInit, mm.Start))
}

// stochWalk values a StochasticPolicy over the history tree, memoised on
// (step, observation, exact belief).
type stochWalk struct {
	walker
	pol  StochasticPolicy
	memo []map[string]float64 // memo[h]: the value from step h on
}

// value is the policy's expected return from step h on after observation
// o at belief b, and 0 after step H.
func (w *stochWalk) value(h, o int, b []float64) float64 {
	if h > w.H {
		return 0
	}
	key := strconv.Itoa(o) + "|" + beliefKey(b)
	return w.memoized(w.memo, h, key, func() (float64, bool) { return w.expand(h, o, b) })
}

// expand is the value from step h on after observation o at belief b:
// Σ_a π(a) times the action's expected reward and the values after it;
// false when the policy's probabilities are not a distribution.
func (w *stochWalk) expand(h, o int, b []float64) (float64, bool) {
	probs, ok := w.probs(h, o, b)
	if !ok {
		return 0, false
	}
	v := 0.0
	for a, pa := range probs {
		if pa == 0 {
			continue
		}
		v += pa * w.mm.backup(b, a, h == w.H, func(o2 int, post []float64) float64 { return w.value(h+1, o2, post) })
	}
	return v, true
}

// probs is the policy's distribution over actions at step h after
// observation o at belief b; false, with w.err set, when it is not a
// distribution.
func (w *stochWalk) probs(h, o int, b []float64) ([]float64, bool) {
	probs := make([]float64, w.mm.nA)
	w.pol(h, o, b, probs)
	if err := checkPolicyProbs(probs, h); err != nil {
		w.err = err
		return nil, false
	}
	return probs, true
}

// checkPolicyProbs checks that probs, a policy's at step h, are
// probabilities summing to 1 within 1e-9.
func checkPolicyProbs(probs []float64, h int) error {
	sum := 0.0
	for _, p := range probs {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("%w: probability %v at step %d", ErrPolicy, p, h)
		}
		sum += p
	}
	if sum < 1-1e-9 || sum > 1+1e-9 {
		return fmt.Errorf("%w: probabilities sum to %v at step %d", ErrPolicy, sum, h)
	}
	return nil
}
