package policy

import (
	"context"

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
	return codes{obs: m.ObsVocab, act: vocabIndex(m.ActVocab)}
}

// ModelValue evaluates pol exactly under the model m: V_{θ̂,R}^π and
// V_{θ̂,b̂}^π with the bonus b (its Alpha), following the lookup rule of
// Cursor (the controller, or the fallback, once a history leaves the
// tree). It enumerates every observation sequence of positive
// probability, |O|^H at most (historyWalk).
func ModelValue(m *estimate.Model, b *pessimism.Bonus, pol *Policy) (Value, error) {
	if err := checkPlan(m, b); err != nil {
		return Value{}, err
	}
	w, err := newHistoryWalk(m, b, pol, true)
	if err != nil {
		return Value{}, err
	}
	r, bon, _, err := w.run(context.Background(), nil)
	if err != nil {
		return Value{}, err
	}
	return Value{Reward: r, Bonus: bon, LCB: r - bon}, nil
}
