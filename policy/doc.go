// Package policy plans, stores and evaluates the output policy of
// PSR-LCB (psr-ucb-lcb.tex, Algorithm 2: π̄ = argmax_π V_{θ̂,R}^π −
// V_{θ̂,b̂}^π; DESIGN.md section 4 "policy").
//
// A policy is a deterministic history-dependent policy stored as a tree of
// decision nodes (Policy, Node; the lookup rule is Cursor). Entry points:
//
//   - Plan(ctx, model, bonus, PlanOptions): the exact planner (dynamic
//     programming over the history tree, carrying the belief and the
//     running bonus sum, since b̂ is not additive over steps) and, beyond
//     a node budget, an approximate planner with a stated bound on its
//     distance from the exact optimum.
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
// R is the return rescaled to [0,1] with the model's observed return range
// (estimate.Model.RewardScale), so that reward and bonus share a scale.
// Results do not depend on the number of workers.
package policy
