package ope

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/parallel"
)

// Names of the estimators (Estimate.Estimator).
const (
	EstIS       = "is"
	EstWIS      = "wis"
	EstPDIS     = "pdis"
	EstWPDIS    = "wpdis"
	EstModel    = "model"
	EstModelLCB = "model_lcb"
	EstDR       = "dr"
	EstWDR      = "wdr"
	// EstBehavior is the logs' own mean return: the behaviour's value.
	EstBehavior = "behavior"
)

// Names of the intervals (Estimate.Interval).
const (
	IntervalBootstrap = "bootstrap"
	IntervalNormal    = "normal"
	IntervalBernstein = "bernstein"
	IntervalNone      = "none"
)

// MinESS is the effective sample size below which an importance-weighted
// figure is not relied on: the normal approximation behind its interval
// needs a few dozen effective episodes (the rule of psrlcb fit's verdict).
const MinESS = 30

// Estimate is one estimator's figures, in the logs' units of return.
type Estimate struct {
	Estimator string
	// Value is the estimate (NaN when the logs cannot support it: Reason
	// says why).
	Value float64
	// Lower and Upper are the 95% interval of Interval; the other
	// intervals computed are beside them (NaN when not computed).
	Lower, Upper                   float64
	Interval                       string
	NormalLower, NormalUpper       float64
	BernsteinLower, BernsteinUpper float64
	// ESS is the effective sample size of the final weights, Episodes the
	// number of episodes with a non-zero final weight (the share of the
	// logs the estimate rests on).
	ESS      float64
	Episodes int
	// Reliable: the figure can be relied on (an importance-weighted one
	// with ESS ≥ MinESS; a model-based one when the model was fitted).
	Reliable bool
	Reason   string
}

// episodeTerms are the per-step quantities of the estimators: the ratios,
// the rewards and, for the doubly robust ones, the model's Q̂ after the
// logged action and V̂ before it (nil without a model).
type episodeTerms struct {
	K, H       int
	rho, rew   []float64
	qhat, vhat []float64
}

// sums are the sums over a (resampled) set of episodes from which every
// importance-weighted estimator is a closed form: count c_k of each
// episode, and per step h = 1..H: S[h] = Σ c w_h, C[h] = Σ c w_h r_h,
// D[h] = Σ c w_h (r_h − Q̂_h), B[h] = Σ c w_{h−1} V̂_h; S[0] = n.
type sums struct {
	n                  float64
	is, isSq, pd, pdSq float64
	dr, drSq, g        float64
	S, C, D, B         []float64
	wFinal, wFinalSq   float64
}

// accumulate adds episode k with multiplicity c.
func (t *episodeTerms) accumulate(s *sums, k int, c float64) {
	w, pd, dr, g := t.steps(s, k, c)
	s.addEpisode(c, w, pd, dr, g)
}

// steps adds the per-step sums S, C, D and B of episode k with
// multiplicity c, and returns the episode's final weight w_H, its
// per-decision sum Σ_h w_h r_h, its doubly robust sum (0 without a model)
// and its return.
func (t *episodeTerms) steps(s *sums, k int, c float64) (w, pd, dr, g float64) {
	H := t.H
	w = 1.0
	model := t.qhat != nil
	for h := range H {
		i := k*H + h
		prev := w
		w *= t.rho[i]
		r := t.rew[i]
		g += r
		pd += w * r
		s.S[h+1] += c * w
		s.C[h+1] += c * w * r
		if model {
			dr += t.drStep(s, i, h, c, w, prev)
		}
	}
	return w, pd, dr, g
}

// drStep adds to the sums D and B of step h+1 the logged step i with
// multiplicity c, its weight w and the weight prev before it, and returns
// its doubly robust term w (r − Q̂) + prev V̂.
func (t *episodeTerms) drStep(s *sums, i, h int, c, w, prev float64) float64 {
	r := t.rew[i]
	d := w*(r-t.qhat[i]) + prev*t.vhat[i]
	s.D[h+1] += c * w * (r - t.qhat[i])
	s.B[h+1] += c * prev * t.vhat[i]
	return d
}

// addEpisode adds the totals of an episode with multiplicity c: its final
// weight w, per-decision sum pd, doubly robust sum dr and return g.
func (s *sums) addEpisode(c, w, pd, dr, g float64) {
	is := w * g
	s.n += c
	s.S[0] += c
	s.is += c * is
	s.isSq += c * is * is
	s.pd += c * pd
	s.pdSq += c * pd * pd
	s.dr += c * dr
	s.drSq += c * dr * dr
	s.g += c * g
	s.wFinal += c * w
	s.wFinalSq += c * w * w
}

func newSums(H int) *sums {
	return &sums{S: make([]float64, H+1), C: make([]float64, H+1), D: make([]float64, H+1), B: make([]float64, H+1)}
}

// point returns every estimator's value from the sums.
func (s *sums) point(H int, model bool) map[string]float64 {
	out := map[string]float64{
		EstIS:       s.is / s.n,
		EstWIS:      ratio(s.is, s.wFinal),
		EstPDIS:     s.pd / s.n,
		EstBehavior: s.g / s.n,
	}
	out[EstWPDIS] = s.wpdis(H)
	if s.S[H] == 0 {
		out[EstWIS], out[EstWPDIS] = math.NaN(), math.NaN()
	}
	if model {
		out[EstDR] = s.dr / s.n
		out[EstWDR] = s.wdr(H)
	}
	return out
}

// wpdis is the weighted per-decision estimate Σ_h C[h] / S[h] over the
// steps with S[h] > 0.
func (s *sums) wpdis(H int) float64 {
	wpdis := 0.0
	for h := 1; h <= H; h++ {
		wpdis = addRatio(wpdis, s.C[h], s.S[h])
	}
	return wpdis
}

// wdr is the weighted doubly robust estimate Σ_h (D[h] / S[h] + B[h] /
// S[h−1]), leaving out the terms whose denominator is zero.
func (s *sums) wdr(H int) float64 {
	wdr := 0.0
	for h := 1; h <= H; h++ {
		wdr = addRatio(wdr, s.D[h], s.S[h])
		wdr = addRatio(wdr, s.B[h], s.S[h-1])
	}
	return wdr
}

// addRatio is acc + num/den, or acc when den is not positive.
func addRatio(acc, num, den float64) float64 {
	if den > 0 {
		return acc + num/den
	}
	return acc
}

// ratio is a / b, NaN when b is zero.
func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// allSums accumulates every episode once, in order (deterministic).
func (t *episodeTerms) allSums() *sums {
	s := newSums(t.H)
	for k := 0; k < t.K; k++ {
		t.accumulate(s, k, 1)
	}
	return s
}

// bootstrap returns, per estimator, the values of B resamples of the
// episodes (with replacement), each replicate seeded by (seed, b) so the
// result does not depend on the workers.
func (t *episodeTerms) bootstrap(ctx context.Context, B int, seed uint64, workers int) (map[string][]float64, error) {
	reps := make([]map[string]float64, B)
	err := parallel.For(ctx, B, workers, func(b int) error {
		reps[b] = t.replicate(seed, b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return byEstimator(reps), nil
}

// byEstimator turns the replicates' point estimates into each
// estimator's values, in replicate order.
func byEstimator(reps []map[string]float64) map[string][]float64 {
	out := map[string][]float64{}
	for _, r := range reps {
		for k, v := range r {
			out[k] = append(out[k], v)
		}
	}
	return out
}

// replicate is the point estimates of bootstrap replicate b: the
// episodes resampled with replacement from the stream seeded by (seed, b).
func (t *episodeTerms) replicate(seed uint64, b int) map[string]float64 {
	count := resample(rand.New(rand.NewPCG(seed, uint64(b)+0xb007)), t.K)
	s := newSums(t.H)
	for k, c := range count {
		if c > 0 {
			t.accumulate(s, k, float64(c))
		}
	}
	return s.point(t.H, t.qhat != nil)
}

// resample draws K episodes with replacement from rng and returns how
// many times each was drawn.
func resample(rng *rand.Rand, K int) []int32 {
	count := make([]int32, K)
	for range K {
		count[rng.IntN(K)]++
	}
	return count
}

// percentile returns the 2.5% and 97.5% quantiles of xs (NaN values,
// replicates whose estimator was undefined, left out), NaN when fewer than
// half the replicates are defined.
func percentile(xs []float64) (lo, hi float64) {
	v := defined(xs)
	if len(v) == 0 || 2*len(v) < len(xs) {
		return math.NaN(), math.NaN()
	}
	slices.Sort(v)
	return quantile(v, 0.025), quantile(v, 0.975)
}

// defined is the values of xs that are not NaN, in order.
func defined(xs []float64) []float64 {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	return v
}

// quantile is the p-quantile of the sorted values v, interpolated
// linearly between order statistics.
func quantile(v []float64, p float64) float64 {
	pos := p * float64(len(v)-1)
	i := int(pos)
	if i+1 >= len(v) {
		return v[len(v)-1]
	}
	f := pos - float64(i)
	return v[i]*(1-f) + v[i+1]*f
}

// normal is the 95% normal interval of a mean from its sums.
func normal(sum, sumSq, n float64) (lo, hi float64) {
	if n < 2 {
		return math.NaN(), math.NaN()
	}
	m, v := meanVar(sum, sumSq, n)
	se := math.Sqrt(v / n)
	return m - 1.96*se, m + 1.96*se
}

// meanVar is the mean of n terms and their unbiased sample variance, from
// their sum and the sum of their squares.
func meanVar(sum, sumSq, n float64) (m, v float64) {
	m = sum / n
	v = math.Max(sumSq/n-m*m, 0) * n / (n - 1)
	return m, v
}

// bernstein is the two-sided 95% empirical Bernstein interval (Maurer &
// Pontil, "Empirical Bernstein bounds and sample variance penalization",
// COLT 2009, Theorem 4, δ = 0.025 a side) of a mean of n terms within a
// range of width span.
func bernstein(sum, sumSq, n, span float64) (lo, hi float64) {
	if n < 2 || !(span > 0) || math.IsInf(span, 0) {
		return math.NaN(), math.NaN()
	}
	m, v := meanVar(sum, sumSq, n)
	l := math.Log(2 / 0.025)
	e := math.Sqrt(2*v*l/n) + 7*span*l/(3*(n-1))
	return m - e, m + e
}

// terms collects the per-step quantities of d and the ratios rho (and
// the model's Q̂, V̂ when given).
func terms(d *ingest.Dataset, rho, qhat, vhat []float64) *episodeTerms {
	return &episodeTerms{K: d.NumEpisodes(), H: d.Horizon, rho: rho, rew: d.Reward, qhat: qhat, vhat: vhat}
}

// weightFigures are the final weights' ESS, the number of episodes with a
// non-zero final weight, and the largest weight of any step.
func (t *episodeTerms) weightFigures() (ess float64, nonzero int, wmax float64) {
	var sw, sw2 float64
	for k := 0; k < t.K; k++ {
		var w float64
		w, wmax = t.finalWeight(k, wmax)
		sw += w
		sw2 += w * w
		if w > 0 {
			nonzero++
		}
	}
	return effectiveSize(sw, sw2), nonzero, wmax
}

// effectiveSize is the effective sample size (Σ w)² / Σ w² of weights
// whose sum is sw and sum of squares sw2; 0 when every weight is zero.
func effectiveSize(sw, sw2 float64) float64 {
	if sw2 > 0 {
		return sw * sw / sw2
	}
	return 0
}

// finalWeight is episode k's final importance weight w_H, with wmax
// raised to the largest of its running weights w_h.
func (t *episodeTerms) finalWeight(k int, wmax float64) (float64, float64) {
	w := 1.0
	for h := range t.H {
		w *= t.rho[k*t.H+h]
		wmax = math.Max(wmax, w)
	}
	return w, wmax
}
