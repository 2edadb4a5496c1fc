package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"path/filepath"
	"time"

	"github.com/psrlcb/psrlcb/internal/jsonfloat"

	"github.com/psrlcb/psrlcb/baseline"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pipeline"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
	"github.com/psrlcb/psrlcb/report"
)

// Problem is one benchmark POMDP of the study with the horizon it is run at.
type Problem struct {
	Name    string // short name used on the command line and in tables
	File    string // file name under the shared pomdp directory
	Horizon int
}

// Problems are the study's benchmarks. H = 4 everywhere: the exact optimum,
// the exact planner (|O|^H·|A|^H leaves: 614 656 for cheese, the largest) and
// exact evaluation all stay well under a second, and the optimal policy
// differs from both behaviours on every problem.
var Problems = []Problem{
	{"tiger", "tiger.95.POMDP", 4},
	{"paint", "paint.95.pomdp", 4},
	{"1d.noisy", "1d.noisy.pomdp", 4},
	{"cheese", "cheese.95.POMDP", 4},
	{"4x3", "4x3.95.POMDP", 4},
}

// LargerProblems are the larger tier (--tier larger): problems of 12 to 60
// hidden states at H = 4–5, where the rank must be searched past 8, and
// three small ones at H = 10, where |A|^H makes the trajectory importance
// weights of a deterministic policy almost all zero. Names carry the
// horizon when it differs from the small tier's.
var LargerProblems = []Problem{
	{"hallway", "hallway.pomdp", 4},
	{"mini-hall2", "mini-hall2.pomdp", 5},
	{"shuttle", "shuttle.95.POMDP", 5},
	{"query.s2", "query.s2.pomdp", 4},
	{"parr95", "parr95.95.POMDP", 5},
	{"tiger-h10", "tiger.95.POMDP", 10},
	{"cheese-h10", "cheese.95.POMDP", 10},
	{"paint-h10", "paint.95.pomdp", 10},
}

// Behaviors are the two behaviour policies: wide and narrow coverage.
var Behaviors = []string{"uniform", "myopic:0.1"}

// Methods in the order of the tables.
var Methods = []string{"psrlcb", "greedy", "tabular", "clone", "behavior", "optimal"}

// Config is one study.
type Config struct {
	PomdpDir string // directory holding the .POMDP files
	Problems []Problem
	Behavs   []string
	Ks       []int
	Seeds    int
	// Restarts and MaxIter are the EM options of every fit; the rank is
	// fixed at the true number of hidden states (see FitOptions).
	Restarts int
	MaxIter  int
	Workers  int
	// Tier is "small" or "larger" (which part of docs/validation.md the
	// results go to).
	Tier string
	// RankAuto fits every model with the automatic rank search (the CLI
	// default) instead of the true number of hidden states.
	RankAuto bool
	// Alpha is the α of PSR-LCB: the zero value is "auto" (the CLI
	// default); a fixed value is a diagnostic run.
	Alpha pessimism.AlphaSpec
	// KnownRange states the possible return range of each problem to the
	// fit (pipeline.Options.ReturnRange) instead of the observed one (the
	// small-K study).
	KnownRange bool
	// Fallback is pipeline.Options.Fallback ("": the CLI default, clone).
	Fallback string
	// Log receives one line per finished configuration (nil: silent).
	Log func(format string, args ...any)
}

// Row is one (configuration, method) result.
type Row struct {
	Problem       string `json:"problem"`
	Horizon       int    `json:"horizon"`
	Behavior      string `json:"behavior"`
	K             int    `json:"k"`
	Seed          int    `json:"seed"`
	Method        string `json:"method"`
	Value         jfloat `json:"value"`          // V^π, exact, return units
	Optimal       jfloat `json:"optimal"`        // V*
	BehaviorValue jfloat `json:"behavior_value"` // V^b
	Regret        jfloat `json:"regret"`         // (V* − V^π)/(V* − V^b)
	LCBUnits      jfloat `json:"lcb_units"`      // psrlcb only
	ModelUnits    jfloat `json:"model_units"`    // psrlcb, greedy: V_θ̂,R^π in units
	BonusValue    jfloat `json:"bonus_value"`    // psrlcb: V_θ̂,b̂^π̄ on the [0,1] scale
	IWLowUnits    jfloat `json:"iw_low_units"`   // psrlcb: lower end of the IW interval
	Alpha         jfloat `json:"alpha"`          // psrlcb: chosen α; greedy: 0
	Rank          int    `json:"rank"`
	FitSeconds    jfloat `json:"fit_seconds"`
	PlanExact     bool   `json:"plan_exact"`
	EMConverged   bool   `json:"em_converged"`
	ReturnMin     jfloat `json:"return_min"` // observed return range of the logs
	ReturnMax     jfloat `json:"return_max"`
}

// jfloat is a float64 that encodes NaN as JSON null (for the checkpoint).
type jfloat = jsonfloat.Float

var nan = jfloat(math.NaN())

// key identifies a configuration (the unit of the checkpoint).
type key struct {
	Problem, Behavior string
	K, Seed           int
}

func (r Row) key() key { return key{r.Problem, r.Behavior, r.K, r.Seed} }

// seedFor derives the simulation and fit seed of a configuration, so that a
// configuration's result does not depend on which others run with it.
func seedFor(k key) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%s|%d|%d", k.Problem, k.Behavior, k.K, k.Seed)
	return h.Sum64()
}

// truth holds the exact reference values of one (problem, behaviour).
type truth struct {
	m       *pomdp.POMDP
	beh     pomdp.Behavior
	opt, vb float64
}

// loadTruth reads problem p from dir and values the optimal policy and
// the behaviour behSpec on it exactly.
func loadTruth(ctx context.Context, dir string, p Problem, behSpec string) (*truth, error) {
	m, err := pomdp.ParseFile(filepath.Join(dir, p.File))
	if err != nil {
		return nil, err
	}
	b, err := pomdp.ParseBehavior(behSpec, m)
	if err != nil {
		return nil, err
	}
	return exactTruth(ctx, m, p.Horizon, b)
}

// exactTruth is the reference of model m and behaviour b: the optimal and
// the behaviour's exact values over horizon H.
func exactTruth(ctx context.Context, m *pomdp.POMDP, H int, b pomdp.Behavior) (*truth, error) {
	opt, _, err := pomdp.OptimalContext(ctx, m, H)
	if err != nil {
		return nil, err
	}
	vb, err := pomdp.BehaviorValueContext(ctx, m, H, b)
	if err != nil {
		return nil, err
	}
	return &truth{m: m, beh: b, opt: opt, vb: vb}, nil
}

// normRegret is (V* − V)/(V* − V^b), NaN when V* = V^b.
func normRegret(opt, vb, v float64) float64 {
	if opt == vb {
		return math.NaN()
	}
	return (opt - v) / (opt - vb)
}

// FitOptions are the PSR-LCB options of the study: the CLI defaults (α auto
// among pessimism.AutoAlphas by the cross-fitted lower bound of
// policy.Select, λ = 1, stationary dynamics) with cfg.Restarts EM starts of
// at most cfg.MaxIter iterations; the rank is the automatic search's with
// cfg.RankAuto (as users run it), the true number of hidden states
// otherwise (the small tier, to fit its time budget).
func FitOptions(cfg Config, m *pomdp.POMDP, seed uint64) pipeline.Options {
	rank := m.NumStates()
	if cfg.RankAuto {
		rank = 0
	}
	return pipeline.Options{
		Estimate: estimate.Options{Rank: rank, Restarts: cfg.Restarts, MaxIter: cfg.MaxIter},
		Alpha:    cfg.Alpha,
		Fallback: cfg.Fallback,
		Seed:     seed,
		Workers:  cfg.Workers,
	}
}

// runOne simulates the logs of one configuration and returns one row per
// method.
func runOne(ctx context.Context, cfg Config, p Problem, tr *truth, k key) ([]Row, error) {
	seed := seedFor(k)
	H := p.Horizon
	d, err := pomdp.SimulateDataset(ctx, tr.m, H, k.K, tr.beh, seed)
	if err != nil {
		return nil, fmt.Errorf("simulate %v: %w", k, err)
	}
	c := &configRun{cfg: cfg, tr: tr, k: k, H: H, d: d, base: baseRow(p, tr, k, d)}
	rows, err := c.planRows(ctx, seed)
	if err != nil {
		return nil, err
	}
	if rows, err = c.baselines(ctx, rows); err != nil {
		return nil, err
	}
	rows = append(rows, c.row("behavior", tr.vb), c.row("optimal", tr.opt))
	return rows, nil
}

// baseRow is what every row of a configuration shares: the configuration,
// the exact reference values and the logs' observed return range, every
// method's own figure NaN.
func baseRow(p Problem, tr *truth, k key, d *ingest.Dataset) Row {
	base := Row{Problem: p.Name, Horizon: p.Horizon, Behavior: k.Behavior, K: k.K, Seed: k.Seed,
		Optimal: jfloat(tr.opt), BehaviorValue: jfloat(tr.vb),
		LCBUnits: nan, ModelUnits: nan, BonusValue: nan, IWLowUnits: nan, Alpha: nan, FitSeconds: nan, ReturnMin: nan, ReturnMax: nan}
	lo, hi := d.ReturnRange()
	base.ReturnMin, base.ReturnMax = jfloat(lo), jfloat(hi)
	return base
}

// configRun is one configuration while its methods run: its logs and the
// row they all start from.
type configRun struct {
	cfg  Config
	tr   *truth
	k    key
	H    int
	d    *ingest.Dataset
	base Row
}

// row is the base row of method with its exact value v and normalized
// regret.
func (c *configRun) row(method string, v float64) Row {
	r := c.base
	r.Method, r.Value = method, jfloat(v)
	r.Regret = jfloat(normRegret(c.tr.opt, c.tr.vb, v))
	return r
}

// eval is the exact value of pol on the true model.
func (c *configRun) eval(ctx context.Context, pol *policy.Policy) (float64, error) {
	return pomdp.EvaluatePolicy(ctx, c.tr.m, c.H, pol)
}

// planRows are the rows of PSR-LCB (fitted with seed) and of the greedy
// plan on its model.
func (c *configRun) planRows(ctx context.Context, seed uint64) ([]Row, error) {
	out, ps, err := c.psrlcb(ctx, seed)
	if err != nil {
		return nil, err
	}
	g, err := c.greedy(ctx, out, float64(ps.FitSeconds))
	if err != nil {
		return nil, err
	}
	return []Row{ps, g}, nil
}

// baselines appends the row of each baseline method to rows.
func (c *configRun) baselines(ctx context.Context, rows []Row) ([]Row, error) {
	for _, bl := range baselineMethods {
		r, err := c.baseline(ctx, bl.name, bl.fn)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// psrlcb fits PSR-LCB as psrlcb fit does and returns the fit and its row.
func (c *configRun) psrlcb(ctx context.Context, seed uint64) (*report.Outcome, Row, error) {
	start := time.Now()
	out, err := pipeline.Fit(ctx, c.d, nil, FitOptions(c.cfg, c.tr.m, seed))
	if err != nil {
		return nil, Row{}, fmt.Errorf("fit %v: %w", c.k, err)
	}
	fitSec := time.Since(start).Seconds()
	v, err := c.eval(ctx, out.Policy)
	if err != nil {
		return nil, Row{}, fmt.Errorf("evaluate psrlcb %v: %w", c.k, err)
	}
	return out, c.psrlcbRow(out, v, fitSec), nil
}

// psrlcbRow is PSR-LCB's row: its policy's exact value v, the fit's
// headline figures and diagnostics, and its fit time fitSec.
func (c *configRun) psrlcbRow(out *report.Outcome, v, fitSec float64) Row {
	hl := out.Run.Manifest.Headline
	ps := c.row("psrlcb", v)
	ps.LCBUnits, ps.ModelUnits = jfloat(hl.LCBUnits), jfloat(hl.ModelValueUnits)
	ps.BonusValue, ps.IWLowUnits = jfloat(hl.BonusValue), jfloat(hl.IWLowUnits)
	ps.Alpha, ps.Rank, ps.FitSeconds = jfloat(out.Alpha), out.Model.States, jfloat(fitSec)
	ps.PlanExact, ps.EMConverged = out.Plan.Exact, out.Fit.Converged
	return ps
}

// greedy plans α = 0 on PSR-LCB's model and bonus and returns its row;
// its fit time is PSR-LCB's fitSec plus the planning.
func (c *configRun) greedy(ctx context.Context, out *report.Outcome, fitSec float64) (Row, error) {
	start := time.Now()
	gpol, gst, err := policy.Plan(ctx, out.Model, out.Bonus.WithAlpha(0), policy.PlanOptions{Workers: c.cfg.Workers})
	if err != nil {
		return Row{}, fmt.Errorf("greedy plan %v: %w", c.k, err)
	}
	v, err := c.eval(ctx, gpol)
	if err != nil {
		return Row{}, fmt.Errorf("evaluate greedy %v: %w", c.k, err)
	}
	g := c.row("greedy", v)
	g.Alpha, g.Rank, g.PlanExact, g.EMConverged = 0, out.Model.States, gst.Exact, out.Fit.Converged
	g.ModelUnits = jfloat(out.Model.ReturnUnits(gst.ValueReward))
	g.FitSeconds = jfloat(fitSec + time.Since(start).Seconds())
	return g, nil
}

// baselineMethods are the baselines of the study, in the order of the
// tables.
var baselineMethods = []struct {
	name string
	fn   func(context.Context, *ingest.Dataset) (*policy.Policy, error)
}{
	{"tabular", func(ctx context.Context, d *ingest.Dataset) (*policy.Policy, error) {
		return baseline.TabularLCB(ctx, d, baseline.TabularOptions{})
	}},
	{"clone", func(ctx context.Context, d *ingest.Dataset) (*policy.Policy, error) {
		return baseline.BehaviorCloning(ctx, d, baseline.CloneOptions{})
	}},
}

// baseline trains the baseline fn on the logs and returns its row.
func (c *configRun) baseline(ctx context.Context, name string, fn func(context.Context, *ingest.Dataset) (*policy.Policy, error)) (Row, error) {
	start := time.Now()
	pol, err := fn(ctx, c.d)
	if err != nil {
		return Row{}, fmt.Errorf("%s %v: %w", name, c.k, err)
	}
	sec := time.Since(start).Seconds()
	v, err := c.eval(ctx, pol)
	if err != nil {
		return Row{}, fmt.Errorf("evaluate %s %v: %w", name, c.k, err)
	}
	r := c.row(name, v)
	r.FitSeconds, r.PlanExact = jfloat(sec), true
	return r, nil
}

// Run runs every configuration of cfg that done does not already hold,
// calling emit with the rows of each finished configuration, and returns all
// rows (done's first, in study order).
func Run(ctx context.Context, cfg Config, done map[key][]Row, emit func([]Row) error) ([]Row, error) {
	s := &studyRun{cfg: cfg, done: done, emit: emit}
	for _, p := range cfg.Problems {
		for _, bs := range cfg.Behavs {
			if err := s.cells(ctx, p, bs); err != nil {
				return s.all, err
			}
		}
	}
	return s.all, nil
}

// studyRun is a run of the study: what it runs and the rows so far.
type studyRun struct {
	cfg  Config
	done map[key][]Row
	emit func([]Row) error
	all  []Row
}

// cells runs every configuration of problem p under behaviour bs that
// done does not hold (taking done's rows for the others). The exact
// reference values are computed once, before the first that runs.
func (s *studyRun) cells(ctx context.Context, p Problem, bs string) error {
	var tr *truth
	for _, K := range s.cfg.Ks {
		for seed := 0; seed < s.cfg.Seeds; seed++ {
			k := key{p.Name, bs, K, seed}
			if rows, ok := s.done[k]; ok {
				s.all = append(s.all, rows...)
				continue
			}
			var err error
			if tr, err = s.run(ctx, p, tr, k); err != nil {
				return err
			}
		}
	}
	return nil
}

// run runs configuration k, computing the exact reference values first
// when tr is nil (the first to run), and returns them.
func (s *studyRun) run(ctx context.Context, p Problem, tr *truth, k key) (*truth, error) {
	if err := ctx.Err(); err != nil {
		return tr, err
	}
	if tr == nil {
		var err error
		if tr, err = loadTruth(ctx, s.cfg.PomdpDir, p, k.Behavior); err != nil {
			return nil, err
		}
	}
	return tr, s.one(ctx, p, tr, k)
}

// one runs configuration k, emits its rows and logs its line.
func (s *studyRun) one(ctx context.Context, p Problem, tr *truth, k key) error {
	start := time.Now()
	rows, err := runOne(ctx, s.cfg, p, tr, k)
	if err != nil {
		return err
	}
	if s.emit != nil {
		if err := s.emit(rows); err != nil {
			return err
		}
	}
	if s.cfg.Log != nil {
		logRows(s.cfg.Log, p, k, rows, start)
	}
	s.all = append(s.all, rows...)
	return nil
}

// logRows logs configuration k's line: its time since start, the regrets
// of PSR-LCB, the greedy plan and tabular, and PSR-LCB's α, rank, LCB and
// value.
func logRows(log func(string, ...any), p Problem, k key, rows []Row, start time.Time) {
	log("%-8s %-10s K=%-6d seed=%d  %5.1fs  regret psrlcb %.3f greedy %.3f tabular %.3f  α=%g r=%d  LCB %.4g ≤ V %.4g",
		p.Name, k.Behavior, k.K, k.Seed, time.Since(start).Seconds(), rows[0].Regret, rows[1].Regret, rows[2].Regret,
		rows[0].Alpha, rows[0].Rank, rows[0].LCBUnits, rows[0].Value)
}
