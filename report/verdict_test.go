package report

import (
	"math"
	"strings"
	"testing"
)

// base is a run the logs support: K = 1000, the LCB (0.7) above the
// behaviour's upper bound (0.55), the importance-weighted interval
// [0.6, 0.8] around it and above the behaviour's mean (0.5), ESS 200.
func base() Headline {
	return Headline{LCB: 0.7, LCBUnits: 7, ModelValue: 0.75, ModelValueUnits: 7.5,
		IWValue: 0.7, IWLow: 0.6, IWHigh: 0.8, IWValueUnits: 7, IWLowUnits: 6, IWHighUnits: 8,
		BehaviorValue: 0.5, BehaviorUnits: 5, BehaviorHigh: 0.55, BehaviorHighUnits: 5.5,
		ReturnMin: 0, ReturnMax: 10, ESS: 200, CInf: 5, PlanExact: true}
}

func verdictOf(h Headline, K int) (string, string) {
	run := &Run{}
	run.Manifest.Headline, run.Manifest.Episodes = h, K
	return assess(h, K).evidence, strings.Join(Verdict(run), " ")
}

// The coverage figures speak only for the histories the logs contain: a
// policy whose probable histories are mostly unlogged gets a caveat.
func TestVerdictCoveredMass(t *testing.T) {
	run := &Run{Coverage: []CoverageRow{{Step: 1, CoveredMass: 1}, {Step: 2, CoveredMass: 0.25}}}
	run.Manifest.Headline, run.Manifest.Episodes = base(), 1000
	if text := strings.Join(Verdict(run), " "); !strings.Contains(text, "only 25% of the policy's probable histories") {
		t.Errorf("verdict: %s", text)
	}
	run.Coverage[1].CoveredMass = 0.95
	if text := strings.Join(Verdict(run), " "); strings.Contains(text, "probable histories") {
		t.Errorf("verdict: %s", text)
	}
}

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		name     string
		K        int
		edit     func(*Headline)
		evidence string
		say      []string
		never    []string
	}{
		{"supported", 1000, func(h *Headline) {}, EvidenceJustified, []string{"The logs justify the policy"}, nil},
		// Tiger, 10 episodes, --alpha 0.1: the LCB is above the behaviour
		// but nothing in the logs follows the policy.
		{"ten episodes", 10, func(h *Headline) { h.ESS, h.IWValue, h.IWLow, h.IWHigh, h.CInf = 0, 0, 0, 0, 9 }, EvidenceInsufficient,
			[]string{"cannot support any claim", "10 logged episodes", "Keep the behaviour policy", "No logged episode follows"}, []string{"justify", "Coverage is good"}},
		// Maze, H = 8, 10⁴ uniform episodes of 5 actions: no episode
		// follows the policy; the empty interval [0, 0] is no evidence
		// against the bound.
		{"no follower", 10000, func(h *Headline) { h.ESS, h.IWValue, h.IWLow, h.IWHigh = 0, 0, 0, 0 }, EvidenceNotProven,
			[]string{"no logged episode follows the policy's choices through all its steps, so the logs cannot check its bound"}, []string{"contradicted", "only about 0", "Warning", "No logged episode follows"}},
		{"five episodes", 5, func(h *Headline) {}, EvidenceInsufficient, []string{"5 logged episodes are fewer than the 30"}, []string{"justify"}},
		// 2000 identical episodes, or a constant reward: the LCB equals
		// the behaviour's mean in units.
		{"constant return", 2000, func(h *Headline) {
			h.ReturnMin, h.ReturnMax = 20, 20
			h.LCB, h.BehaviorValue, h.BehaviorHigh, h.LCBUnits, h.BehaviorUnits = -0.1, 0, 0, 20, 20
		}, EvidenceInsufficient, []string{"same return (20)"}, []string{"is below the behaviour", "justify"}},
		{"LCB above the IW interval", 1000, func(h *Headline) { h.IWHigh, h.IWHighUnits = 0.65, 6.5 }, EvidenceNotProven,
			[]string{"lies above the importance-weighted 95% interval [6, 6.5]"}, []string{"justify"}},
		{"LCB above the IW interval, small ESS", 1000, func(h *Headline) { h.ESS, h.IWHigh = 3, 0.65 }, EvidenceNotProven,
			[]string{"lies above the importance-weighted", "only about 3 logged episodes"}, nil},
		{"LCB above the return range", 1000, func(h *Headline) { h.LCB, h.LCBUnits, h.IWHigh = 1.1, 11, 1.2 }, EvidenceNotProven,
			[]string{"above the largest logged return (10)"}, []string{"justify"}},
		{"LCB below the return range", 1000, func(h *Headline) { h.LCB, h.LCBUnits = -0.2, -2 }, EvidenceNotProven,
			[]string{"below the smallest logged return (0)", "vacuous", "is not above the behaviour's mean"}, nil},
		{"LCB within the behaviour's interval", 1000, func(h *Headline) { h.LCB = 0.52 }, EvidenceNotProven,
			[]string{"up to 5.5 within its 95% interval"}, nil},
		// One-step logs with a few dozen clicks: the model's bound is above
		// the behaviour, the logs alone are not.
		// Public one-step click logs: the model expects 18 times the
		// logged click rate, outside the logs' own interval.
		{"logs contradict the model", 20000, func(h *Headline) {
			h.LCB, h.LCBUnits, h.ModelValue, h.ModelValueUnits = 0.004, 0.004, 0.08548, 0.08548
			h.IWValue, h.IWLow, h.IWHigh, h.IWValueUnits, h.IWLowUnits, h.IWHighUnits = 0.0069, -0.0009, 0.0147, 0.0069, -0.0009, 0.0147
			h.BehaviorValue, h.BehaviorHigh, h.BehaviorUnits, h.BehaviorHighUnits, h.ESS = 0.0046, 0.0055, 0.0046, 0.0055, 60
		}, EvidenceNotProven, []string{"the logs contradict the fitted model: its value of the policy, 0.08548, lies outside", "winner's curse", "is contradicted by the logs"}, []string{"though the fitted model expects"}},
		{"IW does not exclude the behaviour", 10000, func(h *Headline) { h.IWLow, h.IWLowUnits, h.ESS = 0.3, 3, 40 }, EvidenceNotProven,
			[]string{"does not exclude the behaviour's mean return 5"}, []string{"justify"}},
	} {
		h := base()
		c.edit(&h)
		ev, text := verdictOf(h, c.K)
		if ev != c.evidence {
			t.Errorf("%s: evidence %s, want %s (%s)", c.name, ev, c.evidence, text)
		}
		if rec := recommendation(ev); (rec == RecommendPolicy) != (c.evidence == EvidenceJustified) {
			t.Errorf("%s: recommendation %s", c.name, rec)
		}
		for _, s := range c.say {
			if !strings.Contains(text, s) {
				t.Errorf("%s: verdict does not say %q:\n%s", c.name, s, text)
			}
		}
		for _, s := range c.never {
			if strings.Contains(text, s) {
				t.Errorf("%s: verdict says %q:\n%s", c.name, s, text)
			}
		}
	}
}

// TestSetAsideSentence: the sentence names the clone's bound, which set the
// plan aside, and, when the improved clone stands in, says so with its own
// bound.
func TestSetAsideSentence(t *testing.T) {
	fb := &Fallback{Used: true, Chosen: "clone", PlanBoundUnits: -5,
		Candidates: []FallbackCandidate{{Name: "clone", IWLowerUnits: -3}, {Name: "improved_clone", IWLowerUnits: -4}}}
	s := setAsideSentence(fb, fb.ChosenCandidate())
	if !strings.Contains(s, "at least -3, more than the planned policy could be shown to be worth (-5)") || strings.Contains(s, "improved") {
		t.Errorf("clone returned: %s", s)
	}
	fb.Chosen = "improved_clone"
	s = setAsideSentence(fb, fb.ChosenCandidate())
	if !strings.Contains(s, "at least -3") || !strings.Contains(s, "holds the behaviour's improved clone") || !strings.Contains(s, "held-out lower bound -4") {
		t.Errorf("improved clone returned: %s", s)
	}
}

// TestFallbackNoteSaysWhichScore: the plan's score is named as the
// figure it is — its bound under the held-out model, or the upper end of
// its importance-weighted interval (which may lie beyond the returns).
func TestFallbackNoteSaysWhichScore(t *testing.T) {
	fb := &Fallback{PlanCrossBound: 0.4, PlanCrossAlpha: 1, PlanIWUpper: 1.2, PlanBound: 1.2, PlanBoundUnits: 253.2, HeldOutEpisodes: 500,
		Candidates: []FallbackCandidate{{Name: "clone", Bound: 0.3, IWLowerUnits: -10, ESS: 200}}}
	if n := fallbackNote(fb); !strings.Contains(n, "upper end of its importance-weighted 95% interval on the held-out episodes, 253.2") {
		t.Errorf("IW upper score: %s", n)
	}
	fb.PlanBound, fb.PlanBoundUnits = 0.4, -20
	if n := fallbackNote(fb); !strings.Contains(n, "its lower bound under the held-out model at α = 1, -20 in your units") {
		t.Errorf("model bound score: %s", n)
	}
}

// TestStageOrderAndSizes: stages are listed in pipeline order, rank
// before the α selection; byte counts read as sizes.
func TestStageOrderAndSizes(t *testing.T) {
	st := orderedStages(map[string]float64{"report": 1, "rank": 2, "ingest": 3, "select-α": 4, "policy": 5})
	var names []string
	for _, s := range st {
		names = append(names, s[0])
	}
	if got := strings.Join(names, " "); got != "ingest rank select-α policy report total" {
		t.Errorf("stage order %q", got)
	}
	if s := byteSize(12638013440); !strings.HasPrefix(s, "11.8 GiB") {
		t.Errorf("12638013440 bytes: %q", s)
	}
	if s := byteSize(0); s != "none" {
		t.Errorf("0 bytes: %q", s)
	}
}

// TestVerdictApproximateAlpha: an approximate plan's stated gap is said
// to be of the planning α's objective when the lower bound prices the
// bonus at another α (hallway at H = 20: 0.3 and 0.956) or at its cap
// (no finite α covers the model's optimism), and plainly otherwise.
func TestVerdictApproximateAlpha(t *testing.T) {
	h := base()
	h.PlanExact, h.PlanGap, h.Alpha, h.BoundAlpha = false, 0.0481, 0.3, 0.956
	if _, text := verdictOf(h, 1000); !strings.Contains(text, "The planner was approximate: the policy's objective at the planning α = 0.3 is within 0.0481 of the exact optimum (the lower bound above prices the bonus at α = 0.956).") {
		t.Errorf("verdict: %s", text)
	}
	h.BoundAlpha = Float(math.Inf(1))
	if _, text := verdictOf(h, 1000); !strings.Contains(text, "within 0.0481 of the exact optimum (the lower bound above charges the bonus at its cap).") {
		t.Errorf("verdict: %s", text)
	}
	h.BoundAlpha = 0.3
	if _, text := verdictOf(h, 1000); !strings.Contains(text, "The planner was approximate: the policy's objective is within 0.0481 of the exact optimum.") {
		t.Errorf("verdict: %s", text)
	}
}
