package policy

import (
	"context"
	"fmt"
	"math"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
)

// SelectCriterion states how Select chooses among the candidate α.
const SelectCriterion = "largest lower bound (mean − z·stderr) of the importance-weighted value on held-out episodes; ties go to the larger α"

// SelectRowBudget caps the policy table of each belief-planned candidate
// (PlanOptions.RowBudget): a candidate is only scored on held-out episodes,
// and its histories beyond the table play the fallback, which the
// held-out estimate scores like any other action. Ten times fewer rows
// than a full plan keep the α sweep to a fraction of the final plan's
// cost.
const SelectRowBudget = 1_000_000

// SelectOptions configure Select. The zero value means the defaults.
type SelectOptions struct {
	Plan PlanOptions
	// Z is the normal quantile of the held-out interval (default DefaultZ).
	Z float64
}

// Candidate is one α of a selection with its figures.
type Candidate struct {
	Alpha float64 `json:"alpha"`
	// Model values of the candidate's plan: V_{θ̂,R}, V_{θ̂,b̂}, LCB (the
	// planner's figures; exact when Plan.Exact).
	Model Value `json:"model"`
	// HeldOut is the importance-weighted estimate on the held-out
	// episodes, with interval and effective sample size.
	HeldOut IWResult  `json:"held_out"`
	Plan    PlanStats `json:"plan"`
	Chosen  bool      `json:"chosen"`
	// Policy is the candidate's plan.
	Policy *Policy `json:"-"`
}

// Selection is the result of Select.
type Selection struct {
	Candidates []Candidate
	Chosen     int // index into Candidates
	Criterion  string
}

// Policy is the chosen candidate's policy.
func (s *Selection) Policy() *Policy { return s.Candidates[s.Chosen].Policy }

// Alpha is the chosen α.
func (s *Selection) Alpha() float64 { return s.Candidates[s.Chosen].Alpha }

// Select plans one policy per α in alphas (with bonus's U_h) and chooses
// one by SelectCriterion on heldOut, episodes that were not used to fit
// the model (they need propensities, logged or estimated). Every
// candidate's figures are kept for the report.
func Select(ctx context.Context, m *estimate.Model, bonus *pessimism.Bonus, heldOut *ingest.Dataset, alphas []float64, opts SelectOptions) (*Selection, error) {
	if len(alphas) == 0 {
		return nil, fmt.Errorf("%w: no candidate alpha", ErrOptions)
	}
	if heldOut == nil || heldOut.NumEpisodes() == 0 {
		return nil, fmt.Errorf("%w: choosing alpha needs held-out episodes", ErrData)
	}
	sel := &Selection{Criterion: SelectCriterion, Chosen: -1}
	best := math.Inf(-1)
	for _, a := range alphas {
		if !(a >= 0) || math.IsInf(a, 0) {
			return nil, fmt.Errorf("%w: alpha %v", ErrOptions, a)
		}
		po := opts.Plan
		if po.RowBudget <= 0 || po.RowBudget > SelectRowBudget {
			po.RowBudget = SelectRowBudget
		}
		pol, st, err := Plan(ctx, m, bonus.WithAlpha(a), po)
		if err != nil {
			return nil, err
		}
		iw, err := IWEstimate(m, pol, heldOut, opts.Z)
		if err != nil {
			return nil, err
		}
		c := Candidate{Alpha: a, Model: Value{Reward: st.ValueReward, Bonus: st.ValueBonus, LCB: st.Value},
			HeldOut: iw, Plan: *st, Policy: pol}
		sel.Candidates = append(sel.Candidates, c)
		i := len(sel.Candidates) - 1
		if iw.Lower > best || (iw.Lower == best && a > sel.Candidates[sel.Chosen].Alpha) {
			best, sel.Chosen = iw.Lower, i
		}
	}
	sel.Candidates[sel.Chosen].Chosen = true
	return sel, nil
}
