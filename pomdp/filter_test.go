package pomdp

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// TestFilterTigerByHand: listening and hearing left twice moves the
// belief from 1/2 to 0.85²/(0.85²+0.15²) on tiger-left; opening a door
// resets it to 1/2.
func TestFilterTigerByHand(t *testing.T) {
	f, err := tiger(t).NewFilter()
	if err != nil {
		t.Fatal(err)
	}
	b := f.Start()
	steps := []struct {
		a, o int
		want float64 // P(tiger-left)
	}{
		{listen, hearLeft, 0.85},
		{listen, hearLeft, 0.85 * 0.85 / (0.85*0.85 + 0.15*0.15)},
		{listen, hearRight, 0.85},
		{openLeft, hearLeft, 0.5},
	}
	for i, s := range steps {
		if !f.Update(b, s.a, s.o) {
			t.Fatalf("step %d: observation reported impossible", i+1)
		}
		if math.Abs(b[0]-s.want) > 1e-12 || math.Abs(b[0]+b[1]-1) > 1e-12 {
			t.Errorf("step %d: belief %v, want tiger-left %v", i+1, b, s.want)
		}
	}
	if f.Update(b, 7, 0) || f.Update(b, listen, 5) {
		t.Error("out-of-range action or observation accepted")
	}
}

// TestFilterMatchesBelief: step by step, the filter's belief is Belief's
// recomputation from the start, on random histories.
func TestFilterMatchesBelief(t *testing.T) {
	m := tiger(t)
	f, err := m.NewFilter()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		obs, act := []int{ObsInit}, []int{}
		b := f.Start()
		for range 6 {
			a, o := rng.IntN(m.NumActions()), rng.IntN(m.NumObs())
			if !f.Update(b, a, o) {
				t.Fatal("tiger observation reported impossible")
			}
			act, obs = append(act, a), append(obs, o)
			want, ok := m.Belief(obs, act)
			if !ok {
				t.Fatal("Belief refused a possible history")
			}
			for s := range b {
				if math.Abs(b[s]-want[s]) > 1e-12 {
					t.Fatalf("history %v %v: filter %v, Belief %v", obs, act, b, want)
				}
			}
		}
	}
}

// TestStochasticValueMatchesBehaviorAndDeterministic: a behaviour as a
// stochastic policy has the behaviour's value; the optimal policy as one
// has V*; and a policy of the current observation alone is checked against
// brute-force enumeration of every history on tiger.
func TestStochasticValueMatchesBehaviorAndDeterministic(t *testing.T) {
	m := tiger(t)
	ctx := context.Background()
	for H := 1; H <= 5; H++ {
		beh, err := ParseBehavior("myopic:0.3", m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := StochasticValueWithin(ctx, m, H, func(h, _ int, b, p []float64) { beh.Probs(h, b, p) }, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := behaviorValue(m, H, beh); !approx(got, want) {
			t.Errorf("H=%d myopic:0.3: %v, want %v", H, got, want)
		}
		vstar, _ := optimal(m, H)
		got, err = StochasticValueWithin(ctx, m, H, func(h, _ int, b, p []float64) {
			clear(p)
			p[optimalAt(m, H, h, b)] = 1
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !approx(got, vstar) {
			t.Errorf("H=%d optimal: %v, want %v", H, got, vstar)
		}
		// π(listen | o) = 0.6 after hear-left, 0.8 otherwise; the rest split
		// evenly between the doors.
		obsPol := func(o int, p []float64) {
			q := 0.8
			if o == hearLeft {
				q = 0.6
			}
			p[listen], p[openLeft], p[openRight] = q, (1-q)/2, (1-q)/2
		}
		got, err = StochasticValueWithin(ctx, m, H, func(_, o int, _, p []float64) { obsPol(o, p) }, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := bruteForceObsPolicy(m, H, obsPol); !approx(got, want) {
			t.Errorf("H=%d observation policy: %v, want %v", H, got, want)
		}
	}
	if _, err := StochasticValueWithin(ctx, m, 2, func(_, _ int, _, p []float64) { p[0] = 0.5 }, 0); err == nil {
		t.Error("probabilities summing to 0.5 accepted")
	}
}

// optimalAt is the optimal action at step h of horizon H for belief b,
// by brute force over the remaining steps.
func optimalAt(m *POMDP, H, h int, b []float64) int {
	mm, _ := prepare(m)
	var v func(h int, b []float64) float64
	q := func(h int, b []float64, a int) float64 {
		return mm.backup(b, a, h == H, func(_ int, post []float64) float64 { return v(h+1, append([]float64(nil), post...)) })
	}
	v = func(h int, b []float64) float64 {
		if h > H {
			return 0
		}
		best := q(h, b, 0)
		for a := 1; a < mm.nA; a++ {
			best = max(best, q(h, b, a))
		}
		return best
	}
	best, bestV := 0, q(h, b, 0)
	for a := 1; a < mm.nA; a++ {
		if x := q(h, b, a); x > bestV+tieTol*(1+abs(bestV)) {
			best, bestV = a, x
		}
	}
	return best
}

func abs(x float64) float64 { return math.Abs(x) }

// bruteForceObsPolicy enumerates every state, action and observation
// sequence of tiger under a policy of the current observation.
func bruteForceObsPolicy(m *POMDP, H int, pol func(o int, p []float64)) float64 {
	S, A, O := m.NumStates(), m.NumActions(), m.NumObs()
	var walk func(h, s, o int, prob float64) float64
	walk = func(h, s, o int, prob float64) float64 {
		if h > H || prob == 0 {
			return 0
		}
		p := make([]float64, A)
		pol(o, p)
		v := 0.0
		for a := range A {
			for s2 := range S {
				for o2 := range O {
					q := prob * p[a] * m.T[a][s][s2] * m.O[a][s2][o2]
					if q == 0 {
						continue
					}
					v += q*m.R(a, s, s2, o2) + walk(h+1, s2, o2, q)
				}
			}
		}
		return v
	}
	v := 0.0
	for s := range S {
		v += walk(1, s, ObsInit, m.Start[s])
	}
	return v
}
