package pipeline

import (
	"context"
	"errors"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"unsafe"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
)

// withGCPercent runs f with the garbage collector's target set to p.
func withGCPercent(p int, f func()) {
	old := debug.SetGCPercent(p)
	defer debug.SetGCPercent(old)
	f()
}

// TestHeldBytes: counted by hand for two episodes of three steps with ids
// "a" and "bb": 6 steps × (2+2+8+1+8) = 126 bytes, 3 bytes of ids, and two
// episodes × (16+4+4+32+4) = 120 bytes; propensities add 6 × 8.
func TestHeldBytes(t *testing.T) {
	d := &ingest.Dataset{Horizon: 3, EpisodeIDs: []string{"a", "bb"}, Length: []int32{3, 3},
		Obs: make([]uint16, 6), Act: make([]uint16, 6), Reward: make([]float64, 6)}
	if got := heldBytes(d); got != 126+3+120 {
		t.Errorf("held bytes %d, want 249", got)
	}
	d.Propensity = make([]float64, 6)
	if got := heldBytes(d); got != 249+48 {
		t.Errorf("with propensities: %d, want 297", got)
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
		// live budget 100/125 of the limit: 125 MB → 100 MB; minus 249 bytes.
		limit := int64(125_000_000)
		if got := liveBudget(limit); got != 100_000_000 {
			t.Fatalf("live budget %d, want 100000000", got)
		}
		want := (100_000_000 - 249) / row
		got, note := tableRows(10_000_000, d, limit)
		if got != want || !strings.Contains(note, "--memory-limit 119 MiB") {
			t.Errorf("table rows %d (%q), want %d", got, note, want)
		}
		if got, note := tableRows(1000, d, limit); got != 1000 || note != "" {
			t.Errorf("a budget that fits: %d, %q; want 1000 and no note", got, note)
		}
		if got, _ := tableRows(10_000_000, d, 1<<20); got != minTableRows {
			t.Errorf("a tiny limit: %d rows, want the floor %d", got, minTableRows)
		}
		if got, note := tableRows(10_000_000, d, 0); got != 10_000_000 || note != "" {
			t.Errorf("no limit: %d, %q", got, note)
		}
	})
	withGCPercent(-1, func() {
		if got := liveBudget(1000); got != 1000 {
			t.Errorf("GC off: live budget %d, want the limit", got)
		}
	})
}

// TestMemoryLimitRefusesBeforeReading: logs whose steps alone exceed the
// limit are refused as an options error naming the limit, before they are
// read; a limit they fit in runs.
func TestMemoryLimitRefusesBeforeReading(t *testing.T) {
	logs := []string{filepath.Join("..", "examples", "tiger-logs.parquet")}
	groups, err := ingest.ListRowGroups(logs, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, g := range groups {
		rows += g.Rows
	}
	withGCPercent(25, func() {
		// The steps need rows × 21 bytes; a limit whose live share is one
		// byte short is refused.
		limit := (rows*stepBytes - 1) * 125 / 100
		_, err := Run(context.Background(), logs, Options{MemoryLimit: limit})
		if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), "--memory-limit") {
			t.Fatalf("err = %v, want an options error naming --memory-limit", err)
		}
		if err := checkMemory(rows, (rows*stepBytes)*125/100, false); err != nil {
			t.Errorf("a limit the steps fit: %v", err)
		}
		if err := checkMemory(rows, (rows*stepBytes)*125/100, true); err == nil {
			t.Error("propensities need more: no error")
		}
	})
}
