// Package ope estimates the value of a policy from logs another policy
// produced: off-policy evaluation of any policy over histories, for
// `psrlcb evaluate --logs` and for `psrlcb fit --compare`.
//
// The evaluated (target) policy π_e gives each action a probability at
// each history τ_{h−1}, o_h (Target); a deterministic policy table
// (policy.arrow) gives probability one to its action, a stochastic one
// its rows' probabilities. The logs give the behaviour's probability of
// each logged action (the propensity). With
// the ratios ρ_{k,h} = π_e(a_h | τ_{h−1}, o_h) / π^b(a_h | τ_{h−1}, o_h) of
// episode k and their running products w_{k,h} = Π_{t≤h} ρ_{k,t}, the
// estimators of V^{π_e} = E_{π_e}[r_1 + … + r_H] are (n episodes, returns
// in the logs' units):
//
//	is      trajectory importance sampling: (1/n) Σ_k w_{k,H} G_k
//	wis     its self-normalised form: Σ_k w_{k,H} G_k / Σ_k w_{k,H}
//	pdis    per-decision importance sampling (Precup, Sutton, Singh, ICML
//	        2000): (1/n) Σ_k Σ_h w_{k,h} r_{k,h}
//	wpdis   its self-normalised form: Σ_h Σ_k w_{k,h} r_{k,h} / Σ_k w_{k,h}
//	model   the fitted model's value V_θ̂^{π_e} (a direct method over
//	        histories: the model is a latent-state model, so π_e may depend
//	        on the whole history)
//	model_lcb  V_θ̂^{π_e} − E_θ̂^{π_e}[b̂(τ_H)], the pessimistic lower bound
//	        with the bonus b̂ of psrlcb fit (Huang, Liang, Yang, ICLR 2024,
//	        arXiv:2307.00405, Section 5, eq. (6))
//	dr      per-decision doubly robust (Jiang & Li, ICML 2016) with the
//	        model's values as the control variate:
//	        (1/n) Σ_k Σ_h [w_{k,h} (r_{k,h} − Q̂_{k,h}) + w_{k,h−1} V̂_{k,h}],
//	        Q̂_{k,h} the model's expected return from step h on after the
//	        logged action, V̂_{k,h} = Σ_a π_e(a) Q̂(a) before it; cross-fitted:
//	        the model used for an episode was fitted on the other half
//	wdr     weighted doubly robust (Thomas & Brunskill, ICML 2016): dr with
//	        w_{k,h} / (Σ_j w_{j,h} / n) in place of w_{k,h}
//
// Intervals (95%): "bootstrap", the percentile interval of a seeded
// bootstrap over episodes (the models held fixed); "normal", mean ± 1.96
// standard errors (is, pdis, dr); "bernstein", the empirical Bernstein
// bound of Maurer & Pontil (COLT 2009) for is and pdis, whose terms are
// bounded by the largest logged weight times the return range (a range
// read from the logs, so not a guarantee when a larger weight was never
// logged). The effective sample size is (Σ w)² / Σ w² of the episodes'
// final weights (for the per-decision estimators, of the last step's);
// "episodes" is how many episodes have a non-zero final weight.
//
// Conventions: estimates are in the logs' units of return; an estimate
// the logs cannot support (no episode with a non-zero weight, no model)
// is NaN with a reason. Results do not depend on the number of workers.
package ope
