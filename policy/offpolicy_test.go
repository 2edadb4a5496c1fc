package policy_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
	"github.com/psrlcb/psrlcb/policy"
)

// handPolicy: step 1 "x" → "L" (child "x" → "R", child "y" → "L"),
// step 1 "y" → "R" (no children: fallback "R").
func handPolicy() *policy.Policy {
	return &policy.Policy{Horizon: 2, Nodes: []policy.Node{
		{ID: 0, Parent: -1, Step: 1, Obs: "x", Action: "L", Fallback: "R", ReachProb: 0.6},
		{ID: 1, Parent: -1, Step: 1, Obs: "y", Action: "R", Fallback: "R", ReachProb: 0.4},
		{ID: 2, Parent: 0, Step: 2, Obs: "x", Action: "R", Fallback: "R", ReachProb: 0.2},
		{ID: 3, Parent: 0, Step: 2, Obs: "y", Action: "L", Fallback: "L", ReachProb: 0.4},
	}}
}

func handData() *ingest.Dataset {
	// Vocabularies: obs {x, y}, actions {L, R}.
	return &ingest.Dataset{Horizon: 2, ObsVocab: []string{"x", "y"}, ActVocab: []string{"L", "R"},
		EpisodeIDs: []string{"e1", "e2", "e3", "e4"}, Length: []int32{2, 2, 2, 2},
		Obs:        []uint16{0, 0 /**/, 0, 1 /**/, 1, 0 /**/, 0, 1},
		Act:        []uint16{0, 1 /**/, 0, 1 /**/, 1, 1 /**/, 1, 0},
		Reward:     []float64{1, 0, 0, 0, 0, 1, 1, 1},
		Propensity: []float64{0.5, 0.25, 0.5, 0.5, 0.8, 0.5, 0.5, 0.5}}
}

func TestWeightsHand(t *testing.T) {
	w, err := policy.Weights(handPolicy(), handData())
	if err != nil {
		t.Fatal(err)
	}
	// e1: L (0.5) then R at node 2 (0.25) → 8. e2: L then R at node 3
	// (policy L) → 0. e3: R at "y" (0.8), then fallback R (0.5) → 2.5.
	// e4: R at "x" where the policy says L → 0.
	want := []float64{8, 0, 2.5, 0}
	for k := range want {
		if math.Abs(w[k]-want[k]) > 1e-12 {
			t.Fatalf("weights %v, want %v", w, want)
		}
	}
	c, err := policy.CoverageOf(handPolicy(), handData())
	if err != nil {
		t.Fatal(err)
	}
	// Step 1: all four episodes; nodes 0 and 1 reached: mass 1.
	// Step 2: e1 (node 2), e2 (node 3), e3 (left the tree): 0.2+0.4.
	if c.Steps[0].Logged != 4 || math.Abs(c.Steps[0].CoveredMass-1) > 1e-12 ||
		c.Steps[1].Logged != 3 || math.Abs(c.Steps[1].CoveredMass-0.6) > 1e-12 {
		t.Fatalf("coverage %+v", c.Steps)
	}
	if c.CInf != 8 || c.CInfEpisode != "e1" || c.CInfStep != 2 {
		t.Fatalf("C∞ %v at %s step %d", c.CInf, c.CInfEpisode, c.CInfStep)
	}
	d := handData()
	d.Propensity = nil
	if _, err := policy.Weights(handPolicy(), d); !errors.Is(err, policy.ErrData) {
		t.Fatalf("no propensities: %v", err)
	}
}

// The importance-weighted estimate is unbiased for V_{θ,R}: on logs
// sampled from the model itself it must agree with ModelValue.
func TestIWEstimateAgreesWithModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(60, 60))
	sp := pessimismtest.Spec{States: 3, Obs: 2, Actions: 2, Horizon: 3}
	m := pessimismtest.RandomModel(rng, sp)
	d := pessimismtest.Sample(rng, m, nil, 40000)
	b, err := pessimism.Build(context.Background(), m, d.Subset([]int{0, 1, 2}), pessimismtest.EvenSplits(3, 3), pessimism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b = b.WithAlpha(0.5)
	pol, _, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := policy.ModelValue(m, b, pol)
	if err != nil {
		t.Fatal(err)
	}
	iw, err := policy.IWEstimate(m, pol, d, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 4 standard errors: fails by chance with probability < 1e-4.
	if math.Abs(iw.Mean-v.Reward) > 4*iw.StdErr || iw.StdErr <= 0 || iw.StdErr > 0.02 {
		t.Fatalf("IW %+v, model V_R %v", iw, v.Reward)
	}
	// Uniform behaviour over 2 actions and 3 steps: weights are 0 or 8,
	// about 1/8 of the episodes match, ESS ≈ K/8.
	if iw.ESS < 0.1*40000 || iw.ESS > 0.15*40000 {
		t.Fatalf("ESS %v", iw.ESS)
	}
}

// TestSelect: every candidate's criterion is its policy's value under the
// evaluation model and its cross-fitted bound that value minus the
// evaluation bonus at its own α (recomputed here by ModelValue), the
// chosen candidate has the largest criterion among the
// unsaturated ones, and the saturating α = 10⁶ (bonus 1 everywhere) is
// never chosen although it plans the greedy policy, whose criterion may
// equal that of α = 0.
func TestSelect(t *testing.T) {
	ctx := context.Background()
	m, b, eb, held := selectFixture(t, 70)
	alphas := []float64{0, 0.5, 1e6}
	sel, err := policy.Select(ctx, m, b, m, eb, held, alphas, policy.SelectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sel.Candidates) != 3 || sel.Chosen < 0 || sel.Reason == "" || sel.EvalAlpha != 0 {
		t.Fatalf("selection %+v", sel)
	}
	best := math.Inf(-1)
	for i, c := range sel.Candidates {
		if c.Alpha != alphas[i] || c.Chosen != (i == sel.Chosen) {
			t.Fatalf("candidate %d: %+v", i, c)
		}
		want, err := policy.IWEstimate(m, c.Policy, held, 0)
		if err != nil || want != c.HeldOut {
			t.Fatalf("candidate %d held-out figures %+v, recomputed %+v", i, c.HeldOut, want)
		}
		v, err := policy.ModelValue(m, eb.WithAlpha(c.Alpha), c.Policy)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(v.Reward-c.Cross.Reward) > 1e-12 || math.Abs(v.Bonus-c.Cross.Bonus) > 1e-12 ||
			c.Cross.Criterion != c.Cross.Reward || !c.Cross.Exact {
			t.Fatalf("candidate %d cross figures %+v, model value under the evaluation bonus %+v", i, c.Cross, v)
		}
		if !c.Saturated {
			best = math.Max(best, c.Cross.Criterion)
		}
	}
	if !sel.Candidates[2].Saturated || sel.Chosen == 2 {
		t.Fatalf("α = 1e6 saturates the bonus and must not be chosen: %+v", sel.Candidates[2])
	}
	if sel.Candidates[sel.Chosen].Cross.Criterion != best {
		t.Fatalf("chosen candidate is not the best cross-fitted bound")
	}
	if _, err := policy.Select(ctx, m, b, m, eb, nil, alphas, policy.SelectOptions{}); !errors.Is(err, policy.ErrData) {
		t.Fatalf("no held-out data: %v", err)
	}
	if _, err := policy.Select(ctx, m, b, nil, nil, held, alphas, policy.SelectOptions{}); !errors.Is(err, policy.ErrModel) {
		t.Fatalf("no evaluation model: %v", err)
	}
	// A common α_e: the criterion is the value minus the evaluation
	// bonus at α_e.
	sel, err = policy.Select(ctx, m, b, m, eb, held, alphas, policy.SelectOptions{EvalAlpha: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range sel.Candidates {
		v, err := policy.ModelValue(m, eb.WithAlpha(0.5), c.Policy)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(v.LCB-c.Cross.Criterion) > 1e-12 {
			t.Fatalf("α_e 0.5, candidate %d: criterion %v, want %v", i, c.Cross.Criterion, v.LCB)
		}
	}
}

// TestValueUnder: the enumerated rollout gives ModelValue's figures at
// every α, and the sampled one agrees with them within 4 standard errors,
// with the observation drawn from its probabilities and (past wideObs,
// lowered here) through the next state and its emission row.
func TestValueUnder(t *testing.T) {
	for _, wide := range []int{100, 1} {
		t.Run(fmt.Sprintf("wideObs=%d", wide), func(t *testing.T) {
			defer policy.SetWideObs(wide)()
			testValueUnder(t)
		})
	}
}

func testValueUnder(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 71))
	sp := pessimismtest.Spec{States: 3, Obs: 3, Actions: 2, Horizon: 4}
	m := pessimismtest.RandomModel(rng, sp)
	d := pessimismtest.Sample(rng, m, nil, 200)
	ctx := context.Background()
	b, err := pessimism.Build(ctx, m, d, pessimismtest.EvenSplits(200, 4), pessimism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pol, _, err := policy.Plan(ctx, m, b.WithAlpha(0.3), policy.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := policy.ValueUnder(ctx, m, b, pol, 0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := policy.ValueUnder(ctx, m, b, pol, 1, 40000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !ex.Exact || mc.Exact {
		t.Fatal("exact/sampled switch")
	}
	for _, a := range []float64{0, 0.3, 1, 5} {
		v, err := policy.ModelValue(m, b.WithAlpha(a), pol)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(ex.Reward-v.Reward) > 1e-12 || math.Abs(ex.Bonus(a)-v.Bonus) > 1e-12 {
			t.Fatalf("α %v: enumerated %v %v, ModelValue %+v", a, ex.Reward, ex.Bonus(a), v)
		}
		se := mc.LCBStdErr(a)
		if se <= 0 || math.Abs((mc.Reward-mc.Bonus(a))-v.LCB) > 4*se {
			t.Fatalf("α %v: sampled LCB %v (SE %v), exact %v", a, mc.Reward-mc.Bonus(a), se, v.LCB)
		}
	}
}
