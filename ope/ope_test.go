package ope_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/ope"
	"github.com/psrlcb/psrlcb/ope/opetest"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
)

// tinyLogs are opetest.TinyLogs: four episodes of two steps, propensity
// 1/2 everywhere.
func tinyLogs() *ingest.Dataset { return opetest.TinyLogs() }

// alwaysL is the deterministic policy "L at every history".
func alwaysL() *policy.Policy {
	return &policy.Policy{Horizon: 2, Nodes: []policy.Node{
		{ID: 0, Parent: -1, Step: 1, Obs: "x", Action: "L", Fallback: "L"},
		{ID: 1, Parent: 0, Step: 2, Obs: "x", Action: "L", Fallback: "L"},
		{ID: 2, Parent: 0, Step: 2, Obs: "y", Action: "L", Fallback: "L"},
	}}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*(1+math.Abs(b)) }

// TestEstimatorsByHand: "always L" on tinyLogs. Weights: episode 1
// (L, L) 2·2 = 4; episode 2 (L, R) 2 then 0; episode 3 (R, …) 0;
// episode 4 (L, L) 4. By hand:
//
//	is    = (4·3 + 0 + 0 + 4·2)/4 = 5
//	wis   = (12 + 8)/(4 + 4) = 2.5
//	pdis  = [(2·1 + 4·2) + (2·0 + 0) + 0 + (2·2 + 4·0)]/4 = 14/4 = 3.5
//	wpdis = step 1: (2·1 + 2·0 + 0 + 2·2)/(2+2+0+2) = 1;
//	        step 2: (4·2 + 0 + 0 + 4·0)/(4+0+0+4) = 1;  sum 2
//	behaviour = (3 + 4 + 6 + 2)/4 = 3.75
func TestEstimatorsByHand(t *testing.T) {
	d := tinyLogs()
	tgt, err := ope.NewTreeTarget(alwaysL(), d)
	if err != nil {
		t.Fatal(err)
	}
	rho, err := ope.Ratios(context.Background(), d, tgt, 1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ope.Evaluate(context.Background(), d, rho, tgt, ope.Options{Bootstrap: 50, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{ope.EstIS: 5, ope.EstWIS: 2.5, ope.EstPDIS: 3.5, ope.EstWPDIS: 2, ope.EstBehavior: 3.75} {
		e := res.Get(name)
		if e == nil || !near(e.Value, want) {
			t.Errorf("%s = %+v, want %v", name, e, want)
		}
	}
	is := res.Get(ope.EstIS)
	// ESS of the final weights (4, 0, 0, 4): 8²/32 = 2; two episodes.
	if !near(is.ESS, 2) || is.Episodes != 2 || is.Reliable {
		t.Errorf("is: ESS %v, episodes %d, reliable %v", is.ESS, is.Episodes, is.Reliable)
	}
	// Normal interval of the mean of (12, 0, 0, 8): sample variance
	// (7² + 5² + 5² + 3²)/3 = 36, standard error 3.
	if lo, hi := is.NormalLower, is.NormalUpper; !near(lo, 5-1.96*3) || !near(hi, 5+1.96*3) {
		t.Errorf("normal interval [%v, %v]", lo, hi)
	}
	if !(is.Lower <= is.Value && is.Value <= is.Upper) {
		t.Errorf("bootstrap interval [%v, %v] misses the estimate %v", is.Lower, is.Upper, is.Value)
	}
	if d := res.Get(ope.EstDR); !strings.Contains(d.Reason, "no model") || !math.IsNaN(d.Value) {
		t.Errorf("dr without a model: %+v", d)
	}
}

// TestWorkersAndSeeds: the same logs and seed give identical figures,
// bootstrap intervals included, for 1, 2 and 3 workers; another seed moves
// the bootstrap interval but not the point estimates.
func TestWorkersAndSeeds(t *testing.T) {
	d, m := tigerLogs(t, 3, 3000, 5)
	tgt := listenThenOpen(t, m, d)
	var first *ope.Result
	for _, w := range []int{1, 2, 3} {
		rho, err := ope.Ratios(context.Background(), d, tgt, w)
		if err != nil {
			t.Fatal(err)
		}
		res, err := ope.Evaluate(context.Background(), d, rho, tgt, ope.Options{Seed: 9, Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = res
			continue
		}
		for i, e := range res.Estimates {
			f := first.Estimates[i]
			if !same(e.Value, f.Value) || !same(e.Lower, f.Lower) || !same(e.Upper, f.Upper) {
				t.Errorf("%d workers, %s: %+v, 1 worker %+v", w, e.Estimator, e, f)
			}
		}
	}
}

func same(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// tigerLogs simulates K uniform episodes of the example tiger problem.
func tigerLogs(t *testing.T, H, K int, seed uint64) (*ingest.Dataset, *pomdp.POMDP) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	m, err := pomdp.ParseFile(filepath.Join(filepath.Dir(file), "..", "examples", "tiger.pomdp"))
	if err != nil {
		t.Fatal(err)
	}
	beh, err := pomdp.ParseBehavior("uniform", m)
	if err != nil {
		t.Fatal(err)
	}
	d, err := pomdp.SimulateDataset(context.Background(), m, H, K, beh, seed)
	if err != nil {
		t.Fatal(err)
	}
	return d, m
}

// listenThenOpen is the tiger policy "listen, then open the door away
// from the last roar", written as a stochastic policy table with
// wildcards (a deterministic table).
func listenThenOpen(t *testing.T, m *pomdp.POMDP, d *ingest.Dataset) ope.Target {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pol.arrow")
	rows := [][4]string{
		{"1", "*", "*", "listen"},
		{"0", "*", "hear-left", "open-right"},
		{"0", "*", "hear-right", "open-left"},
	}
	var step []int64
	var hist, obs, act []string
	var prob []float64
	for _, r := range rows {
		s := int64(0)
		if r[0] == "1" {
			s = 1
		}
		step, hist, obs, act, prob = append(step, s), append(hist, r[1]), append(obs, r[2]), append(act, r[3]), append(prob, 1)
	}
	writeTable(t, path, step, hist, obs, act, prob)
	tgt, err := ope.ReadTable(path, d)
	if err != nil {
		t.Fatal(err)
	}
	return tgt
}

func writeTable(t *testing.T, path string, step []int64, hist, obs, act []string, prob []float64) {
	t.Helper()
	err := arrowio.WriteArrow(path, arrowio.Table{Columns: []arrowio.Column{
		{Name: "step", Int64: step}, {Name: "history", String: hist}, {Name: "observation", String: obs},
		{Name: "action", String: act}, {Name: "probability", Float64: prob},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTableErrors: a policy table's mistakes are refused, naming the row.
func TestTableErrors(t *testing.T) {
	d := tinyLogs()
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		obs  []string
		act  []string
		prob []float64
		want string
	}{
		{"sum", []string{"*", "*"}, []string{"L", "R"}, []float64{0.5, 0.4}, "row 1: the group of step 0, history \"*\", observation \"*\": probabilities sum to 0.9"},
		{"unknown action", []string{"*"}, []string{"Up"}, []float64{1}, `row 1: action "Up" is not one of the logs'`},
		{"unknown observation", []string{"*", "z"}, []string{"L", "R"}, []float64{1, 1}, `row 2: observation "z" is not one of the logs'`},
		{"negative", []string{"*", "*"}, []string{"L", "R"}, []float64{1.5, -0.5}, "row 1: probability 1.5 outside [0,1]"},
		{"twice", []string{"x", "x"}, []string{"L", "L"}, []float64{0.5, 0.5}, `row 2: action "L" appears twice`},
	} {
		path := filepath.Join(dir, c.name+".arrow")
		n := len(c.obs)
		writeTable(t, path, make([]int64, n), repeat("*", n), c.obs, c.act, c.prob)
		_, err := ope.ReadTable(path, d)
		if !errors.Is(err, ope.ErrTarget) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// A history the table has no row for is an error naming the episode
	// and step.
	path := filepath.Join(dir, "partial.arrow")
	writeTable(t, path, []int64{1}, []string{"*"}, []string{"x"}, []string{"L"}, []float64{1})
	tgt, err := ope.ReadTable(path, d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ope.Ratios(context.Background(), d, tgt, 1); err == nil || !strings.Contains(err.Error(), "episode 1 step 2: ") {
		t.Errorf("no row for step 2: %v", err)
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestTablePrecedence: the most specific group applies — a history over
// "*", an observation over "*", a step over any step.
func TestTablePrecedence(t *testing.T) {
	d := tinyLogs()
	path := filepath.Join(t.TempDir(), "p.arrow")
	writeTable(t, path,
		[]int64{0, 0, 2, 2},
		[]string{"*", "*", "x,L", "*"},
		[]string{"*", "y", "y", "*"},
		[]string{"R", "L", "R", "L"},
		[]float64{1, 1, 1, 1})
	tgt, err := ope.ReadTable(path, d)
	if err != nil {
		t.Fatal(err)
	}
	f := tgt.Follow()
	p := make([]float64, 2)
	check := func(prev, obs int, want int, what string) {
		t.Helper()
		if err := f.Next(prev, obs, p); err != nil || p[want] != 1 {
			t.Errorf("%s: %v, %v", what, p, err)
		}
	}
	check(-1, 0, 1, "step 1, x: any step, any history, any observation → R")
	check(0, 1, 1, "step 2 after x,L, y: the step-2 group of that history → R")
	f = tgt.Follow()
	check(-1, 1, 0, "step 1, y: any step, observation y → L")
	check(1, 1, 0, "step 2 after y,R, y: step 2, any history → L")
}

// listenThenOpenFunc is listenThenOpen for pomdp.EvaluateContext: the
// model's action and observation indexes.
func listenThenOpenFunc(m *pomdp.POMDP) pomdp.PolicyFunc {
	idx := func(names []string, n string) int {
		for i, x := range names {
			if x == n {
				return i
			}
		}
		panic(n)
	}
	listen, left, right := idx(m.Actions, "listen"), idx(m.Actions, "open-left"), idx(m.Actions, "open-right")
	hearLeft := idx(m.Observations, "hear-left")
	return func(obs, act []int) int {
		if len(obs) == 1 {
			return listen
		}
		if obs[len(obs)-1] == hearLeft {
			return right
		}
		return left
	}
}

// TestModelValueExact: under the true model (pomdp.TrueModel) the model
// estimator's value of a policy is its exact value (pomdp's recursion),
// by exact look-ahead at H = 3 and within four standard errors by Monte
// Carlo rollouts at H = 6, whose tree is past the exact budget.
func TestModelValueExact(t *testing.T) {
	for _, H := range []int{3, 6} {
		d, m := tigerLogs(t, H, 400, 1)
		truth, err := m.TrueModel(d)
		if err != nil {
			t.Fatal(err)
		}
		want, err := pomdp.EvaluateContext(context.Background(), m, H, listenThenOpenFunc(m))
		if err != nil {
			t.Fatal(err)
		}
		tgt := listenThenOpen(t, m, d)
		rho, err := ope.Ratios(context.Background(), d, tgt, 0)
		if err != nil {
			t.Fatal(err)
		}
		res, err := ope.Evaluate(context.Background(), d, rho, tgt, ope.Options{Bootstrap: -1, Model: truth, Seed: 4})
		if err != nil {
			t.Fatal(err)
		}
		got := res.Get(ope.EstModel).Value
		tol := 1e-9
		if H == 6 {
			// A return of tiger's ranges over [−100·H, 10·H]; 500
			// rollouts of a policy opening a door at every step from the
			// second have a standard deviation of about 55·sqrt(H−1).
			tol = 4 * 55 * math.Sqrt(float64(H-1)) / math.Sqrt(500)
		}
		if math.Abs(got-want) > tol {
			t.Errorf("H = %d: model value %v, exact %v (tolerance %v)", H, got, want, tol)
		}
	}
}

// TestUnbiasedAndDoublyRobust: over 200 sets of logs the importance-
// sampling estimators average to the exact value within four standard
// errors of their mean; so does the doubly robust one, with the true
// model's values as its control variate (then with a smaller spread than
// per-decision importance sampling) and with a wrong model's (every
// reward the smallest: the importance weights still correct it).
func TestUnbiasedAndDoublyRobust(t *testing.T) {
	const H, K, runs = 2, 300, 200
	d0, m := tigerLogs(t, H, 10, 1)
	truth, err := m.TrueModel(d0)
	if err != nil {
		t.Fatal(err)
	}
	want, err := pomdp.EvaluateContext(context.Background(), m, H, listenThenOpenFunc(m))
	if err != nil {
		t.Fatal(err)
	}
	wrong := *truth
	wrong.RewardProb = [][]float64{make([]float64, len(truth.RewardProb[0]))}
	V := len(wrong.RewardValues)
	for i := 0; i < len(wrong.RewardProb[0]); i += V {
		wrong.RewardProb[0][i] = 1
	}
	wrong.Prepare()
	sums := map[string][2]float64{}
	for r := range runs {
		d, _ := tigerLogs(t, H, K, uint64(100+r))
		tgt := listenThenOpen(t, m, d)
		rho, err := ope.Ratios(context.Background(), d, tgt, 0)
		if err != nil {
			t.Fatal(err)
		}
		fold := make([]int, K)
		for k := range fold {
			fold[k] = k % 2
		}
		res, err := ope.Evaluate(context.Background(), d, rho, tgt, ope.Options{Bootstrap: -1, Folds: [2]*estimate.Model{truth, truth}, Fold: fold})
		if err != nil {
			t.Fatal(err)
		}
		bad, err := ope.Evaluate(context.Background(), d, rho, tgt, ope.Options{Bootstrap: -1, Folds: [2]*estimate.Model{&wrong, &wrong}, Fold: fold})
		if err != nil {
			t.Fatal(err)
		}
		for n, v := range map[string]float64{ope.EstIS: res.Get(ope.EstIS).Value, ope.EstPDIS: res.Get(ope.EstPDIS).Value,
			ope.EstDR: res.Get(ope.EstDR).Value, "dr-wrong": bad.Get(ope.EstDR).Value} {
			s := sums[n]
			sums[n] = [2]float64{s[0] + v, s[1] + v*v}
		}
	}
	sd := map[string]float64{}
	for n, s := range sums {
		mean := s[0] / runs
		sd[n] = math.Sqrt(s[1]/runs - mean*mean)
		if se := sd[n] / math.Sqrt(runs); math.Abs(mean-want) > 4*se+1e-9 {
			t.Errorf("%s: mean %v over %d runs, exact %v (standard error %v)", n, mean, runs, want, se)
		}
	}
	if !(sd[ope.EstDR] < sd[ope.EstPDIS]) {
		t.Errorf("spread: dr %v, pdis %v", sd[ope.EstDR], sd[ope.EstPDIS])
	}
}
