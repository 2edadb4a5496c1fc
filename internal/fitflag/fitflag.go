// Package fitflag defines once the options that psrlcb fit and
// psrlcb-beam fit share: each option's flag name, its default value as
// the flag holds it, and its help text, which states the stage's default
// printed from the stage's own constant. psrlcb builds urfave/cli flags
// from them and psrlcb-beam flags of Go's flag package, so the two
// commands cannot drift apart in what they say or default to.
package fitflag

import (
	"fmt"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pipeline"
	"github.com/psrlcb/psrlcb/policy"
)

// Flag is one shared option: its name, the flag's default value (0 or ""
// where the zero value selects the stage's default, which Usage states
// as "(0: …)"), and its help text.
type Flag[T any] struct {
	Name  string
	Value T
	Usage string
}

// The model's options (estimate.Options).
var (
	Rank     = Flag[string]{"rank", "auto", `latent states r of the model, or "auto" to choose by held-out log-likelihood`}
	MaxRank  = Flag[int]{"max-rank", 0, fmt.Sprintf("largest rank tried by --rank auto (0: %d)", estimate.DefaultMaxRank)}
	Dynamics = Flag[string]{"dynamics", estimate.DynamicsStationary, `"stationary" (one transition/emission table for every step) or "per-step"`}
	Restarts = Flag[int]{"restarts", 0, fmt.Sprintf("EM starts, the first from an informed start (0: %d)", estimate.DefaultRestarts)}
	MaxIter  = Flag[int]{"max-iter", 0, fmt.Sprintf("EM iterations per start (0: %d)", estimate.DefaultMaxIter)}
	Tol      = Flag[float64]{"tol", 0, fmt.Sprintf("EM stops when the relative log-likelihood gain falls below this (0: %g). The rank search of --rank auto uses %g unless a value is given here: a smaller one, such as 1e-8, lets EM find hidden states only the rewards reveal, at several times the fit's time (docs/validation.md)", estimate.DefaultTol, estimate.RankSearchTol)}
)

// The bonus's and the α selection's options (--alpha differs: psrlcb-beam
// does not offer "theory").
var (
	Lambda        = Flag[float64]{"lambda", 0, fmt.Sprintf("regulariser λ of U_h (0: %g)", pessimism.DefaultLambda)}
	SelectHeldOut = Flag[float64]{"select-heldout", 0, fmt.Sprintf("share of episodes in the evaluation part when choosing α among candidates (0: %g)", pipeline.DefaultSelectHeldOut)}
)

// The planner's options.
var (
	PlanBudget = Flag[int64]{"plan-budget", 0, fmt.Sprintf("node budget of the exact planner; larger trees are planned approximately with a stated gap (0: %d)", policy.DefaultBudget)}
	Planner    = Flag[string]{"planner", policy.PlannerAuto, `"exact" (dynamic programming over the history tree, pruned search past --plan-budget), "belief" (point-based planning over the model's beliefs) or "auto" (exact when the tree fits --plan-budget)`}
	PlanPoints = Flag[int]{"plan-points", 0, fmt.Sprintf("belief points per step of the belief planner: more points plan closer to the optimum (its stated gap), at a cost growing with their square (0: %d)", policy.DefaultPoints)}
	HullBound  = Flag[bool]{"hull-bound", false, "state the belief planner's gap against a tighter upper bound: it interpolates between its belief points by their convex hull (a small linear program per successor belief) instead of one point at a time, at several times the bound's cost; the policy is the same"}
	PlanRows   = Flag[int64]{"plan-rows", 0, fmt.Sprintf("rows of the belief planner's policy table, the readable view of the controller's most probable decisions (0: %d)", policy.DefaultRowBudget)}
)

// The run's options (--workers and --memory-limit differ: psrlcb-beam's
// bound its driver only, and it has no spill file).
var (
	Seed      = Flag[uint64]{"seed", 1, "seed of the split, held-out draws and EM starts"}
	Horizon   = Flag[int]{"horizon", 0, "episode length H; 0 takes the largest step in the logs (longer episodes are invalid, shorter ones need terminal)"}
	OnInvalid = Flag[string]{"on-invalid", ingest.OnInvalidFail, `"fail" stops at the first invalid episode; "skip" quarantines invalid episodes, lists and counts them`}
)
