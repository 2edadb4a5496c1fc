package estimate

import (
	"context"
	"errors"
	"math"
	"testing"
)

func sameModel(a, b *Model) bool {
	eq := func(x, y []float64) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
				return false
			}
		}
		return true
	}
	eqAll := func(x, y [][]float64) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !eq(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a.States == b.States && eq(a.Init, b.Init) && eq(a.Obs1, b.Obs1) && eqAll(a.Trans, b.Trans) &&
		eqAll(a.Emit, b.Emit) && eqAll(a.RewardProb, b.RewardProb) && eqAll(a.RewardMean, b.RewardMean) &&
		eqAll(a.RewardVar, b.RewardVar)
}

// TestEMMonotone: with no smoothing EM is exact maximum likelihood and the
// log-likelihood never decreases (up to rounding, 1e-12 relative); with
// the default smoothing it may fall by at most the prior's weight, which
// is checked with 1e-7 relative.
func TestEMMonotone(t *testing.T) {
	for _, mc := range smallCases[:4] {
		for _, sm := range []float64{-1, 0} {
			m := randomModel(mc.S, mc.O, mc.A, mc.H, mc.stationary, mc.values, 31)
			d := sampleDataset(m, 1500, 32)
			dyn := DynamicsStationary
			if !mc.stationary {
				dyn = DynamicsPerStep
			}
			res, err := Fit(context.Background(), d, Options{Rank: mc.S + 1, Dynamics: dyn, Restarts: 2, MaxIter: 60, Tol: 1e-12, Smoothing: sm, SkipThetaMin: true, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			tol := 1e-12
			if sm == 0 {
				tol = 1e-7
			}
			for i := 1; i < len(res.Trace); i++ {
				p, c := res.Trace[i-1], res.Trace[i]
				if c.Restart != p.Restart {
					continue
				}
				if c.LogLik < p.LogLik-tol*math.Abs(p.LogLik) {
					t.Fatalf("%s smoothing %v: restart %d iteration %d: log-likelihood fell from %v to %v", mc.name, sm, c.Restart, c.Iter, p.LogLik, c.LogLik)
				}
			}
			if err := res.Model.Validate(1e-9); err != nil {
				t.Fatal(err)
			}
			if got := res.Model.DataLogLik(d); !relClose(got, res.LogLik, 1e-10) {
				t.Fatalf("%s: reported log-likelihood %v, recomputed %v", mc.name, res.LogLik, got)
			}
		}
	}
}

// TestWorkerDeterminism: 1 and 2 workers give bit-identical fits (the
// data span several E-step blocks).
func TestWorkerDeterminism(t *testing.T) {
	for _, values := range [][]float64{{0, 1, 5}, nil} {
		m := randomModel(3, 3, 2, 4, true, values, 41)
		d := sampleDataset(m, 3*blockEpisodes+17, 42)
		var prev *Result
		for _, w := range []int{1, 2, 3} {
			res, err := Fit(context.Background(), d, Options{Rank: 3, Restarts: 3, MaxIter: 15, Workers: w, Seed: 5, LogPMin: -8})
			if err != nil {
				t.Fatal(err)
			}
			if prev != nil {
				if !sameModel(prev.Model, res.Model) || math.Float64bits(prev.LogLik) != math.Float64bits(res.LogLik) {
					t.Fatalf("workers=%d: fit differs from workers=1 (loglik %v vs %v)", w, res.LogLik, prev.LogLik)
				}
				for i := range prev.Trace {
					if prev.Trace[i] != res.Trace[i] {
						t.Fatalf("workers=%d: trace row %d differs: %+v vs %+v", w, i, res.Trace[i], prev.Trace[i])
					}
				}
			}
			prev = res
		}
	}
}

// TestMLEReachesTruth: on 2e4 episodes from a known model, the fit at the
// true number of states reaches at least the true model's log-likelihood
// of the same data, less 2 nats (the smoothing prior and the stopping
// tolerance cost well under that; a local optimum costs hundreds).
func TestMLEReachesTruth(t *testing.T) {
	m := randomModel(2, 3, 2, 4, true, []float64{0, 1}, 51)
	d := sampleDataset(m, 20000, 52)
	truth := m.DataLogLik(d)
	res, err := Fit(context.Background(), d, Options{Rank: 2, Seed: 3, SkipThetaMin: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("true %.3f fitted %.3f restarts %v", truth, res.LogLik, res.RestartLogLiks)
	if res.LogLik < truth-2 {
		t.Fatalf("fitted log-likelihood %v below the true model's %v", res.LogLik, truth)
	}
}

// TestThetaMinProjection: with a p_min high enough to bind, the projected
// model satisfies every constraint, and the bisection weight is minimal:
// w − 2·MixTolerance violates some constraint.
func TestThetaMinProjection(t *testing.T) {
	m := randomModel(2, 3, 2, 4, true, []float64{0, 1}, 61)
	d := sampleDataset(m, 400, 62)
	K, H := d.NumEpisodes(), d.Horizon
	splits := make([][]int, H)
	for k := 0; k < K; k++ {
		splits[k%H] = append(splits[k%H], k)
	}
	base, err := Fit(context.Background(), d, Options{Rank: 2, Seed: 1, Splits: splits, SkipThetaMin: true})
	if err != nil {
		t.Fatal(err)
	}
	// Choose ln p_min just above the fit's weakest prefix.
	lpm := base.ThetaMin.LogPMin + base.ThetaMin.SlackBefore + 0.3
	res, err := Fit(context.Background(), d, Options{Rank: 2, Seed: 1, Splits: splits, LogPMin: lpm})
	if err != nil {
		t.Fatal(err)
	}
	tm := res.ThetaMin
	t.Logf("%+v", tm)
	if tm.Binding == 0 || tm.MixWeight <= 0 {
		t.Fatalf("constraint did not bind: %+v", tm)
	}
	slack, viol, err := ThetaMinCheck(context.Background(), res.Model, d, splits, d.Propensity, lpm, 1)
	if err != nil {
		t.Fatal(err)
	}
	if viol > tm.Unsatisfiable || (tm.Unsatisfiable == 0 && slack < 0) {
		t.Fatalf("projected model violates %d prefixes (slack %v)", viol, slack)
	}
	if math.Abs(slack-tm.Slack) > 1e-12 {
		t.Fatalf("reported slack %v, recomputed %v", tm.Slack, slack)
	}
	below := Mix(base.Model, FloorModel(d, base.Model), tm.MixWeight-2*MixTolerance)
	if _, v, _ := ThetaMinCheck(context.Background(), below, d, splits, d.Propensity, lpm, 1); v == 0 {
		t.Fatalf("weight %v − 2·tolerance also satisfies every constraint: bisection not minimal", tm.MixWeight)
	}
	if !(tm.DeltaLogLik < 0) || !relClose(res.LogLik-res.UnconstrainedLogLik, tm.DeltaLogLik, 1e-12) {
		t.Fatalf("delta log-likelihood %v (fit %v, unconstrained %v)", tm.DeltaLogLik, res.LogLik, res.UnconstrainedLogLik)
	}
	// The default p_min does not bind on data drawn from the fitted
	// family.
	if base.ThetaMin.Binding != 0 {
		t.Fatalf("default p_min binds: %+v", base.ThetaMin)
	}
	want := math.Log(0.05) - math.Log(float64(K)) - math.Log(float64(H)) - float64(H)*math.Log(6)
	if !relClose(base.ThetaMin.LogPMin, want, 1e-14) {
		t.Fatalf("ln p_min %v, want %v", base.ThetaMin.LogPMin, want)
	}
}

func TestFitErrors(t *testing.T) {
	m := randomModel(2, 2, 2, 3, true, []float64{0, 1}, 1)
	d := sampleDataset(m, 10, 1)
	cases := []struct {
		name string
		opts Options
		want error
	}{
		{"negative rank", Options{Rank: -1}, ErrOptions},
		{"bad dynamics", Options{Dynamics: "weekly"}, ErrOptions},
		{"positive ln pmin", Options{LogPMin: 1}, ErrOptions},
		{"split out of range", Options{Splits: [][]int{{0}, {99}}}, ErrData},
	}
	for _, c := range cases {
		if _, err := Fit(context.Background(), d, c.opts); !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
	bad := sampleDataset(m, 3, 2)
	bad.Reward[4] = math.NaN()
	if _, err := Fit(context.Background(), bad, Options{}); !errors.Is(err, ErrData) {
		t.Errorf("NaN reward: error %v", err)
	}
	if _, err := Fit(context.Background(), nil, Options{}); !errors.Is(err, ErrData) {
		t.Errorf("nil dataset: error %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	big := sampleDataset(m, 3*blockEpisodes, 3)
	if _, err := Fit(ctx, big, Options{Rank: 2}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: error %v", err)
	}
}
