package pipeline

import (
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/report"
)

// maxDepartureEvals bounds the model evaluations of the comparison with
// the behaviour; each is exact over the observation tree (|O|^H sequences
// at most), so they only run when that tree is small (maxEvalTree).
const (
	maxDepartureEvals = 12
	maxEvalTree       = 5e4
)

// valueDepartures evaluates, under the model, what the departures of c
// (report.Departures) bring: V_R(π̄) − V_R(π̄ with the departure undone)
// for each of the maxDepartureEvals most probable ones, and with all of
// them undone, in the user's units. It does nothing when c has no
// departure or the observation tree is too large to enumerate.
func valueDepartures(m *estimate.Model, b *pessimism.Bonus, pol *policy.Policy, c *report.Comparison) error {
	if len(c.Departures) == 0 || m.ObsSequences() > maxEvalTree {
		return nil
	}
	width := m.ReturnMax - m.ReturnMin
	full, err := valueWith(m, b, pol, func([]policy.Node) {})
	if err != nil {
		return err
	}
	if err := valueEach(m, b, pol, c, full, width); err != nil {
		return err
	}
	all, err := valueWith(m, b, pol, func(ns []policy.Node) {
		for _, dep := range c.Departures {
			ns[dep.Row.Node].Action = dep.Row.MostLogged
		}
	})
	if err != nil {
		return err
	}
	c.Gain = (full - all) * width
	return nil
}

// valueEach sets the gain of each of the maxDepartureEvals most probable
// departures of c: full (V_R of pol) less V_R with that departure undone,
// times width, the return range: in the user's units.
func valueEach(m *estimate.Model, b *pessimism.Bonus, pol *policy.Policy, c *report.Comparison, full, width float64) error {
	for i := range c.Departures[:min(len(c.Departures), maxDepartureEvals)] {
		dep := &c.Departures[i]
		val, err := valueWith(m, b, pol, func(ns []policy.Node) { ns[dep.Row.Node].Action = dep.Row.MostLogged })
		if err != nil {
			return err
		}
		dep.Gain = (full - val) * width
		c.Checked++
	}
	return nil
}

// valueWith is V_R under the model of a copy of pol whose nodes change
// edits.
func valueWith(m *estimate.Model, b *pessimism.Bonus, pol *policy.Policy, change func(nodes []policy.Node)) (float64, error) {
	q := &policy.Policy{Horizon: pol.Horizon, Nodes: append([]policy.Node(nil), pol.Nodes...), Ctrl: pol.Ctrl, Probs: pol.Probs}
	change(q.Nodes)
	val, err := policy.ModelValue(m, b, q)
	return val.Reward, err
}
