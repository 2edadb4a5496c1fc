package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/psrlcb/psrlcb/pomdp"
)

// tigerText is the tiger problem as the example ships it
// (examples/tiger.pomdp; the pomdp package checks it against the textbook
// definition and its hand-worked values).
func tigerText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(examplePOMDP)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeText(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSimulateCommand(t *testing.T) {
	model := writeText(t, "tiger.pomdp", tigerText(t))
	dir := t.TempDir()
	run := func(name string, seed string) []byte {
		out := filepath.Join(dir, name)
		msg, code, err := runCLI(t, "simulate", "--pomdp", model, "--horizon", "3", "--episodes", "200",
			"--behavior", "uniform", "--seed", seed, "--out", out)
		if code != 0 {
			t.Fatalf("exit %d: %v\n%s", code, err, msg)
		}
		if !strings.Contains(msg, "200 episodes × 3 steps = 600 rows") {
			t.Errorf("output %q", msg)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := run("a.parquet", "7")
	if b := run("b.parquet", "7"); !bytes.Equal(a, b) {
		t.Error("the same seed gave different files")
	}
	if c := run("c.parquet", "8"); bytes.Equal(a, c) {
		t.Error("different seeds gave the same file")
	}
	rows, err := parquet.ReadFile[pomdp.LogRow](filepath.Join(dir, "a.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 600 {
		t.Fatalf("%d rows", len(rows))
	}
	for i, r := range rows {
		if r.EpisodeID != int64(i/3+1) || r.Step != int64(i%3+1) || r.Terminal || r.Propensity != 1.0/3 {
			t.Fatalf("row %d: %+v", i, r)
		}
		if (r.Step == 1) != (r.Observation == pomdp.InitSymbol) {
			t.Fatalf("row %d: observation %q at step %d", i, r.Observation, r.Step)
		}
	}
}

func TestSimulateCommandErrors(t *testing.T) {
	text := tigerText(t)
	model := writeText(t, "tiger.pomdp", text)
	// Break the row "0.15 0.85" of the listen observation matrix; the
	// error must name its line.
	at := strings.Index(text, "0.15 0.85")
	if at < 0 {
		t.Fatal("examples/tiger.pomdp has no row 0.15 0.85")
	}
	badLine := fmt.Sprintf("broken.pomdp:%d", strings.Count(text[:at], "\n")+1)
	broken := writeText(t, "broken.pomdp", strings.Replace(text, "0.15 0.85", "0.15 0.8", 1))
	out := filepath.Join(t.TempDir(), "x.parquet")
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing-flags", []string{"--pomdp", model}, exitUsage, "--horizon H"},
		{"bad-behavior", []string{"--pomdp", model, "--horizon", "2", "--episodes", "3", "--out", out, "--behavior", "greedy"}, exitUsage, "greedy"},
		{"bad-model", []string{"--pomdp", broken, "--horizon", "2", "--episodes", "3", "--out", out}, exitData, badLine},
		{"missing-model", []string{"--pomdp", model + ".absent", "--horizon", "2", "--episodes", "3", "--out", out}, exitIO, "absent"},
		{"unwritable", []string{"--pomdp", model, "--horizon", "2", "--episodes", "3", "--out", filepath.Join(out, "no", "x.parquet")}, exitIO, "no"},
		{"out-is-model", []string{"--pomdp", model, "--horizon", "2", "--episodes", "3", "--out", model}, exitUsage, "is the model file"},
		{"out-is-dir", []string{"--pomdp", model, "--horizon", "2", "--episodes", "3", "--out", filepath.Dir(model)}, exitUsage, "is a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg, code, err := runCLI(t, append([]string{"simulate"}, c.args...)...)
			if code != c.code || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("exit %d (want %d), err %v (want %q)\n%s", code, c.code, err, c.want, msg)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed run left %s", out)
	}
	if b, _ := os.ReadFile(model); string(b) != text {
		t.Error("the model file was overwritten")
	}
}
