package pomdp

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Behavior is a stochastic behaviour policy π^b that may depend on the
// history only through the step and the true belief over the hidden state
// (which the simulator knows). The built-in ones come from ParseBehavior.
type Behavior interface {
	// Probs writes π^b(·|τ_{h-1}, o_h) into p (length |A|, summing to 1)
	// at step h (1-based), given the true belief over the current state.
	Probs(h int, belief []float64, p []float64)
	// UsesBelief is false when Probs ignores the belief, so simulators
	// may skip the filtering.
	UsesBelief() bool
	// String is the specification the behaviour was built from.
	String() string
}

// ParseBehavior builds a behaviour policy for m from a specification:
//
//	uniform            every action with probability 1/|A|
//	myopic:EPS         with probability 1−EPS the action with the highest
//	                   expected immediate reward under the true belief
//	                   (ties to the lowest index), else uniform; so the
//	                   greedy action has propensity 1−EPS+EPS/|A|
//	fixed:ACTION:EPS   with probability 1−EPS the named action (a name or a
//	                   0-based number), else uniform
//
// EPS lies in [0,1]; "myopic" alone means myopic:0.
func ParseBehavior(spec string, m *POMDP) (Behavior, error) {
	mm, err := prepare(m)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(strings.TrimSpace(spec), ":")
	switch parts[0] {
	case "uniform":
		if len(parts) == 1 {
			return &mixture{spec: "uniform", A: mm.nA, eps: 1, fixed: -1}, nil
		}
	case "myopic":
		return parseMyopic(spec, parts, mm)
	case "fixed":
		return parseFixed(spec, parts, mm)
	}
	return nil, fmt.Errorf("%w: %q: expected uniform, myopic:EPS or fixed:ACTION:EPS", ErrBehavior, spec)
}

// parseEps reads the EPS s of the behaviour spec, a number in [0,1].
func parseEps(spec, s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0 && v <= 1) {
		return 0, fmt.Errorf("%w: %q: EPS must be a number in [0,1], found %q", ErrBehavior, spec, s)
	}
	return v, nil
}

// parseMyopic builds the behaviour "myopic" or "myopic:EPS" (spec, split
// at ':' into parts).
func parseMyopic(spec string, parts []string, mm *model) (Behavior, error) {
	e := 0.0
	switch len(parts) {
	case 1:
	case 2:
		var err error
		if e, err = parseEps(spec, parts[1]); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: %q: expected myopic:EPS", ErrBehavior, spec)
	}
	return &mixture{spec: spec, A: mm.nA, eps: e, fixed: -1, model: mm}, nil
}

// parseFixed builds the behaviour "fixed:ACTION:EPS" (spec, split at ':'
// into parts).
func parseFixed(spec string, parts []string, mm *model) (Behavior, error) {
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: %q: expected fixed:ACTION:EPS", ErrBehavior, spec)
	}
	a := mm.actionNamed(parts[1])
	if a < 0 {
		return nil, fmt.Errorf("%w: %q: unknown action %q (the model has %s)", ErrBehavior, spec, parts[1], strings.Join(mm.Actions, ", "))
	}
	e, err := parseEps(spec, parts[2])
	if err != nil {
		return nil, err
	}
	return &mixture{spec: spec, A: mm.nA, eps: e, fixed: a}, nil
}

// actionNamed is the index of the action called name (the last one so
// called), else of the action numbered name (0-based), else -1.
func (mm *model) actionNamed(name string) int {
	a := -1
	for i, n := range mm.Actions {
		if n == name {
			a = i
		}
	}
	if a < 0 {
		a = mm.actionNumbered(name)
	}
	return a
}

// actionNumbered is the index of the action numbered name (0-based), or
// -1.
func (mm *model) actionNumbered(name string) int {
	if i, err := strconv.Atoi(name); err == nil && i >= 0 && i < mm.nA {
		return i
	}
	return -1
}

// mixture plays a base action with probability 1−eps and a uniform action
// otherwise; the base action is fixed, or myopic when model is set.
type mixture struct {
	spec  string
	A     int
	eps   float64
	fixed int
	model *model
}

// tieTol is the relative gap below which two expected rewards count as a
// tie for the myopic behaviour: sums of the same terms in another order can
// differ in the last bits, and such noise must not decide the action.
const tieTol = 1e-12

func (b *mixture) Probs(h int, belief []float64, p []float64) {
	u := b.eps / float64(b.A)
	for i := range p {
		p[i] = u
	}
	if b.eps == 1 {
		return
	}
	p[b.base(belief)] += 1 - b.eps
}

// base is the base action: the fixed one, or the greedy one under the
// belief when the behaviour is myopic.
func (b *mixture) base(belief []float64) int {
	if b.model != nil {
		return greedy(b.model, belief)
	}
	return b.fixed
}

// greedy is the action with the highest expected immediate reward under
// the belief, ties to the lowest index.
func greedy(mm *model, belief []float64) int {
	best, bestV := 0, math.Inf(-1)
	for a := range mm.nA {
		v := mm.expectedReward(belief, a)
		if a == 0 || v > bestV+tieTol*(1+math.Abs(bestV)) {
			best, bestV = a, v
		}
	}
	return best
}

func (b *mixture) UsesBelief() bool { return b.model != nil }
func (b *mixture) String() string   { return b.spec }
