package pomdp

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/psrlcb/psrlcb/policy"
)

// evalTol: the exact recursions add a few dozen terms of magnitude ≤ 100,
// so rounding stays far below 1e-9.
const evalTol = 1e-9

func approx(a, b float64) bool { return math.Abs(a-b) <= evalTol*(1+math.Abs(b)) }

func constant(a int) PolicyFunc { return func(obs, act []int) int { return a } }

func TestGambleClosedForm(t *testing.T) {
	m := gamble(t)
	for H := 1; H <= 6; H++ {
		fH := float64(H)
		if v := evaluate(m, H, constant(0)); !approx(v, fH) {
			t.Errorf("H=%d always stay: %v, want %v", H, v, fH)
		}
		// gamble earns 0.3·10 = 3 per step.
		if v := evaluate(m, H, constant(1)); !approx(v, 3*fH) {
			t.Errorf("H=%d always gamble: %v, want %v", H, v, 3*fH)
		}
		// Alternating stay, gamble, stay, …: ⌈H/2⌉·1 + ⌊H/2⌋·3.
		alt := func(obs, act []int) int { return 1 - len(obs)%2 }
		if v, want := evaluate(m, H, alt), float64((H+1)/2)+3*float64(H/2); !approx(v, want) {
			t.Errorf("H=%d alternating: %v, want %v", H, v, want)
		}
		if v, _ := optimal(m, H); !approx(v, 3*fH) {
			t.Errorf("H=%d optimal: %v, want %v", H, v, 3*fH)
		}
		for _, c := range []struct {
			spec string
			per  float64 // expected reward per step
		}{
			{"uniform", 0.5*1 + 0.5*3},
			{"myopic:0.2", 0.9*3 + 0.1*1},       // greedy = gamble, 1−0.2+0.2/2
			{"fixed:stay:0.5", 0.75*1 + 0.25*3}, // stay with 1−0.5+0.5/2
			{"fixed:1:0", 3},
		} {
			b, err := ParseBehavior(c.spec, m)
			if err != nil {
				t.Fatal(err)
			}
			if v := behaviorValue(m, H, b); !approx(v, c.per*fH) {
				t.Errorf("H=%d behaviour %s: %v, want %v", H, c.spec, v, c.per*fH)
			}
		}
	}
}

// Tiger by hand. At step 1 the belief is (½,½): listening costs −1 and
// either door −45 = ½(−100)+½(10).
//
// H=1: V* = −1 (listen).
//
// H=2: after a listen, hear-left has probability ½ and moves the belief to
// P(tiger-left) = 0.85; there listening costs −1, open-right
// 0.85·10 + 0.15·(−100) = −6.5, open-left −83.5, so listen: the two
// branches give −1 each. Opening first costs −45 then −1. V* = −2.
//
// H=3: after two agreeing listens (probability 0.85²+0.15² = 0.745) the
// belief is 0.7225/0.745 on the heard side and opening the other door
// earns (0.7225·10 − 0.0225·100)/0.745 = 4.975/0.745; after disagreeing
// ones (0.255) the belief is ½ and listening is best (−1). So
// V* = −1 −1 + 0.745·(4.975/0.745) − 0.255 = 2.72; opening at step 2
// (−6.5 then −1) is worse than listening (−1 then 3.72 in expectation).
func TestTigerByHand(t *testing.T) {
	m := tiger(t)
	for _, c := range []struct {
		H    int
		want float64
	}{{1, -1}, {2, -2}, {3, 2.72}} {
		v, pol := optimal(m, c.H)
		if !approx(v, c.want) {
			t.Errorf("H=%d: V* = %v, want %v", c.H, v, c.want)
		}
		if got := evaluate(m, c.H, pol); !approx(got, v) {
			t.Errorf("H=%d: the optimal policy evaluates to %v, not V* = %v", c.H, got, v)
		}
	}
	// The uniform behaviour never learns where the tiger is: the state is
	// ½/½ at every step, so each step is worth (−1 −45 −45)/3.
	u, _ := ParseBehavior("uniform", m)
	for H := 1; H <= 5; H++ {
		if v, want := behaviorValue(m, H, u), -91.0/3*float64(H); !approx(v, want) {
			t.Errorf("H=%d: uniform value %v, want %v", H, v, want)
		}
	}
	// listen, then open the door opposite to what was heard:
	// −1 + (−6.5) on both branches.
	lo := func(obs, act []int) int {
		switch {
		case len(obs) == 1:
			return listen
		case obs[len(obs)-1] == hearLeft:
			return openRight
		default:
			return openLeft
		}
	}
	if v := evaluate(m, 2, lo); !approx(v, -7.5) {
		t.Errorf("listen-then-open: %v, want −7.5", v)
	}
	// myopic:0 listens at ½/½ (−1 beats −45) and after one listen (−1
	// beats −6.5); after two agreeing listens it opens the other door
	// (6.678 beats −1), after disagreeing ones it listens: the H=3 optimal
	// plan, so −2 at H=2 and 2.72 at H=3.
	my, _ := ParseBehavior("myopic:0", m)
	for H, want := range map[int]float64{2: -2, 3: 2.72} {
		if v := behaviorValue(m, H, my); !approx(v, want) {
			t.Errorf("H=%d: myopic:0 value %v, want %v", H, v, want)
		}
	}
}

// bruteForceOptimal maximises Evaluate over every deterministic policy
// that maps observation histories to actions (which is every deterministic
// history-dependent policy, since its own actions are a function of the
// observations).
func bruteForceOptimal(m *POMDP, H int) float64 {
	A, O := m.NumActions(), m.NumObs()
	// Node index of an observation history: its rank among histories of
	// its length, offset by the number of shorter ones.
	offset := make([]int, H+1)
	n := 0
	for h := 1; h <= H; h++ {
		offset[h] = n
		n += int(math.Pow(float64(O), float64(h-1)))
	}
	choice := make([]int, n)
	pol := func(obs, act []int) int {
		h := len(obs)
		r := 0
		for _, o := range obs[1:] {
			r = r*O + o
		}
		return choice[offset[h]+r]
	}
	best := math.Inf(-1)
	for {
		best = max(best, evaluate(m, H, pol))
		i := 0
		for i < n && choice[i] == A-1 {
			choice[i] = 0
			i++
		}
		if i == n {
			return best
		}
		choice[i]++
	}
}

func TestOptimalMatchesBruteForce(t *testing.T) {
	m := tiger(t)
	for H := 1; H <= 3; H++ { // 3^7 = 2187 policies at H=3
		v, _ := optimal(m, H)
		if b := bruteForceOptimal(m, H); !approx(v, b) {
			t.Errorf("tiger H=%d: Optimal %v, brute force %v", H, v, b)
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 20 {
		m := randomPOMDP(rng, 3, 2, 2)
		for H := 1; H <= 3; H++ { // 2^7 = 128 policies at H=3
			v, pol := optimal(m, H)
			if b := bruteForceOptimal(m, H); !approx(v, b) {
				t.Errorf("random model %d H=%d: Optimal %v, brute force %v", i, H, v, b)
			}
			if e := evaluate(m, H, pol); !approx(e, v) {
				t.Errorf("random model %d H=%d: optimal policy evaluates to %v, not %v", i, H, e, v)
			}
		}
	}
}

// bestOpenLoop is the best value of a fixed action sequence, by brute
// force over the |A|^H sequences.
func bestOpenLoop(m *POMDP, H int) float64 {
	A := m.NumActions()
	seq := make([]int, H)
	best := math.Inf(-1)
	for {
		best = max(best, evaluate(m, H, func(obs, act []int) int { return seq[len(obs)-1] }))
		i := 0
		for i < H && seq[i] == A-1 {
			seq[i] = 0
			i++
		}
		if i == H {
			return best
		}
		seq[i]++
	}
}

func TestOptimalNotBelowOpenLoop(t *testing.T) {
	models := []*POMDP{tiger(t), gamble(t)}
	rng := rand.New(rand.NewPCG(11, 3))
	for range 10 {
		models = append(models, randomPOMDP(rng, 4, 3, 3))
	}
	for _, m := range models {
		for H := 1; H <= 4; H++ {
			v, _ := optimal(m, H)
			ol := bestOpenLoop(m, H)
			if v < ol-evalTol*(1+math.Abs(ol)) {
				t.Errorf("%s H=%d: optimal %v below the best open-loop value %v", m.Name, H, v, ol)
			}
		}
	}
	// In the tiger problem feedback matters: at H=3 every fixed sequence
	// loses (the best is listening three times, −3) while V* = 2.72.
	if ol := bestOpenLoop(tiger(t), 3); !approx(ol, -3) {
		t.Errorf("tiger H=3 best open loop %v, want −3", ol)
	}
}

func TestBehaviorValueMatchesEvaluateForDeterministic(t *testing.T) {
	m := tiger(t)
	for _, spec := range []string{"fixed:open-left:0", "fixed:listen:0"} {
		b, err := ParseBehavior(spec, m)
		if err != nil {
			t.Fatal(err)
		}
		a := 0
		if spec == "fixed:open-left:0" {
			a = openLeft
		}
		if v, e := behaviorValue(m, 4, b), evaluate(m, 4, constant(a)); !approx(v, e) {
			t.Errorf("%s: behaviour value %v, Evaluate %v", spec, v, e)
		}
	}
}

// tigerTree builds the H=2 policy "listen, then open the door opposite to
// what was heard" as a policy tree, with the given fallback everywhere.
func tigerTree(fallback string) *policy.Policy {
	return &policy.Policy{Horizon: 2, Nodes: []policy.Node{
		{ID: 0, Parent: -1, Step: 1, Obs: InitSymbol, Action: "listen", Fallback: fallback},
		{ID: 1, Parent: 0, Step: 2, Obs: "hear-left", Action: "open-right", Fallback: fallback},
		{ID: 2, Parent: 0, Step: 2, Obs: "hear-right", Action: "open-left", Fallback: fallback},
	}}
}

func TestEvaluatePolicyTree(t *testing.T) {
	m := tiger(t)
	ctx := context.Background()
	// −1 + (−6.5): see TestTigerByHand.
	v, err := EvaluatePolicy(ctx, m, 2, tigerTree("listen"))
	if err != nil || !approx(v, -7.5) {
		t.Errorf("tree value %v, %v; want −7.5", v, err)
	}
	// At H=3 the tree is left after step 2 and the fallback "listen" acts:
	// −7.5 − 1.
	v, err = EvaluatePolicy(ctx, m, 3, tigerTree("listen"))
	if err != nil || !approx(v, -8.5) {
		t.Errorf("tree with fallback value %v, %v; want −8.5", v, err)
	}
	// Only a root: listen, then the fallback open-left at ½/½ (−45).
	root := &policy.Policy{Horizon: 2, Nodes: tigerTree("open-left").Nodes[:1]}
	v, err = EvaluatePolicy(ctx, m, 2, root)
	if err != nil || !approx(v, -46) {
		t.Errorf("root-only value %v, %v; want −46", v, err)
	}
	bad := tigerTree("listen")
	bad.Nodes[2].Action = "jump"
	if _, err := EvaluatePolicy(ctx, m, 2, bad); !errors.Is(err, ErrPolicy) {
		t.Errorf("unknown action: err = %v, want ErrPolicy", err)
	}
	noRoot := &policy.Policy{Horizon: 1, Nodes: []policy.Node{{ID: 0, Parent: -1, Step: 1, Obs: "hear-left", Action: "listen"}}}
	if _, err := EvaluatePolicy(ctx, m, 1, noRoot); !errors.Is(err, ErrPolicy) {
		t.Errorf("no init row: err = %v, want ErrPolicy", err)
	}
}

func TestEvaluateRejectsBadInput(t *testing.T) {
	m := tiger(t)
	if v := evaluate(m, 2, constant(7)); !math.IsNaN(v) {
		t.Errorf("out-of-range action gave %v, want NaN", v)
	}
	broken := *m
	broken.Start = []float64{0.5, 0.6}
	if v := evaluate(&broken, 2, constant(0)); !math.IsNaN(v) {
		t.Errorf("invalid model gave %v, want NaN", v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := OptimalContext(ctx, m, 14); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Optimal: err = %v", err)
	}
}

func TestParseBehaviorErrors(t *testing.T) {
	m := tiger(t)
	for _, spec := range []string{"", "random", "uniform:1", "myopic:1.5", "myopic:x", "myopic:0.1:2", "fixed:jump:0.1", "fixed:listen", "fixed:listen:-1", "fixed:9:0"} {
		if _, err := ParseBehavior(spec, m); !errors.Is(err, ErrBehavior) {
			t.Errorf("%q: err = %v, want ErrBehavior", spec, err)
		}
	}
	b, err := ParseBehavior("myopic:0.3", m)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float64, 3)
	b.Probs(1, []float64{0.99, 0.01}, p)
	// Tiger almost surely left: open-right earns 0.99·10 − 0.01·100 = 8.9,
	// the greedy action, with 1 − 0.3 + 0.3/3.
	if !approx(p[openRight], 0.8) || !approx(p[listen], 0.1) || !approx(p[openLeft], 0.1) {
		t.Errorf("myopic probs %v", p)
	}
	b.Probs(1, []float64{0.5, 0.5}, p)
	if !approx(p[listen], 0.8) {
		t.Errorf("myopic at ½/½ should prefer listen: %v", p)
	}
}

// On every published model: V* is at least the best open-loop value and
// the uniform behaviour's value, and the optimal policy achieves V*.
func TestSharedModelsOptimalBounds(t *testing.T) {
	dir := sharedDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	const H = 2
	for _, f := range files {
		m, err := ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		v, pol := optimal(m, H)
		slack := evalTol * (1 + math.Abs(v))
		if ol := bestOpenLoop(m, H); v < ol-slack {
			t.Errorf("%s: V* = %v below the best open-loop value %v", f, v, ol)
		}
		if u := behaviorValue(m, H, behavior(t, "uniform", m)); v < u-slack {
			t.Errorf("%s: V* = %v below the uniform value %v", f, v, u)
		}
		if e := evaluate(m, H, pol); !approx(e, v) {
			t.Errorf("%s: optimal policy evaluates to %v, V* = %v", f, e, v)
		}
	}
}

func BenchmarkOptimal(b *testing.B) {
	for _, H := range []int{4, 8, 12} {
		b.Run("model=tiger/H="+strconv.Itoa(H), func(b *testing.B) {
			m := tiger(b)
			b.ReportAllocs()
			for b.Loop() {
				if v, _ := optimal(m, H); math.IsNaN(v) {
					b.Fatal("NaN")
				}
			}
		})
	}
	b.Run("model=hallway/H=3", func(b *testing.B) {
		m, err := ParseFile(filepath.Join(sharedDir(b), "hallway.pomdp"))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			optimal(m, 3)
		}
	})
}

// evaluate, optimal and behaviorValue are the exact solvers for tests,
// with NaN standing for an error.
func evaluate(m *POMDP, H int, pol PolicyFunc) float64 {
	v, err := EvaluateContext(context.Background(), m, H, pol)
	if err != nil {
		return math.NaN()
	}
	return v
}

func optimal(m *POMDP, H int) (float64, PolicyFunc) {
	v, pol, err := OptimalContext(context.Background(), m, H)
	if err != nil {
		return math.NaN(), nil
	}
	return v, pol
}

func behaviorValue(m *POMDP, H int, b Behavior) float64 {
	v, err := BehaviorValueContext(context.Background(), m, H, b)
	if err != nil {
		return math.NaN()
	}
	return v
}

// The node budget: the tiger tree at H = 3 visits 1 + 2 + 4 = 7
// histories (two observations a step), so a budget of 7 values it and a
// budget of 6 stops with ErrTooLarge; the optimal solver stops with
// ErrTooLarge under a small budget and gives V* under an ample one.
func TestNodeBudget(t *testing.T) {
	m := tiger(t)
	ctx := context.Background()
	v, err := EvaluatePolicyWithin(ctx, m, 3, tigerTree("listen"), 7)
	if err != nil || !approx(v, -8.5) {
		t.Errorf("budget 7: %v, %v; want −8.5", v, err)
	}
	if _, err := EvaluatePolicyWithin(ctx, m, 3, tigerTree("listen"), 6); !errors.Is(err, ErrTooLarge) {
		t.Errorf("budget 6: err = %v, want ErrTooLarge", err)
	}
	if _, _, err := OptimalWithin(ctx, m, 3, 2); !errors.Is(err, ErrTooLarge) {
		t.Errorf("optimal, budget 2: err = %v, want ErrTooLarge", err)
	}
	v, pol, err := OptimalWithin(ctx, m, 3, 1000)
	if err != nil || !approx(v, 2.72) {
		t.Fatalf("optimal, budget 1000: %v, %v; want 2.72", v, err)
	}
	// The returned policy is not bound by the budget.
	if got := evaluate(m, 3, pol); !approx(got, 2.72) {
		t.Errorf("the bounded solver's policy is worth %v, want 2.72", got)
	}
}

// TestSimulatePolicy: the Monte Carlo value of tiger trees is within four
// standard errors of their exact values by hand (−7.5, −8.5, −46), the same
// for the same seed, and its standard error shrinks as 1/√n.
func TestSimulatePolicy(t *testing.T) {
	m := tiger(t)
	ctx := context.Background()
	root := &policy.Policy{Horizon: 2, Nodes: tigerTree("open-left").Nodes[:1]}
	for _, c := range []struct {
		p    *policy.Policy
		H    int
		want float64
	}{{tigerTree("listen"), 2, -7.5}, {tigerTree("listen"), 3, -8.5}, {root, 2, -46}} {
		v, se, err := SimulatePolicy(ctx, m, c.H, c.p, 40000, 3)
		if err != nil {
			t.Fatal(err)
		}
		if se <= 0 || math.Abs(v-c.want) > 4*se {
			t.Errorf("H=%d: Monte Carlo %v ± %v, exact %v", c.H, v, se, c.want)
		}
		v2, se2, _ := SimulatePolicy(ctx, m, c.H, c.p, 40000, 3)
		if v2 != v || se2 != se {
			t.Errorf("H=%d: the same seed gave %v and %v", c.H, v, v2)
		}
		_, se4, _ := SimulatePolicy(ctx, m, c.H, c.p, 4*40000, 3)
		if r := se / se4; r < 1.8 || r > 2.2 {
			t.Errorf("H=%d: standard error %v at n, %v at 4n (ratio %v, want about 2)", c.H, se, se4, r)
		}
	}
	if _, _, err := SimulatePolicy(ctx, m, 3, tigerTree("jump"), 10, 1); err == nil {
		t.Error("a fallback the model does not know went unnoticed")
	}
}

// beliefBound claims to use the belief, so BehaviorValueWithin takes the
// history tree instead of the open-loop propagation.
type beliefBound struct{ Behavior }

func (beliefBound) UsesBelief() bool { return true }

// TestOpenLoopBehaviorValue: the value of a behaviour that ignores the
// belief, propagated over the states, equals the history-tree
// enumeration's on tiger and on the shared models present.
func TestOpenLoopBehaviorValue(t *testing.T) {
	models := map[string]*POMDP{"tiger": tiger(t)}
	for _, name := range []string{"paint.95.pomdp", "4x3.95.POMDP"} {
		if m, err := ParseFile(filepath.Join("..", "..", "shared", "pomdp", name)); err == nil {
			models[name] = m
		}
	}
	for name, m := range models {
		for _, spec := range []string{"uniform", "fixed:" + m.Actions[0] + ":0.3"} {
			b, err := ParseBehavior(spec, m)
			if err != nil {
				t.Fatal(err)
			}
			for _, H := range []int{1, 3, 5} {
				fast, err := BehaviorValueWithin(context.Background(), m, H, b, 0)
				if err != nil {
					t.Fatal(err)
				}
				tree, err := BehaviorValueWithin(context.Background(), m, H, beliefBound{b}, 0)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(fast-tree) > 1e-9*(1+math.Abs(tree)) {
					t.Errorf("%s %s H=%d: open loop %v, history tree %v", name, spec, H, fast, tree)
				}
			}
		}
	}
}
