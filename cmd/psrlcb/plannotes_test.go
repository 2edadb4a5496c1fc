package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/policy"
)

// TestBeliefPlanNotesPointsTried: the fit's summary tells a capped plan
// whose gap stays above the target that more --plan-points may close it,
// unless the gap search added beliefs and the plan with them was no
// better: then it says they are unlikely to.
func TestBeliefPlanNotesPointsTried(t *testing.T) {
	tried := policy.PlanStats{Planner: policy.PlannerBelief, Points: 500, GapBound: 0.0481, PointsCapped: true, GapTrials: 64, GapPoints: 354}
	replanned, none := tried, tried
	replanned.GapReplanned = true
	none.GapPoints = 0
	for _, c := range []struct {
		name       string
		pl         policy.PlanStats
		want, lack string
	}{
		{"tried", tried, "but the 354 the gap search added gave no better plan, so more --plan-points are unlikely to close it", "may close it"},
		{"replanned", replanned, "more --plan-points may close it", "unlikely"},
		{"none added", none, "more --plan-points may close it", "unlikely"},
	} {
		var buf bytes.Buffer
		printBeliefPlanNotes(&buf, &c.pl)
		if text := buf.String(); !strings.Contains(text, c.want) || strings.Contains(text, c.lack) {
			t.Errorf("%s: want %q and not %q in the summary:\n%s", c.name, c.want, c.lack, text)
		}
	}
}

// TestBeliefPlanNotesGapAlpha: the summary's stated gap names the
// planning α, the objective it is of.
func TestBeliefPlanNotesGapAlpha(t *testing.T) {
	var buf bytes.Buffer
	printBeliefPlanNotes(&buf, &policy.PlanStats{Planner: policy.PlannerBelief, Points: 500, Alpha: 0.3, GapBound: 0.0481, Nodes: 7})
	if want := "within 0.0481 of the optimum at the planning α = 0.3 (share of the logged return range)"; !strings.Contains(buf.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, buf.String())
	}
}
