package report

import (
	"time"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
)

// Run holds every figure of one `psrlcb fit` run in the report's own
// types, so the writers below do not depend on the stages' internals.
type Run struct {
	RunID    string
	Manifest Manifest

	Coverage []CoverageRow
	Episodes EpisodeRows
	Trace    []TraceRow
	Ranks    []RankRow
	Alphas   []AlphaRow
	// BonusSteps[h] summarises the episodes' contributions
	// ‖ψ̄̂(τ_h)‖²_{U_h⁻¹} at step h (h = 0..H−1) for the bonus distribution
	// plot: quantiles, so the run holds H rows, not H·K values.
	BonusSteps []StepQuantiles
	// Model is the fitted parameters, written in long form as model.arrow.
	Model estimate.ModelRows
	// Policy is the most probable part of π̄'s decision tree with the
	// logs' view of each node, Compare where π̄ departs from the most
	// logged action, Range the logged return range (nil when unknown).
	Policy  *PolicyView
	Compare *Comparison
	Range   *ReturnRange
}

// CoverageRow is one row of coverage.arrow: step h (1-based).
type CoverageRow struct {
	Step            int32
	LoggedHistories int64   // distinct logged histories τ_h
	Iota            float64 // least logged propensity at step h (ι_h)
	CoveredMass     float64 // mass of π̄'s reachable τ_h under θ̂ that the logs contain
	CInf            float64 // running C∞ estimate up to step h
	// PolicyNodes is the number of π̄'s decision nodes at step h and
	// FollowingEpisodes the number of logged episodes whose first h
	// observations and h−1 actions follow π̄.
	PolicyNodes       int64
	FollowingEpisodes int64
}

// EpisodeRows are the columns of episodes.arrow.
type EpisodeRows struct {
	ID     []string
	Split  []int32
	LogLik []float64 // ln P_θ̂(o_{1:H} | a_{1:H})
	// RewardLogLik is the reward part ln P_θ̂(r_{1:H} | o_{1:H}, a_{1:H}).
	RewardLogLik []float64
	Bonus        []float64 // b̂(τ_H)
	Weight       []float64 // importance weight of π̄
}

// TraceRow is one EM iteration (fit.arrow).
type TraceRow struct {
	Rank, Restart, Iter int
	LogLik              float64
}

// RankRow is one candidate of the rank selection (fit.arrow, kind "rank").
type RankRow struct {
	Rank              int
	TrainLL, HeldOutL float64
	Chosen            bool
	// Form is the model form ("full" or "compact"), Episodes the
	// training episodes and HeldOutEpisodes those HeldOutL sums over
	// (estimate.RankRow).
	Form                      string
	Episodes, HeldOutEpisodes int
}

// AlphaRow is one α candidate (alpha.arrow).
type AlphaRow struct {
	Alpha          float64
	ValueReward    float64 // V_{θ̂,R}
	ValueBonus     float64 // V_{θ̂,b̂}
	LCB            float64
	IW, IWLo, IWHi float64 // importance-weighted value and its 95% interval
	ESS            float64
	CInf           float64
	// The α selection's figures (policy.Select): the candidate's value,
	// bonus at its α and lower bound under the model fitted on the other
	// part of the episodes, the criterion compared and its Monte Carlo
	// SE, and whether its planning bonus saturated (NaN/false without a
	// selection).
	CrossReward, CrossBonus, CrossLCB, Criterion, CrossSE float64
	Saturated                                             bool
	Chosen                                                bool
}

// Manifest is manifest.json.
type Manifest struct {
	Tool        string             `json:"tool"`
	Version     string             `json:"version"`
	GoVersion   string             `json:"go_version"`
	RunID       string             `json:"run_id"`
	Started     time.Time          `json:"started"`
	Inputs      []InputFile        `json:"inputs"`
	Parameters  map[string]any     `json:"parameters"`
	Seed        uint64             `json:"seed"`
	StageTimes  map[string]float64 `json:"stage_seconds"`
	Rows        int64              `json:"rows"`
	Episodes    int                `json:"episodes"`
	Horizon     int                `json:"horizon"`
	NumObs      int                `json:"num_observations"`
	NumActions  int                `json:"num_actions"`
	Quarantined []Quarantined      `json:"quarantined"`
	Headline    Headline           `json:"headline"`
	ThetaMin    estimate.ThetaMin  `json:"theta_min"`
	Plan        policy.PlanStats   `json:"plan"`
	Theory      *pessimism.Theory  `json:"alpha_theory,omitempty"`
	RewardCheck *RewardCheck       `json:"reward_check,omitempty"`
	Fallback    *Fallback          `json:"fallback,omitempty"`
	// Compared are the policies of psrlcb fit --compare, the run's own
	// first (none without the flag).
	Compared []ComparedPolicy `json:"compared,omitempty"`
	Notes    []string         `json:"notes"`
}

// Fallback is the comparison of the chosen plan with the policies the
// logged actions support, on the held-out part of the α selection
// (pipeline.FallbackBehavior). Values are on the evaluation model's [0,1]
// scale; *Units in the user's units of return.
type Fallback struct {
	// Used: a supported policy's bound beat the plan's, and policy.arrow
	// holds that policy (Chosen) fitted on all episodes.
	Used   bool   `json:"used"`
	Chosen string `json:"chosen"` // "plan", or the Name of a candidate
	// PlanCrossBound is the plan's bound under the evaluation model at
	// α_B = PlanCrossAlpha = max(α, 1); PlanIWLower, PlanIWUpper and
	// PlanESS its importance-weighted interval and effective sample size
	// on the held-out part; PlanBound the figure a candidate had to beat:
	// PlanCrossBound, or PlanIWUpper when larger and the effective sample
	// size is at least MinEpisodesForClaim.
	PlanCrossBound Float `json:"plan_cross_bound"`
	PlanCrossAlpha Float `json:"plan_cross_alpha"`
	PlanIWLower    Float `json:"plan_iw_lower"`
	PlanIWUpper    Float `json:"plan_iw_upper"`
	PlanESS        Float `json:"plan_ess"`
	PlanBound      Float `json:"plan_bound"`
	PlanBoundUnits Float `json:"plan_bound_units"`
	// Candidates are the supported policies with their held-out figures.
	Candidates      []FallbackCandidate `json:"candidates"`
	HeldOutEpisodes int                 `json:"held_out_episodes"`
	// StandInDiff, when the fallback was used and the improved behaviour
	// scored, is the paired importance-weighted estimate on the held-out
	// episodes of V(deterministic stand-in) − V(improved behaviour) on the
	// [0,1] scale: the improved behaviour is returned unless it is
	// positive (pipeline.StandIn).
	StandInDiff Float `json:"stand_in_diff,omitempty"`
}

// FallbackCandidate is one policy the logged actions support, fitted on
// the training part and valued by importance weighting on the held-out
// part.
type FallbackCandidate struct {
	// Name is "clone" (the action logged most often at each history),
	// "improved_clone" (the clone, except where the logs show another
	// logged action's mean return-to-go larger) or "improved_behavior"
	// (the logged actions with the behaviour's logged probabilities, except where the logs
	// show one better than the others; a stochastic policy); see
	// CandidateWords.
	Name         string `json:"name"`
	IWValue      Float  `json:"iw_value"`
	IWLower      Float  `json:"iw_lower"`
	IWLowerUnits Float  `json:"iw_lower_units"`
	ESS          Float  `json:"ess"`
	// Bound is IWLower when ESS ≥ MinEpisodesForClaim, −Inf otherwise.
	Bound Float `json:"bound"`
}

// ChosenCandidate is the candidate the fallback returned (nil when the
// plan was kept).
func (f *Fallback) ChosenCandidate() *FallbackCandidate {
	for i := range f.Candidates {
		if f.Used && f.Candidates[i].Name == f.Chosen {
			return &f.Candidates[i]
		}
	}
	return nil
}

// InputFile names one input with its size and content hash.
type InputFile struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// Quarantined is an episode set aside by --on-invalid=skip.
type Quarantined struct {
	EpisodeID string `json:"episode_id"`
	File      string `json:"file"`
	Step      int    `json:"step"`
	Reason    string `json:"reason"`
}

// Headline is the handful of figures a person reads first. Values are on
// the paper's [0,1] scale of R; the *_Units fields are in the user's units
// of return.
type Headline struct {
	LCB             Float `json:"lcb"`
	ModelValue      Float `json:"model_value"`
	BonusValue      Float `json:"bonus_value"`
	IWValue         Float `json:"iw_value"`
	IWLow           Float `json:"iw_low"`
	IWHigh          Float `json:"iw_high"`
	LCBUnits        Float `json:"lcb_units"`
	ModelValueUnits Float `json:"model_value_units"`
	IWValueUnits    Float `json:"iw_value_units"`
	IWLowUnits      Float `json:"iw_low_units"`
	IWHighUnits     Float `json:"iw_high_units"`
	BehaviorValue   Float `json:"behavior_value"`
	BehaviorUnits   Float `json:"behavior_value_units"`
	ESS             Float `json:"ess"`
	CInf            Float `json:"c_inf"`
	Iota            Float `json:"iota"`
	IotaEstimated   bool  `json:"iota_estimated"`
	ThetaMinSlack   Float `json:"theta_min_slack"`
	Alpha           Float `json:"alpha"`
	// BoundAlpha is the α the reported lower bound (LCB) prices the bonus
	// at: Alpha, or the larger α of the cross-fitted correction. The
	// policy table's value_bonus and value_lcb are priced at Alpha, the
	// planning α (the planner's objective), not at BoundAlpha.
	BoundAlpha Float  `json:"bound_alpha"`
	Rank       int    `json:"rank"`
	PlanExact  bool   `json:"plan_exact"`
	PlanGap    Float  `json:"plan_gap"`
	Verdict    string `json:"verdict"`

	// BehaviorHigh is the upper end of the 95% interval of the
	// behaviour's mean return (mean + 1.96 standard errors).
	BehaviorHigh      Float `json:"behavior_high"`
	BehaviorHighUnits Float `json:"behavior_high_units"`
	// ReturnMin and ReturnMax are the smallest and largest logged episode
	// returns in the user's units.
	ReturnMin Float `json:"return_min"`
	ReturnMax Float `json:"return_max"`
	// Evidence is what the logs support (EvidenceJustified,
	// EvidenceNotProven, EvidenceInsufficient) and Recommendation the
	// policy to deploy: RecommendPolicy (π̄, policy.arrow) only when the
	// evidence is "justified", RecommendBehavior (keep the logging
	// policy) otherwise. policy.arrow always holds π̄, for inspection.
	Evidence       string `json:"evidence"`
	Recommendation string `json:"recommendation"`
}

// Outcome is everything a fit produced: the stages' results, which the
// report renders, and the Run built from them.
type Outcome struct {
	Policy    *policy.Policy
	Model     *estimate.Model
	Fit       *estimate.Result
	Bonus     *pessimism.Bonus
	Plan      *policy.PlanStats
	Selection *policy.Selection // nil unless α was chosen among candidates
	Theory    *pessimism.Theory // set for α = theory
	Alpha     float64
	// Bound, when set, is the reported lower bound of the policy when it
	// differs from the planner's objective: the cross-fitted correction
	// of the pipeline prices the bonus at BoundAlpha ≥ Alpha (see
	// pipeline.LCBCorrectionCrossFit).
	Bound      *policy.Value
	BoundAlpha float64
	Splits     [][]int
	Run        *Run
	// RewardCheck is the model check on rewards (held out when α was
	// chosen among candidates, in sample otherwise; pipeline.measure fills it).
	RewardCheck *RewardCheck
	// Fallback is the plan's comparison with the behaviour's clones (nil
	// when α was not chosen among candidates or with --fallback none).
	Fallback *Fallback
	// Compared are the policies psrlcb fit --compare evaluated on the
	// logs, the run's own first (nil without the flag).
	Compared []ComparedPolicy
	// Notes are the stages' own notes for the report (a default they fell
	// back to, say).
	Notes []string
}
