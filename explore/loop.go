package explore

import (
	"context"
	"fmt"
	"math"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
	"github.com/psrlcb/psrlcb/split"
)

// Defaults of OnlineOptions.
const (
	// DefaultPerStep is the number of episodes per switch step and round:
	// the paper collects one (Algorithm 1, line 4); a batch amortises the
	// refit, and 50 keeps a round of H = 4 at 200 episodes.
	DefaultPerStep = 50
	// DefaultMaxRounds bounds the loop when the termination rule does not
	// fire.
	DefaultMaxRounds = 20
)

// OnlineOptions configure Online. The zero value means the defaults.
type OnlineOptions struct {
	// Horizon is H (required).
	Horizon int
	// PerStep is the batch size per switch step and round (default
	// DefaultPerStep); a round collects H·PerStep episodes.
	PerStep int
	// MaxRounds bounds the number of rounds (default DefaultMaxRounds).
	MaxRounds int
	// Round configures each round's fit, bonus and plans; its
	// Estimate.Seed is replaced by a seed derived from Seed and the round.
	Round Options
	// Seed drives the simulation and the fits.
	Seed uint64
	// Baseline also fits, each round, a model on as many episodes of
	// uniform exploration (all actions uniform, random even split for
	// Θ_min) and reports its greedy policy's regret and its TV errors.
	Baseline bool
	// Progress, when set, receives each round's row as soon as it is done.
	Progress func(RoundRow)
}

// RoundRow is one round of the online loop (one row of rounds.arrow).
type RoundRow struct {
	Round         int     `json:"round"`
	Episodes      int     `json:"episodes"`       // collected this round (H·PerStep)
	TotalEpisodes int     `json:"total_episodes"` // logs so far
	BonusValue    float64 `json:"bonus_value"`    // V_{θ̂^k,b̂^k}^{π^k}
	Threshold     float64 `json:"threshold"`      // ε/2
	Terminated    bool    `json:"terminated"`
	Rank          int     `json:"rank"`
	LogLik        float64 `json:"loglik"`
	MixWeight     float64 `json:"theta_min_mix_weight"`
	// True errors of θ̂^k: D_TV under the uniform policy and under an
	// optimal policy of the true model (exact, TV).
	TVUniform float64 `json:"tv_uniform"`
	TVOptimal float64 `json:"tv_optimal"`
	// GreedyValue is the true value of argmax_π V_{θ̂^k,R}^π; Regret is
	// OptimalValue − GreedyValue (user units), NormRegret the regret over
	// OptimalValue − UniformValue.
	GreedyValue  float64 `json:"greedy_value"`
	OptimalValue float64 `json:"optimal_value"`
	UniformValue float64 `json:"uniform_value"`
	Regret       float64 `json:"regret"`
	NormRegret   float64 `json:"norm_regret"`
	// Baseline figures (NaN without OnlineOptions.Baseline): the same
	// number of uniformly explored episodes.
	BaselineRegret    float64 `json:"baseline_regret"`
	BaselineTVUniform float64 `json:"baseline_tv_uniform"`
	BaselineTVOptimal float64 `json:"baseline_tv_optimal"`
}

// OnlineResult is the outcome of Online.
type OnlineResult struct {
	Rows []RoundRow
	// Last is the last round's result: θ^ε and the greedy policy when it
	// terminated.
	Last *Result
	// Logs are all the episodes collected and Steps their switch steps.
	Logs  *pomdp.Logs
	Steps []int
	// Rounds[k] is the round of episode k (1-based).
	Rounds []int
}

// Online runs PSR-UCB (Algorithm 1) against the known POMDP m: each round
// collects H·PerStep episodes with the exploration policy of the previous
// round (Collect), runs Round on all the logs, and records the termination
// statistic with the true errors of the model and the greedy policy, until
// the rule V_{θ̂^k,b̂^k}^{π^k} ≤ ε/2 fires or MaxRounds is reached.
func Online(ctx context.Context, m *pomdp.POMDP, opts OnlineOptions) (*OnlineResult, error) {
	if err := m.Check(); err != nil {
		return nil, err
	}
	opts, err := onlineDefaults(opts)
	if err != nil {
		return nil, err
	}
	o, err := newOnlineRun(ctx, m, opts)
	if err != nil {
		return nil, err
	}
	return o.run()
}

// onlineDefaults checks opts' horizon and fills in and checks the batch
// size and the number of rounds.
func onlineDefaults(opts OnlineOptions) (OnlineOptions, error) {
	if opts.Horizon <= 0 {
		return opts, fmt.Errorf("%w: horizon %d must be positive", ErrOptions, opts.Horizon)
	}
	if opts.PerStep == 0 {
		opts.PerStep = DefaultPerStep
	}
	if opts.MaxRounds == 0 {
		opts.MaxRounds = DefaultMaxRounds
	}
	if opts.PerStep < 0 || opts.MaxRounds < 0 {
		return opts, fmt.Errorf("%w: episodes per step %d and rounds %d must be positive", ErrOptions, opts.PerStep, opts.MaxRounds)
	}
	return opts, nil
}

// onlineRun is the state the rounds of one Online call share: the true
// model with its reference values and policies, and the logs so far.
type onlineRun struct {
	ctx    context.Context
	m      *pomdp.POMDP
	opts   OnlineOptions
	vStar  float64          // optimal value of m
	optPol pomdp.PolicyFunc // an optimal policy of m
	beh    pomdp.Behavior   // the uniform behaviour
	vUni   float64          // value of the uniform behaviour
	res    *OnlineResult
	base   *pomdp.Logs // the baseline's uniformly explored episodes
}

// newOnlineRun computes the reference figures of m: its optimal value and
// policy and the value of the uniform behaviour.
func newOnlineRun(ctx context.Context, m *pomdp.POMDP, opts OnlineOptions) (*onlineRun, error) {
	o := &onlineRun{ctx: ctx, m: m, opts: opts, res: &OnlineResult{}}
	var err error
	if o.vStar, o.optPol, err = pomdp.OptimalContext(ctx, m, opts.Horizon); err != nil {
		return nil, err
	}
	if o.beh, err = pomdp.ParseBehavior("uniform", m); err != nil {
		return nil, err
	}
	if o.vUni, err = pomdp.BehaviorValueContext(ctx, m, opts.Horizon, o.beh); err != nil {
		return nil, err
	}
	return o, nil
}

// run plays the rounds until the termination rule fires or MaxRounds is
// reached, each round exploring with the previous round's policy.
func (o *onlineRun) run() (*OnlineResult, error) {
	var prev *policy.Policy
	for k := 1; k <= o.opts.MaxRounds; k++ {
		r, err := o.round(k, prev)
		if err != nil {
			return nil, err
		}
		if r.Terminated {
			break
		}
		prev = r.Explore
	}
	return o.res, nil
}

// round k collects a batch with prev, runs Round on all the logs and
// records the round's row (and reports it to Progress).
func (o *onlineRun) round(k int, prev *policy.Policy) (*Result, error) {
	n, d, err := o.collectData(k, prev)
	if err != nil {
		return nil, err
	}
	ro := o.roundOptions(k)
	r, err := Round(o.ctx, d, o.res.Steps, ro)
	if err != nil {
		return nil, fmt.Errorf("round %d: %w", k, err)
	}
	row, err := o.row(k, n, r, ro)
	if err != nil {
		return nil, err
	}
	o.record(row, r)
	return r, nil
}

// collectData collects round k's episodes with prev, and returns their
// number and the dataset of all the logs so far.
func (o *onlineRun) collectData(k int, prev *policy.Policy) (int, *ingest.Dataset, error) {
	n, err := o.collect(k, prev)
	if err != nil {
		return 0, nil, err
	}
	d, err := o.res.Logs.Dataset()
	return n, d, err
}

// roundOptions are the loop's round options for round k, with an
// estimation seed of its own drawn from the loop's seed and k.
func (o *onlineRun) roundOptions(k int) Options {
	ro := o.opts.Round
	ro.Estimate.Seed = o.opts.Seed ^ uint64(k)*0x9e3779b97f4a7c15
	return ro
}

// record appends row to the result with r as the last round's, and
// reports it to Progress.
func (o *onlineRun) record(row RoundRow, r *Result) {
	o.res.Rows = append(o.res.Rows, row)
	o.res.Last = r
	if o.opts.Progress != nil {
		o.opts.Progress(row)
	}
}

// collect appends round k's episodes, explored with prev, to the logs with
// their switch steps and round numbers, and returns how many there are.
func (o *onlineRun) collect(k int, prev *policy.Policy) (int, error) {
	batch, steps, err := Collect(o.ctx, o.m, o.opts.Horizon, prev, o.opts.PerStep, k, o.opts.Seed)
	if err != nil {
		return 0, err
	}
	o.res.Logs = Append(o.res.Logs, batch)
	o.res.Steps = append(o.res.Steps, steps...)
	for range steps {
		o.res.Rounds = append(o.res.Rounds, k)
	}
	return len(steps), nil
}

// row is round k's row: r's statistics with the true errors of its model
// and greedy policy and, with Baseline, those of uniform exploration of n
// more episodes.
func (o *onlineRun) row(k, n int, r *Result, ro Options) (RoundRow, error) {
	row := RoundRow{
		Round: k, Episodes: n, TotalEpisodes: len(o.res.Steps),
		BonusValue: r.BonusValue, Threshold: r.Threshold, Terminated: r.Terminated,
		Rank: r.Fit.Model.States, LogLik: r.Fit.LogLik, MixWeight: r.Fit.ThetaMin.MixWeight,
		OptimalValue: o.vStar, UniformValue: o.vUni,
		BaselineRegret: math.NaN(), BaselineTVUniform: math.NaN(), BaselineTVOptimal: math.NaN(),
	}
	var err error
	if row.TVUniform, row.TVOptimal, row.GreedyValue, err = truthFigures(o.ctx, o.m, o.opts.Horizon, r.Fit.Model, r.Greedy, o.optPol); err != nil {
		return row, err
	}
	row.Regret = o.vStar - row.GreedyValue
	row.NormRegret = normRegret(row.Regret, o.vStar, o.vUni)
	if o.opts.Baseline {
		err = o.baseline(k, n, ro, &row)
	}
	return row, err
}

// baseline simulates n more uniform episodes for round k, appends them to
// the baseline's logs and fills row's baseline figures.
func (o *onlineRun) baseline(k, n int, ro Options, row *RoundRow) error {
	more, err := pomdp.Simulate(o.ctx, o.m, o.opts.Horizon, n, o.beh, o.opts.Seed^0x5bd1e995^uint64(k)<<20)
	if err != nil {
		return err
	}
	o.base = Append(o.base, more)
	if err := baselineRound(o.ctx, o.m, o.opts.Horizon, o.base, ro, o.optPol, o.vStar, row); err != nil {
		return fmt.Errorf("round %d baseline: %w", k, err)
	}
	return nil
}

// baselineRound fills row's figures of uniform exploration: the greedy
// plan of a fit of base, the uniform episodes of as many rounds.
func baselineRound(ctx context.Context, m *pomdp.POMDP, H int, base *pomdp.Logs, ro Options, optPol pomdp.PolicyFunc, vStar float64, row *RoundRow) error {
	bd, err := base.Dataset()
	if err != nil {
		return err
	}
	fit, greedy, err := fitUniform(ctx, bd, ro)
	if err != nil {
		return err
	}
	var gv float64
	if row.BaselineTVUniform, row.BaselineTVOptimal, gv, err = truthFigures(ctx, m, H, fit.Model, greedy, optPol); err != nil {
		return err
	}
	row.BaselineRegret = vStar - gv
	return nil
}

func normRegret(regret, vStar, vUni float64) float64 {
	if vStar-vUni <= 0 {
		return math.NaN()
	}
	return regret / (vStar - vUni)
}

// truthFigures computes the true TV errors of model under the uniform and
// the optimal policy and the true value of greedy.
func truthFigures(ctx context.Context, m *pomdp.POMDP, H int, model *estimate.Model, greedy *policy.Policy, opt pomdp.PolicyFunc) (tvU, tvO, gv float64, err error) {
	if tvU, err = TV(ctx, m, model, H, Uniform); err != nil {
		return
	}
	if tvO, err = TV(ctx, m, model, H, Deterministic(opt)); err != nil {
		return
	}
	gv, err = pomdp.EvaluatePolicy(ctx, m, H, greedy)
	return
}

// fitUniform is the baseline: the same fit on uniformly explored logs with
// a random even split for Θ_min, and the greedy plan.
func fitUniform(ctx context.Context, d *ingest.Dataset, ro Options) (*estimate.Result, *policy.Policy, error) {
	fit, splits, err := fitSplit(ctx, d, ro)
	if err != nil {
		return nil, nil, err
	}
	zero, err := zeroBonus(ctx, fit.Model, d, splits)
	if err != nil {
		return nil, nil, err
	}
	pol, _, err := policy.Plan(ctx, fit.Model, zero, ro.Plan)
	return fit, pol, err
}

// fitSplit fits d with ro's estimation options on a split of its
// episodes drawn from ro's estimation seed, and returns the fit and the
// split.
func fitSplit(ctx context.Context, d *ingest.Dataset, ro Options) (*estimate.Result, [][]int, error) {
	splits, err := split.Split(d.NumEpisodes(), d.Horizon, ro.Estimate.Seed)
	if err != nil {
		return nil, nil, err
	}
	eo := ro.Estimate
	eo.Splits = splits
	fit, err := estimate.Fit(ctx, d, eo)
	return fit, splits, err
}
