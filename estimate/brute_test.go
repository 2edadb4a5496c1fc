package estimate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Brute-force references: sums over every latent path.

// bruteEpisode is P(o_{1:H}, r_{1:H} | a_{1:H}) summed over s_1..s_{H+1}
// and o_{H+1}.
func bruteEpisode(m *Model, obs, act []uint16, rew []float64) float64 {
	S, O, H := m.States, m.NumObs, m.Horizon
	n := H + 1
	path := make([]int, n)
	total := 0.0
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
			total += p
		}
		j := 0
		for j < n {
			path[j]++
			if path[j] < S {
				break
			}
			path[j] = 0
			j++
		}
		if j == n {
			return total
		}
	}
}

// bruteObs is P(o_{1:n} | a_{1:n−1}) summed over s_1..s_n.
func bruteObs(m *Model, obs, act []int) float64 {
	S, O := m.States, m.NumObs
	n := len(obs)
	if n == 0 {
		return 1
	}
	path := make([]int, n)
	total := 0.0
	for {
		p := m.Init[path[0]] * m.Obs1[path[0]*O+obs[0]]
		for i := 0; i+1 < n; i++ {
			t := m.Table(i + 1)
			a, s, s2 := act[i], path[i], path[i+1]
			p *= m.Trans[t][(a*S+s)*S+s2] * m.EmitOf(t, a)[s2*O+obs[i+1]]
		}
		total += p
		j := 0
		for j < n {
			path[j]++
			if path[j] < S {
				break
			}
			path[j] = 0
			j++
		}
		if j == n {
			return total
		}
	}
}

func relClose(a, b, tol float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}

type modelCase struct {
	name       string
	S, O, A, H int
	stationary bool
	values     []float64
}

var smallCases = []modelCase{
	{"cat-stationary", 3, 3, 2, 4, true, []float64{-1, 0, 2.5}},
	{"cat-per-step", 2, 3, 3, 3, false, []float64{0, 1}},
	{"gauss-stationary", 3, 2, 2, 3, true, nil},
	{"gauss-per-step", 2, 2, 3, 4, false, nil},
	{"one-state", 1, 3, 2, 3, true, []float64{0, 1}},
}

// TestEpisodeLogLikBruteForce: the scaled forward recursion (EpisodeLogLik)
// and the E-step's log-likelihood both equal ln of the brute-force sum over
// latent paths, to 1e-12 relative.
func TestEpisodeLogLikBruteForce(t *testing.T) {
	for i, mc := range smallCases {
		t.Run(mc.name, func(t *testing.T) {
			m := randomModel(mc.S, mc.O, mc.A, mc.H, mc.stationary, mc.values, uint64(10+i))
			if err := m.Validate(1e-12); err != nil {
				t.Fatal(err)
			}
			d := sampleDataset(m, 40, uint64(20+i))
			H := d.Horizon
			sum := 0.0
			for k := 0; k < d.NumEpisodes(); k++ {
				obs, act, rew := d.Obs[k*H:(k+1)*H], d.Act[k*H:(k+1)*H], d.Reward[k*H:(k+1)*H]
				want := math.Log(bruteEpisode(m, obs, act, rew))
				got := m.EpisodeLogLik(obs, act, rew)
				if !relClose(got, want, 1e-12) {
					t.Fatalf("episode %d: EpisodeLogLik %v, brute force %v", k, got, want)
				}
				sum += want
			}
			kind, vals := rewardSupport(d.Reward)
			if mc.values != nil && kind != RewardCategorical {
				t.Fatalf("reward kind %v", kind)
			}
			if kind == RewardCategorical {
				// The data may not use every value of the model's support.
				vals = m.RewardValues
			}
			c := code(d, kind, vals)
			st, err := newKernel(m, c).estep(t.Context(), c, 1)
			if err != nil {
				t.Fatal(err)
			}
			if !relClose(st.ll, sum, 1e-12) {
				t.Fatalf("E-step log-likelihood %v, brute force %v", st.ll, sum)
			}
		})
	}
}

// TestObsLogLikBruteForce: ObsLogLik and PredictHistory's probability
// equal the brute-force P(o_{1:h}|a_{1:h}).
func TestObsLogLikBruteForce(t *testing.T) {
	m := randomModel(3, 3, 2, 5, false, []float64{0, 1}, 3)
	d := sampleDataset(m, 20, 4)
	H := d.Horizon
	for k := 0; k < d.NumEpisodes(); k++ {
		for h := 1; h <= H; h++ {
			obs, act := d.Obs[k*H:k*H+h], d.Act[k*H:k*H+h]
			oi, ai := make([]int, h), make([]int, h)
			for i := range oi {
				oi[i], ai[i] = int(obs[i]), int(act[i])
			}
			want := bruteObs(m, oi, ai)
			if got := m.ObsLogLik(obs, act); !relClose(got, math.Log(want), 1e-12) {
				t.Fatalf("episode %d h %d: ObsLogLik %v, brute force %v", k, h, got, math.Log(want))
			}
			if _, p := m.PredictHistory(oi, ai); !relClose(p, want, 1e-12) {
				t.Fatalf("episode %d h %d: PredictHistory prob %v, brute force %v", k, h, p, want)
			}
		}
	}
}

// TestFeatureBruteForce: every test probability of the Featurizer (the
// full form's ψ̄(τ_h) before any reduction) for tests of length 1 and 2
// equals P(test observations | τ_h, test actions) by brute force, the
// ratio P(o_{1:h+k}|a_{1:h+k−1}) / P(o_{1:h}|a_{1:h−1}).
func TestFeatureBruteForce(t *testing.T) {
	for _, stationary := range []bool{true, false} {
		m := randomModel(2, 3, 2, 4, stationary, []float64{0, 1}, 7)
		d := sampleDataset(m, 6, 8)
		H, O, A := m.Horizon, m.NumObs, m.NumActions
		for _, tl := range []int{1, 2} {
			m.TestLength = tl
			for k := 0; k < d.NumEpisodes(); k++ {
				for h := 0; h < H; h++ {
					oi, ai := make([]int, h), make([]int, h)
					for i := 0; i < h; i++ {
						oi[i], ai[i] = int(d.Obs[k*H+i]), int(d.Act[k*H+i])
					}
					kk := min(tl, H-h)
					dim := m.testCount(h)
					out := make([]float64, dim)
					pred, _ := m.PredictHistory(oi, ai)
					a := 0
					if h > 0 {
						a = ai[h-1]
					}
					fz, err := NewFeaturizer(m)
					if err != nil {
						t.Fatal(err)
					}
					fz.Tests(h, pred, a, out)
					den := bruteObs(m, oi, ai)
					for idx := 0; idx < dim; idx++ {
						// Decode ((o1·A + a1)·O + o2)…
						rest := idx
						tobs := make([]int, kk)
						tact := make([]int, kk-1)
						for j := kk - 1; j >= 0; j-- {
							tobs[j] = rest % O
							rest /= O
							if j > 0 {
								tact[j-1] = rest % A
								rest /= A
							}
						}
						fo := append(append([]int(nil), oi...), tobs...)
						fa := append(append([]int(nil), ai...), tact...)
						want := bruteObs(m, fo, fa) / den
						if math.Abs(out[idx]-want) > 1e-12 {
							t.Fatalf("stationary=%v m=%d episode %d h=%d test %d: ψ̄ %v, brute force %v", stationary, tl, k, h, idx, out[idx], want)
						}
					}
				}
			}
		}
	}
}

// TestReducedFeatureGram: where the full form's feature is reduced to
// B_h·S dimensions, the inner products of reduced features equal those
// of the tests' probabilities they stand for (so every bonus, a function
// of inner products only, is unchanged), for tests of length 1 to 3, at
// every step, for random predicted states and actions.
func TestReducedFeatureGram(t *testing.T) {
	for _, stationary := range []bool{true, false} {
		m := randomModel(2, 7, 3, 4, stationary, []float64{0, 1}, 11)
		for _, tl := range []int{1, 2, 3} {
			m.TestLength = tl
			m.Prepare()
			fz, err := NewFeaturizer(m)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(tl), 5))
			for h := 0; h < m.Horizon; h++ {
				if !m.reduced(h) {
					t.Fatalf("m=%d h=%d: %d tests, %d·%d reduced dimensions: expected a reduction", tl, h, m.testCount(h), m.blocks(h), m.States)
				}
				type pt struct {
					tests, feat []float64
				}
				var pts []pt
				for range 6 {
					pred := make([]float64, m.States)
					dirichlet1(rng, pred)
					if h == 0 {
						copy(pred, m.Init) // o_1's prediction: the prior
					}
					a := rng.IntN(m.NumActions)
					p := pt{make([]float64, m.testCount(h)), make([]float64, m.FeatureDim(h))}
					fz.Tests(h, pred, a, p.tests)
					fz.Feature(h, pred, a, p.feat)
					pts = append(pts, p)
				}
				for i := range pts {
					for j := range pts {
						want, got := 0.0, 0.0
						for l := range pts[i].tests {
							want += pts[i].tests[l] * pts[j].tests[l]
						}
						for l := range pts[i].feat {
							got += pts[i].feat[l] * pts[j].feat[l]
						}
						if math.Abs(got-want) > 1e-12 {
							t.Fatalf("stationary=%v m=%d h=%d: inner product %v of reduced features, %v of the tests", stationary, tl, h, got, want)
						}
					}
				}
			}
		}
	}
}
