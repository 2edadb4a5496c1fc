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
	w := &returnWalker{m: m, pol: pol, c: newCodes(m)}
	H, S := m.Horizon, m.States
	for range H + 2 {
		w.bel = append(w.bel, make([]float64, S))
		w.pred = append(w.pred, make([]float64, S))
		w.probs = append(w.probs, make([]float64, m.NumObs))
	}
	first := make([]float64, m.NumObs)
	m.FirstObsProbs(first)
	for o, po := range first {
		if po == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		if _, ok := pol.Child(-1, w.c.obs[o]); !ok {
			unmatched += po
			continue
		}
		m.Prior(w.bel[1])
		m.ObserveFirst(w.bel[1], o)
		r, err := w.walk(1, o, *pol.NewCursor())
		if err != nil {
			return 0, 0, err
		}
		value += po * r
	}
	return value, unmatched, nil
}

type returnWalker struct {
	m                *estimate.Model
	pol              *Policy
	c                codes
	bel, pred, probs [][]float64
}

// walk is the expected return from step h on, given o_h = o and the belief
// bel[h] over s_h.
func (w *returnWalker) walk(h, o int, st Cursor) (float64, error) {
	m := w.m
	sym, _, ok := st.Act(w.c.obs[o])
	if !ok {
		return 0, fmt.Errorf("%w: the policy has no action for the first observation %q", ErrModel, w.c.obs[o])
	}
	a, ok := w.c.act[sym]
	if !ok {
		return 0, fmt.Errorf("%w: the policy's action %q at step %d is not in the model's vocabulary", ErrModel, sym, h)
	}
	b := w.bel[h]
	r := m.ExpectedReward(h, b, a)
	if h == m.Horizon {
		return r, nil
	}
	pred, probs := w.pred[h], w.probs[h]
	m.Predict(h, b, a, pred)
	m.ObsProbs(h, pred, a, probs)
	for o2, po := range probs {
		if po == 0 {
			continue
		}
		m.Correct(h, pred, a, o2, w.bel[h+1])
		v, err := w.walk(h+1, o2, st)
		if err != nil {
			return 0, err
		}
		r += po * v
	}
	return r, nil
}
