package main

import (
	"math"
	"testing"

	"github.com/psrlcb/psrlcb/ope/opetest"
)

// TestStochasticWeights: on four episodes of two steps (propensity ½
// everywhere, opetest.TinyLogs)
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
	d, pol := opetest.TinyLogs(), opetest.StochasticTiny()
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
