package policy

import (
	"context"
	"fmt"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pessimism"
)

// historyWalk is the exact walk of a policy's histories under a fitted
// model: every observation sequence of positive model probability,
// followed with the Cursor rule (the controller past the table), the
// belief over s_h carried down each branch. It adds up each step's
// expected reward given the belief, (r − shift)·scale, and, with a bonus,
// the running Σ_h ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} whose b̂ = g(Σ) it charges at step H.
// It is the one walk behind ModelValue (rescaled reward and bonus),
// ModelReturn (the reward in the user's units) and ValueUnder's exact
// case (every leaf's Σ and probability). |O|^H leaves at most.
type historyWalk struct {
	m            *estimate.Model
	b            *pessimism.Bonus // nil: no bonus
	pol          *Policy
	c            codes
	fz           *estimate.Featurizer
	shift, scale float64
	// leaf, when set, is called at every step-H history with its Σ and
	// model probability, in the order of the walk.
	leaf             func(sum, prob float64)
	bel, pred, probs [][]float64
}

// newHistoryWalk prepares the walk of pol under m; with rescale the
// rewards are rescaled to [0,1] (estimate.Model.RewardScale), otherwise
// kept in the user's units. The error is estimate.NewFeaturizer's.
func newHistoryWalk(m *estimate.Model, b *pessimism.Bonus, pol *Policy, rescale bool) (*historyWalk, error) {
	w := &historyWalk{m: m, b: b, pol: pol, c: newCodes(m), scale: 1}
	if err := w.addFeaturizer(); err != nil {
		return nil, err
	}
	if rescale {
		w.shift, w.scale = m.RewardScale()
	}
	H, S := m.Horizon, m.States
	w.bel, w.pred, w.probs = perDepth(H, S), perDepth(H, S), perDepth(H, m.NumObs)
	return w, nil
}

// addFeaturizer sets the walk's featurizer of the model's features when
// there is a bonus; the error is estimate.NewFeaturizer's.
func (w *historyWalk) addFeaturizer() error {
	if w.b == nil {
		return nil
	}
	fz, err := estimate.NewFeaturizer(w.m)
	w.fz = fz
	return err
}

// run walks from every first observation of positive probability, except
// those skip reports (their probability is returned as skipped), and
// returns the expected reward and b̂. It checks ctx between first
// observations.
func (w *historyWalk) run(ctx context.Context, skip func(o int) bool) (reward, bonus, skipped float64, err error) {
	first := make([]float64, w.m.NumObs)
	w.m.FirstObsProbs(first)
	root := w.rootSum()
	for o, po := range first {
		if po == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return 0, 0, 0, err
		}
		if skip != nil && skip(o) {
			skipped += po
			continue
		}
		r, bon, err := w.walkFirst(o, root, po)
		if err != nil {
			return 0, 0, 0, err
		}
		reward += po * r
		bonus += po * bon
	}
	return reward, bonus, skipped, nil
}

// rootSum is the bonus sum's start, Σ_0 (0 without a bonus).
func (w *historyWalk) rootSum() float64 {
	if w.b != nil {
		return w.b.Root
	}
	return 0
}

// walkFirst is walk from the first observation o of probability po,
// with the bonus sum's start root.
func (w *historyWalk) walkFirst(o int, root, po float64) (float64, float64, error) {
	w.m.Prior(w.bel[1])
	w.m.ObserveFirst(w.bel[1], o)
	return w.walk(1, o, *w.pol.NewCursor(), root, po)
}

// walk returns the expected reward-to-go from step h and the expected b̂,
// given o_h = o, the belief bel[h] over s_h, the running sum and the
// history's model probability prob. A stochastic policy's choices are
// walked each with its probability (walkChoices).
func (w *historyWalk) walk(h, o int, st Cursor, sum, prob float64) (float64, float64, error) {
	if w.pol.Stochastic() {
		return w.walkChoices(h, o, st, sum, prob)
	}
	a, err := w.stepAction(&st, o, h)
	if err != nil {
		return 0, 0, err
	}
	return w.walkAction(h, a, st, sum, prob)
}

// walkAction is walk once the action a at step h is known (the cursor
// st past it).
func (w *historyWalk) walkAction(h, a int, st Cursor, sum, prob float64) (float64, float64, error) {
	m := w.m
	r := (m.ExpectedReward(h, w.bel[h], a) - w.shift) * w.scale
	if h == m.Horizon {
		return w.atLeaf(r, sum, prob)
	}
	s2 := w.predict(h, a, sum)
	vr, vb, err := w.children(h, a, st, s2, prob)
	if err != nil {
		return 0, 0, err
	}
	return r + vr, vb, nil
}

// walkChoices is walk for a stochastic policy: the mean over the actions
// the policy may take at o_h, by their probabilities, of the walks that
// take them (the history's probability times the action's reaches the
// leaves).
func (w *historyWalk) walkChoices(h, o int, st Cursor, sum, prob float64) (vr, vb float64, err error) {
	obs := w.c.obs[o]
	choices, ok := st.Choices(obs)
	if !ok {
		return 0, 0, fmt.Errorf("%w: the policy has no action for the first observation %q", ErrModel, obs)
	}
	for _, ch := range choices {
		a, known := w.c.act[ch.Action]
		if !known {
			return 0, 0, fmt.Errorf("%w: the policy's action %q at step %d is not in the model's vocabulary", ErrModel, ch.Action, h)
		}
		next := st
		next.Take(obs, ch.Action)
		r, b, err := w.walkAction(h, a, next, sum, prob*ch.Prob)
		if err != nil {
			return 0, 0, err
		}
		vr += ch.Prob * r
		vb += ch.Prob * b
	}
	return vr, vb, nil
}

// stepAction is cursorAction's action code at step h, an error when the
// model does not know the action.
func (w *historyWalk) stepAction(st *Cursor, o, h int) (int, error) {
	a, sym, err := w.cursorAction(st, o, nil)
	if err == nil && a < 0 {
		err = fmt.Errorf("%w: the policy's action %q at step %d is not in the model's vocabulary", ErrModel, sym, h)
	}
	return a, err
}

// atLeaf reports the step-H history of running sum sum and probability
// prob to leaf, and returns its reward r and its b̂ (0 without a bonus).
func (w *historyWalk) atLeaf(r, sum, prob float64) (float64, float64, error) {
	if w.leaf != nil {
		w.leaf(sum, prob)
	}
	if w.b == nil {
		return r, 0, nil
	}
	return r, w.b.Value(sum), nil
}

// predict sets pred[h] and probs[h] to the prediction after action a at
// step h and its observation probabilities, and returns the running sum
// with the step's bonus term added (when there is a bonus).
func (w *historyWalk) predict(h, a int, sum float64) float64 {
	pred, probs := w.pred[h], w.probs[h]
	w.m.Predict(h, w.bel[h], a, pred)
	w.m.ObsProbs(h, pred, a, probs)
	s2 := sum
	if w.b != nil {
		f := make([]float64, w.b.Dims[h])
		w.fz.Feature(h, pred, a, f)
		s2 += w.b.StepNorm2(h, f)
	}
	return s2
}

// children walks the children of the step-h node after action a (its
// prediction in pred[h]) and returns their probability-weighted sums of
// reward-to-go and b̂.
func (w *historyWalk) children(h, a int, st Cursor, s2, prob float64) (vr, vb float64, err error) {
	pred := w.pred[h]
	for o2, po := range w.probs[h] {
		if po == 0 {
			continue
		}
		w.m.Correct(h, pred, a, o2, w.bel[h+1])
		cr, cb, err := w.walk(h+1, o2, st, s2, prob*po)
		if err != nil {
			return 0, 0, err
		}
		vr += po * cr
		vb += po * cb
	}
	return vr, vb, nil
}
