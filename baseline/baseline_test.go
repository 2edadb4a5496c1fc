package baseline

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/psrlcb/psrlcb/ingest"
)

// handData is the hand-solved example, H = 2:
//
//	e0: x L 1 | x L 0   return 1
//	e1: x L 1 | y R 1   return 2
//	e2: x L 0 | y L 1   return 1
//	e3: x R 2 | x R 0   return 2
//	e4: y R 0 | x R 0   return 0
//	e5: x L 1 | y R 1   return 2
//
// Returns span [0, 2], so r'_h = r_h/2 (shift 0/2, scale 1/2). The tree:
//
//	x (5 episodes): L n=4 r̂ = (1+1+0+1)/2/4 = 0.375 → x (1), y (3)
//	                R n=1 r̂ = 1               → x (1)
//	  xLx: L n=1 r̂ 0     xLy: L n=1 r̂ 0.5, R n=2 r̂ 0.5     xRx: R n=1 r̂ 0
//	y (1 episode):  R n=1 r̂ 0 → x (1);  yRx: R n=1 r̂ 0
//
// Fallbacks: step 2 logs L twice (e0, e2) and R four times, so every node
// falls back to R (step-1 nodes look at steps 2..2, step-2 nodes at step 2).
func handData(t testing.TB) *ingest.Dataset {
	return mkDataset(t, 2, []string{"x", "y"}, []string{"L", "R"}, [][]step{
		{{"x", "L", 1}, {"x", "L", 0}},
		{{"x", "L", 1}, {"y", "R", 1}},
		{{"x", "L", 0}, {"y", "L", 1}},
		{{"x", "R", 2}, {"x", "R", 0}},
		{{"y", "R", 0}, {"x", "R", 0}},
		{{"x", "L", 1}, {"y", "R", 1}},
	})
}

func TestTabularLCBHand(t *testing.T) {
	ctx := context.Background()
	d := handData(t)

	// c = 0.5: pen(1) = 0.5, pen(2) = 0.5/√2 = 0.35355339, pen(4) = 0.25.
	// Step 2: xLx Q(L) = 0 − 0.5 = −0.5; xLy Q(L) = 0.5 − 0.5 = 0,
	// Q(R) = 0.5 − 0.35355339 = 0.14644661 → R; xRx Q(R) = −0.5; yRx Q(R) = −0.5.
	// Step 1: x Q(L) = 0.375 − 0.25 + ¼(−0.5) + ¾(0.14644661) = 0.10983496,
	// Q(R) = 1 − 0.5 − 0.5 = 0 → L, with value_reward 0.375 + ¼·0 + ¾·0.5 = 0.75
	// and value_bonus 0.25 + ¼·0.5 + ¾·0.35355339 = 0.64016504;
	// y Q(R) = 0 − 0.5 − 0.5 = −1.
	// Step-2 nodes have their reward to go and the whole episode's
	// penalty, their parent action's included: xLx reward 0, bonus
	// 0.25 + 0.5; xLy reward 0.5, bonus 0.25 + 0.35355339; yRx reward 0,
	// bonus 0.5 + 0.5.
	// Reach: x 5/6, y 1/6, xLx 5/6·¼, xLy 5/6·¾, yRx 1/6.
	p, err := TabularLCB(ctx, d, TabularOptions{C: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	checkNodes(t, p, []want{
		{-1, 1, "x", "L", "R", 5.0 / 6, 0.75, 0.64016504, 0.10983496},
		{-1, 1, "y", "R", "R", 1.0 / 6, 0, 1, -1},
		{0, 2, "x", "L", "R", 5.0 / 24, 0, 0.75, -0.75},
		{0, 2, "y", "R", "R", 5.0 / 8, 0.5, 0.60355339, -0.10355339},
		{1, 2, "x", "R", "R", 1.0 / 6, 0, 1, -1},
	})
	checkTree(t, d, p)

	// No penalty: xLy ties L and R at 0.5 → L (lowest code); x Q(L) =
	// 0.375 + ¼·0 + ¾·0.5 = 0.75 < Q(R) = 1 + 0 = 1 → R. Pessimism turns
	// the single lucky R episode down; certainty equivalence takes it.
	p, err = TabularLCB(ctx, d, TabularOptions{NoPenalty: true})
	if err != nil {
		t.Fatal(err)
	}
	checkNodes(t, p, []want{
		{-1, 1, "x", "R", "R", 5.0 / 6, 1, 0, 1},
		{-1, 1, "y", "R", "R", 1.0 / 6, 0, 0, 0},
		{0, 2, "x", "R", "R", 5.0 / 6, 0, 0, 0},
		{1, 2, "x", "R", "R", 1.0 / 6, 0, 0, 0},
	})
	checkTree(t, d, p)

	// c = 1 (the default): pen(1) = 1, pen(2) = 0.70710678, pen(4) = 0.5.
	// xLy Q(R) = 0.5 − 0.70710678 = −0.20710678 > Q(L) = −0.5; x Q(L) =
	// 0.375 − 0.5 + ¼(−1) + ¾(−0.20710678) = −0.53033009 > Q(R) = −1.
	def, err := TabularLCB(ctx, d, TabularOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := def.Nodes[0].ValueLCB; math.Abs(got-(-0.53033009)) > 1e-8 || def.Nodes[0].Action != "L" {
		t.Errorf("default c: root %q value_lcb %.8f, want L −0.53033009", def.Nodes[0].Action, got)
	}
	one, err := TabularLCB(ctx, d, TabularOptions{C: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(def, one) {
		t.Error("zero-value options differ from C = 1")
	}

	// c = 100 caps every penalty at 1 per step: x Q(L) = 0.375 − 1 +
	// ¼(0 − 1) + ¾(0.5 − 1) = −1.25, Q(R) = 1 − 1 + (0 − 1) = −1 → R.
	p, err = TabularLCB(ctx, d, TabularOptions{C: 100})
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Nodes[0]; n.Action != "R" || math.Abs(n.ValueLCB-(-1)) > tol || math.Abs(n.ValueBonus-2) > tol {
		t.Errorf("capped penalty: root %+v, want action R, value_lcb −1, value_bonus 2", n)
	}
}

func TestBehaviorCloningHand(t *testing.T) {
	// Cloned actions: x → L (4 vs 1), xLx → L, xLy → R (2 vs 1), y → R,
	// yRx → R. Episodes that follow the clone to the end, with their
	// rescaled rewards to go (r' = r/2) from the node's step:
	// x: e0 (0.5), e1 (1), e5 (1) → 2.5/3; e2 leaves at xLy, e3 at x.
	// xLx: e0 → 0. xLy: e1, e5 → 0.5. y and yRx: e4 → 0.
	d := handData(t)
	p, err := BehaviorCloning(context.Background(), d, CloneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkNodes(t, p, []want{
		{-1, 1, "x", "L", "R", 5.0 / 6, 2.5 / 3, 0, 2.5 / 3},
		{-1, 1, "y", "R", "R", 1.0 / 6, 0, 0, 0},
		{0, 2, "x", "L", "R", 5.0 / 24, 0, 0, 0},
		{0, 2, "y", "R", "R", 5.0 / 8, 0.5, 0, 0.5},
		{1, 2, "x", "R", "R", 1.0 / 6, 0, 0, 0},
	})
	checkTree(t, d, p)
}

// endData has episodes that end early, H = 2, vocabularies sorted bytewise
// ("<end>" sorts first):
//
//	e0, e1: x L 2 | <end> <end> 0   return 2
//	e2:     x R 0 | y L 1           return 1
//	e3:     y R 0 | <end> <end> 0   return 0
//
// r'_h = r_h/2. Without penalty x Q(L) = 1 + 0 = 1 > Q(R) = 0 + 0.5 → L,
// y → R, and both step-2 nodes are "<end>" with action "<end>". Step 2 logs
// one non-end action (L), so step-1 nodes fall back to L; "<end>" nodes fall
// back to "<end>".
func endData(t testing.TB) *ingest.Dataset {
	e := ingest.EndSymbol
	return mkDataset(t, 2, []string{e, "x", "y"}, []string{e, "L", "R"}, [][]step{
		{{"x", "L", 2}, {e, e, 0}},
		{{"x", "L", 2}, {e, e, 0}},
		{{"x", "R", 0}, {"y", "L", 1}},
		{{"y", "R", 0}, {e, e, 0}},
	})
}

func TestEndSymbol(t *testing.T) {
	ctx := context.Background()
	d := endData(t)
	e := ingest.EndSymbol
	p, err := TabularLCB(ctx, d, TabularOptions{NoPenalty: true})
	if err != nil {
		t.Fatal(err)
	}
	nodes := []want{
		{-1, 1, "x", "L", "L", 0.75, 1, 0, 1},
		{-1, 1, "y", "R", "L", 0.25, 0, 0, 0},
		{0, 2, e, e, e, 0.75, 0, 0, 0},
		{1, 2, e, e, e, 0.25, 0, 0, 0},
	}
	checkNodes(t, p, nodes)
	checkTree(t, d, p)
	if a, _, _ := p.Lookup([]string{"x", e}); a != e {
		t.Errorf("after %q the action is %q", e, a)
	}
	if a, node, ok := p.Lookup([]string{"x", "y"}); a != "L" || node != -1 || !ok {
		t.Errorf("history off the tree: action %q node %d ok %v, want the fallback L", a, node, ok)
	}
	// Cloning picks the same actions (x: L 2 vs R 1) and the episodes that
	// follow it have the returns 1, 1 (x) and 0 (y); after the end symbol
	// nothing is left to go.
	p, err = BehaviorCloning(ctx, d, CloneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkNodes(t, p, nodes)
	checkTree(t, d, p)

	// With the default penalty the tree is the same: x Q(L) = 1 − pen(2) +
	// (0 − pen(2)) = 1 − √2 = −0.41421356 > Q(R) = 0 − 1 + (0.5 − 1) = −1.5.
	p, err = TabularLCB(ctx, d, TabularOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Nodes[0]; n.Action != "L" || math.Abs(n.ValueLCB-(1-math.Sqrt2)) > tol {
		t.Errorf("default penalty: root %+v, want L with value_lcb 1 − √2", n)
	}
	checkTree(t, d, p)
}

func TestFallbackAndConstantReturns(t *testing.T) {
	// H = 3, one observation, zero rewards (all returns equal, so R = 0).
	// Actions: e0, e1: L L R; e2: L L L. Steps 2..3 log L four times and R
	// twice, so step-1 nodes fall back to L; step 3 logs R twice and L once,
	// so step-2 and step-3 nodes fall back to R.
	// Cloned actions: L, L, then R at xLxLx (2 vs 1); every value is 0.
	d := mkDataset(t, 3, []string{"x"}, []string{"L", "R"}, [][]step{
		{{"x", "L", 0}, {"x", "L", 0}, {"x", "R", 0}},
		{{"x", "L", 0}, {"x", "L", 0}, {"x", "R", 0}},
		{{"x", "L", 0}, {"x", "L", 0}, {"x", "L", 0}},
	})
	p, err := BehaviorCloning(context.Background(), d, CloneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkNodes(t, p, []want{
		{-1, 1, "x", "L", "L", 1, 0, 0, 0},
		{0, 2, "x", "L", "R", 1, 0, 0, 0},
		{1, 3, "x", "R", "R", 1, 0, 0, 0},
	})
	// Ties: "x L 0 | x L 0" and "x R 0 | x R 0" log L and R once at each
	// step, so both the cloned action and the fallbacks take L, the lowest
	// code.
	tie := mkDataset(t, 2, []string{"x"}, []string{"L", "R"}, [][]step{
		{{"x", "R", 0}, {"x", "R", 0}},
		{{"x", "L", 0}, {"x", "L", 0}},
	})
	p, err = BehaviorCloning(context.Background(), tie, CloneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkNodes(t, p, []want{
		{-1, 1, "x", "L", "L", 1, 0, 0, 0},
		{0, 2, "x", "L", "L", 1, 0, 0, 0}, // reach 1 · n(xLx)/n(x,L) = 1
	})
	// Without penalty every Q is 0, so ties go to L everywhere.
	p, err = TabularLCB(context.Background(), d, TabularOptions{NoPenalty: true})
	if err != nil {
		t.Fatal(err)
	}
	checkNodes(t, p, []want{
		{-1, 1, "x", "L", "L", 1, 0, 0, 0},
		{0, 2, "x", "L", "R", 1, 0, 0, 0},
		{1, 3, "x", "L", "R", 1, 0, 0, 0},
	})
}

// TestTabularLCBBruteForce checks the dynamic programme against an
// enumeration of every deterministic policy on the empirical tree, each
// evaluated by summing over its paths.
func TestTabularLCBBruteForce(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		d := randomDataset(t, seed, 10+int(seed)*5, 3, 2, 2)
		e := newEmp(d)
		for _, opts := range []TabularOptions{{NoPenalty: true}, {C: 0.3}, {}, {C: 5}} {
			c, _ := opts.penaltyScale()
			p, err := TabularLCB(context.Background(), d, opts)
			if err != nil {
				t.Fatal(err)
			}
			checkTree(t, d, p)
			chosen := policyMap(p)
			total := 0.0
			for _, n := range p.Nodes {
				if n.Parent >= 0 {
					continue
				}
				best, count := math.Inf(-1), 0
				for _, pi := range e.allPolicies([]string{n.Obs}, nil) {
					r, b := e.evalPaths(pi, c, []string{n.Obs}, nil)
					best = max(best, r-b)
					count++
				}
				if math.Abs(n.ValueLCB-best) > tol {
					t.Errorf("seed %d c %v root %q: value_lcb %.15f, best of %d policies %.15f", seed, c, n.Obs, n.ValueLCB, count, best)
				}
				r, b := e.evalPaths(chosen, c, []string{n.Obs}, nil)
				if math.Abs(n.ValueReward-r) > tol || math.Abs(n.ValueBonus-b) > tol {
					t.Errorf("seed %d c %v root %q: values (%v, %v), path sums (%v, %v)", seed, c, n.Obs, n.ValueReward, n.ValueBonus, r, b)
				}
				total += n.ReachProb * n.ValueLCB
			}
			if math.IsNaN(total) {
				t.Errorf("seed %d: policy value is NaN", seed)
			}
		}
	}
}

// TestBehaviorCloningBruteForce recomputes the cloned actions and the
// Monte Carlo values with string-keyed counts.
func TestBehaviorCloningBruteForce(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		d := randomDataset(t, seed, 20+int(seed)*10, 3, 2, 3)
		e := newEmp(d)
		p, err := BehaviorCloning(context.Background(), d, CloneOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkTree(t, d, p)
		clone := func(tau string) string {
			best := ""
			for _, a := range e.acts[tau] { // sorted, so ties keep the lowest
				if best == "" || e.edge[tau+"#"+a] > e.edge[tau+"#"+best] {
					best = a
				}
			}
			return best
		}
		got := policyMap(p)
		for tau, a := range got {
			if want := clone(tau); a != want {
				t.Errorf("seed %d history %s: action %q, want %q", seed, tau, a, want)
			}
		}
		// Mean rescaled reward to go of the episodes through each node
		// that follow the clone from there on.
		sum, cnt := map[string]float64{}, map[string]int{}
		for _, ep := range e.episodes {
			var os, as []string
			var keys []string
			for _, s := range ep {
				os = append(os, s.o)
				keys = append(keys, histKey(os, as))
				as = append(as, s.a)
			}
			g := 0.0
			for h := len(ep) - 1; h >= 0 && ep[h].a == clone(keys[h]); h-- {
				g += (ep[h].r - e.shift) * e.scale
				sum[keys[h]] += g
				cnt[keys[h]]++
			}
		}
		keys := make([]string, len(p.Nodes))
		for i, n := range p.Nodes {
			keys[i] = n.Obs
			if n.Parent >= 0 {
				keys[i] = keys[n.Parent] + "|" + p.Nodes[n.Parent].Action + "|" + n.Obs
			}
			if cnt[keys[i]] == 0 {
				t.Fatalf("seed %d: node %s has no episode following the clone", seed, keys[i])
			}
			if want := sum[keys[i]] / float64(cnt[keys[i]]); math.Abs(n.ValueReward-want) > tol || n.ValueLCB != n.ValueReward || n.ValueBonus != 0 {
				t.Errorf("seed %d node %s: values (%v, %v, %v), want (%v, 0, %v)", seed, keys[i], n.ValueReward, n.ValueBonus, n.ValueLCB, want, want)
			}
		}
	}
}

// TestDeterminism runs both baselines twice and on the episodes in reverse
// order: the trees must match exactly and the values up to summation order.
func TestDeterminism(t *testing.T) {
	ctx := context.Background()
	d := randomDataset(t, 99, 500, 4, 3, 2)
	K := d.NumEpisodes()
	perm := rand.New(rand.NewPCG(5, 5)).Perm(K)
	shuffled := d.Subset(perm)
	for name, run := range map[string]func(d *ingest.Dataset) (any, error){
		"TabularLCB":      func(d *ingest.Dataset) (any, error) { return TabularLCB(ctx, d, TabularOptions{C: 0.2}) },
		"BehaviorCloning": func(d *ingest.Dataset) (any, error) { return BehaviorCloning(ctx, d, CloneOptions{}) },
	} {
		a, err := run(d)
		if err != nil {
			t.Fatal(err)
		}
		b, err := run(d)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two runs differ", name)
		}
		c, err := run(shuffled)
		if err != nil {
			t.Fatal(err)
		}
		pa, pc := policyOf(a), policyOf(c)
		if len(pa.Nodes) != len(pc.Nodes) {
			t.Fatalf("%s: %d nodes, %d after shuffling", name, len(pa.Nodes), len(pc.Nodes))
		}
		for i := range pa.Nodes {
			x, y := pa.Nodes[i], pc.Nodes[i]
			if x.Parent != y.Parent || x.Obs != y.Obs || x.Action != y.Action || x.Fallback != y.Fallback ||
				math.Abs(x.ReachProb-y.ReachProb) > tol || math.Abs(x.ValueReward-y.ValueReward) > tol ||
				math.Abs(x.ValueBonus-y.ValueBonus) > tol {
				t.Errorf("%s node %d: %+v, after shuffling %+v", name, i, x, y)
			}
		}
		checkTree(t, d, pa)
	}
}

func TestInvalidInput(t *testing.T) {
	ctx := context.Background()
	good := func() *ingest.Dataset { return handData(t) }
	cases := map[string]func(d *ingest.Dataset) *ingest.Dataset{
		"nil":              func(*ingest.Dataset) *ingest.Dataset { return nil },
		"zero horizon":     func(d *ingest.Dataset) *ingest.Dataset { d.Horizon = 0; return d },
		"empty":            func(d *ingest.Dataset) *ingest.Dataset { d.Obs, d.Act, d.Reward = nil, nil, nil; return d },
		"ragged":           func(d *ingest.Dataset) *ingest.Dataset { d.Obs = d.Obs[:5]; return d },
		"short rewards":    func(d *ingest.Dataset) *ingest.Dataset { d.Reward = d.Reward[:4]; return d },
		"observation code": func(d *ingest.Dataset) *ingest.Dataset { d.Obs[3] = 2; return d },
		"action code":      func(d *ingest.Dataset) *ingest.Dataset { d.Act[7] = 9; return d },
		"NaN reward":       func(d *ingest.Dataset) *ingest.Dataset { d.Reward[1] = math.NaN(); return d },
		"Inf reward":       func(d *ingest.Dataset) *ingest.Dataset { d.Reward[1] = math.Inf(-1); return d },
		"overflow":         func(d *ingest.Dataset) *ingest.Dataset { d.Reward[0], d.Reward[2] = 1e308, -1e308; return d },
		"empty vocabulary": func(d *ingest.Dataset) *ingest.Dataset { d.ActVocab = nil; return d },
		"end action": func(*ingest.Dataset) *ingest.Dataset {
			d := endData(t)
			d.Act[1] = 1 // "L" after an "<end>" observation
			return d
		},
	}
	for name, mutate := range cases {
		d := mutate(good())
		if _, err := TabularLCB(ctx, d, TabularOptions{}); !errors.Is(err, ErrInvalidDataset) {
			t.Errorf("%s: TabularLCB error %v, want ErrInvalidDataset", name, err)
		}
		if _, err := BehaviorCloning(ctx, d, CloneOptions{}); !errors.Is(err, ErrInvalidDataset) {
			t.Errorf("%s: BehaviorCloning error %v, want ErrInvalidDataset", name, err)
		}
	}
	for _, c := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := TabularLCB(ctx, good(), TabularOptions{C: c}); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("C = %v: error %v, want ErrInvalidOption", c, err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := TabularLCB(cancelled, good(), TabularOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: TabularLCB error %v", err)
	}
	if _, err := BehaviorCloning(cancelled, good(), CloneOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: BehaviorCloning error %v", err)
	}
}
