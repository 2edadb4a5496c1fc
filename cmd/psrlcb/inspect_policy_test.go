package main

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/report"
)

// The printed summary of fit leads with the return in the logs' units,
// says out of how many episodes the effective sample size is, and leaves
// the symbols to report.html; inspect --policy prints the most probable
// decision nodes, each under its parent.
func TestFitSummaryAndInspectPolicy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	out, code, err := runFitCLI(t, append([]string{"fit", exampleLogs, "--out", dir}, fastFit...)...)
	if code != 0 {
		t.Fatalf("fit: exit %d: %v\n%s", code, err, out)
	}
	if !strings.Contains(out, "in the logs' units") || !strings.Contains(out, "of 5000 episodes") {
		t.Errorf("summary does not lead with return units or lacks the episode count:\n%s", out)
	}
	summary := out[:strings.Index(out, "verdict:")] // the verdict is the report's own text
	for _, jargon := range []string{"C∞", "ι", "Θ_min", "[0,1]"} {
		if strings.Contains(summary, jargon) {
			t.Errorf("summary uses %q:\n%s", jargon, summary)
		}
	}

	pol, _, err := policy.ReadFile(filepath.Join(dir, report.PolicyFile))
	if err != nil {
		t.Fatal(err)
	}
	out, code, err = runFitCLI(t, "inspect", dir, "--policy", "--top", "5")
	if code != 0 {
		t.Fatalf("inspect --policy: exit %d: %v\n%s", code, err, out)
	}
	var rows []string
	sc := bufio.NewScanner(strings.NewReader(out))
	header := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "step") {
			header = true
			continue
		}
		if header && strings.TrimSpace(sc.Text()) != "" {
			rows = append(rows, sc.Text())
		}
	}
	// Five nodes (their ancestors are among the five most probable: a
	// child is never more probable than its parent).
	if len(rows) != 5 {
		t.Fatalf("%d rows, want 5:\n%s", len(rows), out)
	}
	if f := strings.Fields(rows[0]); f[0] != "1" || f[2] != "listen" {
		t.Errorf("first row %q: want step 1, listen", rows[0])
	}
	if !strings.Contains(out, "5 most probable of") {
		t.Errorf("no count of the nodes shown:\n%s", out)
	}

	out, code, err = runFitCLI(t, "inspect", dir, "--policy", "--top", "0", "--json")
	if code != 0 {
		t.Fatalf("inspect --policy --json: exit %d: %v\n%s", code, err, out)
	}
	var v struct {
		TotalNodes int `json:"total_nodes"`
		Nodes      []struct {
			Node  int64   `json:"node"`
			Step  int     `json:"step"`
			Reach float64 `json:"reach"`
			Value float64 `json:"value_units"`
			Bonus float64 `json:"bonus_units"`
			LCB   float64 `json:"lcb_units"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if v.TotalNodes != len(pol.Nodes) || len(v.Nodes) != len(pol.Nodes) {
		t.Errorf("--top 0 lists %d of %d nodes, policy.arrow has %d", len(v.Nodes), v.TotalNodes, len(pol.Nodes))
	}
	for _, n := range v.Nodes {
		if d := n.Value - n.Bonus - n.LCB; d > 1e-9 || d < -1e-9 {
			t.Errorf("node %d: LCB %v ≠ V_R %v − V_b %v", n.Node, n.LCB, n.Value, n.Bonus)
		}
		if p := pol.Nodes[n.Node].ReachProb; p != n.Reach {
			t.Errorf("node %d reach %v, policy.arrow %v", n.Node, n.Reach, p)
		}
	}
	if _, code, _ := runFitCLI(t, "inspect", dir, "--policy", "--top", "-3"); code != 2 {
		t.Errorf("--top -3: exit %d, want 2", code)
	}
	checkValuesAlpha(t, dir)
}

// checkValuesAlpha: policy.arrow says at which α its value columns are
// priced (the planning α of the headline) and at which the run's reported
// bound is; where they differ, inspect --policy says so in words.
func checkValuesAlpha(t *testing.T, dir string) {
	t.Helper()
	_, meta, err := policy.ReadFile(filepath.Join(dir, report.PolicyFile))
	if err != nil {
		t.Fatal(err)
	}
	m, err := report.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	va, ba := valuesAlpha(meta)
	if va != float64(m.Headline.Alpha) || ba != float64(m.Headline.BoundAlpha) {
		t.Fatalf("policy.arrow prices at α %v (bound %v), headline α %v (bound %v)", va, ba, m.Headline.Alpha, m.Headline.BoundAlpha)
	}
	out, _, _ := runFitCLI(t, "inspect", dir, "--policy", "--top", "2")
	if said := strings.Contains(out, "priced at the planning α"); said != (va != ba) {
		t.Errorf("α %v, bound α %v: the note is there: %v\n%s", va, ba, said, out)
	}
}
