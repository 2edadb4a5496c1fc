// Package explore is the online side of the paper: PSR-UCB
// (Huang, Liang, Yang (ICLR 2024, arXiv:2307.00405), Section 4, Algorithm 1) run as a batch exploration
// loop. Each round k
//
//  1. collects, for every switch step h = 1..H, a batch of episodes with the
//     exploration policy ν(π^{k−1}, u_{Q^exp_{h−1}}): π^{k−1} for the steps
//     1..h−1, then uniformly random actions from step h on (with one-step
//     core tests Q^exp_{h−1} = A, so u is uniform over a_h; the later steps
//     are uniform too, which covers longer tests as well);
//  2. appends them to the logs; the episodes that switched at step h form
//     D_{h−1}^k (Algorithm 1, line 5);
//  3. fits θ̂^k by maximum likelihood under Θ_min^k (eq. (confidence set);
//     package estimate, with Θ_min checked on the length-(h−1) prefixes of
//     D_{h−1}^k and the logged exploration propensities);
//  4. builds the UCB bonus of eq. (3),
//     Û_h^k = λI + Σ_{τ_h∈D_h^k} ψ̄̂^k(τ_h)ψ̄̂^k(τ_h)ᵀ,
//     b̂^k(τ_H) = min{α·sqrt(Σ_{h=0}^{H−1} ‖ψ̄̂^k(τ_h)‖²_{(Û_h^k)⁻¹}), 1}
//     (package pessimism, with the splits D_h^k instead of a random split);
//  5. plans π^k = argmax_π V_{θ̂^k,b̂^k}^π (Algorithm 1, line 9) with
//     PlanBonus, a dynamic programme over the history tree that maximises
//     the bonus alone (policy.Plan maximises R − b̂ and cannot do it);
//  6. stops when V_{θ̂^k,b̂^k}^{π^k} ≤ ε/2 (line 10) and outputs θ^ε = θ̂^k
//     and the greedy policy argmax_π V_{θ^ε,R}^π (policy.Plan with α = 0).
//
// Entry points: Round (steps 2–6 from logs tagged with the round and the
// switch step), RoundFromLogs and WriteRound (a round from tagged Parquet
// logs and its output files, termination.json included: what `psrlcb
// explore` runs), WritePolicies (the next round's exploration policy as H
// policy files), ReadTags (the two tag columns of the logs), and Online
// (the whole loop against a known POMDP, with the true total-variation
// error of the model and the true regret of the greedy policy per round,
// for validation; TV computes the former exactly by enumerating τ_H).
//
// The paper's α (Theorem "online PSR") is far too large to use: it
// saturates b̂ at 1 on every trajectory, so the loop would never stop. α is
// a user choice; docs/exploration.md records the values validated on
// known POMDPs.
//
// Conventions: inputs are never modified; the same inputs and seed give the
// same outputs whatever the number of workers.
package explore
