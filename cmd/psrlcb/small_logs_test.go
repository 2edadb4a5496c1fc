package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/report"
)

// The one-step reproduction, through the command line: simulate
// 3000 one-step tiger episodes, fit with the defaults. Before, every such
// fit ended with "json: unsupported value: +Inf" and exit 1 after all the
// work.
func TestFitOneStepLogs(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "t1.parquet")
	if msg, code, err := runCLI(t, "simulate", "--pomdp", examplePOMDP, "--horizon", "1", "--episodes", "3000", "--seed", "1", "--out", logs); code != 0 {
		t.Fatalf("simulate: exit %d: %v\n%s", code, err, msg)
	}
	run := filepath.Join(dir, "t1")
	msg, code, err := runFitCLI(t, "fit", logs, "--out", run, "--restarts", "1", "--log-format", "json")
	if code != 0 {
		t.Fatalf("fit: exit %d: %v\n%s", code, err, msg)
	}
	for _, name := range []string{report.ManifestFile, report.HTMLFile} {
		b, err := os.ReadFile(filepath.Join(run, name))
		if err != nil {
			t.Fatal(err)
		}
		if s := string(b); strings.Contains(s, "NaN") || strings.Contains(s, "+Inf") {
			t.Errorf("%s holds a non-finite number", name)
		}
	}
	if strings.Contains(msg, "NaN") || strings.Contains(msg, "+Inf") {
		t.Errorf("printed summary:\n%s", msg)
	}
}

// Ten episodes with α = 0.1 (the reproduction): the run succeeds,
// and the verdict keeps the behaviour policy instead of saying the logs
// justify the plan.
func TestFitTenEpisodesKeepsBehaviour(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "k10.parquet")
	if msg, code, err := runCLI(t, "simulate", "--pomdp", examplePOMDP, "--horizon", "4", "--episodes", "10", "--seed", "3", "--out", logs); code != 0 {
		t.Fatalf("simulate: exit %d: %v\n%s", code, err, msg)
	}
	msg, code, err := runFitCLI(t, "fit", logs, "--out", filepath.Join(dir, "run"), "--alpha", "0.1", "--log-format", "json")
	if code != 0 {
		t.Fatalf("fit: exit %d: %v\n%s", code, err, msg)
	}
	if strings.Contains(msg, "justify") || !strings.Contains(msg, "recommendation: keep the behaviour policy (evidence: insufficient)") {
		t.Errorf("output:\n%s", msg)
	}
	// One episode is a data error with the numbers, not exit 1.
	one := filepath.Join(dir, "k1.parquet")
	runCLI(t, "simulate", "--pomdp", examplePOMDP, "--horizon", "4", "--episodes", "1", "--seed", "3", "--out", one)
	_, code, err = runFitCLI(t, "fit", one, "--out", filepath.Join(dir, "run1"), "--alpha", "0.1", "--log-format", "json")
	if code != 3 || err == nil || !strings.Contains(err.Error(), "1 episode of 4 steps") {
		t.Errorf("one episode: exit %d: %v", code, err)
	}
}
