package policy_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
	"github.com/psrlcb/psrlcb/policy"
)

// tigerModel is the tiger problem of Kaelbling, Littman and Cassandra
// (1998, "Planning and acting in partially observable stochastic
// domains", Artificial Intelligence 101), written as an estimate.Model:
// states tiger-left, tiger-right (uniform start); listening costs 1,
// keeps the state and hears the tiger's side with probability 0.85;
// opening a door pays +10 without the tiger behind it and −100 with it,
// then the problem resets (uniform state, uninformative observation).
// o_1 is the symbol "start"; returns are rescaled with the range
// [−100H, 10H].
func tigerModel(H int) *estimate.Model {
	const S, O, A = 2, 3, 3 // obs: hear-left, hear-right, start; acts: listen, open-left, open-right
	vals := []float64{-100, -1, 10}
	m := &estimate.Model{States: S, NumObs: O, NumActions: A, Horizon: H, Stationary: true, TestLength: 1,
		ObsVocab: []string{"hear-left", "hear-right", "start"}, ActVocab: []string{"listen", "open-left", "open-right"},
		Reward: estimate.RewardCategorical, RewardValues: vals, ReturnMin: -100 * float64(H), ReturnMax: 10 * float64(H)}
	m.Init = []float64{0.5, 0.5}
	m.Obs1 = []float64{0, 0, 1, 0, 0, 1}
	T := make([]float64, A*S*S)
	E := make([]float64, A*S*O)
	R := make([]float64, S*A*S*O*len(vals))
	for s := 0; s < S; s++ {
		T[(0*S+s)*S+s] = 1 // listen keeps the state
		E[(0*S+s)*O+s] = 0.85
		E[(0*S+s)*O+1-s] = 0.15
		for a := 1; a < A; a++ {
			T[(a*S+s)*S+0], T[(a*S+s)*S+1] = 0.5, 0.5
			E[(a*S+s)*O+0], E[(a*S+s)*O+1] = 0.5, 0.5
		}
	}
	for s := 0; s < S; s++ {
		for a := 0; a < A; a++ {
			v := 1 // listen: −1
			if a > 0 {
				v = 2 // open the door without the tiger: +10
				if a-1 == s {
					v = 0 // the tiger's door: −100
				}
			}
			for s2 := 0; s2 < S; s2++ {
				for o := 0; o < O; o++ {
					R[m.RewardIndex(s, a, s2, o)*len(vals)+v] = 1
				}
			}
		}
	}
	m.Trans, m.Emit, m.RewardProb = [][]float64{T}, [][]float64{E}, [][]float64{R}
	m.Prepare()
	return m
}

// uniformBonus builds the bonus from K episodes of m under the uniform
// behaviour.
func uniformBonus(t testing.TB, m *estimate.Model, K int, seed uint64) *pessimism.Bonus {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	d := pessimismtest.Sample(rng, m, nil, K) // nil: the uniform behaviour
	b, err := pessimism.Build(context.Background(), m, d, pessimismtest.EvenSplits(K, m.Horizon), pessimism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// beliefTol is the stated tolerance of the belief planner against the
// exact planner on small problems, in units of the rescaled return: with
// α = 0 the objective is additive and every distinct belief is a point,
// so the plans agree to round-off; with α > 0 the belief planner
// maximises a tangent surrogate of the bonus (beliefPlan), and the gap is
// what that surrogate costs: it cannot see that a concave bonus charges
// less on average when Σ varies between trajectories (at most 0.019
// measured here, on hallway at α = 1, whatever the number of points).
const (
	beliefTolGreedy = 1e-9
	beliefTolBonus  = 0.025
)

// checkBelief plans m with both planners and checks: the belief plan's
// exact LCB (ModelValue) is within tol of the exact optimum; its reported
// reward is exact and its reported LCB a lower bound of the exact one;
// its upper bound lies above the optimum.
func checkBelief(t *testing.T, m *estimate.Model, b *pessimism.Bonus, tol float64) {
	t.Helper()
	ctx := context.Background()
	_, ex, err := policy.Plan(ctx, m, b, policy.PlanOptions{Planner: policy.PlannerExact})
	if err != nil || !ex.Exact {
		t.Fatal(err, ex)
	}
	pol, st, err := policy.Plan(ctx, m, b, policy.PlanOptions{Planner: policy.PlannerBelief})
	if err != nil {
		t.Fatal(err)
	}
	if st.Planner != policy.PlannerBelief || st.Exact {
		t.Fatalf("stats %+v", st)
	}
	v, err := policy.ModelValue(m, b, pol)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("α=%g exact %.6f belief %.6f (reported %.6f, upper %.6f, rows %d, uncovered %.3g)", b.Alpha, ex.Value, v.LCB, st.Value, st.UpperBound, st.Nodes, st.UncoveredMass)
	if ex.Value-v.LCB > tol || v.LCB > ex.Value+1e-9 {
		t.Errorf("α=%g: belief plan LCB %v, exact optimum %v (tolerance %v)", b.Alpha, v.LCB, ex.Value, tol)
	}
	if d := st.ValueReward - v.Reward; d > 1e-9 || d < -1e-9 {
		t.Errorf("α=%g: reported V_R %v, exact %v", b.Alpha, st.ValueReward, v.Reward)
	}
	if st.Value > v.LCB+1e-9 {
		t.Errorf("α=%g: reported LCB %v above the policy's exact LCB %v", b.Alpha, st.Value, v.LCB)
	}
	if st.UpperBound < ex.Value-1e-9 || st.GapBound < 0 {
		t.Errorf("α=%g: upper bound %v below the optimum %v (gap %v)", b.Alpha, st.UpperBound, ex.Value, st.GapBound)
	}
}

func TestBeliefMatchesExactTiger(t *testing.T) {
	for _, H := range []int{3, 5} {
		m := tigerModel(H)
		b := uniformBonus(t, m, 2000, uint64(H))
		// α = 10: the first round's plan, for the reward alone, saturates
		// the bonus (Σ past 1/α² on its trajectories), so only a round at
		// the kink that charges Σ finds the exact optimum (at H = 3, 0.213
		// against −0.083).
		for _, c := range []struct{ alpha, tol float64 }{{0, beliefTolGreedy}, {0.3, beliefTolBonus}, {1, beliefTolBonus}, {10, beliefTolBonus}} {
			checkBelief(t, m, b.WithAlpha(c.alpha), c.tol)
		}
	}
}

// TestBeliefMatchesExactRandom: random models whose every probability is
// positive (no two histories share a belief), with one- and two-step
// core tests and per-step tables.
func TestBeliefMatchesExactRandom(t *testing.T) {
	for i, sp := range []pessimismtest.Spec{
		{States: 3, Obs: 3, Actions: 2, Horizon: 4},
		{States: 4, Obs: 2, Actions: 3, Horizon: 4, TestLength: 2},
		{States: 2, Obs: 3, Actions: 2, Horizon: 5, Stationary: true},
	} {
		m, b := setup(t, uint64(200+i), sp, 300)
		for _, c := range []struct{ alpha, tol float64 }{{0, beliefTolGreedy}, {0.3, beliefTolBonus}, {3, beliefTolBonus}} {
			checkBelief(t, m, b.WithAlpha(c.alpha), c.tol)
		}
	}
}

// TestBeliefRowBudget: with a row budget smaller than the policy's tree
// the table is cut at a threshold and the controller decides the rest: no
// fallback mass, the mass beyond the table stated, the rows in level
// order, and the reported figures — exact on the table, rollouts of the
// controller beyond it — within five standard errors of the controller's
// exact value (ModelValue enumerates every history, following the
// controller past the table).
func TestBeliefRowBudget(t *testing.T) {
	m, b := setup(t, 210, pessimismtest.Spec{States: 3, Obs: 3, Actions: 2, Horizon: 5}, 300)
	b = b.WithAlpha(0.3)
	for _, rows := range []int64{3, 20, 100} {
		pol, st, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{Planner: policy.PlannerBelief, RowBudget: rows})
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(pol.Nodes)) > rows || st.Threshold <= 0 || st.UncoveredMass != 0 || st.RolloutMass <= 0 || st.RolloutMass > 1 || st.ValueSE <= 0 || pol.Ctrl == nil {
			t.Fatalf("rows %d: %d nodes, threshold %v, uncovered %v, rollout mass %v, se %v", rows, len(pol.Nodes), st.Threshold, st.UncoveredMass, st.RolloutMass, st.ValueSE)
		}
		for i, n := range pol.Nodes {
			// Level order (policy.arrow's lookup index): parents never
			// decrease along the rows.
			if i > 0 && n.Parent < pol.Nodes[i-1].Parent {
				t.Fatalf("rows %d: row %d has parent %d after %d", rows, i, n.Parent, pol.Nodes[i-1].Parent)
			}
			if n.Step > 1 && n.ReachProb < st.Threshold {
				t.Fatalf("rows %d: node %d reached with %v below the threshold %v", rows, n.ID, n.ReachProb, st.Threshold)
			}
		}
		checkAgrees(t, pol)
		v, err := policy.ModelValue(m, b, pol)
		if err != nil {
			t.Fatal(err)
		}
		tol := 5*st.ValueSE + 1e-9
		if math.Abs(st.Value-v.LCB) > tol {
			t.Fatalf("rows %d: reported %+v, the controller's exact %+v (tolerance %v)", rows, st, v, tol)
		}
		if st.UpperBound < v.LCB-1e-9 {
			t.Fatalf("rows %d: upper bound %v below a policy's value %v", rows, st.UpperBound, v.LCB)
		}
		t.Logf("rows %d: reported LCB %.5f ± %.5f, exact %.5f, rollout mass %.3f", rows, st.Value, st.ValueSE, v.LCB, st.RolloutMass)
	}
}

// checkAgrees: the controller, fed the history of each row, takes the
// row's action.
func checkAgrees(t *testing.T, pol *policy.Policy) {
	t.Helper()
	for _, n := range pol.Nodes {
		var obs, acts []string
		for j := n.ID; j >= 0; j = pol.Nodes[j].Parent {
			obs = append(obs, pol.Nodes[j].Obs)
			if j != n.ID {
				acts = append(acts, pol.Nodes[j].Action)
			}
		}
		slices.Reverse(obs)
		slices.Reverse(acts)
		a, ok, err := pol.Ctrl.Decide(obs, acts)
		if err != nil || !ok || a != n.Action {
			t.Fatalf("row %d (history %v, %v): the controller takes %q (ok %v, %v), the row %q", n.ID, obs, acts, a, ok, err, n.Action)
		}
	}
}

func TestBeliefEndSymbolAndErrors(t *testing.T) {
	m, b := setup(t, 90, pessimismtest.Spec{States: 2, Obs: 3, Actions: 3, Horizon: 3}, 30)
	m.ObsVocab = []string{ingest.EndSymbol, "o1", "o2"}
	m.ActVocab = []string{ingest.EndSymbol, "a1", "a2"}
	pol, _, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{Planner: policy.PlannerBelief})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range pol.Nodes {
		if (n.Obs == ingest.EndSymbol) != (n.Action == ingest.EndSymbol) {
			t.Fatalf("node %d: observation %s, action %s", n.ID, n.Obs, n.Action)
		}
	}
	if _, _, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{Planner: "greedy"}); !errors.Is(err, policy.ErrOptions) {
		t.Fatalf("unknown planner: %v", err)
	}
	if _, _, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{Planner: policy.PlannerBelief, Points: -1}); !errors.Is(err, policy.ErrOptions) {
		t.Fatalf("negative points: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := policy.Plan(ctx, m, b, policy.PlanOptions{Planner: policy.PlannerBelief}); err == nil {
		t.Fatal("cancelled context ignored")
	}
}

// TestAutoPlanner: auto is exact when the tree fits the budget and the
// belief planner otherwise.
func TestAutoPlanner(t *testing.T) {
	m, b := setup(t, 80, pessimismtest.Spec{States: 3, Obs: 3, Actions: 2, Horizon: 4}, 100)
	_, st, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{})
	if err != nil || st.Planner != policy.PlannerExact || !st.Exact {
		t.Fatal(err, st)
	}
	_, st, err = policy.Plan(context.Background(), m, b, policy.PlanOptions{Budget: 50, Planner: policy.PlannerAuto})
	if err != nil || st.Planner != policy.PlannerBelief || st.Exact {
		t.Fatal(err, st)
	}
}

// TestBeliefDeterministicAcrossWorkers: the same plan for 1, 2 and 3
// workers, with the whole table and with a row budget that makes the
// table walks stop at their limit.
func TestBeliefDeterministicAcrossWorkers(t *testing.T) {
	m, b := setup(t, 220, pessimismtest.Spec{States: 4, Obs: 3, Actions: 3, Horizon: 6}, 300)
	b = b.WithAlpha(0.5)
	for _, rows := range []int64{0, 60} {
		p1, s1, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{Planner: policy.PlannerBelief, Workers: 1, Points: 50, RowBudget: rows})
		if err != nil {
			t.Fatal(err)
		}
		if rows > 0 && (len(p1.Nodes) > int(rows) || s1.Threshold == 0) {
			t.Fatalf("row budget %d: %d rows, threshold %v", rows, len(p1.Nodes), s1.Threshold)
		}
		for _, w := range []int{2, 3} {
			pw, sw, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{Planner: policy.PlannerBelief, Workers: w, Points: 50, RowBudget: rows})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p1.Nodes, pw.Nodes) || *s1 != *sw {
				t.Fatalf("rows %d: plans differ between 1 and %d workers: %+v vs %+v", rows, w, s1, sw)
			}
		}
	}
}

// TestBeliefRowBudgetWide: past wideObs observations the table walk
// prices a node's cut children as one set at their mean belief. The
// reported reward stays exact (it is linear in the belief), the reported
// bound stays below the written policy's exact LCB (the bonus is concave
// in the belief), and the table is the same for 1, 2 and 3 workers.
func TestBeliefRowBudgetWide(t *testing.T) {
	defer policy.SetWideObs(2)()
	m, b := setup(t, 230, pessimismtest.Spec{States: 3, Obs: 6, Actions: 3, Horizon: 4}, 300)
	b = b.WithAlpha(0.4)
	for _, rows := range []int64{8, 40, 200} {
		var ref *policy.Policy
		var refSt *policy.PlanStats
		for _, workers := range []int{1, 2, 3} {
			pol, st, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{Planner: policy.PlannerBelief, RowBudget: rows, Workers: workers})
			if err != nil {
				t.Fatal(err)
			}
			if ref == nil {
				ref, refSt = pol, st
			} else if !reflect.DeepEqual(ref.Nodes, pol.Nodes) || *refSt != *st {
				for i := range min(len(ref.Nodes), len(pol.Nodes)) {
					if ref.Nodes[i] != pol.Nodes[i] {
						t.Logf("first differing row %d:\n%+v\n%+v", i, ref.Nodes[i], pol.Nodes[i])
						break
					}
				}
				t.Fatalf("rows %d: plans differ between 1 and %d workers: %d vs %d rows\n%+v\n%+v", rows, workers, len(ref.Nodes), len(pol.Nodes), refSt, st)
			}
		}
		if int64(len(ref.Nodes)) > rows || refSt.RolloutMass <= 0 || refSt.UncoveredMass != 0 {
			t.Fatalf("rows %d: %d nodes, rollout mass %v (the test wants a cut table)", rows, len(ref.Nodes), refSt.RolloutMass)
		}
		checkAgrees(t, ref)
		v, err := policy.ModelValue(m, b, ref)
		if err != nil {
			t.Fatal(err)
		}
		if tol := 5*refSt.ValueSE + 1e-9; math.Abs(refSt.Value-v.LCB) > tol {
			t.Fatalf("rows %d: reported %+v, the controller's exact %+v (tolerance %v)", rows, refSt, v, tol)
		}
		t.Logf("rows %d: reported LCB %.5f ± %.5f, exact %.5f, rollout mass %.3f", rows, refSt.Value, refSt.ValueSE, v.LCB, refSt.RolloutMass)
	}
}
