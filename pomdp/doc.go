// Package pomdp holds known partially observable Markov decision processes
// that serve as ground truth for psrlcb: it reads them from Cassandra's
// .POMDP text format, simulates trajectory logs from them under a chosen
// behaviour policy (with the true propensities), and evaluates policies
// exactly under the true model.
//
// It is not a stage of the PSR-LCB pipeline of the paper; it is the test
// bench around it (docs/design.md, section 5). A learned policy π̄ (Algorithm 2 of
// the paper) is judged by its exact value V^π̄ under the true model, beside
// the optimal finite-horizon value V* and the behaviour policy's value V^b.
//
// # Timing
//
// Episodes have H steps. The first observation o_1 is the fixed symbol
// InitSymbol ("init"). At step h (1-based) the agent sees o_h and takes a_h;
// the hidden state moves s → s' ∼ T(·|s,a_h), the next observation
// o_{h+1} ∼ O(·|s',a_h) is emitted and the reward is
// r_h = R(a_h,s,s',o_{h+1}). The return is the undiscounted sum
// r_1+…+r_H; the discount of the .POMDP file is kept but not used.
// o_{H+1} is drawn (it determines r_H) but is not part of the logs.
//
// # Conventions
//
// States, actions and observations are indices into the name slices of a
// POMDP; the initial observation has index ObsInit (−1). Models are never
// modified by the functions of this package, so one model can be shared by
// goroutines. Randomness comes from a seed given by the caller
// (math/rand/v2 PCG); the same seed gives the same logs whatever the number
// of workers.
package pomdp
