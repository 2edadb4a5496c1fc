package main

import (
	"math"
	"testing"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
)

// TestStochasticWeights: on four episodes of two steps (propensity ½
// everywhere)
//
//	episode  o1 a1 r1  o2 a2 r2
//	1        x  L  1   x  L  2
//	2        x  L  0   y  R  4
//	3        x  R  5   x  L  1
//	4        x  L  2   y  L  0
//
// the stochastic policy "L 0.8, R 0.2 at step 1; after L, x: L 0.3,
// R 0.7; after L, y: R; after R, x: L" has the weights π/½ per step
// 1.6·0.6, 1.6·2, 0.4·2, 1.6·0 = 0.96, 3.2, 0.8, 0, so
//
//	iw           = (0.96·3 + 3.2·4 + 0.8·6 + 0·2)/4 = 5.12
//	per_decision = [(1.6 + 0.96·2) + (0 + 3.2·4) + (0.4·5 + 0.8) + (1.6·2)]/4 = 5.58
//
// and three episodes follow it at step 2 with a positive weight.
func TestStochasticWeights(t *testing.T) {
	d := &ingest.Dataset{Horizon: 2, ObsVocab: []string{"x", "y"}, ActVocab: []string{"L", "R"},
		EpisodeIDs: []string{"1", "2", "3", "4"}, Length: []int32{2, 2, 2, 2}}
	for _, r := range [][6]int{{0, 0, 1, 0, 0, 2}, {0, 0, 0, 1, 1, 4}, {0, 1, 5, 0, 0, 1}, {0, 0, 2, 1, 0, 0}} {
		d.Obs = append(d.Obs, uint16(r[0]), uint16(r[3]))
		d.Act = append(d.Act, uint16(r[1]), uint16(r[4]))
		d.Reward = append(d.Reward, float64(r[2]), float64(r[5]))
		d.Propensity = append(d.Propensity, 0.5, 0.5)
	}
	pol := &policy.Policy{Horizon: 2, Nodes: []policy.Node{
		{ID: 0, Parent: -1, Step: 1, Obs: "x", Action: "L", Fallback: "L"},
		{ID: 1, Parent: -1, Step: 1, Obs: "x", Action: "R", Fallback: "R"},
		{ID: 2, Parent: 0, Step: 2, Obs: "x", Action: "L", Fallback: "L"},
		{ID: 3, Parent: 0, Step: 2, Obs: "x", Action: "R", Fallback: "L"},
		{ID: 4, Parent: 0, Step: 2, Obs: "y", Action: "R", Fallback: "L"},
		{ID: 5, Parent: 1, Step: 2, Obs: "x", Action: "L", Fallback: "L"},
	}, Probs: []float64{0.8, 0.2, 0.3, 0.7, 1, 1}}
	e := iwSumsOf(pol, d)
	// A dozen sums and products of short decimals: rounding stays far
	// below 1e-12.
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }
	if iw := meanSE(e.traj).Mean; !near(iw, 5.12) {
		t.Errorf("iw %v, want 5.12", iw)
	}
	if pd := meanSE(e.pd).Mean; !near(pd, 5.58) {
		t.Errorf("per_decision %v, want 5.58", pd)
	}
	if e.matched[0] != 4 || e.matched[1] != 3 {
		t.Errorf("matched steps %v, want [4 3]", e.matched)
	}
}
