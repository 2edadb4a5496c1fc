package genpomdp

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/pomdp"
)

// TestGenerateParses checks that every family writes a valid Cassandra file
// whose sizes, rewards and start belief are what the Spec asked for.
func TestGenerateParses(t *testing.T) {
	for _, fam := range Families {
		for _, small := range []bool{true, false} {
			for i := range 5 {
				sp, err := Draw(fam, small, 7, i)
				if err != nil {
					t.Fatal(err)
				}
				p, err := Generate(sp)
				if err != nil {
					t.Fatalf("%s %d: %v", fam, i, err)
				}
				m, err := pomdp.Parse(strings.NewReader(p.Text), fam)
				if err != nil {
					t.Fatalf("%s %d: %v\n%s", fam, i, err, p.Text)
				}
				if m.NumStates() != p.States || m.NumActions() != p.Actions || m.NumObs() != p.Obs {
					t.Fatalf("%s %d: parsed sizes %d/%d/%d, generated %d/%d/%d", fam, i,
						m.NumStates(), m.NumActions(), m.NumObs(), p.States, p.Actions, p.Obs)
				}
				if small && p.States > 9 {
					t.Errorf("%s %d: small problem with %d states", fam, i, p.States)
				}
				checkRewards(t, m, sp)
			}
		}
	}
}

// checkRewards: rewards depend only on the next state, take values in
// {−1, 0, 1}, and the requested number of states pay, one of them +1.
func checkRewards(t *testing.T, m *pomdp.POMDP, sp Spec) {
	t.Helper()
	S, A, O := m.NumStates(), m.NumActions(), m.NumObs()
	paying, plus := 0, 0
	for s2 := range S {
		r := m.R(0, 0, s2, 0)
		for a := range A {
			for s := range S {
				for o := range O {
					if m.R(a, s, s2, o) != r {
						t.Fatalf("%s: reward of entering %d depends on (a, s, o)", m.Name, s2)
					}
				}
			}
		}
		if r != 0 && math.Abs(r) != 1 {
			t.Fatalf("%s: reward %v", m.Name, r)
		}
		if r != 0 {
			paying++
		}
		if r == 1 {
			plus++
		}
	}
	want := sp.RewardStates
	if paying != want || plus == 0 {
		t.Errorf("%s: %d paying states (%d of them +1), want %d", m.Name, paying, plus, want)
	}
}

// TestMazeDeterministic checks a deterministic, noiseless maze by hand: the
// walls make every move either succeed or stay, the wall pattern is the
// observation, and the exact optimum is at least the value of standing still.
func TestMazeDeterministic(t *testing.T) {
	p, err := Generate(Spec{Family: "maze", Width: 3, Length: 2, Seed: 3, RewardStates: 2, StartStates: 1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := pomdp.Parse(strings.NewReader(p.Text), "maze")
	if err != nil {
		t.Fatal(err)
	}
	for a := range 5 {
		for s := range 6 {
			n := 0
			for s2 := range 6 {
				if q := m.T[a][s][s2]; q != 0 && q != 1 {
					t.Fatalf("T[%d][%d][%d] = %v in a deterministic maze", a, s, s2, q)
				} else if q == 1 {
					n++
					if x, y, x2, y2 := s%3, s/3, s2%3, s2/3; abs(x-x2)+abs(y-y2) > 1 {
						t.Fatalf("move %d from %d lands on %d, not a neighbour", a, s, s2)
					}
				}
			}
			if n != 1 {
				t.Fatalf("T[%d][%d] has %d successors", a, s, n)
			}
		}
	}
	// Each cell shows one symbol for sure, and cells with the same symbol
	// have the same open directions (the symbol is the wall pattern).
	sym := make([]int, 6)
	for s := range 6 {
		sym[s] = -1
		for o := range p.Obs {
			if m.O[0][s][o] == 1 {
				sym[s] = o
			}
		}
		if sym[s] < 0 {
			t.Fatalf("cell %d emits no symbol for sure", s)
		}
	}
	for s := range 6 {
		for s2 := range 6 {
			if sym[s] != sym[s2] {
				continue
			}
			for a := range 4 {
				if (m.T[a][s][s] == 1) != (m.T[a][s2][s2] == 1) {
					t.Fatalf("cells %d and %d share symbol %d but not their walls", s, s2, sym[s])
				}
			}
		}
	}
	opt, _, err := pomdp.OptimalContext(context.Background(), m, 3)
	if err != nil {
		t.Fatal(err)
	}
	stay, err := pomdp.EvaluateContext(context.Background(), m, 3, func(obs, act []int) int { return 4 })
	if err != nil {
		t.Fatal(err)
	}
	if opt < stay-1e-12 {
		t.Errorf("optimum %v below standing still %v", opt, stay)
	}
}

func abs(x int) int { return max(x, -x) }

// TestGenerateDeterministic: the same Spec gives the same text, another
// seed another problem; bad sizes are errors.
func TestGenerateDeterministic(t *testing.T) {
	sp := Spec{Family: "aliased", States: 10, Actions: 3, Obs: 4, Slip: 0.1, Seed: 5}
	a, _ := Generate(sp)
	b, _ := Generate(sp)
	if a.Text != b.Text {
		t.Fatal("same spec, different text")
	}
	sp.Seed = 6
	if c, _ := Generate(sp); c.Text == a.Text {
		t.Fatal("another seed, same text")
	}
	for _, bad := range []Spec{
		{Family: "aliased", States: 61, Actions: 2, Obs: 2},
		{Family: "dense", States: 4, Actions: 11, Obs: 2},
		{Family: "dense", States: 4, Actions: 2, Obs: 31},
		{Family: "maze", Width: 1, Length: 8},
		{Family: "maze", Width: 8, Length: 8},
		{Family: "aliased", States: 4, Actions: 2, Obs: 2, Slip: 1},
		{Family: "nope"},
	} {
		if _, err := Generate(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
