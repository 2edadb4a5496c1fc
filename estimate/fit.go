package estimate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/parallel"
)

// emResult is the outcome of one EM start.
type emResult struct {
	model     *Model
	ll        float64
	iters     int
	esteps    int // E-steps run, rejected extrapolations included
	converged bool
	trace     []TraceRow
	obj       []float64 // objective of each trace row (emPoint.obj)
	err       error
}

// emPoint is a model together with its E-step.
type emPoint struct {
	m    *Model
	k    *kernel
	st   *stats
	iter int     // index of the E-step (0-based)
	obj  float64 // the objective EM climbs (see emRun.penalised)
}

// emRun is the state of one EM start.
type emRun struct {
	ctx     context.Context
	c       *coded
	o       *Options
	workers int
	tag     TraceRow
	report  func(TraceRow)

	// penalised: the run's decisions (acceptance, stopping) use the
	// penalised log-likelihood ln P(D|θ) + ln p(θ), where p is the
	// smoothing prior of the M-step (logPrior), the objective EM with
	// smoothing increases at every step; otherwise the log-likelihood.
	penalised bool

	esteps int     // E-steps run so far
	cur    emPoint // last accepted point (valid once started)
	start  bool    // cur is set
	fin    emPoint // the point the run stopped on (valid once res is set)
	res    emResult

	// pairs is the involution of a split start's copies (splitPairs), nil
	// for other starts; probes counts the run's probes for a saddle
	// (saddle.go).
	pairs  []int
	probes int
	// tight: up to this E-step the run's tolerance is saddleTol instead
	// of Options.Tol (escape found a saddle).
	tight int
}

// eval runs the E-step at m.
func (r *emRun) eval(m *Model) (emPoint, error) {
	k := newKernel(m, r.c)
	st, err := r.o.runEStep(r.ctx, k, r.c, r.workers)
	p := emPoint{m: m, k: k, st: st, iter: r.esteps}
	r.esteps++
	if err == nil {
		p.obj = st.ll
		if r.penalised {
			p.obj += logPrior(m, r.o.Smoothing, r.c)
		}
	}
	return p, err
}

// advance accepts p as the next point of the run: it reports its
// log-likelihood as a trace row and says whether the run stops, in which
// case r.res is set. The run stops when the objective fell (plain EM:
// the log-likelihood, which can fall through the smoothing prior;
// accelerated: the penalised log-likelihood, which falls only by
// rounding; the previous point is kept), when p is one EM step from the
// previous accepted point (emStep) and the objective rose by at most Tol
// relative (converged), at MaxIter E-steps, or at a log-likelihood of −∞.
// The gain of an extrapolation is not a convergence test: a poor
// extrapolation can gain little far from the fixed point.
func (r *emRun) advance(p emPoint, emStep bool) bool {
	r.record(p)
	if r.start {
		f, prev := p.obj, r.cur.obj
		if f < prev {
			return r.done(r.cur, true)
		}
		if emStep && f-prev <= r.tol()*math.Abs(f) {
			return r.done(p, true)
		}
	}
	if p.iter >= r.o.MaxIter || math.IsInf(p.st.ll, -1) && r.start {
		return r.done(p, false)
	}
	r.cur, r.start = p, true
	return false
}

// record reports p's log-likelihood as a trace row and keeps its
// objective.
func (r *emRun) record(p emPoint) {
	row := r.tag
	row.Iter, row.LogLik = p.iter, p.st.ll
	r.res.trace = append(r.res.trace, row)
	r.res.obj = append(r.res.obj, p.obj)
	r.report(row)
}

// done stops the run on q and sets r.res; it returns true.
func (r *emRun) done(q emPoint, converged bool) bool {
	r.fin = q
	r.res.esteps = r.esteps
	r.res.model, r.res.ll, r.res.iters, r.res.converged = q.m, q.st.ll, q.iter, converged
	return true
}

// tol is the run's relative tolerance: Options.Tol, and at most
// saddleTol up to the E-step r.tight.
func (r *emRun) tol() float64 {
	tol := r.o.Tol
	if r.esteps <= r.tight {
		tol = min(tol, saddleTol)
	}
	return tol
}

// runEM iterates E and M steps from m0, accelerated by SQUAREM (see
// accel.go) unless Options.PlainEM. It returns the parameters of the last
// accepted E-step (whose log-likelihood is known exactly), or those of the
// previous one if the last step lowered the objective. Every E-step
// counts as an iteration (Options.MaxIter bounds them); every accepted
// E-step is a trace row, so the objective along the trace of a start is
// non-decreasing up to its last row. The E-step of a rejected
// extrapolation is counted but not reported: the trace skips its
// iteration number. A split start (Options.startPairs) is probed for a
// saddle point where it would stop, and may go on (escape, saddle.go);
// the E-steps of the probe count as iterations too.
func runEM(ctx context.Context, c *coded, m0 *Model, o *Options, workers int, tag TraceRow, report func(TraceRow)) emResult {
	r := &emRun{ctx: ctx, c: c, o: o, workers: workers, tag: tag, report: report, penalised: !o.PlainEM, tight: -1}
	if m0 == o.Start {
		r.pairs = o.startPairs
	}
	p, err := r.eval(m0)
	if err != nil {
		r.res.err = err
		return r.res
	}
	if !r.advance(p, true) {
		r.climbAndEscape()
	}
	return r.res
}

// climbAndEscape climbs from the accepted point until the run stops for
// good: a converged split start is probed for a way out of its saddle
// point and climbs on when escape finds one.
func (r *emRun) climbAndEscape() {
	for {
		r.climb()
		if r.res.err != nil || !r.res.converged {
			return
		}
		// A split start may have stopped in the lull of leaving its
		// saddle point (saddle.go).
		if !r.escaped() {
			return
		}
	}
}

// escaped runs one saddle escape and says whether the run moved on, to
// climb again; when it did not, it records the error or, when there was
// nothing to escape, the E-steps.
func (r *emRun) escaped() bool {
	more, err := r.escape()
	if err != nil {
		r.res.err = err
		return false
	}
	if !more {
		r.res.esteps = r.esteps
	}
	return more
}

// climb runs EM from the accepted point r.cur until the run stops (r.res
// set).
func (r *emRun) climb() {
	if r.o.PlainEM {
		for !r.step(r.cur) {
		}
		return
	}
	r.squarem()
}

// mstep is the M-step from the E-step of p.
func (r *emRun) mstep(p emPoint) *Model { return p.k.mstep(p.st, r.c, r.o.Smoothing) }

// step runs the EM step from p and says whether the run stops.
func (r *emRun) step(p emPoint) bool { return r.accept(r.mstep(p)) }

// accept evaluates m, the M-step of the run's last point, and advances
// the run to it; it says whether the run stops.
func (r *emRun) accept(m *Model) bool {
	n, err := r.eval(m)
	if err != nil {
		r.res.err = err
		return true
	}
	return r.advance(n, true)
}

// squarem climbs with SQUAREM (accel.go). base is θ0 and r.cur =
// M(θ0) = θ1, both accepted.
func (r *emRun) squarem() {
	q := newSquarem()
	base := r.cur
	if r.step(base) {
		return
	}
	for {
		p1 := r.cur
		m2 := r.mstep(p1)
		mx, alpha := q.extrapolate(base.m, p1.m, m2, r.c.varFloor())
		if alpha > 1 {
			px, ok, stop := r.extrapolated(q, mx, alpha, p1)
			if stop {
				return
			}
			if ok {
				base = px
				continue
			}
			// Rejected: EM goes on from θ2.
		}
		if r.accept(m2) {
			return
		}
		base = p1
	}
}

// extrapolated evaluates the extrapolation mx (step length alpha) from
// θ1 = p1: ok says whether it is accepted (px, its point, is then the
// next cycle's θ0), stop whether the run stops.
func (r *emRun) extrapolated(q *squarem, mx *Model, alpha float64, p1 emPoint) (px emPoint, ok, stop bool) {
	o := r.o
	px, err := r.eval(mx)
	if err != nil {
		r.res.err = err
		return px, false, true
	}
	ok = px.obj >= p1.obj && px.st.ll >= p1.st.ll
	if ok && px.iter >= o.MaxIter {
		r.advance(px, false)
		return px, false, true
	}
	if ok {
		if ok, stop = r.confirm(q, alpha, px); ok || stop {
			return px, ok, stop
		}
	}
	q.accepted(alpha, false)
	if r.esteps > o.MaxIter {
		r.fin = p1
		r.res.model, r.res.ll, r.res.iters, r.res.esteps = p1.m, p1.st.ll, p1.iter, r.esteps
		return px, false, true
	}
	return px, false, false
}

// confirm runs the EM step from the accepted extrapolation θ' = px. The
// EM step from θ' (the next cycle's θ1) cannot lower the objective but by
// rounding; if it does, θ' is dropped like a rejected point (ok false).
// stop says whether the run stops.
func (r *emRun) confirm(q *squarem, alpha float64, px emPoint) (ok, stop bool) {
	pn, err := r.eval(r.mstep(px))
	if err != nil {
		r.res.err = err
		return false, true
	}
	if !(pn.obj >= px.obj) {
		return false, false
	}
	q.accepted(alpha, true)
	return true, r.advance(px, false) || r.advance(pn, true)
}

// returnBounds is the range of returns the model can produce: H times the
// smallest and largest logged reward. The paper's R ∈ [0,1] (Huang, Liang,
// Yang, arXiv:2307.00405, Section 2) must hold on every trajectory, not
// only the logged ones: the bonus is capped at 1, the whole range, which
// bounds the model's error only if no return leaves [0,1]. Each of the H
// rewards of a model trajectory is a logged reward value (categorical
// emission) or a mean of them (Gaussian), so its return lies in these
// bounds; the range of logged returns does not (a policy combining the
// worst logged steps does worse than any logged episode), and the small-K
// study of docs/validation.md shows the bound failing with it.
func returnBounds(d *ingest.Dataset) (lo, hi float64) {
	if len(d.Reward) == 0 {
		return 0, 0
	}
	lo, hi = rewardRange(d.Reward)
	H := float64(d.Horizon)
	return H * lo, H * hi
}

// proto returns an empty model carrying the dataset's shape.
func protoModel(d *ingest.Dataset, c *coded, o *Options) *Model {
	m := &Model{NumObs: c.O, NumActions: c.A, Horizon: c.H, Stationary: o.Dynamics == DynamicsStationary,
		ObsVocab: d.ObsVocab, ActVocab: d.ActVocab, Reward: c.kind, RewardValues: c.values,
		TestLength: o.TestLength}
	m.ReturnMin, m.ReturnMax = returnBounds(d)
	m.Trans = make([][]float64, 1)
	if !m.Stationary {
		m.Trans = make([][]float64, c.H)
	}
	return m
}

// fitSampleEpisodes: on logs of more episodes fitted in the compact form
// (large vocabularies, whose E-steps are the cost of a fit), the EM starts and the
// rank choice run on a seeded sample of this many episodes, and only the
// best start goes on to convergence on every episode; a warm start
// (Options.Start) goes on alone. 10⁴ episodes tell good starts from poor
// ones and rank the ranks' held-out likelihoods while keeping each
// start's E-steps cheap; the final fit still uses all the data.
const fitSampleEpisodes = 10_000

// sampleIndex returns a seeded, sorted sample of n of the indexes 0..K−1.
func sampleIndex(K, n int, seed uint64) []int {
	idx := rand.New(rand.NewPCG(seed, 0x5a3e)).Perm(K)[:n]
	sort.Ints(idx)
	return idx
}

// fitAll runs the starts of rank S (on a sample of fitSampleEpisodes
// episodes when the logs have more, the best of them then continued on
// all episodes) and returns them in start order with the index of the
// best; the best's result is that of the fit on all episodes.
func fitAll(ctx context.Context, d *ingest.Dataset, all *coded, proto *Model, S int, o *Options, report func(TraceRow)) ([]emResult, int, error) {
	if all.K <= fitSampleEpisodes || !proto.Compact {
		rs, err := fitRank(ctx, all, proto, S, o, "all", report)
		if err != nil {
			return nil, 0, err
		}
		return rs, best(rs), nil
	}
	if o.Start != nil {
		return fitWarm(ctx, all, S, o, report)
	}
	return fitSampled(ctx, d, all, proto, S, o, report)
}

// fitWarm runs EM on all episodes from the warm start o.Start alone: a
// warm start is a fit of these logs (or most of them), it needs no
// competition on a sample.
func fitWarm(ctx context.Context, all *coded, S int, o *Options, report func(TraceRow)) ([]emResult, int, error) {
	r := runEM(ctx, all, o.Start, o, o.Workers, TraceRow{Data: "all", Rank: S}, report)
	if r.err != nil {
		return nil, 0, r.err
	}
	return []emResult{r}, 0, nil
}

// fitSampled is fitAll on logs of more than fitSampleEpisodes episodes:
// the starts run on a seeded sample and the best goes on on all
// episodes, its trace continuing the sample's.
func fitSampled(ctx context.Context, d *ingest.Dataset, all *coded, proto *Model, S int, o *Options, report func(TraceRow)) ([]emResult, int, error) {
	sub := code(d.Subset(sampleIndex(all.K, fitSampleEpisodes, o.Seed)), all.kind, all.values)
	rs, err := fitRank(ctx, sub, proto, S, o, "sample", report)
	if err != nil {
		return nil, 0, err
	}
	b := best(rs)
	r := runEM(ctx, all, rs[b].model, o, o.Workers, TraceRow{Data: "all", Rank: S, Restart: b}, report)
	if r.err != nil {
		return nil, 0, r.err
	}
	r.trace = append(rs[b].trace, r.trace...)
	rs[b] = r
	return rs, b, nil
}

// chooseProtoForm sets proto.Compact from Options.Form for the largest
// rank that will be fitted (a warm start keeps its own form) and checks
// that the fit fits in Options.MemoryLimit and that the logs can tell
// that many states apart (capRank). With the automatic rank, MaxRank is
// lowered to the largest rank that passes both checks instead.
func chooseProtoForm(proto *Model, c *coded, o *Options) error {
	nt := len(proto.Trans)
	if o.Start != nil {
		proto.Compact = o.Start.Compact
		return checkMemory(c, o.Start.States, nt, proto.Compact, o)
	}
	form := func(S int) bool { return formFor(o, c, S, nt) }
	if err := capRank(c, o, form); err != nil {
		return err
	}
	S := o.largestRank()
	proto.Compact = form(S)
	err := checkMemory(c, S, nt, proto.Compact, o)
	if err == nil || o.Rank != 0 {
		return err
	}
	return capRankMemory(proto, c, o, S, form)
}

// capRankMemory lowers the automatic rank's MaxRank below S, which does
// not fit the memory limit, to the largest rank that fits (the need
// grows with the rank), with the form chosen for it.
func capRankMemory(proto *Model, c *coded, o *Options, S int, form func(int) bool) error {
	nt := len(proto.Trans)
	lo := largestFitting(S, func(r int) bool { return checkMemory(c, r, nt, form(r), o) == nil })
	if lo == 0 {
		return checkMemory(c, 1, nt, form(1), o)
	}
	o.MaxRank = lo
	o.MaxRankCause = fmt.Sprintf("larger ranks need more memory than the limit of %s", gib(o.MemoryLimit))
	proto.Compact = form(lo)
	return nil
}

// largestFitting is, by bisection, the largest rank below S for which
// fits holds (it holds up to some rank and not above), 0 when none does.
func largestFitting(S int, fits func(int) bool) int {
	lo, hi := 0, S // lo fits (0: none yet), hi does not
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// formFor is the model form for rank S: Options.Form, and under FormAuto
// the full form while its step kernel is small (chooseForm) and it fits
// the memory limit, the compact form otherwise.
func formFor(o *Options, c *coded, S, nt int) bool {
	compact := chooseForm(o.Form, c, S, nt)
	if !compact && o.Form == FormAuto && checkMemory(c, S, nt, false, o) != nil {
		return true
	}
	return compact
}

// fitRank runs o.Restarts EM starts with S states on c and returns them
// in start order. Starts run concurrently, sharing the workers.
func fitRank(ctx context.Context, c *coded, proto *Model, S int, o *Options, data string, report func(TraceRow)) ([]emResult, error) {
	R := o.Restarts
	conc := min(R, o.Workers)
	per := max(1, o.Workers/conc)
	out := make([]emResult, R)
	err := parallel.For(ctx, R, conc, func(j int) error {
		m0 := startModel(c, proto, S, o, j)
		out[j] = runEM(ctx, c, m0, o, per, TraceRow{Data: data, Rank: S, Restart: j}, report)
		return out[j].err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// startModel is start j's model of rank S: the warm start Options.Start
// first, then informed and random starts in turn.
func startModel(c *coded, proto *Model, S int, o *Options, j int) *Model {
	// Seeds of the starts derive from the user's seed, the rank
	// and the start index only.
	seed := o.Seed*0x9e3779b97f4a7c15 + uint64(S)*1000003 + uint64(j)
	switch {
	case j == 0 && o.Start != nil:
		return o.Start
	case j%2 == 0:
		return informedStart(c, proto, S, seed)
	default:
		return randomStart(c, proto, S, seed)
	}
}

// best is the index of the first start of the highest log-likelihood.
func best(rs []emResult) int {
	b := 0
	for j, r := range rs {
		if r.ll > rs[b].ll {
			b = j
		}
	}
	return b
}

// prepare is what Fit and ChooseRank do before any EM: code the episodes,
// build the prototype model with the form for the largest rank that will
// be fitted (checking it fits Options.MemoryLimit), and serialise the
// progress reports of concurrent starts.
func prepare(d *ingest.Dataset, o *Options) (*coded, *Model, func(TraceRow), error) {
	kind, values := rewardSupport(d.Reward)
	all := code(d, kind, values)
	proto := protoModel(d, all, o)
	if err := chooseProtoForm(proto, all, o); err != nil {
		return nil, nil, nil, err
	}
	return all, proto, serialReport(o), nil
}

// serialReport is a report function that hands the trace rows to
// o.Reporter one at a time, whichever goroutine calls it.
func serialReport(o *Options) func(TraceRow) {
	var mu sync.Mutex
	return func(r TraceRow) {
		mu.Lock()
		o.Reporter.Iteration(r)
		mu.Unlock()
	}
}

// Fit estimates θ̂ from d: the maximum-likelihood rank-r latent-state model
// (rank chosen by held-out likelihood when Options.Rank is 0) fitted by EM,
// moved into Θ_min (see ThetaMinCheck). The returned model is prepared.
func Fit(ctx context.Context, d *ingest.Dataset, opts Options) (*Result, error) {
	o, err := checkedOptions(d, opts)
	if err != nil {
		return nil, err
	}
	all, proto, report, err := prepare(d, &o)
	if err != nil {
		return nil, err
	}
	res := &Result{HeldOutLogLik: math.NaN(), Steps: all.K * all.H}

	S, fo, err := fitRankOptions(ctx, all, proto, &o, res, report)
	if err != nil {
		return nil, err
	}
	rs, b, err := fitAll(ctx, d, all, proto, S, &fo, report)
	if err != nil {
		return nil, err
	}
	res.takeStarts(rs, b)

	if err := res.thetaMin(ctx, d, all, &o); err != nil {
		return nil, err
	}
	o.Splits, o.Reporter, o.EStepper = nil, nil, nil
	res.Options = o
	return res, nil
}

// checkedOptions returns opts with defaults filled in, after checking
// them, the dataset and the splits.
func checkedOptions(d *ingest.Dataset, opts Options) (Options, error) {
	o, err := dataOptions(d, opts)
	if err != nil {
		return o, err
	}
	return o, checkSplits(o.Splits, d.NumEpisodes(), d.Horizon)
}

// dataOptions returns opts with defaults filled in, after checking them
// and the dataset d.
func dataOptions(d *ingest.Dataset, opts Options) (Options, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return o, err
	}
	return o, checkDataset(d)
}

// fitRankOptions returns the rank of the final fit (startRank, or the
// rank search's choice) and the options of the final fit.
func fitRankOptions(ctx context.Context, all *coded, proto *Model, o *Options, res *Result, report func(TraceRow)) (int, Options, error) {
	S, err := startRank(o, all, proto)
	if err != nil {
		return 0, Options{}, err
	}
	fo := *o
	if S == 0 {
		var sm *Model
		S, sm, _, err = rankSearch(ctx, all, proto, o, res, report)
		if err != nil {
			return 0, Options{}, err
		}
		if sm != nil {
			// The search compared the starts already: one start on all
			// episodes, from the search's model.
			fo.Start, fo.Restarts = sm, 1
			// The growth on all the logs may have chosen the other form
			// (rankgrow.go).
			proto.Compact = sm.Compact
		}
	}
	return S, fo, nil
}

// takeStarts records the starts' traces and log-likelihoods in res and
// takes the best start b's model.
func (res *Result) takeStarts(rs []emResult, b int) {
	for _, r := range rs {
		res.Trace = append(res.Trace, r.trace...)
		res.RestartLogLiks = append(res.RestartLogLiks, r.ll)
	}
	res.BestRestart = b
	res.Iterations, res.Converged = rs[b].iters, rs[b].converged
	res.Model = rs[b].model
	res.LogLik = rs[b].ll
	res.UnconstrainedLogLik = rs[b].ll
}

// startRank is the rank of the fit: o.Rank, or the start model's when
// o.Rank is 0 (0 when neither is set: the search chooses). The start
// model must be valid and match the data, the rank and the dynamics.
func startRank(o *Options, all *coded, proto *Model) (int, error) {
	S, st := o.Rank, o.Start
	if st == nil {
		return S, nil
	}
	if err := st.Validate(1e-6); err != nil {
		return 0, errorf(ErrOptions, "start model: %v", err)
	}
	if S == 0 {
		S = st.States
	}
	if !st.matches(all, proto, S) {
		return 0, errorf(ErrOptions, "start model does not match the data, rank and dynamics")
	}
	return S, nil
}

// matches says whether the start model m fits the coded data, the
// prototype's dynamics and form, and rank S.
func (m *Model) matches(all *coded, proto *Model, S int) bool {
	return m.States == S && m.NumObs == all.O && m.NumActions == all.A && m.Horizon == all.H &&
		m.Stationary == proto.Stationary && m.Compact == proto.Compact && m.Reward == all.kind && slices.Equal(m.RewardValues, all.values)
}

// thetaMin projects res.Model onto Θ_min (projectThetaMin) with the
// logged propensities or, without them, the estimated behaviour, and
// records the projection and the log-likelihood it costs.
func (res *Result) thetaMin(ctx context.Context, d *ingest.Dataset, all *coded, o *Options) error {
	prop := d.Propensity
	if prop == nil {
		prop = EstimateBehavior(d)
		res.BehaviorEstimated = true
	}
	res.Propensity = prop
	tm, m, err := projectThetaMin(ctx, d, all, res.Model, prop, o)
	if err != nil {
		return err
	}
	res.ThetaMin = tm
	if m != res.Model {
		res.Model = m
		ll, err := o.runEStep(ctx, newKernel(m, all), all, o.Workers)
		if err != nil {
			return err
		}
		res.LogLik = ll.ll
		res.ThetaMin.DeltaLogLik = ll.ll - res.UnconstrainedLogLik
	}
	return nil
}

func checkSplits(splits [][]int, K, H int) error {
	if splits == nil {
		return nil
	}
	if len(splits) > H {
		return errorf(ErrData, "%d splits for horizon %d", len(splits), H)
	}
	for h, ks := range splits {
		if err := checkSplit(h, ks, K); err != nil {
			return err
		}
	}
	return nil
}

// checkSplit checks that split h's episode indices ks are in 0..K-1.
func checkSplit(h int, ks []int, K int) error {
	for _, k := range ks {
		if k < 0 || k >= K {
			return errorf(ErrData, "split %d holds episode index %d, want 0..%d", h, k, K-1)
		}
	}
	return nil
}

// WithPropensity returns d with the propensities this fit used: d itself
// when it has logged ones, otherwise a shallow copy carrying the estimated
// behaviour policy (r.Propensity).
func (r *Result) WithPropensity(d *ingest.Dataset) *ingest.Dataset {
	if d.HasPropensity() || r.Propensity == nil {
		return d
	}
	c := *d
	c.Propensity = r.Propensity
	return &c
}
