package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/report"
)

type evalJSON struct {
	Estimates []struct {
		Estimator string   `json:"estimator"`
		Value     *float64 `json:"value"`
		Lower     *float64 `json:"lower"`
		Upper     *float64 `json:"upper"`
		ESS       *float64 `json:"ess"`
		Episodes  int      `json:"episodes"`
		Reason    string   `json:"reason"`
	} `json:"estimates"`
	Recommended string `json:"recommended"`
	Summary     string `json:"summary"`
}

func (e evalJSON) value(t *testing.T, name string) *float64 {
	t.Helper()
	for _, x := range e.Estimates {
		if x.Estimator == name {
			return x.Value
		}
	}
	t.Fatalf("no estimator %s", name)
	return nil
}

// TestEvaluateLogs runs evaluate --logs on the example logs: the fit's own
// policy (every estimator, the output directory) and the behaviour itself
// through its propensity column (every importance-sampling estimate is
// then the logs' mean return, exactly); with --no-model the model-based
// estimators are null with a reason.
func TestEvaluateLogs(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "run")
	if out, code, err := runFitCLI(t, append([]string{"fit", exampleLogs, "--out", run}, fastFit...)...); code != 0 {
		t.Fatalf("fit: %v\n%s", err, out)
	}
	out := filepath.Join(root, "eval")
	text, code, err := runFitCLI(t, "evaluate", "--logs", exampleLogs, "--policy", run, "--out", out, "--rank", "2", "--bootstrap", "50")
	if code != 0 {
		t.Fatalf("evaluate --logs: exit %d: %v\n%s", code, err, text)
	}
	if !strings.Contains(text, "The evaluated policy: ") || !strings.Contains(text, "behaviour (the logs' mean)") {
		t.Errorf("summary does not lead with the answer:\n%s", text)
	}
	tb, err := arrowio.ReadArrow(filepath.Join(out, report.EstimatesFile))
	if err != nil || tb.Rows() != 9 {
		t.Fatalf("estimates.arrow: %d rows, %v", tb.Rows(), err)
	}
	for _, f := range report.EvaluationFiles() {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}

	js, code, err := runStdout(t, "evaluate", "--logs", exampleLogs, "--target-propensity-column", "propensity", "--json", "--bootstrap", "20")
	if code != 0 {
		t.Fatalf("column: exit %d: %v", code, err)
	}
	var ev evalJSON
	if err := json.Unmarshal([]byte(js), &ev); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	beh := *ev.value(t, "behavior")
	for _, n := range []string{"is", "wis", "pdis", "wpdis"} {
		if v := ev.value(t, n); v == nil || math.Abs(*v-beh) > 1e-9*math.Abs(beh) {
			t.Errorf("%s of the behaviour itself: %v, want the logs' mean %v", n, v, beh)
		}
	}
	for _, n := range []string{"model", "dr"} {
		if v := ev.value(t, n); v != nil {
			t.Errorf("%s with only the logged actions' probabilities: %v, want null", n, *v)
		}
	}

	js, _, _ = runStdout(t, "evaluate", "--logs", exampleLogs, "--policy", run, "--no-model", "--json", "--bootstrap", "20")
	ev = evalJSON{}
	if err := json.Unmarshal([]byte(js), &ev); err != nil {
		t.Fatal(err)
	}
	if v := ev.value(t, "wdr"); v != nil || ev.Recommended == "" {
		t.Errorf("--no-model: wdr %v, recommended %q", v, ev.Recommended)
	}
}

// TestEvaluateLogsErrors: usage mistakes are exit 2, a policy table that
// does not fit the logs exit 3 naming the row.
func TestEvaluateLogsErrors(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "bad.arrow")
	err := arrowio.WriteArrow(table, arrowio.Table{Columns: []arrowio.Column{
		{Name: "observation", String: []string{"*", "*"}}, {Name: "action", String: []string{"listen", "dance"}},
		{Name: "probability", Float64: []float64{0.5, 0.5}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"evaluate", "--logs", exampleLogs}, exitUsage, "needs the evaluated policy"},
		{[]string{"evaluate", "--logs", exampleLogs, "--policy", table, "--target-propensity-column", "p"}, exitUsage, "not both"},
		{[]string{"evaluate", "--logs", exampleLogs, "--policy", table, "--pomdp", "x.pomdp"}, exitUsage, "give one of them"},
		{[]string{"evaluate", "--logs", exampleLogs, "--policy", table, "--no-model"}, exitData, `row 2: action "dance" is not one of the logs'`},
		{[]string{"evaluate", "--logs", exampleLogs, "--target-propensity-column", "nope", "--no-model"}, exitData, `has no column "nope"`},
	} {
		_, code, err := runFitCLI(t, c.args...)
		if code != c.code || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: exit %d, %v; want exit %d and %q", c.args, code, err, c.code, c.want)
		}
	}
}
