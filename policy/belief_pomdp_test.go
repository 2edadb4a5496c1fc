package policy_test

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pomdp"
)

// sharedPOMDPDir is ../shared/pomdp beside the repository.
func sharedPOMDPDir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "shared", "pomdp")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("reference POMDP files not available (%s missing): skipping the belief-vs-exact checks on them", dir)
	}
	return dir
}

// fromPOMDP writes a POMDP as an estimate.Model of horizon H: o_1 is
// pomdp.InitSymbol, emitted by every state; the reward R(a,s,s',o) is a
// point mass on its value; returns are rescaled with the range
// [H·min R, H·max R].
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
	set := map[float64]bool{}
	for _, r := range p.Reward {
		set[r] = true
	}
	var vals []float64
	for v := range set {
		vals = append(vals, v)
	}
	sort.Float64s(vals)
	V := len(vals)
	m := &estimate.Model{States: S, NumObs: O, NumActions: A, Horizon: H, Stationary: true,
		ObsVocab: names, ActVocab: p.Actions, Reward: estimate.RewardCategorical, RewardValues: vals, TestLength: 1,
		ReturnMin: float64(H) * vals[0], ReturnMax: float64(H) * vals[V-1]}
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
					v := sort.SearchFloat64s(vals, p.R(a, s, s2, o))
					R[m.RewardIndex(s, a, s2, idx[p.Observations[o]])*V+v] = 1
				}
				R[m.RewardIndex(s, a, s2, init)*V] = 1 // never emitted after a step
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

// TestBeliefMatchesExactPOMDPs runs checkBelief on every model of
// ../shared/pomdp at H = 4 (H = 3 for hallway, whose 60 states make the
// bonus tables the slowest part), with the bonus of 500 uniform episodes.
func TestBeliefMatchesExactPOMDPs(t *testing.T) {
	dir := sharedPOMDPDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) == 0 {
		t.Skipf("no POMDP files in %s", dir)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			p, err := pomdp.ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			H := 4
			if p.NumStates() > 20 {
				H = 3
			}
			m := fromPOMDP(p, H)
			b := uniformBonus(t, m, 500, 5)
			for _, c := range []struct{ alpha, tol float64 }{{0, beliefTolGreedy}, {0.3, beliefTolBonus}, {1, beliefTolBonus}} {
				checkBelief(t, m, b.WithAlpha(c.alpha), c.tol)
			}
		})
	}
}
