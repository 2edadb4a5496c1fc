// Package policy plans, stores and evaluates the output policy of
// PSR-LCB (Huang, Liang, Yang (ICLR 2024, arXiv:2307.00405),
// Algorithm 2: π̄ = argmax_π V_{θ̂,R}^π −
// V_{θ̂,b̂}^π; docs/design.md, section 4).
//
// A policy is a deterministic history-dependent policy stored as a tree of
// decision nodes (Policy, Node; the lookup rule is Cursor). Entry points:
//
//   - Plan(ctx, model, bonus, PlanOptions): one entry point for three
//     planners, chosen by PlanOptions.Planner:
//     PlannerExact is dynamic programming over the history tree, carrying
//     the belief and the running bonus sum, since b̂ is not additive over
//     steps (beyond the node budget it prunes improbable branches and
//     states a bound on its distance from the exact optimum);
//     PlannerBelief plans over the model's beliefs instead of histories
//     (point-based value iteration of a tangent upper bound of the bonus,
//     see below), for long episodes and large alphabets;
//     PlannerAuto (the default) is exact when the tree fits the budget
//     and belief otherwise.
//   - Select(ctx, model, bonus, evalModel, evalBonus, heldOut, alphas,
//     SelectOptions): plans one policy per candidate α with the model of
//     one part of the logs and picks one by its value under the model
//     fitted on the other part (cross-fitting, select.go); ValueUnder
//     values a policy under any model (enumerated or sampled).
//   - ModelValue: V_{θ̂,R}, V_{θ̂,b̂} and the LCB of any policy under the
//     model; Weights, IWEstimate, Coverage: importance weights of logged
//     episodes, the off-policy estimate with its interval and effective
//     sample size, the mass of the policy's histories the logs cover and
//     the C∞ estimate.
//
// The belief planner. ψ̄̂(τ_h) is linear in the model's belief over its r
// latent states, so ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} is a quadratic form bᵀM_{h,a}b of
// the belief b over s_h and the action a_h. The paper's bonus
// g(Σ) = min{α√Σ, 1} of the sum Σ of those terms (Huang, Liang, Yang,
// ICLR 2024, arXiv:2307.00405, Section 5, eq. (6)) is concave in Σ, so its tangent at a point
// x₀, b̃ = g(x₀) + g′(x₀)(Σ − x₀), lies above it on every trajectory and
// is additive over steps: the planner maximises E[R − b̃], a lower bound
// of E[R − b̂] for every policy, by finite-horizon point-based backups
// over belief points reached from o_1 (identical beliefs merged), with x₀
// set to the previous plan's E[Σ]. The policy it returns is its decision
// tree over the histories it reaches with model probability at least a
// threshold chosen to fit PlanOptions.RowBudget (the uncovered mass plays
// the fallback rule of Cursor), evaluated under θ̂ with the paper's bonus
// itself: V_R exactly, V_b from above, so the reported LCB is a lower
// bound of the written policy's; PlanStats.UpperBound bounds the optimum
// from above (sawtooth upper bound of the reward-only problem), and
// GapBound is the distance between the two. docs/planning.md has the
// details and the measured costs.
//
// R is the return rescaled to [0,1] with the model's range of returns
// (estimate.Model.RewardScale), so that reward and bonus share a scale.
// Results do not depend on the number of workers.
package policy
