package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/report"
)

func writeActPolicy(t *testing.T) string {
	t.Helper()
	p := &policy.Policy{Horizon: 3, Nodes: []policy.Node{
		{ID: 0, Parent: -1, Step: 1, Obs: "x", Action: "L", Fallback: "R", ReachProb: 0.6, ValueReward: 0.5, ValueBonus: 0.25, ValueLCB: 0.25},
		{ID: 1, Parent: -1, Step: 1, Obs: "y", Action: "R", Fallback: "R", ReachProb: 0.4},
		{ID: 2, Parent: 0, Step: 2, Obs: "x", Action: "R", Fallback: "L", ReachProb: 0.2, ValueReward: 0.75, ValueBonus: 0.5, ValueLCB: 0.25},
	}}
	dir := t.TempDir()
	if err := policy.WriteFile(filepath.Join(dir, "policy.arrow"), p, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runApp(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	out, errOut, _, err := runSplit(args...)
	return out, errOut, err
}

// runSplit runs the command with args and returns its standard output,
// standard error, exit code and error.
func runSplit(args ...string) (string, string, int, error) {
	var out, errOut bytes.Buffer
	code, err := runMain(context.Background(), &out, &errOut, args...)
	return out.String(), errOut.String(), code, err
}

func TestActCommand(t *testing.T) {
	dir := writeActPolicy(t)
	file := filepath.Join(dir, "policy.arrow")
	cases := []struct {
		history, want string
		warn          bool
	}{
		{"x", "L", false},
		{"y", "R", false},
		{"x,L,x", "R", false},
		{"x,R,x", "R", true},      // listed action differs from the policy's L
		{"x,L,y", "R", false},     // left the tree: fallback of node 0
		{"x,L,x,R,y", "L", false}, // step 3 has no row: fallback of node 2
	}
	for _, c := range cases {
		for _, p := range []string{dir, file} {
			out, errOut, err := runApp(t, "act", "--policy", p, "--history", c.history)
			if err != nil {
				t.Fatalf("%s: %v", c.history, err)
			}
			if strings.TrimSpace(out) != c.want {
				t.Fatalf("%s: action %q, want %q", c.history, out, c.want)
			}
			if got := strings.Contains(errOut, "warning"); got != c.warn {
				t.Fatalf("%s: stderr %q", c.history, errOut)
			}
		}
	}
	out, _, err := runApp(t, "act", "--policy", dir, "--history", "x,L,x", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res["action"] != "R" || res["node"] != 2.0 || res["value_reward"] != 0.75 || res["value_lcb"] != 0.25 || res["in_tree"] != true {
		t.Fatalf("json %v", res)
	}
}

func TestActErrors(t *testing.T) {
	dir := writeActPolicy(t)
	ctxCode := func(err error) int { return exitCode(t.Context(), err) }
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"act", "--policy", dir, "--history", "x,L"}, exitUsage},
		{[]string{"act", "--policy", dir, "--history", ""}, exitUsage},
		{[]string{"act", "--policy", dir, "--history", "x,L,x,R,x,L,x"}, exitUsage},
		{[]string{"act", "--policy", dir, "--history", "z"}, exitData},
		{[]string{"act", "--policy", filepath.Join(dir, "missing.arrow"), "--history", "x"}, exitIO},
		{[]string{"act", "--policy", dir}, exitUsage},
		{[]string{"act", "--policy", dir, "--history", "x", "--history-json", `["x"]`}, exitUsage},
		{[]string{"act", "--policy", dir, "--history-json", `["x","L"]`}, exitUsage},
		{[]string{"act", "--policy", dir, "--history-json", `x,L,x`}, exitUsage},
	} {
		_, _, err := runApp(t, c.args...)
		if err == nil || ctxCode(err) != c.code {
			t.Errorf("%v: error %v (exit %d), want exit %d", c.args, err, ctxCode(err), c.code)
		}
	}
}

// act warns when the run that wrote the policy recommends keeping the
// behaviour policy.
func TestActWarnsWhenBehaviourRecommended(t *testing.T) {
	dir := t.TempDir()
	m := &report.Manifest{}
	m.Headline.Evidence, m.Headline.Recommendation = report.EvidenceInsufficient, report.RecommendBehavior
	if err := report.WriteManifest(filepath.Join(dir, report.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	if w := recommendationWarning(dir); !strings.Contains(w, "keeping the behaviour policy (evidence: insufficient)") {
		t.Errorf("warning %q", w)
	}
	// The fallback returned the behaviour's clone: the policy stands in
	// for the behaviour, and the warning says so.
	m.Fallback = &report.Fallback{Used: true, Chosen: "clone", Candidates: []report.FallbackCandidate{{Name: "clone"}}}
	if err := report.WriteManifest(filepath.Join(dir, report.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	if w := recommendationWarning(dir); !strings.Contains(w, "behaviour's clone") || strings.Contains(w, "inspection only") {
		t.Errorf("warning %q after the fallback", w)
	}
	var b strings.Builder
	printHeadline(&b, dir, m, nil)
	if !strings.Contains(b.String(), "holds the behaviour's clone") {
		t.Errorf("fit's summary after the fallback:\n%s", b.String())
	}
	m.Fallback = nil
	m.Headline.Evidence, m.Headline.Recommendation = report.EvidenceJustified, report.RecommendPolicy
	report.WriteManifest(filepath.Join(dir, report.ManifestFile), m)
	if w := recommendationWarning(dir); w != "" {
		t.Errorf("warning %q for a justified run", w)
	}
}

// TestActMapsMergedObservations: beside a model.arrow that lists merged
// observations (param "other"), an observation the model does not know is
// looked up as <other>, with a warning; without merged rows, or without
// model.arrow, it is looked up as given (and leaves the tree).
func TestActMapsMergedObservations(t *testing.T) {
	p := &policy.Policy{Horizon: 2, Nodes: []policy.Node{
		{ID: 0, Parent: -1, Step: 1, Obs: "x", Action: "L", Fallback: "L"},
		{ID: 1, Parent: -1, Step: 1, Obs: ingest.OtherSymbol, Action: "R", Fallback: "R"},
		{ID: 2, Parent: 0, Step: 2, Obs: ingest.OtherSymbol, Action: "R", Fallback: "R"},
		{ID: 3, Parent: 0, Step: 2, Obs: "x", Action: "L", Fallback: "L"},
	}}
	model := func(params, obs []string) string {
		dir := t.TempDir()
		if err := policy.WriteFile(filepath.Join(dir, "policy.arrow"), p, nil); err != nil {
			t.Fatal(err)
		}
		if params != nil {
			tab := arrowio.Table{Columns: []arrowio.Column{{Name: "param", String: params}, {Name: "observation", String: obs}}}
			if err := arrowio.WriteArrow(filepath.Join(dir, report.ModelFile), tab); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	merged := model([]string{"obs1", "obs1", "obs1", "obs1", "other"}, []string{"x", ingest.OtherSymbol, "x", ingest.OtherSymbol, "rare"})
	plain := model([]string{"obs1", "obs1"}, []string{"x", ingest.OtherSymbol})
	bare := model(nil, nil)
	for _, c := range []struct {
		dir, history, want string
		warn               bool
	}{
		{merged, "rare", "R", true},                                // step 1: <other>
		{merged, "x,L,unseen", "R", true},                          // step 2: <other> under x
		{merged, "x,L,x", "L", false},                              // known symbols as given
		{plain, "x,L,unseen", "L", false},                          // no merging: leaves the tree, fallback of x
		{bare, "x,L,unseen", "L", false},                           // no model.arrow: the same
		{filepath.Join(merged, "policy.arrow"), "rare", "R", true}, // the file path finds model.arrow too
	} {
		out, errOut, err := runApp(t, "act", "--policy", c.dir, "--history", c.history)
		if err != nil {
			t.Fatalf("%s: %v", c.history, err)
		}
		if strings.TrimSpace(out) != c.want || strings.Contains(errOut, ingest.OtherSymbol) != c.warn {
			t.Fatalf("%s in %s: action %q (want %q), stderr %q (warning wanted: %v)", c.history, c.dir, out, c.want, errOut, c.warn)
		}
	}
}

// TestActHistoryJSON: symbols the comma-separated history cannot carry
// (empty, with a comma or surrounding spaces) are looked up exactly with
// --history-json, and the comma form's error says so.
func TestActHistoryJSON(t *testing.T) {
	p := &policy.Policy{Horizon: 2, Nodes: []policy.Node{
		{ID: 0, Parent: -1, Step: 1, Obs: "", Action: "L", Fallback: "L"},
		{ID: 1, Parent: 0, Step: 2, Obs: "a,b", Action: "R", Fallback: "R"},
		{ID: 2, Parent: 0, Step: 2, Obs: " c ", Action: "S", Fallback: "S"},
		{ID: 3, Parent: 0, Step: 2, Obs: "c", Action: "T", Fallback: "T"},
	}}
	dir := t.TempDir()
	if err := policy.WriteFile(filepath.Join(dir, "policy.arrow"), p, nil); err != nil {
		t.Fatal(err)
	}
	for history, want := range map[string]string{`[""]`: "L", `["","L","a,b"]`: "R", `["","L"," c "]`: "S", `["","L","c"]`: "T"} {
		out, _, err := runApp(t, "act", "--policy", dir, "--history-json", history)
		if err != nil || strings.TrimSpace(out) != want {
			t.Errorf("%s: %q, %v; want %s", history, out, err, want)
		}
	}
	_, _, err := runApp(t, "act", "--policy", dir, "--history", ",L,c")
	if err == nil || !strings.Contains(err.Error(), "--history-json") {
		t.Errorf("empty item: %v, want a pointer to --history-json", err)
	}
}

// TestActFollowsController: a fit whose belief planner keeps 4 table rows
// writes controller.arrow; act answers every history from it (the rows'
// actions where they hold the history, the controller's past them, with
// no fallback), agreeing with policy.ReadFile's Lookup; without
// controller.arrow (a run of an earlier version) act falls back to the
// table's rule with a note.
func TestActFollowsController(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if _, _, err := runApp(t, "fit", filepath.Join("..", "..", "examples", "tiger-logs.parquet"), "--out", run,
		"--rank", "2", "--restarts", "1", "--max-iter", "30", "--alpha", "0.3", "--planner", "belief", "--plan-rows", "4"); err != nil {
		t.Fatal(err)
	}
	pol, _, err := policy.ReadFile(run)
	if err != nil {
		t.Fatal(err)
	}
	if pol.Ctrl == nil || len(pol.Nodes) > 4 {
		t.Fatalf("controller %v, %d rows", pol.Ctrl != nil, len(pol.Nodes))
	}
	m := pol.Ctrl.Model()
	// A history past the table, with the policy's own actions.
	obs := []string{pol.Nodes[0].Obs}
	var items []string
	cur := pol.NewCursor()
	for h := 0; h < m.Horizon; h++ {
		if h > 0 {
			obs = append(obs, m.ObsVocab[(h+1)%m.NumObs])
		}
		a, _, _ := cur.Act(obs[h])
		items = append(items, obs[h])
		out, errOut, err := runApp(t, "act", "--policy", run, "--history", strings.Join(items, ","), "--json")
		if err != nil {
			t.Fatal(err, errOut)
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		if res["action"] != a || res["controller"] != true {
			t.Fatalf("history %v: act says %v, the policy read in Go %q", items, res, a)
		}
		items = append(items, a)
	}
	if err := os.Remove(filepath.Join(run, report.ControllerFile)); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := runApp(t, "act", "--policy", run, "--history", strings.Join(items[:len(items)-1], ","))
	if err != nil || !strings.Contains(errOut, "no controller.arrow") {
		t.Fatalf("a run without controller: %v, stderr %q", err, errOut)
	}
}
