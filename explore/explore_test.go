package explore

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/estimate/estimatetest"
	"github.com/psrlcb/psrlcb/pomdp"
)

// Tolerance of exact-arithmetic comparisons: sums of a few thousand
// products of probabilities, each rounded at 1e-16.
const tol = 1e-12

// sharedDir is ../shared beside the repository root, or skips the test.
func sharedDir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "shared")
	if _, err := os.Stat(filepath.Join(dir, "pomdp")); err != nil {
		t.Skipf("reference POMDPs not available (%s missing): skipping ground-truth exploration checks", dir)
	}
	return dir
}

// tinyPOMDP is a two-state, two-action, two-observation model written
// here so the exact checks do not depend on reference files.
const tinyPOMDP = `
discount: 1
values: reward
states: s0 s1
actions: stay flip
observations: x y
start: 0.7 0.3
T: stay
0.9 0.1
0.2 0.8
T: flip
0.1 0.9
0.6 0.4
O: * : s0 : x 0.8
O: * : s0 : y 0.2
O: * : s1 : x 0.3
O: * : s1 : y 0.7
R: stay : s0 : * : * 1
R: flip : s1 : * : * 2
`

func parseTiny(t *testing.T) *pomdp.POMDP {
	t.Helper()
	m, err := pomdp.Parse(strings.NewReader(tinyPOMDP), "tiny")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// randomModelFor is a random latent-state model over the POMDP's symbols
// (plus pomdp.InitSymbol), so it puts some mass on "init" after step 1.
func randomModelFor(p *pomdp.POMDP, S, H int, seed uint64) *estimate.Model {
	names := append(slices.Clone(p.Observations), pomdp.InitSymbol)
	sort.Strings(names)
	m := estimatetest.RandomModel(S, len(names), p.NumActions(), H, false, []float64{0, 1}, seed)
	m.ObsVocab = names
	m.ActVocab = slices.Clone(p.Actions)
	m.TestLength = 1
	m.Prepare()
	return m
}

// trueObsProb is P*(o_{1:H} | a_{1:H}) by the forward algorithm, with
// observation names (o_1 must be "init").
func trueObsProb(p *pomdp.POMDP, obs []string, act []int) float64 {
	if obs[0] != pomdp.InitSymbol {
		return 0
	}
	alpha := slices.Clone(p.Start)
	for h := 1; h < len(obs); h++ {
		o := slices.Index(p.Observations, obs[h])
		if o < 0 {
			return 0
		}
		a := act[h-1]
		next := make([]float64, len(alpha))
		for s, as := range alpha {
			for s2 := range next {
				next[s2] += as * p.T[a][s][s2] * p.O[a][s2][o]
			}
		}
		alpha = next
	}
	sum := 0.0
	for _, v := range alpha {
		sum += v
	}
	return sum
}

// TestTVBruteForce: TV against a direct sum over every (o_{1:H}, a_{1:H})
// of the model's vocabulary, ½ Σ π(a|o)·|P̂(o|a) − P*(o|a)|, with P̂ from
// Model.ObsLogLik and P* from the forward algorithm, under the uniform
// policy and a history-dependent deterministic one. The random model puts
// mass on "init" after step 1, which the truth never emits, so the branches
// TV cuts short are exercised.
func TestTVBruteForce(t *testing.T) {
	p := parseTiny(t)
	const H = 3
	m := randomModelFor(p, 3, H, 7)
	O, A := m.NumObs, m.NumActions
	// toIdx maps a model code to the POMDP's index ("init" is ObsInit).
	toIdx := func(c int) int {
		if m.ObsVocab[c] == pomdp.InitSymbol {
			return pomdp.ObsInit
		}
		return slices.Index(p.Observations, m.ObsVocab[c])
	}
	det := func(obs, act []int) int {
		s := len(act)
		for i, o := range obs {
			s += (i + 2) * (o + 1)
		}
		return s % 2
	}
	for _, c := range []struct {
		name string
		pol  StochasticPolicy
	}{{"uniform", Uniform}, {"deterministic", Deterministic(det)}} {
		t.Run(c.name, func(t *testing.T) {
			got, err := TV(context.Background(), p, m, H, c.pol)
			if err != nil {
				t.Fatal(err)
			}
			want := 0.0
			oc := make([]int, H)
			ac := make([]int, H)
			pa := make([]float64, A)
			var rec func(i int)
			rec = func(i int) {
				if i == H {
					obs := make([]string, H)
					idx := make([]int, H)
					o16 := make([]uint16, H)
					a16 := make([]uint16, H)
					w := 1.0
					for h := range H {
						obs[h] = m.ObsVocab[oc[h]]
						idx[h] = toIdx(oc[h])
						o16[h], a16[h] = uint16(oc[h]), uint16(ac[h])
						c.pol(idx[:h+1], ac[:h], pa)
						w *= pa[ac[h]]
					}
					ps := trueObsProb(p, obs, ac)
					pm := math.Exp(m.ObsLogLik(o16, a16))
					want += w * math.Abs(pm-ps)
					return
				}
				for o := range O {
					for a := range A {
						oc[i], ac[i] = o, a
						rec(i + 1)
					}
				}
			}
			rec(0)
			want /= 2
			if math.Abs(got-want) > tol {
				t.Fatalf("TV = %.15g, brute force %.15g", got, want)
			}
			if got <= 0.01 || got >= 1 {
				t.Fatalf("TV = %v: a random model should be visibly off", got)
			}
		})
	}
}
