// Command stress runs the stress study of psrlcb on generated problems
// (internal/genpomdp: random mazes, aliased sparse-move problems and dense
// random POMDPs, all with sparse rewards tied to the next state) to find
// where the model, the bonus or the planner loses value.
//
// For each family, each problem drawn from the seed, each horizon H, each
// behaviour policy (uniform, myopic:0.1) and each K, it simulates logs,
// runs the PSR-LCB pipeline of Huang, Liang, Yang (arXiv:2307.00405,
// Algorithm 2, Section 5; pipeline.Fit with α chosen automatically), plans
// the same fitted model θ̂ with α = 0 (greedy), runs the tabular LCB
// (baseline.TabularLCB), and values every policy exactly under the true
// model (pomdp.EvaluatePolicy). It records the normalized regret
// (V* − V^π)/(V* − V^b) and the loss decomposition
//
//	V* − V^π̄ = [V* − V_θ̂(π*)]            estimation error on the policy that matters
//	         + [V_θ̂(π*) − V_θ̂(π_g)]      planning: ≤ 0 when the greedy plan is exact
//	         + [V_θ̂(π_g) − V^π_g]        the model's overvaluation of its own optimum
//	         + [V^π_g − V^π̄]             the bonus: α chosen against α = 0
//
// where π* is the exact optimal policy written as a policy table and
// V_θ̂(π) = policy.ModelReturn, the value the fitted model assigns to π.
//
// Usage:
//
//	go run ./bench/stress [--families maze,aliased,dense] [--problems 20]
//	    [--horizons 4] [--ks 10000] [--behaviors uniform,myopic:0.1]
//	    [--auto-rank] [--small] [--max-nodes 2000000]
//	    [--out bench/out/stress.arrow] [--docs docs]
//
// The ground truth is exact or absent: a problem at a horizon whose V* or
// V^b needs more than --max-nodes (step, belief) nodes, or a run whose
// policies reach ten times as many histories, is skipped (counted in the
// summary, recorded in the checkpoint), never valued approximately. At
// H = 8 the fit plans with its default planner (the belief planner when
// the history tree is too large), as for a user.
//
// Every run goes to an Arrow IPC file (one row per run); the summary tables,
// the targets and two plots go to docs/stress.md (between its generated
// markers), docs/stress-regret.svg and docs/stress-decomposition.svg.
// Finished runs are appended to a checkpoint file (bench/out/stress.jsonl),
// so an interrupted study resumes where it stopped.
//
// With --clones it fits no model: on each configuration's logs it values
// exactly the two policies the behaviour fallback can return
// (pipeline/fallback.go), the behaviour's clone and its improved clone,
// and prints their normalized regrets per cell (docs/stress.md, "The
// behaviour's clone and its improved clone").
//
// The reduced study (small problems, K = 2000, H = 3) runs as the package's
// test.
package main
