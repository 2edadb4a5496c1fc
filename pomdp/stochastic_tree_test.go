package pomdp

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/psrlcb/psrlcb/policy"
)

// stochasticTigerTree is an H = 2 stochastic tiger policy:
//
//	step 1: listen 0.6, open-left 0.4
//	after listen:    hear-left → open-right 0.5, listen 0.5;  hear-right → open-left 1
//	after open-left: hear-left → listen 1;  hear-right → open-right 0.25, open-left 0.75
//
// By hand (beliefs as in TestTigerByHand): after listen, hear-left has
// probability ½ and belief 0.85 on tiger-left, where open-right earns
// 0.85·10 − 0.15·100 = −6.5 and listen −1; hear-right (½) has belief 0.15,
// where open-left earns −6.5. So listen is worth −1 + ½(½(−6.5) + ½(−1)) +
// ½(−6.5) = −6.125. Opening a door (−45 at ½/½) resets the belief to ½/½
// and the observations are uniform: −45 + ½(−1) + ½(−45) = −68. The tree
// is worth 0.6·(−6.125) + 0.4·(−68) = −30.875. Its most probable actions
// alone (listen, then open-right after hear-left by the first of equals,
// open-left after hear-right) are tigerTree, worth −7.5.
func stochasticTigerTree() *policy.Policy {
	return &policy.Policy{Horizon: 2, Nodes: []policy.Node{
		{ID: 0, Parent: -1, Step: 1, Obs: InitSymbol, Action: "listen", Fallback: "listen"},
		{ID: 1, Parent: -1, Step: 1, Obs: InitSymbol, Action: "open-left", Fallback: "open-right"},
		{ID: 2, Parent: 0, Step: 2, Obs: "hear-left", Action: "open-right", Fallback: "listen"},
		{ID: 3, Parent: 0, Step: 2, Obs: "hear-left", Action: "listen", Fallback: "open-left"},
		{ID: 4, Parent: 0, Step: 2, Obs: "hear-right", Action: "open-left", Fallback: "open-right"},
		{ID: 5, Parent: 1, Step: 2, Obs: "hear-left", Action: "listen", Fallback: "listen"},
		{ID: 6, Parent: 1, Step: 2, Obs: "hear-right", Action: "open-right", Fallback: "open-left"},
		{ID: 7, Parent: 1, Step: 2, Obs: "hear-right", Action: "open-left", Fallback: "listen"},
	}, Probs: []float64{0.6, 0.4, 0.5, 0.5, 1, 1, 0.25, 0.75}}
}

// stochasticTigerValue is stochasticTigerTree's value at H = 2, by hand.
const stochasticTigerValue = -30.875

func TestEvaluateStochasticTreeByHand(t *testing.T) {
	m := tiger(t)
	v, err := EvaluatePolicy(context.Background(), m, 2, stochasticTigerTree())
	if err != nil || !approx(v, stochasticTigerValue) {
		t.Errorf("stochastic tree: %v, %v; want %v", v, err, stochasticTigerValue)
	}
}

// TestEvaluateStochasticTreeMatchesMixture: a stochastic tree is worth
// the mixture of the deterministic trees that pick one row of each
// (parent, observation) group, weighted by the product of the picked
// probabilities (the tree's choices are independent across histories) —
// on the tiger tree at H = 2 and at H = 3 (past its rows, the fallback
// actions) and on random trees over random POMDPs.
func TestEvaluateStochasticTreeMatchesMixture(t *testing.T) {
	m := tiger(t)
	for _, H := range []int{2, 3} {
		checkMixture(t, m, H, stochasticTigerTree(), "tiger H="+strconv.Itoa(H))
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range 20 {
		rm := randomPOMDP(rng, 3, 3, 2)
		checkMixture(t, rm, 3, randomStochasticTree(rng, rm, 2), "random "+strconv.Itoa(i))
	}
}

// checkMixture checks that EvaluatePolicy values p at H as the mixture
// of its deterministic trees.
func checkMixture(t *testing.T, m *POMDP, H int, p *policy.Policy, what string) {
	t.Helper()
	v, err := EvaluatePolicy(context.Background(), m, H, p)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if want := mixOfDeterministic(t, m, H, p); !approx(v, want) {
		t.Errorf("%s: stochastic tree %v, mixture of deterministic trees %v", what, v, want)
	}
}

// mixOfDeterministic is Σ_picks Π_g Probs[pick_g] · V(tree of the picks)
// over every choice of one row per (parent, observation) group of p,
// each deterministic tree valued with EvaluatePolicy.
func mixOfDeterministic(t *testing.T, m *POMDP, H int, p *policy.Policy) float64 {
	t.Helper()
	groups := rowGroups(p)
	pick := make([]int, len(groups))
	total := 0.0
	var walk func(g int, w float64)
	walk = func(g int, w float64) {
		if g == len(groups) {
			v, err := EvaluatePolicy(context.Background(), m, H, pickedTree(p, pick))
			if err != nil {
				t.Fatal(err)
			}
			total += w * v
			return
		}
		for _, r := range groups[g] {
			pick[g] = r
			walk(g+1, w*p.Probs[r])
		}
	}
	walk(0, 1)
	return total
}

// rowGroups lists the rows of each (parent, observation) group of p.
func rowGroups(p *policy.Policy) [][]int {
	type key struct {
		parent int64
		obs    string
	}
	at := map[key]int{}
	var groups [][]int
	for i, n := range p.Nodes {
		k := key{n.Parent, n.Obs}
		g, ok := at[k]
		if !ok {
			g = len(groups)
			at[k] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// pickedTree is the deterministic tree of the picked rows whose
// ancestors are all picked, renumbered in their order.
func pickedTree(p *policy.Policy, pick []int) *policy.Policy {
	picked := map[int]bool{}
	for _, r := range pick {
		picked[r] = true
	}
	newID := map[int64]int64{}
	q := &policy.Policy{Horizon: p.Horizon}
	for i, n := range p.Nodes {
		parent, kept := newID[n.Parent]
		if !picked[i] || (n.Parent >= 0 && !kept) {
			continue
		}
		if n.Parent < 0 {
			parent = -1
		}
		newID[int64(i)] = int64(len(q.Nodes))
		n.ID, n.Parent = int64(len(q.Nodes)), parent
		q.Nodes = append(q.Nodes, n)
	}
	return q
}

// randomStochasticTree draws a stochastic tree of depth D over m's
// actions and observations: each group has a random nonempty set of
// actions with random probabilities, each row children for a random
// subset of the observations (the others leave the tree for its random
// fallback action).
func randomStochasticTree(rng *rand.Rand, m *POMDP, D int) *policy.Policy {
	p := &policy.Policy{Horizon: D}
	addGroup(rng, m, p, -1, 1, InitSymbol, D)
	return p
}

// addGroup appends the rows of the group under parent at step h on the
// observation obs, then their subtrees down to step D.
func addGroup(rng *rand.Rand, m *POMDP, p *policy.Policy, parent int64, h int, obs string, D int) {
	acts := rng.Perm(m.NumActions())[:1+rng.IntN(m.NumActions())]
	w := make([]float64, len(acts))
	sum := 0.0
	for i := range w {
		w[i] = 0.1 + rng.Float64()
		sum += w[i]
	}
	first := int64(len(p.Nodes))
	for i, a := range acts {
		fb := m.Actions[rng.IntN(m.NumActions())]
		p.Nodes = append(p.Nodes, policy.Node{ID: first + int64(i), Parent: parent, Step: int32(h), Obs: obs, Action: m.Actions[a], Fallback: fb})
		p.Probs = append(p.Probs, w[i]/sum)
	}
	if h == D {
		return
	}
	for i := range acts {
		for o := range m.NumObs() {
			if rng.Float64() < 0.8 {
				addGroup(rng, m, p, first+int64(i), h+1, m.ObsName(o), D)
			}
		}
	}
}

// The node budget of a stochastic tree counts each action's branch:
// stochasticTigerTree at H = 2 visits the root and two observations
// after each of its two actions, 5 histories.
func TestStochasticNodeBudget(t *testing.T) {
	m := tiger(t)
	ctx := context.Background()
	if v, err := EvaluatePolicyWithin(ctx, m, 2, stochasticTigerTree(), 5); err != nil || !approx(v, stochasticTigerValue) {
		t.Errorf("budget 5: %v, %v; want %v", v, err, stochasticTigerValue)
	}
	if _, err := EvaluatePolicyWithin(ctx, m, 2, stochasticTigerTree(), 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("budget 4: err = %v, want ErrTooLarge", err)
	}
	bad := stochasticTigerTree()
	bad.Nodes[6].Action = "jump"
	if _, err := EvaluatePolicy(ctx, m, 2, bad); !errors.Is(err, ErrPolicy) {
		t.Errorf("unknown action: err = %v, want ErrPolicy", err)
	}
}

// TestSimulateStochasticTree: the Monte Carlo value of the stochastic
// tiger tree is within four standard errors of its exact value (by hand
// at H = 2, −30.875; the mixture of deterministic trees at H = 3), and
// far from the value of its most probable actions (−7.5 at H = 2); the
// same seed gives the same figures with 1 or 3 workers.
func TestSimulateStochasticTree(t *testing.T) {
	m := tiger(t)
	ctx := context.Background()
	const n = 40000
	for _, H := range []int{2, 3} {
		want := mixOfDeterministic(t, m, H, stochasticTigerTree())
		if H == 2 && !approx(want, stochasticTigerValue) {
			t.Fatalf("mixture %v, by hand %v", want, stochasticTigerValue)
		}
		v, se, err := simulatePolicy(ctx, m, H, stochasticTigerTree(), n, 5, 1)
		if err != nil {
			t.Fatal(err)
		}
		// A return lies in [−100·H, 10·H], so se ≤ 55·H/√n; it is
		// positive since the tree's returns vary.
		if se <= 0 || se > 55*float64(H)/math.Sqrt(n) || math.Abs(v-want) > 4*se {
			t.Errorf("H=%d: Monte Carlo %v ± %v, exact %v", H, v, se, want)
		}
		v3, se3, err := simulatePolicy(ctx, m, H, stochasticTigerTree(), n, 5, 3)
		if err != nil || v3 != v || se3 != se {
			t.Errorf("H=%d: 1 worker %v ± %v, 3 workers %v ± %v (%v)", H, v, se, v3, se3, err)
		}
	}
}
