package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/psrlcb/psrlcb/internal/atomicfile"
	"github.com/psrlcb/psrlcb/policy"
)

// Thresholds of the plain-language verdict. They are reading aids, not
// statistical tests: C∞ ≤ 10 means every history of π̄ is at most ten times
// rarer in the logs than under π̄ itself, and an effective sample size of
// 30 is where a normal interval for a mean starts to be trustworthy.
const (
	cinfWell    = 10
	cinfPoor    = 100
	essAdequate = policy.MinClaimESS
	// coveredWell is the share of the policy's probable histories (at
	// the last step) the logs must contain for C∞ to speak for the policy
	// without a caveat.
	coveredWell = 0.9
)

// MinEpisodesForClaim is the least number of episodes on which the verdict
// makes any claim about a new policy. Below it the importance-weighted
// check can never reach an effective sample size of essAdequate, and every
// run of the small-K study of docs/validation.md whose bound was above the
// policy's true value had K = 10; the verdict then keeps the behaviour
// policy.
const MinEpisodesForClaim = essAdequate

// Evidence levels (Headline.Evidence) and recommendations
// (Headline.Recommendation).
const (
	// EvidenceJustified: the policy's lower confidence bound is above the
	// upper 95% bound of the behaviour's mean return, the importance-
	// weighted lower bound from the logs alone is above the behaviour's
	// mean, enough logged episodes follow the policy to check the model,
	// and the bound is consistent with the logs and the return range.
	EvidenceJustified = "justified"
	// EvidenceNotProven: the logs do not show the policy better than the
	// behaviour.
	EvidenceNotProven = "not_proven"
	// EvidenceInsufficient: the logs cannot support any claim (too few
	// episodes, or every episode has the same return).
	EvidenceInsufficient = "insufficient"

	RecommendPolicy   = "policy"
	RecommendBehavior = "behavior"
)

// assessment is the verdict's decision and its reasons, in words.
type assessment struct {
	evidence string
	// insufficient and notProven say why the policy is not recommended;
	// flags are warnings about the bound that hold whatever the decision.
	insufficient, notProven, flags []string
}

// assess decides what the headline figures of a run on K episodes
// support. A claim needs two independent lower bounds above the
// behaviour: the model's LCB (the paper's bound, above the upper 95% bound
// of the behaviour's mean) and the importance-weighted lower bound from
// the logs alone (above the behaviour's mean, with an effective sample
// size of at least essAdequate), and no contradiction between them.
func assess(h Headline, K int) assessment {
	a := assessment{insufficient: insufficientReasons(h, K)}
	// With no episode following the policy the importance-weighted
	// interval is empty ([0, 0]), not evidence against the bound.
	ivContradicts := h.ESS >= 1 && h.LCB > h.IWHigh
	above := h.LCBUnits > h.ReturnMax
	a.flags = boundFlags(h, ivContradicts, above)
	// The model's own value outside the logs' interval: the logs
	// contradict the model, which is then no expectation to quote.
	modelContradicted := h.ESS >= 1 && (h.ModelValue > h.IWHigh || h.ModelValue < h.IWLow)
	if modelContradicted {
		a.flags = append(a.flags, contradictionFlag(h))
	}
	a.notProven = notProvenReasons(h, modelContradicted)
	if above || ivContradicts {
		a.notProven = append(a.notProven, "the bound is contradicted by the logs (see the warning below)")
	}
	a.decide(h)
	return a
}

// decide sets the evidence from the reasons found: insufficient, not
// proven, or justified.
func (a *assessment) decide(h Headline) {
	switch {
	case len(a.insufficient) > 0:
		a.evidence = EvidenceInsufficient
		// The not-proven reasons, which name a missing follower, are not
		// shown then: the flag says it, first.
		if h.ESS < 1 {
			a.flags = append([]string{"No logged episode follows the policy's choices through all its steps: the logs cannot check its bound, which rests on the fitted model alone."}, a.flags...)
		}
	case len(a.notProven) > 0:
		a.evidence = EvidenceNotProven
	default:
		a.evidence = EvidenceJustified
	}
}

// insufficientReasons are why the logs support no claim at all: returns
// that never vary, too few episodes, or a bound that could not be
// computed.
func insufficientReasons(h Headline, K int) []string {
	var r []string
	if h.ReturnMax == h.ReturnMin {
		r = append(r, fmt.Sprintf("every logged episode has the same return (%.4g), so the logs cannot tell any policy's value from the behaviour's", float64(h.ReturnMin)))
	}
	if K < MinEpisodesForClaim {
		r = append(r, fmt.Sprintf("%d logged episodes are fewer than the %d below which no bound from logs is reliable", K, MinEpisodesForClaim))
	}
	finite := func(v Float) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
	if !finite(h.LCB) || !finite(h.BehaviorHigh) || !finite(h.IWLow) {
		r = append(r, "the bound or the behaviour's value could not be computed")
	}
	return r
}

// boundFlags are the warnings about the bound itself: above the
// importance-weighted interval (ivContradicts), above the largest logged
// return (above), or vacuous below the smallest.
func boundFlags(h Headline, ivContradicts, above bool) []string {
	var f []string
	if ivContradicts {
		f = append(f, fmt.Sprintf("Warning: the lower bound (%.4g) lies above the importance-weighted 95%% interval [%.4g, %.4g] from the logs: the model is more optimistic than the logs; consider a larger α or rank.", float64(h.LCBUnits), float64(h.IWLowUnits), float64(h.IWHighUnits)))
	}
	switch {
	case above:
		f = append(f, fmt.Sprintf("Warning: the lower bound (%.4g) lies above the largest logged return (%.4g), outside the range of returns the logs show possible: the model is extrapolating and the bound cannot be trusted.", float64(h.LCBUnits), float64(h.ReturnMax)))
	case h.LCBUnits < h.ReturnMin:
		f = append(f, fmt.Sprintf("The lower bound (%.4g) lies below the smallest logged return (%.4g): it is vacuous, the bonus outweighs the model's value and the logs bound nothing about this policy.", float64(h.LCBUnits), float64(h.ReturnMin)))
	}
	return f
}

// contradictionFlag is the warning that the model's value of the policy
// lies outside the importance-weighted interval, and which way.
func contradictionFlag(h Headline) string {
	how := "overrates the policy: the policy's choices look best where the logs saw them least (a winner's curse on rarely logged actions)"
	if h.ModelValue < h.IWLow {
		how = "underrates the policy"
	}
	return fmt.Sprintf("Warning: the logs contradict the fitted model: its value of the policy, %.4g, lies outside the importance-weighted 95%% interval [%.4g, %.4g] from the logs alone; the model %s.",
		float64(h.ModelValueUnits), float64(h.IWLowUnits), float64(h.IWHighUnits), how)
}

// notProvenReasons are why the logs do not prove the policy better than
// the behaviour: a bound not above the behaviour's interval, or too few
// followers (or an importance-weighted estimate) to check it.
func notProvenReasons(h Headline, modelContradicted bool) []string {
	var r []string
	if h.LCB < h.BehaviorHigh {
		expects := fmt.Sprintf(", though the fitted model expects %.4g", float64(h.ModelValueUnits))
		if modelContradicted {
			expects = fmt.Sprintf("; the fitted model's %.4g is contradicted by the logs (see the warning below)", float64(h.ModelValueUnits))
		}
		r = append(r, fmt.Sprintf("its lower confidence bound (%.4g in your units) is not above the behaviour's mean return (%.4g; up to %.4g within its 95%% interval)%s",
			float64(h.LCBUnits), float64(h.BehaviorUnits), float64(h.BehaviorHighUnits), expects))
	}
	if h.ESS < 1 {
		r = append(r, "no logged episode follows the policy's choices through all its steps, so the logs cannot check its bound, which rests on the fitted model alone")
	} else if h.ESS < essAdequate {
		r = append(r, fmt.Sprintf("only about %.0f logged episodes follow the policy's choices (effective sample size), too few to check the model against the logs", float64(h.ESS)))
	} else if h.IWLow < h.BehaviorValue {
		r = append(r, fmt.Sprintf("the importance-weighted estimate from the logs alone, %.4g [%.4g, %.4g], does not exclude the behaviour's mean return %.4g",
			float64(h.IWValueUnits), float64(h.IWLowUnits), float64(h.IWHighUnits), float64(h.BehaviorUnits)))
	}
	return r
}

// recommendation is the policy to deploy given the evidence.
func recommendation(evidence string) string {
	if evidence == EvidenceJustified {
		return RecommendPolicy
	}
	return RecommendBehavior
}

// Verdict says in plain words how far the logs support the policy.
func Verdict(run *Run) []string {
	h := run.Manifest.Headline
	a := assess(h, run.Manifest.Episodes)
	out := []string{verdictHead(a, h)}
	if fb := run.Manifest.Fallback; fb != nil {
		if x := fb.ChosenCandidate(); x != nil {
			out = append(out, setAsideSentence(fb, x))
		}
	}
	out = append(out, a.flags...)
	out = append(out, coverageSentence(h))
	if n := len(run.Coverage); n > 0 && run.Coverage[n-1].CoveredMass < coveredWell {
		out = append(out, fmt.Sprintf("The logs contain only %.0f%% of the policy's probable histories at the last step (under the fitted model); C∞ speaks for those alone.", 100*run.Coverage[n-1].CoveredMass))
	}
	if !h.PlanExact {
		out = append(out, approximateSentence(h))
	}
	if n := len(run.Manifest.Quarantined); n > 0 {
		out = append(out, fmt.Sprintf("%d episodes were quarantined as invalid and not used; they are listed below.", n))
	}
	if rc := run.Manifest.RewardCheck; rc != nil && rc.Calibration.Flagged {
		out = append(out, miscalibrationWarning(rc))
	}
	if h.IotaEstimated {
		out = append(out, "The logs carry no propensities: the behaviour policy was estimated from action frequencies, so ι, C∞, the importance weights and the effective sample size are estimates.")
	}
	return out
}

// verdictHead is the verdict's first sentence: what the evidence of a
// supports, and why.
func verdictHead(a assessment, h Headline) string {
	switch a.evidence {
	case EvidenceInsufficient:
		return "These logs cannot support any claim about a new policy: " + strings.Join(a.insufficient, "; ") +
			". Keep the behaviour policy; the figures below are diagnostics, not a bound to rely on."
	case EvidenceNotProven:
		return "The logs do not prove the policy better than the behaviour: " + strings.Join(a.notProven, "; ") +
			". Keep the behaviour policy; more logged episodes that follow the policy's choices would tighten the bound."
	default:
		return fmt.Sprintf(
			"The logs justify the policy: its lower confidence bound (%.4g in your units of return) is above the behaviour policy's mean return in the logs (%.4g, at most %.4g within its 95%% interval), and the importance-weighted estimate from the logs alone, %.4g [%.4g, %.4g], agrees.",
			float64(h.LCBUnits), float64(h.BehaviorUnits), float64(h.BehaviorHighUnits), float64(h.IWValueUnits), float64(h.IWLowUnits), float64(h.IWHighUnits))
	}
}

// miscalibrationWarning is the warning of a flagged reward calibration
// (estimate.RewardCalibration).
func miscalibrationWarning(rc *RewardCheck) string {
	c := rc.Calibration
	where := "on the logs it was fitted to"
	if rc.HeldOut {
		where = "on held-out episodes"
	}
	return fmt.Sprintf(
		"Warning: the model's rewards are miscalibrated %s: in %d of the %d (step, history, action) cells with at least %d logged steps (%.0f%% of those steps) the logged average reward is more than 3 standard errors and 5%% of the reward range from the model's prediction (root mean square gap %.3g in your units). Its values and the policy's ranking of actions may be wrong even where the observations fit; try another rank or more EM starts, and compare with a tabular baseline.",
		where, c.Miscalibrated, c.Cells, c.MinCount, 100*c.MiscalibratedShare, c.RMSE)
}

func coverageSentence(h Headline) string {
	c := float64(h.CInf)
	switch {
	case math.IsInf(c, 0) || math.IsNaN(c):
		return "Coverage: some histories the policy reaches never occur in the logs (C∞ is unbounded on the logged support); the value there rests on the model alone, and the bonus is what keeps the policy cautious."
	case c < 1:
		return "Coverage: no logged history follows the policy's first choice, so C∞ cannot be estimated from the logs; the policy's value rests on the model alone."
	case h.ESS < 1:
		return fmt.Sprintf("Coverage is incomplete: C∞ ≈ %.3g over the logged histories that follow the policy part of the way, and none follows it to the end.", c)
	case c <= cinfWell:
		return fmt.Sprintf("Coverage is good: C∞ ≈ %.3g, the policy's histories are well represented in the logs.", c)
	case c <= cinfPoor:
		return fmt.Sprintf("Coverage is moderate: C∞ ≈ %.3g; some of the policy's histories are much rarer in the logs than under the policy.", c)
	}
	return fmt.Sprintf("Coverage is poor: C∞ ≈ %.3g; the policy goes where the logs rarely went, and its value depends heavily on the model.", c)
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place.
func writeFileAtomic(path string, data []byte) error { return atomicfile.WriteBytes(path, data) }

// setAsideSentence says why the fallback set the plan aside and what
// policy.arrow holds instead (x, the chosen candidate; the clone decides,
// the improved clone or the improved behaviour may stand in).
func setAsideSentence(fb *Fallback, x *FallbackCandidate) string {
	cl := fb.Candidates[0]
	why := fmt.Sprintf("The planned policy was set aside: on held-out episodes a policy that keeps to the logged actions, the %s, is proven worth at least %.4g, more than the planned policy could be shown to be worth (%.4g)",
		CandidateWords(cl.Name), float64(cl.IWLowerUnits), float64(fb.PlanBoundUnits))
	if x.Name == cl.Name {
		return why + ", so policy.arrow holds that policy and the figures below are its own."
	}
	if x.Name == "improved_behavior" {
		return fmt.Sprintf("%s. policy.arrow holds the %s instead, a stochastic policy: at each history it takes the behaviour's logged actions with the behaviour's own probabilities (as logged), except where the logs show one of them better for the rest of the episode than the others (its mean return from there on larger by more than 1.96 standard errors), which it then takes alone, and without an action the logs show worse than the others. So it is no worse than the behaviour, where a single most-logged action can be, and on the held-out episodes the paired estimate does not put the deterministic clone above it; the figures below are its own (held-out lower bound %.4g). psrlcb act draws its action from the probabilities.",
			why, CandidateName(x.Name), float64(x.IWLowerUnits))
	}
	return fmt.Sprintf("%s. policy.arrow holds the %s instead: the clone, except where the logs show another of the behaviour's actions better for the rest of the episode (its mean return from there on larger by more than 1.96 standard errors), so that it is no worse than the behaviour wherever the logs tell its actions apart; the figures below are its own (held-out lower bound %.4g).",
		why, CandidateName(x.Name), float64(x.IWLowerUnits))
}

// approximateSentence says how far the approximate planner's policy may
// be from the optimum of its objective, and at which α, when the lower
// bound prices the bonus at another (--lcb-correction cross-fit): the
// stated gap is of the planning α's objective.
func approximateSentence(h Headline) string {
	if a, b := float64(h.Alpha), float64(h.BoundAlpha); b > 0 && b != a {
		priced := fmt.Sprintf("prices the bonus at α = %.3g", b)
		if math.IsInf(b, 1) {
			priced = "charges the bonus at its cap"
		}
		return fmt.Sprintf("The planner was approximate: the policy's objective at the planning α = %.3g is within %.3g of the exact optimum (the lower bound above %s).", a, float64(h.PlanGap), priced)
	}
	return fmt.Sprintf("The planner was approximate: the policy's objective is within %.3g of the exact optimum.", float64(h.PlanGap))
}
