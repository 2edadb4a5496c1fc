package report

import (
	"fmt"
	"math"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/ope"
)

// ComparedFile is the table of psrlcb fit --compare: one row per
// evaluated policy and estimator.
const ComparedFile = "compared.arrow"

// PlanName names the run's own policy among the compared ones.
const PlanName = "this run's policy (policy.arrow)"

// ComparedPolicy is one policy psrlcb fit --compare evaluated on the
// run's logs (the run's own policy first): the estimators of package ope
// that need no further model (the doubly robust ones are left to psrlcb
// evaluate --logs), in the logs' units, and the one its summary leads
// with.
type ComparedPolicy struct {
	Policy      string        `json:"policy"`
	Estimates   []EstimateRow `json:"estimates"`
	Recommended string        `json:"recommended"`
	Summary     string        `json:"summary"`
}

// NewComparedPolicy records the evaluation of the named policy.
func NewComparedPolicy(name string, res *ope.Result) ComparedPolicy {
	c := ComparedPolicy{Policy: name, Estimates: EstimateRows(res.Estimates), Recommended: res.Recommended}
	c.Summary = comparedSummary(&c)
	return c
}

// Get returns the named estimator's row (nil when absent).
func (c *ComparedPolicy) Get(name string) *EstimateRow { return estimateNamed(c.Estimates, name) }

// estimateNamed is the row of estimator name in rows (nil when absent).
func estimateNamed(rows []EstimateRow, name string) *EstimateRow {
	for i := range rows {
		if rows[i].Estimator == name {
			return &rows[i]
		}
	}
	return nil
}

// comparedSummary is the figure a reader compares: the recommended
// estimate with its interval and estimator, or why there is none.
func comparedSummary(c *ComparedPolicy) string {
	r := c.Get(c.Recommended)
	if r == nil || math.IsNaN(float64(r.Value)) {
		return "the logs cannot estimate it"
	}
	s := num(float64(r.Value), 4) + intervalText(r)
	s += " (" + EstimatorWords(r.Estimator)
	if !r.Reliable || r.Estimator == ope.EstModel {
		s += "; " + r.Reason
	}
	return s + ")"
}

// intervalText is an estimate's interval, " [lower, upper]", or "" when
// it has none.
func intervalText(r *EstimateRow) string {
	if math.IsNaN(float64(r.Lower)) {
		return ""
	}
	return fmt.Sprintf(" [%s, %s]", num(float64(r.Lower), 4), num(float64(r.Upper), 4))
}

// comparedTable is compared.arrow.
func (r *Run) comparedTable() Table {
	var pol, est, interval, reason []string
	var val, lo, hi, ess []float64
	var eps []int64
	var rel, rec []bool
	for _, c := range r.Manifest.Compared {
		for _, e := range c.Estimates {
			pol, est, interval, reason = append(pol, c.Policy), append(est, e.Estimator), append(interval, e.Interval), append(reason, e.Reason)
			val, lo, hi, ess = append(val, float64(e.Value)), append(lo, float64(e.Lower)), append(hi, float64(e.Upper)), append(ess, float64(e.ESS))
			eps, rel, rec = append(eps, int64(e.Episodes)), append(rel, e.Reliable), append(rec, e.Estimator == c.Recommended)
		}
	}
	return Table{Meta: r.meta("compared"), Columns: []arrowio.Column{
		{Name: "policy", String: pol},
		{Name: "estimator", String: est},
		{Name: "value", Float64: val},
		{Name: "lower", Float64: lo},
		{Name: "upper", Float64: hi},
		{Name: "interval", String: interval},
		{Name: "ess", Float64: ess},
		{Name: "episodes", Int64: eps},
		{Name: "reliable", Bool: rel},
		{Name: "recommended", Bool: rec},
		{Name: "reason", String: reason},
	}}
}

// comparedRowHTML is a row of the page's comparison table.
type comparedRowHTML struct {
	Policy, Estimate, Model, Bound, ESS string
}

func comparedRows(run *Run) []comparedRowHTML {
	var out []comparedRowHTML
	for i := range run.Manifest.Compared {
		c := &run.Manifest.Compared[i]
		row := comparedRowHTML{Policy: c.Policy, Estimate: c.Summary, Model: "–", Bound: "–", ESS: "–"}
		if m := c.Get(ope.EstModel); m != nil && !math.IsNaN(float64(m.Value)) {
			row.Model = num(float64(m.Value), 4)
		}
		if b := c.Get(ope.EstModelLCB); b != nil && !math.IsNaN(float64(b.Value)) {
			row.Bound = num(float64(b.Value), 4)
		}
		if e := c.Get(ope.EstIS); e != nil && !math.IsNaN(float64(e.ESS)) {
			row.ESS = fmt.Sprintf("%.0f of %d", float64(e.ESS), run.Manifest.Episodes)
		}
		out = append(out, row)
	}
	return out
}
