// Package pessimism builds the uncertainty bonus of offline PSR-LCB
// (psr-ucb-lcb.tex, Section 5, eq. (LCB bonus), Algorithm 2 line 4):
//
//	U_h = λI + Σ_{τ_h ∈ D_h} ψ̄̂(τ_h) ψ̄̂(τ_h)ᵀ,   h = 0..H−1
//	b̂(τ_H) = min{ α · sqrt( Σ_{h=0}^{H−1} ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} ), 1 }
//
// where ψ̄̂(τ_h) is the prediction feature of the fitted model (the
// probabilities of the core tests given the history, estimate.Model) and
// D_0..D_{H−1} are the random even splits of the episodes (package split);
// U_h is built from the length-h prefixes of the episodes of D_h.
//
// Entry point: Build(ctx, model, dataset, splits, Options) → *Bonus. The
// Bonus factorises every U_h once (Cholesky) and answers quadratic forms
// ‖x‖²_{U_h⁻¹}: through an explicit inverse for small d_h (a d²
// multiply–add loop is faster than a triangular solve below a few dozen
// dimensions) and through the triangular factor with blas64.Trsv above.
//
// The coefficients λ and α (the paper's λ̂ and α̂) are options:
//   - λ defaults to 1 (DefaultLambda): a feature is a vector of
//     probabilities, so ‖ψ̄‖₂ ≤ 1 for one-step tests and λ = 1 weighs the
//     prior as much as one fully informative logged history. A direction
//     no logged history spans then has ‖ψ̄‖²_{U⁻¹} ≈ ‖ψ̄‖² ≤ 1, and one
//     seen n times about 1/(n+1).
//   - α is a number, "theory" (TheoryAlpha: the paper's α̂ of Corollary
//     (LCB) with β̂ from the optimistic-net bound), a list of numbers or
//     "auto" (a grid); lists are resolved by policy.Select with a
//     cross-fitted criterion (plan on one part of the logs, value under a
//     model of the other). The default is "auto" (AlphaSpec's zero value); a Bonus
//     built without a choice carries DefaultAlpha = 1, see its comment.
//
// What the paper's bonus does not see: it sums over τ_0..τ_{H−1}, so
// coverage is measured in predictive-feature space; the behaviour's
// coverage of actions enters only through ι inside α (with H = 1 the
// bonus is the same for every action).
//
// Conventions: inputs are never modified. Build's result does not depend
// on the number of workers: U_h is accumulated in fixed blocks of episodes
// that are added in order.
package pessimism
