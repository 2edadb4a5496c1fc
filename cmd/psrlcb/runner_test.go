package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunnerArg: fit with a runner other than local is handed off, in
// every spelling of the flag; anything else is not.
func TestRunnerArg(t *testing.T) {
	for _, c := range []struct {
		args   []string
		runner string
		beam   bool
	}{
		{[]string{"fit", "--runner", "prism", "logs.parquet"}, "prism", true},
		{[]string{"fit", "logs.parquet", "--out", "x", "--runner=flink"}, "flink", true},
		{[]string{"fit", "-runner", "spark"}, "spark", true},
		{[]string{"fit", "--runner", "local", "logs.parquet"}, "local", false},
		{[]string{"fit", "logs.parquet"}, "", false},
		{[]string{"simulate", "--runner", "prism"}, "", false},
		{[]string{"fit", "--", "--runner", "prism"}, "", false},
		{[]string{"fit", "--runner"}, "", false},
		{nil, "", false},
		{[]string{"fit", "--out", "runs/x", "gs://bucket/logs/"}, "", true},
		{[]string{"fit", "--out=s3://bucket/runs/x", "logs.parquet"}, "", true},
		{[]string{"fit", "--runner", "local", "--out", "gs://b/r", "logs.parquet"}, "local", true},
		{[]string{"fit", "--out", "runs/x", "logs/a://b.parquet"}, "", false},
	} {
		r, beam := runnerArg(c.args)
		if r != c.runner || beam != c.beam {
			t.Errorf("%q: %q, %v; want %q, %v", c.args, r, beam, c.runner, c.beam)
		}
	}
}

// TestHandOff: the run goes to psrlcb-beam on PATH with the same
// arguments, and its exit code is fit's; without psrlcb-beam the user is
// told how to build it (exit 2).
func TestHandOff(t *testing.T) {
	dir := t.TempDir()
	got := filepath.Join(dir, "args")
	script := "#!/bin/sh\necho \"$@\" > " + got + "\necho beam-ran\nexit 3\n"
	if err := os.WriteFile(filepath.Join(dir, beamCommand), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	var stdout, stderr bytes.Buffer
	args := []string{"fit", "--runner", "prism", "--out", "o", "logs.parquet"}
	if code := handOff("prism", args, &stdout, &stderr); code != 3 {
		t.Fatalf("exit %d, want psrlcb-beam's 3 (stderr %q)", code, stderr.String())
	}
	b, err := os.ReadFile(got)
	if err != nil || strings.TrimSpace(string(b)) != strings.Join(args, " ") || stdout.String() != "beam-ran\n" {
		t.Fatalf("psrlcb-beam got %q (%v), printed %q", b, err, stdout.String())
	}
	t.Setenv("PATH", t.TempDir())
	stderr.Reset()
	if code := handOff("prism", args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "go build") {
		t.Fatalf("no psrlcb-beam: exit %d, %q", code, stderr.String())
	}
	stderr.Reset()
	if code := handOff("", []string{"fit", "gs://b/logs/"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "object-store URLs") {
		t.Fatalf("no psrlcb-beam for a URL: exit %d, %q", code, stderr.String())
	}
}
