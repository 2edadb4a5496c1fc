// Package opetest holds the small logs and policies whose off-policy
// estimates the tests of package ope and of bench/card-iw compute by hand.
package opetest

import (
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
)

// TinyLogs are four episodes of two steps with observations "x"/"y",
// actions "L"/"R", propensity 1/2 everywhere:
//
//	episode  o1 a1 r1  o2 a2 r2
//	1        x  L  1   x  L  2
//	2        x  L  0   y  R  4
//	3        x  R  5   x  L  1
//	4        x  L  2   y  L  0
func TinyLogs() *ingest.Dataset {
	d := &ingest.Dataset{Horizon: 2, ObsVocab: []string{"x", "y"}, ActVocab: []string{"L", "R"},
		EpisodeIDs: []string{"1", "2", "3", "4"}, Length: []int32{2, 2, 2, 2}}
	rows := [][6]int{{0, 0, 1, 0, 0, 2}, {0, 0, 0, 1, 1, 4}, {0, 1, 5, 0, 0, 1}, {0, 0, 2, 1, 0, 0}}
	for _, r := range rows {
		d.Obs = append(d.Obs, uint16(r[0]), uint16(r[3]))
		d.Act = append(d.Act, uint16(r[1]), uint16(r[4]))
		d.Reward = append(d.Reward, float64(r[2]), float64(r[5]))
		d.Propensity = append(d.Propensity, 0.5, 0.5)
	}
	return d
}

// StochasticTiny is a stochastic policy table over TinyLogs' symbols:
//
//	step 1, x: L 0.8 (row 0), R 0.2 (row 1)
//	after L, x: L 0.3, R 0.7;  after L, y: R 1
//	after R, x: L 1;  after R, y: no row (row 1's fallback, R)
func StochasticTiny() *policy.Policy {
	return &policy.Policy{Horizon: 2, Nodes: []policy.Node{
		{ID: 0, Parent: -1, Step: 1, Obs: "x", Action: "L", Fallback: "L"},
		{ID: 1, Parent: -1, Step: 1, Obs: "x", Action: "R", Fallback: "R"},
		{ID: 2, Parent: 0, Step: 2, Obs: "x", Action: "L", Fallback: "L"},
		{ID: 3, Parent: 0, Step: 2, Obs: "x", Action: "R", Fallback: "L"},
		{ID: 4, Parent: 0, Step: 2, Obs: "y", Action: "R", Fallback: "L"},
		{ID: 5, Parent: 1, Step: 2, Obs: "x", Action: "L", Fallback: "L"},
	}, Probs: []float64{0.8, 0.2, 0.3, 0.7, 1, 1}}
}
