package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/ope"
	"github.com/psrlcb/psrlcb/report"
)

// evaluateLogsOpts are the options of evaluate --logs.
type evaluateLogsOpts struct {
	evaluateOptions
	files, inputs []string
	ingest        ingest.Options
	column        string // --target-propensity-column
	out           string
	force         bool
	seed          uint64
	bootstrap     int
	noModel       bool
	rank          int
	alpha         float64
	workers       int
	stderr        io.Writer
}

// evaluateLogsOutput is the output kind of evaluate --logs (package outdir).
var evaluateLogsOutput = outputKind{"psrlcb evaluate --logs", report.ManifestFile, report.EvaluationFiles()}

// evaluateLogsOptions reads and checks the flags of evaluate --logs (or
// with --target-propensity-column) on top of evaluate's base options.
func evaluateLogsOptions(c *cli.Context, base evaluateOptions) (evaluateLogsOpts, error) {
	o := evaluateLogsOpts{evaluateOptions: base, column: c.String("target-propensity-column"), out: c.String("out"),
		force: c.Bool("force"), seed: c.Uint64("seed"), bootstrap: c.Int("bootstrap"), noModel: c.Bool("no-model"),
		alpha: c.Float64("alpha"), workers: c.Int("workers"), stderr: c.App.ErrWriter}
	if err := checkEvaluateLogs(c, o); err != nil {
		return o, err
	}
	var err error
	if o.rank, err = rankFlag(c.String("rank")); err != nil {
		return o, err
	}
	if o.ingest, err = ingestOptions(c); err != nil {
		return o, err
	}
	args := append([]string{c.String("logs")}, c.Args().Slice()...)
	if o.files, err = ingest.Expand(args); err != nil {
		return o, err
	}
	o.inputs = inputPaths(args, o.files)
	if o.bootstrap == 0 {
		o.bootstrap = -1 // ope: no bootstrap
	}
	return o, nil
}

// rankFlag is the rank --rank r asks for, 0 for "auto".
func rankFlag(r string) (int, error) {
	if r == "auto" {
		return 0, nil
	}
	n, err := strconv.Atoi(r)
	if err != nil || n < 1 {
		return 0, usagef(`--rank must be a positive integer or "auto", not %q`, r)
	}
	return n, nil
}

// checkEvaluateLogs refuses --pomdp with --logs, an evaluated policy given
// neither or twice, a column without logs, and a negative --bootstrap or
// --alpha.
func checkEvaluateLogs(c *cli.Context, o evaluateLogsOpts) error {
	switch {
	case o.pomdp != "":
		return usagef("--logs estimates from logs; --pomdp evaluates under a known model: give one of them")
	case o.column != "" && o.policy != "":
		return usagef("give the evaluated policy once: --policy or --target-propensity-column, not both")
	case o.column == "" && o.policy == "":
		return usagef("--logs needs the evaluated policy: --policy PATH, or --target-propensity-column COLUMN")
	case !c.IsSet("logs"):
		return usagef("--target-propensity-column needs the logs: --logs FILES")
	case o.bootstrap < 0:
		return usagef("--bootstrap must be 0 or a number of replicates, not %d", o.bootstrap)
	case !(o.alpha >= 0):
		return usagef("--alpha must be a non-negative number, not %v", o.alpha)
	}
	return nil
}

// runEvaluateLogs estimates the policy's value from the logs and prints
// (and with --out writes) the estimates.
func runEvaluateLogs(ctx context.Context, stdout io.Writer, o evaluateLogsOpts) error {
	var tmp string
	var commit func() error
	if o.out != "" {
		d, err := createOut(o.stderr, o.out, o.force, evaluateLogsOutput, o.inputs)
		if err != nil {
			return err
		}
		defer d.Abort()
		tmp, commit = d.Tmp, d.Commit
	}
	ev, err := evaluateLogs(ctx, o)
	if err != nil {
		return err
	}
	if commit != nil {
		write := func(tmp string) error { return report.WriteEvaluation(tmp, ev) }
		if err := writeAndCommit(ctx, o.out, tmp, commit, write); err != nil {
			return err
		}
	}
	return writeEvaluation(stdout, ev, o)
}

// evaluateLogs reads the logs and estimates the policy's value from them,
// timing the stages.
func evaluateLogs(ctx context.Context, o evaluateLogsOpts) (*report.Evaluation, error) {
	times := map[string]float64{}
	var d *ingest.Dataset
	var notes []string
	err := o.stage("ingest", func() (err error) {
		d, notes, err = readEvaluationLogs(ctx, o, times)
		return err
	})
	if err != nil {
		return nil, err
	}
	return estimateEvaluation(ctx, o, d, notes, times)
}

// writeEvaluation prints ev as JSON (--json) or as the table a person
// reads.
func writeEvaluation(stdout io.Writer, ev *report.Evaluation, o evaluateLogsOpts) error {
	if o.json {
		return writeJSON(stdout, jsonEvaluation(ev))
	}
	return printEvaluation(stdout, ev, o.out)
}

// readEvaluationLogs reads the logs (timed as times["ingest"]) and, when
// they carry no propensities, estimates the behaviour's, with a note.
func readEvaluationLogs(ctx context.Context, o evaluateLogsOpts, times map[string]float64) (*ingest.Dataset, []string, error) {
	start := time.Now()
	d, err := ingest.Read(ctx, o.files, o.ingest)
	if err != nil {
		return nil, nil, err
	}
	times["ingest"] = time.Since(start).Seconds()
	var notes []string
	if !d.HasPropensity() {
		d.Propensity = estimate.EstimateBehavior(d)
		notes = append(notes, "The logs carry no propensities: the behaviour's probabilities were estimated from action frequencies, so every importance weight is an estimate.")
	}
	return d, notes, nil
}

// estimateEvaluation reads the evaluated policy, fits the models, runs
// the estimators on d (timing the two stages in times) and returns the
// evaluation record.
func estimateEvaluation(ctx context.Context, o evaluateLogsOpts, d *ingest.Dataset, notes []string, times map[string]float64) (*report.Evaluation, error) {
	start := time.Now()
	var target ope.Target
	var targetName string
	var rho []float64
	var eo ope.Options
	err := o.stage("models", func() (err error) {
		if target, targetName, rho, err = evaluationTarget(ctx, o, d); err != nil {
			return err
		}
		eo, err = estimatorOptions(ctx, o, d, target)
		return err
	})
	if err != nil {
		return nil, err
	}
	times["models"] = time.Since(start).Seconds()
	start = time.Now()
	var res *ope.Result
	err = o.stage("estimates", func() (err error) {
		res, err = ope.Evaluate(ctx, d, rho, target, eo)
		return err
	})
	if err != nil {
		return nil, err
	}
	times["estimates"] = time.Since(start).Seconds()
	return evaluationRecord(ctx, o, d, targetName, res, eo.ModelNote, notes, times)
}

// estimatorOptions are the estimators' options: with a target policy and
// without --no-model, the fitted models (from --model's start when
// given); with --no-model, the model-based estimators marked skipped.
func estimatorOptions(ctx context.Context, o evaluateLogsOpts, d *ingest.Dataset, target ope.Target) (ope.Options, error) {
	eo := ope.Options{Bootstrap: o.bootstrap, Seed: o.seed, Workers: o.workers}
	if target != nil && !o.noModel {
		ms, err := fitEvaluationModels(ctx, o, d)
		if err != nil {
			return eo, err
		}
		eo.Model, eo.Bonus, eo.Folds, eo.Fold, eo.ModelNote = ms.All, ms.Bonus, ms.Folds, ms.Fold, ms.Note
	} else if o.noModel {
		eo.Skipped = map[string]string{}
		for _, n := range []string{ope.EstModel, ope.EstModelLCB, ope.EstDR, ope.EstWDR} {
			eo.Skipped[n] = "skipped: --no-model"
		}
	}
	return eo, nil
}

// fitEvaluationModels fits the model-based estimators' models on d, from
// --model's start when given.
func fitEvaluationModels(ctx context.Context, o evaluateLogsOpts, d *ingest.Dataset) (*ope.Models, error) {
	var startModel *estimate.Model
	if o.model != "" {
		var err error
		if startModel, err = estimate.ReadModel(o.model); err != nil {
			return nil, err
		}
	}
	return ope.FitModels(ctx, d, startModel, estimate.Options{Rank: o.rank, Seed: o.seed, Workers: o.workers}, o.alpha)
}

// evaluationTarget reads the evaluated policy and the ratios of its
// probabilities to the behaviour's at every logged step.
func evaluationTarget(ctx context.Context, o evaluateLogsOpts, d *ingest.Dataset) (ope.Target, string, []float64, error) {
	if o.column != "" {
		cols := o.ingest.Columns
		ep, step := orDefault(cols.Episode, "episode_id"), orDefault(cols.Step, "step")
		rho, err := ope.ColumnRatios(ctx, o.files, o.column, ep, step, d)
		return nil, "the policy whose probabilities are the logs' column " + strconv.Quote(o.column), rho, err
	}
	t, err := ope.ReadTarget(o.policy, d)
	if err != nil {
		return nil, "", nil, err
	}
	rho, err := ope.Ratios(ctx, d, t, o.workers)
	return t, "the policy " + o.policy, rho, err
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// evaluationRecord is the evaluation as written and printed.
func evaluationRecord(ctx context.Context, o evaluateLogsOpts, d *ingest.Dataset, target string, res *ope.Result, models string, notes []string, times map[string]float64) (*report.Evaluation, error) {
	inputs, err := report.HashInputs(ctx, o.files)
	if err != nil {
		return nil, err
	}
	ev := &report.Evaluation{Tool: "psrlcb", Version: version, GoVersion: runtime.Version(), Inputs: inputs, Target: target,
		Parameters: evaluationParams(o, d), Episodes: d.NumEpisodes(), Horizon: d.Horizon, Estimates: report.EstimateRows(res.Estimates),
		Recommended: res.Recommended, Models: models, Notes: notes, StageTimes: times}
	ev.Quarantined = quarantinedRows(d)
	ev.RunID = report.EvaluationID(ev)
	ev.Summary = report.EvaluationSummary(ev)
	return ev, nil
}

// evaluationParams are the parameters of the evaluation o of d, as the
// record keeps them.
func evaluationParams(o evaluateLogsOpts, d *ingest.Dataset) map[string]any {
	return map[string]any{"seed": o.seed, "bootstrap": o.bootstrap, "no_model": o.noModel, "rank": o.rank, "alpha": o.alpha,
		"horizon": d.Horizon, "on_invalid": o.ingest.OnInvalid, "target_propensity_column": o.column, "model": o.model}
}

// quarantinedRows are d's quarantined episodes as the record's rows
// (an empty list, not null, when there are none).
func quarantinedRows(d *ingest.Dataset) []report.Quarantined {
	rows := []report.Quarantined{}
	for _, q := range d.Quarantined {
		rows = append(rows, report.Quarantined(q))
	}
	return rows
}

// jsonEvaluation is --json's object: the estimates (null where an
// estimator could not be computed, with the reason) and the recommended
// estimator's name.
func jsonEvaluation(ev *report.Evaluation) any {
	return struct {
		RunID       string               `json:"run_id"`
		Target      string               `json:"target"`
		Episodes    int                  `json:"episodes"`
		Horizon     int                  `json:"horizon"`
		Estimates   []report.EstimateRow `json:"estimates"`
		Recommended string               `json:"recommended"`
		Summary     string               `json:"summary"`
	}{ev.RunID, ev.Target, ev.Episodes, ev.Horizon, ev.Estimates, ev.Recommended, ev.Summary}
}

// printEvaluation leads with the answer, then lists every estimator.
func printEvaluation(w io.Writer, ev *report.Evaluation, out string) error {
	fmt.Fprintf(w, "run %s: %s on %d episodes × %d steps\n", ev.RunID, ev.Target, ev.Episodes, ev.Horizon)
	fmt.Fprintln(w, ev.Summary)
	if err := printEstimates(w, ev); err != nil {
		return err
	}
	for _, n := range ev.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if out != "" {
		fmt.Fprintf(w, "wrote %s (open %s)\n", out, filepath.Join(out, report.HTMLFile))
	}
	return nil
}

// printEstimate writes the table row of the estimate e, its name marked
// with " *" when it is the recommended one; a value or interval that could
// not be computed is "–" or blank.
func printEstimate(tw io.Writer, e report.EstimateRow, recommended bool) {
	interval := estimateInterval(e)
	mark := ""
	if recommended {
		mark = " *"
	}
	value := "–"
	if !math.IsNaN(float64(e.Value)) {
		value = fmt.Sprintf("%.4g", float64(e.Value))
	}
	ess, eps := estimateWeights(e)
	fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\n", e.Estimator, mark, value, interval, ess, eps, e.Reason)
}

// estimateInterval is e's 95% interval and its kind, empty when e has
// none.
func estimateInterval(e report.EstimateRow) string {
	if math.IsNaN(float64(e.Lower)) {
		return ""
	}
	return fmt.Sprintf("[%.4g, %.4g] %s", float64(e.Lower), float64(e.Upper), e.Interval)
}

// estimateWeights are e's effective sample size and number of episodes.
// They describe the importance weights: blank for the model's rows,
// which use none.
func estimateWeights(e report.EstimateRow) (ess, eps string) {
	if math.IsNaN(float64(e.ESS)) {
		return "", ""
	}
	return strconv.FormatFloat(math.Round(float64(e.ESS)*10)/10, 'f', -1, 64), strconv.Itoa(e.Episodes)
}

// printEstimates prints the table of ev's estimates, the recommended one
// marked.
func printEstimates(w io.Writer, ev *report.Evaluation) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "estimator\tvalue\t95%% interval\tESS\tepisodes\tnote\n")
	for _, e := range ev.Estimates {
		printEstimate(tw, e, e.Estimator == ev.Recommended)
	}
	return tw.Flush()
}
