package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pipeline"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const (
	examplePOMDP = "../../examples/tiger.pomdp"
	exampleLogs  = "../../examples/tiger-logs.parquet"
)

// fastFit are fit options that keep the example run to a few seconds:
// the true rank of tiger, two EM starts and three α candidates.
var fastFit = []string{"--rank", "2", "--restarts", "2", "--alpha", "0,0.3,1", "--seed", "7", "--log-format", "json"}

func runFitCLI(t *testing.T, args ...string) (string, int, error) {
	t.Helper()
	return runCLI(t, args...)
}

// TestFitExampleBeatsBehaviour runs the README's main job on the shipped
// example and checks the policy exactly under the true tiger model: it
// must be at least as good as the uniform behaviour that made the logs.
func TestFitExampleBeatsBehaviour(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	out, code, err := runFitCLI(t, append([]string{"fit", exampleLogs, "--out", dir}, fastFit...)...)
	if code != 0 {
		t.Fatalf("fit: exit %d: %v\n%s", code, err, out)
	}
	out, code, err = runStdout(t, "evaluate", "--pomdp", examplePOMDP, "--horizon", "4", "--policy", dir, "--json")
	if code != 0 {
		t.Fatalf("evaluate: exit %d: %v\n%s", code, err, out)
	}
	var ev struct {
		Policy   float64 `json:"policy_value"`
		Optimal  float64 `json:"optimal_value"`
		Behavior float64 `json:"behavior_value"`
	}
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if ev.Policy < ev.Behavior {
		t.Errorf("policy value %.4f below the behaviour's %.4f", ev.Policy, ev.Behavior)
	}
	// The LCB is a lower bound of the true value on the [0,1] scale.
	m, err := report.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if lcb := float64(m.Headline.LCBUnits); lcb > ev.Policy+1e-9 {
		t.Errorf("LCB %.4f above the true value %.4f", lcb, ev.Policy)
	}
	t.Logf("policy %.4f, optimum %.4f, behaviour %.4f, LCB %.4f", ev.Policy, ev.Optimal, ev.Behavior, float64(m.Headline.LCBUnits))

	checkGolden(t, dir)
	out, code, _ = runFitCLI(t, "inspect", dir)
	if code != 0 || !strings.Contains(out, "lower confidence bound") {
		t.Errorf("inspect DIR: exit %d\n%s", code, out)
	}
}

// goldenTol is the tolerance of golden values: the run is deterministic,
// so differences come only from floating-point changes across platforms
// or compiler versions.
const goldenTol = 1e-6

// checkGolden compares every Arrow table of the run with testdata/golden
// by value (rows, columns, numbers within goldenTol). Run
// `go test ./cmd/psrlcb -run Example -update` to rewrite them.
func checkGolden(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{report.PolicyFile, report.CoverageFile, report.AlphaFile, report.ModelFile} {
		tb, err := arrowio.ReadArrow(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := tableJSON(tb)
		path := filepath.Join("testdata", "golden", strings.TrimSuffix(name, ".arrow")+".json")
		if *update {
			os.MkdirAll(filepath.Dir(path), 0o755)
			b, _ := json.MarshalIndent(got, "", " ")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		var want map[string][]any
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		compareTables(t, name, got, want)
	}
}

func tableJSON(tb arrowio.Table) map[string][]any {
	out := map[string][]any{}
	for _, c := range tb.Columns {
		var v []any
		switch {
		case c.Int64 != nil:
			for _, x := range c.Int64 {
				v = append(v, float64(x))
			}
		case c.Int32 != nil:
			for _, x := range c.Int32 {
				v = append(v, float64(x))
			}
		case c.Float64 != nil:
			for _, x := range c.Float64 {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					v = append(v, fmt.Sprint(x))
				} else {
					v = append(v, x)
				}
			}
		case c.String != nil:
			for _, x := range c.String {
				v = append(v, x)
			}
		case c.Bool != nil:
			for _, x := range c.Bool {
				v = append(v, x)
			}
		}
		if v == nil {
			v = []any{}
		}
		out[c.Name] = v
	}
	return out
}

func compareTables(t *testing.T, name string, got, want map[string][]any) {
	t.Helper()
	var cols []string
	for k := range want {
		cols = append(cols, k)
	}
	sort.Strings(cols)
	if len(got) != len(want) {
		t.Errorf("%s: %d columns, golden has %d", name, len(got), len(want))
	}
	for _, c := range cols {
		g, ok := got[c]
		if !ok {
			t.Errorf("%s: column %q missing", name, c)
			continue
		}
		w := want[c]
		if len(g) != len(w) {
			t.Errorf("%s.%s: %d rows, golden has %d", name, c, len(g), len(w))
			continue
		}
		for i := range w {
			gf, gok := g[i].(float64)
			wf, wok := w[i].(float64)
			if gok && wok {
				if math.Abs(gf-wf) > goldenTol*math.Max(1, math.Abs(wf)) {
					t.Errorf("%s.%s row %d: %v, golden %v", name, c, i, gf, wf)
					return
				}
				continue
			}
			if fmt.Sprint(g[i]) != fmt.Sprint(w[i]) {
				t.Errorf("%s.%s row %d: %v, golden %v", name, c, i, g[i], w[i])
				return
			}
		}
	}
}

// TestFitDeterministicAcrossWorkers: the same seed with 1 and 2 workers
// gives byte-identical tables, with the default planner and with a
// belief plan of two points whose stated gap sets off the gap search
// (its manifest says the search ran).
func TestFitDeterministicAcrossWorkers(t *testing.T) {
	gapSearch := []string{"--rank", "2", "--restarts", "2", "--alpha", "1", "--planner", "belief", "--plan-points", "2", "--plan-rows", "40"}
	for i, args := range [][]string{fastFit, gapSearch} {
		root := t.TempDir()
		for _, w := range []string{"1", "2"} {
			out, code, err := runFitCLI(t, append([]string{"fit", exampleLogs, "--out", filepath.Join(root, w), "--workers", w}, args...)...)
			if code != 0 {
				t.Fatalf("workers %s: exit %d: %v\n%s", w, code, err, out)
			}
		}
		names := []string{report.PolicyFile, report.ModelFile, report.CoverageFile, report.EpisodesFile, report.FitFile, report.AlphaFile}
		if i == 1 {
			names = append(names, report.ControllerFile)
			m, err := report.ReadManifest(filepath.Join(root, "1"))
			if err != nil {
				t.Fatal(err)
			}
			if m.Plan.GapTrials == 0 {
				t.Fatalf("the gap search did not run: plan %+v", m.Plan)
			}
		}
		for _, name := range names {
			a, _ := os.ReadFile(filepath.Join(root, "1", name))
			b, _ := os.ReadFile(filepath.Join(root, "2", name))
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Errorf("%v: %s differs between 1 and 2 workers", args, name)
			}
		}
	}
}

// TestFitBadInputWritesNothing: invalid logs exit with the data-error code
// and leave no output directory; an existing directory is kept without
// --force.
func TestFitBadInputWritesNothing(t *testing.T) {
	root := t.TempDir()
	bad := filepath.Join(root, "bad.parquet")
	data, err := os.ReadFile(exampleLogs)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(bad, data[:len(data)/2], 0o644) // truncated file
	dir := filepath.Join(root, "run")
	out, code, err := runFitCLI(t, "fit", bad, "--out", dir)
	if code != exitData {
		t.Errorf("truncated input: exit %d, want %d\n%s", code, exitData, out)
	}
	if err == nil || !strings.Contains(err.Error(), "bad.parquet") {
		t.Errorf("error does not name the file: %v", err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("files left behind: %v", entries)
	}

	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "keep"), []byte("x"), 0o644)
	_, code, _ = runFitCLI(t, "fit", exampleLogs, "--out", dir)
	if code != exitUsage {
		t.Errorf("existing output without --force: exit %d, want %d", code, exitUsage)
	}
	if _, err := os.Stat(filepath.Join(dir, "keep")); err != nil {
		t.Error("existing output directory was touched")
	}
	_, code, _ = runFitCLI(t, "fit", exampleLogs, "--out", filepath.Join(root, "x"), "--alpha", "nope")
	if code != exitUsage {
		t.Errorf("bad --alpha: exit %d, want %d", code, exitUsage)
	}
}

// TestFitConfigAndEnv: options come from a config file and PSRLCB_*
// variables, the flag winning over both.
func TestFitConfigAndEnv(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "fit.yaml")
	os.WriteFile(cfg, []byte("rank: 3\nalpha: \"0.5\"\nrestarts: 1\nseed: 3\n"), 0o644)
	t.Setenv("PSRLCB_ALPHA", "0.25")
	dir := filepath.Join(root, "run")
	out, code, err := runFitCLI(t, "fit", exampleLogs, "--out", dir, "--config", cfg, "--rank", "2", "--log-format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	m, err := report.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Parameters
	if p["rank"] != float64(2) || p["alpha"] != 0.25 || p["restarts"] != float64(1) || p["seed"] != float64(3) {
		t.Errorf("parameters: rank %v (flag 2), alpha %v (env 0.25), restarts %v (file 1), seed %v (file 3)", p["rank"], p["alpha"], p["restarts"], p["seed"])
	}
}

// TestFitInterruptedLeavesNothing sends SIGINT to a real psrlcb process
// in the middle of a fit: it exits with 130 and no output directory
// exists.
func TestFitInterruptedLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	root := t.TempDir()
	bin := filepath.Join(root, "psrlcb")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dir := filepath.Join(root, "run")
	// The rank search keeps EM busy long enough to interrupt.
	cmd := exec.Command(bin, "fit", exampleLogs, "--out", dir, "--restarts", "16", "--max-rank", "64", "--log-format", "json")
	var stderr bytes.Buffer
	pr, pw, _ := os.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	// Wait until EM has started, then interrupt.
	buf := make([]byte, 4096)
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stderr.String(), `"stage started"`) || !strings.Contains(stderr.String(), `"rank"`) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no stage started: %s", stderr.String())
		}
		n, err := pr.Read(buf)
		stderr.Write(buf[:n])
		if err != nil {
			break
		}
	}
	time.Sleep(200 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	go func() { _, _ = stderr.ReadFrom(pr) }()
	err := cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if code != exitInterrupted {
		t.Errorf("exit %d (%v), want %d", code, err, exitInterrupted)
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if e.Name() != "psrlcb" {
			t.Errorf("left behind after interrupt: %s", e.Name())
		}
	}
}

// TestFitOptionsCheckedBeforeWork: an invalid option is a usage error
// found before the logs are read (a missing input would otherwise be an
// I/O error), and no output directory appears.
// TestFitOptionsCheckedBeforeWork: every option rule of the pipeline
// (pipeline.Options.Check, their one home) reaches the command line as a
// usage error naming the flag, before any file is read or written.
func TestFitOptionsCheckedBeforeWork(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "missing.parquet")
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--plan-budget", "-5"}, "--plan-budget"},
		{[]string{"--lambda", "-1"}, "--lambda"},
		{[]string{"--select-heldout", "1"}, "--select-heldout"},
		{[]string{"--lcb-correction", "both"}, "--lcb-correction"},
		{[]string{"--fallback", "random"}, "--fallback"},
		{[]string{"--planner", "greedy"}, "--planner"},
		{[]string{"--plan-points", "-3"}, "--plan-points"},
		{[]string{"--plan-rows", "-1"}, "--plan-rows"},
		{[]string{"--alpha", "theory"}, "--gamma"},
		{[]string{"--max-observations", "-2"}, "--max-observations"},
		{[]string{"--return-range", "2,1"}, "--return-range"},
		{[]string{"--dynamics", "hourly"}, "dynamics"},
		{[]string{"--max-rank", "-1"}, "max rank"},
	} {
		out, code, err := runFitCLI(t, append([]string{"fit", missing, "--out", filepath.Join(root, "run")}, c.args...)...)
		if code != exitUsage {
			t.Errorf("%v: exit %d (%v), want %d\n%s", c.args, code, err, exitUsage, out)
		}
		if err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%v: message does not name %s: %v", c.args, c.flag, err)
		}
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
}

// TestFitFlagsNameEveryRule: every field a pipeline option rule names
// has its flag in fitFlags, so no rule reaches the user without the flag
// to change.
func TestFitFlagsNameEveryRule(t *testing.T) {
	bad := []pipeline.Options{
		{Lambda: -1}, {SelectHeldOut: 2}, {LCBCorrection: "x"}, {Fallback: "x"},
		{PlanBudget: -1}, {Planner: "x"}, {PlanPoints: -1}, {PlanRows: -1},
		{Alpha: pessimism.AlphaSpec{Mode: pessimism.AlphaTheory}},
		{Alpha: pessimism.AlphaSpec{Mode: pessimism.AlphaFixed}},
		{MaxObservations: -1}, {ReturnRange: [2]float64{1, 0}},
	}
	for i, o := range bad {
		var oe *pipeline.OptionError
		if err := o.Check(); !errors.As(err, &oe) {
			t.Errorf("case %d: %v is not an OptionError", i, err)
			continue
		}
		if _, ok := fitFlags[oe.Field]; !ok {
			t.Errorf("case %d: no flag for field %s (%s)", i, oe.Field, oe.Msg)
		}
	}
}

// TestFitBeliefPlanner: --planner belief on the example writes a policy
// that evaluate follows, at least as good as the behaviour, with an LCB
// below its true value and the planner's figures in the manifest;
// an unknown planner is a usage error.
func TestFitBeliefPlanner(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "run")
	out, code, err := runFitCLI(t, append([]string{"fit", exampleLogs, "--out", dir, "--planner", "belief"}, fastFit...)...)
	if code != 0 {
		t.Fatalf("fit: exit %d: %v\n%s", code, err, out)
	}
	if !strings.Contains(out, "belief planner's policy is within") {
		t.Errorf("headline does not state the belief planner's gap:\n%s", out)
	}
	out, code, err = runStdout(t, "evaluate", "--pomdp", examplePOMDP, "--horizon", "4", "--policy", dir, "--json")
	if code != 0 {
		t.Fatalf("evaluate: exit %d: %v\n%s", code, err, out)
	}
	var ev struct {
		Policy   float64 `json:"policy_value"`
		Behavior float64 `json:"behavior_value"`
	}
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	m, err := report.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Policy < ev.Behavior || float64(m.Headline.LCBUnits) > ev.Policy+1e-9 {
		t.Errorf("policy %.4f, behaviour %.4f, LCB %.4f", ev.Policy, ev.Behavior, float64(m.Headline.LCBUnits))
	}
	if m.Parameters["planner"] != "belief" {
		t.Errorf("manifest planner %v", m.Parameters["planner"])
	}
	_, code, _ = runFitCLI(t, "fit", exampleLogs, "--out", filepath.Join(root, "x"), "--planner", "fast")
	if code != exitUsage {
		t.Errorf("bad --planner: exit %d, want %d", code, exitUsage)
	}
}

// TestFitHullBound: --hull-bound reaches the final plan (the manifest's
// plan and parameters say so), states an upper bound at or below the
// default's and never below the plan's value, and leaves the plan as it
// is: the same value, the same table.
func TestFitHullBound(t *testing.T) {
	root := t.TempDir()
	var plans [2]policy.PlanStats
	var pols [2]*policy.Policy
	for i, extra := range [][]string{nil, {"--hull-bound"}} {
		dir := filepath.Join(root, fmt.Sprint("run", i))
		args := append([]string{"fit", exampleLogs, "--out", dir, "--planner", "belief"}, fastFit...)
		if out, code, err := runFitCLI(t, append(args, extra...)...); code != 0 {
			t.Fatalf("fit %v: exit %d: %v\n%s", extra, code, err, out)
		}
		m, err := report.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Parameters["hull_bound"] == true; got != (i == 1) || m.Plan.HullBound != (i == 1) {
			t.Errorf("fit %v: parameter hull_bound %v, plan HullBound %v", extra, m.Parameters["hull_bound"], m.Plan.HullBound)
		}
		plans[i] = m.Plan
		if pols[i], _, err = policy.ReadFile(dir); err != nil {
			t.Fatal(err)
		}
	}
	saw, hull := plans[0], plans[1]
	if hull.UpperBound > saw.UpperBound+1e-12 || hull.UpperBound < hull.Value-1e-12 || hull.Value != saw.Value {
		t.Errorf("upper bound %v with --hull-bound, %v without; values %v and %v", hull.UpperBound, saw.UpperBound, hull.Value, saw.Value)
	}
	if len(pols[0].Nodes) != len(pols[1].Nodes) {
		t.Fatalf("tables of %d and %d rows", len(pols[0].Nodes), len(pols[1].Nodes))
	}
	for k := range pols[0].Nodes {
		if pols[0].Nodes[k] != pols[1].Nodes[k] {
			t.Fatalf("row %d: %+v without --hull-bound, %+v with", k, pols[0].Nodes[k], pols[1].Nodes[k])
		}
	}
}
