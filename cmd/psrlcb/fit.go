package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/internal/outdir"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pipeline"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/progress"
	"github.com/psrlcb/psrlcb/report"
)

func init() {
	flags := append(ingestFlags(),
		&cli.PathFlag{Name: "out", Aliases: []string{"o"}, Usage: "output directory (written atomically)"},
		&cli.BoolFlag{Name: "force", Usage: "replace an existing output directory"},
		&cli.StringFlag{Name: "rank", Value: "auto", Usage: `latent states r of the model, or "auto" to choose by held-out log-likelihood`},
		&cli.IntFlag{Name: "max-rank", Usage: "largest rank tried by --rank auto (0: the estimate stage's default)"},
		&cli.StringFlag{Name: "dynamics", Value: estimate.DynamicsStationary, Usage: `"stationary" (one transition/emission table for every step) or "per-step"`},
		&cli.IntFlag{Name: "restarts", Usage: "EM starts, the first from an informed start (0: default)"},
		&cli.IntFlag{Name: "max-iter", Usage: "EM iterations per start (0: default)"},
		&cli.Float64Flag{Name: "tol", Usage: "EM stops when the relative log-likelihood gain falls below this (0: default)"},
		&cli.IntFlag{Name: "test-length", Value: 1, Usage: "length m of the core tests of the prediction features"},
		&cli.Float64Flag{Name: "delta", Usage: "confidence level δ of p_min = δ/(K·H·(|O||A|)^H) (0: 0.05)"},
		&cli.Float64Flag{Name: "p-min", Usage: "override p_min of Θ_min (0: the default above)"},
		&cli.StringFlag{Name: "alpha", Value: "auto", Usage: `bonus coefficient α: a number, a list "0,0.3,1", "auto" (a list chosen on held-out episodes) or "theory" (the paper's α̂, needs --gamma)`},
		&cli.Float64Flag{Name: "lambda", Usage: "regulariser λ of U_h (0: 1)"},
		&cli.Float64Flag{Name: "gamma", Usage: "γ of the paper's α̂ for --alpha theory"},
		&cli.Float64Flag{Name: "select-heldout", Usage: "share of episodes in the evaluation part when choosing α among candidates (0: 0.5)"},
		&cli.StringFlag{Name: "lcb-correction", Value: "cross-fit", Usage: `correction of the reported lower bound when α is chosen among candidates: "cross-fit" (price the bonus at the least α that covers the planning model's optimism measured on the held-out part) or "none" (the paper's bound at the chosen α)`},
		&cli.Int64Flag{Name: "plan-budget", Usage: "node budget of the exact planner; larger trees are planned approximately with a stated gap (0: default)"},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the split, held-out draws and EM starts"},
		&cli.IntFlag{Name: "workers", Usage: "goroutines (0: all cores); results do not depend on it"},
		&cli.StringFlag{Name: "log-format", Value: "auto", Usage: `"auto" (a progress bar on a terminal, JSON lines otherwise), "text" or "json"`},
	)
	flags, before := configurable(flags)
	commands = append(commands, &cli.Command{
		Name:      "fit",
		Usage:     "learn the PSR-LCB policy from logs and write policy, model and report into --out",
		ArgsUsage: "FILES...",
		Description: "Runs ingest → split → estimate → pessimism → policy → report. The output directory gets\n" +
			"policy.arrow, model.arrow, coverage.arrow, episodes.arrow, fit.arrow, alpha.arrow (Arrow IPC files),\n" +
			"manifest.json and report.html. Nothing is written unless the whole run succeeds.",
		Flags:  flags,
		Before: before,
		Action: runFit,
	})
}

// fitOptions turns the flags into the pipeline's options.
func fitOptions(c *cli.Context) (pipeline.Options, error) {
	var o pipeline.Options
	switch r := c.String("rank"); r {
	case "auto", "":
	default:
		n, err := strconv.Atoi(r)
		if err != nil || n < 1 {
			return o, usagef(`--rank must be a positive integer or "auto", not %q`, r)
		}
		o.Estimate.Rank = n
	}
	o.Estimate.MaxRank = c.Int("max-rank")
	o.Estimate.Dynamics = c.String("dynamics")
	if d := o.Estimate.Dynamics; d != estimate.DynamicsStationary && d != estimate.DynamicsPerStep {
		return o, usagef("--dynamics must be %q or %q, not %q", estimate.DynamicsStationary, estimate.DynamicsPerStep, d)
	}
	o.Estimate.Restarts = c.Int("restarts")
	o.Estimate.MaxIter = c.Int("max-iter")
	o.Estimate.Tol = c.Float64("tol")
	o.Estimate.TestLength = c.Int("test-length")
	if o.Estimate.TestLength < 1 {
		return o, usagef("--test-length must be at least 1")
	}
	o.Estimate.Delta = c.Float64("delta")
	if p := c.Float64("p-min"); p != 0 {
		if !(p > 0 && p < 1) {
			return o, usagef("--p-min must be in (0,1), not %v", p)
		}
		o.Estimate.LogPMin = math.Log(p)
	}
	spec, err := pessimism.ParseAlpha(c.String("alpha"))
	if err != nil {
		return o, usagef("--alpha: %v", err)
	}
	o.Alpha = spec
	o.Gamma = c.Float64("gamma")
	if spec.Mode == pessimism.AlphaTheory && !(o.Gamma > 0) {
		return o, usagef("--alpha theory needs --gamma > 0 (γ of the paper's well-conditioning assumption)")
	}
	o.Lambda = c.Float64("lambda")
	if c.IsSet("lambda") && !(o.Lambda > 0) {
		return o, usagef("--lambda must be positive, not %v", o.Lambda)
	}
	o.SelectHeldOut = c.Float64("select-heldout")
	if c.IsSet("select-heldout") && !(o.SelectHeldOut > 0 && o.SelectHeldOut < 1) {
		return o, usagef("--select-heldout must be in (0,1), not %v", o.SelectHeldOut)
	}
	o.LCBCorrection = c.String("lcb-correction")
	if v := o.LCBCorrection; v != pipeline.LCBCorrectionCrossFit && v != pipeline.LCBCorrectionNone {
		return o, usagef("--lcb-correction must be %q or %q, not %q", pipeline.LCBCorrectionCrossFit, pipeline.LCBCorrectionNone, v)
	}
	o.PlanBudget = c.Int64("plan-budget")
	if c.IsSet("plan-budget") && o.PlanBudget < 1 {
		return o, usagef("--plan-budget must be a positive number of nodes, not %d", o.PlanBudget)
	}
	o.Seed = c.Uint64("seed")
	o.Workers = c.Int("workers")
	return o, nil
}

// progressFor picks the reporter: a live bar on a terminal, JSON lines
// when stderr is not a terminal or with --log-format json.
func progressFor(c *cli.Context, w io.Writer) (progress.Reporter, error) {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	switch f := c.String("log-format"); f {
	case "json":
		return progress.NewJSON(w), nil
	case "text":
		if tty {
			return progress.NewText(w), nil
		}
		return progress.NewPlain(w), nil
	case "auto", "":
		if tty {
			return progress.NewText(w), nil
		}
		return progress.NewJSON(w), nil
	default:
		return nil, usagef(`--log-format must be "auto", "text" or "json", not %q`, f)
	}
}

func runFit(c *cli.Context) error {
	out := c.Path("out")
	if out == "" {
		return usagef("fit: --out DIR is required")
	}
	opts, err := fitOptions(c)
	if err != nil {
		return err
	}
	prog, err := progressFor(c, c.App.ErrWriter)
	if err != nil {
		return err
	}
	opts.Progress = prog
	opts.Version = version
	files, err := logFiles(c)
	if err != nil {
		return err
	}
	if opts.Ingest, err = ingestOptions(c); err != nil {
		return err
	}
	// Fail on an existing output before any work.
	dir, err := outdir.Create(out, c.Bool("force"))
	if err != nil {
		return err
	}
	defer dir.Abort()

	res, err := pipeline.Run(c.Context, files, opts)
	if err != nil {
		return err
	}
	if err := c.Context.Err(); err != nil {
		return err
	}
	if err := report.WriteOutcome(dir.Tmp, &res.Outcome); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	if err := dir.Commit(); err != nil {
		return fmt.Errorf("moving the results into %s: %w", out, err)
	}
	printHeadline(c.App.Writer, out, &res.Run.Manifest, res.Plan)
	fmt.Fprintf(c.App.Writer, "wrote %s (open %s)\n", out, filepath.Join(out, report.HTMLFile))
	return nil
}

func printHeadline(w io.Writer, dir string, m *report.Manifest, plan *policy.PlanStats) {
	h := m.Headline
	fmt.Fprintf(w, "run %s: %d episodes × %d steps, rank %d, α = %.4g\n", m.RunID, m.Episodes, m.Horizon, h.Rank, float64(h.Alpha))
	fmt.Fprintf(w, "  lower confidence bound  %.4g  (%.4g in return units)\n", float64(h.LCB), float64(h.LCBUnits))
	fmt.Fprintf(w, "  model value V_R         %.4g  (%.4g)\n", float64(h.ModelValue), float64(h.ModelValueUnits))
	fmt.Fprintf(w, "  bonus value V_b         %.4g\n", float64(h.BonusValue))
	fmt.Fprintf(w, "  importance-weighted     %.4g  [%.4g, %.4g]  (%.4g in return units), ESS %.1f\n", float64(h.IWValue), float64(h.IWLow), float64(h.IWHigh), float64(h.IWValueUnits), float64(h.ESS))
	fmt.Fprintf(w, "  behaviour in the logs   %.4g  (%.4g)\n", float64(h.BehaviorValue), float64(h.BehaviorUnits))
	fmt.Fprintf(w, "  C∞ %.4g, ι %.4g%s, Θ_min slack %.4g\n", float64(h.CInf), float64(h.Iota), estimatedMark(h.IotaEstimated), float64(h.ThetaMinSlack))
	if plan != nil && !plan.Exact {
		fmt.Fprintf(w, "  planner approximate: worst-case gap %.3g\n", plan.GapBound)
	}
	fmt.Fprintf(w, "verdict: %s\n", h.Verdict)
}

func estimatedMark(b bool) string {
	if b {
		return " (estimated)"
	}
	return ""
}
