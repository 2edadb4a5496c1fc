package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

type inspectRow struct {
	EpisodeID   int64   `parquet:"episode_id"`
	Step        int32   `parquet:"step"`
	Observation string  `parquet:"observation"`
	Action      string  `parquet:"action"`
	Reward      float64 `parquet:"reward"`
	Pscore      float64 `parquet:"pscore"`
	Done        bool    `parquet:"done"`
}

// runCLI runs the command line in-process as main does and returns
// stdout and stderr together, the exit code and the error.
func runCLI(t *testing.T, args ...string) (string, int, error) {
	t.Helper()
	var out bytes.Buffer
	code, err := runMain(context.Background(), &out, &out, args...)
	return out.String(), code, err
}

// runStdout is runCLI with standard output alone, for output a test
// parses (standard error carries the progress messages); standard error
// follows it when the command fails.
func runStdout(t *testing.T, args ...string) (string, int, error) {
	t.Helper()
	out, errOut, code, err := runSplit(args...)
	if code != 0 {
		out += errOut
	}
	return out, code, err
}

func writeInspectLogs(t *testing.T, rows []inspectRow) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "logs.parquet")
	if err := parquet.WriteFile(path, rows); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInspectJSON(t *testing.T) {
	// Episode 7 runs 2 steps, episode 3 ends after step 1.
	path := writeInspectLogs(t, []inspectRow{
		{7, 2, "y", "r", 2, 0.25, false},
		{3, 1, "x", "r", 3, 0.5, true},
		{7, 1, "x", "l", 1, 0.5, false},
	})
	out, code, err := runCLI(t, "inspect", "--json", path)
	if code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	var got struct {
		Episodes   int   `json:"episodes"`
		Horizon    int   `json:"horizon"`
		Rows       int64 `json:"rows"`
		Padded     int   `json:"padded_episodes"`
		NumObs     int   `json:"num_observations"`
		Histories  []int `json:"distinct_histories"`
		Propensity struct {
			Min    float64 `json:"min"`
			Median float64 `json:"median"`
		} `json:"propensity"`
		Iota   float64 `json:"iota"`
		Return struct {
			Min, Max float64
		} `json:"return"`
		Quarantined int `json:"quarantined"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// |O| = {<end>, x, y}; histories τ_1: (x,r),(x,l); τ_2: (x,r,<end>,<end>),(x,l,y,r).
	// Logged propensities .5 .5 .25: median (rank 1) .5.
	if got.Episodes != 2 || got.Horizon != 2 || got.Rows != 3 || got.Padded != 1 || got.NumObs != 3 ||
		len(got.Histories) != 2 || got.Histories[0] != 2 || got.Histories[1] != 2 ||
		got.Propensity.Min != 0.25 || got.Propensity.Median != 0.5 || got.Iota != 0.25 ||
		got.Return.Min != 3 || got.Return.Max != 3 || got.Quarantined != 0 {
		t.Errorf("unexpected summary:\n%s", out)
	}

	text, code, _ := runCLI(t, "inspect", path)
	if code != 0 || !strings.Contains(text, "episodes") || !strings.Contains(text, "iota") {
		t.Errorf("text output (exit %d):\n%s", code, text)
	}
}

func TestInspectExitCodes(t *testing.T) {
	bad := writeInspectLogs(t, []inspectRow{
		{1, 1, "x", "l", 1, 0.5, false},
		{1, 1, "x", "l", 1, 0.5, false},
		{2, 1, "x", "l", 1, 0.5, false},
	})
	_, code, err := runCLI(t, "inspect", bad)
	if code != exitData || !strings.Contains(err.Error(), `episode "1" step 1: duplicate step`) {
		t.Errorf("duplicate: exit %d, err %v; want %d", code, err, exitData)
	}
	out, code, err := runCLI(t, "inspect", "--on-invalid=skip", "--json", bad)
	if code != 0 || !strings.Contains(out, `"quarantined": 1`) {
		t.Errorf("skip: exit %d, err %v\n%s", code, err, out)
	}
	if _, code, _ := runCLI(t, "inspect", filepath.Join(t.TempDir(), "absent.parquet")); code != exitIO {
		t.Errorf("absent file: exit %d, want %d", code, exitIO)
	}
	if _, code, _ := runCLI(t, "inspect"); code != exitUsage {
		t.Errorf("no files: exit %d, want %d", code, exitUsage)
	}
	if _, code, _ := runCLI(t, "inspect", "--on-invalid=maybe", bad); code != exitUsage {
		t.Errorf("bad --on-invalid: exit %d, want %d", code, exitUsage)
	}
	if _, code, _ := runCLI(t, "inspect", "--col-observation=action", bad); code != exitUsage {
		t.Errorf("one column for two roles: exit %d, want %d", code, exitUsage)
	}
	// A mapped column name that is absent is a data error.
	if _, code, err := runCLI(t, "inspect", "--col-reward=gain", bad); code != exitData {
		t.Errorf("missing mapped column: exit %d (%v), want %d", code, err, exitData)
	}
}
