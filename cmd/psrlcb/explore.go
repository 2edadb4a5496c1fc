package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/explore"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/fitflag"
	"github.com/psrlcb/psrlcb/policy"
)

// roundFlags are the flags of one PSR-UCB round, shared by `explore` and
// `simulate-online`.
func roundFlags() []cli.Flag {
	return []cli.Flag{
		&cli.Float64Flag{Name: "alpha", Value: explore.DefaultAlpha, Usage: "UCB coefficient α of the bonus b̂ = min{α·sqrt(Σ_h‖ψ̄̂(τ_h)‖²_{U_h⁻¹}), 1} (the paper's α saturates b̂; see docs/exploration.md)"},
		cliFloat(fitflag.Lambda),
		&cli.Float64Flag{Name: "epsilon", Value: explore.DefaultEpsilon, Usage: "accuracy ε: stop when V_{θ̂,b̂}^{π^k} ≤ ε/2"},
		&cli.IntFlag{Name: "rank", Usage: "latent states r of the model (0: chosen by held-out log-likelihood)"},
		&cli.IntFlag{Name: "restarts", Usage: fmt.Sprintf("EM starts (0: %d)", estimate.DefaultRestarts)},
		&cli.StringFlag{Name: "dynamics", Value: estimate.DynamicsStationary, Usage: `"stationary" or "per-step"`},
		&cli.IntFlag{Name: "workers", Usage: "goroutines (0: all cores); results do not depend on it"},
	}
}

// roundOptions reads the flags of roundFlags.
func roundOptions(c *cli.Context, seed uint64) (explore.Options, error) {
	o := explore.Options{Alpha: c.Float64("alpha"), Lambda: c.Float64("lambda"), Epsilon: c.Float64("epsilon"), Workers: c.Int("workers")}
	if err := checkRoundCoefficients(o); err != nil {
		return o, err
	}
	if err := checkRoundEstimate(c); err != nil {
		return o, err
	}
	o.Estimate = estimate.Options{Rank: c.Int("rank"), Restarts: c.Int("restarts"), Dynamics: c.String("dynamics"), Seed: seed, Workers: c.Int("workers")}
	o.Plan.Workers = c.Int("workers")
	return o, nil
}

// checkRoundEstimate checks the round's flags of the estimation: --rank
// and --restarts not negative, --dynamics one of the two kinds.
func checkRoundEstimate(c *cli.Context) error {
	if c.Int("rank") < 0 || c.Int("restarts") < 0 {
		return usagef("--rank and --restarts must not be negative")
	}
	d := c.String("dynamics")
	if d != estimate.DynamicsStationary && d != estimate.DynamicsPerStep {
		return usagef("--dynamics must be %q or %q, not %q", estimate.DynamicsStationary, estimate.DynamicsPerStep, d)
	}
	return nil
}

// checkRoundCoefficients refuses an α or ε that is not positive and a
// negative λ.
func checkRoundCoefficients(o explore.Options) error {
	if !(o.Alpha > 0) {
		return usagef("--alpha must be positive, not %v", o.Alpha)
	}
	if !(o.Epsilon > 0) {
		return usagef("--epsilon must be positive, not %v", o.Epsilon)
	}
	if o.Lambda < 0 {
		return usagef("--lambda must be positive, not %v", o.Lambda)
	}
	return nil
}

func newExploreCommand() *cli.Command {
	flags, before := configurable(exploreFlags())
	return &cli.Command{
		Name:      "explore",
		Usage:     "one round of PSR-UCB: fit the logs so far and write the next round's exploration policy",
		ArgsUsage: "FILES...",
		Description: "Reads exploration logs whose rows carry the round k and the step explore_step = h at which\n" +
			"the episode switched from the previous exploration policy to uniform actions (D_{h−1} of the\n" +
			"paper's Algorithm 1), fits θ̂^k under Θ_min, builds the UCB bonus b̂^k on D_0..D_{H−1}, plans\n" +
			"π^k = argmax_π V_{θ̂,b̂}^π and tests V_{θ̂,b̂}^{π^k} ≤ ε/2. DIR gets policy-h1.arrow..policy-hH.arrow\n" +
			"(round k+1's exploration: steps < h follow the tree with propensity 1, steps ≥ h are uniform with\n" +
			"propensity 1/|A|; serve them with `psrlcb explore-act`), model.arrow and termination.json; when\n" +
			"the test passes, also policy.arrow, the greedy policy argmax_π V_{θ̂,R}^π. See docs/exploration.md.",
		Flags:  flags,
		Before: before,
		Action: func(c *cli.Context) error {
			o, err := exploreCmdOptions(c)
			if err != nil {
				return err
			}
			return runExplore(c.Context, c.App.Writer, o)
		},
	}
}

// exploreFlags are explore's flags: the ingest flags, the round's
// (roundFlags) and its own.
func exploreFlags() []cli.Flag {
	flags := append(ingestFlags(), roundFlags()...)
	return append(flags,
		&cli.PathFlag{Name: "out", Aliases: []string{"o"}, Usage: "output `DIR` (written atomically)"},
		&cli.BoolFlag{Name: "force", Usage: "replace an earlier output of explore (a directory holding termination.json and only the files explore writes)"},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the EM starts"},
		&cli.StringFlag{Name: "col-round", Usage: "name of the round column (default: " + explore.RoundColumn + ")"},
		&cli.StringFlag{Name: "col-explore-step", Usage: "name of the explore_step column (default: " + explore.ExploreStepColumn + ")"},
	)
}

func newExploreActCommand() *cli.Command {
	return &cli.Command{
		Name:  "explore-act",
		Usage: "the exploration action and the propensity to log for the next step of an episode",
		Description: "Reads one policy-h{h}.arrow written by `psrlcb explore`. For steps before h it prints the\n" +
			"tree's action (lookup rule of `psrlcb act`) with propensity 1; from step h on, the action\n" +
			"actions[⌊u·|A|⌋] for the caller's uniform draw --u in [0,1), with propensity 1/|A|. Log round\n" +
			"and explore_step (printed too) on every row of the episode.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "policy", Usage: "`PATH` of policy-h{h}.arrow", Required: true},
			&cli.StringFlag{Name: "history", Usage: "comma-separated `o1,a1,o2,…,oh` (user symbols; spaces around an item are dropped)"},
			&cli.StringFlag{Name: "history-json", Usage: "the history as a JSON array of strings, `'[\"o1\",\"a1\",…,\"oh\"]'`, for symbols that are empty, hold commas or spaces"},
			&cli.Float64Flag{Name: "u", Value: -1, Usage: "uniform random number in [0,1) for uniform steps"},
		},
		Action: exploreActAction,
	}
}

// exploreActAction prints the exploration action of the history its flags give.
func exploreActAction(c *cli.Context) error {
	obs, _, err := historyArgs(c, "explore-act")
	if err != nil {
		return err
	}
	return runExploreAct(c.Context, c.App.Writer, exploreActOptions{policy: c.String("policy"), obs: obs, u: c.Float64("u")})
}

// exploreOptions are the options of `psrlcb explore`.
type exploreOptions struct {
	files, inputs []string
	out           string
	force         bool
	round         explore.Options
	ingest        ingest.Options
	tags          explore.TagColumns
	stderr        io.Writer
}

// exploreCmdOptions reads and checks every flag of explore.
func exploreCmdOptions(c *cli.Context) (exploreOptions, error) {
	o := exploreOptions{out: c.Path("out"), force: c.Bool("force"), stderr: c.App.ErrWriter}
	if o.out == "" {
		return o, usagef("explore needs --out DIR")
	}
	var err error
	if o.round, err = roundOptions(c, c.Uint64("seed")); err != nil {
		return o, err
	}
	if o.files, err = logFiles(c); err != nil {
		return o, err
	}
	if o.ingest, err = ingestOptions(c); err != nil {
		return o, err
	}
	o.inputs = inputPaths(c.Args().Slice(), o.files)
	o.tags = explore.TagColumns{Episode: o.ingest.Columns.Episode, Round: c.String("col-round"), ExploreStep: c.String("col-explore-step")}
	return o, nil
}

// runExplore runs one round on the tagged logs, writes its outputs into
// o.out and prints the termination test.
func runExplore(ctx context.Context, w io.Writer, o exploreOptions) error {
	out, files, iopts, ro := o.out, o.files, o.ingest, o.round
	// Fail on an output in the way before any work.
	dir, err := createOut(o.stderr, out, o.force, exploreOutput, o.inputs)
	if err != nil {
		return err
	}
	defer dir.Abort()
	lr, err := explore.RoundFromLogs(ctx, files, iopts, o.tags, ro)
	if err != nil {
		return err
	}
	if err := commitDir(ctx, dir, func() error { return explore.WriteRound(ctx, dir.Tmp, lr) }); err != nil {
		return err
	}
	printExploreRound(w, lr, out)
	return nil
}

// printExploreRound prints the round's sizes, its termination test with
// what to do next, and the output directory out.
func printExploreRound(w io.Writer, lr *explore.LogRound, out string) {
	res, tf, round := lr.Result, lr.Termination, lr.Round
	fmt.Fprintf(w, "round %d: %d episodes, D_h sizes %v, rank %d\n", round, tf.Episodes, tf.SplitSizes, tf.Rank)
	verdict := "continue: serve the exploration policies of round " + strconv.FormatInt(round+1, 10)
	if res.Terminated {
		verdict = "terminated: greedy policy in " + filepath.Join(out, policy.FileName)
	}
	fmt.Fprintf(w, "termination statistic V_{θ̂,b̂}^{π^k} = %.6g vs ε/2 = %.6g (α = %g): %s\n", res.BonusValue, res.Threshold, res.Alpha, verdict)
	fmt.Fprintf(w, "wrote %s\n", out)
}

// exploreActOptions are the options of `psrlcb explore-act`.
type exploreActOptions struct {
	policy string
	obs    []string // the history's observations o_1..o_h
	u      float64
}

func runExploreAct(_ context.Context, w io.Writer, o exploreActOptions) error {
	path, u, obs := o.policy, o.u, o.obs
	sp, err := explore.ReadPolicy(path)
	if err != nil {
		return err
	}
	if len(obs) >= sp.Step && !(u >= 0 && u < 1) {
		return usagef("step %d ≥ explore_step %d is uniform: give --u, a uniform random number in [0,1)", len(obs), sp.Step)
	}
	a, prop, err := sp.Act(obs, u)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	return enc.Encode(map[string]any{"action": a, "propensity": prop, "round": sp.Round, "explore_step": sp.Step, "step": len(obs),
		"uniform": len(obs) >= sp.Step, "actions": strings.Join(sp.Actions, ",")})
}
