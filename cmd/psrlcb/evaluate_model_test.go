package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/report"
)

// TestEvaluateModel: the fitted model's value of the run's own policy is
// the V_{θ̂,R} the run reported (the exact planner's figure, mapped to the
// user's units); a policy of another run is valued too; bad combinations
// are usage errors and a directory without a model a data or I/O error.
func TestEvaluateModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	out, code, err := runFitCLI(t, append([]string{"fit", exampleLogs, "--out", dir}, fastFit...)...)
	if code != 0 {
		t.Fatalf("fit: exit %d: %v\n%s", code, err, out)
	}
	out, code, err = runStdout(t, "evaluate", "--model", dir, "--policy", dir, "--json")
	if code != 0 {
		t.Fatalf("evaluate --model: exit %d: %v\n%s", code, err, out)
	}
	var ev modelEvaluation
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	man, err := report.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !man.Headline.PlanExact {
		t.Fatal("the example's plan is not exact")
	}
	if want := float64(man.Headline.ModelValueUnits); math.Abs(ev.ModelValue-want) > 1e-9*math.Max(1, math.Abs(want)) ||
		math.Abs(ev.ModelScaled-float64(man.Headline.ModelValue)) > 1e-9 || ev.Unmatched > 1e-6 || ev.Horizon != 4 {
		t.Errorf("evaluate --model %+v, run's V_R %v (%v scaled)", ev, want, man.Headline.ModelValue)
	}
	text, code, err := runFitCLI(t, "evaluate", "--model", filepath.Join(dir, "model.arrow"), "--policy", dir)
	if code != 0 || !strings.Contains(text, "model value") {
		t.Fatalf("text output: exit %d: %v\n%s", code, err, text)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"--model", dir, "--pomdp", examplePOMDP, "--policy", dir}, exitUsage},
		{[]string{"--model", dir, "--policy", dir, "--horizon", "3"}, exitUsage},
		{[]string{"--model", t.TempDir(), "--policy", dir}, exitIO},
	} {
		out, code, _ := runFitCLI(t, append([]string{"evaluate"}, c.args...)...)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d\n%s", c.args, code, c.code, out)
		}
	}
}
