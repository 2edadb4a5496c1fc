package policy

import (
	"fmt"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pessimism"
)

// Value holds the model values of a policy: V_{θ̂,R}, V_{θ̂,b̂} and the
// lower confidence bound V_{θ̂,R} − V_{θ̂,b̂} (R rescaled to [0,1]).
type Value struct {
	Reward float64 `json:"value_reward"`
	Bonus  float64 `json:"value_bonus"`
	LCB    float64 `json:"value_lcb"`
}

// codes maps the policy's symbols to the model's codes.
type codes struct {
	obs []string
	act map[string]int
}

func newCodes(m *estimate.Model) codes {
	c := codes{obs: m.ObsVocab, act: make(map[string]int, len(m.ActVocab))}
	for a, s := range m.ActVocab {
		c.act[s] = a
	}
	return c
}

// ModelValue evaluates pol exactly under the model m: V_{θ̂,R}^π and
// V_{θ̂,b̂}^π with the bonus b (its Alpha), following the lookup rule of
// Cursor (fallback once a history leaves the tree). It enumerates every
// observation sequence of positive probability, |O|^H at most.
func ModelValue(m *estimate.Model, b *pessimism.Bonus, pol *Policy) (Value, error) {
	if err := checkPlan(m, b); err != nil {
		return Value{}, err
	}
	e, err := newEvaluator(m, b, pol)
	if err != nil {
		return Value{}, err
	}
	first := make([]float64, m.NumObs)
	m.FirstObsProbs(first)
	var v Value
	for o, po := range first {
		if po == 0 {
			continue
		}
		m.Prior(e.bel[1])
		m.ObserveFirst(e.bel[1], o)
		r, bon, err := e.walk(1, o, *pol.NewCursor(), b.Root)
		if err != nil {
			return Value{}, err
		}
		v.Reward += po * r
		v.Bonus += po * bon
	}
	v.LCB = v.Reward - v.Bonus
	return v, nil
}

type evaluator struct {
	m                *estimate.Model
	b                *pessimism.Bonus
	pol              *Policy
	c                codes
	fz               *estimate.Featurizer
	shift, scale     float64
	bel, pred, probs [][]float64
}

func (e *evaluator) walk(h, o int, st Cursor, sum float64) (float64, float64, error) {
	m := e.m
	sym, _, ok := st.Act(e.c.obs[o])
	if !ok {
		return 0, 0, fmt.Errorf("%w: the policy has no action for the first observation %q", ErrModel, e.c.obs[o])
	}
	a, ok := e.c.act[sym]
	if !ok {
		return 0, 0, fmt.Errorf("%w: the policy's action %q is not in the model's vocabulary", ErrModel, sym)
	}
	b := e.bel[h]
	r := (m.ExpectedReward(h, b, a) - e.shift) * e.scale
	if h == m.Horizon {
		return r, e.b.Value(sum), nil
	}
	pred, probs := e.pred[h], e.probs[h]
	m.Predict(h, b, a, pred)
	m.ObsProbs(h, pred, a, probs)
	f := make([]float64, e.b.Dims[h])
	e.fz.Feature(h, pred, a, f)
	s2 := sum + e.b.StepNorm2(h, f)
	var vr, vb float64
	for o2, po := range probs {
		if po == 0 {
			continue
		}
		m.Correct(h, pred, a, o2, e.bel[h+1])
		cr, cb, err := e.walk(h+1, o2, st, s2)
		if err != nil {
			return 0, 0, err
		}
		vr += po * cr
		vb += po * cb
	}
	return r + vr, vb, nil
}

// newEvaluator prepares the walk of pol's trajectories under m, with a
// belief, prediction and observation-probability buffer per step; the
// error is estimate.NewFeaturizer's.
func newEvaluator(m *estimate.Model, b *pessimism.Bonus, pol *Policy) (*evaluator, error) {
	fz, err := estimate.NewFeaturizer(m)
	if err != nil {
		return nil, err
	}
	e := &evaluator{m: m, b: b, pol: pol, c: newCodes(m), fz: fz}
	e.shift, e.scale = m.RewardScale()
	H, S := m.Horizon, m.States
	e.bel = make([][]float64, H+2)
	e.pred = make([][]float64, H+2)
	e.probs = make([][]float64, H+2)
	for h := range e.bel {
		e.bel[h] = make([]float64, S)
		e.pred[h] = make([]float64, S)
		e.probs[h] = make([]float64, m.NumObs)
	}
	return e, nil
}
