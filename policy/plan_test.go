package policy_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
	"github.com/psrlcb/psrlcb/policy"
)

// valTol: the planner and the references add the same terms in different
// orders; values are sums of at most a few hundred terms in [−1, 1].
const valTol = 1e-12

func setup(t testing.TB, seed uint64, sp pessimismtest.Spec, K int) (*estimate.Model, *pessimism.Bonus) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 99))
	m := pessimismtest.RandomModel(rng, sp)
	d := pessimismtest.Sample(rng, m, func(h, o int, p []float64) {
		// A skewed behaviour so coverage differs between actions.
		for a := range p {
			p[a] = float64(a+1+o) / 1
		}
		s := 0.0
		for _, x := range p {
			s += x
		}
		for a := range p {
			p[a] /= s
		}
	}, K)
	b, err := pessimism.Build(context.Background(), m, d, pessimismtest.EvenSplits(K, sp.Horizon), pessimism.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m, b
}

// bruteForce enumerates every deterministic policy as a map from
// observation histories to actions and evaluates E[R − b̂] with an
// unnormalised forward recursion over the raw model tables. It returns
// the best objective.
func bruteForce(m *estimate.Model, b *pessimism.Bonus) float64 {
	return bruteForceObjective(m, b, 1, -1)
}

// bruteForceObjective is bruteForce for the objective E[wR·R + wB·b̂].
func bruteForceObjective(m *estimate.Model, b *pessimism.Bonus, wR, wB float64) float64 {
	H, O, A, S := m.Horizon, m.NumObs, m.NumActions, m.States
	// Observation histories of length 1..H, indexed by level.
	nHist := 0
	off := make([]int, H+1)
	for h := 1; h <= H; h++ {
		off[h] = nHist
		nHist += int(math.Pow(float64(O), float64(h)))
	}
	shift, scale := m.RewardScale()
	unit := make([]float64, S)
	er := func(h, s, a int) float64 {
		clear(unit)
		unit[s] = 1
		return (m.ExpectedReward(h, unit, a) - shift) * scale
	}
	best := math.Inf(-1)
	choice := make([]int, nHist)
	total := int(math.Pow(float64(A), float64(nHist)))
	for code := 0; code < total; code++ {
		c := code
		for i := range choice {
			choice[i] = c % A
			c /= A
		}
		J := 0.0
		obs := make([]int, H)
		act := make([]int, H)
		nSeq := int(math.Pow(float64(O), float64(H)))
		for seq := 0; seq < nSeq; seq++ {
			x := seq
			for h := H - 1; h >= 0; h-- {
				obs[h] = x % O
				x /= O
			}
			idx := 0
			for h := 0; h < H; h++ {
				idx = idx*O + obs[h]
				act[h] = choice[off[h+1]+idx]
			}
			alpha := make([]float64, S)
			for s := 0; s < S; s++ {
				alpha[s] = m.Init[s] * m.Obs1[s*O+obs[0]]
			}
			for h := 1; h <= H; h++ {
				// The reward of step h counts once per observation prefix
				// o_{1:h}: attribute it to the sequences whose tail is all 0.
				tailZero := true
				for j := h; j < H; j++ {
					if obs[j] != 0 {
						tailZero = false
					}
				}
				if tailZero {
					for s := 0; s < S; s++ {
						J += wR * alpha[s] * er(h, s, act[h-1])
					}
				}
				if h == H {
					break
				}
				t := m.Table(h)
				next := make([]float64, S)
				for s := 0; s < S; s++ {
					for s2 := 0; s2 < S; s2++ {
						next[s2] += alpha[s] * m.Trans[t][(act[h-1]*S+s)*S+s2]
					}
				}
				for s2 := 0; s2 < S; s2++ {
					next[s2] *= m.Emit[t][(act[h-1]*S+s2)*O+obs[h]]
				}
				alpha = next
			}
			p := 0.0
			for _, x := range alpha {
				p += x
			}
			bv, _ := b.Trajectory(obs, act)
			J += wB * p * bv
		}
		if J > best {
			best = J
		}
	}
	return best
}

func TestPlanMatchesBruteForce(t *testing.T) {
	specs := []pessimismtest.Spec{
		{States: 2, Obs: 2, Actions: 2, Horizon: 3},
		{States: 3, Obs: 2, Actions: 2, Horizon: 2},
		{States: 2, Obs: 2, Actions: 2, Horizon: 3, TestLength: 2},
		{States: 3, Obs: 2, Actions: 2, Horizon: 3, Stationary: true, Gaussian: true},
	}
	for i, sp := range specs {
		m, b0 := setup(t, uint64(10+i), sp, 40)
		for _, alpha := range []float64{0, 0.2, 1, 3, 1e6} {
			b := b0.WithAlpha(alpha)
			want := bruteForce(m, b)
			for _, w := range []int{1, 2} {
				pol, st, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{Workers: w})
				if err != nil {
					t.Fatal(err)
				}
				if !st.Exact || math.Abs(st.Value-want) > valTol {
					t.Fatalf("spec %d α=%v workers %d: planner value %v (exact %v), brute force %v", i, alpha, w, st.Value, st.Exact, want)
				}
				v, err := policy.ModelValue(m, b, pol)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(v.LCB-want) > valTol || math.Abs(v.Reward-st.ValueReward) > valTol || math.Abs(v.Bonus-st.ValueBonus) > valTol {
					t.Fatalf("spec %d α=%v: ModelValue %+v, planner %+v, brute force %v", i, alpha, v, st, want)
				}
			}
		}
	}
}

// TestPlanBonusObjective: with ObjectiveBonus the exact search maximises
// E[b̂] (the exploration objective), checked against brute force for every
// worker count; the objective runs only where the exact search does.
func TestPlanBonusObjective(t *testing.T) {
	specs := []pessimismtest.Spec{
		{States: 2, Obs: 2, Actions: 2, Horizon: 3},
		{States: 3, Obs: 2, Actions: 2, Horizon: 3, TestLength: 2},
	}
	for i, sp := range specs {
		m, b0 := setup(t, uint64(50+i), sp, 40)
		for _, alpha := range []float64{0.2, 1, 3} {
			b := b0.WithAlpha(alpha)
			want := bruteForceObjective(m, b, 0, 1)
			lcb, _, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			lv, err := policy.ModelValue(m, b, lcb)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []int{1, 2} {
				pol, st, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{Workers: w, Objective: policy.ObjectiveBonus})
				if err != nil {
					t.Fatal(err)
				}
				if !st.Exact || math.Abs(st.ValueBonus-want) > valTol {
					t.Fatalf("spec %d α=%v workers %d: bonus value %v, brute force %v", i, alpha, w, st.ValueBonus, want)
				}
				v, err := policy.ModelValue(m, b, pol)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(v.Bonus-want) > valTol {
					t.Fatalf("spec %d α=%v: ModelValue bonus %v, brute force %v", i, alpha, v.Bonus, want)
				}
				if lv.Bonus > want+valTol {
					t.Fatalf("spec %d α=%v: the LCB policy's bonus %v beats the bonus optimum %v", i, alpha, lv.Bonus, want)
				}
			}
		}
	}
	m, b := setup(t, 52, pessimismtest.Spec{States: 2, Obs: 2, Actions: 2, Horizon: 3}, 40)
	if _, _, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{Objective: "reward"}); !errors.Is(err, policy.ErrOptions) {
		t.Fatalf("unknown objective: %v, want ErrOptions", err)
	}
	for _, o := range []policy.PlanOptions{
		{Objective: policy.ObjectiveBonus, Budget: 3},
		{Objective: policy.ObjectiveBonus, Planner: policy.PlannerBelief},
	} {
		if _, _, err := policy.Plan(context.Background(), m, b, o); !errors.Is(err, policy.ErrModel) {
			t.Fatalf("%+v: %v, want ErrModel", o, err)
		}
	}
}

func TestPlanGreedyAtAlphaZero(t *testing.T) {
	// With α = 0 the objective is E[R]: the plan is the model-greedy
	// optimum, its bonus value 0, and saturating α = ∞ gives the same
	// actions (the bonus is then 1 on every trajectory).
	m, b := setup(t, 20, pessimismtest.Spec{States: 3, Obs: 2, Actions: 2, Horizon: 3}, 30)
	p0, st0, err := policy.Plan(context.Background(), m, b.WithAlpha(0), policy.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st0.ValueBonus != 0 {
		t.Fatalf("α=0 bonus value %v", st0.ValueBonus)
	}
	pInf, stInf, err := policy.Plan(context.Background(), m, b.WithAlpha(1e12), policy.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(stInf.ValueBonus-1) > valTol || math.Abs(stInf.ValueReward-st0.ValueReward) > valTol {
		t.Fatalf("saturated bonus: %+v vs greedy %+v", stInf, st0)
	}
	for i := range p0.Nodes {
		if p0.Nodes[i].Action != pInf.Nodes[i].Action {
			t.Fatalf("node %d: greedy %s, saturated %s", i, p0.Nodes[i].Action, pInf.Nodes[i].Action)
		}
	}
}

func TestPlanDeterministicAcrossWorkers(t *testing.T) {
	m, b := setup(t, 30, pessimismtest.Spec{States: 4, Obs: 3, Actions: 3, Horizon: 4}, 200)
	var ref *policy.Policy
	for _, w := range []int{1, 2, 5} {
		pol, _, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = pol
			continue
		}
		if !reflect.DeepEqual(ref.Nodes, pol.Nodes) {
			t.Fatalf("workers=%d gives a different policy", w)
		}
	}
}

func TestPlanPolicyShape(t *testing.T) {
	m, b := setup(t, 40, pessimismtest.Spec{States: 3, Obs: 3, Actions: 2, Horizon: 3}, 60)
	pol, _, err := policy.Plan(context.Background(), m, b, policy.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Every probability is positive, so the tree is complete: 3 + 9 + 27.
	if len(pol.Nodes) != 39 {
		t.Fatalf("%d nodes, want 39", len(pol.Nodes))
	}
	reach := make([]float64, 4)
	for i, n := range pol.Nodes {
		if n.ID != int64(i) || n.Parent >= n.ID || (n.Parent < 0) != (n.Step == 1) {
			t.Fatalf("node %d: %+v", i, n)
		}
		if n.Parent >= 0 && pol.Nodes[n.Parent].Step != n.Step-1 {
			t.Fatalf("node %d: parent at step %d", i, pol.Nodes[n.Parent].Step)
		}
		reach[n.Step] += n.ReachProb
		if n.ValueLCB != n.ValueReward-n.ValueBonus {
			t.Fatalf("node %d LCB", i)
		}
	}
	for h := 1; h <= 3; h++ {
		if math.Abs(reach[h]-1) > 1e-12 {
			t.Fatalf("step %d reach sums to %v", h, reach[h])
		}
	}
	// Lookup follows the tree.
	a, id, ok := pol.Lookup([]string{"o1", "o2"})
	if !ok || id < 0 || pol.Nodes[id].Step != 2 || a != pol.Nodes[id].Action {
		t.Fatalf("lookup: %v %v %v", a, id, ok)
	}
}
