package policy

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/psrlcb/psrlcb/estimate"
)

// ModelReturn is the expected return E_θ̂^π[r_1+…+r_H] of pol under the
// fitted model m, in the user's reward units (the V_{θ̂,R}^π of the paper,
// before its rescaling to [0,1]), following pol with the Cursor rule. It
// needs no bonus, so it values any policy table under any fitted model:
// the incumbent policy, a baseline's, or the true optimum of a known
// problem (the estimation error on the policy that matters is its true
// value minus this). It enumerates the observation histories of positive
// model probability, at most Σ_h |O|^h of them, and checks ctx between
// first observations.
//
// A first observation the policy has no row for (a smoothed model gives
// every symbol some probability at step 1, even ones the logs never
// start with) contributes no return; its model probability is returned as
// unmatched, so the caller can tell a policy that misses real mass from
// one that misses only smoothing mass.
func ModelReturn(ctx context.Context, m *estimate.Model, pol *Policy) (value, unmatched float64, err error) {
	if err := checkReturnInputs(m, pol); err != nil {
		return 0, 0, err
	}
	w, err := newHistoryWalk(m, nil, pol, false)
	if err != nil {
		return 0, 0, err
	}
	value, _, unmatched, err = w.run(ctx, func(o int) bool {
		_, ok := pol.Child(-1, w.c.obs[o])
		return !ok
	})
	return value, unmatched, err
}

// checkReturnInputs checks that m has consistent sizes and pol its
// horizon (or none).
func checkReturnInputs(m *estimate.Model, pol *Policy) error {
	if m == nil || pol == nil {
		return fmt.Errorf("%w: no model or no policy", ErrModel)
	}
	if m.Horizon <= 0 || m.States <= 0 || len(m.ObsVocab) != m.NumObs || len(m.ActVocab) != m.NumActions {
		return fmt.Errorf("%w: sizes S=%d O=%d A=%d H=%d with %d and %d symbols", ErrModel,
			m.States, m.NumObs, m.NumActions, m.Horizon, len(m.ObsVocab), len(m.ActVocab))
	}
	if pol.Horizon != 0 && pol.Horizon != m.Horizon {
		return fmt.Errorf("%w: policy for horizon %d, model horizon %d", ErrModel, pol.Horizon, m.Horizon)
	}
	return nil
}

// ModelReturnSampled is ModelReturn by n trajectories of m following pol
// (0: DefaultRollouts), for policies whose histories are too many to
// enumerate: each step adds the expected reward given the belief (the same
// mean as the drawn reward, less variance), and a first observation the
// policy has no row for adds 0, as in ModelReturn, whose unmatched mass is
// computed exactly. It returns the mean return in the user's units and
// its standard error; the same seed gives the same figures.
func ModelReturnSampled(ctx context.Context, m *estimate.Model, pol *Policy, n int, seed uint64) (value, se, unmatched float64, err error) {
	if m == nil || pol == nil || m.Horizon <= 0 {
		return 0, 0, 0, fmt.Errorf("%w: no model or no policy", ErrModel)
	}
	if n <= 1 {
		n = DefaultRollouts
	}
	c := newCodes(m)
	ts := newTrajSampler(m, seed, 0x5eed2)
	unmatched = unmatchedMass(pol, c, ts.first)
	value, se, err = ts.meanReturn(ctx, pol, c, n)
	if err != nil {
		return 0, 0, 0, err
	}
	return value, se, unmatched, nil
}

// meanReturn is the mean return of n trajectories following pol and its
// standard error; it checks ctx every 1024 trajectories.
func (ts *trajSampler) meanReturn(ctx context.Context, pol *Policy, c codes, n int) (value, se float64, err error) {
	sum, sq := 0.0, 0.0
	for i := 0; i < n; i++ {
		if i%1024 == 0 && ctx.Err() != nil {
			return 0, 0, ctx.Err()
		}
		ret, err := ts.policyReturn(pol, c)
		if err != nil {
			return 0, 0, err
		}
		sum += ret
		sq += ret * ret
	}
	value, se = meanAndSE(sum, sq, n)
	return value, se, nil
}

// meanAndSE returns the mean of n returns of sum sum and sum of squares
// sq, and its standard error (from the unbiased variance).
func meanAndSE(sum, sq float64, n int) (value, se float64) {
	value = sum / float64(n)
	v := max(sq/float64(n)-value*value, 0) * float64(n) / float64(n-1)
	return value, math.Sqrt(v / float64(n))
}

// cursorAct is the model's code of the action the cursor st plays after
// observation o at step h, drawn with rng when the policy is stochastic;
// the error is for an action the model does not know (or none).
func (c codes) cursorAct(st *Cursor, o, h int, rng *rand.Rand) (int, error) {
	sym, _, _, ok := st.Draw(c.obs[o], rng)
	a, known := c.act[sym]
	if !ok || !known {
		return 0, fmt.Errorf("%w: the policy's action %q at step %d is not in the model's vocabulary", ErrModel, sym, h)
	}
	return a, nil
}

// unmatchedMass is the probability of the first observations pol has no
// row for (first: P(o_1)).
func unmatchedMass(pol *Policy, c codes, first []float64) float64 {
	unmatched := 0.0
	for o, po := range first {
		if _, ok := pol.Child(-1, c.obs[o]); !ok && po > 0 {
			unmatched += po
		}
	}
	return unmatched
}

// policyReturn draws a trajectory of the model following pol and returns
// its expected return given its observations, in the user's units (0
// when pol has no row for its first observation).
func (ts *trajSampler) policyReturn(pol *Policy, c codes) (float64, error) {
	o := ts.start()
	if _, ok := pol.Child(-1, c.obs[o]); !ok {
		return 0, nil
	}
	ts.begin(o)
	return ts.follow(pol.NewCursor(), c, o)
}

// follow plays the policy from its cursor st and the first observation
// o to step H, drawing the observations, and returns the sum of the
// steps' expected rewards given the beliefs.
func (ts *trajSampler) follow(st *Cursor, c codes, o int) (float64, error) {
	m := ts.m
	ret := 0.0
	for h := 1; ; h++ {
		a, err := c.cursorAct(st, o, h, ts.rng)
		if err != nil {
			return 0, err
		}
		ret += m.ExpectedReward(h, ts.bel, a)
		if h == m.Horizon {
			break
		}
		m.Predict(h, ts.bel, a, ts.pred)
		o = ts.step(h, a)
	}
	return ret, nil
}
