package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/report"
)

// writeStochasticPolicy writes a stochastic policy of horizon 3:
//
//	x → L 0.75 (node 0), R 0.25 (node 1);  y → R (node 2)
//	x L x → L 0.5 (node 3), R 0.5 (node 4)
//	x R x → R (node 5)
func writeStochasticPolicy(t *testing.T) string {
	t.Helper()
	p := &policy.Policy{Horizon: 3, Nodes: []policy.Node{
		{ID: 0, Parent: -1, Step: 1, Obs: "x", Action: "L", Fallback: "R", ReachProb: 0.45},
		{ID: 1, Parent: -1, Step: 1, Obs: "x", Action: "R", Fallback: "R", ReachProb: 0.15},
		{ID: 2, Parent: -1, Step: 1, Obs: "y", Action: "R", Fallback: "R", ReachProb: 0.4},
		{ID: 3, Parent: 0, Step: 2, Obs: "x", Action: "L", Fallback: "L", ReachProb: 0.1, ValueReward: 0.75},
		{ID: 4, Parent: 0, Step: 2, Obs: "x", Action: "R", Fallback: "L", ReachProb: 0.1, ValueReward: 0.5},
		{ID: 5, Parent: 1, Step: 2, Obs: "x", Action: "R", Fallback: "L", ReachProb: 0.1},
	}, Probs: []float64{0.75, 0.25, 1, 0.5, 0.5, 1}}
	dir := t.TempDir()
	if err := policy.WriteFile(filepath.Join(dir, "policy.arrow"), p, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// actJSON runs act with --json and decodes its output.
func actJSON(t *testing.T, args ...string) (actResult, string) {
	t.Helper()
	out, errOut, err := runApp(t, append([]string{"act", "--json"}, args...)...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	var res actResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return res, errOut
}

// On a stochastic policy act prints the drawn action first, then the
// distribution at the history and the seed; the same seed repeats the
// draw, and over many seeds the draws follow the distribution.
func TestActStochasticDraws(t *testing.T) {
	dir := writeStochasticPolicy(t)
	out, errOut, err := runApp(t, "act", "--policy", dir, "--history", "x", "--seed", "7")
	if err != nil || errOut != "" {
		t.Fatalf("act: %v, stderr %q", err, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || (lines[0] != "L" && lines[0] != "R") || !strings.Contains(lines[1], "--seed 7") ||
		strings.Fields(lines[2])[0] != "L" || strings.Fields(lines[2])[1] != "0.75" || strings.Fields(lines[3])[1] != "0.25" {
		t.Fatalf("output:\n%s", out)
	}
	again, _, _ := runApp(t, "act", "--policy", dir, "--history", "x", "--seed", "7")
	if again != out {
		t.Errorf("--seed 7 drew\n%s\nthen\n%s", out, again)
	}
	// 400 draws of a 0.75 coin: standard deviation 0.022; 0.1 is 4.6 of them.
	const n = 400
	ls := 0
	for seed := range n {
		res, _ := actJSON(t, "--policy", dir, "--history", "x", "--seed", fmt.Sprint(seed))
		if res.Action == "L" {
			ls++
		}
	}
	if f := float64(ls) / n; math.Abs(f-0.75) > 0.1 {
		t.Errorf("L drawn in %.3f of %d draws, want 0.75", f, n)
	}
}

// Without --seed each call draws a new seed, printed so that --seed
// repeats the draw.
func TestActStochasticDefaultSeed(t *testing.T) {
	dir := writeStochasticPolicy(t)
	seedOf := regexp.MustCompile(`--seed (\d+)`)
	var seeds []string
	for range 2 {
		out, _, err := runApp(t, "act", "--policy", dir, "--history", "x,L,x")
		if err != nil {
			t.Fatal(err)
		}
		m := seedOf.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no seed in\n%s", out)
		}
		again, _, err := runApp(t, "act", "--policy", dir, "--history", "x,L,x", "--seed", m[1])
		if err != nil || again != out {
			t.Errorf("--seed %s drew\n%s\nwhere the call without it drew\n%s", m[1], again, out)
		}
		seeds = append(seeds, m[1])
	}
	if seeds[0] == seeds[1] {
		t.Errorf("two calls without --seed drew the same seed %s", seeds[0])
	}
}

// act follows a stochastic policy by the actions the history took: its
// rows while the policy may take them, with a warning and the
// fallback_action past an action it never takes; --json lists the
// choices, most probable first, with their rows.
func TestActStochasticFollowsActions(t *testing.T) {
	dir := writeStochasticPolicy(t)
	for _, c := range []struct {
		history  string
		choices  []actChoice
		last     int64  // last_node
		fallback string // fallback_action when the history has left the rows
		warn     bool
	}{
		{"x", []actChoice{{"L", 0.75, 0}, {"R", 0.25, 1}}, -1, "", false},
		{"x,L,x", []actChoice{{"L", 0.5, 3}, {"R", 0.5, 4}}, -1, "", false},
		{"x,R,x", []actChoice{{"R", 1, 5}}, -1, "", false},
		{"x,S,x", []actChoice{{"R", 1, -1}}, -1, "R", true},     // S never taken: the fallback of x's rows
		{"x,R,x,L,x", []actChoice{{"L", 1, -1}}, 1, "L", true},  // L never taken under node 1: the fallback of its row 5
		{"y,R,x", []actChoice{{"R", 1, -1}}, 2, "R", false},     // no row for x under y: node 2's fallback
		{"x,L,x,R,x", []actChoice{{"L", 1, -1}}, 4, "L", false}, // node 4 has no children
	} {
		res, errOut := actJSON(t, "--policy", dir, "--history", c.history, "--seed", "3")
		if fmt.Sprint(res.Choices) != fmt.Sprint(c.choices) || res.Seed == nil || *res.Seed != 3 {
			t.Errorf("%s: choices %v seed %v, want %v seed 3", c.history, res.Choices, res.Seed, c.choices)
		}
		if strings.Contains(errOut, "never takes") != c.warn || len(res.Warnings) > 0 != c.warn {
			t.Errorf("%s: stderr %q, warnings %q", c.history, errOut, res.Warnings)
		}
		want := actChoice{Action: res.Action, Node: res.Node}
		drawn := false
		for _, ch := range c.choices {
			drawn = drawn || (ch.Action == want.Action && ch.Node == want.Node)
		}
		last := c.last
		if res.Node >= 0 {
			last = res.Node
		}
		if !drawn || res.InTree != (res.Node >= 0) || res.LastNode != last || (c.fallback != "" && res.Fallback != c.fallback) {
			t.Errorf("%s: drew %q at node %d (last %d, fallback %q), want one of %v (last %d, fallback %q)", c.history, res.Action, res.Node, res.LastNode, res.Fallback, c.choices, last, c.fallback)
		}
	}
	res, _ := actJSON(t, "--policy", dir, "--history", "x,L,x", "--seed", "3")
	if want := map[string]float64{"L": 0.75, "R": 0.5}[res.Action]; res.ValueRew == nil || *res.ValueRew != want {
		t.Errorf("x,L,x: drew %q with value_reward %v, want its row's %v", res.Action, res.ValueRew, want)
	}
	if _, _, err := runApp(t, "act", "--policy", dir, "--history", "z"); err == nil || exitCode(t.Context(), err) != exitData {
		t.Errorf("unknown first observation: %v", err)
	}
}

// A deterministic policy prints only its action, and its JSON has no
// choices or seed, with --seed or without.
func TestActDeterministicIgnoresSeed(t *testing.T) {
	dir := writeActPolicy(t)
	for _, args := range [][]string{nil, {"--seed", "5"}} {
		out, errOut, err := runApp(t, append([]string{"act", "--policy", dir, "--history", "x,L,x"}, args...)...)
		if err != nil || out != "R\n" || errOut != "" {
			t.Errorf("%v: %q, stderr %q, %v", args, out, errOut, err)
		}
		out, _, err = runApp(t, append([]string{"act", "--policy", dir, "--history", "x,L,x", "--json"}, args...)...)
		if err != nil || strings.Contains(out, `"choices"`) || strings.Contains(out, `"seed"`) {
			t.Errorf("%v --json: %s, %v", args, out, err)
		}
	}
}

// A run that kept the behaviour with a stochastic policy says so, and
// has no note about a missing controller (a stochastic policy has none).
func TestActStochasticRunWarnings(t *testing.T) {
	dir := writeStochasticPolicy(t)
	m := &report.Manifest{}
	m.Headline.Evidence, m.Headline.Recommendation = report.EvidenceInsufficient, report.RecommendBehavior
	m.Fallback = &report.Fallback{Used: true, Chosen: "clone", Candidates: []report.FallbackCandidate{{Name: "clone"}}}
	if err := report.WriteManifest(filepath.Join(dir, report.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := runApp(t, "act", "--policy", dir, "--history", "x", "--seed", "1")
	if err != nil || !strings.Contains(errOut, "keeping the behaviour policy") || strings.Contains(errOut, report.ControllerFile) {
		t.Errorf("stderr %q, %v", errOut, err)
	}
}

// writeInspectRun makes dir a run directory inspect --policy reads: a
// manifest and a model.arrow with the return range [0, 10].
func writeInspectRun(t *testing.T, dir string) {
	t.Helper()
	if err := report.WriteManifest(filepath.Join(dir, report.ManifestFile), &report.Manifest{}); err != nil {
		t.Fatal(err)
	}
	model := arrowio.Table{Columns: []arrowio.Column{{Name: "param", String: []string{"obs1"}}, {Name: "observation", String: []string{"x"}}},
		Meta: map[string]string{"psrlcb.return_min": "0", "psrlcb.return_max": "10"}}
	if err := arrowio.WriteArrow(filepath.Join(dir, report.ModelFile), model); err != nil {
		t.Fatal(err)
	}
}

// inspect --policy shows a stochastic policy's probability of each row,
// the rows of one observation together, most probable first; a
// deterministic policy's table and JSON have no probability.
func TestInspectPolicyStochastic(t *testing.T) {
	dir := writeStochasticPolicy(t)
	writeInspectRun(t, dir)
	out, _, err := runApp(t, "inspect", dir, "--policy", "--top", "0")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	header := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "step":
			header = true
			if strings.Join(f, " ") != "step observation action prob reach V_R V_b LCB" {
				t.Errorf("header %q", line)
			}
		case header && len(f) >= 6:
			got = append(got, f[len(f)-6]+" "+f[len(f)-5]) // action and probability
		}
	}
	// Tree order: x's rows (reach 0.6) before y's (0.4), L (0.75) before
	// R; each row's children under it.
	want := "L 0.75, L 0.5, R 0.5, R 0.25, R 1, R 1"
	if strings.Join(got, ", ") != want || !strings.Contains(out, "the policy is stochastic") {
		t.Errorf("rows %q, want %q:\n%s", strings.Join(got, ", "), want, out)
	}
	out, _, err = runApp(t, "inspect", dir, "--policy", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Nodes []struct {
			Node int64    `json:"node"`
			Prob *float64 `json:"probability"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Nodes) != 6 {
		t.Fatalf("%v:\n%s", err, out)
	}
	for _, n := range v.Nodes {
		if want := []float64{0.75, 0.25, 1, 0.5, 0.5, 1}[n.Node]; n.Prob == nil || *n.Prob != want {
			t.Errorf("node %d: probability %v, want %v", n.Node, n.Prob, want)
		}
	}

	det := writeActPolicy(t)
	writeInspectRun(t, det)
	out, _, err = runApp(t, "inspect", det, "--policy")
	if err != nil || strings.Contains(out, "prob") || strings.Contains(out, "stochastic") {
		t.Errorf("deterministic policy: %v\n%s", err, out)
	}
	out, _, err = runApp(t, "inspect", det, "--policy", "--json")
	if err != nil || strings.Contains(out, "probability") {
		t.Errorf("deterministic policy --json: %v\n%s", err, out)
	}
}
