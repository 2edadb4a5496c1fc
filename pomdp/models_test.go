package pomdp

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// tigerText is the tiger problem of Kaelbling, Littman and Cassandra
// (1998), the same definition as examples/tiger.pomdp.
const tigerText = `discount: 0.95
values: reward
states: tiger-left tiger-right
actions: listen open-left open-right
observations: hear-left hear-right
start: uniform
T: listen identity
T: open-left uniform
T: open-right uniform
O: listen
0.85 0.15
0.15 0.85
O: open-left uniform
O: open-right uniform
R: listen : * : * : * -1
R: open-left : tiger-left : * : * -100
R: open-left : tiger-right : * : * 10
R: open-right : tiger-left : * : * 10
R: open-right : tiger-right : * : * -100
`

// Action indices of tigerText.
const (
	listen    = 0
	openLeft  = 1
	openRight = 2
	hearLeft  = 0
	hearRight = 1
)

func tiger(t testing.TB) *POMDP {
	t.Helper()
	m, err := Parse(stringsReader(tigerText), "tiger")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// gambleText has one state: "stay" earns 1, "gamble" earns 10 when it
// emits o0 (probability 0.3) and 0 otherwise, so 3 in expectation.
const gambleText = `states: 1
actions: stay gamble
observations: o0 o1
T: * identity
O: stay
1 0
O: gamble
0.3 0.7
R: stay : * : * : * 1
R: gamble : * : * : o0 10
`

func gamble(t testing.TB) *POMDP {
	t.Helper()
	m, err := Parse(stringsReader(gambleText), "gamble")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// randomPOMDP draws a small POMDP with random rows and rewards in [−1,1].
func randomPOMDP(rng *rand.Rand, S, A, O int) *POMDP {
	names := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = prefix + strconv.Itoa(i)
		}
		return out
	}
	row := func(n int) []float64 {
		r := make([]float64, n)
		sum := 0.0
		for i := range r {
			if rng.Float64() < 0.2 {
				continue // some zeros, so some branches have probability 0
			}
			r[i] = rng.Float64()
			sum += r[i]
		}
		if sum == 0 {
			r[rng.IntN(n)] = 1
			return r
		}
		for i := range r {
			r[i] /= sum
		}
		return r
	}
	m := &POMDP{Name: "random", States: names("s", S), Actions: names("a", A), Observations: names("o", O)}
	m.Start = row(S)
	m.T = make([][][]float64, A)
	m.O = make([][][]float64, A)
	for a := range A {
		m.T[a] = make([][]float64, S)
		m.O[a] = make([][]float64, S)
		for s := range S {
			m.T[a][s] = row(S)
			m.O[a][s] = row(O)
		}
	}
	m.Reward = make([]float64, A*S*S*O)
	for i := range m.Reward {
		m.Reward[i] = 2*rng.Float64() - 1
	}
	return m
}
