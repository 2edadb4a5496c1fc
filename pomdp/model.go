package pomdp

import (
	"fmt"
	"math"

	"github.com/psrlcb/psrlcb/errkind"
)

// InitSymbol is the observation o_1 every episode starts with: the model
// emits its first real observation only after the first action.
const InitSymbol = "init"

// ObsInit is the observation index standing for InitSymbol in histories.
const ObsInit = -1

// probTol is how far a probability row may sum from 1 and still be accepted
// (then renormalised): published .POMDP files write probabilities with six
// decimals, so rows such as 0.333333 0.333333 0.333334 are off by up to a
// few 1e-6.
const probTol = 1e-5

// maxDense bounds |A|·|S|²·|O|, the size of the dense reward table, so that
// a malformed header cannot make the parser allocate gigabytes. 1<<25
// float64 values are 256 MiB, far above the published models (hallway2 has
// about 0.9 million).
const maxDense = 1 << 25

// Sentinel errors. Errors returned by this package wrap one of them.
var (
	// ErrSyntax: the .POMDP text does not follow the grammar (the message
	// names the file and line).
	ErrSyntax = errkind.New(errkind.Data, "pomdp: syntax error")
	// ErrInvalid: the model is not a valid POMDP (a probability row does
	// not sum to 1, a dimension is wrong, ...).
	ErrInvalid = errkind.New(errkind.Data, "pomdp: invalid model")
	// ErrBehavior: a behaviour specification could not be understood.
	ErrBehavior = errkind.New(errkind.Options, "pomdp: invalid behaviour")
	// ErrPolicy: a policy cannot be evaluated under the model (for
	// instance it names an action the model does not have).
	ErrPolicy = errkind.New(errkind.Data, "pomdp: policy does not fit the model")
	// ErrTooLarge: an exact recursion needed more nodes than the budget
	// it was given (OptimalWithin, EvaluatePolicyWithin).
	ErrTooLarge = errkind.New(errkind.Options, "pomdp: exact recursion exceeds its node budget")
)

// POMDP is a finite POMDP with dense tables. Index conventions:
// T[a][s][s'] = P(s'|s,a), O[a][s'][o] = P(o|s',a) (the observation emitted
// on arriving in s' after action a), and the reward R(a,s,s',o) is stored in
// Reward at ((a·|S|+s)·|S|+s')·|O|+o, in reward units (a file with
// "values: cost" is negated on reading).
type POMDP struct {
	Name     string // where it came from, for messages
	Discount float64

	States       []string
	Actions      []string
	Observations []string

	Start  []float64 // initial state distribution
	T      [][][]float64
	O      [][][]float64
	Reward []float64
}

// NumStates is |S|.
func (m *POMDP) NumStates() int { return len(m.States) }

// NumActions is |A|.
func (m *POMDP) NumActions() int { return len(m.Actions) }

// NumObs is |O| (not counting InitSymbol).
func (m *POMDP) NumObs() int { return len(m.Observations) }

// R is the reward R(a,s,s',o).
func (m *POMDP) R(a, s, s2, o int) float64 {
	S, O := len(m.States), len(m.Observations)
	return m.Reward[((a*S+s)*S+s2)*O+o]
}

// ObsName is the name of observation index o, InitSymbol for ObsInit.
func (m *POMDP) ObsName(o int) string {
	if o == ObsInit {
		return InitSymbol
	}
	return m.Observations[o]
}

// Check reports whether m is a well-formed POMDP: non-empty, consistent
// dimensions, distinct names (none of the observations called InitSymbol),
// finite rewards, and probability rows that are non-negative and sum to 1
// within 1e-5. Every function of the package calls it first.
func (m *POMDP) Check() error {
	if m == nil {
		return fmt.Errorf("%w: nil model", ErrInvalid)
	}
	if err := m.checkSize(); err != nil {
		return err
	}
	if err := m.checkNames(); err != nil {
		return err
	}
	if err := m.checkStart(); err != nil {
		return err
	}
	if err := m.checkTables(); err != nil {
		return err
	}
	return m.checkRewards()
}

// checkStart checks that the start is a distribution over the states.
func (m *POMDP) checkStart() error {
	if err := checkRow(m.Start, len(m.States)); err != nil {
		return fmt.Errorf("%w: %s: start distribution: %v", ErrInvalid, m.Name, err)
	}
	return nil
}

// checkSize checks that m has at least one state, action and observation,
// and not too many for dense tables.
func (m *POMDP) checkSize() error {
	S, A, O := len(m.States), len(m.Actions), len(m.Observations)
	if S == 0 || A == 0 || O == 0 {
		return fmt.Errorf("%w: %s: %d states, %d actions, %d observations; each must be at least 1", ErrInvalid, m.Name, S, A, O)
	}
	if float64(A)*float64(S)*float64(S)*float64(O) > maxDense {
		return fmt.Errorf("%w: %s: %d actions × %d² states × %d observations is too large for dense tables", ErrInvalid, m.Name, A, S, O)
	}
	return nil
}

// checkNames checks that the names of the states, actions and
// observations are non-empty and distinct, and that no observation is
// called InitSymbol.
func (m *POMDP) checkNames() error {
	for _, set := range []struct {
		what  string
		names []string
	}{{"state", m.States}, {"action", m.Actions}, {"observation", m.Observations}} {
		if err := m.checkNameSet(set.what, set.names); err != nil {
			return err
		}
	}
	return m.checkInit()
}

// checkInit checks that no observation is called InitSymbol.
func (m *POMDP) checkInit() error {
	for _, n := range m.Observations {
		if n == InitSymbol {
			return fmt.Errorf("%w: %s: observation name %q is reserved for the initial observation o_1", ErrInvalid, m.Name, InitSymbol)
		}
	}
	return nil
}

// checkNameSet checks that the names of one set (what: "state", "action"
// or "observation") are non-empty and distinct.
func (m *POMDP) checkNameSet(what string, names []string) error {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if n == "" {
			return fmt.Errorf("%w: %s: empty %s name", ErrInvalid, m.Name, what)
		}
		if seen[n] {
			return fmt.Errorf("%w: %s: %s %q is declared twice", ErrInvalid, m.Name, what, n)
		}
		seen[n] = true
	}
	return nil
}

// checkTables checks that T and O have one row per action and state, each
// a probability distribution.
func (m *POMDP) checkTables() error {
	A := len(m.Actions)
	if len(m.T) != A || len(m.O) != A {
		return fmt.Errorf("%w: %s: T and O need one matrix per action", ErrInvalid, m.Name)
	}
	for a := range A {
		if err := m.checkAction(a); err != nil {
			return err
		}
	}
	return nil
}

// checkAction checks that T and O have one row per state for action a,
// each a probability distribution.
func (m *POMDP) checkAction(a int) error {
	S, O := len(m.States), len(m.Observations)
	if len(m.T[a]) != S || len(m.O[a]) != S {
		return fmt.Errorf("%w: %s: action %s: T and O need one row per state", ErrInvalid, m.Name, m.Actions[a])
	}
	for s := range S {
		if err := m.checkRows(a, s, O); err != nil {
			return err
		}
	}
	return nil
}

// checkRows checks that the transition row of (a, s) is a distribution
// over the states, and its observation row one over the O observations.
func (m *POMDP) checkRows(a, s, O int) error {
	if err := checkRow(m.T[a][s], len(m.States)); err != nil {
		return fmt.Errorf("%w: %s: T: %s : %s: %v", ErrInvalid, m.Name, m.Actions[a], m.States[s], err)
	}
	if err := checkRow(m.O[a][s], O); err != nil {
		return fmt.Errorf("%w: %s: O: %s : %s: %v", ErrInvalid, m.Name, m.Actions[a], m.States[s], err)
	}
	return nil
}

// checkRewards checks that the reward table has |A|·|S|²·|O| finite
// entries.
func (m *POMDP) checkRewards() error {
	S, A, O := len(m.States), len(m.Actions), len(m.Observations)
	if len(m.Reward) != A*S*S*O {
		return fmt.Errorf("%w: %s: reward table has %d entries, want |A|·|S|²·|O| = %d", ErrInvalid, m.Name, len(m.Reward), A*S*S*O)
	}
	for i, r := range m.Reward {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return fmt.Errorf("%w: %s: reward entry %d is %v", ErrInvalid, m.Name, i, r)
		}
	}
	return nil
}

// checkRow checks one probability distribution of length n.
func checkRow(p []float64, n int) error {
	if len(p) != n {
		return fmt.Errorf("has %d entries, want %d", len(p), n)
	}
	sum, err := probSum(p)
	if err != nil {
		return err
	}
	if math.Abs(sum-1) > probTol {
		return fmt.Errorf("probabilities sum to %.9g, not 1 (tolerance %g)", sum, probTol)
	}
	return nil
}

// probSum is the sum of the probabilities p, each of which must lie in
// [0,1].
func probSum(p []float64) (float64, error) {
	sum := 0.0
	for _, v := range p {
		if !(v >= 0 && v <= 1) {
			return 0, fmt.Errorf("probability %v is outside [0,1]", v)
		}
		sum += v
	}
	return sum, nil
}

// normalize rescales a row that passed checkRow to sum exactly (up to
// rounding) to 1.
func normalize(p []float64) {
	sum := 0.0
	for _, v := range p {
		sum += v
	}
	if sum == 1 || sum == 0 {
		return
	}
	for i := range p {
		p[i] /= sum
	}
}
