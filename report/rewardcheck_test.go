package report

import (
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
)

// TestVerdictFlagsMiscalibration: a flagged reward check adds a warning to
// the verdict, an unflagged one none.
func TestVerdictFlagsMiscalibration(t *testing.T) {
	run := &Run{}
	run.Manifest.RewardCheck = &RewardCheck{HeldOut: true, Calibration: estimate.Calibration{Cells: 40, Miscalibrated: 9, MiscalibratedShare: 0.3, MinCount: 30, Flagged: true}}
	if v := strings.Join(Verdict(run), " "); !strings.Contains(v, "miscalibrated on held-out episodes") {
		t.Fatalf("verdict without the warning: %s", v)
	}
	run.Manifest.RewardCheck.Calibration.Flagged = false
	if v := strings.Join(Verdict(run), " "); strings.Contains(v, "miscalibrated") {
		t.Fatalf("verdict warns on a calibrated model: %s", v)
	}
}
