package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/explore"
	"github.com/psrlcb/psrlcb/ingest"
)

// TestExploreCommands: `simulate-online` writes rounds.arrow and tagged
// logs; `explore` on those logs writes H exploration files and a
// termination statistic equal to explore.Round's on the same logs and
// options; `explore-act` serves a file with the documented propensities;
// logs without the tag columns are a data error.
func TestExploreCommands(t *testing.T) {
	model := writeText(t, "tiger.pomdp", tigerText(t))
	dir := t.TempDir()
	sim := filepath.Join(dir, "sim")
	msg, code, err := runCLI(t, "simulate-online", "--pomdp", model, "--horizon", "3", "--batch", "20", "--rounds", "2",
		"--rank", "2", "--restarts", "1", "--alpha", "0.5", "--seed", "3", "--out", sim)
	if code != 0 {
		t.Fatalf("simulate-online: exit %d: %v\n%s", code, err, msg)
	}
	rounds, err := arrowio.ReadArrow(filepath.Join(sim, "rounds.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	if n := rounds.Rows(); n < 1 || n > 2 {
		t.Fatalf("rounds.arrow has %d rows", n)
	}
	for _, name := range []string{"bonus_value", "threshold", "tv_uniform", "tv_optimal", "regret", "total_episodes"} {
		if _, ok := rounds.Column(name); !ok {
			t.Fatalf("rounds.arrow lacks %s", name)
		}
	}
	logs := filepath.Join(sim, "logs.parquet")

	out := filepath.Join(dir, "explore")
	msg, code, err = runCLI(t, "explore", "--rank", "2", "--restarts", "1", "--alpha", "0.5", "--seed", "7", "--out", out, logs)
	if code != 0 {
		t.Fatalf("explore: exit %d: %v\n%s", code, err, msg)
	}
	var tf explore.Termination
	b, err := os.ReadFile(filepath.Join(out, "termination.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &tf); err != nil {
		t.Fatal(err)
	}
	d, err := ingest.Read(context.Background(), []string{logs}, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tags, err := explore.ReadTags(context.Background(), []string{logs}, explore.TagColumns{})
	if err != nil {
		t.Fatal(err)
	}
	steps, err := explore.StepsOf(d.EpisodeIDs, tags, 3)
	if err != nil {
		t.Fatal(err)
	}
	want, err := explore.Round(context.Background(), d, steps, explore.Options{Alpha: 0.5,
		Estimate: estimate.Options{Rank: 2, Restarts: 1, Seed: 7, Dynamics: estimate.DynamicsStationary}})
	if err != nil {
		t.Fatal(err)
	}
	if tf.BonusValue != want.BonusValue || tf.Terminated != want.Terminated || tf.Threshold != 0.1 {
		t.Fatalf("termination.json %+v; explore.Round gives %v (terminated %v)", tf, want.BonusValue, want.Terminated)
	}
	if tf.Episodes != d.NumEpisodes() || tf.NextRound != int64(rounds.Rows())+1 {
		t.Fatalf("termination.json %+v for %d episodes and %d rounds", tf, d.NumEpisodes(), rounds.Rows())
	}
	for h := 1; h <= 3; h++ {
		if _, err := os.Stat(filepath.Join(out, explore.PolicyFileName(h))); err != nil {
			t.Fatal(err)
		}
	}
	_, errTerm := os.Stat(filepath.Join(out, "policy.arrow"))
	if (errTerm == nil) != tf.Terminated {
		t.Fatalf("policy.arrow present: %v, terminated: %v", errTerm == nil, tf.Terminated)
	}

	// explore-act: step 2 of the h = 2 file is uniform.
	msg, code, err = runCLI(t, "explore-act", "--policy", filepath.Join(out, "policy-h2.arrow"), "--history", "init,listen,hear-left", "--u", "0.9")
	if code != 0 {
		t.Fatalf("explore-act: exit %d: %v\n%s", code, err, msg)
	}
	var act struct {
		Action      string  `json:"action"`
		Propensity  float64 `json:"propensity"`
		ExploreStep int     `json:"explore_step"`
		Round       int     `json:"round"`
	}
	if err := json.Unmarshal([]byte(msg), &act); err != nil {
		t.Fatalf("%v: %q", err, msg)
	}
	if act.Action != "open-right" || act.Propensity != 1.0/3 || act.ExploreStep != 2 || act.Round != int(tf.NextRound) {
		t.Fatalf("explore-act %+v, want open-right (u = 0.9 of listen,open-left,open-right) with 1/3", act)
	}
	if _, code, _ = runCLI(t, "explore-act", "--policy", filepath.Join(out, "policy-h2.arrow"), "--history", "init,listen,hear-left"); code != exitUsage {
		t.Fatalf("uniform step without --u: exit %d, want %d", code, exitUsage)
	}

	// Logs without the tag columns.
	plain := filepath.Join(dir, "plain.parquet")
	if _, code, err = runCLI(t, "simulate", "--pomdp", model, "--horizon", "3", "--episodes", "20", "--out", plain); code != 0 {
		t.Fatal(err)
	}
	_, code, err = runCLI(t, "explore", "--out", filepath.Join(dir, "bad"), plain)
	if code != exitData || !strings.Contains(errString(err), `no column "round"`) {
		t.Fatalf("untagged logs: exit %d (%v), want %d naming the round column", code, err, exitData)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad")); err == nil {
		t.Fatal("a failed explore left its output directory")
	}
	if _, code, _ = runCLI(t, "explore", logs); code != exitUsage {
		t.Fatalf("no --out: exit %d, want %d", code, exitUsage)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
