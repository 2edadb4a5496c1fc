package pomdp

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/split"
)

// bruteLogLik is ln P(o_{2:H}, r_{1:H} | a_{1:H}) of one logged episode
// under m by summation over every state path s_1..s_{H+1} and the
// unlogged o_{H+1} (o_1 is the initial symbol, probability 1).
func bruteLogLik(m *POMDP, obs []int, act []int, rew []float64) float64 {
	S, O, H := m.NumStates(), m.NumObs(), len(act)
	var rec func(h, s int) float64 // P(the rest | s_h = s), h 1-based
	rec = func(h, s int) float64 {
		a := act[h-1]
		p := 0.0
		for s2 := range S {
			t := m.T[a][s][s2]
			if t == 0 {
				continue
			}
			if h == H {
				for o := range O {
					if m.R(a, s, s2, o) == rew[h-1] {
						p += t * m.O[a][s2][o]
					}
				}
				continue
			}
			o := obs[h]
			if m.R(a, s, s2, o) != rew[h-1] {
				continue
			}
			p += t * m.O[a][s2][o] * rec(h+1, s2)
		}
		return p
	}
	p := 0.0
	for s, x := range m.Start {
		p += x * rec(1, s)
	}
	return math.Log(p)
}

func TestTrueModelLikelihoodAndPlan(t *testing.T) {
	ctx := context.Background()
	m, err := ParseFile(filepath.Join(examplesDir(t), "tiger.pomdp"))
	if err != nil {
		t.Fatal(err)
	}
	const H, K = 3, 300
	beh, err := ParseBehavior("uniform", m)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Simulate(ctx, m, H, K, beh, 7)
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Dataset()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := m.TrueModel(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := tm.Validate(1e-12); err != nil {
		t.Fatal(err)
	}
	// The model's likelihood of every episode is the POMDP's, summed by
	// brute force over state paths (both exact; rounding only).
	for k := range K {
		obs, act := make([]int, H), make([]int, H)
		for h := range H {
			obs[h], act[h] = int(l.Obs[k*H+h]), int(l.Act[k*H+h])
		}
		rew := l.Reward[k*H : (k+1)*H]
		want := bruteLogLik(m, obs, act, rew)
		got := tm.EpisodeLogLik(d.Obs[k*H:(k+1)*H], d.Act[k*H:(k+1)*H], d.Reward[k*H:(k+1)*H])
		if math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
			t.Fatalf("episode %d: model log-likelihood %v, brute force %v", k, got, want)
		}
	}
	// Planned greedily (α = 0) the true model's policy is optimal.
	splits, err := split.Split(K, H, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pessimism.Build(ctx, tm, d, splits, pessimism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pol, st, err := policy.Plan(ctx, tm, b.WithAlpha(0), policy.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Exact {
		t.Fatalf("plan of a 3-step tiger not exact")
	}
	v, err := EvaluatePolicy(ctx, m, H, pol)
	if err != nil {
		t.Fatal(err)
	}
	vStar, _, err := OptimalContext(ctx, m, H)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(v-vStar) > 1e-9 {
		t.Errorf("true model's greedy plan is worth %v, optimum %v", v, vStar)
	}
	// Its own value of the plan is the true one.
	mv, _, err := policy.ModelReturn(ctx, tm, pol)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(mv-vStar) > 1e-9 {
		t.Errorf("true model values its plan at %v, want %v", mv, vStar)
	}
}

func TestTrueModelMissingSymbol(t *testing.T) {
	m, err := ParseFile(filepath.Join(examplesDir(t), "tiger.pomdp"))
	if err != nil {
		t.Fatal(err)
	}
	beh, err := ParseBehavior("uniform", m)
	if err != nil {
		t.Fatal(err)
	}
	d, err := SimulateDataset(context.Background(), m, 2, 50, beh, 1)
	if err != nil {
		t.Fatal(err)
	}
	d.ActVocab = slices.Clone(d.ActVocab)
	d.ActVocab[0] = "jump"
	if _, err := m.TrueModel(d); !errors.Is(err, ErrPolicy) {
		t.Errorf("logs without the action %q: got %v, want ErrPolicy", m.Actions[0], err)
	}
}
