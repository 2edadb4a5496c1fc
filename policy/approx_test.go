package policy_test

import (
	"context"
	"math"
	"reflect"
	"testing"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
	"github.com/psrlcb/psrlcb/policy"
)

func TestApproximatePlanWithinGap(t *testing.T) {
	m, b := setup(t, 80, pessimismtest.Spec{States: 3, Obs: 3, Actions: 2, Horizon: 4}, 100)
	_, exact, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{})
	if err != nil || !exact.Exact {
		t.Fatal(err, exact)
	}
	for _, budget := range []int64{20, 60, 200, 600} {
		pol, st, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{Budget: budget, Planner: policy.PlannerExact})
		if err != nil {
			t.Fatal(err)
		}
		if st.Exact || st.Epsilon <= 0 || st.GapBound < 0 {
			t.Fatalf("budget %d: %+v", budget, st)
		}
		if st.Nodes > budget {
			t.Fatalf("budget %d: searched %d nodes", budget, st.Nodes)
		}
		// The policy is total (ModelValue follows every positive-probability
		// history) and within the stated gap of the exact optimum.
		v, err := policy.ModelValue(m, b, pol)
		if err != nil {
			t.Fatal(err)
		}
		if gap := exact.Value - v.LCB; gap > st.GapBound+1e-12 || gap < -1e-12 {
			t.Fatalf("budget %d: gap %v, bound %v", budget, gap, st.GapBound)
		}
		// The planner's own figure is within half the gap bound of the
		// policy's exact value (midpoint stand-ins).
		if math.Abs(st.Value-v.LCB) > st.GapBound+1e-12 {
			t.Fatalf("budget %d: planner value %v, exact %v, bound %v", budget, st.Value, v.LCB, st.GapBound)
		}
	}
}

func TestPlanEndSymbol(t *testing.T) {
	// Observation 0 and action 0 are the end symbol; the model can emit it.
	m, b := setup(t, 90, pessimismtest.Spec{States: 2, Obs: 3, Actions: 3, Horizon: 3}, 30)
	m.ObsVocab = []string{ingest.EndSymbol, "o1", "o2"}
	m.ActVocab = []string{ingest.EndSymbol, "a1", "a2"}
	pol, _, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range pol.Nodes {
		if (n.Obs == ingest.EndSymbol) != (n.Action == ingest.EndSymbol) {
			t.Fatalf("node %d: observation %s, action %s", n.ID, n.Obs, n.Action)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	m, b := setup(t, 91, pessimismtest.Spec{States: 2, Obs: 2, Actions: 2, Horizon: 2}, 10)
	if _, _, err := policy.Plan(context.Background(), m, b.WithAlpha(math.NaN()), policy.PlanOptions{}); err == nil {
		t.Fatal("NaN alpha accepted")
	}
	if _, _, err := policy.Plan(context.Background(), nil, b, policy.PlanOptions{}); err == nil {
		t.Fatal("nil model accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := policy.Plan(ctx, m, b, policy.PlanOptions{}); err == nil {
		t.Fatal("cancelled context ignored")
	}
}

// TestApproximatePlanWideVocabulary: past wideObs observations the
// approximate search is sized by its work and prices the children of
// nodes below ε at once; the policy stays total and within the stated gap
// of the exact optimum. wideObs is lowered so that the exact optimum is
// within reach.
func TestApproximatePlanWideVocabulary(t *testing.T) {
	defer policy.SetWideObs(8)()
	// Even seeds: a Compact model, whose features are r-dimensional, so
	// the search finds a node's children through the observation index
	// (one-step features need every observation's probability).
	for seed := uint64(81); seed < 88; seed++ {
		setupFor := setup
		if seed%2 == 0 {
			setupFor = setupCompact
		}
		m, b := setupFor(t, seed, pessimismtest.Spec{States: 3, Obs: 40, Actions: 2, Horizon: 3}, 400)
		_, exact, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{})
		if err != nil || !exact.Exact {
			t.Fatal(err, exact)
		}
		for _, budget := range []int64{10, 300, 3000} {
			pol, st, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{Budget: budget, Planner: policy.PlannerExact})
			if err != nil {
				t.Fatal(err)
			}
			if st.Exact || st.Epsilon <= 0 || st.GapBound < 0 || math.IsNaN(st.GapBound) {
				t.Fatalf("%+v", st)
			}
			steps1 := 0
			for _, n := range pol.Nodes {
				if n.Step == 1 {
					steps1++
				}
			}
			if steps1 != 40 {
				t.Fatalf("%d step-1 nodes, want one per observation (40)", steps1)
			}
			v, err := policy.ModelValue(m, b, pol)
			if err != nil {
				t.Fatal(err)
			}
			if gap := exact.Value - v.LCB; gap > st.GapBound+1e-12 || gap < -1e-12 {
				t.Fatalf("seed %d budget %d: gap %v, bound %v", seed, budget, gap, st.GapBound)
			}
			if math.Abs(st.Value-v.LCB) > st.GapBound+1e-12 {
				t.Fatalf("seed %d budget %d: planner value %v, exact %v, bound %v", seed, budget, st.Value, v.LCB, st.GapBound)
			}
			t.Logf("seed %d budget %d: exact %.4f, approximate %.4f, gap bound %.4f, ε %g, %d nodes", seed, budget, exact.Value, v.LCB, st.GapBound, st.Epsilon, st.Nodes)
		}
	}
}

// TestApproximatePlanWideDeterministic: the wide search (sets of pruned
// children priced at once, the emission bound) gives the same policy and
// figures for 1, 2 and 3 workers, run after run.
func TestApproximatePlanWideDeterministic(t *testing.T) {
	defer policy.SetWideObs(8)()
	m, b := setupCompact(t, 90, pessimismtest.Spec{States: 3, Obs: 40, Actions: 3, Horizon: 4}, 400)
	var ref *policy.Policy
	var refSt *policy.PlanStats
	for _, w := range []int{1, 2, 3, 2, 1} {
		pol, st, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{Budget: 3000, Planner: policy.PlannerExact, Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref, refSt = pol, st
			continue
		}
		if !reflect.DeepEqual(ref.Nodes, pol.Nodes) || *refSt != *st {
			t.Fatalf("workers %d: plan differs (%+v vs %+v)", w, st, refSt)
		}
	}
}
