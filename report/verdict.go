package report

import (
	"fmt"
	"math"

	"github.com/psrlcb/psrlcb/internal/atomicfile"
)

// Thresholds of the plain-language verdict. They are reading aids, not
// statistical tests: C∞ ≤ 10 means every history of π̄ is at most ten times
// rarer in the logs than under π̄ itself, and an effective sample size of
// 30 is where a normal interval for a mean starts to be trustworthy.
const (
	cinfWell    = 10
	cinfPoor    = 100
	essAdequate = 30
)

// Verdict says in plain words how far the logs support the policy.
func Verdict(run *Run) []string {
	h := run.Manifest.Headline
	var out []string
	switch {
	case h.LCB >= h.BehaviorValue:
		out = append(out, fmt.Sprintf(
			"The logs justify the policy: its lower confidence bound (%.4g in your units of return) is at least the behaviour policy's mean return in the logs (%.4g).",
			h.LCBUnits, h.BehaviorUnits))
	default:
		out = append(out, fmt.Sprintf(
			"The logs do not prove the policy better than the behaviour: its lower confidence bound (%.4g in your units) is below the behaviour's mean return (%.4g), though the fitted model expects %.4g. More logged episodes that follow the policy's choices would tighten the bound.",
			h.LCBUnits, h.BehaviorUnits, h.ModelValueUnits))
	}
	switch {
	case math.IsInf(float64(h.CInf), 0) || math.IsNaN(float64(h.CInf)):
		out = append(out, "Coverage: some histories the policy reaches never occur in the logs (C∞ is unbounded on the logged support); the value there rests on the model alone, and the bonus is what keeps the policy cautious.")
	case h.CInf <= cinfWell:
		out = append(out, fmt.Sprintf("Coverage is good: C∞ ≈ %.3g, the policy's histories are well represented in the logs.", h.CInf))
	case h.CInf <= cinfPoor:
		out = append(out, fmt.Sprintf("Coverage is moderate: C∞ ≈ %.3g; some of the policy's histories are much rarer in the logs than under the policy.", h.CInf))
	default:
		out = append(out, fmt.Sprintf("Coverage is poor: C∞ ≈ %.3g; the policy goes where the logs rarely went, and its value depends heavily on the model.", h.CInf))
	}
	if h.ESS < essAdequate {
		out = append(out, fmt.Sprintf("Only about %.0f logged episodes follow the policy's choices (effective sample size), so the importance-weighted check of its value is weak.", h.ESS))
	} else if h.LCB > h.IWHigh {
		out = append(out, fmt.Sprintf("Warning: the lower bound (%.4g) lies above the importance-weighted 95%% interval [%.4g, %.4g]: the model may be optimistic; consider a larger α or rank.", h.LCB, h.IWLow, h.IWHigh))
	} else {
		out = append(out, fmt.Sprintf("The importance-weighted estimate from the logs, %.4g [%.4g, %.4g] on the [0,1] scale, is consistent with the lower bound %.4g.", h.IWValue, h.IWLow, h.IWHigh, h.LCB))
	}
	if !h.PlanExact {
		out = append(out, fmt.Sprintf("The planner was approximate: the policy's objective is within %.3g of the exact optimum.", h.PlanGap))
	}
	if n := len(run.Manifest.Quarantined); n > 0 {
		out = append(out, fmt.Sprintf("%d episodes were quarantined as invalid and not used; they are listed below.", n))
	}
	if rc := run.Manifest.RewardCheck; rc != nil && rc.Calibration.Flagged {
		c := rc.Calibration
		where := "on the logs it was fitted to"
		if rc.HeldOut {
			where = "on held-out episodes"
		}
		out = append(out, fmt.Sprintf(
			"Warning: the model's rewards are miscalibrated %s: in %d of the %d (step, history, action) cells with at least %d logged steps (%.0f%% of those steps) the logged average reward is more than 3 standard errors and 5%% of the reward range from the model's prediction (root mean square gap %.3g in your units). Its values and the policy's ranking of actions may be wrong even where the observations fit; try another rank or more EM starts, and compare with a tabular baseline.",
			where, c.Miscalibrated, c.Cells, c.MinCount, 100*c.MiscalibratedShare, c.RMSE))
	}
	if h.IotaEstimated {
		out = append(out, "The logs carry no propensities: the behaviour policy was estimated from action frequencies, so ι, C∞, the importance weights and the effective sample size are estimates.")
	}
	return out
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place.
func writeFileAtomic(path string, data []byte) error { return atomicfile.WriteBytes(path, data) }
