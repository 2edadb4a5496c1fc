// Package estimate fits the model θ̂ of the PSR-LCB pipeline: a rank-r
// latent-state model (a time-inhomogeneous input–output HMM, see Model)
// fitted by maximum likelihood with expectation–maximisation, then moved
// into the constraint set Θ_min of the paper's offline confidence set
// B_D (Huang, Liang, Yang (ICLR 2024, arXiv:2307.00405), eq. (5), Section 5):
//
//	Θ_min = {θ : P_θ^{π^b}(τ_h) ≥ p_min for every τ_h ∈ D_h},
//	p_min = δ / (K·H·(|O||A|)^H), δ = 0.05   (Theorem for offline PSR-LCB).
//
// The likelihood is that of the observations and the logged rewards given
// the actions, Σ_k ln P_θ(o_{1:H}, r_{1:H} | a_{1:H}); the behaviour
// policy's factor Π_h π^b(a_h|τ_{h−1},o_h) does not depend on θ and is
// left out of the maximisation (it enters Θ_min). A latent-state model with
// r states is a PSR of rank ≤ r whose probabilities are valid by
// construction, so maximising over it is the tractable form of the MLE
// oracle of the paper.
//
// EM is accelerated by SQUAREM (Varadhan & Roland 2008, scheme S3; see
// accel.go): every other cycle extrapolates along the last two EM steps,
// keeps the extrapolated point only if it raises the penalised
// log-likelihood (the log-likelihood plus the smoothing prior, the
// objective the M-step climbs) and otherwise takes the plain EM step. It
// converges to the fixed point of the same EM map in fewer E-steps on
// slowly converging fits (docs/validation.md, "Diagnosis", has the
// measured savings); Options.PlainEM runs plain EM.
//
// Large vocabularies (Options.Form, memory.go, compact.go, basis.go): when
// the full form's step kernel would pass 2²² numbers, Fit uses the
// Compact form (Model.Compact: emission E(o|s') shared by the actions,
// reward given (s, a, s')), whose E-step costs O(K·H·S²) and whose M-step
// costs O(S·|O| + |A|·S²·V); the informed start keeps its signatures
// sparse; the prediction features of the Compact form have dimension S
// (FeatureBasis). Before fitting, Fit estimates the memory of the chosen
// form and rank and stops with ErrTooLarge (a data error) past
// Options.MemoryLimit. In the compact form, on logs of more than 10,000
// episodes the EM starts and the rank choice run on a seeded sample of
// 10,000 episodes and the best start (or a warm start alone) is continued
// on every episode (fitSampleEpisodes).
//
// Entry point: Fit(ctx, dataset, Options) → *Result. The zero Options
// value gives the documented defaults. The model exposes belief filtering,
// the next-observation distribution, the expected reward and the
// prediction feature ψ̄(τ_h) (docs/design.md, section 2) used by the later
// stages.
//
// Conventions: inputs are never modified. The same dataset, options and
// seed give bit-identical results whatever the number of workers: the
// E-step splits the episodes into blocks of a fixed size, accumulates each
// block separately and adds the blocks in order.
package estimate
