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
	mm, err := prepare(m)
	if err != nil {
		return 0, err
	}
	if H < 0 {
		return 0, fmt.Errorf("%w: horizon %d is negative", ErrPolicy, H)
	}
	w := &walker{mm: mm, H: H, ctx: ctx, limit: maxNodes}
	memo := make([]map[string]float64, H+2)
	for h := range memo {
		memo[h] = make(map[string]float64)
	}
	var value func(h, o int, b []float64) float64
	value = func(h, o int, b []float64) float64 {
		if h > H {
			return 0
		}
		key := strconv.Itoa(o) + "|" + beliefKey(b)
		if v, ok := memo[h][key]; ok {
			return v
		}
		if w.stop() {
			return 0
		}
		probs := make([]float64, mm.nA)
		pol(h, o, b, probs)
		sum := 0.0
		for _, p := range probs {
			if !(p >= 0 && p <= 1) {
				w.err = fmt.Errorf("%w: probability %v at step %d", ErrPolicy, p, h)
				return 0
			}
			sum += p
		}
		if sum < 1-1e-9 || sum > 1+1e-9 {
			w.err = fmt.Errorf("%w: probabilities sum to %v at step %d", ErrPolicy, sum, h)
			return 0
		}
		v := 0.0
		for a, pa := range probs {
			if pa == 0 {
				continue
			}
			v += pa * mm.backup(b, a, h == H, func(o2 int, post []float64) float64 { return value(h+1, o2, post) })
		}
		memo[h][key] = v
		return v
	}
	v := value(1, ObsInit, mm.Start)
	if w.err != nil {
		return 0, w.err
	}
	return v, nil
}
