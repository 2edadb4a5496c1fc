package estimate_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pomdp"
)

// sharedDir is ../shared beside the repository root.
func sharedDir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "shared")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("reference files not available (%s missing): skipping ground-truth POMDP checks", dir)
	}
	return dir
}

// fromPOMDP writes a POMDP as an estimate.Model with horizon H: o_1 is
// pomdp.InitSymbol, emitted by every state; the reward R(a,s,s',o) is a
// point mass on its value (categorical over the model's distinct rewards).
func fromPOMDP(p *pomdp.POMDP, H int) *estimate.Model {
	S, A, O0 := p.NumStates(), p.NumActions(), p.NumObs()
	names := append(slices.Clone(p.Observations), pomdp.InitSymbol)
	sort.Strings(names)
	idx := make(map[string]int)
	for i, n := range names {
		idx[n] = i
	}
	O := len(names)
	init := idx[pomdp.InitSymbol]
	valSet := map[float64]bool{}
	for _, r := range p.Reward {
		valSet[r] = true
	}
	var vals []float64
	for v := range valSet {
		vals = append(vals, v)
	}
	sort.Float64s(vals)
	V := len(vals)
	m := &estimate.Model{States: S, NumObs: O, NumActions: A, Horizon: H, Stationary: true,
		ObsVocab: names, ActVocab: p.Actions, Reward: estimate.RewardCategorical, RewardValues: vals, TestLength: 1}
	m.Init = slices.Clone(p.Start)
	m.Obs1 = make([]float64, S*O)
	for s := 0; s < S; s++ {
		m.Obs1[s*O+init] = 1
	}
	T := make([]float64, A*S*S)
	E := make([]float64, A*S*O)
	R := make([]float64, S*A*S*O*V)
	for a := 0; a < A; a++ {
		for s := 0; s < S; s++ {
			for s2 := 0; s2 < S; s2++ {
				T[(a*S+s)*S+s2] = p.T[a][s][s2]
				for o := 0; o < O0; o++ {
					oi := idx[p.Observations[o]]
					v := sort.SearchFloat64s(vals, p.R(a, s, s2, o))
					R[m.RewardIndex(s, a, s2, oi)*V+v] = 1
				}
				// The initial symbol is never emitted after a step;
				// give its reward row a valid distribution.
				R[m.RewardIndex(s, a, s2, init)*V] = 1
			}
			for o := 0; o < O0; o++ {
				E[(a*S+s)*O+idx[p.Observations[o]]] = p.O[a][s][o]
			}
		}
	}
	m.Trans, m.Emit, m.RewardProb = [][]float64{T}, [][]float64{E}, [][]float64{R}
	m.Prepare()
	return m
}

// TestFitKnownPOMDPs: on logs simulated from tiger and paint under the
// uniform behaviour, at the true number of states:
//   - EM warm-started at the true model ends at least at the true model's
//     log-likelihood of the same logs, less 2 nats (it is a maximum of the
//     likelihood, not a point EM leaves for worse);
//   - the default starts reach it, less 2 nats, on tiger; on paint they
//     stop in a local optimum about 0.7% below (measured 180 nats of
//     26850 with 20000 episodes, also at ranks 5 and 6 and with annealed
//     EM), so paint is checked within 1%.
func TestFitKnownPOMDPs(t *testing.T) {
	dir := sharedDir(t)
	for _, c := range []struct {
		name string
		rel  float64
	}{{"tiger.95.POMDP", 0}, {"paint.95.pomdp", 0.01}} {
		t.Run(c.name, func(t *testing.T) {
			p, err := pomdp.ParseFile(filepath.Join(dir, "pomdp", c.name))
			if err != nil {
				t.Fatal(err)
			}
			truth := fromPOMDP(p, 4)
			if err := truth.Validate(1e-9); err != nil {
				t.Fatal(err)
			}
			d := estimate.SampleDataset(truth, 20000, 7)
			want := truth.DataLogLik(d)
			warm, err := estimate.Fit(context.Background(), d, estimate.Options{Rank: truth.States, Restarts: 1, Start: truth, SkipThetaMin: true})
			if err != nil {
				t.Fatal(err)
			}
			if warm.LogLik < want-2 {
				t.Fatalf("EM from the true model ends at %v, below its %v", warm.LogLik, want)
			}
			res, err := estimate.Fit(context.Background(), d, estimate.Options{Rank: truth.States, Seed: 1, SkipThetaMin: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("true %.3f warm %.3f fitted %.3f restarts %v", want, warm.LogLik, res.LogLik, res.RestartLogLiks)
			if res.LogLik < want-2-c.rel*math.Abs(want) {
				t.Fatalf("fitted log-likelihood %v below the true model's %v", res.LogLik, want)
			}
		})
	}
}
