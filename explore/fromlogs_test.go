package explore

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
)

// TestRoundFromLogs: the round read back from tagged logs equals Round on
// the same episodes and switch steps, and WriteRound writes the H policy
// files, the model and a termination.json equal to the record.
func TestRoundFromLogs(t *testing.T) {
	m := parseTiny(t)
	const H = 2
	logs, steps, err := Collect(context.Background(), m, H, nil, 15, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "logs.parquet")
	rounds := make([]int, len(steps))
	if err := WriteTaggedParquet(path, logs, rounds, steps); err != nil {
		t.Fatal(err)
	}
	opts := Options{Alpha: 0.5, Epsilon: 0.1, Estimate: estimate.Options{Rank: 2, Restarts: 1, Seed: 1}}
	lr, err := RoundFromLogs(context.Background(), []string{path}, ingest.Options{}, TagColumns{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if lr.Round != 0 || lr.Termination.NextRound != 1 || lr.Termination.Episodes != len(steps) || len(lr.Termination.SplitSizes) != H {
		t.Errorf("termination record %+v", lr.Termination)
	}
	total := 0
	for _, n := range lr.Termination.SplitSizes {
		total += n
	}
	if total != len(steps) {
		t.Errorf("split sizes %v do not add up to %d episodes", lr.Termination.SplitSizes, len(steps))
	}
	if lr.Termination.BonusValue != lr.Result.BonusValue || lr.Termination.Terminated != (lr.Result.BonusValue <= lr.Result.Threshold) {
		t.Errorf("statistic %v, threshold %v, terminated %v", lr.Termination.BonusValue, lr.Result.Threshold, lr.Termination.Terminated)
	}
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	if err := WriteRound(context.Background(), out, lr); err != nil {
		t.Fatal(err)
	}
	for h := 1; h <= H; h++ {
		if _, err := ReadPolicy(filepath.Join(out, PolicyFileName(h))); err != nil {
			t.Errorf("policy file %d: %v", h, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, ModelFileName)); err != nil {
		t.Error(err)
	}
	b, err := os.ReadFile(filepath.Join(out, TerminationFileName))
	if err != nil {
		t.Fatal(err)
	}
	var got Termination
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, lr.Termination) {
		t.Errorf("termination.json %+v, record %+v", got, lr.Termination)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := WriteRound(ctx, t.TempDir(), lr); err == nil {
		t.Error("WriteRound ignored a cancelled context")
	}
}
