package explore

import (
	"context"
	"fmt"
	"math"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
)

// Defaults of Options.
const (
	// DefaultAlpha is the UCB coefficient α of eq. (3) of Huang, Liang, Yang (ICLR 2024, arXiv:2307.00405) used when
	// Options.Alpha is 0. With λ = 1 a feature direction seen n times has
	// ‖ψ̄̂‖²_{U⁻¹} ≈ 1/(n+1), so b̂ ≈ α·sqrt(H/n); α = 1 makes the bonus the
	// order of the standard error of an H-step probability estimated from n
	// samples per step, which on the validated models (docs/exploration.md)
	// upper-bounds the true total-variation error of θ̂ from the first
	// rounds on. The theoretical α of Theorem "online PSR" saturates b̂ at 1.
	DefaultAlpha = 1.0
	// DefaultEpsilon is ε of the termination rule V_{θ̂,b̂}^{π^k} ≤ ε/2
	// (Algorithm 1, line 10): a model within 0.2 in total variation of the
	// truth for every policy is accurate enough to rank policies whose
	// values differ by more than 0.2 of the return range.
	DefaultEpsilon = 0.2
)

// Options configure Round. The zero value means the documented defaults.
type Options struct {
	// Estimate configures the fit of θ̂^k; its Splits are set by Round
	// (D_{h−1}^k = the episodes that switched to uniform actions at step
	// h) and its Seed is used as given.
	Estimate estimate.Options
	// Lambda is λ of Û_h^k (default pessimism.DefaultLambda).
	Lambda float64
	// Alpha is α of b̂^k (default DefaultAlpha); it must be positive.
	Alpha float64
	// Epsilon is ε of the termination rule (default DefaultEpsilon).
	Epsilon float64
	// Plan configures the greedy planner (policy.Plan with α = 0).
	Plan policy.PlanOptions
	// BonusBudget bounds the bonus planner's tree (default
	// DefaultPlanBudget).
	BonusBudget int64
	// Workers bounds the goroutines of the bonus build (default
	// GOMAXPROCS); results do not depend on it.
	Workers int
}

// withDefaults is o with the defaults of λ, α and ε in place of zeros,
// checked.
func (o Options) withDefaults() (Options, error) {
	if o.Lambda == 0 {
		o.Lambda = pessimism.DefaultLambda
	}
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if o.Epsilon == 0 {
		o.Epsilon = DefaultEpsilon
	}
	return o, o.check()
}

// check refuses a λ, α or ε that is not positive and finite.
func (o Options) check() error {
	if !(o.Lambda > 0) || math.IsInf(o.Lambda, 0) {
		return fmt.Errorf("%w: lambda %v must be positive", ErrOptions, o.Lambda)
	}
	if !(o.Alpha > 0) || math.IsInf(o.Alpha, 0) {
		return fmt.Errorf("%w: alpha %v must be positive", ErrOptions, o.Alpha)
	}
	if !(o.Epsilon > 0) || math.IsInf(o.Epsilon, 0) {
		return fmt.Errorf("%w: epsilon %v must be positive", ErrOptions, o.Epsilon)
	}
	return nil
}

// Result is the outcome of one round of PSR-UCB.
type Result struct {
	// Fit is θ̂^k with its fit statistics.
	Fit *estimate.Result
	// Bonus is b̂^k (with Alpha set).
	Bonus *pessimism.Bonus
	// Splits[h] lists the episodes of D_h^k (explore_step = h+1).
	Splits [][]int
	// Explore is π^k = argmax_π V_{θ̂^k,b̂^k}^π, the policy the next round
	// follows before switching to uniform actions.
	Explore *policy.Policy
	// BonusValue is V_{θ̂^k,b̂^k}^{π^k}, the termination statistic.
	BonusValue float64
	// Threshold is ε/2; Terminated says BonusValue ≤ Threshold.
	Threshold  float64
	Terminated bool
	Epsilon    float64
	Alpha      float64
	// Greedy is argmax_π V_{θ̂^k,R}^π (policy.Plan with α = 0): the output
	// policy when Terminated, computed every round for monitoring.
	Greedy      *policy.Policy
	GreedyStats *policy.PlanStats
}

// Splits groups episodes by switch step: D_{h−1} holds the episodes whose
// exploration switched to uniform actions at step h (steps[k] = h,
// 1 ≤ h ≤ H), in episode order. It is the per-step dataset of Algorithm 1,
// line 5.
func Splits(steps []int, H int) ([][]int, error) {
	out := make([][]int, H)
	for k, h := range steps {
		if h < 1 || h > H {
			return nil, fmt.Errorf("%w: episode %d has explore_step %d outside 1..%d", ErrData, k, h, H)
		}
		out[h-1] = append(out[h-1], k)
	}
	return out, nil
}

// Round runs lines 7–10 of Algorithm 1 on the logs collected so far:
// steps[k] is the switch step of episode k of d. It fits θ̂^k under
// Θ_min^k, builds b̂^k on the splits D_h^k, plans π^k and the greedy
// policy, and evaluates the termination rule.
func Round(ctx context.Context, d *ingest.Dataset, steps []int, opts Options) (*Result, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	splits, err := roundSplits(d, steps)
	if err != nil {
		return nil, err
	}
	fit, bonus, err := fitBonus(ctx, d, splits, opts)
	if err != nil {
		return nil, err
	}
	r := &Result{Fit: fit, Bonus: bonus, Splits: splits, Epsilon: opts.Epsilon, Alpha: opts.Alpha}
	if err := r.plan(ctx, opts); err != nil {
		return nil, err
	}
	return r, nil
}

// plan plans r's exploration policy on the bonus, whose value against
// ε/2 decides termination, and the greedy policy of the model at α = 0.
func (r *Result) plan(ctx context.Context, opts Options) error {
	var err error
	if r.Explore, r.BonusValue, err = PlanBonus(ctx, r.Fit.Model, r.Bonus, opts.BonusBudget); err != nil {
		return err
	}
	r.Threshold = opts.Epsilon / 2
	r.Terminated = r.BonusValue <= opts.Epsilon/2 // Algorithm 1, line 10
	r.Greedy, r.GreedyStats, err = policy.Plan(ctx, r.Fit.Model, r.Bonus.WithAlpha(0), opts.Plan)
	return err
}

// roundSplits checks that d has episodes, one switch step each, and
// groups them by switch step (Splits).
func roundSplits(d *ingest.Dataset, steps []int) ([][]int, error) {
	if d == nil || d.NumEpisodes() == 0 {
		return nil, fmt.Errorf("%w: no episodes", ErrData)
	}
	if len(steps) != d.NumEpisodes() {
		return nil, fmt.Errorf("%w: %d switch steps for %d episodes", ErrData, len(steps), d.NumEpisodes())
	}
	return Splits(steps, d.Horizon)
}

// fitBonus fits θ̂^k on d under the splits' Θ_min^k and builds b̂^k on the
// splits D_h^k, scaled by opts.Alpha.
func fitBonus(ctx context.Context, d *ingest.Dataset, splits [][]int, opts Options) (*estimate.Result, *pessimism.Bonus, error) {
	eo := opts.Estimate
	eo.Splits = splits
	fit, err := estimate.Fit(ctx, d, eo)
	if err != nil {
		return nil, nil, err
	}
	bonus, err := pessimism.Build(ctx, fit.Model, d, splits, pessimism.Options{Lambda: opts.Lambda, Workers: opts.Workers})
	if err != nil {
		return nil, nil, err
	}
	return fit, bonus.WithAlpha(opts.Alpha), nil
}

// zeroBonus is a bonus with α = 0, for greedy planning with policy.Plan.
func zeroBonus(ctx context.Context, m *estimate.Model, d *ingest.Dataset, splits [][]int) (*pessimism.Bonus, error) {
	b, err := pessimism.Build(ctx, m, d, splits, pessimism.Options{})
	if err != nil {
		return nil, err
	}
	return b.WithAlpha(0), nil
}
