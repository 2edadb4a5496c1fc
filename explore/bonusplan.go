package explore

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/psrlcb/psrlcb/errkind"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
)

// Sentinel errors of the explore package.
var (
	// ErrOptions is returned for option values out of range.
	ErrOptions = errkind.New(errkind.Options, "explore: invalid options")
	// ErrData is returned for logs that cannot drive a round (missing or
	// inconsistent round / explore_step tags, empty input).
	ErrData = errkind.New(errkind.Data, "explore: invalid data")
	// ErrModel is returned when a model and a bonus do not fit together or
	// the history tree is too large for the bonus planner.
	ErrModel = errkind.New(errkind.Data, "explore: invalid model")
)

// DefaultPlanBudget bounds the history tree PlanBonus searches, in nodes
// (decision points (τ_{h−1}, o_h)).
const DefaultPlanBudget = 5_000_000

// PlanBonus computes π^k = argmax_π V_{θ̂,b̂}^π = argmax_π E_{θ̂,π}[b̂(τ_H)]
// over deterministic history-dependent policies (Huang, Liang, Yang (ICLR
// 2024, arXiv:2307.00405), Algorithm 1, line 9), exactly. It is
// policy.Plan's exact search with the bonus objective
// (policy.ObjectiveBonus): the bonus is not additive over steps, so each
// branch carries the belief and the running Σ_h ‖ψ̄̂(τ_h)‖²_{U_h⁻¹}, and
// min{α·sqrt(Σ), 1} is charged at the leaves. It returns the policy and
// its value V_{θ̂,b̂}^{π^k}, the termination statistic of line 10.
//
// b̂(τ_H) depends on a_1..a_{H−1} only (τ_{H−1} is the last prefix of the
// sum), so the action at step H is free: the search takes the one with
// the largest expected reward, ties to the lowest index. Ties elsewhere,
// the end symbol and the fallback actions follow policy.Plan, since it is
// the same search. Node values: value_bonus is E[b̂ | node], value_reward
// the rescaled reward-to-go of the policy, value_lcb their difference.
// budget ≤ 0 means DefaultPlanBudget; a larger tree is an ErrModel error.
func PlanBonus(ctx context.Context, m *estimate.Model, b *pessimism.Bonus, budget int64) (*policy.Policy, float64, error) {
	if err := checkBonusPlan(m, b); err != nil {
		return nil, 0, err
	}
	budget, err := bonusBudget(m, budget)
	if err != nil {
		return nil, 0, err
	}
	pol, st, err := policy.Plan(ctx, m, b, policy.PlanOptions{
		Budget: budget, Planner: policy.PlannerExact, Objective: policy.ObjectiveBonus,
	})
	if err != nil {
		return nil, 0, asModelError(err)
	}
	return pol, st.ValueBonus, nil
}

// checkBonusPlan checks that there are a model and a bonus, of the same
// horizon H ≥ 1.
func checkBonusPlan(m *estimate.Model, b *pessimism.Bonus) error {
	if m == nil || b == nil {
		return fmt.Errorf("%w: no model or no bonus", ErrModel)
	}
	if b.Horizon != m.Horizon || len(b.Dims) != m.Horizon || m.Horizon <= 0 {
		return fmt.Errorf("%w: bonus for horizon %d, model horizon %d", ErrModel, b.Horizon, m.Horizon)
	}
	return nil
}

// bonusBudget is the planner's node budget (DefaultPlanBudget when
// budget ≤ 0), which m's history tree must not exceed.
func bonusBudget(m *estimate.Model, budget int64) (int64, error) {
	if budget <= 0 {
		budget = DefaultPlanBudget
	}
	if size := treeSize(m); size > float64(budget) {
		return 0, fmt.Errorf("%w: history tree of %.3g nodes exceeds the bonus planner's budget %d", ErrModel, size, budget)
	}
	return budget, nil
}

// asModelError is err, wrapped in ErrModel too when it is the planner's
// model error.
func asModelError(err error) error {
	if errors.Is(err, policy.ErrModel) {
		return fmt.Errorf("%w: %w", ErrModel, err)
	}
	return err
}

// treeSize is the number of decision points (τ_{h−1}, o_h) of m's full
// history tree, Σ_h |O|^h·|A|^{h−1}.
func treeSize(m *estimate.Model) float64 {
	size := 0.0
	for h := 1; h <= m.Horizon; h++ {
		size += math.Pow(float64(m.NumObs), float64(h)) * math.Pow(float64(m.NumActions), float64(h-1))
	}
	return size
}
