package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/psrlcb/psrlcb/ope"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
	"github.com/psrlcb/psrlcb/progress"
)

func newEvaluateCommand() *cli.Command {
	flags, before := configurable(evaluateFlags())
	return &cli.Command{
		Name:  "evaluate",
		Usage: "evaluate a policy: exactly under a known POMDP, under a fitted model, or from logs another policy produced (off-policy)",
		Description: "With --pomdp: follows policy.arrow with the policy's lookup rule (observations are the model's\n" +
			"observation names, \"init\" at step 1; actions must be actions of the model) and computes its exact\n" +
			"value V^π under the true model, the exact optimal finite-horizon value V*, the behaviour's value V^b,\n" +
			"and the normalized regret (V* − V^π)/(V* − V^b): 0 is optimal, 1 is no better than the\n" +
			"behaviour; it is undefined (null) when V* = V^b. Values are undiscounted sums of H rewards.\n" +
			"When V* has more beliefs to solve than an exact solver can hold, it is bracketed instead: the\n" +
			"belief planner runs on the true model with no bonus, its policy's value is the lower end and its\n" +
			"upper bound the upper end (optimal_bounds), and the regret is bracketed over that range.\n\n" +
			"With --model RUNDIR instead of --pomdp it values any policy table under the model a fit wrote\n" +
			"(model.arrow): the expected return E_θ̂^π[r_1+…+r_H] the fitted model assigns to the policy.\n\n" +
			"With --logs FILES it estimates the policy's value from logs with the behaviour's propensities\n" +
			"(off-policy evaluation): importance sampling per trajectory and per decision (and their\n" +
			"self-normalised forms), the value a latent-state model fitted on the logs gives the policy and\n" +
			"its lower bound, and doubly robust estimators with that model as control variate (cross-fitted\n" +
			"on halves of the logs), each with a 95% interval, its effective sample size and how many episodes\n" +
			"it rests on. The policy may depend on the whole history; a stochastic policy table gives the\n" +
			"probability of each action. Reads the logs as fit does (same columns, validation, exit codes).",
		Flags:  flags,
		Before: before,
		Action: evaluateAction,
	}
}

// evaluateFlags are evaluate's own flags followed by the ingest flags but
// --horizon (evaluate has its own).
func evaluateFlags() []cli.Flag {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "pomdp", Usage: "`FILE` holding the true model in Cassandra's .POMDP format (this, --model or --logs)"},
		&cli.StringFlag{Name: "model", Usage: "`RUNDIR` of a fit (or its model.arrow): value the policy under the fitted model; with --logs, the model the model-based estimators start from"},
		&cli.StringFlag{Name: "logs", Usage: "Parquet logs `FILE` (glob or directory; more files may follow as arguments): estimate the policy's value from logs another policy produced"},
		&cli.IntFlag{Name: "horizon", Usage: "steps per episode `H`; 0 means the policy's horizon (with --logs, the largest logged step)"},
		&cli.StringFlag{Name: "policy", Usage: "`PATH` of policy.arrow or a run directory; with --logs also a stochastic policy table (.arrow or .parquet, schemas package documentation)"},
		&cli.StringFlag{Name: "target-propensity-column", Usage: "with --logs: the logs' `COLUMN` holding the evaluated policy's probability of each logged action, instead of --policy (only the importance-sampling estimators are computed then)"},
		&cli.StringFlag{Name: "behavior", Value: "uniform", Usage: "behaviour policy `SPEC` to compare with (--pomdp): uniform, myopic:EPS or fixed:ACTION:EPS"},
		&cli.PathFlag{Name: "out", Usage: "with --logs: output `DIR` for estimates.arrow, manifest.json and report.html, written atomically"},
		&cli.BoolFlag{Name: "force", Usage: "replace an earlier output of evaluate --logs"},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "with --logs: seed of the bootstrap, the halves of the cross-fitting and the model's Monte Carlo look-ahead; with --pomdp or --model: of the Monte Carlo value"},
		&cli.IntFlag{Name: "bootstrap", Value: ope.DefaultBootstrap, Usage: "with --logs: bootstrap replicates of the intervals (0: only normal intervals)"},
		&cli.BoolFlag{Name: "no-model", Usage: "with --logs: importance sampling only, no model fitted (fast on large logs)"},
		&cli.StringFlag{Name: "rank", Value: "auto", Usage: `with --logs: latent states of the fitted model, or "auto"`},
		&cli.Float64Flag{Name: "alpha", Value: pessimism.DefaultAlpha, Usage: "with --logs: bonus coefficient α of the model's lower bound"},
		&cli.IntFlag{Name: "workers", Usage: "goroutines (0: all cores); results do not depend on it"},
		&cli.IntFlag{Name: "rollouts", Value: defaultRollouts, Usage: fmt.Sprintf("with --pomdp or --model: episodes of the Monte Carlo value when the policy's histories are too many to enumerate (--pomdp: more than %d; --model: |O|^H above %d)", exactEvalNodes, policy.DefaultMaxLeaves)},
		&cli.BoolFlag{Name: "json", Usage: "print one JSON object instead of text"},
		logFormatFlag(),
	}
	for _, f := range ingestFlags() {
		if f.Names()[0] != "horizon" {
			flags = append(flags, f)
		}
	}
	return flags
}

// evaluateAction runs evaluate --logs (or with
// --target-propensity-column), else evaluate under a known or fitted model.
func evaluateAction(c *cli.Context) error {
	o := evaluateOptions{
		pomdp: c.String("pomdp"), model: c.String("model"), horizon: c.Int("horizon"), policy: c.String("policy"),
		behavior: c.String("behavior"), json: c.Bool("json"), rollouts: c.Int("rollouts"), seed: c.Uint64("seed"),
	}
	var err error
	if o.progress, err = progressFor(c, c.App.ErrWriter); err != nil {
		return err
	}
	if c.IsSet("logs") || c.IsSet("target-propensity-column") {
		lo, err := evaluateLogsOptions(c, o)
		if err != nil {
			return err
		}
		return runEvaluateLogs(c.Context, c.App.Writer, lo)
	}
	if c.NArg() > 0 {
		return usagef("evaluate takes no arguments (got %q); log files go with --logs", c.Args().Slice())
	}
	return runEvaluate(c.Context, c.App.Writer, o)
}

type evaluateOptions struct {
	pomdp    string
	model    string
	horizon  int
	policy   string
	behavior string
	json     bool
	rollouts int    // Monte Carlo episodes past exactEvalNodes
	seed     uint64 // of the Monte Carlo value
	// progress receives a stage per computation (stageOf); nil reports
	// nothing.
	progress progress.Reporter
}

// stage runs f as the progress stage name: its start and its end, with
// the time it took, are reported (evaluate's computations take from
// milliseconds to minutes, and a bracketed optimum the longest).
func (o evaluateOptions) stage(name string, f func() error) error {
	p := o.progress
	if p == nil {
		p = progress.Nop{}
	}
	t := time.Now()
	p.StartStage(name, 0)
	err := f()
	p.EndStage(name, time.Since(t))
	return err
}

// exactEvalNodes bounds the histories evaluate --pomdp enumerates for an
// exact value; past it the value is Monte Carlo (--rollouts episodes).
const exactEvalNodes = 20_000_000

// exactSolveNodes bounds the (step, belief) nodes evaluate --pomdp solves
// for the optimal value and the behaviour's; past it they are not given
// (nor the regret), and V* is bracketed instead (boundOptimum). A
// variable for the tests.
var exactSolveNodes = 5_000_000

// orNA prints a value, or "n/a".
func orNA(x *float64) string {
	if x == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.10g", *x)
}

// defaultRollouts is the default of --rollouts: a standard error of about
// 0.3% of the return's standard deviation.
const defaultRollouts = 100_000

// evaluateResult is evaluate's JSON output. NormalizedRegret is null when
// V* = V^b.
type evaluateResult struct {
	POMDP       string  `json:"pomdp"`
	Policy      string  `json:"policy"`
	PolicyNodes int     `json:"policy_nodes"`
	Horizon     int     `json:"horizon"`
	Behavior    string  `json:"behavior"`
	PolicyValue float64 `json:"policy_value"`
	// PolicyValueSE is the Monte Carlo standard error of PolicyValue (0
	// when exact); PolicyValueEpisodes the episodes it was estimated from.
	PolicyValueSE       float64  `json:"policy_value_se"`
	PolicyValueEpisodes int      `json:"policy_value_episodes,omitempty"`
	OptimalValue        *float64 `json:"optimal_value"`  // null past exactSolveNodes
	BehaviorValue       *float64 `json:"behavior_value"` // null past exactSolveNodes
	NormalizedRegret    *float64 `json:"normalized_regret"`
	// OptimalBounds brackets V* when it is not computed exactly
	// (pomdp.OptimalBounds); RegretBounds the normalized regret that
	// bracket allows, when V^b is below its lower end.
	OptimalBounds *valueBounds `json:"optimal_bounds,omitempty"`
	RegretBounds  *valueBounds `json:"normalized_regret_bounds,omitempty"`
	Notes         []string     `json:"notes,omitempty"`
}

// valueBounds is a bracket [Lower, Upper]; LowerSE is the Monte Carlo
// standard error of Lower (0 when exact).
type valueBounds struct {
	Lower   float64 `json:"lower"`
	Upper   float64 `json:"upper"`
	LowerSE float64 `json:"lower_se,omitempty"`
	Points  int     `json:"points,omitempty"`
}

// referenceValues sets res's optimal and behaviour values and its
// normalized regret, exact within exactSolveNodes beliefs (a note says
// which could not be computed).
func referenceValues(ctx context.Context, o evaluateOptions, m *pomdp.POMDP, b pomdp.Behavior, H int, res *evaluateResult) error {
	var opt, beh float64
	err := o.stage("optimum", func() (err error) {
		opt, _, err = pomdp.OptimalWithin(ctx, m, H, exactSolveNodes)
		res.OptimalValue, err = res.within(&opt, err, fmt.Sprintf("the optimum is not computed: more than %d beliefs to solve at horizon %d", exactSolveNodes, H))
		return err
	})
	if err != nil {
		return err
	}
	err = o.stage("behaviour", func() (err error) {
		beh, err = pomdp.BehaviorValueWithin(ctx, m, H, b, exactSolveNodes)
		res.BehaviorValue, err = res.within(&beh, err, fmt.Sprintf("the behaviour's value is not computed: more than %d beliefs at horizon %d", exactSolveNodes, H))
		return err
	})
	if err != nil {
		return err
	}
	res.setNormalizedRegret(opt, beh)
	if res.OptimalValue == nil {
		return o.stage("optimum-bracket", func() error { return res.boundOptimum(ctx, m, H) })
	}
	return nil
}

// boundOptimum sets res's bracket of V* (pomdp.OptimalBounds: the belief
// planner on the true model) and the normalized regret's, when V* is not
// computed exactly.
func (res *evaluateResult) boundOptimum(ctx context.Context, m *pomdp.POMDP, H int) error {
	ob, err := pomdp.OptimalBounds(ctx, m, H, 0)
	if err != nil {
		return err
	}
	vb := &valueBounds{Lower: ob.Lower, Upper: ob.Upper, LowerSE: ob.LowerSE, Points: ob.Points}
	// The policy evaluated is a policy too: V* ≥ V^π (when V^π is exact).
	if res.PolicyValueSE == 0 && res.PolicyValue > vb.Lower {
		vb.Lower, vb.LowerSE = res.PolicyValue, 0
	}
	res.OptimalBounds = vb
	if res.BehaviorValue != nil {
		res.RegretBounds = regretBounds(res.PolicyValue, *res.BehaviorValue, vb.Lower, vb.Upper)
	}
	return nil
}

// regretBounds brackets the normalized regret r(V*) = (V* − V^π)/(V* −
// V^b) over V* in [lo, hi]: r is monotone in V* above V^b (increasing
// when V^π ≥ V^b, decreasing otherwise), so the ends give the bracket,
// clipped at 0. Nil when lo is not above V^b (r is unbounded there).
func regretBounds(vpi, vb, lo, hi float64) *valueBounds {
	if !(lo > vb) {
		return nil
	}
	r := func(v float64) float64 { return (v - vpi) / (v - vb) }
	a, b := r(lo), r(hi)
	// V* ≥ V^π, so the regret is not negative (a Monte Carlo V^π may
	// stand above the bracket's lower end).
	return &valueBounds{Lower: max(min(a, b), 0), Upper: max(a, b, 0)}
}

// setNormalizedRegret sets res's normalized regret (V* − V^π)/(V* − V^b)
// from the optimal value opt and the behaviour's beh, when both were
// computed and differ.
func (res *evaluateResult) setNormalizedRegret(opt, beh float64) {
	if res.OptimalValue == nil || res.BehaviorValue == nil {
		return
	}
	if gap := opt - beh; gap != 0 {
		r := (opt - res.PolicyValue) / gap
		res.NormalizedRegret = &r
	}
}

// within is v, the value a solver computed with error err: nil with note
// added to res's notes when the solver gave up (pomdp.ErrTooLarge), and
// err itself when it failed otherwise.
func (res *evaluateResult) within(v *float64, err error, note string) (*float64, error) {
	switch {
	case errors.Is(err, pomdp.ErrTooLarge):
		res.Notes = append(res.Notes, note)
		return nil, nil
	case err != nil:
		return nil, err
	}
	return v, nil
}

// printPOMDPEvaluation writes res as JSON (--json) or as the table a person
// reads.
func printPOMDPEvaluation(w io.Writer, o evaluateOptions, m *pomdp.POMDP, pol *policy.Policy, res *evaluateResult) error {
	if o.json {
		return writeJSON(w, res)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	printEvaluatedPolicy(tw, o, m, pol, res.Horizon)
	printPolicyValue(tw, res)
	fmt.Fprintf(tw, "optimal value\t%s\n", orNA(res.OptimalValue))
	if ob := res.OptimalBounds; ob != nil {
		fmt.Fprintf(tw, "optimal value within\t[%.10g, %.10g] (%s)\n", ob.Lower, ob.Upper, boundsSource(ob))
	}
	fmt.Fprintf(tw, "behavior value\t%s (%s)\n", orNA(res.BehaviorValue), res.Behavior)
	for _, n := range res.Notes {
		fmt.Fprintf(tw, "note\t%s\n", n)
	}
	if rb := res.RegretBounds; rb != nil && res.NormalizedRegret == nil {
		fmt.Fprintf(tw, "normalized regret within\t[%.4g, %.4g] (V* − V^π)/(V* − V^b) over the optimal value's bracket\n", rb.Lower, rb.Upper)
	} else {
		fmt.Fprintf(tw, "normalized regret\t%.6g (V* − V^π)/(V* − V^b)\n", normalizedRegret(res))
	}
	return tw.Flush()
}

// printPolicyValue prints the policy's value row: exact, or with its
// Monte Carlo standard error when the histories were too many to
// enumerate.
func printPolicyValue(w io.Writer, res *evaluateResult) {
	if res.PolicyValueEpisodes > 0 {
		fmt.Fprintf(w, "policy value\t%.10g ± %.3g (Monte Carlo standard error, %d episodes: more than %d histories to enumerate)\n", res.PolicyValue, res.PolicyValueSE, res.PolicyValueEpisodes, exactEvalNodes)
	} else {
		fmt.Fprintf(w, "policy value\t%.10g\n", res.PolicyValue)
	}
}

// boundsSource says where the bracket of V* comes from.
func boundsSource(ob *valueBounds) string {
	s := fmt.Sprintf("the belief planner on the true model, %d points per step: its policy's value and its upper bound", ob.Points)
	if ob.LowerSE > 0 {
		s += fmt.Sprintf("; the lower end is a Monte Carlo mean, standard error %.3g", ob.LowerSE)
	}
	return s
}

// normalizedRegret is res's normalized regret, NaN when it is undefined.
func normalizedRegret(res *evaluateResult) float64 {
	if res.NormalizedRegret != nil {
		return *res.NormalizedRegret
	}
	return math.NaN()
}

// stochasticWord is the note a policy's line carries when the policy is
// stochastic (its rows' probabilities are followed).
func stochasticWord(stochastic bool) string {
	if stochastic {
		return "; stochastic: every action weighed by its probability"
	}
	return ""
}

// printEvaluatedPolicy writes the rows of the model, the policy (with the
// run's note on a table without a controller) and the horizon H.
func printEvaluatedPolicy(tw io.Writer, o evaluateOptions, m *pomdp.POMDP, pol *policy.Policy, H int) {
	fmt.Fprintf(tw, "model\t%s (%d states, %d actions, %d observations)\n", o.pomdp, m.NumStates(), m.NumActions(), m.NumObs())
	if pol.Ctrl != nil {
		fmt.Fprintf(tw, "policy\t%s (a controller for every history; %d nodes in its table)\n", o.policy, len(pol.Nodes))
	} else {
		fmt.Fprintf(tw, "policy\t%s (%d nodes%s)\n", o.policy, len(pol.Nodes), stochasticWord(pol.Stochastic()))
	}
	if n := treeOnlyNote(o.policy); n != "" {
		fmt.Fprintf(tw, "note\t%s\n", n)
	}
	fmt.Fprintf(tw, "horizon\t%d\n", H)
}

// runEvaluate values the policy exactly (or by Monte Carlo past
// exactEvalNodes histories) under the known POMDP, beside the optimal and
// the behaviour's values, or hands --model to runEvaluateModel.
func runEvaluate(ctx context.Context, w io.Writer, o evaluateOptions) error {
	if err := checkEvaluate(o); err != nil {
		return err
	}
	if o.model != "" {
		return runEvaluateModel(ctx, w, o)
	}
	m, b, err := loadModelAndBehavior(o.pomdp, o.behavior)
	if err != nil {
		return err
	}
	pol, H, err := readEvaluatedPolicy(o)
	if err != nil {
		return err
	}
	res, err := evaluatePOMDP(ctx, o, m, b, pol, H)
	if err != nil {
		return err
	}
	return printPOMDPEvaluation(w, o, m, pol, res)
}

// evaluatePOMDP evaluates pol over H steps of the true model m: its
// value, and the optimal and behaviour b's values it is compared with.
func evaluatePOMDP(ctx context.Context, o evaluateOptions, m *pomdp.POMDP, b pomdp.Behavior, pol *policy.Policy, H int) (*evaluateResult, error) {
	res := evaluateResult{POMDP: o.pomdp, Policy: o.policy, PolicyNodes: len(pol.Nodes), Horizon: H, Behavior: b.String()}
	if err := o.stage("value", func() error { return policyValue(ctx, o, m, H, pol, &res) }); err != nil {
		return nil, err
	}
	if err := referenceValues(ctx, o, m, b, H, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// checkEvaluate requires --policy and a horizon that is not negative.
func checkEvaluate(o evaluateOptions) error {
	if o.policy == "" {
		return usagef("--policy PATH is required")
	}
	if o.horizon < 0 {
		return usagef("--horizon %d must not be negative", o.horizon)
	}
	return nil
}

// readEvaluatedPolicy reads --policy and the horizon to evaluate it at
// (evaluationHorizon).
func readEvaluatedPolicy(o evaluateOptions) (*policy.Policy, int, error) {
	pol, _, err := policy.ReadFile(o.policy)
	if err != nil {
		return nil, 0, err
	}
	H, err := evaluationHorizon(o.horizon, o.policy, pol)
	return pol, H, err
}

// evaluationHorizon is --horizon H, or the policy's own horizon when H is
// 0; they must agree when both are given.
func evaluationHorizon(H int, path string, pol *policy.Policy) (int, error) {
	switch {
	case H == 0 && pol.Horizon == 0:
		return 0, usagef("--horizon is needed: %s does not say its horizon", path)
	case H == 0:
		H = pol.Horizon
	case pol.Horizon != 0 && pol.Horizon != H:
		return 0, usagef("--horizon %d, but %s was planned for horizon %d", H, path, pol.Horizon)
	}
	return H, nil
}

// policyValue sets res's value of pol under m: exact within
// exactEvalNodes histories, else the Monte Carlo mean of o.rollouts
// episodes with its standard error.
func policyValue(ctx context.Context, o evaluateOptions, m *pomdp.POMDP, H int, pol *policy.Policy, res *evaluateResult) error {
	var err error
	res.PolicyValue, err = pomdp.EvaluatePolicyWithin(ctx, m, H, pol, exactEvalNodes)
	if errors.Is(err, pomdp.ErrTooLarge) {
		if o.rollouts < 2 {
			return usagef("--rollouts %d: the policy's histories are too many for an exact value, and a Monte Carlo value needs at least 2 episodes", o.rollouts)
		}
		res.PolicyValueEpisodes = o.rollouts
		res.PolicyValue, res.PolicyValueSE, err = pomdp.SimulatePolicy(ctx, m, H, pol, o.rollouts, o.seed)
	}
	if err != nil {
		return fmt.Errorf("%s under %s: %w", o.policy, o.pomdp, err)
	}
	return nil
}
