package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"strings"

	"gonum.org/v1/plot"
)

// headRow is one line of the headline table: the figure in the user's
// units of return first, on the [0,1] scale second.
type headRow struct {
	Group  string // starts a group of rows
	Label  template.HTML
	Term   string // glossary anchor
	Units  string
	Scaled string
}

// policyRowHTML is one node of the policy section, formatted.
type policyRowHTML struct {
	Step                      int
	IndentPx                  int    // padding of the tree level
	Obs, Action, Prefix       string // Prefix: the parent's action
	Prob                      string // the action's probability (a stochastic policy)
	Reach, Logged, ActShare   string
	Value, Bonus, LCB         string
	Departs                   bool
	MostLogged, LoggedEpisode string
}

type htmlData struct {
	Run      *Run
	Head     []headRow
	Figures  []htmlFig
	Verdict  []string
	Params   [][2]string
	Stages   [][2]string
	Policy   []policyRowHTML
	PolicyOf string // "the 300 most probable of 1234 nodes"
	// Stochastic says the policy table has a probability column.
	Stochastic bool
	// AlphaNote says, when they differ, that the rows are priced at the
	// planning α and the reported bound at a larger one ("" otherwise).
	AlphaNote  string
	Logs       bool
	Compare    []string
	Departures []string
	Compared   []comparedRowHTML
	// Quarantined are the first maxQuarantinedRows quarantined episodes
	// (all are in manifest.json), so the page stays small.
	Quarantined     []Quarantined
	QuarantinedMore bool
	Glossary        []glossEntry
	Summary         string
}

type glossEntry struct {
	ID   string
	Term template.HTML
	Text template.HTML
}

// maxQuarantinedRows bounds the quarantined episodes listed on the page.
const maxQuarantinedRows = 100

// stageOrder is the pipeline's order of stages (pipeline.Run).
var stageOrder = []string{"ingest", "rank", "select-α", "split", "estimate", "pessimism", "policy", "compare", "report"}

// orderedStages lists the stage times in pipeline order, then any other
// stage by name, then the total.
func orderedStages(times map[string]float64) [][2]string {
	var out [][2]string
	seen := map[string]bool{}
	total := 0.0
	add := func(k string) {
		if v, ok := times[k]; ok && !seen[k] {
			seen[k] = true
			total += v
			out = append(out, [2]string{k, seconds(v)})
		}
	}
	for _, k := range stageOrder {
		add(k)
	}
	for _, k := range sortedKeys(times) {
		add(k)
	}
	if len(out) > 1 {
		out = append(out, [2]string{"total", seconds(total)})
	}
	return out
}

func seconds(s float64) string {
	switch {
	case s < 0.01:
		return "<0.01 s"
	case s < 10:
		return fmt.Sprintf("%.2f s", s)
	case s < 100:
		return fmt.Sprintf("%.1f s", s)
	}
	return fmt.Sprintf("%.0f s", s)
}

// paramValue formats one run parameter for display: numbers to four
// significant digits, structures as compact JSON without empty fields.
// byteSize writes a byte count for a person: "12.5 GiB", or "none" for
// no limit.
func byteSize(b int64) string {
	if b <= 0 {
		return "none"
	}
	for _, u := range []struct {
		n    float64
		name string
	}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if float64(b) >= u.n {
			return fmt.Sprintf("%.3g %s (%d bytes)", float64(b)/u.n, u.name, b)
		}
	}
	return fmt.Sprintf("%d bytes", b)
}

func paramValue(v any) string {
	switch x := v.(type) {
	case float64:
		return num(x, 4)
	case float32:
		return num(float64(x), 4)
	case Float:
		return num(float64(x), 4)
	case string, bool, int, int32, int64, uint64:
		return fmt.Sprint(x)
	}
	return structValue(v)
}

// structValue writes a parameter that is a struct as its non-empty
// fields, "key=value, …" by key ("defaults" when every field is empty),
// or as JSON when it is not an object.
func structValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return string(b)
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		if s, ok := m[k].(string); ok && s == "" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%v", strings.ToLower(k), m[k]))
	}
	if len(parts) == 0 {
		return "defaults"
	}
	return strings.Join(parts, ", ")
}

// WriteHTML renders report.html: the headline figures, a plain-language
// verdict, the policy, the plots and a glossary, self-contained (inline
// SVG and CSS, no scripts, no fonts, no network).
func WriteHTML(path string, run *Run) error {
	b, err := RenderHTML(run)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, b)
}

// RenderHTML returns report.html's bytes.
func RenderHTML(run *Run) ([]byte, error) {
	d := htmlData{Run: run, Verdict: Verdict(run)}
	var err error
	if d.Figures, err = renderFigures(run); err != nil {
		return nil, err
	}
	d.Quarantined = run.Manifest.Quarantined
	if len(d.Quarantined) > maxQuarantinedRows {
		d.Quarantined, d.QuarantinedMore = d.Quarantined[:maxQuarantinedRows], true
	}
	d.Head = headRows(run)
	d.Params = paramRows(run.Manifest.Parameters)
	d.Stages = orderedStages(run.Manifest.StageTimes)
	d.Policy, d.PolicyOf, d.Logs = policyRows(run.Policy)
	d.Stochastic = run.Policy != nil && run.Policy.Stochastic
	d.AlphaNote = alphaNote(run.Manifest.Headline)
	d.Compare, d.Departures = compareText(run)
	d.Compared = comparedRows(run)
	d.Glossary = glossary(run)
	d.Summary = fmt.Sprintf("%d episodes of %d steps, %d observations, %d actions; %d episodes quarantined.",
		run.Manifest.Episodes, run.Manifest.Horizon, run.Manifest.NumObs, run.Manifest.NumActions, len(run.Manifest.Quarantined))
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// figureSpec is one figure of the page: shown when show says the run has
// its data, drawn by draw.
type figureSpec struct {
	id, title, caption string
	// titleOf, when set, replaces title (a title that names the run's
	// figures).
	titleOf func(*Run) string
	show    func(*Run) bool
	draw    func(*Run) (*plot.Plot, []legendItem, error)
}

// figureSpecs are the page's figures in page order.
var figureSpecs = []figureSpec{
	{id: "fig-rank", title: "Held-out likelihood per rank",
		caption: "Each rank r (number of latent states) was fitted on a training share of the episodes and scored on the held-out rest; the rank of highest held-out log-likelihood was chosen.",
		show:    func(r *Run) bool { return len(r.Ranks) > 1 },
		draw:    func(r *Run) (*plot.Plot, []legendItem, error) { return plotRanks(r.Ranks) }},
	{id: "fig-em",
		titleOf: func(r *Run) string {
			return fmt.Sprintf("EM convergence (rank %d, final fit)", r.Manifest.Headline.Rank)
		},
		caption: "How far each EM start's training log-likelihood lies below the best start's final value, per iteration (log scale; a gap below 0.01 nats is drawn at 0.01). The best start ends at the bottom; the others show how much worse a local optimum they reached.",
		show:    func(r *Run) bool { return len(r.Trace) > 0 },
		draw:    func(r *Run) (*plot.Plot, []legendItem, error) { return plotTrace(r.Trace, r.Manifest.Headline.Rank) }},
	{id: "fig-coverage", title: "Coverage of the policy's histories per step",
		caption: "Share of the policy's probability mass (under the fitted model) on histories that some logged episode followed.",
		show:    func(r *Run) bool { return len(r.Coverage) > 0 },
		draw:    drawCoverage(false)},
	{id: "fig-cinf", title: "C∞ per step",
		caption: "Largest ratio between the policy's and the behaviour's probability of a logged history up to step h (see C∞ in the glossary).",
		show:    func(r *Run) bool { return len(r.Coverage) > 0 },
		draw:    drawCoverage(true)},
	{id: "fig-bonus", title: "Bonus contribution per step",
		caption: "Distribution over logged episodes of each step's term of the bonus before α: quantile summaries, one set per step.",
		show:    func(r *Run) bool { return len(r.BonusSteps) > 0 },
		draw:    func(r *Run) (*plot.Plot, []legendItem, error) { return plotBonus(r.BonusSteps) }},
	{id: "fig-alpha", title: "α sweep",
		caption: "Model values of the policy planned with each candidate α, and its importance-weighted value on the held-out episodes (grey). Candidates are evenly spaced on the axis.",
		show:    func(r *Run) bool { return len(r.Alphas) > 1 },
		draw:    func(r *Run) (*plot.Plot, []legendItem, error) { return plotAlpha(r.Alphas) }},
}

// drawCoverage draws one of plotCoverage's two plots: the covered mass,
// or with cinf the running C∞.
func drawCoverage(cinf bool) func(*Run) (*plot.Plot, []legendItem, error) {
	return func(r *Run) (*plot.Plot, []legendItem, error) {
		p, q, err := plotCoverage(r.Coverage)
		if cinf {
			p = q
		}
		return p, nil, err
	}
}

// renderFigures draws the figures the run has data for, as SVG.
func renderFigures(run *Run) ([]htmlFig, error) {
	var figs []htmlFig
	for _, f := range figureSpecs {
		if !f.show(run) {
			continue
		}
		title := f.title
		if f.titleOf != nil {
			title = f.titleOf(run)
		}
		p, leg, err := f.draw(run)
		if err != nil {
			return nil, fmt.Errorf("report: plot %q: %w", title, err)
		}
		svg, err := svgPlot(p)
		if err != nil {
			return nil, fmt.Errorf("report: plot %q: %w", title, err)
		}
		figs = append(figs, htmlFig{ID: f.id, Title: title, SVG: svg, Legend: leg, Caption: f.caption})
	}
	return figs, nil
}

// paramRows are the run's parameters as the page lists them, by name.
func paramRows(params map[string]any) [][2]string {
	var rows [][2]string
	for _, k := range sortedKeys(params) {
		v := paramValue(params[k])
		if b, ok := params[k].(int64); ok && k == "memory_limit" {
			v = byteSize(b)
		}
		rows = append(rows, [2]string{k, v})
	}
	return rows
}

// alphaNote says, when they differ, that the policy table is priced at
// the planning α and the reported bound at a larger one.
func alphaNote(h Headline) string {
	if h.BoundAlpha == h.Alpha || math.IsNaN(float64(h.BoundAlpha)) {
		return ""
	}
	return fmt.Sprintf(", with the bonus priced at the planning α = %s, the objective the policy maximises: the reported lower bound above prices it at α = %s, so it is lower than these rows'", num(float64(h.Alpha), 3), num(float64(h.BoundAlpha), 3))
}

func headRows(run *Run) []headRow {
	h := run.Manifest.Headline
	f := func(x Float) string { return num(float64(x), 4) }
	iwUnits, iwScaled := iwIntervals(h)
	rows := []headRow{
		{Group: "Expected return of one episode, in your units of return", Label: "lower confidence bound V<sub>R</sub> − V<sub>b</sub>", Term: "g-lcb", Units: f(h.LCBUnits), Scaled: f(h.LCB)},
		{Label: "model value V<sub>R</sub> of π̄", Term: "g-vr", Units: f(h.ModelValueUnits), Scaled: f(h.ModelValue)},
		{Label: "bonus V<sub>b</sub> of π̄ (pessimism)", Term: "g-vb", Units: num(float64(h.ModelValueUnits-h.LCBUnits), 4), Scaled: f(h.BonusValue)},
		{Label: "importance-weighted value of π̄ from the logs, 95% interval", Term: "g-iw",
			Units: iwUnits, Scaled: iwScaled},
		{Label: "behaviour policy's mean return in the logs", Term: "g-behaviour", Units: f(h.BehaviorUnits), Scaled: f(h.BehaviorValue)},
		{Group: "How far the logs support the policy (counts and ratios)", Label: "effective sample size of the importance weights", Term: "g-ess", Units: fmt.Sprintf("%s of %d episodes", num(float64(h.ESS), 3), run.Manifest.Episodes)},
		{Label: "C∞ of π̄ (concentrability)", Term: "g-cinf", Units: num(float64(h.CInf), 3)},
		{Label: "ι, least logged propensity", Term: "g-iota", Units: num(float64(h.Iota), 3)},
		{Label: "Θ<sub>min</sub> slack", Term: "g-thetamin", Units: num(float64(h.ThetaMinSlack), 3) + " nats"},
		{Label: "α (bonus coefficient), rank", Term: "g-alpha", Units: fmt.Sprintf("%s, %d", num(float64(h.Alpha), 3), h.Rank)},
	}
	if h.IotaEstimated {
		rows[7].Label += " (estimated: the logs carry no propensities)"
	}
	rows = append(rows, headRow{Label: "planner", Term: "g-pi", Units: plannerWords(h)})
	rows[8].Group = "The fit"
	return rows
}

// iwIntervals is the importance-weighted value with its 95% interval, in
// the user's units and on the [0,1] scale ("—" when no logged episode
// follows π̄: the interval [0, 0] is no estimate).
func iwIntervals(h Headline) (units, scaled string) {
	if h.ESS < 1 {
		return "— (no logged episode follows the policy)", "—"
	}
	f := func(x Float) string { return num(float64(x), 4) }
	return fmt.Sprintf("%s [%s, %s]", f(h.IWValueUnits), f(h.IWLowUnits), f(h.IWHighUnits)),
		fmt.Sprintf("%s [%s, %s]", f(h.IWValue), f(h.IWLow), f(h.IWHigh))
}

// plannerWords says whether the plan is exact, or its worst-case gap.
func plannerWords(h Headline) string {
	if h.PlanExact {
		return "exact"
	}
	return "approximate, worst-case gap " + num(float64(h.PlanGap), 3) + " on the [0,1] scale"
}

func policyRows(v *PolicyView) ([]policyRowHTML, string, bool) {
	if v == nil {
		return nil, "", false
	}
	var out []policyRowHTML
	logs := false
	for _, r := range v.Rows {
		logs = logs || r.Logs
		if r.Reach < minPolicyReach && (!r.Logs || r.LoggedShare < minPolicyReach) {
			continue
		}
		out = append(out, policyRowOf(r))
	}
	of := fmt.Sprintf("the %d decision nodes that at least %s of episodes reach, under the model or in the logs, out of %d", len(out), pct(minPolicyReach), v.TotalNodes)
	if len(v.Rows) < v.TotalNodes {
		of += fmt.Sprintf(" (at most the %d most probable)", len(v.Rows))
	}
	return out, of, logs
}

// policyRowOf is a policy row as the page's table shows it, indented by
// its step.
func policyRowOf(r PolicyRow) policyRowHTML {
	pr := policyRowHTML{
		Step: r.Step, IndentPx: 6 + 14*(r.Step-1), Obs: r.Obs, Action: r.Action, Prob: num(r.Prob, 3),
		Reach: pct(r.Reach), Value: num(r.Value, 4), Bonus: num(r.Bonus, 3), LCB: num(r.LCB, 4),
	}
	if len(r.History) > 1 {
		pr.Prefix = r.History[len(r.History)-2] + " →"
	}
	if r.Logs {
		pr.Logged = pct(r.LoggedShare)
		pr.LoggedEpisode = fmt.Sprint(r.Logged)
		pr.ActShare = pct(r.ActionShare)
		pr.MostLogged = r.MostLogged
		pr.Departs = r.Departs
	}
	return pr
}

// minPolicyReach: nodes that fewer than one episode in a thousand reaches,
// under the model and in the logs, are left out of the page (they are in
// policy.arrow); they change the expected return by less than 0.1% of the
// return range.
const minPolicyReach = 0.001

// compareText is the "compared with the behaviour" paragraph.
func compareText(run *Run) (paras, departures []string) {
	c := run.Compare
	if c == nil {
		return nil, nil
	}
	h := run.Manifest.Headline
	gain := fmt.Sprintf("The model expects the policy to return %s per episode against the behaviour's logged mean of %s (a gain of %s).",
		num(float64(h.ModelValueUnits), 4), num(float64(h.BehaviorUnits), 4), num(c.Total, 4))
	ties := tiesText(c.Ties)
	if len(c.Departures) == 0 {
		return []string{fmt.Sprintf("Wherever the logs clearly favour one action, the policy takes it too (%d logged histories agree with the most logged action).%s The policy's gain comes from choosing consistently, and well, where the behaviour chose without a clear preference. %s", c.Agree, ties, gain)}, nil
	}
	steps := make([]string, len(c.Steps))
	for i, s := range c.Steps {
		steps[i] = fmt.Sprint(s)
	}
	out := []string{fmt.Sprintf("The policy departs from an action the logs clearly favour at %d logged histories, at step%s %s; under the model %s of its episodes meet such a departure. It agrees with the most logged action at %d logged histories.%s %s",
		len(c.Departures), plural(len(c.Steps)), strings.Join(steps, ", "), pct(c.DepartMass), c.Agree, ties, gain)}
	if g := undoAllText(c); g != "" {
		out = append(out, g)
	}
	items := departureItems(c.Departures[:min(len(c.Departures), 5)])
	return append(out, departuresLead(len(items), len(c.Departures))), items
}

// departuresLead introduces the list of the shown departures, of n.
func departuresLead(shown, n int) string {
	if n > shown {
		return fmt.Sprintf("The %d most probable of the %d departures (the others are highlighted in the policy table; values in your units of return, under the fitted model):", shown, n)
	}
	return "The departures, most probable first (values in your units of return, under the fitted model):"
}

// tiesText notes the logged histories where another action was logged
// slightly more often than the policy's ("" when there is none).
func tiesText(ties int) string {
	if ties == 0 {
		return ""
	}
	return fmt.Sprintf(" At %d logged histories another action was logged a little more often than the policy's, within sampling noise (no clear preference of the behaviour there).", ties)
}

// undoAllText says what taking the logs' favourite action at every
// departure would do to the model value ("" when not evaluated).
func undoAllText(c *Comparison) string {
	switch {
	case math.IsNaN(c.Gain):
		return ""
	case c.Gain >= 0:
		share := ""
		if c.Total > 0 {
			share = fmt.Sprintf(" (%s of the gain)", pct(math.Min(1, c.Gain/c.Total)))
		}
		return fmt.Sprintf("Taking the logs' favourite action at all of these departures instead would lower the policy's model value by %s per episode%s; the rest of the gain comes from where the policy follows the logs' favourite or the logs show none.", num(c.Gain, 3), share)
	default:
		return fmt.Sprintf("Taking the logs' favourite action at these departures instead would raise the policy's model value by %s per episode: the policy gives up model value there for a smaller bonus, that is, to stay where the logs say more (it maximises V_R − V_b, not V_R).", num(-c.Gain, 3))
	}
}

// departureItems describe each departure: where, what the logs took
// there, how probable it is under the model and what it adds.
func departureItems(deps []Departure) []string {
	var items []string
	for _, dep := range deps {
		r := dep.Row
		s := fmt.Sprintf("Step %d, after %s: %s instead of %s (of %d logged visits, %s took %s and %s took %s). Under the model %s of episodes get there",
			r.Step, r.HistoryString(), r.Action, r.MostLogged, r.Logged, pct(r.MostShare), r.MostLogged, pct(r.ActionShare), r.Action, pct(r.Reach))
		switch {
		case math.IsNaN(dep.Gain):
		case dep.Gain >= 0:
			s += fmt.Sprintf(", and this choice adds %s per episode to the model value", num(dep.Gain, 3))
		default:
			s += fmt.Sprintf(", and this choice costs %s per episode of model value for a smaller bonus", num(-dep.Gain, 3))
		}
		items = append(items, s+".")
	}
	return items
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func glossary(run *Run) []glossEntry {
	rng := ""
	if r := run.Range; r != nil {
		rng = template.HTMLEscapeString(fmt.Sprintf(" Here the logged returns run from %s to %s: 0 on this scale is %s and 1 is %s in your units.", num(r.Min, 4), num(r.Max, 4), num(r.Min, 4), num(r.Max, 4)))
	}
	g := func(id, term, text string) glossEntry {
		return glossEntry{ID: id, Term: template.HTML(term), Text: template.HTML(text)}
	}
	return []glossEntry{
		g("g-scale", "[0,1] scale", "The paper's rescaled return R = (return − least logged return) / (largest − least logged return), so every logged episode's return lies in [0,1]. Figures in <em>your units</em> are the same figures mapped back (differences such as the bonus are multiplied by the range)."+rng),
		g("g-pi", "π̄ (the policy)", "The deterministic, history-dependent policy PSR-LCB returns (Huang, Liang, Yang, ICLR 2024, arXiv:2307.00405, Algorithm 2): the maximiser of V<sub>R</sub> − V<sub>b</sub> under the fitted model. Its decision tree is in the <a href=\"#policy\">policy section</a> and in <code>policy.arrow</code>."),
		g("g-vr", "V<sub>R</sub> (model value)", "Expected return of one episode under π̄ according to the fitted model θ̂, in your units (or on the [0,1] scale): what the model predicts, before any pessimism. In the policy table: the expected return still to come from that step."),
		g("g-vb", "V<sub>b</sub> (bonus)", "Expected bonus of an episode under π̄ and the model, b̂(τ<sub>H</sub>) = min{α·(Σ<sub>h</sub> ‖ψ̄(τ<sub>h</sub>)‖²<sub>U<sub>h</sub>⁻¹</sub>)<sup>½</sup>, 1} on the [0,1] scale (times the return range in your units). It is large where the logs say little about the policy's histories."),
		g("g-lcb", "LCB (lower confidence bound)", "V<sub>R</sub> − V<sub>b</sub>: the pessimistic value π̄ maximises. With the paper's α̂ it is a lower bound of the true value with high probability; with α chosen on held-out episodes (the default) it is a calibrated estimate, not a guarantee."),
		g("g-iw", "importance-weighted value", "The logs' own estimate of π̄'s value, without the model: the mean over logged episodes of w·R, where w = Π<sub>h</sub> π̄(a<sub>h</sub>|τ<sub>h</sub>)/π<sup>b</sup>(a<sub>h</sub>|τ<sub>h</sub>) is 0 for episodes that depart from π̄ and 1/Π π<sup>b</sup> for those that follow it, with the normal 95% interval mean ± 1.96 standard errors. It can leave the [0,1] scale: single weights reach 1/ι<sup>H</sup>, so the estimate is not an average of values in [0,1], and with few matching episodes the symmetric interval of this skewed estimate extends past 0 or 1."),
		g("g-behaviour", "behaviour's mean return", "Average return of the logged episodes: the value of the policy that produced the logs (π<sup>b</sup>)."),
		g("g-ess", "ESS (effective sample size)", "(Σ w)² / Σ w² over the importance weights: about how many logged episodes the importance-weighted value rests on, out of all logged episodes. Below about 30 its interval is unreliable."),
		g("g-cinf", "C∞ (concentrability)", "Largest ratio P<sup>π̄</sup>(τ<sub>h</sub>) / P<sup>π<sup>b</sup></sup>(τ<sub>h</sub>) over logged histories that follow π̄, h = 1..H; the environment's factor cancels, leaving Π 1/π<sup>b</sup>(a<sub>t</sub>|τ<sub>t</sub>). Unitless: 1 means the logs visit the policy's histories as often as the policy would; 100 means some history is 100 times rarer in the logs."),
		g("g-iota", "ι", "Least logged propensity π<sup>b</sup>(a|τ) over the core action sequences: a probability in (0,1]. It enters the paper's α̂ and bounds the importance weights."),
		g("g-thetamin", "Θ<sub>min</sub> slack", "How far, in nats of log-probability, the fitted model lies inside Θ<sub>min</sub>, the paper's set of models whose history prefixes all have probability at least p<sub>min</sub>. Positive: the constraint does not bind."),
		g("g-psi", "ψ̄(τ<sub>h</sub>)", "The prediction features of history τ<sub>h</sub>: the model's probabilities of the core tests (short future observation sequences under given actions) after τ<sub>h</sub>. The bonus plot shows ‖ψ̄(τ<sub>h−1</sub>)‖²<sub>U⁻¹</sub> at step h."),
		g("g-uh", "U<sub>h</sub>", "λI + Σ<sub>k</sub> ψ̄(τ<sub>h</sub><sup>k</sup>) ψ̄(τ<sub>h</sub><sup>k</sup>)<sup>T</sup> over logged episodes k: how much the logs explored each direction of the features at step h. The norm ‖x‖<sub>U<sub>h</sub>⁻¹</sub> is small in directions the logs explored often."),
		g("g-alpha", "α", "Bonus coefficient: how strongly uncertainty is penalised. By default chosen among candidates by the cross-fitted value: each candidate's policy, planned with the model of one half of the episodes, is valued under the model fitted on the other half (see the α candidates); <code>--alpha theory</code> gives the paper's α̂."),
		g("g-rank", "rank", "Number of latent states r of the fitted model; chosen by the held-out log-likelihood (nats, summed over the held-out episodes) unless given."),
		g("g-reach", "reach", "Share of episodes that reach a decision node: under the model, P<sup>π̄</sup> of its history; in the logs, the share of logged episodes whose observations and earlier actions lead to it (they followed π̄ up to there)."),
	}
}

var pageTmpl = template.Must(template.New("report").Funcs(template.FuncMap{"num": num}).Parse(pageHTML))
