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
	"github.com/psrlcb/psrlcb/estimate/estimatetest"
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
			d := estimatetest.SampleDataset(truth, 20000, 7)
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

// TestRankSearchLeavesStall: on 10⁵ uniform episodes of query.s2 at H = 4
// (the larger tier's seed for that cell), with two EM starts the split
// warm start and the random start of rank 2 both stayed at rank 1's
// solution (training log-likelihood equal to 10⁻⁶), so the search stopped
// at rank 1 and the policy was worse than the behaviour. A stalled rank
// now gets the informed start too, and the search goes on past 2.
func TestRankSearchLeavesStall(t *testing.T) {
	if testing.Short() {
		t.Skip("fits 10⁵ episodes")
	}
	p, err := pomdp.ParseFile(filepath.Join(sharedDir(t), "pomdp", "query.s2.pomdp"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := pomdp.ParseBehavior("uniform", p)
	if err != nil {
		t.Fatal(err)
	}
	const seed = 0x24eb9f4ff75ffc4b // fnv-64a of "query.s2|uniform|100000|0"
	d, err := pomdp.SimulateDataset(context.Background(), p, 4, 100000, b, seed)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := estimate.ChooseRank(context.Background(), d, estimate.Options{Restarts: 2, MaxIter: 200, MaxRank: 4, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rank rows %+v", rc.Table)
	if rc.Rank < 4 || len(rc.Table) < 3 || !(rc.Table[1].TrainLogLik > rc.Table[0].TrainLogLik+1) {
		t.Fatalf("chose rank %d from %+v; want the search to reach 4 with rank 2 above rank 1", rc.Rank, rc.Table)
	}
}
