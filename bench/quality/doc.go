// Command quality runs the validation study "Does pessimism pay?" of psrlcb on
// benchmark POMDPs (docs/design.md, section 5) and writes its results.
//
// For each problem (a Cassandra .POMDP file with a horizon H), each behaviour
// policy (wide coverage "uniform", narrow coverage "myopic:0.1"), each number
// of episodes K and each seed, it simulates logs with pomdp.SimulateDataset,
// and compares on the same logs:
//
//	psrlcb    the PSR-LCB pipeline of the paper (Algorithm 2, pipeline.Fit) with
//	          α chosen automatically (the CLI default)
//	greedy    the same fitted model θ̂ planned with α = 0 (model-based greedy
//	          maximum likelihood, no pessimism)
//	tabular   baseline.TabularLCB, count-based LCB on the empirical history tree
//	clone     baseline.BehaviorCloning
//	behavior  the behaviour policy itself (exact value)
//	optimal   the exact optimal finite-horizon policy (pomdp.Optimal)
//
// Each policy is valued exactly under the true model (pomdp.EvaluatePolicy,
// undiscounted H-step return) and its normalized regret (V* − V^π)/(V* − V^b)
// is recorded: 0 is optimal, 1 is no better than the behaviour. For psrlcb the
// lower confidence bound V_{θ̂,R}^π̄ − V_{θ̂,b̂}^π̄ of the paper (in return
// units) is recorded beside the true value, to check that it is a lower bound.
//
// Usage:
//
//	go run ./bench/quality [--out bench/out/quality.arrow] [--docs docs]
//	    [--problems tiger,paint,...] [--ks 100,1000,...] [--seeds 5] [--reduced]
//
// Every run goes to an Arrow IPC file (one row per run and method); the
// summary tables, the verdict on each target and the plots go to
// docs/validation.md (between its generated-results markers) and docs/*.svg.
// Finished configurations are appended to a checkpoint file so an interrupted
// study resumes where it stopped.
//
// The reduced study (one seed, K ≤ 10³) also runs as the package's test.
package main
