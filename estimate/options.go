package estimate

import (
	"math"

	"github.com/psrlcb/psrlcb/errkind"
	"github.com/psrlcb/psrlcb/internal/parallel"
)

// Sentinel errors of the estimate stage.
var (
	// ErrData is returned when the dataset cannot be fitted (no episodes,
	// mismatched lengths, non-finite rewards, bad splits).
	ErrData = errkind.New(errkind.Data, "estimate: invalid data")
	// ErrOptions is returned for option values out of range.
	ErrOptions = errkind.New(errkind.Options, "estimate: invalid options")
)

// Defaults of Options (the zero value of each field means the default).
const (
	// DefaultRestarts: one informed start from clustering plus random
	// starts; EM has poor local optima on tiger-like problems and a few
	// starts are cheap next to the data pass.
	DefaultRestarts = 4
	// DefaultMaxIter bounds EM iterations per start.
	DefaultMaxIter = 300
	// DefaultTol: EM stops when the relative improvement of the
	// log-likelihood falls below this; at 1e-6 further iterations change
	// the fitted probabilities by far less than their sampling error.
	DefaultTol = 1e-6
	// DefaultSmoothing is the additive (Dirichlet) pseudo-count added to
	// every cell of every distribution in the M-step. It keeps rows of
	// (state, action) pairs the data never reach valid (uniform)
	// distributions and keeps every probability positive, at a cost of
	// about Smoothing·cells in counts — negligible next to K·H.
	DefaultSmoothing = 1e-3
	// DefaultMaxRank is the largest rank tried when Rank is 0 (auto):
	// the search doubles the rank from 1 and stops earlier when the
	// held-out likelihood stops improving or its work budget is spent
	// (rank.go); 64 states cover the benchmark POMDPs of up to 60 hidden
	// states.
	DefaultMaxRank = 64
	// DefaultHeldOut is the fraction of episodes held out to choose the
	// rank.
	DefaultHeldOut = 0.2
	// DefaultDelta is δ in p_min = δ/(K·H·(|O||A|)^H) (Theorem for offline
	// PSR-LCB, Algorithm 2 of Huang, Liang, Yang (ICLR 2024, arXiv:2307.00405)).
	DefaultDelta = 0.05
	// MaxCategoricalRewards: rewards with at most this many distinct
	// values are modelled as categorical, otherwise as Gaussian. Logged
	// rewards of decision problems usually take a handful of values
	// (tiger: −100, −1, 10); sixteen leaves room for sums of a few terms.
	MaxCategoricalRewards = 16
	// MixTolerance is the precision of the bisection on the Θ_min mixing
	// weight.
	MixTolerance = 1e-6
)

// Dynamics values.
const (
	DynamicsStationary = "stationary" // one table shared by every step
	DynamicsPerStep    = "per-step"   // a table per step h
)

// Reporter receives progress. Calls may come from several goroutines but
// never at the same time (Fit serialises them).
type Reporter interface {
	// Iteration is called after each accepted E-step (every E-step of
	// plain EM) with the log-likelihood of the parameters of that
	// iteration.
	Iteration(row TraceRow)
}

type nopReporter struct{}

func (nopReporter) Iteration(TraceRow) {}

// Options configure Fit. The zero value means the documented defaults.
type Options struct {
	// Rank is the number of latent states r; 0 chooses it by held-out
	// log-likelihood (ChooseRank: doubling from 1, then bisection, on a
	// subsample of at most RankSampleEpisodes episodes, more on large
	// vocabularies).
	Rank int
	// MaxRank bounds the ranks tried when Rank is 0 (default
	// DefaultMaxRank, capped by the number of training episodes, the
	// logs' distinct histories and the memory limit; see MaxRankCause).
	MaxRank int
	// MaxRankCause is set by Fit and ChooseRank when they lowered Rank or
	// MaxRank below what was asked: what bounds the rank (the result's
	// Options carry it).
	MaxRankCause string
	// RankBudget bounds the work of the rank search in E-step cell
	// updates (episodes × steps × S² summed over its E-steps; default
	// DefaultRankBudget). No new rank is started once it is spent.
	RankBudget float64
	// GrowBudget bounds the predicted work, in the same units, of the
	// rank search's growth on all the logs when its sample held only
	// part of them (estimate/rankgrow.go; default DefaultGrowBudget, a
	// negative value turns the growth off).
	GrowBudget float64
	// HeldOut is the fraction of episodes held out when choosing the rank
	// (default DefaultHeldOut); the chosen rank is then refitted on all
	// episodes.
	HeldOut float64

	// Dynamics is DynamicsStationary (default) or DynamicsPerStep.
	Dynamics string

	// Form is the model's parameterisation: FormAuto (default: the full
	// form while its step kernel stays under fullFormCells numbers, the
	// compact form past it), FormFull or FormCompact (see Model.Compact).
	Form string
	// MemoryLimit is the memory, in bytes, the fit may plan to use
	// (default DefaultMemoryLimit(); negative: no check). Fit stops with
	// ErrTooLarge before allocating when its estimate is above it.
	MemoryLimit int64

	// Restarts is the number of EM starts (default DefaultRestarts): start
	// 0 is the informed start (clustering of windowed observation and
	// reward signatures), the others alternate perturbed informed starts
	// and random starts. The best training log-likelihood wins.
	Restarts int
	// Start, when set, replaces the informed start of start 0 (a warm
	// start, e.g. a previous fit of the same logs). Its shape must match
	// the data and the rank; its States fixes the rank when Rank is 0.
	Start *Model
	// startPairs is the involution of Start's copied states when Start
	// is a split of a smaller model (splitPairs); EM then tries to leave
	// the copies' saddle point before it stops (saddle.go).
	startPairs []int
	// sampleEpisodes, when positive, replaces the rank search's sample
	// size (rankSampleSize), for tests of the growth on all the logs.
	sampleEpisodes int
	// MaxIter bounds EM iterations per start (default DefaultMaxIter).
	// An iteration is one E-step, whether of an EM step or of an
	// extrapolated point.
	MaxIter int
	// Tol is the relative log-likelihood improvement of one EM step below
	// which EM stops (default DefaultTol). Accelerated EM measures it on
	// the penalised log-likelihood (log-likelihood plus the log of the
	// smoothing prior), which EM with smoothing never lowers, between an
	// accepted point and the EM step from it; plain EM on the
	// log-likelihood between successive iterations.
	Tol float64
	// PlainEM turns off the SQUAREM acceleration of EM (accel.go) and
	// runs plain EM steps, the reference the accelerated run agrees with.
	// The accelerated run targets the same fixed point in 2–4× fewer
	// E-steps on slowly converging fits. Its trace skips the iteration
	// numbers of rejected extrapolations, and with smoothing it stops on
	// the penalised log-likelihood (see Tol).
	PlainEM bool
	// Smoothing is the additive pseudo-count of the M-step (default
	// DefaultSmoothing); a negative value means none (exact maximum
	// likelihood; rows with no data become uniform).
	Smoothing float64

	// TestLength is m, the length of the core tests of the prediction
	// features (default 1); it is stored in Model.TestLength.
	TestLength int

	// Splits are the subsets D_0..D_{H−1} of episode indexes (package
	// split). Θ_min is checked on the length-h prefixes of the episodes in
	// Splits[h]. When nil, every prefix τ_1..τ_H of every episode is
	// checked, a stronger requirement.
	Splits [][]int
	// Delta is δ of the default p_min (default DefaultDelta).
	Delta float64
	// LogPMin overrides ln p_min when non-zero and not NaN; it must be
	// negative. Otherwise ln p_min = ln δ − ln K − ln H − H·ln(|O||A|).
	LogPMin float64
	// SkipThetaMin leaves the fit unconstrained (the check is still
	// reported).
	SkipThetaMin bool

	// Seed drives every random choice (held-out draw, clustering, random
	// starts).
	Seed uint64
	// Workers is the number of goroutines (default GOMAXPROCS). Results
	// do not depend on it.
	Workers int
	// Reporter receives progress (default: none).
	Reporter Reporter
	// EStepper, when set, runs every E-step's pass over the episodes
	// instead of the in-process workers (for example as an Apache Beam
	// pipeline, see EStepper). Nil: in process.
	EStepper EStepper
}

// Check says whether the options are valid without data: nil, or an
// error matching ErrOptions naming the first invalid one. Fit checks the
// same rules (and those that need the data) before fitting.
func (o Options) Check() error {
	_, err := o.withDefaults()
	return err
}

func (o Options) withDefaults() (Options, error) {
	for _, f := range defaultGroups {
		if err := f(&o); err != nil {
			return o, err
		}
	}
	return o, nil
}

// defaultGroups fills in and checks the options group by group, in the
// order their errors are reported: the rank search's, the model form's,
// EM's, the features' and Θ_min's, and the run's own.
var defaultGroups = []func(*Options) error{
	(*Options).rankDefaults, (*Options).maxRankDefaults, (*Options).budgetDefaults, (*Options).heldOutDefaults,
	(*Options).dynamicsDefaults, (*Options).formDefaults,
	(*Options).restartDefaults, (*Options).maxIterDefaults,
	(*Options).tolDefaults, (*Options).smoothingDefaults,
	(*Options).testLengthDefaults, (*Options).deltaDefaults,
	(*Options).logPMinDefaults, (*Options).runDefaults,
}

// rankDefaults: the rank, chosen by the rank search when 0.
func (o *Options) rankDefaults() error {
	if o.Rank < 0 {
		return errorf(ErrOptions, "rank %d is negative", o.Rank)
	}
	return nil
}

// maxRankDefaults: the rank search's largest rank.
func (o *Options) maxRankDefaults() error {
	if o.MaxRank == 0 {
		o.MaxRank = DefaultMaxRank
	}
	if o.MaxRank < 0 {
		return errorf(ErrOptions, "max rank %d is negative", o.MaxRank)
	}
	return nil
}

// budgetDefaults: the rank search's work budgets.
func (o *Options) budgetDefaults() error {
	if o.RankBudget == 0 {
		o.RankBudget = DefaultRankBudget
	}
	if !(o.RankBudget > 0) || math.IsInf(o.RankBudget, 0) {
		return errorf(ErrOptions, "rank search budget %v is not a positive number", o.RankBudget)
	}
	if o.GrowBudget == 0 {
		o.GrowBudget = DefaultGrowBudget
	}
	if math.IsNaN(o.GrowBudget) || math.IsInf(o.GrowBudget, 0) {
		return errorf(ErrOptions, "rank growth budget %v is not a number", o.GrowBudget)
	}
	return nil
}

// heldOutDefaults: the rank search's held-out fraction.
func (o *Options) heldOutDefaults() error {
	if o.HeldOut == 0 {
		o.HeldOut = DefaultHeldOut
	}
	if !(o.HeldOut > 0 && o.HeldOut < 1) {
		return errorf(ErrOptions, "held-out fraction %v is not in (0,1)", o.HeldOut)
	}
	return nil
}

// dynamicsDefaults: the dynamics, stationary unless set.
func (o *Options) dynamicsDefaults() error {
	switch o.Dynamics {
	case "":
		o.Dynamics = DynamicsStationary
	case DynamicsStationary, DynamicsPerStep:
	default:
		return errorf(ErrOptions, "dynamics %q is not %q or %q", o.Dynamics, DynamicsStationary, DynamicsPerStep)
	}
	return nil
}

// formDefaults: the model form, chosen automatically unless set.
func (o *Options) formDefaults() error {
	switch o.Form {
	case "":
		o.Form = FormAuto
	case FormAuto, FormFull, FormCompact:
	default:
		return errorf(ErrOptions, "model form %q is not %q, %q or %q", o.Form, FormAuto, FormFull, FormCompact)
	}
	return nil
}

// restartDefaults: the number of EM's starts.
func (o *Options) restartDefaults() error {
	if o.Restarts == 0 {
		o.Restarts = DefaultRestarts
	}
	if o.Restarts < 0 {
		return errorf(ErrOptions, "restarts %d is negative", o.Restarts)
	}
	return nil
}

// maxIterDefaults: the number of EM iterations of a start.
func (o *Options) maxIterDefaults() error {
	if o.MaxIter == 0 {
		o.MaxIter = DefaultMaxIter
	}
	if o.MaxIter < 0 {
		return errorf(ErrOptions, "max iterations %d is negative", o.MaxIter)
	}
	return nil
}

// tolDefaults: EM's convergence tolerance.
func (o *Options) tolDefaults() error {
	if o.Tol == 0 {
		o.Tol = DefaultTol
	}
	if !(o.Tol > 0) {
		return errorf(ErrOptions, "tolerance %v is not positive", o.Tol)
	}
	return nil
}

// smoothingDefaults: EM's smoothing, where a negative value means none.
func (o *Options) smoothingDefaults() error {
	if o.Smoothing == 0 {
		o.Smoothing = DefaultSmoothing
	}
	if o.Smoothing < 0 {
		o.Smoothing = 0
	}
	if math.IsNaN(o.Smoothing) || math.IsInf(o.Smoothing, 0) {
		return errorf(ErrOptions, "smoothing %v is not finite", o.Smoothing)
	}
	return nil
}

// testLengthDefaults: the features' test length.
func (o *Options) testLengthDefaults() error {
	if o.TestLength == 0 {
		o.TestLength = 1
	}
	if o.TestLength < 0 {
		return errorf(ErrOptions, "test length %d is negative", o.TestLength)
	}
	return nil
}

// deltaDefaults: the confidence level δ.
func (o *Options) deltaDefaults() error {
	if o.Delta == 0 {
		o.Delta = DefaultDelta
	}
	if !(o.Delta > 0 && o.Delta < 1) {
		return errorf(ErrOptions, "delta %v is not in (0,1)", o.Delta)
	}
	return nil
}

// logPMinDefaults: Θ_min's ln p_min.
func (o *Options) logPMinDefaults() error {
	if math.IsNaN(o.LogPMin) {
		o.LogPMin = 0
	}
	if o.LogPMin > 0 || math.IsInf(o.LogPMin, 0) {
		return errorf(ErrOptions, "ln p_min %v must be finite and negative", o.LogPMin)
	}
	return nil
}

// runDefaults: the run's own options, the memory EM's starts may plan,
// the workers and the reporter.
func (o *Options) runDefaults() error {
	if o.MemoryLimit == 0 {
		o.MemoryLimit = DefaultMemoryLimit()
	}
	o.Workers = parallel.Workers(o.Workers)
	if o.Reporter == nil {
		o.Reporter = nopReporter{}
	}
	return nil
}

// TraceRow is one EM iteration: the log-likelihood of the parameters at
// iteration Iter of start Restart when fitting rank Rank on Data
// ("train" for the rank selection fit, "grow" for its growth on all the
// logs, rankgrow.go, "compact" for the growth's compact-form starts on
// the rank selection's episodes, "all" for the final fit, "sample" for the starts
// run on a sample of large logs, see fitSampleEpisodes). Iter
// counts E-steps; with acceleration the E-step of a rejected
// extrapolation has no row, so Iter may skip a number. The rows of a
// start do not decrease without smoothing; with it, the penalised
// log-likelihood does not, and the log-likelihood can dip by the prior's
// weight (none measured on categorical rewards; up to 2e-4 relative on
// Gaussian rewards of sparsely visited cells).
type TraceRow struct {
	Data    string  `json:"data"`
	Rank    int     `json:"rank"`
	Restart int     `json:"restart"`
	Iter    int     `json:"iter"`
	LogLik  float64 `json:"loglik"`
}

// RankRow is one candidate of the automatic rank choice.
type RankRow struct {
	Rank        int     `json:"rank"`
	TrainLogLik float64 `json:"train_loglik"`
	// HeldOutLogLik is the log-likelihood of the held-out episodes.
	HeldOutLogLik float64 `json:"heldout_loglik"`
	Chosen        bool    `json:"chosen"`
	// Form is the model form fitted (FormFull or FormCompact), Episodes
	// the number of episodes it was trained on and HeldOutEpisodes the
	// number HeldOutLogLik sums over: the search's sample, or all the
	// logs when the search grew its model on them (estimate/rankgrow.go).
	Form            string `json:"form"`
	Episodes        int    `json:"episodes"`
	HeldOutEpisodes int    `json:"heldout_episodes"`
}

// ThetaMin reports the Θ_min check and the projection into it.
type ThetaMin struct {
	// LogPMin is ln p_min.
	LogPMin float64 `json:"log_pmin"`
	// Prefixes is the number of prefixes checked.
	Prefixes int `json:"prefixes"`
	// SlackBefore and Slack are min over prefixes of
	// ln P_θ(o_{1:h}|a_{1:h}) + ln π^b(a_{1:h}|o_{1:h}) − ln p_min,
	// before and after the projection (≥ 0 means inside Θ_min).
	SlackBefore float64 `json:"slack_before"`
	Slack       float64 `json:"slack"`
	// Binding is the number of prefixes that violated the constraint
	// under the unconstrained fit.
	Binding int `json:"binding"`
	// Unsatisfiable is the number of prefixes the floor model cannot lift
	// above p_min either (their behaviour probability alone is too
	// small); they are left out of the projection.
	Unsatisfiable int `json:"unsatisfiable"`
	// MixWeight is w of θ = (1−w)·θ̂ + w·θ_floor (0 when nothing binds).
	MixWeight float64 `json:"mix_weight"`
	// DeltaLogLik is the change of the training log-likelihood caused by
	// the projection (≤ 0).
	DeltaLogLik float64 `json:"delta_loglik"`
}

// Result is the output of Fit.
type Result struct {
	// Model is θ̂, prepared (Prepare has run) and inside Θ_min unless
	// SkipThetaMin.
	Model *Model
	// LogLik is the training log-likelihood of Model over all episodes,
	// ln Π_k P(o_{1:H}, r_{1:H} | a_{1:H}) (rewards as probabilities when
	// categorical, densities when Gaussian).
	LogLik float64
	// UnconstrainedLogLik is the log-likelihood of the EM fit before the
	// Θ_min projection.
	UnconstrainedLogLik float64
	// Steps is K·H, to turn LogLik into a per-step figure.
	Steps int

	// HeldOutLogLik is the held-out log-likelihood of the chosen rank
	// when the rank was chosen automatically (NaN otherwise).
	HeldOutLogLik float64
	// RankTable has one row per rank the automatic search tried, in
	// increasing rank.
	RankTable []RankRow
	// RankSearchEpisodes is the number of episodes of the rank search's
	// subsample (0 when the rank was given).
	RankSearchEpisodes int

	// Trace holds every EM iteration of every start, in (data, rank,
	// restart, iter) order.
	Trace []TraceRow
	// RestartLogLiks are the final log-likelihoods of the starts of the
	// final fit (on logs of more than fitSampleEpisodes episodes, those of
	// the starts other than BestRestart are on the sample, and a warm
	// start is the only start), in start order; BestRestart is the one
	// kept.
	RestartLogLiks []float64
	BestRestart    int
	// Iterations is the iteration (E-step) number of the kept start's
	// returned parameters; Converged says whether it met Tol before
	// MaxIter.
	Iterations int
	Converged  bool

	ThetaMin ThetaMin
	// BehaviorEstimated says the logs carried no propensities and π^b was
	// estimated (EstimateBehavior); Propensity are the per-step
	// propensities used (K·H, as Dataset.Propensity).
	BehaviorEstimated bool
	Propensity        []float64

	// Options are the options used, with defaults filled in (Splits and
	// Reporter cleared).
	Options Options
}
