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
	H := opts.Horizon
	if H <= 0 {
		return nil, fmt.Errorf("%w: horizon %d must be positive", ErrOptions, H)
	}
	if opts.PerStep == 0 {
		opts.PerStep = DefaultPerStep
	}
	if opts.MaxRounds == 0 {
		opts.MaxRounds = DefaultMaxRounds
	}
	if opts.PerStep < 0 || opts.MaxRounds < 0 {
		return nil, fmt.Errorf("%w: episodes per step %d and rounds %d must be positive", ErrOptions, opts.PerStep, opts.MaxRounds)
	}
	vStar, optPol, err := pomdp.OptimalContext(ctx, m, H)
	if err != nil {
		return nil, err
	}
	beh, err := pomdp.ParseBehavior("uniform", m)
	if err != nil {
		return nil, err
	}
	vUni, err := pomdp.BehaviorValueContext(ctx, m, H, beh)
	if err != nil {
		return nil, err
	}
	res := &OnlineResult{}
	var base *pomdp.Logs
	var prev *policy.Policy
	for k := 1; k <= opts.MaxRounds; k++ {
		batch, steps, err := Collect(ctx, m, H, prev, opts.PerStep, k, opts.Seed)
		if err != nil {
			return nil, err
		}
		res.Logs = Append(res.Logs, batch)
		res.Steps = append(res.Steps, steps...)
		for range steps {
			res.Rounds = append(res.Rounds, k)
		}
		d, err := res.Logs.Dataset()
		if err != nil {
			return nil, err
		}
		ro := opts.Round
		ro.Estimate.Seed = opts.Seed ^ uint64(k)*0x9e3779b97f4a7c15
		r, err := Round(ctx, d, res.Steps, ro)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", k, err)
		}
		row := RoundRow{
			Round: k, Episodes: len(steps), TotalEpisodes: len(res.Steps),
			BonusValue: r.BonusValue, Threshold: r.Threshold, Terminated: r.Terminated,
			Rank: r.Fit.Model.States, LogLik: r.Fit.LogLik, MixWeight: r.Fit.ThetaMin.MixWeight,
			OptimalValue: vStar, UniformValue: vUni,
			BaselineRegret: math.NaN(), BaselineTVUniform: math.NaN(), BaselineTVOptimal: math.NaN(),
		}
		if row.TVUniform, row.TVOptimal, row.GreedyValue, err = truthFigures(ctx, m, H, r.Fit.Model, r.Greedy, optPol); err != nil {
			return nil, err
		}
		row.Regret = vStar - row.GreedyValue
		row.NormRegret = normRegret(row.Regret, vStar, vUni)
		if opts.Baseline {
			more, err := pomdp.Simulate(ctx, m, H, len(steps), beh, opts.Seed^0x5bd1e995^uint64(k)<<20)
			if err != nil {
				return nil, err
			}
			base = Append(base, more)
			if err := baselineRound(ctx, m, H, base, ro, optPol, vStar, &row); err != nil {
				return nil, fmt.Errorf("round %d baseline: %w", k, err)
			}
		}
		res.Rows = append(res.Rows, row)
		res.Last = r
		if opts.Progress != nil {
			opts.Progress(row)
		}
		if r.Terminated {
			break
		}
		prev = r.Explore
	}
	return res, nil
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
	splits, err := split.Split(d.NumEpisodes(), d.Horizon, ro.Estimate.Seed)
	if err != nil {
		return nil, nil, err
	}
	eo := ro.Estimate
	eo.Splits = splits
	fit, err := estimate.Fit(ctx, d, eo)
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
