package policy_test

import (
	"context"
	"math"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
	"github.com/psrlcb/psrlcb/policy"
)

// TestModelReturnMatchesPlanner: for the greedy plan (α = 0) the model's
// expected return is the planner's V_{θ̂,R} mapped back to the user's units.
func TestModelReturnMatchesPlanner(t *testing.T) {
	for i, sp := range []pessimismtest.Spec{
		{States: 2, Obs: 2, Actions: 2, Horizon: 3},
		{States: 3, Obs: 3, Actions: 2, Horizon: 3, Stationary: true, Gaussian: true},
	} {
		m, b := setup(t, uint64(40+i), sp, 40)
		pol, st, err := policy.Plan(context.Background(), m, b.WithAlpha(0), policy.PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, un, err := policy.ModelReturn(context.Background(), m, pol)
		if err != nil || un != 0 {
			t.Fatal(err, un)
		}
		want := m.ReturnMin + st.ValueReward*(m.ReturnMax-m.ReturnMin)
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Fatalf("spec %d: ModelReturn %v, planner %v", i, got, want)
		}
	}
}

// TestModelReturnOpenLoop: a policy that plays action a at every step
// (one root node per first observation, fallback a) has the value of the
// state marginals pushed through the transition tables, with no filtering:
// Σ_h Σ_s P(s_h = s) E[r_h | s, a].
func TestModelReturnOpenLoop(t *testing.T) {
	m, _ := setup(t, 50, pessimismtest.Spec{States: 3, Obs: 2, Actions: 2, Horizon: 4}, 30)
	S := m.States
	for a := range m.NumActions {
		sym := m.ActVocab[a]
		pol := &policy.Policy{Horizon: m.Horizon}
		for o, name := range m.ObsVocab {
			pol.Nodes = append(pol.Nodes, policy.Node{ID: int64(o), Parent: -1, Step: 1, Obs: name, Action: sym, Fallback: sym})
		}
		got, un, err := policy.ModelReturn(context.Background(), m, pol)
		if err != nil || un != 0 {
			t.Fatal(err, un)
		}
		p := append([]float64(nil), m.Init...)
		want := 0.0
		for h := 1; h <= m.Horizon; h++ {
			want += m.ExpectedReward(h, p, a) // linear in the state marginal
			next := make([]float64, S)
			m.Predict(h, p, a, next)
			p = next
		}
		if math.Abs(got-want) > 1e-12 {
			t.Fatalf("action %s: ModelReturn %v, marginal recursion %v", sym, got, want)
		}
	}
}

// TestModelReturnErrors: a policy naming an unknown action, or of another
// horizon, is an error; a missing first observation is unmatched mass.
func TestModelReturnErrors(t *testing.T) {
	m, _ := setup(t, 51, pessimismtest.Spec{States: 2, Obs: 2, Actions: 2, Horizon: 2}, 20)
	one := func(obs, act string, H int) *policy.Policy {
		return &policy.Policy{Horizon: H, Nodes: []policy.Node{{ID: 0, Parent: -1, Step: 1, Obs: obs, Action: act, Fallback: act}}}
	}
	for name, pol := range map[string]*policy.Policy{
		"unknown action": one(m.ObsVocab[0], "nope", 2),
		"other horizon":  one(m.ObsVocab[0], m.ActVocab[0], 3),
	} {
		if name == "unknown action" {
			pol.Nodes = append(pol.Nodes, policy.Node{ID: 1, Parent: -1, Step: 1, Obs: m.ObsVocab[1], Action: "nope", Fallback: "nope"})
		}
		if _, _, err := policy.ModelReturn(context.Background(), m, pol); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	var nilModel *estimate.Model
	if _, _, err := policy.ModelReturn(context.Background(), nilModel, one("x", "y", 2)); err == nil {
		t.Error("nil model: no error")
	}
	// Only the first observation has a row: the second's probability is
	// unmatched, and the value is the first branch's part alone.
	pol := one(m.ObsVocab[0], m.ActVocab[0], 2)
	v, un, err := policy.ModelReturn(context.Background(), m, pol)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]float64, m.NumObs)
	m.FirstObsProbs(first)
	pol = one(m.ObsVocab[0], m.ActVocab[0], 2) // a fresh tree: the child index is built on first use
	for o := 1; o < m.NumObs; o++ {
		pol.Nodes = append(pol.Nodes, policy.Node{ID: int64(o), Parent: -1, Step: 1, Obs: m.ObsVocab[o], Action: m.ActVocab[0], Fallback: m.ActVocab[0]})
	}
	full, un2, err := policy.ModelReturn(context.Background(), m, pol)
	if err != nil || un2 != 0 {
		t.Fatal(err, un2)
	}
	if math.Abs(un-(1-first[0])) > 1e-12 || v == full {
		t.Fatalf("unmatched %v, want 1 − P(o_1 = %s) = %v; partial value %v, full %v", un, m.ObsVocab[0], 1-first[0], v, full)
	}
}

// TestModelReturnSampled: the sampled return of a belief plan (its
// controller past a small table) is within four standard errors of the
// enumerated one, and the same seed gives the same figures.
func TestModelReturnSampled(t *testing.T) {
	m, b := setup(t, 260, pessimismtest.Spec{States: 3, Obs: 3, Actions: 2, Horizon: 5}, 300)
	pol, _, err := policy.Plan(context.Background(), m, b.WithAlpha(0.3), policy.PlanOptions{Planner: policy.PlannerBelief, RowBudget: 20})
	if err != nil {
		t.Fatal(err)
	}
	exact, un, err := policy.ModelReturn(context.Background(), m, pol)
	if err != nil {
		t.Fatal(err)
	}
	v, se, un2, err := policy.ModelReturnSampled(context.Background(), m, pol, 40000, 5)
	if err != nil {
		t.Fatal(err)
	}
	if se <= 0 || math.Abs(v-exact) > 4*se || un != un2 {
		t.Fatalf("sampled %v ± %v (unmatched %v), exact %v (unmatched %v)", v, se, un2, exact, un)
	}
	if v2, se2, _, _ := policy.ModelReturnSampled(context.Background(), m, pol, 40000, 5); v2 != v || se2 != se {
		t.Fatalf("the same seed gave %v and %v", v, v2)
	}
}
