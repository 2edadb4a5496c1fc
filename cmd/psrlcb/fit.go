package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/internal/fitflag"
	"github.com/psrlcb/psrlcb/internal/memlimit"
	"github.com/psrlcb/psrlcb/internal/outdir"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pipeline"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/progress"
	"github.com/psrlcb/psrlcb/report"
)

// fitModelFlags are fit's flags of the model's estimation.
func fitModelFlags() []cli.Flag {
	return []cli.Flag{
		cliString(fitflag.Rank),
		cliInt(fitflag.MaxRank),
		cliString(fitflag.Dynamics),
		cliInt(fitflag.Restarts),
		cliInt(fitflag.MaxIter),
		cliFloat(fitflag.Tol),
		&cli.IntFlag{Name: "test-length", Value: 1, Usage: "length m of the core tests of the prediction features"},
		&cli.Float64Flag{Name: "delta", Usage: fmt.Sprintf("confidence level δ of p_min = δ/(K·H·(|O||A|)^H) (0: %g)", estimate.DefaultDelta)},
		&cli.Float64Flag{Name: "p-min", Usage: "override p_min of Θ_min (0: the default above)"},
	}
}

// fitPlanFlags are fit's flags of the bonus, the lower bound and the
// planner.
func fitPlanFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "alpha", Value: "auto", Usage: `bonus coefficient α: a number, a list "0,0.3,1", "auto" (a list chosen on held-out episodes) or "theory" (the paper's α̂, needs --gamma)`},
		cliFloat(fitflag.Lambda),
		&cli.Float64Flag{Name: "gamma", Usage: "γ of the paper's α̂ for --alpha theory"},
		cliFloat(fitflag.SelectHeldOut),
		&cli.StringFlag{Name: "return-range", Usage: `"LO,HI": the range episode returns can take, when known (default: H × the smallest and largest logged reward)`},
		&cli.StringFlag{Name: "lcb-correction", Value: "cross-fit", Usage: `correction of the reported lower bound when α is chosen among candidates: "cross-fit" (price the bonus at the least α that covers the planning model's optimism measured on the held-out part) or "none" (the paper's bound at the chosen α)`},
		&cli.StringFlag{Name: "fallback", Value: "behavior", Usage: `when α is chosen among candidates: "behavior" (when the held-out lower bound of the behaviour's clone, its most-logged action at every history, beats the plan's, return that clone improved where the logs show a better logged action, or the clone itself) or "none" (always the plan)`},
		cliInt64(fitflag.PlanBudget),
		cliString(fitflag.Planner),
		cliInt(fitflag.PlanPoints),
		cliBool(fitflag.HullBound),
		cliInt64(fitflag.PlanRows),
	}
}

// fitRunFlags are fit's flags of the run's resources, seed, comparisons
// and messages.
func fitRunFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "memory-limit", Value: memlimit.Default, Usage: `memory budget of the run: a size ("600MiB", "4GiB"), a share of the machine's memory ("50%"), or "none"; logs larger than half of it keep their step codes in a spill file on disk (--spill-dir), logs that cannot fit even so are refused before they are read, the policy table is kept to what fits beside the logs, and the garbage collector holds the heap under it`},
		&cli.PathFlag{Name: "spill-dir", Usage: "where logs too large for --memory-limit keep their step codes, read from there at every pass (default: the system's temporary directory; use local disk, not tmpfs)"},
		cliUint64(fitflag.Seed),
		&cli.IntFlag{Name: "max-observations", Usage: `keep the N most frequent observations and map the rest to "<other>" (0: keep all)`},
		&cli.IntFlag{Name: "workers", Usage: "goroutines (0: all cores); results do not depend on it"},
		&cli.StringFlag{Name: "runner", Value: "local", Usage: `where the passes over the episodes run: "local" (this process), or "prism", "flink", "spark", "dataflow", "universal" (Apache Beam: the run is handed to psrlcb-beam, found beside psrlcb or on PATH, with the same arguments; Beam's own flags such as --endpoint go with it; docs/scale-out.md)`},
		&cli.StringSliceFlag{Name: "compare", Usage: "a policy to estimate from the logs beside the run's own (repeatable): a run directory, a policy.arrow or a stochastic policy table (as evaluate --logs --policy takes it); the report and compared.arrow put them side by side"},
		logFormatFlag(),
	}
}

// logFormatFlag is --log-format, the form of the progress messages on
// stderr (progressFor).
func logFormatFlag() cli.Flag {
	return &cli.StringFlag{Name: "log-format", Value: "auto", Usage: `"auto" (a progress bar on a terminal, JSON lines otherwise), "text" or "json"`}
}

// fitCommandFlags are all of fit's flags: the ingest flags, the output
// directory's, then the model's, the plan's and the run's.
func fitCommandFlags() []cli.Flag {
	flags := append(ingestFlags(),
		&cli.PathFlag{Name: "out", Aliases: []string{"o"}, Usage: "output directory, written atomically; may not be, contain or lie inside an input, nor be the current directory"},
		&cli.BoolFlag{Name: "force", Usage: "replace an earlier output of fit (a directory holding manifest.json and only the files fit writes); anything else is refused"},
	)
	return append(append(append(flags, fitModelFlags()...), fitPlanFlags()...), fitRunFlags()...)
}

func newFitCommand() *cli.Command {
	flags, before := configurable(fitCommandFlags())
	return &cli.Command{
		Name:      "fit",
		Usage:     "learn the PSR-LCB policy from logs and write policy, model and report into --out",
		ArgsUsage: "FILES...",
		Description: "Runs ingest → split → estimate → pessimism → policy → report. The output directory gets\n" +
			"policy.arrow, model.arrow, coverage.arrow, episodes.arrow, fit.arrow, alpha.arrow (Arrow IPC files),\n" +
			"manifest.json and report.html. Nothing is written unless the whole run succeeds.",
		Flags:  flags,
		Before: before,
		Action: fitAction,
	}
}

// fitAction is fit's action: it reads the flags and runs the fit.
func fitAction(c *cli.Context) error {
	o, err := fitCmdOptions(c)
	if err != nil {
		return err
	}
	return runFit(c.Context, c.App.Writer, o)
}

// fitOpts are the options of `psrlcb fit`: the pipeline's, and where the
// outputs and messages go.
type fitOpts struct {
	files  []string // the logs, expanded
	inputs []string // the arguments as given (files and directories), kept clear of out
	out    string
	force  bool
	pipe   pipeline.Options
	stderr io.Writer // warnings and notes
}

// fitCmdOptions reads and checks every flag of fit.
func fitCmdOptions(c *cli.Context) (fitOpts, error) {
	o := fitOpts{out: c.Path("out"), force: c.Bool("force"), stderr: c.App.ErrWriter}
	if o.out == "" {
		return o, usagef("fit: --out DIR is required")
	}
	var err error
	if o.pipe, err = fitPipelineOptions(c); err != nil {
		return o, err
	}
	if o.files, err = logFiles(c); err != nil {
		return o, err
	}
	o.inputs = inputPaths(c.Args().Slice(), o.files)
	return o, nil
}

// fitPipelineOptions are the pipeline's options of fit's flags, with the
// progress reporter, the version and the ingest options.
func fitPipelineOptions(c *cli.Context) (pipeline.Options, error) {
	o, err := fitOptions(c)
	if err != nil {
		return o, err
	}
	if o.Progress, err = progressFor(c, c.App.ErrWriter); err != nil {
		return o, err
	}
	o.Version = version
	o.Ingest, err = ingestOptions(c)
	return o, err
}

// fitOptions turns the flags into the pipeline's options.
func fitOptions(c *cli.Context) (pipeline.Options, error) {
	var o pipeline.Options
	if err := fitEstimateOptions(c, &o); err != nil {
		return o, err
	}
	if err := fitPlanOptions(c, &o); err != nil {
		return o, err
	}
	if err := fitRunOptions(c, &o); err != nil {
		return o, err
	}
	return o, checkFitOptions(o)
}

// fitEstimateOptions sets o's options of the estimation from
// fitModelFlags.
func fitEstimateOptions(c *cli.Context, o *pipeline.Options) error {
	if err := rankOption(c.String("rank"), o); err != nil {
		return err
	}
	o.Estimate.MaxRank = c.Int("max-rank")
	o.Estimate.Dynamics = c.String("dynamics")
	o.Estimate.Restarts = c.Int("restarts")
	o.Estimate.MaxIter = c.Int("max-iter")
	o.Estimate.Tol = c.Float64("tol")
	o.Estimate.TestLength = c.Int("test-length")
	o.Estimate.Delta = c.Float64("delta")
	return pMinOption(c.Float64("p-min"), o)
}

// rankOption sets o's rank from --rank r (rankFlag); "auto" or an empty
// r leaves the rank to the search.
func rankOption(r string, o *pipeline.Options) error {
	if r == "" {
		return nil
	}
	n, err := rankFlag(r)
	if err != nil {
		return err
	}
	o.Estimate.Rank = n
	return nil
}

// pMinOption sets o's log p_min from --p-min p, which must be in (0,1);
// 0 keeps the default.
func pMinOption(p float64, o *pipeline.Options) error {
	if p == 0 {
		return nil
	}
	if !(p > 0 && p < 1) {
		return usagef("--p-min must be in (0,1), not %v", p)
	}
	o.Estimate.LogPMin = math.Log(p)
	return nil
}

// fitPlanOptions sets o's options of the bonus, the lower bound and the
// planner from fitPlanFlags.
func fitPlanOptions(c *cli.Context, o *pipeline.Options) error {
	if err := fitBonusOptions(c, o); err != nil {
		return err
	}
	return fitPlannerOptions(c, o)
}

// fitBonusOptions sets o's options of the bonus coefficient α, the
// lower bound's correction and the fallback.
func fitBonusOptions(c *cli.Context, o *pipeline.Options) error {
	spec, err := pessimism.ParseAlpha(c.String("alpha"))
	if err != nil {
		return usagef("--alpha: %v", err)
	}
	o.Alpha = spec
	o.Gamma = c.Float64("gamma")
	o.Lambda = c.Float64("lambda")
	o.SelectHeldOut = c.Float64("select-heldout")
	o.LCBCorrection = c.String("lcb-correction")
	o.Fallback = c.String("fallback")
	return nil
}

// fitPlannerOptions sets o's options of the planner, its budget and the
// return range.
func fitPlannerOptions(c *cli.Context, o *pipeline.Options) error {
	var err error
	o.PlanBudget = c.Int64("plan-budget")
	o.MaxObservations = c.Int("max-observations")
	if r := c.String("return-range"); r != "" {
		if o.ReturnRange, err = returnRangeFlag(r); err != nil {
			return err
		}
	}
	o.Planner = c.String("planner")
	o.PlanPoints = c.Int("plan-points")
	o.HullBound = c.Bool("hull-bound")
	o.PlanRows = c.Int64("plan-rows")
	return nil
}

// returnRangeFlag parses --return-range "LO,HI" (the pipeline checks
// that LO < HI are finite).
func returnRangeFlag(r string) ([2]float64, error) {
	lo, hi, ok := strings.Cut(r, ",")
	a, err1 := strconv.ParseFloat(strings.TrimSpace(lo), 64)
	b, err2 := strconv.ParseFloat(strings.TrimSpace(hi), 64)
	if !ok || err1 != nil || err2 != nil {
		return [2]float64{}, usagef(`--return-range must be "LO,HI" with finite LO < HI, not %q`, r)
	}
	return [2]float64{a, b}, nil
}

// fitRunOptions sets o's options of the run's resources, seed and
// comparisons from fitRunFlags.
func fitRunOptions(c *cli.Context, o *pipeline.Options) error {
	if r := c.String("runner"); r != "local" {
		// main hands --runner on the command line to psrlcb-beam; a
		// runner set in a config file reaches here.
		return usagef("--runner %s: give it on the command line (a Beam runner hands the whole run to %s)", r, beamCommand)
	}
	limit, err := memlimit.Parse(c.String("memory-limit"), memlimit.System.Machine())
	if err != nil {
		return usagef("--memory-limit: %v", err)
	}
	o.MemoryLimit = limit
	o.SpillDir = c.Path("spill-dir")
	o.Seed = c.Uint64("seed")
	o.Workers = c.Int("workers")
	o.Compare = c.StringSlice("compare")
	return nil
}

// fitFlags names the flag of each field of pipeline.Options whose rule
// the pipeline checks (pipeline.OptionError.Field).
var fitFlags = map[string]string{
	"Lambda":          "--lambda",
	"SelectHeldOut":   "--select-heldout",
	"LCBCorrection":   "--lcb-correction",
	"Fallback":        "--fallback",
	"PlanBudget":      "--plan-budget",
	"Planner":         "--planner",
	"PlanPoints":      "--plan-points",
	"PlanRows":        "--plan-rows",
	"Gamma":           "--gamma",
	"Alpha":           "--alpha",
	"MaxObservations": "--max-observations",
	"ReturnRange":     "--return-range",
}

// checkFitOptions checks o by the pipeline's own rules (pipeline.Options.
// Check, the one home of each rule) before any file is touched, and names
// the flag of an invalid field.
func checkFitOptions(o pipeline.Options) error {
	err := o.Check()
	var oe *pipeline.OptionError
	if errors.As(err, &oe) {
		if f, ok := fitFlags[oe.Field]; ok {
			return usagef("%s: %s", f, oe.Msg)
		}
	}
	return err
}

// progressFor picks the reporter: a live bar on a terminal, JSON lines
// when stderr is not a terminal or with --log-format json.
func progressFor(c *cli.Context, w io.Writer) (progress.Reporter, error) {
	tty := isTerminal(w)
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

// isTerminal reports whether w is a file open on a terminal.
func isTerminal(w io.Writer) bool {
	if f, ok := w.(*os.File); ok {
		return term.IsTerminal(int(f.Fd()))
	}
	return false
}

// setMemoryLimit gives the garbage collector the run's memory budget as
// its soft limit (it collects more often as the heap nears it), unless the
// user set GOMEMLIMIT, which the runtime has applied.
func setMemoryLimit(limit int64, env string) {
	if limit > 0 && env == "" {
		debug.SetMemoryLimit(limit)
	}
}

// runFit runs the pipeline on the logs, writes its outcome into o.out and
// prints the headline.
func runFit(ctx context.Context, stdout io.Writer, o fitOpts) error {
	// Fail on an output in the way before any work.
	dir, err := createOut(o.stderr, o.out, o.force, fitOutput, o.inputs)
	if err != nil {
		return err
	}
	defer dir.Abort()
	setMemoryLimit(o.pipe.MemoryLimit, os.Getenv("GOMEMLIMIT"))

	res, err := pipeline.Run(ctx, o.files, o.pipe)
	if err != nil {
		return err
	}
	defer res.Close()
	return writeFit(ctx, stdout, o, dir, res)
}

// writeFit prints the run's warnings, writes its outcome into o.out
// through dir and prints the headline.
func writeFit(ctx context.Context, stdout io.Writer, o fitOpts, dir *outdir.Dir, res *pipeline.Result) error {
	for _, w := range res.Warnings {
		warnf(o.stderr, "%s", w)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	write := func(tmp string) error { return report.WriteOutcome(tmp, &res.Outcome) }
	if err := writeAndCommit(ctx, o.out, dir.Tmp, dir.Commit, write); err != nil {
		return err
	}
	printHeadline(stdout, o.out, &res.Run.Manifest, res.Plan)
	fmt.Fprintf(stdout, "wrote %s (open %s)\n", o.out, filepath.Join(o.out, report.HTMLFile))
	return nil
}

// printHeadline is the few lines a person reads after a fit: the
// expected return of one episode in the logs' own units, the policy's
// against the behaviour's, and the verdict. Symbols and diagnostics (C∞,
// ι, Θ_min slack, the [0,1] scale) are defined in report.html.
func printHeadline(w io.Writer, dir string, m *report.Manifest, plan *policy.PlanStats) {
	h := m.Headline
	fmt.Fprintf(w, "run %s: %d episodes × %d steps, rank %d, α = %.3g\n", m.RunID, m.Episodes, m.Horizon, h.Rank, float64(h.Alpha))
	printReturns(w, m)
	printPlanNotes(w, plan)
	for _, c := range m.Compared[min(1, len(m.Compared)):] {
		// The run's own policy is the first compared one, shown above.
		fmt.Fprintf(w, "  compared: %s, %s\n", c.Policy, c.Summary)
	}
	if h.IotaEstimated {
		fmt.Fprintf(w, "  the logs carry no propensities: the behaviour policy was estimated from action frequencies\n")
	}
	fmt.Fprintf(w, "verdict: %s\n", h.Verdict)
	printRecommendation(w, m)
}

// printReturns prints the expected return per episode in the logs' units:
// the policy's lower bound, fitted model value and estimate from the logs
// (when some logged episode follows it), and the behaviour's mean.
func printReturns(w io.Writer, m *report.Manifest) {
	h := m.Headline
	fmt.Fprintf(w, "expected return per episode, in the logs' units:\n")
	fmt.Fprintf(w, "  policy, lower confidence bound  %10.4g\n", float64(h.LCBUnits))
	fmt.Fprintf(w, "  policy, fitted model's value    %10.4g\n", float64(h.ModelValueUnits))
	if h.ESS < 1 {
		fmt.Fprintf(w, "  policy, estimated from the logs       —  no logged episode follows the policy's choices through all %d steps\n", m.Horizon)
	} else {
		fmt.Fprintf(w, "  policy, estimated from the logs %10.4g  95%% interval [%.4g, %.4g]; effective sample size %.0f of %d episodes\n",
			float64(h.IWValueUnits), float64(h.IWLowUnits), float64(h.IWHighUnits), float64(h.ESS), m.Episodes)
	}
	fmt.Fprintf(w, "  behaviour, mean in the logs     %10.4g\n", float64(h.BehaviorUnits))
}

// printPlanNotes says how close an approximate plan is to the optimum:
// the belief planner's gap, why it may stay above policy.TargetGap and how
// its value past the table was computed, or the pruned search's gap.
func printPlanNotes(w io.Writer, plan *policy.PlanStats) {
	if plan != nil && plan.Planner == policy.PlannerBelief {
		printBeliefPlanNotes(w, plan)
	} else if plan != nil && !plan.Exact {
		fmt.Fprintf(w, "  the planner was approximate: within %.3g of the optimum, as a share of the logged return range\n", plan.GapBound)
		if plan.BeliefGap > 0 {
			fmt.Fprintf(w, "  (the pruned search's policy: the belief planner's, which stated a gap of %.3g, was certainly worse; its controller decides the histories past the table)\n", plan.BeliefGap)
		}
	}
}

// printBeliefPlanNotes prints the belief planner's gap, why it may stay
// above policy.TargetGap and how its value past the table was computed.
func printBeliefPlanNotes(w io.Writer, plan *policy.PlanStats) {
	fmt.Fprintf(w, "  the belief planner's policy is within %.3g of the optimum at the planning α = %.3g (share of the logged return range); it decides every history (%s), and its table holds the %d most probable of them\n", plan.GapBound, plan.Alpha, report.ControllerFile, plan.Nodes)
	if plan.BeliefGap > 0 && plan.GapBound < plan.BeliefGap {
		fmt.Fprintf(w, "  (%.3g by its own upper bound; a pruned search of the history tree certified the rest)\n", plan.BeliefGap)
	}
	if plan.GapTrials > 0 {
		fmt.Fprintf(w, "  %s\n", report.GapSearchNote(plan))
	}
	if plan.GapBound > policy.TargetGap {
		if plan.BoundMemory > 0 {
			fmt.Fprintf(w, "  --memory-limit held the upper bound to %s (not %s) while it deepened: a larger limit may state a smaller gap for the same policy\n", memlimit.Format(plan.BoundMemory), memlimit.Format(policy.DefaultBoundMemory))
		}
		switch report.GapReasonOf(plan) {
		case report.GapChord:
			all := ""
			if report.BoundOwnsWholeGap(plan) {
				all = " (all of the gap: the bound cannot tell this policy from the optimum)"
			}
			fmt.Fprintf(w, "  the upper bound overvalues this policy by at least %.3g%s: what it charges in place of the bonus (%s) falls that far short of the policy's bonus, so were the policy optimal the gap would still be at least that; more points do not change that charge (docs/planning.md)\n", plan.BonusBoundGap, all, plan.ChargeWords())
		case report.GapSaturated:
			fmt.Fprintf(w, "  the gap is above %.2g while the plan's expected bonus is %.2f of its cap (α = %.3g): the upper bound knows the bonus only through a straight line below it, so the gap may be mostly the bound's; read it as unknown (docs/planning.md)\n", policy.TargetGap, plan.ValueBonus, plan.Alpha)
		case report.GapPointsTried:
			fmt.Fprintf(w, "  the gap is above %.2g: some steps reach more beliefs than the %d points planned at, but the %d the gap search added gave no better plan, so more --plan-points are unlikely to close it; it is more likely the upper bound's relaxation of the bonus (docs/planning.md)\n", policy.TargetGap, plan.Points, plan.GapPoints)
		case report.GapPoints:
			fmt.Fprintf(w, "  the gap is above %.2g: some steps reach more beliefs than the %d points planned at; more --plan-points may close it\n", policy.TargetGap, plan.Points)
		case report.GapRelaxation:
			fmt.Fprintf(w, "  the gap is above %.2g although the points held every belief the model reaches: it is the upper bound's relaxation of the bonus, not a loss more points would recover (docs/planning.md)\n", policy.TargetGap)
		}
		if !plan.HullBound && !report.BoundOwnsGap(plan) {
			fmt.Fprintf(w, "  part of it may be the upper bound's looseness between its points: --hull-bound states it against a tighter bound (the same policy, a longer final plan)\n")
		}
	}
	if plan.RolloutMass >= 1e-6 {
		fmt.Fprintf(w, "  its value past the table (histories of model probability %.3g) is from rollouts of it under the model: standard error %.2g of the return range\n", plan.RolloutMass, plan.ValueSE)
	}
}

// printRecommendation prints the recommendation when it is to keep the
// behaviour policy or when the fallback returned a clone of it.
func printRecommendation(w io.Writer, m *report.Manifest) {
	h := m.Headline
	cloned := m.Fallback != nil && m.Fallback.Used
	switch {
	case h.Recommendation == report.RecommendBehavior && cloned:
		fmt.Fprintf(w, "recommendation: keep the behaviour policy (evidence: %s); %s holds the %s, which the fallback returned instead of the plan\n", strings.ReplaceAll(h.Evidence, "_", " "), report.PolicyFile, report.CandidateName(m.Fallback.Chosen))
	case h.Recommendation == report.RecommendBehavior:
		fmt.Fprintf(w, "recommendation: keep the behaviour policy (evidence: %s); %s holds the planned policy for inspection only\n", strings.ReplaceAll(h.Evidence, "_", " "), report.PolicyFile)
	case cloned:
		fmt.Fprintf(w, "recommendation: %s, the %s, which the fallback returned instead of the plan\n", report.PolicyFile, report.CandidateName(m.Fallback.Chosen))
	}
}
