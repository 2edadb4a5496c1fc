package policy_test

import (
	"context"
	"math"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
	"github.com/psrlcb/psrlcb/policy"
)

// TestSearchInstead: when the belief planner's stated gap is above
// PlanOptions.SearchAbove, the pruned search plans too. On a random model
// at α = 3 whose belief plan is 0.03 below the exact optimum, and whose
// whole tree the search holds, the search's policy is kept: its value is
// the exact optimum (the exact planner's, to round-off), its stated gap
// the search's (0: nothing pruned), it keeps the belief controller for
// the histories past its rows, and every observation history gets an
// action. On tiger at α = 3 the belief plan is already optimal but states
// a gap of 0.036 (the chord of the saturated bonus): it stays, and its
// stated gap falls to the search's certificate. A search too small to
// certify anything leaves the belief plan as it was.
func TestSearchInstead(t *testing.T) {
	m, b := setup(t, 303, pessimismtest.Spec{States: 3, Obs: 3, Actions: 2, Horizon: 4}, 300)
	b = b.WithAlpha(3)
	pol := checkSearchKept(t, m, b)
	// Every history of observations gets an action, in the rows or from
	// the controller past them.
	for code := 0; code < 81; code++ {
		hist := []string{m.ObsVocab[code%3], m.ObsVocab[code/3%3], m.ObsVocab[code/9%3], m.ObsVocab[code/27]}
		if a, _, ok := pol.Lookup(hist); !ok || a == "" {
			t.Fatalf("no action for %v", hist)
		}
	}

	// The default search budget: at most the exact planner's Budget (here
	// 700 nodes of a 777-node tree, so the belief planner plans), which
	// prunes a little: the search's plan is still kept, within its stated
	// gap of the optimum.
	_, ex, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{Planner: policy.PlannerExact})
	if err != nil {
		t.Fatal(err)
	}
	_, dst, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{Budget: 700, SearchAbove: policy.TargetGap})
	if err != nil || dst.Planner != "search" || dst.GapBound > policy.TargetGap || dst.Value+dst.GapBound < ex.Value-1e-9 {
		t.Errorf("default search budget: %v, %+v (optimum %v)", err, dst, ex.Value)
	}

	tm := tigerModel(5)
	tb := uniformBonus(t, tm, 2000, 11).WithAlpha(3)
	checkSearchBound(t, tm, tb)
}

// checkSearchKept plans m at Budget 50 (the belief planner) without and
// with the search's second opinion, checks that the search's policy is
// kept with the exact optimum's value, and returns it.
func checkSearchKept(t *testing.T, m *estimate.Model, b *pessimism.Bonus) *policy.Policy {
	t.Helper()
	ctx := context.Background()
	_, ex, err := policy.Plan(ctx, m, b, policy.PlanOptions{Planner: policy.PlannerExact})
	if err != nil || !ex.Exact {
		t.Fatal(err, ex)
	}
	bpol, bst, err := policy.Plan(ctx, m, b, policy.PlanOptions{Budget: 50})
	if err != nil || bst.Planner != policy.PlannerBelief {
		t.Fatal(err, bst)
	}
	if bst.GapBound <= policy.TargetGap {
		t.Fatalf("the belief plan's stated gap is %v: the test needs one above %v", bst.GapBound, policy.TargetGap)
	}
	bv, err := policy.ModelValue(m, b, bpol)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exact optimum %.6f; belief plan %.6f (stated gap %.4f)", ex.Value, bv.LCB, bst.GapBound)

	pol, st, err := policy.Plan(ctx, m, b, policy.PlanOptions{Budget: 50, SearchBudget: 1 << 20, SearchAbove: policy.TargetGap})
	if err != nil {
		t.Fatal(err)
	}
	if st.Planner != "search" || st.BeliefGap != bst.GapBound || st.SearchGap != 0 || pol.Ctrl == nil {
		t.Fatalf("search not kept or stats wrong: %+v (controller %v)", st, pol.Ctrl != nil)
	}
	v, err := policy.ModelValue(m, b, pol)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(v.LCB-ex.Value) > 1e-9 || math.Abs(st.Value-ex.Value) > 1e-9 || st.GapBound > 1e-9 {
		t.Errorf("search's policy: exact value %v, reported %v, gap %v; the exact optimum %v", v.LCB, st.Value, st.GapBound, ex.Value)
	}
	if v.LCB < bv.LCB-1e-12 {
		t.Errorf("search's policy worth %v, below the belief plan's %v", v.LCB, bv.LCB)
	}
	if st.UpperBound < ex.Value-1e-9 || st.UpperBound > bst.UpperBound+1e-12 {
		t.Errorf("upper bound %v: want between the optimum %v and the belief plan's %v", st.UpperBound, ex.Value, bst.UpperBound)
	}
	same, sst, err := policy.Plan(ctx, m, b, policy.PlanOptions{Budget: 50, SearchBudget: 4, SearchAbove: policy.TargetGap})
	if err != nil {
		t.Fatal(err)
	}
	if sst.Planner != policy.PlannerBelief || sst.BeliefGap != bst.GapBound || sst.GapBound != bst.GapBound || len(same.Nodes) != len(bpol.Nodes) || sst.Value != bst.Value {
		t.Errorf("a search of 4 nodes changed the belief plan or its gap, or left no trace: %+v", sst)
	}
	return pol
}

// checkSearchBound: m's belief plan is optimal but states a gap above
// the target; the search leaves the plan as it is and states the gap it
// certifies (0, nothing pruned).
func checkSearchBound(t *testing.T, m *estimate.Model, b *pessimism.Bonus) {
	t.Helper()
	ctx := context.Background()
	_, ex, err := policy.Plan(ctx, m, b, policy.PlanOptions{Planner: policy.PlannerExact})
	if err != nil {
		t.Fatal(err)
	}
	bpol, bst, err := policy.Plan(ctx, m, b, policy.PlanOptions{Budget: 50})
	if err != nil || bst.Planner != policy.PlannerBelief || bst.GapBound <= policy.TargetGap || math.Abs(bst.Value-ex.Value) > 1e-9 {
		t.Fatalf("the test needs an optimal belief plan stating a gap above the target: %v %+v (optimum %v)", err, bst, ex.Value)
	}
	pol, st, err := policy.Plan(ctx, m, b, policy.PlanOptions{Budget: 50, SearchBudget: 1 << 20, SearchAbove: policy.TargetGap})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tiger: belief plan's stated gap %.4f, with the search %.3g", bst.GapBound, st.GapBound)
	if st.Planner != policy.PlannerBelief || len(pol.Nodes) != len(bpol.Nodes) || st.Value != bst.Value || st.BeliefGap != bst.GapBound ||
		st.GapBound > 1e-9 || st.UpperBound < ex.Value-1e-9 {
		t.Errorf("stats %+v; optimum %v", st, ex.Value)
	}
}
