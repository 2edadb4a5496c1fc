package policy_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
	"github.com/psrlcb/psrlcb/policy"
)

// TestBeliefPlanCompactForm: a model whose emissions do not depend on the
// action and whose rewards do not depend on the next observation is the
// same process in the full and in the Compact form (the form fits use
// for large vocabularies). Without the bonus (α = 0) the belief planner
// must give the same policy and values for both.
func TestBeliefPlanCompactForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	full := pessimismtest.RandomModel(rng, pessimismtest.Spec{States: 3, Obs: 4, Actions: 2, Horizon: 5, Stationary: true})
	compact := compactForm(t, full)
	d := pessimismtest.Sample(rng, full, nil, 300)
	var vals [2]*policy.PlanStats
	var pols [2]*policy.Policy
	for i, m := range []*estimate.Model{full, compact} {
		b, err := pessimism.Build(context.Background(), m, d, pessimismtest.EvenSplits(300, 5), pessimism.Options{})
		if err != nil {
			t.Fatal(err)
		}
		pols[i], vals[i], err = policy.Plan(context.Background(), m, b.WithAlpha(0), policy.PlanOptions{Planner: policy.PlannerBelief, Points: 40})
		if err != nil {
			t.Fatalf("form %d: %v", i, err)
		}
	}
	if math.Abs(vals[0].Value-vals[1].Value) > 1e-9 || len(pols[0].Nodes) != len(pols[1].Nodes) {
		t.Fatalf("full form: value %v, %d rows; compact form: value %v, %d rows", vals[0].Value, len(pols[0].Nodes), vals[1].Value, len(pols[1].Nodes))
	}
	for i := range pols[0].Nodes {
		if pols[0].Nodes[i].Action != pols[1].Nodes[i].Action {
			t.Fatalf("row %d: full form %s, compact %s", i, pols[0].Nodes[i].Action, pols[1].Nodes[i].Action)
		}
	}
}

// compactForm makes full's emission action-independent (action 0's) and
// its reward independent of the next observation (o = 0's), in place,
// and returns the same process in the Compact form. full must be
// stationary with categorical rewards.
func compactForm(t testing.TB, full *estimate.Model) *estimate.Model {
	t.Helper()
	S, O, A := full.States, full.NumObs, full.NumActions
	V := len(full.RewardValues)
	if full.Reward != estimate.RewardCategorical || V == 0 || !full.Stationary {
		t.Fatalf("want a stationary model with categorical rewards")
	}
	// Make the full model's emission action-independent and its reward
	// observation-independent.
	e0 := append([]float64(nil), full.EmitOf(0, 0)...)
	for a := 1; a < A; a++ {
		copy(full.Emit[0][a*S*O:(a+1)*S*O], e0)
	}
	compact := *full
	compact.Compact = true
	compact.Emit = [][]float64{e0}
	cells := make([]float64, S*A*S*V)
	for s := 0; s < S; s++ {
		for a := 0; a < A; a++ {
			for s2 := 0; s2 < S; s2++ {
				src := full.RewardIndex(s, a, s2, 0) * V
				copy(cells[((s*A+a)*S+s2)*V:][:V], full.RewardProb[0][src:src+V])
				for o := 1; o < O; o++ {
					copy(full.RewardProb[0][full.RewardIndex(s, a, s2, o)*V:][:V], full.RewardProb[0][src:src+V])
				}
			}
		}
	}
	compact.RewardProb = [][]float64{cells}
	full.Prepare()
	compact.Prepare()
	for _, m := range []*estimate.Model{full, &compact} {
		if err := m.Validate(1e-9); err != nil {
			t.Fatal(err)
		}
	}
	return &compact
}

// setupCompact is setup for a Compact model: a random stationary model
// made Compact (compactForm), logs sampled from it and its bonus.
func setupCompact(t testing.TB, seed uint64, sp pessimismtest.Spec, K int) (*estimate.Model, *pessimism.Bonus) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 98))
	sp.Stationary = true
	m := compactForm(t, pessimismtest.RandomModel(rng, sp))
	d := pessimismtest.Sample(rng, m, nil, K)
	b, err := pessimism.Build(context.Background(), m, d, pessimismtest.EvenSplits(K, sp.Horizon), pessimism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m, b
}
