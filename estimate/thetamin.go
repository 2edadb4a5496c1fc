package estimate

import (
	"context"
	"math"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/parallel"
)

// LogPMin is the default ln p_min = ln δ − ln K − ln H − H·ln(|O||A|)
// (p_min = δ/(K·H·(|O||A|)^H), Theorem for offline PSR-LCB), computed in
// log space because (|O||A|)^H overflows for moderate H.
func LogPMin(delta float64, K, H, O, A int) float64 {
	return math.Log(delta) - math.Log(float64(K)) - math.Log(float64(H)) - float64(H)*math.Log(float64(O)*float64(A))
}

// prefix is τ_h of episode k (h ≥ 1) with its ln π^b(a_{1:h}|o_{1:h}).
type prefix struct {
	k, h    int
	logProp float64
}

// thetaMinPrefixes lists the constrained prefixes: the length-h prefixes
// of the episodes of splits[h] (h ≥ 1; τ_0 is empty and has probability
// 1), or every prefix τ_1..τ_H of every episode when splits is nil.
func thetaMinPrefixes(K, H int, splits [][]int, prop []float64) []prefix {
	if splits == nil {
		return allPrefixes(K, H, prop)
	}
	var out []prefix
	for h, ks := range splits {
		if h == 0 {
			continue
		}
		for _, k := range ks {
			out = append(out, prefix{k, h, sumLogs(prop[k*H : k*H+h])})
		}
	}
	return out
}

// allPrefixes lists every prefix τ_1..τ_H of every episode.
func allPrefixes(K, H int, prop []float64) []prefix {
	var out []prefix
	for k := 0; k < K; k++ {
		s := 0.0
		for h := 1; h <= H; h++ {
			s += math.Log(prop[k*H+h-1])
			out = append(out, prefix{k, h, s})
		}
	}
	return out
}

// prefixMargins writes ln P_θ(o_{1:h}|a_{1:h}) + ln π^b − ln p_min of every
// prefix into out, in parallel over fixed chunks.
func prefixMargins(ctx context.Context, m *Model, d *ingest.Dataset, ps []prefix, logPMin float64, workers int, out []float64) error {
	H := d.Horizon
	const chunk = 4096
	nc := (len(ps) + chunk - 1) / chunk
	return parallel.For(ctx, nc, workers, func(ci int) error {
		for i := ci * chunk; i < min((ci+1)*chunk, len(ps)); i++ {
			p := ps[i]
			ll := m.ObsLogLik(d.Obs[p.k*H:p.k*H+p.h], d.Act[p.k*H:p.k*H+p.h])
			out[i] = ll + p.logProp - logPMin
		}
		return nil
	})
}

// FloorModel is the model Θ_min projections mix toward: uniform initial
// state and transitions (so the state carries no information) and
// emissions equal to the data's marginal frequencies (observations with
// add-½ smoothing; categorical rewards likewise; Gaussian rewards with the
// overall mean and variance). Its probability of a history is the product
// of the marginal frequencies of its observations, positive for every
// history made of logged symbols. It has the shape of like.
func FloorModel(d *ingest.Dataset, like *Model) *Model {
	m := shapeLike(like)
	f := floorFreqs(d, like)
	setFloorFirst(m, f.fo)
	for range like.Trans {
		f.addTable(m)
	}
	m.Prepare()
	return m
}

// floorMarginals are FloorModel's marginals of d: the observations'
// frequencies fo, and the categorical rewards' fv or the Gaussian
// rewards' mean gm and variance gv.
type floorMarginals struct {
	fo, fv []float64
	gm, gv float64
}

// floorFreqs computes the marginals of d for a model shaped like like.
func floorFreqs(d *ingest.Dataset, like *Model) floorMarginals {
	var f floorMarginals
	f.fo = obsFreqs(d, like.NumObs)
	f.setRewardFreqs(d, like)
	return f
}

// setFloorFirst sets the floor model m's first step: a uniform s_1 and
// o_1 of the marginal observation frequencies fo in every state.
func setFloorFirst(m *Model, fo []float64) {
	S, O := m.States, m.NumObs
	m.Init = make([]float64, S)
	m.Obs1 = make([]float64, S*O)
	for s := 0; s < S; s++ {
		m.Init[s] = 1 / float64(S)
		copy(m.Obs1[s*O:(s+1)*O], fo)
	}
}

// obsFreqs is the frequencies of the O observations over every step of
// d, with 0.5 added to every count.
func obsFreqs(d *ingest.Dataset, O int) []float64 {
	fo := make([]float64, O)
	for _, o := range d.Obs {
		fo[o]++
	}
	normRow(fo, 0.5)
	return fo
}

// setRewardFreqs sets the reward marginals of d: the frequencies of
// like's categorical reward values (0.5 added to every count), or the
// Gaussian mean and variance (at least the variance floor).
func (f *floorMarginals) setRewardFreqs(d *ingest.Dataset, like *Model) {
	kind, values := like.Reward, like.RewardValues
	if kind == RewardCategorical {
		c := code(d, kind, values)
		f.fv = make([]float64, len(values))
		for _, v := range c.rv {
			f.fv[v]++
		}
		normRow(f.fv, 0.5)
	} else {
		c := code(d, kind, nil)
		f.gm, f.gv = c.rewMean, max(c.rewVar, c.varFloor())
	}
}

// addTable appends a step table of uniform transitions and marginal
// emissions and rewards to m.
func (f floorMarginals) addTable(m *Model) {
	S, O, A := m.States, m.NumObs, m.NumActions
	T := make([]float64, A*S*S)
	E := make([]float64, m.EmitRows()*O)
	for r := 0; r < A*S; r++ {
		for s2 := 0; s2 < S; s2++ {
			T[r*S+s2] = 1 / float64(S)
		}
	}
	for r := 0; r < m.EmitRows(); r++ {
		copy(E[r*O:(r+1)*O], f.fo)
	}
	m.Trans = append(m.Trans, T)
	m.Emit = append(m.Emit, E)
	f.addRewards(m)
}

// addRewards appends a reward table of the marginal rewards to m.
func (f floorMarginals) addRewards(m *Model) {
	n := m.RewardCells()
	if m.Reward == RewardCategorical {
		V := len(m.RewardValues)
		R := make([]float64, n*V)
		for i := 0; i < n; i++ {
			copy(R[i*V:(i+1)*V], f.fv)
		}
		m.RewardProb = append(m.RewardProb, R)
	} else {
		mu, vr := make([]float64, n), make([]float64, n)
		for i := range mu {
			mu[i], vr[i] = f.gm, f.gv
		}
		m.RewardMean = append(m.RewardMean, mu)
		m.RewardVar = append(m.RewardVar, vr)
	}
}

// Mix returns (1−w)·m + w·f, table by table (m and f of the same shape).
// Every table stays a valid distribution; Gaussian means and variances
// are mixed likewise.
func Mix(m, f *Model, w float64) *Model {
	nm := shapeLike(m)
	nm.Init = mixVec(m.Init, f.Init, w)
	nm.Obs1 = mixVec(m.Obs1, f.Obs1, w)
	nm.Trans = mixTables(m.Trans, f.Trans, w)
	nm.Emit = mixTables(m.Emit, f.Emit, w)
	nm.RewardProb = mixTables(m.RewardProb, f.RewardProb, w)
	nm.RewardMean = mixTables(m.RewardMean, f.RewardMean, w)
	nm.RewardVar = mixTables(m.RewardVar, f.RewardVar, w)
	nm.Prepare()
	return nm
}

// mixVec returns (1−w)·a + w·b entry by entry.
func mixVec(a, b []float64, w float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = (1-w)*a[i] + w*b[i]
	}
	return out
}

// mixTables is mixVec table by table (nil for no tables).
func mixTables(a, b [][]float64, w float64) [][]float64 {
	var out [][]float64
	for t := range a {
		out = append(out, mixVec(a[t], b[t], w))
	}
	return out
}

// ThetaMinCheck evaluates the Θ_min constraint for m: the smallest margin
// ln P_θ(o_{1:h}|a_{1:h}) + ln π^b(a_{1:h}|o_{1:h}) − ln p_min over the
// constrained prefixes (see Options.Splits) and the number of prefixes
// with a negative margin. prop holds the per-step propensities (K·H).
func ThetaMinCheck(ctx context.Context, m *Model, d *ingest.Dataset, splits [][]int, prop []float64, logPMin float64, workers int) (slack float64, violated int, err error) {
	ps := thetaMinPrefixes(d.NumEpisodes(), d.Horizon, splits, prop)
	mg := make([]float64, len(ps))
	if err := prefixMargins(ctx, m, d, ps, logPMin, max(1, workers), mg); err != nil {
		return 0, 0, err
	}
	return minMargin(mg), countNegative(mg), nil
}

// minMargin is the smallest of mg (+Inf when mg is empty).
func minMargin(mg []float64) float64 {
	s := math.Inf(1)
	for _, x := range mg {
		s = math.Min(s, x)
	}
	return s
}

// countNegative is the number of negative margins in mg.
func countNegative(mg []float64) int {
	n := 0
	for _, x := range mg {
		if x < 0 {
			n++
		}
	}
	return n
}

// marginEval computes the margins mg of the prefixes ps of d under a
// model (prefixMargins).
type marginEval struct {
	ctx     context.Context
	d       *ingest.Dataset
	ps      []prefix
	lpm     float64
	workers int
	mg      []float64
}

// slack sets e.mg to the margins under mm and returns the smallest.
func (e *marginEval) slack(mm *Model) (float64, error) {
	if err := prefixMargins(e.ctx, mm, e.d, e.ps, e.lpm, e.workers, e.mg); err != nil {
		return 0, err
	}
	return minMargin(e.mg), nil
}

// logPMin is Options.LogPMin, or LogPMin of the logs c when it is 0.
func (o *Options) logPMin(c *coded) float64 {
	if o.LogPMin != 0 {
		return o.LogPMin
	}
	return LogPMin(o.Delta, c.K, c.H, c.O, c.A)
}

// projectThetaMin checks Θ_min for m and, where it binds, returns
// (1−w)·m + w·FloorModel with the least w ∈ (0,1] (by bisection to
// MixTolerance) under which every prefix that the floor model itself
// satisfies is satisfied.
func projectThetaMin(ctx context.Context, d *ingest.Dataset, c *coded, m *Model, prop []float64, o *Options) (ThetaMin, *Model, error) {
	lpm := o.logPMin(c)
	tm := ThetaMin{LogPMin: lpm}
	ps := thetaMinPrefixes(c.K, c.H, o.Splits, prop)
	tm.Prefixes = len(ps)
	if len(ps) == 0 {
		tm.SlackBefore, tm.Slack = math.Inf(1), math.Inf(1)
		return tm, m, nil
	}
	ev := &marginEval{ctx: ctx, d: d, ps: ps, lpm: lpm, workers: o.Workers, mg: make([]float64, len(ps))}
	s0, err := ev.slack(m)
	if err != nil {
		return tm, nil, err
	}
	tm.SlackBefore, tm.Slack = s0, s0
	tm.Binding = countNegative(ev.mg)
	if tm.Binding == 0 || o.SkipThetaMin {
		return tm, m, nil
	}
	mm, err := tm.mixToFloor(ev, m)
	if err != nil {
		return tm, nil, err
	}
	return tm, mm, nil
}

// mixToFloor is the projection of projectThetaMin where Θ_min binds: it
// mixes m toward FloorModel by the least weight that satisfies every
// prefix the floor model satisfies (the others count as Unsatisfiable).
func (tm *ThetaMin) mixToFloor(ev *marginEval, m *Model) (*Model, error) {
	floor := FloorModel(ev.d, m)
	if _, err := ev.slack(floor); err != nil {
		return nil, err
	}
	active, unsat := activePrefixes(ev.ps, ev.mg)
	tm.Unsatisfiable += unsat
	hi, err := leastMix(ev.ctx, ev.d, m, floor, active, ev.lpm, ev.workers)
	if err != nil {
		return nil, err
	}
	if hi == 0 {
		// Only prefixes the floor cannot lift bind: leave the fit alone.
		return m, nil
	}
	mm := Mix(m, floor, hi)
	tm.MixWeight = hi
	if tm.Slack, err = ev.slack(mm); err != nil {
		return nil, err
	}
	return mm, nil
}

// activePrefixes returns the prefixes of ps whose margin in mg is not
// negative, and the number of the others.
func activePrefixes(ps []prefix, mg []float64) (active []prefix, negative int) {
	for i, x := range mg {
		if x >= 0 {
			active = append(active, ps[i])
		} else {
			negative++
		}
	}
	return active, negative
}

// leastMix is the least weight w of floor (to MixTolerance, by bisection)
// at which Mix(m, floor, w) keeps every active prefix's margin at least
// lpm; 0 when m itself does.
func leastMix(ctx context.Context, d *ingest.Dataset, m, floor *Model, active []prefix, lpm float64, workers int) (float64, error) {
	amg := make([]float64, len(active))
	feasible := func(w float64) (bool, error) {
		if err := prefixMargins(ctx, Mix(m, floor, w), d, active, lpm, workers, amg); err != nil {
			return false, err
		}
		return countNegative(amg) == 0, nil
	}
	if ok, err := feasible(0); err != nil || ok {
		return 0, err
	}
	lo, hi := 0.0, 1.0
	for hi-lo > MixTolerance {
		mid := 0.5 * (lo + hi)
		ok, err := feasible(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}
