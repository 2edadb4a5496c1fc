// Package pessimism builds the uncertainty bonus of offline PSR-LCB
// (Huang, Liang, Yang (ICLR 2024, arXiv:2307.00405),
// Section 5, eq. (6), Algorithm 2 line 4):
//
//	U_h = λI + Σ_{τ_h ∈ D_h} ψ̄̂(τ_h) ψ̄̂(τ_h)ᵀ,   h = 0..H−1
//	b̂(τ_H) = min{ α · sqrt( Σ_{h=0}^{H−1} ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} ), 1 }
//
// where ψ̄̂(τ_h) is the prediction feature of the fitted model (the
// probabilities of the core tests given the history, estimate.Model) and
// D_0..D_{H−1} are the random even splits of the episodes (package split);
// U_h is built from the length-h prefixes of the episodes of D_h.
//
// The features and their dimension. The paper's ψ̄(τ_h) = ψ(τ_h)/(φ_hᵀψ(τ_h))
// collects the predictions P(ω|τ_h) of the core tests ω ∈ Q_h
// (psr-ucb-lcb.tex, Section 3, "core tests" and the prediction feature),
// and d_h = |Q_h| needs to be no larger than the rank r of the system
// dynamics matrix. estimate.Model.FeatureDim says which features are used:
//   - Full model form (small vocabularies): every test of length
//     k = min(m, H−h) is a coordinate, [ψ̄(τ_h)]_ℓ = P(test ℓ's observations |
//     τ_h, test ℓ's actions), d_h = |O|^k·|A|^(k−1). These probabilities
//     already sum to one over the observations, so φ_hᵀψ = 1 and ψ̄ = ψ.
//   - Compact model form (estimate.Model.Compact, chosen for large
//     vocabularies): the test predictions are ψ(τ_h) = G_h·p with p the
//     model's predicted state P(s_{h+1}|τ_h) and G_h (d_h × r) fixed by the
//     model, so they span at most r dimensions. The feature is
//     y = (G_hᵀG_h)^{1/2}·p ∈ R^r, an isometric image of ψ(τ_h): every
//     inner product, hence U_h restricted to the features' span and every
//     ‖ψ̄(τ_h)‖²_{U_h⁻¹}, is that of the full test vector (estimate/basis.go
//     proves the identity; TestCompactFeatureIsometry checks it). Any r
//     linearly independent tests Q_h would give a valid core set with the
//     same span; this basis reproduces the bonus of all one-step (m-step)
//     tests exactly instead of a change of coordinates that would move α's
//     scale. U_h is r×r and the bonus costs O(K·H·r²) whatever |O| is.
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
//     3 with β̂ from the optimistic-net bound), a list of numbers or
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
