package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
	"unsafe"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
)

// withGCPercent runs f with the garbage collector's target set to p.
func withGCPercent(p int, f func()) {
	old := debug.SetGCPercent(p)
	defer debug.SetGCPercent(old)
	f()
}

// TestHeldBytes: counted by hand for two episodes of three steps with ids
// "a" and "bb": 6 steps × (2+2+8+1+4) = 102 bytes, 3 bytes of ids, and two
// episodes × (16+4+8+4+32) = 128 bytes; propensities add 6 × 8.
func TestHeldBytes(t *testing.T) {
	d := &ingest.Dataset{Horizon: 3, EpisodeIDs: []string{"a", "bb"}, Length: []int32{3, 3},
		Obs: make([]uint16, 6), Act: make([]uint16, 6), Reward: make([]float64, 6)}
	if got := heldBytes(d, false); got != 102+3+128 {
		t.Errorf("held bytes %d, want 233", got)
	}
	d.Propensity = make([]float64, 6)
	if got := heldBytes(d, false); got != 233+48 {
		t.Errorf("with propensities: %d, want 281", got)
	}
	// Spilled, a step keeps 1+4 bytes on the heap: 30 + 3 + 128.
	if got := heldBytes(d, true); got != 30+3+128 {
		t.Errorf("spilled: %d, want 161", got)
	}
}

// TestTableRows: the row budget is the table rows that fit in the live
// share of the limit beside the logs, never more than asked, never fewer
// than minTableRows; no limit leaves it alone.
func TestTableRows(t *testing.T) {
	d := &ingest.Dataset{Horizon: 3, EpisodeIDs: []string{"a", "bb"}, Length: []int32{3, 3},
		Obs: make([]uint16, 6), Act: make([]uint16, 6), Reward: make([]float64, 6)}
	row := 2*int64(unsafe.Sizeof(policy.Node{})) + 8
	if row != tableRowBytes {
		t.Fatalf("row bytes %d, want %d", tableRowBytes, row)
	}
	withGCPercent(25, func() {
		// live budget 100/125 of the limit: 125 MB → 100 MB; minus 233
		// bytes; half of it for the table.
		limit := int64(125_000_000)
		if got := liveBudget(limit); got != 100_000_000 {
			t.Fatalf("live budget %d, want 100000000", got)
		}
		want := (100_000_000 - 233) / 2 / row
		got, note := tableRows(10_000_000, d, false, limit)
		if got != want || !strings.Contains(note, "--memory-limit 119 MiB") {
			t.Errorf("table rows %d (%q), want %d", got, note, want)
		}
		if got, note := tableRows(1000, d, false, limit); got != 1000 || note != "" {
			t.Errorf("a budget that fits: %d, %q; want 1000 and no note", got, note)
		}
		if got, _ := tableRows(10_000_000, d, false, 1<<20); got != minTableRows {
			t.Errorf("a tiny limit: %d rows, want the floor %d", got, minTableRows)
		}
		if got, note := tableRows(10_000_000, d, false, 0); got != 10_000_000 || note != "" {
			t.Errorf("no limit: %d, %q", got, note)
		}
	})
	withGCPercent(-1, func() {
		if got := liveBudget(1000); got != 1000 {
			t.Errorf("GC off: live budget %d, want the limit", got)
		}
	})
}

// TestBoundMemory: the gap's bound holds what half of the live budget
// left by the logs leaves beside the table, when that is below
// policy.DefaultBoundMemory, at least a byte; with room for the default,
// or no limit, the default (0) and no note.
func TestBoundMemory(t *testing.T) {
	d := &ingest.Dataset{Horizon: 3, EpisodeIDs: []string{"a", "bb"}, Length: []int32{3, 3},
		Obs: make([]uint16, 6), Act: make([]uint16, 6), Reward: make([]float64, 6)}
	withGCPercent(25, func() {
		// live budget 100 MB, less the logs' 233 bytes, halved, less
		// 1000 rows of the table.
		got, note := boundMemory(d, false, 125_000_000, 1000)
		if want := (100_000_000-233)/2 - 1000*tableRowBytes; got != want || !strings.Contains(note, "--memory-limit 119 MiB") {
			t.Errorf("bound memory %d (%q), want %d", got, note, want)
		}
		if got, note := boundMemory(d, false, 8<<30, 1000); got != 0 || note != "" {
			t.Errorf("8 GiB: %d, %q; want the default (0) and no note", got, note)
		}
		if got, _ := boundMemory(d, false, 1<<10, 1000); got != 1 {
			t.Errorf("1 KiB: %d, want 1", got)
		}
		if got, note := boundMemory(d, false, 0, 1000); got != 0 || note != "" {
			t.Errorf("no limit: %d, %q", got, note)
		}
	})
}

// TestMemoryLimitRefusesBeforeReading: logs whose steps' heap part alone
// (the reward code and the bonus term, 5 bytes a step) exceeds the
// limit are refused as an options error naming the limit, before they
// are read (the input's footers only are opened).
func TestMemoryLimitRefusesBeforeReading(t *testing.T) {
	logs := []string{filepath.Join("..", "examples", "tiger-logs.parquet")}
	rows := logRows(t, logs)
	withGCPercent(25, func() {
		limit := (rows*heapStepBytes - 1) * 125 / 100
		_, err := Run(context.Background(), logs, Options{MemoryLimit: limit})
		if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), "--memory-limit") {
			t.Fatalf("err = %v, want an options error naming --memory-limit", err)
		}
		if err := checkSpilledMemory(rows, (rows*heapStepBytes)*125/100); err != nil {
			t.Errorf("a limit the heap part fits: %v", err)
		}
	})
	if heapStepBytes != 5 {
		t.Errorf("heap bytes of a spilled step %d, want 5 (reward code 1, bonus term 4)", heapStepBytes)
	}
}

// TestSpilledRunEqualsHeapRun: with a memory limit the steps exceed by
// half, the step arrays go to a spill file in the given directory (gone
// from it once mapped), the manifest says so, and the run is the heap
// run: the same dataset, policy rows and bound. The spill directory's
// file system is named in the note only when it is held in memory.
func TestSpilledRunEqualsHeapRun(t *testing.T) {
	if testing.Short() {
		t.Skip("fits the example logs twice")
	}
	logs := []string{filepath.Join("..", "examples", "tiger-logs.parquet")}
	rows := logRows(t, logs)
	base := Options{Estimate: estimate.Options{Rank: 2, Restarts: 1, MaxIter: 30},
		Alpha: pessimism.AlphaSpec{Mode: pessimism.AlphaFixed, Values: []float64{0.3}}, Seed: 1}
	heap, err := Run(context.Background(), logs, base)
	if err != nil {
		t.Fatal(err)
	}
	defer heap.Close()
	dir := t.TempDir()
	withGCPercent(25, func() {
		o := base
		// Live budget: 10 bytes a row, more than the 5 the heap keeps
		// of a spilled step, less than twice the 17 of a held one.
		o.MemoryLimit = rows * 10 * 125 / 100
		o.SpillDir = dir
		res, err := Run(context.Background(), logs, o)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Close()
		if res.spilled == nil || res.spilled.arena == nil {
			t.Fatal("the step arrays were not spilled")
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("spill directory holds %v", ents)
		}
		note := strings.Join(res.Run.Manifest.Notes, "\n")
		if !strings.Contains(note, "spill file in "+dir) {
			t.Errorf("no spill note in %q", note)
		}
		if !reflect.DeepEqual(res.Data.Obs, heap.Data.Obs) || !reflect.DeepEqual(res.Data.Reward, heap.Data.Reward) ||
			!reflect.DeepEqual(res.Data.Propensity, heap.Data.Propensity) || !reflect.DeepEqual(res.Data.EpisodeIDs, heap.Data.EpisodeIDs) {
			t.Fatal("the spilled dataset differs from the heap one")
		}
		if !reflect.DeepEqual(res.Policy.Nodes, heap.Policy.Nodes) || res.Bound != heap.Bound {
			t.Fatalf("spilled run: %d rows, bound %+v; heap run: %d rows, bound %+v", len(res.Policy.Nodes), res.Bound, len(heap.Policy.Nodes), heap.Bound)
		}
		// Below the 5 heap bytes of a spilled step: refused.
		o.MemoryLimit = rows * 4 * 125 / 100
		if _, err := Run(context.Background(), logs, o); !errors.Is(err, ErrOptions) {
			t.Fatalf("a limit below the heap's part: %v", err)
		}
	})
}

// TestRunIDIgnoresAnUnusedMemoryLimit: two limits that cut nothing give
// one run id (the limit is recorded, not hashed); a limit that lowers the
// table's row budget is part of the id.
func TestRunIDIgnoresAnUnusedMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("fits the example logs three times")
	}
	logs := []string{filepath.Join("..", "examples", "tiger-logs.parquet")}
	base := Options{Estimate: estimate.Options{Rank: 2, Restarts: 1, MaxIter: 30},
		Alpha: pessimism.AlphaSpec{Mode: pessimism.AlphaFixed, Values: []float64{0.3}}, Seed: 1, PlanRows: 10_000_000}
	ids := map[int64]string{}
	for _, limit := range []int64{0, 16 << 30, 32 << 30, 64 << 20} {
		o := base
		o.MemoryLimit = limit
		res, err := Run(context.Background(), logs, o)
		if err != nil {
			t.Fatal(err)
		}
		res.Close()
		if got := res.Run.Manifest.Parameters["memory_limit"]; got != limit {
			t.Errorf("limit %d recorded as %v", limit, got)
		}
		ids[limit] = res.Run.RunID
	}
	if ids[0] != ids[16<<30] || ids[0] != ids[32<<30] {
		t.Errorf("run ids %v: limits that cut nothing changed the id", ids)
	}
	if ids[64<<20] == ids[0] {
		t.Errorf("a limit that lowered the row budget kept the run id %s", ids[0])
	}
}

// logRows is the row count of the logs' footers.
func logRows(t *testing.T, logs []string) int64 {
	t.Helper()
	groups, err := ingest.ListRowGroups(logs, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, g := range groups {
		rows += g.Rows
	}
	return rows
}
