package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/psrlcb/psrlcb/internal/parallel"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/progress"
	"github.com/psrlcb/psrlcb/report"
	"github.com/psrlcb/psrlcb/split"
)

// Options configure Run. The zero value runs the documented defaults:
// automatic rank, stationary dynamics, α chosen on held-out episodes among
// pessimism.AutoAlphas, λ = 1, every episode must be valid.
type Options struct {
	// Ingest says how the logs are read (horizon, invalid episodes,
	// column names).
	Ingest ingest.Options
	// Read reads and validates the logs (nil: ingest.Read); a data-parallel
	// engine plugs in its own reader here (psrlcb-beam).
	Read func(ctx context.Context, files []string, o ingest.Options) (*ingest.Dataset, error)
	// Estimate configures the model fit.
	Estimate estimate.Options
	// Lambda is λ of U_h (0: pessimism.DefaultLambda).
	Lambda float64
	// Alpha is the bonus coefficient; the zero value is "auto".
	Alpha pessimism.AlphaSpec
	// Gamma is γ of the paper's α̂ (AlphaTheory only; must then be > 0).
	Gamma float64
	// SelectHeldOut is the share of episodes held out from fitting to
	// choose α among several candidates (0: DefaultSelectHeldOut).
	SelectHeldOut float64
	// LCBCorrection corrects the reported lower bound when α was chosen
	// among candidates: LCBCorrectionCrossFit (the zero value's default)
	// or LCBCorrectionNone (the paper's bound at the planning α).
	LCBCorrection string
	// Fallback is FallbackBehavior (the zero value's default) or
	// FallbackNone: whether a selection among candidate α may return a
	// policy that keeps to the logged actions instead of the plan (see
	// fallback.go).
	Fallback string
	// PlanBudget is the node budget of the exact planner (0:
	// policy.DefaultBudget).
	PlanBudget int64
	// Planner is policy.PlanOptions.Planner: "exact", "belief" or "auto"
	// ("": auto). PlanRows is its RowBudget (0: policy.DefaultRowBudget).
	Planner  string
	PlanRows int64
	// PlanPoints is the belief planner's points per step (0:
	// policy.DefaultPoints).
	PlanPoints int
	// HullBound states the final plan's gap against the belief planner's
	// hull-interpolated upper bound (policy.PlanOptions.HullBound).
	HullBound bool
	// MemoryLimit is the run's memory budget in bytes (0: none): logs
	// whose compact form exceeds it are refused before they are read,
	// and the belief planner's table is kept to the rows that fit beside
	// the logs (see memory.go).
	MemoryLimit int64
	// Scorer, when not nil, computes the per-episode log-likelihoods of
	// episodes.arrow outside this process (report.Outcome.Scorer: psrbeam).
	Scorer estimate.EpisodeScorer
	// USummer, when not nil, sums the bonus's U_h over the episodes
	// outside this process (pessimism.Options.USummer: psrbeam).
	USummer pessimism.USummer
	// SpillDir is where logs too large for MemoryLimit keep their step
	// arrays ("": the system's temporary directory); it should be on
	// local disk.
	SpillDir string
	// MaxObservations, when positive, maps every observation but the
	// MaxObservations most frequent to ingest.OtherSymbol before fitting
	// (ingest.LimitObservations); the mapping goes into model.arrow and
	// the manifest.
	MaxObservations int
	// ReturnRange is the range [lo, hi] that episode returns can take, in
	// the user's units, when it is known (the paper's R ∈ [0,1] is a known
	// range; see applyReturnRange). The zero value uses the range of returns
	// the model can produce, H × the smallest and largest logged reward.
	ReturnRange [2]float64
	// Seed drives the split, the held-out draws and EM.
	Seed uint64
	// Workers bounds the goroutines (0: GOMAXPROCS); results do not
	// depend on it.
	Workers int
	// Progress receives progress (nil: none).
	Progress progress.Reporter
	// Version is the tool's version recorded in the manifest (""
	// records "dev").
	Version string
	// Compare are policies to evaluate on the logs beside the run's own
	// (psrlcb fit --compare): run directories, policy.arrow files or
	// stochastic policy tables (ope.ReadTarget).
	Compare []string
}

// SelectMaxEpisodes bounds each part of the α selection: on larger logs
// each part is a seeded subsample of that many episodes. The parts only
// have to rank the candidates' plans; 10⁵ episodes resolve values to
// ~10⁻³, and the selection's fits then cost a fixed amount however large K
// is (the final fit uses every episode).
const SelectMaxEpisodes = 100000

// selectSearchShare: the α candidates' approximate plans search
// 1/selectSearchShare of the final plan's nodes.
const selectSearchShare = 4

// DefaultSelectHeldOut is the share of episodes in part B when choosing
// α: half, so that the evaluation model θ̂_B that values every candidate's
// plan (policy.Select) is as well fitted as the planning model θ̂_A.
const DefaultSelectHeldOut = 0.5

// Values of Options.LCBCorrection.
const (
	// LCBCorrectionCrossFit: when α was chosen among candidates, the
	// reported bound of π̄ prices the bonus at the least α_r ≥ α for which
	// the chosen candidate's bound under the model of part A,
	// V_{θ̂_A,R}^{π_α} − V_{θ̂_A,α_r b̂_A}^{π_α}, is at most that plan's
	// bound under the model of part B at α_B = max(α, DefaultAlpha),
	// V_{θ̂_B,R}^{π_α} − V_{θ̂_B,α_B b̂_B}^{π_α}. It separates the α that
	// plans (chosen for value) from the α that reports (chosen for
	// coverage): the gap it closes is the optimism the planning model has
	// about its own plan (the winner's curse of planning) beyond what data
	// it never saw support at the default confidence, which the paper's
	// bonus at a small α does not cover. The policy itself is unchanged.
	LCBCorrectionCrossFit = "cross-fit"
	// LCBCorrectionNone reports the paper's bound at the planning α.
	LCBCorrectionNone = "none"
)

// Check says whether the options are valid, as Run and Fit check them
// before reading anything: nil, or an error matching ErrOptions (an
// *OptionError naming the field) for the rules of this package, or one
// matching estimate.ErrOptions for those of Options.Estimate.
func (o Options) Check() error {
	_, err := o.resolved()
	return err
}

// resolved returns the options with every default filled in, or an
// error naming the first invalid one (see Check). Nothing is read before
// the options are valid.
func (o Options) resolved() (Options, error) {
	for _, f := range []func(*Options) error{(*Options).boundDefaults, (*Options).planDefaults, (*Options).dataDefaults} {
		if err := f(&o); err != nil {
			return o, err
		}
	}
	if err := o.Estimate.Check(); err != nil {
		return o, err
	}
	if o.Ingest.OnInvalid == "" {
		o.Ingest.OnInvalid = ingest.OnInvalidFail
	}
	o.Workers = parallel.Workers(o.Workers)
	if o.Progress == nil {
		o.Progress = progress.Nop{}
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	return o, nil
}

// boundDefaults: λ, the α selection's held-out share, the bound's
// correction and the behaviour fallback.
func (o *Options) boundDefaults() error {
	if o.Lambda == 0 {
		o.Lambda = pessimism.DefaultLambda
	}
	if !(o.Lambda > 0) || math.IsInf(o.Lambda, 0) {
		return optionErr("Lambda", "lambda must be a positive number, not %v", o.Lambda)
	}
	if o.SelectHeldOut == 0 {
		o.SelectHeldOut = DefaultSelectHeldOut
	}
	if !(o.SelectHeldOut > 0 && o.SelectHeldOut < 1) {
		return optionErr("SelectHeldOut", "the held-out share for choosing α must be in (0,1), not %v", o.SelectHeldOut)
	}
	if err := oneOf("LCBCorrection", "the bound correction", &o.LCBCorrection, LCBCorrectionCrossFit, LCBCorrectionCrossFit, LCBCorrectionNone); err != nil {
		return err
	}
	return oneOf("Fallback", "the fallback", &o.Fallback, FallbackBehavior, FallbackBehavior, FallbackNone)
}

// oneOf sets an empty string option *v to def and checks that it is one
// of allowed; what names the option in the error.
func oneOf(field, what string, v *string, def string, allowed ...string) error {
	if *v == "" {
		*v = def
	}
	if slices.Contains(allowed, *v) {
		return nil
	}
	q := make([]string, len(allowed))
	for i, a := range allowed {
		q[i] = strconv.Quote(a)
	}
	list := strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
	return optionErr(field, "%s must be %s, not %q", what, list, *v)
}

// planDefaults: the planner, its budgets and points.
func (o *Options) planDefaults() error {
	if o.PlanBudget == 0 {
		o.PlanBudget = policy.DefaultBudget
	}
	if o.PlanBudget < 0 {
		return optionErr("PlanBudget", "the planner's node budget must be positive, not %d", o.PlanBudget)
	}
	if err := oneOf("Planner", "the planner", &o.Planner, policy.PlannerAuto, policy.PlannerExact, policy.PlannerBelief, policy.PlannerAuto); err != nil {
		return err
	}
	if o.PlanRows == 0 {
		o.PlanRows = policy.DefaultRowBudget
	}
	if o.PlanPoints == 0 {
		o.PlanPoints = policy.DefaultPoints
	}
	if o.PlanPoints < 1 || o.PlanPoints > policy.MaxPoints {
		return optionErr("PlanPoints", "the belief planner's points per step must be between 1 and %d, not %d", policy.MaxPoints, o.PlanPoints)
	}
	if o.PlanRows < 0 || o.PlanRows > policy.MaxRows {
		return optionErr("PlanRows", "the policy table's row budget must be positive and at most %d, not %d", policy.MaxRows, o.PlanRows)
	}
	return nil
}

// dataDefaults: α and γ, the observations kept and the return range.
func (o *Options) dataDefaults() error {
	if o.Alpha.Mode == pessimism.AlphaTheory && !(o.Gamma > 0) {
		return optionErr("Gamma", "α = theory needs γ > 0 (the paper's well-conditioning constant)")
	}
	if (o.Alpha.Mode == pessimism.AlphaFixed || o.Alpha.Mode == pessimism.AlphaList) && len(o.Alpha.Values) == 0 {
		return optionErr("Alpha", "α: no value given")
	}
	for _, v := range o.Alpha.Values {
		if !(v >= 0) || math.IsInf(v, 0) {
			return optionErr("Alpha", "α must be a non-negative number, not %v", v)
		}
	}
	if o.MaxObservations < 0 {
		return optionErr("MaxObservations", "the number of observations kept must be positive (or 0 to keep all), not %d", o.MaxObservations)
	}
	if r := o.ReturnRange; r != [2]float64{} && !(r[0] < r[1] && !math.IsInf(r[0], 0) && !math.IsInf(r[1], 0)) {
		return optionErr("ReturnRange", "the return range must be two finite numbers lo < hi, not %v", r)
	}
	return nil
}

// params are the resolved options as the report records them.
func (o Options) params(d *ingest.Dataset) report.Params {
	rank := "auto"
	if o.Estimate.Rank > 0 {
		rank = strconv.Itoa(o.Estimate.Rank)
	}
	return report.Params{
		RankOption: rank, AlphaOption: o.Alpha.String(), Gamma: o.Gamma,
		Lambda: o.Lambda, SelectHeldOut: o.SelectHeldOut, LCBCorrection: o.LCBCorrection, Fallback: o.Fallback, PlanBudget: o.PlanBudget, Seed: o.Seed,
		Planner: o.Planner, PlanRows: o.PlanRows, PlanPoints: o.PlanPoints, HullBound: o.HullBound, MemoryLimit: o.MemoryLimit,
		Horizon: d.Horizon, OnInvalid: o.Ingest.OnInvalid, Columns: o.Ingest.Columns,
		MaxObservations: o.MaxObservations,
		ReturnRange:     o.ReturnRange,
		Version:         o.Version,
		Compare:         o.Compare,
	}
}

// Result is everything a run produced (report.Outcome), with the dataset
// it was fitted on.
type Result struct {
	report.Outcome
	Data *ingest.Dataset
	// Warnings are things the caller should tell the user that do not
	// stop the run (they also went to Options.Progress as they arose).
	Warnings []string

	spilled *spillArrays
}

// Close releases the spill file that holds Data's step arrays when
// Options.MemoryLimit sent them to disk (Data must not be used
// afterwards); otherwise it does nothing.
func (r *Result) Close() error { return r.spilled.Close() }

// Run reads the logs in inputs (Parquet files, as ingest.Read takes them)
// and runs the whole pipeline on them: ingest → split → estimate →
// pessimism → policy → report (Algorithm 2 of Huang, Liang, Yang, "Provably
// Efficient UCB-type Algorithms For Learning Predictive State
// Representations", ICLR 2024, arXiv:2307.00405, Section 5). Every option
// is checked before any file is read. Nothing is written: WriteResult
// writes the outputs.
func Run(ctx context.Context, inputs []string, opts Options) (*Result, error) {
	o, err := opts.resolved()
	if err != nil {
		return nil, err
	}
	if err := checkCompare(o.Compare); err != nil {
		return nil, err
	}
	spilled, err := spillInputs(inputs, &o)
	if err != nil {
		return nil, err
	}
	// The spill file lives as long as the Result (Result.Close), or
	// until this failed run returns.
	res, err := readAndFit(ctx, inputs, o, spilled)
	if err != nil {
		spilled.Close()
		return nil, err
	}
	return res, nil
}

// readAndFit reads the logs (into spilled's arrays when set) and fits
// them.
func readAndFit(ctx context.Context, inputs []string, o Options, spilled *spillArrays) (*Result, error) {
	d, took, err := readLogs(ctx, inputs, o)
	if err != nil {
		return nil, err
	}
	warnings := horizonWarning(d)
	for _, w := range warnings {
		o.Progress.Info("warning: " + w)
	}
	out, err := fit(ctx, d, inputs, o)
	if err != nil {
		return nil, err
	}
	out.Run.Manifest.StageTimes["ingest"] = took.Seconds()
	if n := spillNote(spilled, o.MemoryLimit); n != "" {
		out.Run.Manifest.Notes = append(out.Run.Manifest.Notes, n)
	}
	return &Result{Outcome: *out, Data: d, Warnings: warnings, spilled: spilled}, nil
}

// spillInputs plans the inputs' memory under o.MemoryLimit and, when the
// logs' arrays would not fit, has ingest write them to a spill file
// (o.Ingest.Arrays); nil without a limit or when they fit.
func spillInputs(inputs []string, o *Options) (*spillArrays, error) {
	if o.MemoryLimit <= 0 {
		return nil, nil
	}
	spilled, err := planInputMemory(inputs, *o)
	if err != nil {
		return nil, err
	}
	if spilled != nil {
		o.Ingest.Arrays = spilled
	}
	return spilled, nil
}

// readLogs is the ingest stage: it reads the inputs (o.Read, or
// ingest.Read) with progress over their bytes, reports quarantined
// episodes, and returns the logs and the stage's time.
func readLogs(ctx context.Context, inputs []string, o Options) (*ingest.Dataset, time.Duration, error) {
	start := time.Now()
	o.Progress.StartStage("ingest", fileBytes(inputs))
	read := o.Read
	if read == nil {
		read = ingest.Read
	}
	d, err := read(ctx, inputs, o.Ingest)
	if err != nil {
		return nil, 0, err
	}
	took := time.Since(start)
	o.Progress.Advance(fileBytes(inputs), fmt.Sprintf("%d rows", d.Rows))
	o.Progress.EndStage("ingest", took)
	if n := len(d.Quarantined); n > 0 {
		o.Progress.Info("episodes quarantined", "count", n, "first", d.Quarantined[0].Reason)
	}
	return d, took, nil
}

// horizonWarning says when the horizon is far above the longest logged
// episode (at least twice as long, and more than one step longer): every
// episode is then padded with ingest.EndSymbol for the missing steps, which
// multiplies the history tree and the planner's work without adding
// information.
func horizonWarning(d *ingest.Dataset) []string {
	longest := 0
	for _, l := range d.Length {
		longest = max(longest, int(l))
	}
	H := d.Horizon
	if longest == 0 || H < 2*longest || H <= longest+1 {
		return nil
	}
	return []string{fmt.Sprintf("the horizon H = %d is far above the longest logged episode (%d steps): every episode is padded with %s for at least %d steps, which adds no information and multiplies the planner's work; a horizon of %d fits these logs",
		H, longest, ingest.EndSymbol, H-longest, longest)}
}

// Fit runs the pipeline from split on an already validated dataset d
// (inputs, hashed into the manifest, may be nil).
func Fit(ctx context.Context, d *ingest.Dataset, inputs []string, opts Options) (*report.Outcome, error) {
	o, err := opts.resolved()
	if err != nil {
		return nil, err
	}
	return fit(ctx, d, inputs, o)
}

type stageTimer struct {
	prog  *finishingProgress
	times map[string]float64
	name  string
	start time.Time
}

// finishingProgress passes its calls on to a progress.Reporter and counts
// each stage's advances, so that the stage ends at its total (finish). A
// stage's total is the most work it may take (EM's iteration cap, the
// history tree's nodes); one that needs less would otherwise end its log
// short of the total, with a time left extrapolated from it (a belief
// plan whose table holds 32,747 rows of a total of 10⁶ read as 3% done
// with 27 minutes left, seconds before the stage finished).
type finishingProgress struct {
	progress.Reporter
	total int64
	done  atomic.Int64
}

func (p *finishingProgress) StartStage(name string, total int64) {
	p.total = total
	p.done.Store(0)
	p.Reporter.StartStage(name, total)
}

func (p *finishingProgress) Advance(n int64, detail string) {
	p.done.Add(n)
	p.Reporter.Advance(n, detail)
}

// finish advances the stage to its total when it is known and not
// reached.
func (p *finishingProgress) finish() {
	if left := p.total - p.done.Load(); p.total > 0 && left > 0 {
		p.Advance(left, "")
	}
}

func (s *stageTimer) begin(name string, total int64) {
	s.name, s.start = name, time.Now()
	s.prog.StartStage(name, total)
}

func (s *stageTimer) end() {
	s.prog.finish()
	d := time.Since(s.start)
	s.times[s.name] += d.Seconds()
	s.prog.EndStage(s.name, d)
}

// Fit runs split → estimate → pessimism → policy on a validated dataset and
// gathers every figure of the report (Algorithm 2 of the paper). inputs
// are the log files, hashed into the manifest (may be nil).
func fit(ctx context.Context, d *ingest.Dataset, inputs []string, opts Options) (*report.Outcome, error) {
	if opts.MaxObservations > 0 {
		d = ingest.LimitObservations(d, opts.MaxObservations)
	}
	K, H := d.NumEpisodes(), d.Horizon
	if err := checkEnough(K, H); err != nil {
		return nil, err
	}
	if err := checkRewards(d); err != nil {
		return nil, err
	}
	if err := checkReturnRange(d, opts.ReturnRange); err != nil {
		return nil, err
	}
	r := newFitRun(d, opts)
	for _, stage := range []func(context.Context) error{r.chooseRank, r.chooseAlpha, r.split, r.estimate, r.pessimism, r.plan, r.compare} {
		if err := stage(ctx); err != nil {
			return nil, err
		}
	}
	return r.report(ctx, inputs)
}

// fitRun is the state of one fit, stage by stage (fit).
type fitRun struct {
	d          *ingest.Dataset
	opts       Options
	K, H       int
	st         *stageTimer
	out        *report.Outcome
	candidates []float64
	eopts      estimate.Options
	popts      pessimism.Options
	planOpts   policy.PlanOptions
	rows       int64  // the policy table's rows (PlanRows, or fewer under the memory limit)
	memNote    string // the note when the memory limit lowered rows
	boundNote  string // the note when the memory limit held the gap's bound
	restarts   int    // the EM starts asked for (the warm starts set one)

	rankChoice *estimate.RankChoice
	cf         *crossFit // the parts' models and bonuses (selection only)
	splits     [][]int
	fit        *estimate.Result
	bonus      *pessimism.Bonus
}

func newFitRun(d *ingest.Dataset, opts Options) *fitRun {
	prog := &finishingProgress{Reporter: opts.Progress}
	opts.Progress = prog
	r := &fitRun{d: d, opts: opts, K: d.NumEpisodes(), H: d.Horizon, out: &report.Outcome{},
		st: &stageTimer{prog: prog, times: map[string]float64{}}, candidates: opts.Alpha.Candidates()}
	workers := opts.Workers
	r.eopts = opts.Estimate
	r.eopts.Seed = opts.Seed
	r.eopts.Workers = workers
	spilled := opts.Ingest.Arrays != nil
	if r.eopts.MemoryLimit == 0 {
		r.eopts.MemoryLimit = fitMemory(d, spilled, opts.MemoryLimit)
	}
	r.restarts = r.eopts.Restarts
	r.popts = pessimism.Options{Lambda: opts.Lambda, Workers: workers, USummer: opts.USummer}
	r.rows, r.memNote = tableRows(opts.PlanRows, d, spilled, opts.MemoryLimit)
	// The exact planner writes its whole tree as the table: past the rows
	// that fit, the tree is planned over beliefs instead.
	budget, _ := tableRows(opts.PlanBudget, d, spilled, opts.MemoryLimit)
	// Every plan, the α selection's too, gets the pruned search's second
	// opinion when its belief plan states a gap above the target
	// (docs/planning.md): α is then chosen among the policies the fit
	// may return.
	r.planOpts = policy.PlanOptions{Workers: workers, Budget: budget, Planner: opts.Planner, RowBudget: r.rows, Points: opts.PlanPoints, SearchAbove: policy.TargetGap}
	r.planOpts.BoundMemory, r.boundNote = boundMemory(d, spilled, opts.MemoryLimit, r.rows)
	return r
}

// chooseRank searches the rank once, on a subsample of all episodes
// (with --rank auto); every fit after it starts from the search's model
// with one start (the search compared the starts already).
func (r *fitRun) chooseRank(ctx context.Context) error {
	if r.eopts.Rank != 0 {
		return nil
	}
	r.st.begin("rank", 0) // the number of ranks tried is not known ahead
	ropts := r.eopts
	ropts.Reporter = newEMProgress(r.opts.Progress, r.eopts)
	rc, err := estimate.ChooseRank(ctx, r.d, ropts)
	if err != nil {
		return err
	}
	r.useRank(rc)
	r.st.end()
	return nil
}

// useRank sets the rank the search chose, notes a capped search, and
// warm-starts the fits that follow from the search's model.
func (r *fitRun) useRank(rc *estimate.RankChoice) {
	r.rankChoice = rc
	r.eopts.Rank = rc.Rank
	if rc.MaxRankCause != "" {
		r.out.Notes = append(r.out.Notes, fmt.Sprintf("The rank search tried ranks up to %d only: %s.", rc.MaxRank, rc.MaxRankCause))
	}
	// Warm starts need a model that knows every logged reward value; a
	// search on a subsample of small logs may have missed one.
	if rc.Model != nil {
		r.eopts = warmStart(r.eopts, rc.Model, r.d, r.restarts)
	}
}

// chooseAlpha chooses α among the candidates by cross-fitting: fit a
// model on part A and one on part B, plan one policy per α with A's model
// and bonus, and value each under B's model with B's bonus
// (policy.Select). With one candidate, that is α.
func (r *fitRun) chooseAlpha(ctx context.Context) error {
	r.defaultAlphaOnFewEpisodes()
	switch {
	case len(r.candidates) == 1:
		r.out.Alpha = r.candidates[0]
	case len(r.candidates) > 1:
		r.st.begin("select-α", emBudget(r.eopts))
		c, err := r.selectAmong(ctx)
		if err != nil {
			return err
		}
		r.cf = c
		// The final fit: one start, from the training part's model, when
		// the training episodes saw the same reward values as all of them
		// (on small logs they may not, and the start would not fit).
		r.eopts = warmStart(r.eopts, c.planA, r.d, r.restarts)
		r.eopts.Rank = c.planA.States
		r.st.end()
	}
	return nil
}

// selectAmong runs the α selection (selectAlpha) from the rank search's
// model and, when the search's growth left other models of its rank
// (estimate.RankChoice.Alternatives), from each of them too, and keeps
// the run whose chosen plan has the highest cross-fitted criterion: the
// value of the plan made on part A under the model fitted on part B.
// Ties keep the earlier run (the search's model first). The fits of one
// rank from different starts can hold different memories that the
// likelihood of the logs does not order by their decisions; the
// cross-fitted value judges them by what they plan (docs/validation.md,
// "Ninth session").
func (r *fitRun) selectAmong(ctx context.Context) (*crossFit, error) {
	var alts []*estimate.Model
	if r.rankChoice != nil {
		alts = r.rankChoice.Alternatives
	}
	c, err := r.selectAlpha(ctx)
	if err != nil || len(alts) == 0 {
		return c, err
	}
	// What selectAlpha sets in the outcome. Only the best run so far is
	// kept: the others' part models and bonuses are let go.
	type run struct {
		cf       *crossFit
		sel      *policy.Selection
		check    *report.RewardCheck
		fallback *report.Fallback
	}
	take := func(cf *crossFit) (run, float64) {
		sel := r.out.Selection
		return run{cf, sel, r.out.RewardCheck, r.out.Fallback}, sel.Candidates[sel.Chosen].Cross.Criterion
	}
	best, top := take(c)
	crits, kept := []string{fmt.Sprintf("%.4f", top)}, 1
	base := r.eopts
	for i, m := range alts {
		r.eopts = warmStart(base, m, r.d, r.restarts)
		c, err := r.selectAlpha(ctx)
		if err != nil {
			return nil, err
		}
		x, v := take(c)
		crits = append(crits, fmt.Sprintf("%.4f", v))
		if v > top {
			best, top, kept = x, v, i+2
		}
	}
	r.eopts = base
	r.out.Selection, r.out.Alpha, r.out.RewardCheck, r.out.Fallback = best.sel, best.sel.Alpha(), best.check, best.fallback
	r.out.Notes = append(r.out.Notes, fmt.Sprintf("The rank search's growth left %d models of rank %d, from different starts, that each predict the held-out episodes better than the smaller rank; α was chosen from each, and model %d of them, whose chosen plan has the highest cross-fitted value (%s; the first is the one of the highest training log-likelihood), is the one fitted on all the episodes.",
		len(crits), best.cf.planA.States, kept, strings.Join(crits, ", ")))
	return best.cf, nil
}

// defaultAlphaOnFewEpisodes falls back to the default α, said in the
// report, when --alpha auto has too few episodes to choose α on held-out
// ones (an explicit list is an error later).
func (r *fitRun) defaultAlphaOnFewEpisodes() {
	K, need := r.K, minHeldOutEpisodes(r.opts.SelectHeldOut, r.H)
	if len(r.candidates) <= 1 || r.opts.Alpha.Mode != pessimism.AlphaAuto || K >= need {
		return
	}
	r.candidates = []float64{pessimism.DefaultAlpha}
	r.out.Notes = append(r.out.Notes, fmt.Sprintf("α = %g, the default: %s are too few to choose α on held-out episodes (that needs at least %d).", pessimism.DefaultAlpha, plural(K, "episode"), need))
}

// split assigns the episodes to the steps' datasets D_h.
func (r *fitRun) split(context.Context) error {
	r.st.begin("split", int64(r.K))
	splits, err := split.Split(r.K, r.H, r.opts.Seed)
	if err != nil {
		return err
	}
	r.splits, r.out.Splits = splits, splits
	r.opts.Progress.Advance(int64(r.K), "")
	r.st.end()
	return nil
}

// estimate fits the final model on every episode.
func (r *fitRun) estimate(ctx context.Context) error {
	r.st.begin("estimate", emBudget(r.eopts))
	fit, err := r.fitAll(ctx)
	if err != nil {
		return err
	}
	applyReturnRange(fit.Model, r.opts.ReturnRange)
	if asked := r.opts.Estimate.Rank; r.rankChoice == nil && asked > fit.Model.States {
		r.out.Notes = append(r.out.Notes, fmt.Sprintf("Rank %d was asked, but the logs hold at most %d distinct histories at any step, so no more than %d latent states can be told apart: rank %d was fitted.", asked, fit.Model.States, fit.Model.States, fit.Model.States))
	}
	r.recordFitOptions(fit)
	r.fit = fit
	r.out.Fit, r.out.Model = fit, fit.Model
	dropCandidatePolicies(r.out, r.d)
	r.st.end()
	return nil
}

// fitAll fits the final model on every episode, from the warm start
// when there is one.
func (r *fitRun) fitAll(ctx context.Context) (*estimate.Result, error) {
	eopts := r.eopts
	eopts.Splits = r.splits
	eopts.Reporter = newEMProgress(r.opts.Progress, eopts)
	fit, err := estimate.Fit(ctx, r.d, eopts)
	if err != nil && eopts.Start != nil && errors.Is(err, estimate.ErrOptions) {
		// The training fit's model does not match all the episodes (a
		// reward value seen only in held-out episodes changes the reward
		// model): fit from the usual starts instead of warm-starting.
		eopts.Start = nil
		fit, err = estimate.Fit(ctx, r.d, eopts)
	}
	return fit, err
}

// recordFitOptions sets the fit's reported options as the user asked
// them: the rank search's rows and an automatic rank, and the starts
// asked for (the warm starts set one start per fit).
func (r *fitRun) recordFitOptions(fit *estimate.Result) {
	if rc := r.rankChoice; rc != nil {
		// The rank rows of the search (fit.arrow kind = rank).
		fit.RankTable, fit.HeldOutLogLik, fit.RankSearchEpisodes = rc.Table, rc.HeldOutLogLik, rc.Episodes
		fit.Options.Rank = 0
	}
	fit.Options.Restarts = r.restarts
	if fit.Options.Restarts == 0 {
		fit.Options.Restarts = estimate.DefaultRestarts
	}
}

// pessimism builds the bonus of the final model, at the chosen α (or
// the paper's α̂ with α = theory).
func (r *fitRun) pessimism(ctx context.Context) error {
	r.st.begin("pessimism", int64(r.K))
	m := r.fit.Model
	bonus, err := pessimism.Build(ctx, m, r.d, r.splits, r.popts)
	if err != nil {
		return err
	}
	if r.opts.Alpha.Mode == pessimism.AlphaTheory {
		if err := r.theoryAlpha(); err != nil {
			return err
		}
	}
	r.bonus = bonus.WithAlpha(r.out.Alpha)
	r.out.Bonus = r.bonus
	r.opts.Progress.Advance(int64(r.K), "")
	r.st.end()
	return nil
}

// theoryAlpha sets α to the paper's α̂ (Theorem 2).
func (r *fitRun) theoryAlpha() error {
	m := r.fit.Model
	iota, err := pessimism.Iota(r.fit.WithPropensity(r.d), m.TestLength)
	if err != nil {
		return err
	}
	maxDim := 0
	for h := 0; h < r.H; h++ {
		maxDim = max(maxDim, m.FeatureDim(h))
	}
	th, err := pessimism.TheoryAlpha(pessimism.TheoryParams{
		Gamma: r.opts.Gamma, Delta: r.fit.Options.Delta, Lambda: r.opts.Lambda, Iota: iota,
		Episodes: r.K, Horizon: r.H, Obs: r.d.NumObs(), Actions: r.d.NumActions(), Rank: m.States,
		TestLength: m.TestLength, MaxDim: maxDim,
	})
	if err != nil {
		return err
	}
	r.out.Theory = &th
	r.out.Alpha = th.Alpha
	return nil
}

// plan plans the policy (or fits the behaviour fallback's clone) and
// corrects the reported bound.
func (r *fitRun) plan(ctx context.Context) error {
	m, out := r.fit.Model, r.out
	planWork := planNodes(m, r.opts.PlanBudget)
	r.st.begin("policy", planWork)
	pol, stats, err := r.planPolicy(ctx)
	if err != nil {
		return err
	}
	out.Policy, out.Plan = pol, stats
	if r.memNote != "" && stats.Planner == policy.PlannerBelief && stats.RolloutMass > 0 {
		out.Notes = append(out.Notes, r.memNote)
	}
	if r.boundNote != "" && stats.BoundMemory > 0 && stats.GapBound > policy.TargetGap {
		out.Notes = append(out.Notes, r.boundNote)
	}
	if len(pol.Nodes) >= largeTable {
		// The planner's working copies of a table of millions of rows
		// are garbage now; collect them before the report allocates, so
		// the heap does not grow to twice the planner's peak.
		debug.FreeOSMemory()
	}
	r.opts.Progress.Advance(min(stats.Nodes, planWork), fmt.Sprintf("%d nodes", stats.Nodes))
	if out.Selection != nil && r.opts.LCBCorrection == LCBCorrectionCrossFit && (out.Fallback == nil || !out.Fallback.Used) {
		if err := correctBound(ctx, out, r.cf.planA, r.cf.bonusA, r.cf.boundB, m, r.bonus, r.opts.Seed); err != nil {
			return err
		}
	}
	r.st.end()
	return nil
}

// planPolicy plans the LCB policy on the final model, or, when the
// behaviour fallback set the plan aside, writes the chosen clone (and
// its bound, out.Bound).
func (r *fitRun) planPolicy(ctx context.Context) (pol *policy.Policy, stats *policy.PlanStats, err error) {
	if fb := r.out.Fallback; fb != nil && fb.Used {
		pol, stats, r.out.Bound, err = clonePlan(ctx, r.d, r.fit.Model, r.bonus, fb, r.opts.Seed)
		return pol, stats, err
	}
	// The final plan's stated gap is the one reported: its upper bound
	// spends more (policy.PlanOptions, TightBound).
	opts := r.planOpts
	opts.TightBound, opts.HullBound = true, r.opts.HullBound
	return policy.Plan(ctx, r.fit.Model, r.bonus, opts)
}

// compare estimates the policies given with --compare beside the run's.
func (r *fitRun) compare(ctx context.Context) error {
	if len(r.opts.Compare) == 0 {
		return nil
	}
	r.st.begin("compare", int64(len(r.opts.Compare)+1))
	var err error
	if r.out.Compared, err = comparePolicies(ctx, r.d, r.out, r.opts, r.opts.Progress); err != nil {
		return err
	}
	r.st.end()
	return nil
}

// report measures the run's figures (measure) and builds what
// WriteOutcome writes from them.
func (r *fitRun) report(ctx context.Context, inputs []string) (*report.Outcome, error) {
	out := r.out
	r.st.begin("report", int64(r.K))
	run, err := r.buildRun(ctx, inputs)
	if err != nil {
		return nil, err
	}
	r.opts.Progress.Advance(int64(r.K), "")
	r.st.end()
	run.Manifest.StageTimes = r.st.times
	out.Run = run
	return out, nil
}

// buildRun measures the finished fit on the logs and tabulates it
// (report.Build) with the run's parameters.
func (r *fitRun) buildRun(ctx context.Context, inputs []string) (*report.Run, error) {
	params := r.opts.params(r.d)
	if r.rows < r.opts.PlanRows {
		params.PlanRowsLimited = r.rows
	}
	fig, err := measure(ctx, r.d, r.out, r.opts.Scorer, r.opts.Workers)
	if err != nil {
		return nil, err
	}
	run, err := report.Build(ctx, r.d, inputs, params, r.out, fig)
	if err != nil {
		return nil, err
	}
	return run, ctx.Err()
}

// crossFit is what a cross-fitted α selection leaves for the final fit
// and the bound correction: part A's model and bonus, with which the
// candidates were planned (the final fit starts from A's model), and the
// chosen plan's bound under part B's model at α_B = max(α,
// pessimism.DefaultAlpha), the figure both the bound correction and the
// behaviour fallback measure the plan by.
type crossFit struct {
	planA  *estimate.Model
	bonusA *pessimism.Bonus
	boundB float64
}

// selectParts is the seeded split of K episodes of H steps into the α
// selection's parts A (train) and B (held, the share heldFrac), each
// capped at SelectMaxEpisodes, as sorted episode indices; ErrTooFew when
// a part would have fewer than H episodes.
func selectParts(K, H int, heldFrac float64, seed uint64) (trainIdx, heldIdx []int, err error) {
	perm := split.Permutation(K, seed^0x5e1ec7)
	nHeld := int(math.Round(heldFrac * float64(K)))
	if nHeld < H || K-nHeld < H {
		return nil, nil, fmt.Errorf("%w: %s, but holding out %.0f%% for choosing α needs at least %d (%d on each side, one per step); give --alpha a single value", ErrTooFew, plural(K, "episode"), 100*heldFrac, minHeldOutEpisodes(heldFrac, H), H)
	}
	heldIdx = append([]int(nil), perm[:nHeld]...)
	trainIdx = append([]int(nil), perm[nHeld:]...)
	// The permutation is random, so a prefix is a seeded subsample.
	heldIdx = heldIdx[:min(len(heldIdx), SelectMaxEpisodes)]
	trainIdx = trainIdx[:min(len(trainIdx), SelectMaxEpisodes)]
	sort.Ints(heldIdx)
	sort.Ints(trainIdx)
	return trainIdx, heldIdx, nil
}

// selectAlpha chooses α among candidates by cross-fitting: it fits a
// model on part A and one on part B of a seeded split of d (each capped
// at SelectMaxEpisodes), plans one policy per α with A's model and bonus
// and values each under B's model with B's bonus (policy.Select). It sets
// out.Selection, out.Alpha and out.RewardCheck.
func (r *fitRun) selectAlpha(ctx context.Context) (*crossFit, error) {
	trainIdx, heldIdx, err := selectParts(r.K, r.H, r.opts.SelectHeldOut, r.opts.Seed)
	if err != nil {
		return nil, err
	}
	train, held := r.d.Subset(trainIdx), r.d.Subset(heldIdx)
	a, err := r.fitTrainPart(ctx, train)
	if err != nil {
		return nil, err
	}
	r.out.RewardCheck = modelRewardCheck(a.model, held, true)
	b, err := r.fitHeldPart(ctx, held, a.model)
	if err != nil {
		return nil, err
	}
	if !held.HasPropensity() {
		// Held-out importance weights need π^b: the fit's estimate.
		held = withPropensity(held, heldIdx, estimate.EstimateBehavior(r.d), r.H)
	}
	sel, err := r.selectPlans(ctx, a, b, train, held)
	if err != nil {
		return nil, err
	}
	r.out.Selection = sel
	r.out.Alpha = sel.Alpha()
	cf := &crossFit{planA: a.model, bonusA: a.bonus}
	if r.opts.Fallback == FallbackNone && r.opts.LCBCorrection == LCBCorrectionNone {
		return cf, nil
	}
	return cf, r.boundOnHeld(ctx, cf, sel, b, train, held)
}

// partFit is the model and bonus fitted on one part of the α selection.
type partFit struct {
	model *estimate.Model
	bonus *pessimism.Bonus
}

// fitTrainPart fits part A (train) with the run's estimate options (from
// the user's start, when one is given) and builds its bonus on its own
// seeded splits.
func (r *fitRun) fitTrainPart(ctx context.Context, train *ingest.Dataset) (partFit, error) {
	trainSplits, err := split.Split(train.NumEpisodes(), r.H, r.opts.Seed)
	if err != nil {
		return partFit{}, err
	}
	to := r.eopts
	if to.Start != nil {
		to = warmStart(to, to.Start, train, r.restarts)
	}
	to.Splits = trainSplits
	to.Reporter = newEMProgress(r.opts.Progress, to)
	tfit, err := estimate.Fit(ctx, train, to)
	if err != nil {
		return partFit{}, err
	}
	applyReturnRange(tfit.Model, r.opts.ReturnRange)
	tb, err := pessimism.Build(ctx, tfit.Model, train, trainSplits, r.popts)
	return partFit{tfit.Model, tb}, err
}

// fitHeldPart fits part B (held) at A's rank, warm-started from A's
// model, and builds its bonus.
func (r *fitRun) fitHeldPart(ctx context.Context, held *ingest.Dataset, start *estimate.Model) (partFit, error) {
	heldSplits, err := split.Split(held.NumEpisodes(), r.H, r.opts.Seed+1)
	if err != nil {
		return partFit{}, err
	}
	ho := warmStart(r.eopts, start, held, r.restarts)
	ho.Splits, ho.Rank = heldSplits, start.States
	hfit, err := estimate.Fit(ctx, held, ho)
	if err != nil {
		return partFit{}, err
	}
	hb, err := pessimism.Build(ctx, hfit.Model, held, heldSplits, r.popts)
	return partFit{hfit.Model, hb}, err
}

// selectPlans plans one policy per candidate α with A's model and values
// each under B's (policy.Select). Candidates whose tree exceeds the exact
// planner's budget are planned with a quarter of the approximate
// search's nodes (the final plan gets all of them): the approximate
// search of six candidates was most of the selection's time on large
// trees.
func (r *fitRun) selectPlans(ctx context.Context, a, b partFit, train, held *ingest.Dataset) (*policy.Selection, error) {
	selPlan := r.planOpts
	selPlan.SearchBudget = max(1, min(r.planOpts.Budget, policy.DefaultSearchBudget)/selectSearchShare)
	return policy.Select(ctx, a.model, a.bonus, b.model, b.bonus, held, r.candidates, policy.SelectOptions{Plan: selPlan, Seed: r.opts.Seed,
		PlanScale: policy.PlanScale(train.NumEpisodes(), r.K)})
}

// boundOnHeld is the chosen plan's bound under B's model at max(α, the
// default α), what B's data vouch for at the paper's default confidence
// (cf.boundB), and with --fallback behavior the comparison with the
// behaviour's clones (out.Fallback).
func (r *fitRun) boundOnHeld(ctx context.Context, cf *crossFit, sel *policy.Selection, b partFit, train, held *ingest.Dataset) error {
	rb, err := policy.ValueUnder(ctx, b.model, b.bonus, sel.Policy(), 0, 0, r.opts.Seed)
	if err != nil {
		return err
	}
	cf.boundB = rb.Reward - rb.Bonus(math.Max(r.out.Alpha, pessimism.DefaultAlpha))
	if r.opts.Fallback == FallbackBehavior {
		fb, err := checkFallback(ctx, sel, cf.boundB, train, held, b.model)
		if err != nil {
			return err
		}
		r.out.Fallback = fb
	}
	return nil
}

// correctBound applies LCBCorrectionCrossFit: it finds α_r, the least
// α' ≥ α with V_{θ̂_A,R}^{π_α} − V_{θ̂_A,α' b̂_A}^{π_α} ≤ target, the chosen
// candidate's cross-fitted bound V_{θ̂_B,R}^{π_α} − V_{θ̂_B,α_B b̂_B}^{π_α}
// at α_B = max(α, pessimism.DefaultAlpha) (crossFit.boundB; bisection on
// the priced rollout; +Inf when even the capped bonus does not reach it),
// and when α_r > α sets out.Bound to π̄'s bound under the final model at
// α_r.
func correctBound(ctx context.Context, out *report.Outcome, planA *estimate.Model, bonusA *pessimism.Bonus, target float64, m *estimate.Model, bonus *pessimism.Bonus, seed uint64) error {
	c := out.Selection.Candidates[out.Selection.Chosen]
	ra, err := policy.ValueUnder(ctx, planA, bonusA, c.Policy, 0, 0, seed)
	if err != nil {
		return err
	}
	ar := calibrateAlpha(func(x float64) float64 { return ra.Reward - ra.Bonus(x) }, out.Alpha, target)
	if ar == out.Alpha {
		return nil
	}
	rf, err := policy.ValueUnder(ctx, m, bonus, out.Policy, 0, 0, seed)
	if err != nil {
		return err
	}
	v := policy.Value{Reward: out.Plan.ValueReward, Bonus: rf.Bonus(ar)}
	v.LCB = v.Reward - v.Bonus
	out.Bound, out.BoundAlpha = &v, ar
	return nil
}

// calibrateAlpha returns the least α' ≥ a with bound(α') ≤ target for a
// bound non-increasing in α' (to a relative 1e-6, by doubling then
// bisection): a itself when bound(a) ≤ target, +Inf when no finite α'
// reaches it (bound(10¹²) > target).
func calibrateAlpha(bound func(float64) float64, a, target float64) float64 {
	if bound(a) <= target {
		return a
	}
	if bound(1e12) > target {
		return math.Inf(1)
	}
	lo, hi := a, math.Max(2*a, 1e-3)
	for bound(hi) > target {
		lo, hi = hi, 2*hi
	}
	for i := 0; i < 100 && hi-lo > 1e-6*hi; i++ {
		mid := (lo + hi) / 2
		if bound(mid) <= target {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// withPropensity returns sub with the given full-dataset propensities
// copied in for the episodes idx.
func withPropensity(sub *ingest.Dataset, idx []int, prop []float64, H int) *ingest.Dataset {
	c := *sub
	c.Propensity = make([]float64, len(idx)*H)
	for i, k := range idx {
		copy(c.Propensity[i*H:(i+1)*H], prop[k*H:(k+1)*H])
	}
	return &c
}

// minHeldOutEpisodes is the least K for which holding out the share frac
// leaves H episodes on each side (one per split of each side's fit).
func minHeldOutEpisodes(frac float64, H int) int {
	for k := 2 * H; ; k++ {
		n := int(math.Round(frac * float64(k)))
		if n >= H && k-n >= H {
			return k
		}
	}
}

// warmStart returns o starting once from m when m knows exactly the reward
// values logged in d (a fit on a subset of small logs may have missed one,
// or d may miss one of m's, and the start would not fit); otherwise o
// without a start model and with the restarts asked for.
func warmStart(o estimate.Options, m *estimate.Model, d *ingest.Dataset, restarts int) estimate.Options {
	if rewardSupportOf(m, d.Reward) {
		o.Start, o.Restarts = m, 1
	} else {
		o.Start, o.Restarts = nil, restarts
	}
	return o
}

// largeTable is the policy table size (rows) past which the driver
// returns the planner's garbage to the system before the report.
const largeTable = 1 << 20
