package policy

import (
	"context"
	"fmt"

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
	if m == nil || pol == nil {
		return 0, 0, fmt.Errorf("%w: no model or no policy", ErrModel)
	}
	if m.Horizon <= 0 || m.States <= 0 || len(m.ObsVocab) != m.NumObs || len(m.ActVocab) != m.NumActions {
		return 0, 0, fmt.Errorf("%w: sizes S=%d O=%d A=%d H=%d with %d and %d symbols", ErrModel,
			m.States, m.NumObs, m.NumActions, m.Horizon, len(m.ObsVocab), len(m.ActVocab))
	}
	if pol.Horizon != 0 && pol.Horizon != m.Horizon {
		return 0, 0, fmt.Errorf("%w: policy for horizon %d, model horizon %d", ErrModel, pol.Horizon, m.Horizon)
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
