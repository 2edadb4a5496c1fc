package estimate

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// cloneModel returns a deep copy of m's parameters.
func cloneModel(m *Model) *Model {
	c := shapeLike(m)
	cp := func(p []float64) []float64 { return append([]float64(nil), p...) }
	cpAll := func(ps [][]float64) [][]float64 {
		var out [][]float64
		for _, p := range ps {
			out = append(out, cp(p))
		}
		return out
	}
	c.Init, c.Obs1 = cp(m.Init), cp(m.Obs1)
	c.Trans, c.Emit = cpAll(m.Trans), cpAll(m.Emit)
	c.RewardProb, c.RewardMean, c.RewardVar = cpAll(m.RewardProb), cpAll(m.RewardMean), cpAll(m.RewardVar)
	c.Prepare()
	return c
}

// TestFlattenRoundTrip: mapping a model to the extrapolation space and
// back gives it again, to 1e-14 relative.
func TestFlattenRoundTrip(t *testing.T) {
	for i, mc := range smallCases {
		m := randomModel(mc.S, mc.O, mc.A, mc.H, mc.stationary, mc.values, uint64(70+i))
		back, ok := unflatten(m, flatten(m, nil), 1e-12)
		if !ok {
			t.Fatalf("%s: round trip infeasible", mc.name)
		}
		a, b := flatten(m, nil), flatten(back, nil)
		pa, pb := paramBlocks(m), paramBlocks(back)
		if len(a) != len(b) || len(pa) != len(pb) {
			t.Fatalf("%s: %d and %d parameters", mc.name, len(a), len(b))
		}
		for j := range pa {
			for k, x := range pa[j].p {
				if !relClose(x, pb[j].p[k], 1e-14) {
					t.Fatalf("%s: block %d entry %d: %v, back %v", mc.name, j, k, x, pb[j].p[k])
				}
			}
		}
	}
}

// TestSquaremStep checks the extrapolation against hand-solved cases on a
// Gaussian-reward model whose probabilities are the same in θ0, θ1, θ2
// (so r = v = 0 there) and whose reward means and variances move.
//
// Means μ_n = μ* + λⁿ·d with λ = 0.8 give r = (λ−1)d, v = (λ−1)²d,
// α = 1/(1−λ) = 5 and θ' = μ* + d·(1 + α(λ−1))², which is μ* itself when
// α = 5 and μ* + 0.04·d when α is capped at 4.
//
// A variance moving 1, 0.5, 0.1 (r = −0.5, v = 0.1, the same ratio 5)
// would be 1 − 5 + 2.5 < 0 at α = 5; halving towards 1 gives α = 3, 2,
// 1.5, 1.25, 1.125, the first with a variance 1 − 1.125 + 0.1265625 =
// 0.0015625 above the floor 1e-3.
func TestSquaremStep(t *testing.T) {
	const lambda = 0.8
	base := randomModel(2, 2, 2, 3, true, nil, 81)
	d := []float64{3, -1, 0.5, 7}
	seq := func(n int, varSeq []float64) *Model {
		m := cloneModel(base)
		for i := range m.RewardMean[0] {
			m.RewardMean[0][i] = base.RewardMean[0][i] + math.Pow(lambda, float64(n))*d[i%len(d)]
		}
		if varSeq != nil {
			m.RewardVar[0][0] = varSeq[n]
		}
		m.Prepare()
		return m
	}
	check := func(name string, got *Model, gotAlpha, wantAlpha, k float64, wantVar float64) {
		t.Helper()
		if math.Abs(gotAlpha-wantAlpha) > 1e-12 {
			t.Fatalf("%s: α = %v, want %v", name, gotAlpha, wantAlpha)
		}
		for i, mu := range got.RewardMean[0] {
			want := base.RewardMean[0][i] + k*d[i%len(d)]
			if math.Abs(mu-want) > 1e-12*math.Max(1, math.Abs(want)) {
				t.Fatalf("%s: mean %d = %v, want %v", name, i, mu, want)
			}
		}
		if wantVar > 0 && math.Abs(got.RewardVar[0][0]-wantVar) > 1e-12 {
			t.Fatalf("%s: variance %v, want %v", name, got.RewardVar[0][0], wantVar)
		}
		for i, p := range got.Trans[0] {
			if !relClose(p, base.Trans[0][i], 1e-14) {
				t.Fatalf("%s: transition %d moved from %v to %v", name, i, base.Trans[0][i], p)
			}
		}
	}

	q := newSquarem()
	q.stepMax = 100
	m, a := q.extrapolate(seq(0, nil), seq(1, nil), seq(2, nil), 1e-12)
	check("uncapped", m, a, 5, 0, 0)

	q = newSquarem()
	q.stepMax = 4
	m, a = q.extrapolate(seq(0, nil), seq(1, nil), seq(2, nil), 1e-12)
	check("capped", m, a, 4, 0.04, 0)
	q.accepted(a, true)
	if q.stepMax != 16 {
		t.Fatalf("step bound %v after an accepted capped step, want 16", q.stepMax)
	}
	q.accepted(a, false)
	if q.stepMax != 4 {
		t.Fatalf("step bound %v after a rejected step, want 4", q.stepMax)
	}

	vs := []float64{1, 0.5, 0.1}
	q = newSquarem()
	q.stepMax = 100
	m, a = q.extrapolate(seq(0, vs), seq(1, vs), seq(2, vs), 1e-3)
	// μ* + d·(1 + 1.125·(−0.2))² = μ* + 0.600625·d.
	check("variance floor", m, a, 1.125, 0.600625, 0.0015625)

	// Probabilities: a large step still gives valid distributions.
	ma := randomModel(3, 3, 2, 4, true, []float64{0, 1}, 82)
	mb := randomModel(3, 3, 2, 4, true, []float64{0, 1}, 83)
	m0, m1, m2 := ma, Mix(ma, mb, 0.5), Mix(ma, mb, 0.75)
	q = newSquarem()
	q.stepMax = 1e3
	m, a = q.extrapolate(m0, m1, m2, 1e-12)
	if a <= 1 {
		t.Fatalf("no extrapolation (α = %v)", a)
	}
	if err := m.Validate(1e-12); err != nil {
		t.Fatalf("α = %v: %v", a, err)
	}
}

// emCase is an EM run of the comparison tests.
type emCase struct {
	name  string
	mc    modelCase
	K     int
	truth bool // start at the true model (else the informed start)
}

// runOne runs EM from the start of ec, plain or accelerated.
func runOne(t *testing.T, ec emCase, tol float64, workers int, plain bool) emResult {
	t.Helper()
	mc := ec.mc
	truth := randomModel(mc.S, mc.O, mc.A, mc.H, mc.stationary, mc.values, 91)
	d := sampleDataset(truth, ec.K, 92)
	dyn := DynamicsStationary
	if !mc.stationary {
		dyn = DynamicsPerStep
	}
	kind, values := rewardSupport(d.Reward)
	c := code(d, kind, values)
	o, err := Options{Rank: mc.S, Dynamics: dyn, Restarts: 1, MaxIter: 20000, Tol: tol, PlainEM: plain}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	m0 := informedStart(c, protoModel(d, c, &o), mc.S, 5)
	if ec.truth {
		m0 = truth
	}
	r := runEM(context.Background(), c, m0, &o, workers, TraceRow{}, func(TraceRow) {})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !r.converged {
		t.Fatalf("%s: plain=%v did not converge in %d E-steps", ec.name, plain, r.esteps)
	}
	return r
}

// runBoth runs EM from the same start with and without acceleration.
func runBoth(t *testing.T, ec emCase, tol float64, workers int) (plain, accel emResult) {
	t.Helper()
	return runOne(t, ec, tol, workers, true), runOne(t, ec, tol, workers, false)
}

var emCases = []emCase{
	{"cat-stationary", smallCases[0], 2000, false},
	{"cat-per-step", smallCases[1], 1000, false},
	{"gauss-stationary-warm", smallCases[2], 5000, true},
	{"gauss-per-step-warm", smallCases[3], 5000, true},
}

// TestSquaremAgreesWithPlain: from the same start, accelerated EM run to
// a tight tolerance (1e-8 relative) reaches at least the log-likelihood of
// plain EM run to the same tolerance, less 0.05 nats, and uses fewer
// E-steps. 0.05 nats: both stop when one EM step gains about 1e-8·|LL|
// ≈ 1e-4 nats, and a linear-rate method that slow can still be some
// hundred such steps from the optimum (measured differences: 3e-3 nats
// at most). The Gaussian cases start at the true model: from the
// informed start their likelihood has several local maxima close
// together and either run may reach another one.
func TestSquaremAgreesWithPlain(t *testing.T) {
	const tol, slack = 1e-8, 0.05
	for _, ec := range emCases {
		plain, accel := runBoth(t, ec, tol, 2)
		t.Logf("%s: plain %d E-steps ll %.6f, accelerated %d E-steps ll %.6f", ec.name, plain.esteps, plain.ll, accel.esteps, accel.ll)
		if accel.ll < plain.ll-slack {
			t.Errorf("%s: accelerated log-likelihood %v below plain EM's %v", ec.name, accel.ll, plain.ll)
		}
		if accel.esteps >= plain.esteps {
			t.Errorf("%s: accelerated EM used %d E-steps, plain %d", ec.name, accel.esteps, plain.esteps)
		}
	}
}

// TestSquaremTrace: every start's trace has increasing iteration numbers
// up to MaxIter and a non-decreasing objective (the log-likelihood
// without smoothing, the penalised one with it), up to 1e-12 relative
// for rounding; each start returns the best point of its trace, whose
// log-likelihood is exact (Fit's, recomputed); the Reporter sees the
// trace rows; and some extrapolation was rejected (the trace skips an
// iteration number), so that path is exercised.
func TestSquaremTrace(t *testing.T) {
	skipped := false
	for _, mc := range smallCases[:4] {
		for _, sm := range []float64{-1, 0} {
			m := randomModel(mc.S, mc.O, mc.A, mc.H, mc.stationary, mc.values, 33)
			d := sampleDataset(m, 1500, 34)
			dyn := DynamicsStationary
			if !mc.stationary {
				dyn = DynamicsPerStep
			}
			const maxIter = 150
			opts := Options{Rank: mc.S + 1, Dynamics: dyn, Restarts: 2, MaxIter: maxIter, Tol: 1e-10, Smoothing: sm, SkipThetaMin: true, Seed: 2}
			var rep traceRecorder
			opts.Reporter = &rep
			res, err := Fit(context.Background(), d, opts)
			if err != nil {
				t.Fatal(err)
			}
			// The same starts through runEM, for the objective of each row.
			o, _ := opts.withDefaults()
			kind, values := rewardSupport(d.Reward)
			c := code(d, kind, values)
			rs, err := fitRank(context.Background(), c, protoModel(d, c, &o), mc.S+1, &o, "all", func(TraceRow) {})
			if err != nil {
				t.Fatal(err)
			}
			var trace []TraceRow
			var obj []float64
			for _, r := range rs {
				trace = append(trace, r.trace...)
				obj = append(obj, r.obj...)
			}
			if len(trace) != len(res.Trace) || len(rep) != len(trace) {
				t.Fatalf("%s: %d rows from runEM, %d from Fit, %d reported", mc.name, len(trace), len(res.Trace), len(rep))
			}
			// Starts run concurrently: the reporter sees each start's
			// rows in order, interleaved with the other start's.
			var byStart [2][]TraceRow
			for _, row := range rep {
				byStart[row.Restart] = append(byStart[row.Restart], row)
			}
			bestLL := map[int]float64{}
			maxFall := 0.0
			for i, c := range res.Trace {
				if trace[i] != c {
					t.Fatalf("%s: Fit row %+v, runEM row %+v", mc.name, c, trace[i])
				}
				if len(byStart[c.Restart]) == 0 || byStart[c.Restart][0] != c {
					t.Fatalf("%s: trace row %+v not reported in order", mc.name, c)
				}
				byStart[c.Restart] = byStart[c.Restart][1:]
				if c.Iter > maxIter {
					t.Fatalf("%s: iteration %d beyond MaxIter", mc.name, c.Iter)
				}
				if i == 0 || res.Trace[i-1].Restart != c.Restart {
					bestLL[c.Restart] = c.LogLik
					continue
				}
				p := res.Trace[i-1]
				if c.Iter <= p.Iter {
					t.Fatalf("%s: iteration %d after %d", mc.name, c.Iter, p.Iter)
				}
				skipped = skipped || c.Iter > p.Iter+1
				if obj[i] < obj[i-1]-1e-12*math.Abs(obj[i-1]) {
					t.Fatalf("%s smoothing %v: restart %d iteration %d: objective fell from %v to %v", mc.name, sm, c.Restart, c.Iter, obj[i-1], obj[i])
				}
				if sm < 0 && obj[i] != c.LogLik {
					t.Fatalf("%s: objective %v without smoothing, log-likelihood %v", mc.name, obj[i], c.LogLik)
				}
				maxFall = max(maxFall, (p.LogLik-c.LogLik)/math.Abs(p.LogLik))
				if c.LogLik > bestLL[c.Restart] {
					bestLL[c.Restart] = c.LogLik
				}
			}
			t.Logf("%s smoothing %v: largest relative fall of the log-likelihood %.3g", mc.name, sm, maxFall)
			for j, r := range rs {
				if r.ll != res.RestartLogLiks[j] {
					t.Fatalf("%s: start %d: Fit %v, runEM %v", mc.name, j, res.RestartLogLiks[j], r.ll)
				}
				if sm < 0 && r.ll != bestLL[j] {
					t.Fatalf("%s: start %d returned log-likelihood %v, best of its trace %v", mc.name, j, r.ll, bestLL[j])
				}
			}
			if got := res.Model.DataLogLik(d); !relClose(got, res.LogLik, 1e-10) {
				t.Fatalf("%s: reported log-likelihood %v, recomputed %v", mc.name, res.LogLik, got)
			}
		}
	}
	if !skipped {
		t.Fatal("no extrapolation was rejected in any run: the fallback to θ2 was never exercised")
	}
}

type traceRecorder []TraceRow

func (r *traceRecorder) Iteration(row TraceRow) { *r = append(*r, row) }

// TestSquaremWorkers: accelerated EM gives bit-identical results with 1
// and 2 workers on data spanning several E-step blocks, over enough
// iterations that extrapolations are accepted and rejected.
func TestSquaremWorkers(t *testing.T) {
	ec := emCase{"cat-stationary", smallCases[0], 3*blockEpisodes + 17, false}
	a1 := runOne(t, ec, 1e-8, 1, false)
	a2 := runOne(t, ec, 1e-8, 2, false)
	if !sameModel(a1.model, a2.model) || math.Float64bits(a1.ll) != math.Float64bits(a2.ll) || a1.esteps != a2.esteps {
		t.Fatalf("1 worker: ll %v after %d E-steps; 2 workers: ll %v after %d", a1.ll, a1.esteps, a2.ll, a2.esteps)
	}
	if len(a1.trace) != len(a2.trace) {
		t.Fatalf("trace lengths %d and %d", len(a1.trace), len(a2.trace))
	}
	for i := range a1.trace {
		if a1.trace[i] != a2.trace[i] {
			t.Fatalf("trace row %d: %+v vs %+v", i, a1.trace[i], a2.trace[i])
		}
	}
	if len(a1.trace) == a1.esteps {
		t.Fatal("no extrapolation rejected: pick a longer run")
	}
}

// TestLogPriorMStep: the M-step with smoothing eps is the posterior mode
// under logPrior, so the fixed point of EM with smoothing is a local
// maximum of ln P(D|θ) + logPrior(θ). The fixed point is reached with
// accelerated EM to a relative tolerance of 1e-14 with a large eps (0.5,
// so that the prior moves the fit), then moved by ±1e-3 along random
// directions of the extrapolation space: no move raises the penalised
// log-likelihood by more than 1e-9 relative (the second-order fall of
// such a move is about 1e-6·curvature, far above what is left of the
// gradient). Scored with a prior of the wrong weight (2·eps) some move
// does raise it, so the check can tell.
func TestLogPriorMStep(t *testing.T) {
	const eps, step = 0.5, 1e-3
	for _, mc := range smallCases[:4] {
		truth := randomModel(mc.S, mc.O, mc.A, mc.H, mc.stationary, mc.values, 101)
		d := sampleDataset(truth, 300, 102)
		dyn := DynamicsStationary
		if !mc.stationary {
			dyn = DynamicsPerStep
		}
		kind, values := rewardSupport(d.Reward)
		c := code(d, kind, values)
		o, err := Options{Rank: mc.S, Dynamics: dyn, Smoothing: eps, Tol: 1e-14, MaxIter: 5000}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		m0 := informedStart(c, protoModel(d, c, &o), mc.S, 3)
		res := runEM(context.Background(), c, m0, &o, 1, TraceRow{}, func(TraceRow) {})
		if res.err != nil {
			t.Fatal(res.err)
		}
		star := res.model
		score := func(m *Model, w float64) float64 {
			st, err := newKernel(m, c).estep(context.Background(), c, 1)
			if err != nil {
				t.Fatal(err)
			}
			return st.ll + logPrior(m, w, c)
		}
		f0, w0 := score(star, eps), score(star, 2*eps)
		x0 := flatten(star, nil)
		rng := rand.New(rand.NewPCG(104, 0))
		wrongRose := false
		for j := 0; j < 6; j++ {
			u := make([]float64, len(x0))
			for i := range u {
				u[i] = rng.NormFloat64()
			}
			for _, sgn := range []float64{-1, 1} {
				x := make([]float64, len(x0))
				for i := range x {
					x[i] = x0[i] + sgn*step*u[i]
				}
				m, ok := unflatten(star, x, c.varFloor())
				if !ok {
					continue
				}
				if f := score(m, eps); f > f0+1e-9*math.Abs(f0) {
					t.Fatalf("%s: a move from the fixed point (converged %v after %d E-steps) raises the penalised log-likelihood from %v to %v", mc.name, res.converged, res.esteps, f0, f)
				}
				wrongRose = wrongRose || score(m, 2*eps) > w0+1e-9*math.Abs(w0)
			}
		}
		if !wrongRose {
			t.Errorf("%s: no move raised the objective of a prior of twice the weight: the check cannot tell", mc.name)
		}
	}
}
