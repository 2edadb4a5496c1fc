package report

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/schemas"
	"github.com/psrlcb/psrlcb/split"
)

// Params are the run's options as the stages used them, every default
// filled in by the caller (package pipeline). The report records them and
// never recomputes a default; the run id hashes them with the inputs.
type Params struct {
	RankOption    string  // "auto" or the rank asked for
	AlphaOption   string  // "auto", "theory" or the list of values asked for
	Gamma         float64 // γ of the paper's α̂ (α = theory only)
	Lambda        float64 // λ of U_h
	SelectHeldOut float64 // share of episodes held out to choose α
	LCBCorrection string  // correction of the reported bound ("" or "none": none)
	Fallback      string  // the behaviour fallback ("behavior" or "none"; "": not recorded)
	PlanBudget    int64   // node budget of the exact planner
	Planner       string  // "exact", "belief" or "auto"
	PlanRows      int64   // row budget of the belief planner's policy table
	PlanPoints    int     // belief points per step of the belief planner
	HullBound     bool    // the final plan's gap stated against the hull-interpolated upper bound
	MemoryLimit   int64   // the run's memory budget in bytes (0: none); not part of the run id
	// PlanRowsLimited is the belief planner's row budget when the memory
	// limit lowered it below PlanRows (0: not lowered); part of the run id,
	// since it can change the policy.
	PlanRowsLimited int64
	Seed            uint64
	// Ingest options that change what the logs mean.
	Horizon   int
	OnInvalid string
	Columns   schemas.Mapping
	// MaxObservations is --max-observations (0: every observation kept).
	MaxObservations int
	// ReturnRange is the known range of returns the user stated (zero:
	// the model's own bounds, H × the logged reward extremes).
	ReturnRange [2]float64
	// Version is the tool's version, written into the manifest.
	Version string
	// Compare are the policies psrlcb fit --compare evaluated
	// (Outcome.Compared), hashed into the run id with their paths.
	Compare []string
}

// parameters lists every option of the run. Worker counts are left out on
// purpose: they do not change any result.
func parameters(p Params, out *Outcome) map[string]any {
	m := fitParameters(out)
	maps.Copy(m, map[string]any{
		"rank_option":       p.RankOption,
		"lambda":            p.Lambda,
		"alpha":             out.Alpha,
		"alpha_option":      p.AlphaOption,
		"select_heldout":    p.SelectHeldOut,
		"plan_budget":       p.PlanBudget,
		"planner":           p.Planner,
		"plan_rows":         p.PlanRows,
		"plan_points":       p.PlanPoints,
		"memory_limit":      p.MemoryLimit,
		"plan_rows_limited": p.PlanRowsLimited,
		"seed":              p.Seed,
		"horizon":           p.Horizon,
		"on_invalid":        p.OnInvalid,
		"columns":           p.Columns,
	})
	optionalParameters(m, p, out)
	return m
}

// fitParameters are the estimate stage's parameters of the run: the
// options the fit used and the model it chose.
func fitParameters(out *Outcome) map[string]any {
	e := out.Fit.Options
	return map[string]any{
		"rank":            out.Model.States,
		"max_rank":        e.MaxRank,
		"rank_heldout":    e.HeldOut,
		"dynamics":        e.Dynamics,
		"restarts":        e.Restarts,
		"max_iter":        e.MaxIter,
		"tol":             e.Tol,
		"smoothing":       e.Smoothing,
		"test_length":     e.TestLength,
		"delta":           e.Delta,
		"log_p_min":       out.Fit.ThetaMin.LogPMin,
		"skip_theta_min":  e.SkipThetaMin,
		"reward_emission": rewardKind(out.Model),
		"model_form":      out.Model.Form(),
	}
}

// optionalParameters adds the parameters a run has only when their
// option was given or applies.
func optionalParameters(m map[string]any, p Params, out *Outcome) {
	if p.MaxObservations > 0 {
		m["max_observations"] = p.MaxObservations
	}
	if p.AlphaOption == "theory" {
		m["gamma"] = p.Gamma
	}
	if p.ReturnRange != [2]float64{} {
		m["return_range"] = p.ReturnRange
	}
	if p.HullBound {
		m["hull_bound"] = true
	}
	if out.Selection != nil {
		m["alpha_criterion"] = out.Selection.Criterion
	}
	if p.LCBCorrection != "" {
		m["lcb_correction"] = p.LCBCorrection
	}
	if p.Fallback != "" {
		m["fallback"] = p.Fallback
	}
}

func rewardKind(m *estimate.Model) string {
	if m.Reward == estimate.RewardGaussian {
		return "gaussian"
	}
	return "categorical"
}

func goVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.GoVersion
	}
	return runtime.Version()
}

// Build tabulates a finished fit of the dataset d read from inputs
// (hashed into the manifest; may be nil) and the figures the pipeline
// measured on it (fig).
func Build(ctx context.Context, d *ingest.Dataset, inputs []string, p Params, out *Outcome, fig *Figures) (*Run, error) {
	run := &Run{}
	files, err := HashInputs(ctx, inputs)
	if err != nil {
		return nil, err
	}
	params := parameters(p, out)
	if len(p.Compare) > 0 {
		if params["compare"], err = hashCompared(ctx, p.Compare); err != nil {
			return nil, err
		}
	}
	run.RunID = runID(files, params, p.Seed)
	if err := run.tabulate(ctx, d, out, fig); err != nil {
		return nil, err
	}
	fillManifest(run, d, files, params, p, out, fig)
	return run, nil
}

// tabulate fills the run's tables: coverage, episodes and bonus terms,
// the fit's trace and ranks, the α candidates, the model, and the
// policy view with the comparison with the behaviour.
func (run *Run) tabulate(ctx context.Context, d *ingest.Dataset, out *Outcome, fig *Figures) (err error) {
	m := out.Model
	run.Coverage = coverageRows(fig, d.Horizon)
	if run.Episodes, run.BonusSteps, err = episodeRows(d, out, fig); err != nil {
		return err
	}
	run.Trace, run.Ranks = fitTables(out.Fit)
	if err := ctx.Err(); err != nil {
		return err
	}
	run.Alphas = alphaRows(out, fig)
	run.Model = estimate.ModelRows{Model: m, Merged: d.Merged}
	// The policy's decision tree as the report lists it, and where it
	// departs from the behaviour's most logged action.
	run.Range = &ReturnRange{Min: m.ReturnMin, Max: m.ReturnMax}
	run.Policy = NewPolicyView(out.Policy, *run.Range, fig.Visits, DefaultPolicyRows)
	run.Compare = fig.Compare
	return nil
}

// hashCompared hashes the policies of --compare: a file, or a run
// directory's policy.arrow.
func hashCompared(ctx context.Context, paths []string) ([]InputFile, error) {
	var cmp []InputFile
	for _, path := range paths {
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			path = filepath.Join(path, policy.FileName) // a run directory: its policy
		}
		f, err := hashFile(ctx, path)
		if err != nil {
			return nil, err
		}
		cmp = append(cmp, f)
	}
	return cmp, nil
}

// Figures are what the pipeline measured of a finished fit on its logs
// (pipeline's measure phase), for Build to tabulate.
type Figures struct {
	DP           *ingest.Dataset // the logs with the behaviour propensities the fit used
	Val          policy.Value    // the planner's value of the policy
	IW           policy.IWResult
	Cov          *policy.Coverage
	Weights      []float64 // per-episode importance weights
	Norms        *pessimism.EpisodeNorms
	Sum          ingest.Summary
	Beh, BehHigh float64 // the behaviour's mean return and its upper end
	RetLo, RetHi float64 // the range of logged returns
	// LogLik and RewardLogLik are each episode's log-likelihoods under the
	// model (estimate.EpisodeScorer).
	LogLik, RewardLogLik []float64
	// RunningCInf[h−1] is C∞ over the logged prefixes of length ≤ h that
	// follow the policy; Iota[h−1] the least logged propensity at step h
	// (NaN without propensities).
	RunningCInf, Iota []float64
	// CandidateCInf is the C∞ of each α candidate of out.Selection.
	CandidateCInf []float64
	// Visits is how the logs walk down the policy's tree, and Compare
	// where the policy departs from the most logged action, with the
	// model's value of each departure.
	Visits  *policy.Visits
	Compare *Comparison
}

// returnUnits maps a value on the model's [0,1] return scale to the
// logs' units.
func returnUnits(m *estimate.Model) func(float64) Float {
	return func(v float64) Float { return Float(m.ReturnUnits(v)) }
}

// coverageRows is the coverage per step, with the running C∞ over
// prefixes that follow π̄.
func coverageRows(f *Figures, H int) []CoverageRow {
	var rows []CoverageRow
	for h := 1; h <= H; h++ {
		rows = append(rows, coverageRow(f, h))
	}
	return rows
}

// coverageRow is step h's coverage row.
func coverageRow(f *Figures, h int) CoverageRow {
	row := CoverageRow{Step: int32(h), Iota: f.Iota[h-1], CInf: f.RunningCInf[h-1]}
	if h-1 < len(f.Sum.Histories) {
		row.LoggedHistories = int64(f.Sum.Histories[h-1])
	}
	if h-1 < len(f.Cov.Steps) {
		row.CoveredMass = f.Cov.Steps[h-1].CoveredMass
		row.PolicyNodes = int64(f.Cov.Steps[h-1].Nodes)
		row.FollowingEpisodes = int64(f.Cov.Steps[h-1].Logged)
	}
	return row
}

// episodeRows is the episodes table and the quantiles of the bonus terms
// per step (steps[h] over the episodes' ‖ψ̄̂(τ_h)‖²).
func episodeRows(d *ingest.Dataset, out *Outcome, f *Figures) (e EpisodeRows, steps []StepQuantiles, err error) {
	K, H := d.NumEpisodes(), d.Horizon
	if len(f.LogLik) != K || len(f.RewardLogLik) != K {
		return e, nil, fmt.Errorf("report: %d and %d episode log-likelihoods for %d episodes", len(f.LogLik), len(f.RewardLogLik), K)
	}
	splitOf := split.Of(out.Splits, K)
	e = EpisodeRows{ID: d.EpisodeIDs, Split: make([]int32, K), Bonus: make([]float64, K), Weight: f.Weights,
		LogLik: f.LogLik, RewardLogLik: f.RewardLogLik}
	for k := 0; k < K; k++ {
		e.Split[k] = int32(splitOf[k])
		e.Bonus[k] = out.Bonus.Value(f.Norms.Sum(k))
	}
	steps = make([]StepQuantiles, H)
	v := make([]float64, K)
	for h := 0; h < H; h++ {
		for k := 0; k < K; k++ {
			v[k] = float64(f.Norms.Norm2[k*H+h])
		}
		steps[h] = summarizeInPlace(v)
	}
	return e, steps, nil
}

// fitTables is the fit trace on all the data and the rank table.
func fitTables(fit *estimate.Result) (trace []TraceRow, ranks []RankRow) {
	for _, t := range fit.Trace {
		if t.Data != "all" {
			continue
		}
		trace = append(trace, TraceRow{Rank: t.Rank, Restart: t.Restart, Iter: t.Iter, LogLik: t.LogLik})
	}
	for _, r := range fit.RankTable {
		ranks = append(ranks, RankRow{Rank: r.Rank, TrainLL: r.TrainLogLik, HeldOutL: r.HeldOutLogLik, Chosen: r.Chosen,
			Form: r.Form, Episodes: r.Episodes, HeldOutEpisodes: r.HeldOutEpisodes})
	}
	return trace, ranks
}

// alphaRows is the α candidates table: the selection's candidates, or the
// one α used.
func alphaRows(out *Outcome, f *Figures) []AlphaRow {
	if out.Selection == nil {
		return []AlphaRow{{Alpha: out.Alpha, ValueReward: f.Val.Reward, ValueBonus: f.Val.Bonus, LCB: f.Val.LCB,
			IW: f.IW.Mean, IWLo: f.IW.Lower, IWHi: f.IW.Upper, ESS: f.IW.ESS, CInf: f.Cov.CInf, Chosen: true,
			CrossReward: math.NaN(), CrossBonus: math.NaN(), CrossLCB: math.NaN(), Criterion: math.NaN(), CrossSE: math.NaN()}}
	}
	var rows []AlphaRow
	for i, c := range out.Selection.Candidates {
		rows = append(rows, AlphaRow{
			Alpha: c.Alpha, ValueReward: c.Model.Reward, ValueBonus: c.Model.Bonus, LCB: c.Model.LCB,
			IW: c.HeldOut.Mean, IWLo: c.HeldOut.Lower, IWHi: c.HeldOut.Upper, ESS: c.HeldOut.ESS,
			CInf: f.CandidateCInf[i], Chosen: c.Chosen,
			CrossReward: c.Cross.Reward, CrossBonus: c.Cross.Bonus, CrossLCB: c.Cross.LCB, Criterion: c.Cross.Criterion, CrossSE: c.Cross.StdErr,
			Saturated: c.Saturated,
		})
	}
	return rows
}

// fillManifest writes run's manifest: provenance, the data's shape, the
// fit's and the plan's figures, the headline and the notes.
func fillManifest(run *Run, d *ingest.Dataset, files []InputFile, params map[string]any, p Params, out *Outcome, f *Figures) {
	man := &run.Manifest
	man.Tool, man.Version, man.GoVersion, man.RunID = "psrlcb", p.Version, goVersion(), run.RunID
	man.Inputs, man.Parameters, man.Seed = files, params, p.Seed
	man.Rows, man.Episodes, man.Horizon = d.Rows, d.NumEpisodes(), d.Horizon
	man.NumObs, man.NumActions = d.NumObs(), d.NumActions()
	man.Quarantined = []Quarantined{}
	for _, q := range d.Quarantined {
		man.Quarantined = append(man.Quarantined, Quarantined(q))
	}
	man.ThetaMin = out.Fit.ThetaMin
	man.Plan = *out.Plan
	man.Theory = out.Theory
	man.RewardCheck = out.RewardCheck
	man.Fallback = out.Fallback
	man.Compared = out.Compared
	man.Headline = headline(d, out, f)
	man.Notes = append(notes(d, out, p), out.Notes...)
	if n := len(d.Merged); n > 0 {
		man.Notes = append(man.Notes, mergedNote(d, p.MaxObservations))
	}
	man.Headline.Evidence = assess(man.Headline, d.NumEpisodes()).evidence
	man.Headline.Recommendation = recommendation(man.Headline.Evidence)
	man.Headline.Verdict = strings.Join(Verdict(run), " ")
}

// headline is the manifest's headline figures, on the [0,1] scale and in
// the user's units; the evidence, recommendation and verdict are
// fillManifest's.
func headline(d *ingest.Dataset, out *Outcome, f *Figures) Headline {
	m := out.Model
	units := returnUnits(m)
	val, iw, beh, behHigh := f.Val, f.IW, f.Beh, f.BehHigh
	return Headline{
		LCB: Float(val.LCB), ModelValue: Float(val.Reward), BonusValue: Float(val.Bonus),
		IWValue: Float(iw.Mean), IWLow: Float(iw.Lower), IWHigh: Float(iw.Upper),
		LCBUnits: units(val.LCB), ModelValueUnits: units(val.Reward),
		IWValueUnits: units(iw.Mean), IWLowUnits: units(iw.Lower), IWHighUnits: units(iw.Upper),
		BehaviorValue: Float(beh), BehaviorUnits: units(beh),
		BehaviorHigh: Float(behHigh), BehaviorHighUnits: units(behHigh),
		ReturnMin: Float(f.RetLo), ReturnMax: Float(f.RetHi),
		ESS: Float(iw.ESS), CInf: Float(f.Cov.CInf), Iota: Float(f.Sum.Iota), IotaEstimated: !d.HasPropensity(),
		ThetaMinSlack: Float(out.Fit.ThetaMin.Slack), Alpha: Float(out.Alpha), BoundAlpha: Float(boundAlpha(out)), Rank: m.States,
		PlanExact: out.Plan.Exact, PlanGap: Float(out.Plan.GapBound),
	}
}

// mergedNote says how many rare observations --max-observations mapped
// to ingest.OtherSymbol, and how many logged steps they cover.
func mergedNote(d *ingest.Dataset, maxObs int) string {
	steps := int64(0)
	for _, s := range d.Merged {
		steps += s.Count
	}
	return fmt.Sprintf("--max-observations %d: %d rare observations (%d logged steps, %.2f%%) were mapped to %s; the mapping is in model.arrow (param = \"other\").",
		maxObs, len(d.Merged), steps, 100*float64(steps)/float64(len(d.Obs)), ingest.OtherSymbol)
}

func notes(d *ingest.Dataset, out *Outcome, p Params) []string {
	n := dataNotes(d, out, p)
	if out.Selection != nil {
		n = append(n, fmt.Sprintf("α = %.3g was chosen among %d candidates by the %s (%.0f%% of episodes in the evaluation part); the final model was then fitted on all episodes.", out.Alpha, len(out.Selection.Candidates), out.Selection.Criterion, 100*p.SelectHeldOut))
		if out.Selection.Reason != "" {
			n = append(n, out.Selection.Reason)
		}
	}
	if fb := out.Fallback; fb != nil {
		n = append(n, fallbackNote(fb))
	}
	if out.Bound != nil && (out.Fallback == nil || !out.Fallback.Used) {
		n = append(n, boundNote(out))
	}
	if rt := out.Fit.RankTable; len(rt) > 1 {
		n = append(n, rankNote(rt, out.Selection != nil))
	}
	if out.Theory != nil {
		n = append(n, fmt.Sprintf("α is the paper's α̂ = %.4g (β̂ = %.4g, ι = %.4g, γ = %.4g).", out.Theory.Alpha, out.Theory.BetaHat, out.Theory.Iota, out.Theory.Gamma))
	}
	n = append(n, planNotes(out.Plan)...)
	n = append(n, "The importance-weighted value of π̄ is computed on the same logs the policy was chosen from (in-sample), so it is mildly optimistic; the held-out figures of the α candidates are not.")
	return n
}

// dataNotes are the notes on what the logs lacked: propensities, enough
// episodes to hold some out for the rank, or prefixes above Θ_min.
func dataNotes(d *ingest.Dataset, out *Outcome, p Params) []string {
	var n []string
	if !d.HasPropensity() {
		n = append(n, "The logs carry no propensities: π^b(a_h|o_h) was estimated by the smoothed frequency of each action among the logged steps with the same step and observation; ι, C∞, importance weights and ESS are estimated.")
	}
	if p.RankOption == "auto" && len(out.Fit.RankTable) == 0 {
		n = append(n, fmt.Sprintf("Too few episodes (%d) to hold any out for choosing the rank: rank %d was used without a held-out comparison.", d.NumEpisodes(), out.Model.States))
	}
	if tm := out.Fit.ThetaMin; tm.Binding > 0 {
		n = append(n, fmt.Sprintf("Θ_min bound on %d prefixes: the fit was mixed with weight %.3g toward the floor model, changing the log-likelihood by %.4g.", tm.Binding, tm.MixWeight, tm.DeltaLogLik))
	}
	return n
}

// boundNote says why the reported lower bound prices the bonus at a
// larger α than the plan's (--lcb-correction cross-fit), or that it is
// vacuous when no finite α covers the model's optimism.
func boundNote(out *Outcome) string {
	why := fmt.Sprintf("at the planning α = %.3g, the bound of the chosen candidate's plan under the model of one half was above what the model of the other half supports for that plan (its bound at α = max(α, 1)), so the bonus did not cover the model's optimism about its own plan", out.Alpha)
	if math.IsInf(out.BoundAlpha, 1) {
		return "The reported lower bound charges the bonus at its cap of 1 (the whole return range) on every trajectory, so it is vacuous: " + why + ", and no finite α covers it (--lcb-correction cross-fit; the policy is unchanged)."
	}
	return fmt.Sprintf("The reported lower bound prices the bonus at α = %.3g instead of the planning α = %.3g: %s; α = %.3g is the least that does (--lcb-correction cross-fit; the policy is unchanged).", out.BoundAlpha, out.Alpha, why, out.BoundAlpha)
}

// rankNote says which rank the held-out likelihood chose among the
// search's, and on which episodes (within the α selection's training
// part when selected), and what the growth on all the logs found.
func rankNote(rt []estimate.RankRow, selected bool) string {
	var chosen estimate.RankRow
	lo, hi := rt[0].Rank, rt[0].Rank
	for _, r := range rt {
		if r.Chosen {
			chosen = r
		}
		lo, hi = min(lo, r.Rank), max(hi, r.Rank)
	}
	where := "a share of the episodes held out from the search's fits"
	if selected {
		where += "; the α selection's fits and the final fit were warm-started from the search's model"
	}
	n := fmt.Sprintf("The rank r = %d was chosen among %d to %d by the held-out log-likelihood, on %s (plot: held-out likelihood per rank; fit.arrow rows of kind rank).", chosen.Rank, lo, hi, where)
	return n + growNote(rt)
}

// growNote says what the growth on all the logs found, when it ran: the
// rows trained on more episodes than the search's first row, the
// smaller rank first (in one form, or in both when the search compared
// them there) and the larger rank last.
func growNote(rt []estimate.RankRow) string {
	var grown []estimate.RankRow
	for _, r := range rt {
		if r.Episodes > rt[0].Episodes {
			grown = append(grown, r)
		}
	}
	if len(grown) < 2 {
		return ""
	}
	// At most two rows of the smaller rank: the search's form, then the
	// other.
	los, hi := grown[:len(grown)-1], grown[len(grown)-1]
	lo, other := los[0], los[len(los)-1]
	if other.HeldOutLogLik > lo.HeldOutLogLik {
		lo, other = other, lo
	}
	per := func(x float64) float64 { return x / float64(max(lo.HeldOutEpisodes, 1)) }
	note := fmt.Sprintf(" Rank %d lost to rank %d on the search's sample, so both were fitted again on all the logs (%d training episodes, %d held out):", hi.Rank, lo.Rank, lo.Episodes, lo.HeldOutEpisodes)
	if len(los) > 1 {
		note += fmt.Sprintf(" rank %d in both model forms, of which the %s form predicted the held-out episodes better (by %.4g nats per episode) and was grown;", lo.Rank, lo.Form, per(lo.HeldOutLogLik-other.HeldOutLogLik))
	}
	if hi.Chosen {
		return note + fmt.Sprintf(" there rank %d won, by %.4g nats per held-out episode, and was chosen.", hi.Rank, per(hi.HeldOutLogLik-lo.HeldOutLogLik))
	}
	return note + fmt.Sprintf(" rank %d did not win there beyond the noise either.", hi.Rank)
}

// BonusSaturated says whether the plan's expected bonus is at least half
// its cap (min{α√Σ, 1} ≤ 1): there the upper bound, which knows the
// concave bonus only through a straight line below it, is at its
// loosest (on hallway's fitted model at H = 20, a plan of expected bonus
// 0.88 at α = 3 stated a gap of 0.69, where the same model states
// 0.00056 at α = 0).
func BonusSaturated(pl *policy.PlanStats) bool {
	return pl.Alpha > 0 && pl.ValueBonus >= 0.5
}

// ChordOwnsGap says whether at least half of a stated gap above
// policy.TargetGap is PlanStats.BonusBoundGap, the amount by which the upper
// bound overvalues the written policy itself (its relaxation of the
// bonus, PlanStats.ChargeWords, charges the policy that much less than
// its bonus). Even were the policy optimal, the stated gap would be at
// least that, and more points or --hull-bound leave that relaxation
// alone.
func ChordOwnsGap(pl *policy.PlanStats) bool {
	return pl.GapBound > policy.TargetGap && pl.BonusBoundGap >= pl.GapBound/2
}

// BoundOwnsGap says whether a stated gap is read as the upper bound's
// (BonusSaturated or ChordOwnsGap), so that neither the summary nor the
// report suggests more points or --hull-bound for it.
func BoundOwnsGap(pl *policy.PlanStats) bool {
	return BonusSaturated(pl) || ChordOwnsGap(pl)
}

// ChordGapNote explains a stated gap when ChordOwnsGap.
func ChordGapNote(pl *policy.PlanStats) string {
	return fmt.Sprintf("That gap is above %.2g, and the upper bound overvalues this very policy by at least %.3g of it%s: in place of the bonus the bound charges %s, and at this policy that charge falls %.3g short of the expected bonus (%.3g, α = %.3g). Were the policy optimal, the stated gap would still be at least %.3g, so read that part as the bound's looseness; more points or --hull-bound do not change that charge (docs/planning.md, \"What is reported\").", policy.TargetGap, pl.BonusBoundGap, wholeGap(pl), pl.ChargeWords(), pl.BonusBoundGap, pl.ValueBonus, pl.Alpha, pl.BonusBoundGap)
}

// BoundOwnsWholeGap says whether BonusBoundGap is the whole stated gap
// (it is capped at it): the bound's relaxation values the written policy
// itself at the bound, so the bound cannot tell it from the optimum.
func BoundOwnsWholeGap(pl *policy.PlanStats) bool {
	return pl.GapBound > 0 && pl.BonusBoundGap >= pl.GapBound
}

// wholeGap is ChordGapNote's remark when BoundOwnsWholeGap.
func wholeGap(pl *policy.PlanStats) string {
	if BoundOwnsWholeGap(pl) {
		return " (all of it: the bound cannot tell this policy from the optimum)"
	}
	return ""
}

// SaturatedGapNote explains a stated gap above policy.TargetGap when
// BonusSaturated.
func SaturatedGapNote(pl *policy.PlanStats) string {
	return fmt.Sprintf("That gap is above %.2g while the plan's expected bonus is %.2f of its cap of 1 (α = %.3g): the upper bound knows the bonus only through a straight line below it, so the gap may be mostly the bound's rather than the policy's. Read it as unknown; more points would not close it (docs/planning.md, \"What is reported\").", policy.TargetGap, pl.ValueBonus, pl.Alpha)
}

// GapReason is what the summary and the report say of a belief plan's
// stated gap (GapReasonOf).
type GapReason int

// The reasons, in the order GapReasonOf tries them.
const (
	GapMet         GapReason = iota // at most policy.TargetGap: nothing to say
	GapChord                        // ChordOwnsGap: the bound overvalues this very policy
	GapSaturated                    // BonusSaturated: the bonus near its cap, the gap unknown
	GapPointsTried                  // points capped, but the gap search's beliefs gave no better plan
	GapPoints                       // points capped: more points may close it
	GapRelaxation                   // every belief held: the bound's relaxation of the bonus
)

// GapReasonOf is the first reason that applies to the plan pl's stated
// gap, so that the summary and the report give the same one.
func GapReasonOf(pl *policy.PlanStats) GapReason {
	switch {
	case pl.GapBound <= policy.TargetGap:
		return GapMet
	case ChordOwnsGap(pl):
		return GapChord
	case BonusSaturated(pl):
		return GapSaturated
	case pl.PointsCapped && pl.GapPoints > 0 && !pl.GapReplanned:
		// The gap search added beliefs where the upper bound's excess
		// lies, and the plan with them was no better (docs/planning.md,
		// "The gap search"): the run's own evidence that more points
		// are unlikely to close the gap.
		return GapPointsTried
	case pl.PointsCapped:
		return GapPoints
	}
	return GapRelaxation
}

// GapSearchNote says what the belief planner's gap search did (policy
// package, gapsearch.go): it ran when the plan's first stated gap was
// above policy.TargetGap.
func GapSearchNote(pl *policy.PlanStats) string {
	kept := "the first plan stayed the better one"
	if pl.GapReplanned {
		kept = "the plan with them was the better one and is the policy"
	}
	added := fmt.Sprintf("added the %d belief%s it passed to the plan's points", pl.GapPoints, plural(pl.GapPoints))
	if pl.GapPoints == 0 {
		added = "passed no belief the plan's points lacked"
	}
	return fmt.Sprintf("The first plan's stated gap was above %.2g, so a gap search followed the upper bound's largest excess over a lower bound of the same relaxed problem (%d trial%s), backed the bound up there and %s; %s.", policy.TargetGap, pl.GapTrials, plural(pl.GapTrials), added, kept)
}

// planNotes say how the plan was made when it is not the exact tree: the
// belief planner's controller with its stated gap, or the approximate
// tree search.
func planNotes(pl *policy.PlanStats) []string {
	if pl.Planner == policy.PlannerBelief {
		n := []string{fmt.Sprintf("The history tree (%.3g nodes) exceeded the exact planner's budget: the policy was planned over the model's beliefs (%d points per step) with the tangent upper bound of the bonus at Σ = %.3g; the policy is a controller that decides every history from the model's belief (%s), and its table holds the %d histories it reaches with model probability ≥ %.3g. The values are exact on the table; the histories past it, which the policy reaches with model probability %.3g, are valued by rollouts of the controller under the model (Monte Carlo standard error %.2g on the [0,1] scale). The optimum of E[R − b̂] at the planning α = %.3g is at most %.3g above the policy's own value there (%.4g on the [0,1] scale; the reported lower bound is that value unless it prices the bonus at a larger α).", pl.TreeNodes, pl.Points, pl.TangentPoint, ControllerFile, pl.Nodes, pl.Threshold, pl.RolloutMass, pl.ValueSE, pl.Alpha, pl.GapBound, pl.Value)}
		if pl.BeliefGap > 0 {
			n = append(n, searchNote(pl))
		}
		if pl.GapTrials > 0 {
			n = append(n, GapSearchNote(pl))
		}
		switch GapReasonOf(pl) {
		case GapMet:
		case GapChord:
			n = append(n, ChordGapNote(pl))
		case GapSaturated:
			n = append(n, SaturatedGapNote(pl))
		case GapPointsTried:
			n = append(n, fmt.Sprintf("That gap is above %.2g. Some steps reach more beliefs than the %d points planned at, but the gap search added %d belief%s where the upper bound's excess lies and the plan with them was no better, so more points (--plan-points) are unlikely to close it: what is left is more likely the upper bound's relaxation of the bonus than the policy's distance from the optimum.", policy.TargetGap, pl.Points, pl.GapPoints, plural(pl.GapPoints)))
		case GapPoints:
			n = append(n, fmt.Sprintf("That gap is above %.2g: some steps reach more beliefs than the %d points planned at, and more points (--plan-points) may close it.", policy.TargetGap, pl.Points))
		case GapRelaxation:
			n = append(n, fmt.Sprintf("That gap is above %.2g although the points held every belief the model reaches: it is the upper bound's relaxation of the bonus (a chord of the concave bonus), not a loss more points would recover.", policy.TargetGap))
		}
		if pl.HullBound {
			n = append(n, "The upper bound interpolated between its belief points by their convex hull (--hull-bound).")
		} else if pl.GapBound > policy.TargetGap && !BoundOwnsGap(pl) {
			n = append(n, "Part of a gap may be the upper bound's own looseness between its belief points: --hull-bound states it against a tighter bound, the policy unchanged.")
		}
		return n
	}
	if !pl.Exact {
		n := []string{fmt.Sprintf("The history tree (%.3g nodes) exceeded the planner's budget: branches whose observation path has probability below %.3g under every policy were not expanded, and the model values stand in the midpoint of their range there. The policy's objective is within %.3g of the exact optimum.", pl.TreeNodes, pl.Epsilon, pl.GapBound)}
		if pl.BeliefGap > 0 {
			n = append(n, fmt.Sprintf("The belief planner planned first and stated a gap of %.3g; this search's policy is certainly better (its value less its gap bound is above the belief plan's value), so it is the policy. Past its table, whose histories leave it only with model probability %.3g, the belief planner's controller (%s) decides.", pl.BeliefGap, pl.PrunedMass, ControllerFile))
		}
		return n
	}
	return nil
}

// searchNote says what the pruned search that planned beside a kept
// belief plan did to its stated gap.
func searchNote(pl *policy.PlanStats) string {
	head := fmt.Sprintf("The belief planner's own upper bound stated a gap of %.3g, so a pruned search of the history tree planned beside it (docs/planning.md, \"The pruned search's second opinion\"). Its policy was not certainly better", pl.BeliefGap)
	if pl.GapBound < pl.BeliefGap {
		return fmt.Sprintf("%s, but its value plus its gap bound (%.3g) caps the optimum and brings the stated gap to %.3g.", head, pl.SearchGap, pl.GapBound)
	}
	return fmt.Sprintf("%s, and its gap bound (%.3g) did not tighten the stated one.", head, pl.SearchGap)
}

// runID is a content hash of the inputs, parameters and seed, so the same
// run gives the same tables byte for byte.
func runID(inputs []InputFile, params map[string]any, seed uint64) string {
	h := sha256.New()
	for _, in := range inputs {
		fmt.Fprintf(h, "%s\n", in.SHA256)
	}
	// The memory limit is the machine's (half its memory by default): it
	// changes the run only through the row budget it imposes, which
	// plan_rows_limited records, and the spill file, which changes nothing.
	// Without them the same run on two machines has one id.
	ids := maps.Clone(params)
	delete(ids, "memory_limit")
	if ids["plan_rows_limited"] == int64(0) {
		delete(ids, "plan_rows_limited")
	}
	b, _ := json.Marshal(ids)
	h.Write(b)
	fmt.Fprintf(h, "%d", seed)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// fallbackNote says what the behaviour fallback compared and what it
// returned.
func fallbackNote(fb *Fallback) string {
	var c []string
	for _, x := range fb.Candidates {
		if math.IsInf(float64(x.Bound), -1) {
			c = append(c, fmt.Sprintf("the %s, no bound (effective sample size %.0f, below %d)", CandidateWords(x.Name), float64(x.ESS), MinEpisodesForClaim))
		} else {
			c = append(c, fmt.Sprintf("the %s, %.4g (effective sample size %.0f)", CandidateWords(x.Name), float64(x.IWLowerUnits), float64(x.ESS)))
		}
	}
	cands := strings.Join(c, "; ")
	// The plan's score is one of two figures; say which.
	score := fmt.Sprintf("its lower bound under the held-out model at α = %.3g, %.4g in your units", float64(fb.PlanCrossAlpha), float64(fb.PlanBoundUnits))
	if fb.PlanBound == fb.PlanIWUpper && fb.PlanBound != fb.PlanCrossBound {
		score = fmt.Sprintf("the upper end of its importance-weighted 95%% interval on the held-out episodes, %.4g in your units (an upper bound of a noisy estimate, which can lie beyond the logged returns)", float64(fb.PlanBoundUnits))
	}
	if x := fb.ChosenCandidate(); x != nil {
		return fmt.Sprintf("Behaviour fallback (--fallback behavior): on the %d held-out episodes the planned policy's score, %s, was below what the logs prove of a policy that keeps to the logged actions (importance-weighted 95%% lower bounds: %s). policy.arrow holds the %s, fitted on all episodes, and the reported lower bound is its held-out bound; --fallback none returns the plan.",
			fb.HeldOutEpisodes, score, cands, CandidateWords(x.Name))
	}
	return fmt.Sprintf("Behaviour fallback (--fallback behavior) checked and not used: on the %d held-out episodes the planned policy's score, %s, is at least the importance-weighted lower bounds of the policies that keep to the logged actions (%s).",
		fb.HeldOutEpisodes, score, cands)
}

// CandidateName is a fallback candidate's short name for a reader.
func CandidateName(name string) string {
	switch name {
	case "clone":
		return "behaviour's clone"
	case "improved_clone":
		return "behaviour's improved clone"
	case "improved_behavior":
		return "improved behaviour"
	}
	return name
}

// CandidateWords names a fallback candidate for a reader, with what it is.
func CandidateWords(name string) string {
	switch name {
	case "clone":
		return "behaviour's clone (the action logged most often at each history)"
	case "improved_clone":
		return "behaviour's improved clone (the action logged most often at each history, or another logged action where the logs show its mean return from there on larger by more than 1.96 standard errors)"
	case "improved_behavior":
		return "improved behaviour (a stochastic policy: at each history the logged actions with the behaviour's logged probabilities, or one logged action where the logs show its mean return from there on larger than that of the other logged actions by more than 1.96 standard errors)"
	}
	return name
}

// boundAlpha is the α the reported bound prices the bonus at: the
// correction's when it moved the bound, the planning α otherwise.
func boundAlpha(out *Outcome) float64 {
	if out.Bound != nil && out.BoundAlpha > 0 {
		return out.BoundAlpha
	}
	return out.Alpha
}
