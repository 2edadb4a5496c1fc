package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
)

// listenThenOpen is the tiger policy "listen, then open the door opposite
// to what was heard" for H=2.
func listenThenOpen(openAfterLeft string) *policy.Policy {
	return &policy.Policy{Horizon: 2, Nodes: []policy.Node{
		{ID: 0, Parent: -1, Step: 1, Obs: pomdp.InitSymbol, Action: "listen", Fallback: "listen"},
		{ID: 1, Parent: 0, Step: 2, Obs: "hear-left", Action: openAfterLeft, Fallback: "listen"},
		{ID: 2, Parent: 0, Step: 2, Obs: "hear-right", Action: "open-left", Fallback: "listen"},
	}}
}

func writePolicy(t *testing.T, p *policy.Policy) string {
	t.Helper()
	dir := t.TempDir()
	if err := policy.WriteFile(filepath.Join(dir, policy.FileName), p, map[string]string{"psrlcb.run_id": "test"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestEvaluateCommand(t *testing.T) {
	model := writeText(t, "tiger.pomdp", tigerText(t))
	dir := writePolicy(t, listenThenOpen("open-right"))
	out, code, err := runStdout(t, "evaluate", "--pomdp", model, "--policy", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	var got struct {
		Horizon  int      `json:"horizon"`
		Policy   float64  `json:"policy_value"`
		Optimal  float64  `json:"optimal_value"`
		Behavior float64  `json:"behavior_value"`
		Regret   *float64 `json:"normalized_regret"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// By hand (see pomdp.TestTigerByHand): V^π = −1 − 6.5, V* = −2 (listen
	// twice), uniform V^b = 2·(−1 −45 −45)/3 = −182/3, so the regret is
	// 5.5/(−2 + 182/3) = 16.5/176 = 0.09375.
	const tol = 1e-9
	if got.Horizon != 2 || math.Abs(got.Policy+7.5) > tol || math.Abs(got.Optimal+2) > tol ||
		math.Abs(got.Behavior+182.0/3) > tol || got.Regret == nil || math.Abs(*got.Regret-0.09375) > tol {
		t.Errorf("got %+v (regret %v)\n%s", got, got.Regret, out)
	}

	text, code, err := runCLI(t, "evaluate", "--pomdp", model, "--policy", filepath.Join(dir, policy.FileName), "--horizon", "2", "--behavior", "myopic:0.1")
	if code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, text)
	}
	for _, want := range []string{"policy value", "-7.5", "optimal value", "behavior value", "myopic:0.1", "normalized regret"} {
		if !strings.Contains(text, want) {
			t.Errorf("text output lacks %q:\n%s", want, text)
		}
	}
}

func TestEvaluateRegretUndefined(t *testing.T) {
	// Behaviour "always listen" is optimal at H=2, so V* = V^b.
	model := writeText(t, "tiger.pomdp", tigerText(t))
	dir := writePolicy(t, listenThenOpen("open-right"))
	out, code, err := runStdout(t, "evaluate", "--pomdp", model, "--policy", dir, "--behavior", "fixed:listen:0", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	if !strings.Contains(out, `"normalized_regret": null`) {
		t.Errorf("regret should be null when V* = V^b:\n%s", out)
	}
}

func TestEvaluateCommandErrors(t *testing.T) {
	model := writeText(t, "tiger.pomdp", tigerText(t))
	good := writePolicy(t, listenThenOpen("open-right"))
	alien := writePolicy(t, listenThenOpen("run-away"))
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown-action", []string{"--pomdp", model, "--policy", alien}, exitData, `action "run-away" at step 2`},
		{"horizon-mismatch", []string{"--pomdp", model, "--policy", good, "--horizon", "3"}, exitUsage, "planned for horizon 2"},
		{"no-policy", []string{"--pomdp", model}, exitUsage, "--policy"},
		{"missing-policy", []string{"--pomdp", model, "--policy", filepath.Join(good, "nope.arrow")}, exitIO, "nope.arrow"},
		{"not-a-policy", []string{"--pomdp", model, "--policy", model}, exitData, "tiger.pomdp"},
		{"bad-behavior", []string{"--pomdp", model, "--policy", good, "--behavior", "fixed:fly:0.1"}, exitUsage, "fly"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg, code, err := runCLI(t, append([]string{"evaluate"}, c.args...)...)
			if code != c.code || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("exit %d (want %d), err %v (want %q)\n%s", code, c.code, err, c.want, msg)
			}
		})
	}
}

// Past the exact solver's budget, evaluate brackets V* with the belief
// planner on the true model and brackets the regret with it: on tiger at
// H = 2 the bracket holds the exact V* = −2 and the regret's holds
// 0.09375 (TestEvaluateCommand).
func TestEvaluateBracketsOptimum(t *testing.T) {
	defer func(n int) { exactSolveNodes = n }(exactSolveNodes)
	exactSolveNodes = 2
	model := writeText(t, "tiger.pomdp", tigerText(t))
	dir := writePolicy(t, listenThenOpen("open-right"))
	out, code, err := runStdout(t, "evaluate", "--pomdp", model, "--policy", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	var got evaluateResult
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	const tol = 1e-9
	ob, rb := got.OptimalBounds, got.RegretBounds
	if got.OptimalValue != nil || ob == nil || ob.Lower > -2+tol || ob.Upper < -2-tol || ob.Upper-ob.Lower > 0.01 {
		t.Fatalf("optimal value %v, bounds %+v: want null and a narrow bracket of −2\n%s", got.OptimalValue, ob, out)
	}
	if rb == nil || rb.Lower > 0.09375+tol || rb.Upper < 0.09375-tol {
		t.Errorf("regret bounds %+v do not hold 0.09375\n%s", rb, out)
	}
	text, code, err := runCLI(t, "evaluate", "--pomdp", model, "--policy", dir)
	if code != 0 || !strings.Contains(text, "optimal value within") || !strings.Contains(text, "normalized regret within") || strings.Contains(text, "NaN") {
		t.Errorf("exit %d (%v): the text lacks the brackets, or prints NaN:\n%s", code, err, text)
	}
}

// evaluate --pomdp reports each of its computations as a progress stage
// on standard error, started and finished in order (the bracket of V*
// included when it runs), and keeps standard output to the result.
func TestEvaluateReportsStages(t *testing.T) {
	defer func(n int) { exactSolveNodes = n }(exactSolveNodes)
	model := writeText(t, "tiger.pomdp", tigerText(t))
	dir := writePolicy(t, listenThenOpen("open-right"))
	for _, c := range []struct {
		nodes  int
		stages []string
	}{
		{5_000_000, []string{"value", "optimum", "behaviour"}},
		{2, []string{"value", "optimum", "behaviour", "optimum-bracket"}},
	} {
		exactSolveNodes = c.nodes
		out, errOut, err := runApp(t, "evaluate", "--pomdp", model, "--policy", dir, "--json", "--log-format", "json")
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		var res evaluateResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("standard output is not the result alone: %v\n%s", err, out)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
			var ev struct{ Msg, Stage string }
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("progress line %q: %v", line, err)
			}
			got = append(got, ev.Msg+" "+ev.Stage)
		}
		var want []string
		for _, s := range c.stages {
			want = append(want, "stage started "+s, "stage finished "+s)
		}
		if !slices.Equal(got, want) {
			t.Errorf("exact budget %d: progress %q, want %q", c.nodes, got, want)
		}
	}
}

// regretBounds holds r(V*) = (V* − V^π)/(V* − V^b) for every V* of the
// bracket, checked on a grid, on both sides of V^b; nil when the
// bracket reaches V^b.
func TestRegretBounds(t *testing.T) {
	for _, c := range []struct{ vpi, vb, lo, hi float64 }{
		{1, 0, 2, 3}, {-1, 0, 2, 3}, {2, 0, 2, 2.5}, {0.5, 0.4, 0.6, 5}, {2.1, 0, 2, 3},
	} {
		rb := regretBounds(c.vpi, c.vb, c.lo, c.hi)
		for i := 0; i <= 100; i++ {
			v := c.lo + (c.hi-c.lo)*float64(i)/100
			r := max((v-c.vpi)/(v-c.vb), 0)
			if r < rb.Lower-1e-12 || r > rb.Upper+1e-12 {
				t.Errorf("%+v: r(%v) = %v outside %+v", c, v, r, rb)
			}
		}
	}
	if rb := regretBounds(1, 2, 2, 3); rb != nil {
		t.Errorf("bracket from V^b: %+v, want nil", rb)
	}
}
