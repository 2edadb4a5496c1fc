package report

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"sort"
	"time"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/split"
)

// FitOptions configure Fit. The zero value runs the documented defaults:
// automatic rank, stationary dynamics, α chosen on held-out episodes from
// pessimism.AutoAlphas, λ = 1.
type FitOptions struct {
	Estimate estimate.Options
	// Lambda is λ of U_h (default pessimism.DefaultLambda).
	Lambda float64
	// Alpha is the parsed --alpha; the zero value (AlphaFixed with no
	// values) means "auto": the candidates pessimism.AutoAlphas.
	Alpha pessimism.AlphaSpec
	// Gamma is γ of the paper's α̂ (AlphaTheory only).
	Gamma float64
	// SelectHeldOut is the fraction of episodes held out from fitting to
	// choose α among several candidates (default DefaultSelectHeldOut).
	SelectHeldOut float64
	// PlanBudget is the node budget of the exact planner (default
	// policy.DefaultBudget).
	PlanBudget int64
	// Seed drives the split, the held-out draws and EM.
	Seed uint64
	// Workers bounds the goroutines (default GOMAXPROCS); results do not
	// depend on it.
	Workers int
	// Progress receives progress (default: none).
	Progress Progress
}

// DefaultSelectHeldOut is the share of episodes kept out of the fit to
// choose α: one in five leaves most data to the model while the held-out
// importance-weighted estimate still has hundreds of episodes on logs of a
// few thousand.
const DefaultSelectHeldOut = 0.2

// Outcome is everything Fit produced.
type Outcome struct {
	Policy    *policy.Policy
	Model     *estimate.Model
	Fit       *estimate.Result
	Bonus     *pessimism.Bonus
	Plan      *policy.PlanStats
	Selection *policy.Selection // nil unless α was chosen among candidates
	Theory    *pessimism.Theory // set for α = theory
	Alpha     float64
	Splits    [][]int
	Run       *Run
	// RewardCheck is the model check on rewards (held out when α was
	// chosen among candidates; see CheckRewards).
	RewardCheck *RewardCheck
}

type stageTimer struct {
	prog  Progress
	times map[string]float64
	name  string
	start time.Time
}

func (s *stageTimer) begin(name string, total int64) {
	s.name, s.start = name, time.Now()
	s.prog.StartStage(name, total)
}

func (s *stageTimer) end() {
	d := time.Since(s.start)
	s.times[s.name] += d.Seconds()
	s.prog.EndStage(s.name, d)
}

// emProgress forwards EM iterations to a Progress.
type emProgress struct{ p Progress }

func (e emProgress) Iteration(r estimate.TraceRow) {
	e.p.Advance(1, fmt.Sprintf("%s rank %d start %d iter %d loglik %.6g", r.Data, r.Rank, r.Restart, r.Iter, r.LogLik))
}

// Fit runs split → estimate → pessimism → policy on a validated dataset and
// gathers every figure of the report (Algorithm 2 of the paper). inputs
// are the log files, hashed into the manifest (may be nil).
func Fit(ctx context.Context, d *ingest.Dataset, inputs []string, opts FitOptions) (*Outcome, error) {
	prog := opts.Progress
	if prog == nil {
		prog = NopProgress{}
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	K, H := d.NumEpisodes(), d.Horizon
	if K == 0 {
		return nil, fmt.Errorf("%w: no valid episodes to fit", ingest.ErrEmpty)
	}
	st := &stageTimer{prog: prog, times: map[string]float64{}}
	out := &Outcome{}

	alpha := opts.Alpha
	if alpha.Mode == pessimism.AlphaFixed && len(alpha.Values) == 0 {
		alpha = pessimism.AlphaSpec{Mode: pessimism.AlphaList, Values: pessimism.AutoAlphas}
	}
	heldFrac := opts.SelectHeldOut
	if heldFrac <= 0 || heldFrac >= 1 {
		heldFrac = DefaultSelectHeldOut
	}
	eopts := opts.Estimate
	eopts.Seed = opts.Seed
	eopts.Workers = workers
	eopts.Reporter = emProgress{prog}
	popts := pessimism.Options{Lambda: opts.Lambda, Workers: workers}
	planOpts := policy.PlanOptions{Workers: workers, Budget: opts.PlanBudget}

	// α among candidates: fit on a training part, plan one policy per α
	// and pick by the importance-weighted lower bound on the held-out part.
	if alpha.Mode == pessimism.AlphaList && len(alpha.Values) > 1 {
		st.begin("select-α", 0)
		perm := split.Permutation(K, opts.Seed^0x5e1ec7)
		nHeld := int(math.Round(heldFrac * float64(K)))
		if nHeld < 1 || K-nHeld < H {
			return nil, fmt.Errorf("%w: %d episodes are too few to hold out %.0f%% for choosing α; give --alpha a single value", ingest.ErrEmpty, K, 100*heldFrac)
		}
		heldIdx := append([]int(nil), perm[:nHeld]...)
		trainIdx := append([]int(nil), perm[nHeld:]...)
		sort.Ints(heldIdx)
		sort.Ints(trainIdx)
		train, held := d.Subset(trainIdx), d.Subset(heldIdx)
		trainSplits, err := split.Split(train.NumEpisodes(), H, opts.Seed)
		if err != nil {
			return nil, err
		}
		to := eopts
		to.Splits = trainSplits
		tfit, err := estimate.Fit(ctx, train, to)
		if err != nil {
			return nil, err
		}
		tb, err := pessimism.Build(ctx, tfit.Model, train, trainSplits, popts)
		if err != nil {
			return nil, err
		}
		out.RewardCheck = CheckRewards(tfit.Model, held, true)
		if !held.HasPropensity() {
			// Held-out importance weights need π^b: the fit's estimate.
			held = withPropensity(held, heldIdx, estimate.EstimateBehavior(d), H)
		}
		sel, err := policy.Select(ctx, tfit.Model, tb, held, alpha.Values, policy.SelectOptions{Plan: planOpts})
		if err != nil {
			return nil, err
		}
		out.Selection = sel
		out.Alpha = sel.Alpha()
		// Warm-start the final fit from the training fit.
		eopts.Start = tfit.Model
		eopts.Rank = tfit.Model.States
		st.end()
	} else if alpha.Mode == pessimism.AlphaList || alpha.Mode == pessimism.AlphaFixed {
		out.Alpha = alpha.Values[0]
	}

	st.begin("split", 0)
	splits, err := split.Split(K, H, opts.Seed)
	if err != nil {
		return nil, err
	}
	out.Splits = splits
	st.end()

	st.begin("estimate", 0)
	eopts.Splits = splits
	fit, err := estimate.Fit(ctx, d, eopts)
	if err != nil {
		return nil, err
	}
	out.Fit, out.Model = fit, fit.Model
	st.end()

	st.begin("pessimism", 0)
	bonus, err := pessimism.Build(ctx, fit.Model, d, splits, popts)
	if err != nil {
		return nil, err
	}
	if alpha.Mode == pessimism.AlphaTheory {
		iota, err := pessimism.Iota(withPropensityAll(d, fit), fit.Model.TestLength)
		if err != nil {
			return nil, err
		}
		maxDim := 0
		for h := 0; h < H; h++ {
			maxDim = max(maxDim, fit.Model.FeatureDim(h))
		}
		th, err := pessimism.TheoryAlpha(pessimism.TheoryParams{
			Gamma: opts.Gamma, Delta: fit.Options.Delta, Lambda: bonusLambda(opts.Lambda), Iota: iota,
			Episodes: K, Horizon: H, Obs: d.NumObs(), Actions: d.NumActions(), Rank: fit.Model.States,
			TestLength: fit.Model.TestLength, MaxDim: maxDim,
		})
		if err != nil {
			return nil, err
		}
		out.Theory = &th
		out.Alpha = th.Alpha
	}
	bonus = bonus.WithAlpha(out.Alpha)
	out.Bonus = bonus
	st.end()

	st.begin("policy", 0)
	pol, stats, err := policy.Plan(ctx, fit.Model, bonus, planOpts)
	if err != nil {
		return nil, err
	}
	out.Policy, out.Plan = pol, stats
	st.end()

	st.begin("report", 0)
	run, err := buildRun(ctx, d, inputs, opts, out, workers)
	if err != nil {
		return nil, err
	}
	st.end()
	run.Manifest.StageTimes = st.times
	out.Run = run
	return out, nil
}

func bonusLambda(l float64) float64 {
	if l <= 0 {
		return pessimism.DefaultLambda
	}
	return l
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

// withPropensityAll returns d with the propensities the fit used (the
// logged ones, or the estimated behaviour policy).
func withPropensityAll(d *ingest.Dataset, fit *estimate.Result) *ingest.Dataset {
	if d.HasPropensity() || fit.Propensity == nil {
		return d
	}
	c := *d
	c.Propensity = fit.Propensity
	return &c
}

// runID is a content hash of the inputs, parameters and seed, so the same
// run gives the same tables byte for byte.
func runID(inputs []InputFile, params map[string]any, seed uint64) string {
	h := sha256.New()
	for _, in := range inputs {
		fmt.Fprintf(h, "%s\n", in.SHA256)
	}
	b, _ := json.Marshal(params)
	h.Write(b)
	fmt.Fprintf(h, "%d", seed)
	return hex.EncodeToString(h.Sum(nil))[:16]
}
