package estimate

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestDistinctHistories counts by hand: two episodes share their first
// two steps and part at the third observation; another differs in its
// first action.
func TestDistinctHistories(t *testing.T) {
	d := uniformDataset(4, 3, 3, 2, 1)
	copy(d.Obs, []uint16{0, 1, 2, 0, 1, 0, 0, 1, 2, 0, 1, 2})
	copy(d.Act, []uint16{0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0})
	kind, vals := rewardSupport(d.Reward)
	c := code(d, kind, vals)
	// Step 1: one history (o=0). Step 2: (0,0,1) and (0,1,1). Step 3:
	// (0,0,1,0,2), (0,0,1,0,0), (0,1,1,0,2): three, episode 4 repeats 1.
	if got := distinctHistories(c, 100); got != 3 {
		t.Fatalf("distinct histories %d, want 3", got)
	}
	if got := distinctHistories(c, 2); got != 2 {
		t.Fatalf("counting stops at 2: got %d", got)
	}
}

// TestRankCap: an explicit rank above the logs' distinct histories is
// lowered to their number, and the automatic rank capped there, with the
// cause recorded.
func TestRankCap(t *testing.T) {
	d := uniformDataset(200, 2, 2, 2, 3) // at most 2·2·2 = 8 histories at step 2
	kind, vals := rewardSupport(d.Reward)
	D := distinctHistories(code(d, kind, vals), 100)
	if D > 8 || D < 2 {
		t.Fatalf("%d distinct histories", D)
	}
	res, err := Fit(t.Context(), d, Options{Rank: D + 1, Restarts: 1, MaxIter: 2})
	if err != nil || res.Model.States != D || !strings.Contains(res.Options.MaxRankCause, fmt.Sprintf("rank %d was asked", D+1)) {
		t.Fatalf("rank %d on %d distinct histories: %v (%q)", D+1, D, err, res.Options.MaxRankCause)
	}
	if res, err := Fit(t.Context(), d, Options{Rank: D, Restarts: 1, MaxIter: 2}); err != nil || res.Options.MaxRankCause != "" {
		t.Fatalf("rank %d: %v", D, err)
	}
	rc, err := ChooseRank(t.Context(), d, Options{MaxIter: 5})
	if err != nil {
		t.Fatal(err)
	}
	if rc.MaxRank != D || !strings.Contains(rc.MaxRankCause, "distinct histories") {
		t.Fatalf("automatic rank searched up to %d (%q), want %d", rc.MaxRank, rc.MaxRankCause, D)
	}
}

// TestRankCapParameters: with thousands of actions and a few logged steps
// per action, the automatic rank is capped at the largest rank whose free
// parameters the steps outnumber (counted by hand here).
func TestRankCapParameters(t *testing.T) {
	d := uniformDataset(300, 4, 3, 500, 5) // 1200 steps
	rc, err := ChooseRank(t.Context(), d, Options{MaxIter: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Full form (500·3·V·S² stays small): S = 1 has 500·2 = 1000 free
	// parameters ≤ 1200; S = 2 has 500·2 + 1000·2 + 1 = 3001 > 1200.
	if rc.MaxRank != 1 || rc.Rank != 1 || !strings.Contains(rc.MaxRankCause, "3001 free") {
		t.Fatalf("searched to %d, chose %d (%q); want 1, 1", rc.MaxRank, rc.Rank, rc.MaxRankCause)
	}
}

// TestAutoFormFallsBackToCompact: when the full form's tables are small
// enough to be the automatic choice but its fit does not fit the memory
// limit, the compact form is used if it fits.
func TestAutoFormFallsBackToCompact(t *testing.T) {
	d := uniformDataset(300, 4, 2000, 3, 7)
	kind, vals := rewardSupport(d.Reward)
	c := code(d, kind, vals)
	o, _ := Options{Rank: 8, Restarts: 1}.withDefaults()
	if chooseForm(FormAuto, c, 8, 1) {
		t.Fatal("the full form should be the size-based choice here")
	}
	full, compact := memoryNeed(c, 8, 1, false, &o), memoryNeed(c, 8, 1, true, &o)
	if !(compact < full) {
		t.Fatalf("compact %v, full %v", compact, full)
	}
	limit := int64((compact + full) / 2)
	res, err := Fit(t.Context(), d, Options{Rank: 8, Restarts: 1, MaxIter: 2, MemoryLimit: limit})
	if err != nil || !res.Model.Compact {
		t.Fatalf("limit between the forms' needs: %v (compact %v)", err, res != nil && res.Model.Compact)
	}
	if _, err := Fit(t.Context(), d, Options{Rank: 8, Restarts: 1, MaxIter: 2, MemoryLimit: limit, Form: FormFull}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("an explicit full form is not replaced: %v", err)
	}
}
