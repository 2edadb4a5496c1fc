package report

import (
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/policy"
)

// TestPlanNotesSecondOpinion: the notes say what the pruned search that
// planned beside the belief planner did: capped the stated gap, left it,
// or replaced the plan; and say nothing of it when it did not run.
func TestPlanNotesSecondOpinion(t *testing.T) {
	belief := policy.PlanStats{Planner: policy.PlannerBelief, Points: 500, GapBound: 0.0067, BeliefGap: 0.034, SearchGap: 0.0069}
	for _, c := range []struct {
		name string
		pl   policy.PlanStats
		want []string
	}{
		{"capped", belief, []string{"stated a gap of 0.034", "(0.0069) caps the optimum and brings the stated gap to 0.0067"}},
		{"left", policy.PlanStats{Planner: policy.PlannerBelief, Points: 500, GapBound: 0.061, BeliefGap: 0.061, SearchGap: 0.31, PointsCapped: true},
			[]string{"stated a gap of 0.061", "its gap bound (0.31) did not tighten", "more points (--plan-points)"}},
		{"replaced", policy.PlanStats{Planner: "search", GapBound: 1e-15, BeliefGap: 0.141, PrunedMass: 2e-14, Epsilon: 3e-17},
			[]string{"within 1e-15 of the exact optimum", "stated a gap of 0.141; this search's policy is certainly better", "probability 2e-14", ControllerFile}},
		{"not run", policy.PlanStats{Planner: policy.PlannerBelief, Points: 500, GapBound: 0.01}, nil},
	} {
		text := strings.Join(planNotes(&c.pl), "\n")
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: notes lack %q:\n%s", c.name, w, text)
			}
		}
		if c.want == nil && (strings.Contains(text, "pruned search") || strings.Contains(text, "second opinion")) {
			t.Errorf("%s: notes speak of a search that did not run:\n%s", c.name, text)
		}
	}
}

// TestPlanNotesHullBound: a belief plan stating a gap above the target
// without the hull bound is told that --hull-bound may state a tighter
// one; with it, the notes say the bound was the hull's; under the target
// without it, they say nothing of it.
func TestPlanNotesHullBound(t *testing.T) {
	for _, c := range []struct {
		name       string
		pl         policy.PlanStats
		want, lack string
	}{
		{"above", policy.PlanStats{Planner: policy.PlannerBelief, Points: 500, GapBound: 0.027, PointsCapped: true}, "--hull-bound states it against a tighter bound", "convex hull (--hull-bound)"},
		{"hull", policy.PlanStats{Planner: policy.PlannerBelief, Points: 500, GapBound: 0.0235, PointsCapped: true, HullBound: true}, "convex hull (--hull-bound)", "states it against a tighter bound"},
		{"below", policy.PlanStats{Planner: policy.PlannerBelief, Points: 500, GapBound: 0.01}, "", "--hull-bound"},
	} {
		text := strings.Join(planNotes(&c.pl), "\n")
		if c.want != "" && !strings.Contains(text, c.want) {
			t.Errorf("%s: notes lack %q:\n%s", c.name, c.want, text)
		}
		if strings.Contains(text, c.lack) {
			t.Errorf("%s: notes say %q:\n%s", c.name, c.lack, text)
		}
	}
}

// TestPlanNotesGapSearch: the notes say when the gap search ran, how
// many beliefs it added and which plan was kept, and nothing when it did
// not run.
func TestPlanNotesGapSearch(t *testing.T) {
	for _, c := range []struct {
		name string
		pl   policy.PlanStats
		want string
	}{
		{"replanned", policy.PlanStats{Planner: policy.PlannerBelief, Points: 500, GapBound: 0.0177, GapTrials: 41, GapPoints: 612, GapReplanned: true}, "(41 trials), backed the bound up there and added the 612 beliefs it passed to the plan's points; the plan with them was the better one"},
		{"kept", policy.PlanStats{Planner: policy.PlannerBelief, Points: 500, GapBound: 0.0265, GapTrials: 64, GapPoints: 500, PointsCapped: true}, "the first plan stayed the better one"},
		{"not run", policy.PlanStats{Planner: policy.PlannerBelief, Points: 500, GapBound: 0.01}, ""},
	} {
		text := strings.Join(planNotes(&c.pl), "\n")
		if c.want != "" && !strings.Contains(text, c.want) {
			t.Errorf("%s: notes lack %q:\n%s", c.name, c.want, text)
		}
		if c.want == "" && strings.Contains(text, "gap search") {
			t.Errorf("%s: notes speak of a gap search that did not run:\n%s", c.name, text)
		}
	}
}

// TestPlanNotesBoundsGap: a belief plan whose stated gap is above the
// target is told the gap is the bound's, not that more points or
// --hull-bound may close it, when its expected bonus is near the cap
// (saturated) or when at least half of the gap is the bound's chord
// deficit at the policy itself (hallway at H = 20, α = 0.3: gap 0.083,
// deficit 0.06), saying so when the deficit is the whole gap and naming
// the charge the bound used (the chord, or the Cauchy–Schwarz charge of
// PlanStats.BoundCharge); with a
// small bonus, or a deficit under half the gap, it gets the advice on
// points.
func TestPlanNotesBoundsGap(t *testing.T) {
	sat := policy.PlanStats{Planner: policy.PlannerBelief, Points: 500, Alpha: 3, GapBound: 0.69, ValueBonus: 0.88, PointsCapped: true}
	chord := policy.PlanStats{Planner: policy.PlannerBelief, Points: 500, Alpha: 0.3, GapBound: 0.083, ValueBonus: 0.1, BonusBoundGap: 0.06, PointsCapped: true}
	smallBonus, smallDeficit, whole, cs := sat, chord, chord, chord
	smallBonus.ValueBonus, smallDeficit.BonusBoundGap, whole.BonusBoundGap = 0.01, 0.03, chord.GapBound
	cs.BoundCharge, cs.GapBound, cs.BonusBoundGap = "cauchy-schwarz", 0.0665, 0.0403
	for _, c := range []struct {
		name  string
		pl    policy.PlanStats
		wants []string
		not   string // a phrase of the other rule's note, absent with points advice
	}{
		{"saturated", sat, []string{"expected bonus is 0.88 of its cap", "more points would not close it"}, ""},
		{"chord", chord, []string{"overvalues this very policy by at least 0.06 of it:", "expected bonus (0.1, α = 0.3)", "Were the policy optimal, the stated gap would still be at least 0.06"}, ""},
		{"chord named", chord, []string{"a straight line in Σ below the bonus"}, ""},
		{"cauchy-schwarz", cs, []string{"by at least 0.0403 of it:", "the step terms' square roots", "Cauchy–Schwarz"}, ""},
		{"whole gap", whole, []string{"by at least 0.083 of it (all of it: the bound cannot tell this policy from the optimum)"}, ""},
		{"small bonus", smallBonus, nil, "of its cap"},
		{"small deficit", smallDeficit, nil, "overvalues this very policy"},
	} {
		text := strings.Join(planNotes(&c.pl), "\n")
		for _, w := range c.wants {
			if !strings.Contains(text, w) {
				t.Errorf("%s: notes lack %q:\n%s", c.name, w, text)
			}
		}
		advises := strings.Contains(text, "--plan-points") || strings.Contains(text, "--hull-bound states")
		if wantAdvice := c.wants == nil; advises != wantAdvice || (c.not != "" && strings.Contains(text, c.not)) {
			t.Errorf("%s: points advice %v (want %v), notes:\n%s", c.name, advises, wantAdvice, text)
		}
	}
}

// TestGapSearchNoteCounts: the gap search's note counts its trials and
// beliefs in the singular and plural, and says when the trials passed
// no new belief rather than "added the 0 beliefs".
func TestGapSearchNoteCounts(t *testing.T) {
	for _, c := range []struct {
		trials, points int
		want, not      string
	}{
		{1, 0, "(1 trial), backed the bound up there and passed no belief the plan's points lacked", "added the 0"},
		{3, 1, "(3 trials), backed the bound up there and added the 1 belief it passed", "beliefs it passed"},
		{64, 27, "(64 trials), backed the bound up there and added the 27 beliefs it passed", "trial)"},
	} {
		text := GapSearchNote(&policy.PlanStats{GapTrials: c.trials, GapPoints: c.points})
		if !strings.Contains(text, c.want) || strings.Contains(text, c.not) {
			t.Errorf("%d trials, %d points: %q", c.trials, c.points, text)
		}
	}
}

// TestGapReasonOf: the reason given for a belief plan's stated gap, in
// order: met, the bound overvaluing the policy itself, a saturated
// bonus, then, with the points capped, the gap search's beliefs having
// given no better plan (GapPointsTried) or not (more points may close it),
// and otherwise the bound's relaxation. The report's note for the
// gap search's case names its beliefs and says more points are unlikely
// to close the gap.
func TestGapReasonOf(t *testing.T) {
	tried := policy.PlanStats{Planner: policy.PlannerBelief, Points: 500, Alpha: 0.3, GapBound: 0.0481, ValueBonus: 0.1, PointsCapped: true, GapTrials: 64, GapPoints: 354}
	met, chord, sat, replanned, none, uncapped := tried, tried, tried, tried, tried, tried
	met.GapBound = 0.02
	chord.BonusBoundGap = 0.03
	sat.ValueBonus = 0.6
	replanned.GapReplanned = true
	none.GapPoints = 0
	uncapped.PointsCapped = false
	for _, c := range []struct {
		name string
		pl   policy.PlanStats
		want GapReason
	}{
		{"met", met, GapMet}, {"chord", chord, GapChord}, {"saturated", sat, GapSaturated},
		{"tried", tried, GapPointsTried}, {"replanned", replanned, GapPoints}, {"none added", none, GapPoints},
		{"uncapped", uncapped, GapRelaxation},
	} {
		if got := GapReasonOf(&c.pl); got != c.want {
			t.Errorf("%s: reason %d, want %d", c.name, got, c.want)
		}
	}
	text := strings.Join(planNotes(&tried), "\n")
	if want := "the gap search added 354 beliefs where the upper bound's excess lies and the plan with them was no better, so more points (--plan-points) are unlikely to close it"; !strings.Contains(text, want) || strings.Contains(text, "may close it") {
		t.Errorf("notes lack %q or say more points may close it:\n%s", want, text)
	}
	tried.GapPoints = 1
	if text := strings.Join(planNotes(&tried), "\n"); !strings.Contains(text, "added 1 belief where") {
		t.Errorf("notes do not count one belief in the singular:\n%s", text)
	}
}

// TestPlanNotesGapObjective: the belief plan's stated gap is said to be
// above the policy's own value at the planning α, not above the reported
// lower bound, which may price the bonus at a larger α
// (--lcb-correction cross-fit: hallway at H = 20 plans at α = 0.3 and
// reports its bound at α = 0.956).
func TestPlanNotesGapObjective(t *testing.T) {
	pl := policy.PlanStats{Planner: policy.PlannerBelief, Points: 500, Alpha: 0.3, Value: -0.054251, GapBound: 0.0481}
	text := strings.Join(planNotes(&pl), "\n")
	want := "The optimum of E[R − b̂] at the planning α = 0.3 is at most 0.0481 above the policy's own value there (-0.05425 on the [0,1] scale;"
	if !strings.Contains(text, want) || strings.Contains(text, "above the reported LCB") {
		t.Errorf("notes lack %q or say the gap is above the reported LCB:\n%s", want, text)
	}
}
