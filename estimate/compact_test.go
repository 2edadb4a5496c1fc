package estimate

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/ingest"
)

// firstActionCompact returns the Compact model whose emission is m's for
// action 0 and whose reward is m's for observation 0 (a compact model
// drawn with m; CompactOf is the conversion the rank search uses).
func firstActionCompact(m *Model) *Model {
	c := shapeLike(m)
	c.Compact = true
	S, O, A := m.States, m.NumObs, m.NumActions
	c.Init, c.Obs1, c.Trans = m.Init, m.Obs1, m.Trans
	for t := range m.Trans {
		c.Emit = append(c.Emit, append([]float64(nil), m.EmitOf(t, 0)...))
		n := S * A * S
		if m.Reward == RewardCategorical {
			V := len(m.RewardValues)
			R := make([]float64, n*V)
			for i := 0; i < n; i++ {
				copy(R[i*V:(i+1)*V], m.RewardProb[t][(i*O)*V:(i*O+1)*V])
			}
			c.RewardProb = append(c.RewardProb, R)
			continue
		}
		mu, vr := make([]float64, n), make([]float64, n)
		for i := 0; i < n; i++ {
			mu[i], vr[i] = m.RewardMean[t][i*O], m.RewardVar[t][i*O]
		}
		c.RewardMean = append(c.RewardMean, mu)
		c.RewardVar = append(c.RewardVar, vr)
	}
	c.Prepare()
	return c
}

// bruteCounts are the expected sufficient statistics of EM by enumeration
// of every latent path s_1..s_{H+1} and the unlogged o_{H+1}.
type bruteCounts struct {
	init, obs1, trans, emit, rew, cnt, sr, srr []float64
}

func bruteStats(m *Model, d *ingest.Dataset) *bruteCounts {
	S, O, A, H := m.States, m.NumObs, m.NumActions, m.Horizon
	V := len(m.RewardValues)
	nt := len(m.Trans)
	n := m.RewardCells()
	b := &bruteCounts{init: make([]float64, S), obs1: make([]float64, S*O), trans: make([]float64, nt*A*S*S),
		emit: make([]float64, nt*S*O), rew: make([]float64, nt*n*max(V, 1)),
		cnt: make([]float64, nt*n), sr: make([]float64, nt*n), srr: make([]float64, nt*n)}
	path := make([]int, H+1)
	for k := 0; k < d.NumEpisodes(); k++ {
		obs, act, rew := d.Obs[k*H:(k+1)*H], d.Act[k*H:(k+1)*H], d.Reward[k*H:(k+1)*H]
		z := bruteEpisode(m, obs, act, rew)
		clear(path)
		for {
			for oL := 0; oL < O; oL++ {
				p := m.Init[path[0]] * m.Obs1[path[0]*O+int(obs[0])]
				for i := 0; i < H; i++ {
					t := m.Table(i + 1)
					a, s, s2 := int(act[i]), path[i], path[i+1]
					o := oL
					if i+1 < H {
						o = int(obs[i+1])
					}
					p *= m.Trans[t][(a*S+s)*S+s2] * m.EmitOf(t, a)[s2*O+o] * m.RewardLik(t, s, a, s2, o, rew[i])
				}
				p /= z
				b.init[path[0]] += p
				b.obs1[path[0]*O+int(obs[0])] += p
				for i := 0; i < H; i++ {
					t := m.Table(i + 1)
					a, s, s2 := int(act[i]), path[i], path[i+1]
					o := oL
					if i+1 < H {
						o = int(obs[i+1])
					}
					b.trans[(t*A+a)*S*S+s*S+s2] += p
					b.emit[t*S*O+s2*O+o] += p
					ri := t*n + m.RewardIndex(s, a, s2, o)
					if V > 0 {
						v := 0
						for m.RewardValues[v] != rew[i] {
							v++
						}
						b.rew[ri*V+v] += p
					}
					b.cnt[ri] += p
					b.sr[ri] += p * rew[i]
					b.srr[ri] += p * rew[i] * rew[i]
				}
			}
			j := 0
			for j <= H {
				path[j]++
				if path[j] < S {
					break
				}
				path[j] = 0
				j++
			}
			if j > H {
				break
			}
		}
	}
	return b
}

// normalised returns the rows of width w of x+eps, normalised.
func normalised(x []float64, w int, eps float64) []float64 {
	out := append([]float64(nil), x...)
	for r := 0; r < len(out)/w; r++ {
		normRow(out[r*w:(r+1)*w], eps)
	}
	return out
}

func closeSlices(t *testing.T, name string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d", name, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol {
			t.Fatalf("%s[%d] = %v, brute force %v", name, i, got[i], want[i])
		}
	}
}

// TestCompactEMBruteForce: for the Compact form, the E-step's
// log-likelihood is ln of the brute-force sum over latent paths, and one
// M-step equals the normalised expected counts of the brute-force
// posterior over paths (s_1..s_{H+1}, o_{H+1}), to 1e-10, with several
// workers and blocks.
func TestCompactEMBruteForce(t *testing.T) {
	for i, mc := range smallCases {
		t.Run(mc.name, func(t *testing.T) {
			m := firstActionCompact(randomModel(mc.S, mc.O, mc.A, mc.H, mc.stationary, mc.values, uint64(30+i)))
			if err := m.Validate(1e-12); err != nil {
				t.Fatal(err)
			}
			d := sampleDataset(m, 2*blockEpisodes+37, uint64(40+i))
			kind, vals := rewardSupport(d.Reward)
			if kind == RewardCategorical {
				vals = m.RewardValues
			}
			c := code(d, kind, vals)
			k := newKernel(m, c)
			st, err := k.estep(t.Context(), c, 2)
			if err != nil {
				t.Fatal(err)
			}
			b := bruteStats(m, d)
			sum := 0.0
			H := d.Horizon
			for e := 0; e < d.NumEpisodes(); e++ {
				sum += math.Log(bruteEpisode(m, d.Obs[e*H:(e+1)*H], d.Act[e*H:(e+1)*H], d.Reward[e*H:(e+1)*H]))
			}
			if !relClose(st.ll, sum, 1e-12) {
				t.Fatalf("E-step log-likelihood %v, brute force %v", st.ll, sum)
			}
			const eps = 1e-3
			nm := k.mstep(st, c, eps)
			S, O, A := m.States, m.NumObs, m.NumActions
			closeSlices(t, "Init", nm.Init, normalised(b.init, S, eps), 1e-10)
			closeSlices(t, "Obs1", nm.Obs1, normalised(b.obs1, O, eps), 1e-10)
			n := m.RewardCells()
			for tt := range m.Trans {
				closeSlices(t, "Trans", nm.Trans[tt], normalised(b.trans[tt*A*S*S:(tt+1)*A*S*S], S, eps), 1e-10)
				closeSlices(t, "Emit", nm.Emit[tt], normalised(b.emit[tt*S*O:(tt+1)*S*O], O, eps), 1e-10)
				if kind == RewardCategorical {
					V := len(vals)
					closeSlices(t, "RewardProb", nm.RewardProb[tt], normalised(b.rew[tt*n*V:(tt+1)*n*V], V, eps), 1e-10)
					continue
				}
				mean, vr := gaussianMStep(b.cnt[tt*n:(tt+1)*n], b.sr[tt*n:(tt+1)*n], b.srr[tt*n:(tt+1)*n], c, eps)
				closeSlices(t, "RewardMean", nm.RewardMean[tt], mean, 1e-9)
				closeSlices(t, "RewardVar", nm.RewardVar[tt], vr, 1e-9)
			}
			if err := nm.Validate(1e-9); err != nil {
				t.Fatal(err)
			}
			// Same statistics whatever the number of workers.
			st1, err := newKernel(m, c).estep(t.Context(), c, 1)
			if err != nil {
				t.Fatal(err)
			}
			if st1.ll != st.ll {
				t.Fatalf("1 worker: log-likelihood %v, 2 workers %v", st1.ll, st.ll)
			}
		})
	}
}

// TestCompactFeatureIsometry: the Compact form's r-dimensional features
// y = L_h·p have the inner products of the test predictions ψ = G_h·p
// (tests of length 1 and 2, every step), so every quadratic form of the
// bonus is that of the paper's tests.
func TestCompactFeatureIsometry(t *testing.T) {
	for _, tl := range []int{1, 2} {
		for _, stationary := range []bool{true, false} {
			m := firstActionCompact(randomModel(3, 4, 2, 3, stationary, []float64{0, 1}, 11))
			m.TestLength = tl
			fz, err := NewFeaturizer(m)
			if err != nil {
				t.Fatal(err)
			}
			for h := 0; h < m.Horizon; h++ {
				if got := m.FeatureDim(h); got != m.States {
					t.Fatalf("FeatureDim(%d) = %d, want %d", h, got, m.States)
				}
				const n = 6
				ps, ys := make([][]float64, n), make([][]float64, n)
				for i := range ps {
					p := make([]float64, m.States)
					dirichlet1(rand.New(rand.NewPCG(uint64(i), uint64(h))), p)
					if h == 0 {
						copy(p, m.Init) // ψ̄(τ_0) is P(o_1): the prior
					}
					ps[i] = make([]float64, m.testCount(h))
					fz.Tests(h, p, 1, ps[i])
					ys[i] = make([]float64, m.States)
					fz.Feature(h, p, 1, ys[i])
				}
				for i := range ps {
					for j := range ps {
						a, b := dot(ps[i], ps[j]), dot(ys[i], ys[j])
						if math.Abs(a-b) > 1e-12 {
							t.Fatalf("m=%d stationary=%v h=%d: ψ_%d·ψ_%d = %v, y·y = %v", tl, stationary, h, i, j, a, b)
						}
					}
				}
			}
		}
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// TestFormAndMemoryCheck: the automatic form is full for a small
// vocabulary and compact past fullFormCells; a fit whose estimated memory
// is above MemoryLimit stops before allocating with ErrTooLarge, a data
// error whose message names the cause and the remedies.
func TestFormAndMemoryCheck(t *testing.T) {
	small := uniformDataset(50, 3, 4, 3, 1)
	wide := uniformDataset(50, 3, 3000, 50, 1)
	for _, tc := range []struct {
		d    *ingest.Dataset
		want bool
	}{{small, false}, {wide, true}} {
		kind, vals := rewardSupport(tc.d.Reward)
		c := code(tc.d, kind, vals)
		if got := chooseForm(FormAuto, c, DefaultMaxRank, 1); got != tc.want {
			t.Fatalf("|O| = %d: compact %v, want %v", c.O, got, tc.want)
		}
	}
	_, err := Fit(t.Context(), wide, Options{Rank: 8, Form: FormFull, MemoryLimit: 1 << 30})
	if !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrData) {
		t.Fatalf("full form at |O| = 3000, |A| = 50, rank 8 under 1 GiB: %v", err)
	}
	for _, s := range []string{"3000 observations", "--max-observations", "lower the rank"} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("message %q does not say %q", err, s)
		}
	}
	// Thousands of actions and few observations: merging observations
	// cannot help, and the message says so.
	actions := uniformDataset(50, 3, 4, 3000, 1)
	_, err = Fit(t.Context(), actions, Options{Rank: 8, Form: FormFull, MemoryLimit: 1 << 24})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "3000 actions") || !strings.Contains(err.Error(), "cannot help") {
		t.Fatalf("|A| = 3000 under 16 MiB: %v", err)
	}
	res, err := Fit(t.Context(), wide, Options{Rank: 8, Restarts: 1, MaxIter: 3, MemoryLimit: 1 << 30})
	if err != nil || !res.Model.Compact {
		t.Fatalf("compact fit under 1 GiB: %v", err)
	}
}

// TestCompactSampledStarts: on compact logs of more than fitSampleEpisodes
// episodes the starts run on the sample and only the best continues on
// every episode; the result does not depend on the worker count, and a
// warm start runs alone on every episode.
func TestCompactSampledStarts(t *testing.T) {
	d := uniformDataset(fitSampleEpisodes+500, 2, 3000, 50, 4)
	fit := func(workers int, start *Model) *Result {
		res, err := Fit(t.Context(), d, Options{Rank: 8, Restarts: 2, MaxIter: 4, Workers: workers, Start: start, SkipThetaMin: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	r1, r2 := fit(1, nil), fit(2, nil)
	if !r1.Model.Compact || r1.LogLik != r2.LogLik || !slices.Equal(r1.Model.Emit[0], r2.Model.Emit[0]) {
		t.Fatalf("compact %v; log-likelihood %v with 1 worker, %v with 2", r1.Model.Compact, r1.LogLik, r2.LogLik)
	}
	data := map[string]int{}
	for _, row := range r1.Trace {
		data[row.Data]++
		if row.Data == "all" && row.Restart != r1.BestRestart {
			t.Fatalf("start %d continued on all episodes, best is %d", row.Restart, r1.BestRestart)
		}
	}
	if data["sample"] == 0 || data["all"] == 0 {
		t.Fatalf("trace rows by data: %v", data)
	}
	w := fit(2, r1.Model)
	if len(w.RestartLogLiks) != 1 || w.Trace[0].Data != "all" {
		t.Fatalf("warm start: %d starts, first trace row on %q", len(w.RestartLogLiks), w.Trace[0].Data)
	}
}
