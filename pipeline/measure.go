package pipeline

import (
	"context"
	"math"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/report"
)

// The measure phase: what the report shows of a finished fit that has to
// be computed from the logs. The planner's value of the policy (exact
// when the plan is; otherwise it carries the planner's stated gap, as
// policy.ModelValue would enumerate every observation sequence, |O|^H of
// them), the importance-weighted estimate, coverage and the weights of
// every episode, the bonus terms of every episode, each episode's
// log-likelihoods, the running C∞ and the logged propensities per step,
// the behaviour's mean return, the logs' summary, the logged visits of
// the policy's tree with the departures from the most logged action, and
// the reward check. report.Build only tabulates them.

// measure computes the report's figures of out on the logs d. scorer,
// when not nil, computes the per-episode log-likelihoods (a data-parallel
// engine: psrbeam); workers bounds the goroutines otherwise. The figures
// do not depend on either.
func measure(ctx context.Context, d *ingest.Dataset, out *report.Outcome, scorer estimate.EpisodeScorer, workers int) (*report.Figures, error) {
	f := &report.Figures{DP: out.Fit.WithPropensity(d), Val: reportedValue(out)}
	phases := []func() error{
		func() error { return weighEpisodes(f, out) },
		func() (err error) { f.Norms, err = out.Bonus.Episodes(ctx, d, workers); return err },
		func() error { describeLogs(f, out, d); return nil },
		func() error { inSampleRewardCheck(out, d); return nil },
		func() error { return compareWithBehaviour(f, out, d) },
		func() (err error) {
			f.LogLik, f.RewardLogLik, err = scoreEpisodes(ctx, out.Model, d, scorer, workers)
			return err
		},
	}
	for _, phase := range phases {
		if err := phase(); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// reportedValue is the policy's value the run reports: the planner's, or
// the cross-fitted bound when the pipeline corrected it (out.Bound).
func reportedValue(out *report.Outcome) policy.Value {
	if out.Bound != nil {
		return *out.Bound
	}
	return policy.Value{Reward: out.Plan.ValueReward, Bonus: out.Plan.ValueBonus, LCB: out.Plan.ValueReward - out.Plan.ValueBonus}
}

// weighEpisodes is the importance-weighted estimate of the policy's value,
// its coverage and every episode's weight, on the logs with the
// propensities the fit used (f.DP).
func weighEpisodes(f *report.Figures, out *report.Outcome) (err error) {
	m, pol, dp := out.Model, out.Policy, f.DP
	if f.IW, err = policy.IWEstimate(m, pol, dp, policy.DefaultZ); err != nil {
		return err
	}
	if f.Cov, err = policy.CoverageOf(pol, dp); err != nil {
		return err
	}
	f.Weights, err = policy.Weights(pol, dp)
	return err
}

// describeLogs is the logs' summary, the behaviour's mean return, the
// range of returns, the running C∞ and least propensity per step, and
// the C∞ of each α candidate.
func describeLogs(f *report.Figures, out *report.Outcome, d *ingest.Dataset) {
	dp := f.DP
	f.Sum = ingest.Summarize(dp)
	f.Beh, f.BehHigh = behaviorMean(out.Model, d)
	f.RetLo, f.RetHi = d.ReturnRange()
	f.RunningCInf = runningCInf(out.Policy, dp)
	f.Iota = make([]float64, d.Horizon)
	for h := 1; h <= d.Horizon; h++ {
		f.Iota[h-1] = stepIota(dp, h)
	}
	if out.Selection != nil {
		for _, c := range out.Selection.Candidates {
			f.CandidateCInf = append(f.CandidateCInf, candidateCInf(c, dp))
		}
	}
}

// scoreEpisodes is each episode's log-likelihood and its reward part
// under m, by scorer when it is set (a data-parallel engine: psrbeam),
// otherwise on up to workers goroutines.
func scoreEpisodes(ctx context.Context, m *estimate.Model, d *ingest.Dataset, scorer estimate.EpisodeScorer, workers int) (loglik, rewardLogLik []float64, err error) {
	if scorer != nil {
		return scorer.ScoreEpisodes(ctx, m, d)
	}
	return estimate.ScoreEpisodes(ctx, m, d, workers)
}

// compareWithBehaviour walks the logs d down the policy's tree (f.Visits)
// and lists where the policy departs from the most logged action, with
// the model's value of those departures (f.Compare).
func compareWithBehaviour(f *report.Figures, out *report.Outcome, d *ingest.Dataset) error {
	m, pol := out.Model, out.Policy
	f.Visits = policy.LoggedVisits(pol, d)
	behaviourUnits := m.ReturnUnits(f.Beh)
	f.Compare = report.Departures(m, pol, f.Visits, f.Val.Reward, behaviourUnits)
	return valueDepartures(m, out.Bonus, pol, f.Compare)
}

// behaviorMean is the behaviour's value estimated from the logs, the mean
// rescaled return, and the upper end of its 95% normal interval (mean +
// policy.DefaultZ standard errors; the mean itself when K = 1).
func behaviorMean(m *estimate.Model, d *ingest.Dataset) (mean, high float64) {
	K := d.NumEpisodes()
	var s, s2 float64
	for k := 0; k < K; k++ {
		r := m.RescaleReturn(d.Return(k))
		s += r
		s2 += r * r
	}
	mean = s / float64(K)
	if K < 2 {
		return mean, mean
	}
	v := math.Max(0, (s2-float64(K)*mean*mean)/float64(K-1))
	return mean, mean + policy.DefaultZ*math.Sqrt(v/float64(K))
}

// stepIota is the least logged propensity at step h (1-based) over steps
// before any padding.
func stepIota(d *ingest.Dataset, h int) float64 {
	if d.Propensity == nil {
		return math.NaN()
	}
	H, low := d.Horizon, math.Inf(1)
	for k := 0; k < d.NumEpisodes(); k++ {
		if int(d.Length[k]) < h {
			continue
		}
		low = math.Min(low, d.Propensity[k*H+h-1])
	}
	if math.IsInf(low, 1) {
		return math.NaN()
	}
	return low
}

// runningCInf[h−1] is max over t ≤ h of the largest
// P^π̄(τ_t)/P^{π^b}(τ_t) = Π π̄/π^b over logged prefixes that follow π̄ (the
// model's factor cancels; see policy.Coverage; π̄ = 1 on the actions of a
// deterministic policy).
func runningCInf(pol *policy.Policy, d *ingest.Dataset) []float64 {
	H := d.Horizon
	best := make([]float64, H)
	for k := 0; k < d.NumEpisodes(); k++ {
		c := pol.NewCursor()
		ratio := 1.0
		for h := 0; h < H; h++ {
			o := d.ObsVocab[d.Obs[k*H+h]]
			a := d.ActVocab[d.Act[k*H+h]]
			q, ok := c.Take(o, a)
			if a == ingest.EndSymbol {
				q = 1
			}
			if !ok || q == 0 {
				break
			}
			p := 1.0
			if d.Propensity != nil {
				p = d.Propensity[k*H+h]
			}
			if q != 1 {
				ratio *= q // π(a | τ) of a stochastic policy
			}
			ratio /= p
			best[h] = math.Max(best[h], ratio)
		}
	}
	for h := 1; h < H; h++ {
		best[h] = math.Max(best[h], best[h-1])
	}
	return best
}

// candidateCInf is an α candidate's C∞ on the logs d: from its plan, or
// as stored when its plan was dropped (dropCandidatePolicies).
func candidateCInf(c policy.Candidate, d *ingest.Dataset) float64 {
	if c.Policy == nil {
		return c.CInf
	}
	r := runningCInf(c.Policy, d)
	return r[len(r)-1]
}

// dropCandidatePolicies keeps, of the α candidates' plans, the chosen one
// alone, after storing every candidate's C∞ on the logs d (the fit's
// behaviour propensities are used where d has none, as measure does): a
// selection among six candidates otherwise holds six tables of up to
// policy.SelectRowBudget rows through the final plan and the report.
// out.Fit must be set.
func dropCandidatePolicies(out *report.Outcome, d *ingest.Dataset) {
	if out.Selection == nil || out.Fit == nil {
		return
	}
	dp := out.Fit.WithPropensity(d)
	for i := range out.Selection.Candidates {
		c := &out.Selection.Candidates[i]
		if c.Policy == nil {
			continue
		}
		c.CInf = candidateCInf(*c, dp)
		if !c.Chosen {
			c.Policy = nil
		}
	}
}
