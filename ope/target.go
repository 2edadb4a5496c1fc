package ope

import (
	"fmt"
	"math"

	"github.com/psrlcb/psrlcb/errkind"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
)

// ErrTarget is returned for a target policy that does not fit the logs: an
// action or observation the logs do not have, probabilities that do not
// sum to one, a history the policy has no row for.
var ErrTarget = errkind.New(errkind.Data, "ope: invalid target policy")

// ErrData is returned for logs the estimators cannot use (no episodes, no
// propensities).
var ErrData = errkind.New(errkind.Data, "ope: invalid logs")

// Target is an evaluated policy π_e over the logs' vocabularies: the
// probability it gives each action at each history.
type Target interface {
	// Follow starts an episode.
	Follow() Follower
	// Deterministic says whether every probability is 0 or 1.
	Deterministic() bool
}

// Follower follows one episode through a Target.
type Follower interface {
	// Next takes the observation o_h (a code of the logs' observation
	// vocabulary) after the action a_{h−1} taken (a code, −1 at h = 1) and
	// writes π_e(· | τ_{h−1}, o_h) over the action codes into p.
	Next(prevAct, obs int, p []float64) error
	// Clone is an independent copy of the follower's state.
	Clone() Follower
}

// TreeTarget is a policy table (policy.arrow) as a Target, followed with
// the lookup rule of the policy file (policy.Cursor): a deterministic
// table's action with probability one, a stochastic table's actions
// (policy.Policy.Probs) with their probabilities, so that a logged step's
// importance ratio is π(a_h | τ_{h−1}, o_h)/π^b(a_h | τ_{h−1}, o_h).
type TreeTarget struct {
	pol           *policy.Policy
	obs           []string // observation codes → symbols
	act           []string // action codes → symbols
	actCode       map[string]int
	nAct, endCode int
	endAct        int // the action code of the end symbol (−1: none)
}

// NewTreeTarget checks that every action of pol is an action of the logs
// d and returns the target.
func NewTreeTarget(pol *policy.Policy, d *ingest.Dataset) (*TreeTarget, error) {
	t := &TreeTarget{pol: pol, obs: d.ObsVocab, act: d.ActVocab, actCode: codes(d.ActVocab), nAct: d.NumActions()}
	t.endCode, t.endAct = endCodes(d)
	if err := t.checkActions(); err != nil {
		return nil, err
	}
	return t, nil
}

// checkActions checks that every action and fallback action of the
// policy's rows is an action of the logs.
func (t *TreeTarget) checkActions() error {
	for _, n := range t.pol.Nodes {
		for _, a := range []string{n.Action, n.Fallback} {
			if _, ok := t.actCode[a]; !ok && a != "" {
				return fmt.Errorf("%w: policy row %d (step %d, observation %q) takes action %q, which the logs never took", ErrTarget, n.ID, n.Step, n.Obs, a)
			}
		}
	}
	return nil
}

// Deterministic says whether the table gives every history one action
// (no probabilities, or every row's probability one).
func (t *TreeTarget) Deterministic() bool {
	if !t.pol.Stochastic() {
		return true
	}
	for i := range t.pol.Nodes {
		if t.pol.Prob(int64(i)) != 1 {
			return false
		}
	}
	return true
}

// Follow starts an episode at the root of the table.
func (t *TreeTarget) Follow() Follower {
	cur := t.pol.NewCursor()
	if t.pol.Stochastic() {
		return &stochFollower{t: t, cur: cur, pending: -1}
	}
	return &treeFollower{t: t, cur: cur, last: -1}
}

type treeFollower struct {
	t    *TreeTarget
	cur  *policy.Cursor
	last int  // the action the policy took at the previous step
	off  bool // the episode took another action: the policy no longer applies
}

func (f *treeFollower) Clone() Follower {
	c := *f
	cur := *f.cur
	c.cur = &cur
	return &c
}

// Next follows o_h. Once the episode has taken an action the policy would
// not take, its importance weight is zero from then on and the
// probabilities no longer matter: the last action is repeated.
func (f *treeFollower) Next(prevAct, obs int, p []float64) error {
	clear(p[:f.t.nAct])
	if prevAct >= 0 && prevAct != f.last {
		f.off = true
	}
	if f.off {
		p[max(f.last, 0)] = 1
		return nil
	}
	if f.forced(obs, p) {
		return nil
	}
	return f.follow(obs, p)
}

// forced gives the end action probability one after the end observation
// obs, when the logs have both, and reports whether it did.
func (f *treeFollower) forced(obs int, p []float64) bool {
	if obs == f.t.endCode && f.t.endAct >= 0 {
		// Past an early end the action is forced, whatever the policy.
		p[f.t.endAct] = 1
		f.last = f.t.endAct
		return true
	}
	return false
}

// follow moves the cursor on with the observation obs and gives the action
// the policy takes there probability one.
func (f *treeFollower) follow(obs int, p []float64) error {
	sym, _, ok := f.cur.Act(f.t.obs[obs])
	if !ok {
		return fmt.Errorf("%w: the policy has no row for the first observation %q", ErrTarget, f.t.obs[obs])
	}
	a, known := f.t.actCode[sym]
	if !known {
		return fmt.Errorf("%w: the policy takes action %q, which the logs never took", ErrTarget, sym)
	}
	p[a] = 1
	f.last = a
	return nil
}

// endCodes are the codes of the end symbol among the logs' observations
// and actions (−1 when the logs have no early end).
func endCodes(d *ingest.Dataset) (obs, act int) {
	return endCode(d.ObsVocab), endCode(d.ActVocab)
}

// endCode is the code of the end symbol in vocab (the last one, were it
// listed twice), −1 when vocab has none.
func endCode(vocab []string) int {
	code := -1
	for i, s := range vocab {
		if s == ingest.EndSymbol {
			code = i
		}
	}
	return code
}

// checkDistribution checks a probability vector: entries in [0,1] summing
// to one within probTol.
func checkDistribution(p []float64) error {
	sum := 0.0
	for _, x := range p {
		if !(x >= 0 && x <= 1+probTol) {
			return fmt.Errorf("probability %v outside [0,1]", x)
		}
		sum += x
	}
	if math.Abs(sum-1) > probTol {
		return fmt.Errorf("probabilities sum to %v, not 1", sum)
	}
	return nil
}

// probTol is how far a target's probabilities may sum from one: tables
// written with six decimals (1/3 as 0.333333) are off by a few 1e-6.
const probTol = 1e-5

// stochFollower follows a stochastic table. The cursor moves by an
// observation only once the action taken after it is known (the next
// call's prevAct), with policy.Cursor.Take; until then the observation
// waits in pending.
type stochFollower struct {
	t       *TreeTarget
	cur     *policy.Cursor
	pending int  // the observation the cursor has not moved by yet, −1 for none
	off     bool // the episode took an action the policy never takes there
}

// Clone is a copy of the follower with its own cursor, to branch the
// episode.
func (f *stochFollower) Clone() Follower {
	c := *f
	cur := *f.cur
	c.cur = &cur
	return &c
}

// Next moves the cursor by the previous observation and the action
// prevAct taken after it, then writes the policy's probabilities of the
// actions after obs. Once the episode has taken an action of probability
// zero its importance weight is zero from then on and the probabilities
// no longer matter: prevAct is given probability one.
func (f *stochFollower) Next(prevAct, obs int, p []float64) error {
	clear(p[:f.t.nAct])
	if err := f.take(prevAct); err != nil {
		return err
	}
	if f.off {
		p[max(prevAct, 0)] = 1
		return nil
	}
	if obs == f.t.endCode && f.t.endAct >= 0 {
		// Past an early end the action is forced, whatever the policy.
		p[f.t.endAct] = 1
		return nil
	}
	f.pending = obs
	return f.choices(obs, p)
}

// take moves the cursor by the pending observation and the action a
// taken after it, marking the episode off the policy when the policy
// gives a probability zero.
func (f *stochFollower) take(a int) error {
	if f.pending < 0 || f.off || a < 0 {
		return nil
	}
	q, ok := f.cur.Take(f.t.obs[f.pending], f.t.act[a])
	if !ok {
		return f.noRoot(f.pending)
	}
	f.pending = -1
	f.off = q == 0
	return nil
}

// choices writes into p the probabilities the policy gives its actions
// after the observation obs, without moving the cursor.
func (f *stochFollower) choices(obs int, p []float64) error {
	choices, ok := f.cur.Choices(f.t.obs[obs])
	if !ok {
		return f.noRoot(obs)
	}
	for _, ch := range choices {
		a, known := f.t.actCode[ch.Action]
		if !known {
			return fmt.Errorf("%w: the policy takes action %q, which the logs never took", ErrTarget, ch.Action)
		}
		p[a] += ch.Prob
	}
	return nil
}

// noRoot is the error of a table without a row for the first observation
// obs.
func (f *stochFollower) noRoot(obs int) error {
	return fmt.Errorf("%w: the policy has no row for the first observation %q", ErrTarget, f.t.obs[obs])
}
