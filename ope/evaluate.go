package ope

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/parallel"
	"github.com/psrlcb/psrlcb/pessimism"
)

// DefaultBootstrap is the number of bootstrap replicates: 200 put the
// percentile interval's ends within about a tenth of a standard error of
// where more replicates would.
const DefaultBootstrap = 200

// DefaultMaxDRSteps bounds the logged steps the doubly robust estimators
// look ahead from (each needs the model's value of the history): past it
// they are skipped with a reason, the importance-sampling estimators
// still computed.
const DefaultMaxDRSteps = 2_000_000

// Options configure Evaluate. The zero value computes the importance-
// sampling estimators with the default bootstrap.
type Options struct {
	// Bootstrap is the number of bootstrap replicates (default
	// DefaultBootstrap; negative: none).
	Bootstrap int
	// Seed drives the bootstrap and the Monte Carlo look-aheads.
	Seed uint64
	// Workers is the number of goroutines (default GOMAXPROCS); results
	// do not depend on it.
	Workers int
	// Model, when set, gives the model estimator; with Bonus also the
	// model's lower bound (Bonus must be built for Model).
	Model *estimate.Model
	Bonus *pessimism.Bonus
	// Folds, when set, give the doubly robust estimators their control
	// variates, cross-fitted: episode k uses Folds[1−Fold[k]], the model
	// that never saw it (Fold[k] ∈ {0, 1}).
	Folds [2]*estimate.Model
	Fold  []int
	// ModelNote says what the models are (a fit's model, or fitted here
	// on all episodes and on each half), for the estimates' reasons.
	ModelNote string
	// MaxDRSteps bounds the doubly robust look-ahead (default
	// DefaultMaxDRSteps).
	MaxDRSteps int
	// Skipped lists estimators left out before Evaluate with the reason
	// (for instance the model-based ones when only the target's
	// propensities of the logged actions are known).
	Skipped map[string]string
}

// Result is the evaluation: every estimator's figures, the behaviour's
// logged mean, and the estimator the summary leads with.
type Result struct {
	Estimates   []Estimate
	Recommended string
	Episodes    int
}

// Get returns the estimate of the named estimator.
func (r *Result) Get(name string) *Estimate { return find(r.Estimates, name) }

// find returns the estimate of the named estimator in es, or nil.
func find(es []Estimate, name string) *Estimate {
	for i := range es {
		if es[i].Estimator == name {
			return &es[i]
		}
	}
	return nil
}

// Evaluate computes every estimator of the package documentation from the
// logs d, the ratios rho (Ratios or ColumnRatios) and, for the
// model-based ones, the target t (nil when only rho is known).
func Evaluate(ctx context.Context, d *ingest.Dataset, rho []float64, t Target, o Options) (*Result, error) {
	if err := checkRatios(d, rho); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	ests, err := estimates(ctx, d, rho, t, o, copyReasons(o.Skipped))
	if err != nil {
		return nil, err
	}
	return &Result{Estimates: ests, Recommended: recommend(ests), Episodes: d.NumEpisodes()}, nil
}

// estimates are the importance-weighted and doubly robust estimates, then
// the model-based ones, of the target t from the logs d and the ratios
// rho; skipped holds the reasons of the estimators left out.
func estimates(ctx context.Context, d *ingest.Dataset, rho []float64, t Target, o Options, skipped map[string]string) ([]Estimate, error) {
	workers := parallel.Workers(o.Workers)
	qhat, vhat, err := drVariates(ctx, d, t, o, workers, skipped)
	if err != nil {
		return nil, err
	}
	ests, err := iwEstimates(ctx, terms(d, rho, qhat, vhat), d, o, workers, skipped)
	if err != nil {
		return nil, err
	}
	mods, err := modelEstimates(t, d, o, skipped)
	if err != nil {
		return nil, err
	}
	return append(ests, mods...), nil
}

// checkRatios checks that the logs d can be weighted and that rho has one
// ratio per logged step.
func checkRatios(d *ingest.Dataset, rho []float64) error {
	if err := checkLogs(d); err != nil {
		return err
	}
	K, H := d.NumEpisodes(), d.Horizon
	if len(rho) != K*H {
		return fmt.Errorf("%w: %d ratios for %d steps", ErrData, len(rho), K*H)
	}
	return nil
}

// copyReasons returns a copy of the skipped estimators' reasons (an empty
// map for nil).
func copyReasons(skipped map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range skipped {
		out[k] = v
	}
	return out
}

// withDefaults returns o with the default bootstrap and doubly robust
// look-ahead bound where they are zero.
func (o Options) withDefaults() Options {
	if o.Bootstrap == 0 {
		o.Bootstrap = DefaultBootstrap
	}
	if o.MaxDRSteps == 0 {
		o.MaxDRSteps = DefaultMaxDRSteps
	}
	return o
}

// drVariates computes the doubly robust estimators' control variates when
// the target, both folds' models and the folds are given and the logs have
// at most o.MaxDRSteps steps; otherwise it records in skipped why the
// doubly robust estimators are skipped (unless skipped already says so)
// and returns nil variates.
func drVariates(ctx context.Context, d *ingest.Dataset, t Target, o Options, workers int, skipped map[string]string) (qhat, vhat []float64, err error) {
	K, H := d.NumEpisodes(), d.Horizon
	if t != nil && o.Folds[0] != nil && o.Folds[1] != nil && len(o.Fold) == K {
		if K*H > o.MaxDRSteps {
			reason := fmt.Sprintf("skipped: %d logged steps, more than the %d the doubly robust look-ahead is given (each step needs the model's value of its history)", K*H, o.MaxDRSteps)
			skipped[EstDR], skipped[EstWDR] = reason, reason
			return nil, nil, nil
		}
		return controlVariates(ctx, d, t, o, workers)
	}
	if _, ok := skipped[EstDR]; !ok {
		reason := noDRReason(t)
		skipped[EstDR], skipped[EstWDR] = reason, reason
	}
	return nil, nil, nil
}

// noDRReason says why the doubly robust estimators are skipped without the
// folds' models, or without the target t's probabilities of every action
// (t nil).
func noDRReason(t Target) string {
	if t == nil {
		return "skipped: only the target's probabilities of the logged actions are known, and the doubly robust estimators need them for every action"
	}
	return "skipped: no model (doubly robust estimation needs the fitted model's values)"
}

// iwEstimates are the behaviour's mean and the importance-weighted and
// doubly robust estimators with their intervals.
func iwEstimates(ctx context.Context, tm *episodeTerms, d *ingest.Dataset, o Options, workers int, skipped map[string]string) ([]Estimate, error) {
	all := tm.allSums()
	s := iwSet{tm: tm, all: all, point: all.point(tm.H, tm.qhat != nil), note: o.ModelNote}
	if err := s.bootstrap(ctx, o, workers); err != nil {
		return nil, err
	}
	var wmax float64
	s.ess, s.nonzero, wmax = tm.weightFigures()
	s.span = bernsteinSpan(d, tm.H, wmax)
	return s.estimates(skipped), nil
}

// bootstrap draws the o.Bootstrap replicates of the estimators, when
// there are any, on workers goroutines.
func (s *iwSet) bootstrap(ctx context.Context, o Options, workers int) error {
	if o.Bootstrap <= 0 {
		return nil
	}
	var err error
	s.reps, err = s.tm.bootstrap(ctx, o.Bootstrap, o.Seed, workers)
	return err
}

// estimates are the behaviour's mean and the importance-weighted and
// doubly robust estimates, in that order.
func (s *iwSet) estimates(skipped map[string]string) []Estimate {
	var out []Estimate
	for _, name := range []string{EstBehavior, EstIS, EstWIS, EstPDIS, EstWPDIS, EstDR, EstWDR} {
		out = append(out, s.estimate(name, skipped))
	}
	return out
}

// bernsteinSpan is the width of the range of the importance-weighted
// returns for the Bernstein bound: the largest weight wmax times the wider
// of the logs' return range and H times their reward range.
func bernsteinSpan(d *ingest.Dataset, H int, wmax float64) float64 {
	lo, hi := d.ReturnRange()
	h := float64(H)
	rmin, rmax := minMax(d.Reward)
	return wmax * math.Max(hi-lo, h*(rmax-rmin))
}

// iwSet is what the importance-weighted estimates draw on: the episodes'
// terms and their sums, the point estimates, the bootstrap replicates (nil
// without a bootstrap), the weights' effective sample size, the episodes
// with a nonzero final weight, the span of the Bernstein bound and the
// models' note.
type iwSet struct {
	tm      *episodeTerms
	all     *sums
	point   map[string]float64
	reps    map[string][]float64
	ess     float64
	nonzero int
	span    float64
	note    string
}

// blank is the named estimator's estimate before any figure: every value
// and bound NaN, with the interval kind and the effective sample size ess.
func blank(name, interval string, ess float64) Estimate {
	return Estimate{Estimator: name, Value: math.NaN(), Lower: math.NaN(), Upper: math.NaN(), Interval: interval,
		NormalLower: math.NaN(), NormalUpper: math.NaN(), BernsteinLower: math.NaN(), BernsteinUpper: math.NaN(), ESS: ess}
}

// estimate is the named estimator's figures with their intervals and
// reliability, or its reason when skipped lists it.
func (s *iwSet) estimate(name string, skipped map[string]string) Estimate {
	e := blank(name, IntervalBootstrap, s.ess)
	e.Episodes = s.nonzero
	if r, ok := skipped[name]; ok {
		e.Reason, e.Interval = r, IntervalNone
		return e
	}
	s.figures(&e)
	if name != EstBehavior {
		s.reliability(&e)
	}
	return e
}

// figures sets the point estimate of e, its normal and Bernstein bounds,
// and its interval: the bootstrap percentiles, or the normal bounds
// without a bootstrap.
func (s *iwSet) figures(e *Estimate) {
	e.Value = s.point[e.Estimator]
	if s.reps != nil {
		e.Lower, e.Upper = percentile(s.reps[e.Estimator])
	} else {
		e.Interval = IntervalNormal
	}
	s.bounds(e)
	if e.Interval == IntervalNormal {
		e.Lower, e.Upper = e.NormalLower, e.NormalUpper
	}
}

// reliability says whether the importance-weighted estimate e can be
// relied on, and why not; without an episode that follows the policy to
// the end, only the doubly robust estimators keep a value.
func (s *iwSet) reliability(e *Estimate) {
	name := e.Estimator
	e.Reliable, e.Reason = iwReliability(name, s.ess, s.nonzero, e.Value, s.note)
	if s.nonzero == 0 && name != EstDR && name != EstWDR {
		e.Value, e.Lower, e.Upper = math.NaN(), math.NaN(), math.NaN()
	}
}

// bounds sets the normal and Bernstein bounds of the estimators that have
// them; the behaviour's mean also gets every episode as its sample and is
// reliable.
func (s *iwSet) bounds(e *Estimate) {
	all, tm := s.all, s.tm
	switch e.Estimator {
	case EstBehavior:
		e.ESS, e.Episodes = float64(tm.K), tm.K
		e.NormalLower, e.NormalUpper = normal(all.g, sumSq(tm, returnOf), all.n)
		e.Reliable = true
	case EstIS:
		e.NormalLower, e.NormalUpper = normal(all.is, all.isSq, all.n)
		e.BernsteinLower, e.BernsteinUpper = bernstein(all.is, all.isSq, all.n, s.span)
	case EstPDIS:
		e.NormalLower, e.NormalUpper = normal(all.pd, all.pdSq, all.n)
		e.BernsteinLower, e.BernsteinUpper = bernstein(all.pd, all.pdSq, all.n, s.span)
	case EstDR:
		e.NormalLower, e.NormalUpper = normal(all.dr, all.drSq, all.n)
	}
}

// iwReliability says whether an importance-weighted figure can be relied
// on, and why not.
func iwReliability(name string, ess float64, nonzero int, v float64, modelNote string) (bool, string) {
	dr := name == EstDR || name == EstWDR
	switch {
	case nonzero == 0 && dr:
		return false, "no logged episode follows the policy to the end: the estimate is the model's values along the logged histories" + withNote(modelNote)
	case nonzero == 0:
		return false, "no logged episode follows the policy to the end (every final importance weight is zero), so the logs alone say nothing of its value"
	case ess < MinESS:
		return false, fmt.Sprintf("only about %.0f logged episodes follow the policy (effective sample size), fewer than the %d below which the interval is not reliable", ess, MinESS)
	case math.IsNaN(v):
		return false, "undefined: the weights sum to zero"
	case dr:
		return true, "cross-fitted" + withNote(modelNote)
	}
	return true, ""
}

func withNote(n string) string {
	if n == "" {
		return ""
	}
	return " (" + n + ")"
}

// modelEstimates are the model's value of the target and its lower bound.
func modelEstimates(t Target, d *ingest.Dataset, o Options, skipped map[string]string) ([]Estimate, error) {
	out := modelSkips(t, o, skipped)
	if out[0].Reason != "" {
		return out, nil
	}
	val, bon, err := modelValue(t, d, o)
	if err != nil {
		return nil, err
	}
	note := "rests on the fitted model alone" + withNote(o.ModelNote)
	out[0].Value, out[0].Reliable, out[0].Reason = val, true, note
	if out[1].Reason == "" {
		lowerBound(&out[1], val, bon, o)
	}
	return out, nil
}

// modelValue is the fitted model's value of the target t from the start
// of an episode of the logs d, and its expected bonus at the end.
func modelValue(t Target, d *ingest.Dataset, o Options) (val, bon float64, err error) {
	endObs, endAct := endCodes(d)
	v := newValuer(o.Model, t, o.Bonus, endObs, endAct, o.Seed)
	return v.root()
}

// lowerBound sets the model's lower bound e from its value val and the
// expected bonus bon (on the paper's [0,1] scale, rescaled to the model's
// return range).
func lowerBound(e *Estimate, val, bon float64, o Options) {
	span := o.Model.ReturnMax - o.Model.ReturnMin
	e.Value = val - bon*span
	e.Reliable = true
	e.Reason = fmt.Sprintf("the model's value minus its expected bonus at α = %.3g (%.4g in your units)", o.Bonus.Alpha, bon*span)
}

// modelSkips are the model's value and lower bound without figures, each
// with the reason it is skipped, if any.
func modelSkips(t Target, o Options, skipped map[string]string) []Estimate {
	var out []Estimate
	for _, name := range []string{EstModel, EstModelLCB} {
		e := blank(name, IntervalNone, math.NaN())
		e.Reason = modelSkipReason(name, t, o, skipped)
		out = append(out, e)
	}
	return out
}

// modelSkipReason says why the named model-based estimator is skipped, or
// "" when it is not.
func modelSkipReason(name string, t Target, o Options, skipped map[string]string) string {
	switch {
	case skipped[name] != "":
		return skipped[name]
	case t == nil:
		return "skipped: only the target's probabilities of the logged actions are known, and the model needs them for every action"
	case o.Model == nil:
		return "skipped: no model"
	case name == EstModelLCB && o.Bonus == nil:
		return "skipped: no bonus"
	}
	return ""
}

// recommendOrder is the order in which the summary prefers the estimators
// whose figures are reliable, as measured by the validation study
// (docs/evaluation.md: simulated logs against exact values): by the number
// of cells where each had the smallest RMSE among the estimators whose
// 95% bootstrap interval covered the exact value on at least 90% of the
// logs (wpdis 36 of 54 cells, wis 25, pdis 10, dr 9, is 8, wdr 7). The
// doubly robust estimators, whose bootstrap intervals hold the models
// fixed, fell short of 90% coverage in a quarter to a third of their
// cells. The importance-weighted estimators share one reliability test
// (the effective sample size), so in practice wpdis leads whenever the
// logs support any of them, else the model's value.
var recommendOrder = []string{EstWPDIS, EstWIS, EstPDIS, EstDR, EstIS, EstWDR}

// recommend names the estimator the summary leads with: the first
// reliable one of recommendOrder, else the model's value, else the first
// with a value.
func recommend(es []Estimate) string {
	if n := firstWith(es, func(e *Estimate) bool { return e.Reliable && !math.IsNaN(e.Value) }); n != "" {
		return n
	}
	if e := find(es, EstModel); e != nil && !math.IsNaN(e.Value) {
		return EstModel
	}
	return firstWith(es, func(e *Estimate) bool { return !math.IsNaN(e.Value) })
}

// firstWith is the first estimator of recommendOrder whose estimate in es
// satisfies ok, else "".
func firstWith(es []Estimate, ok func(*Estimate) bool) string {
	for _, n := range recommendOrder {
		if e := find(es, n); e != nil && ok(e) {
			return n
		}
	}
	return ""
}

func minMax(xs []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

func returnOf(t *episodeTerms, k int) float64 {
	g := 0.0
	for _, r := range t.rew[k*t.H : (k+1)*t.H] {
		g += r
	}
	return g
}

// sumSq is Σ_k f(k)².
func sumSq(t *episodeTerms, f func(*episodeTerms, int) float64) float64 {
	s := 0.0
	for k := 0; k < t.K; k++ {
		x := f(t, k)
		s += x * x
	}
	return s
}

// controlVariates computes Q̂_{k,h} (after the logged action) and V̂_{k,h}
// (before it) for every logged step, each episode with the model of the
// other fold.
func controlVariates(ctx context.Context, d *ingest.Dataset, t Target, o Options, workers int) (qhat, vhat []float64, err error) {
	K, H := d.NumEpisodes(), d.Horizon
	cv := &variates{d: d, fold: o.Fold, qhat: make([]float64, K*H), vhat: make([]float64, K*H)}
	cv.vals, cv.memos = foldValuers(d, t, o)
	err = forBlocks(ctx, K, workers, func(k0, k1 int) error { return cv.block(ctx, k0, k1) })
	return cv.qhat, cv.vhat, err
}

// variates is controlVariates' state: the logs d and their folds, the two
// folds' valuers and memos, and the control variates being filled.
type variates struct {
	d          *ingest.Dataset
	fold       []int
	vals       [2]*valuer
	memos      [2]*memo
	qhat, vhat []float64
}

// block computes the control variates of episodes k0..k1−1, stopping when
// ctx is cancelled.
func (cv *variates) block(ctx context.Context, k0, k1 int) error {
	for k := k0; k < k1; k++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := cv.episode(k); err != nil {
			return err
		}
	}
	return nil
}

// episode computes the control variates of episode k with the model of
// the fold that did not see it.
func (cv *variates) episode(k int) error {
	use := 1 - cv.fold[k]
	if err := episodeVariates(cv.d, k, cv.vals[use], cv.memos[use], cv.qhat, cv.vhat); err != nil {
		return fmt.Errorf("episode %s: %w", cv.d.EpisodeIDs[k], err)
	}
	return nil
}

// foldValuers are the valuers of the target t under the two folds'
// models, each seeded apart, and their memos.
func foldValuers(d *ingest.Dataset, t Target, o Options) (vals [2]*valuer, memos [2]*memo) {
	endObs, endAct := endCodes(d)
	for f := range 2 {
		vals[f] = newValuer(o.Folds[f], t, nil, endObs, endAct, o.Seed+uint64(f)+1)
		memos[f] = &memo{m: map[string]stats{}}
	}
	return vals, memos
}

// episodeVariates follows episode k with the model's filter and the
// target, and stores the values of each logged history.
func episodeVariates(d *ingest.Dataset, k int, v *valuer, c *memo, qhat, vhat []float64) error {
	H := d.Horizon
	w := newEpisodeWalk(v, c)
	prev := -1
	for h := 0; h < H; h++ {
		i := k*H + h
		o, a := int(d.Obs[i]), int(d.Act[i])
		st, done, err := w.step(h, prev, o)
		if err != nil || done {
			return err
		}
		vhat[i], qhat[i] = st.v, st.q[a]
		prev = a
	}
	return nil
}

// episodeWalk is episodeVariates' state along one episode: the model's
// belief (and a buffer for its prediction), the target's follower and its
// probabilities, and the memo key of the history so far.
type episodeWalk struct {
	v          *valuer
	c          *memo
	b, pred, p []float64
	f          Follower
	key        strings.Builder
}

// newEpisodeWalk starts a walk along an episode with the valuer v and the
// memo c.
func newEpisodeWalk(v *valuer, c *memo) *episodeWalk {
	return &episodeWalk{v: v, c: c, b: make([]float64, v.S), pred: make([]float64, v.S), p: make([]float64, v.A), f: v.t.Follow()}
}

// step reads the logged observation o of step h (0-based) after the action
// prev and returns the values of the history so far; done when the rest of
// the episode has no control variate.
func (w *episodeWalk) step(h, prev, o int) (st stats, done bool, err error) {
	if !w.filter(h, prev, o) {
		return stats{}, true, nil // a history the model deems impossible: no control variate
	}
	if err := w.f.Next(prev, o, w.p); err != nil {
		return stats{}, true, err
	}
	fmt.Fprintf(&w.key, "%d,%d;", prev, o)
	if o == w.v.endObs {
		return stats{}, true, nil // the rest is padding: no reward to predict
	}
	st, err = w.values(h)
	return st, false, err
}

// filter updates the belief with the action prev and the observation o of
// step h; false when the model gives o probability zero.
func (w *episodeWalk) filter(h, prev, o int) bool {
	m := w.v.m
	if h == 0 {
		m.Prior(w.b)
		m.ObserveFirst(w.b, o)
		return true
	}
	m.Predict(h, w.b, prev, w.pred)
	return m.Correct(h, w.pred, prev, o, w.b) != 0
}

// values returns the stats of the history so far from the memo, or
// computes and memoises them.
func (w *episodeWalk) values(h int) (stats, error) {
	key := w.key.String()
	if st, ok := w.c.get(key); ok {
		return st, nil
	}
	n := node{h: h + 1, b: append([]float64(nil), w.b...), f: w.f.Clone(), p: append([]float64(nil), w.p...)}
	st, err := w.v.value(n, key)
	if err != nil {
		return stats{}, err
	}
	w.c.put(key, st)
	return st, nil
}
