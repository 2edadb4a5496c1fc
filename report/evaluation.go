package report

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html/template"
	"path/filepath"
	"strings"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/ope"
)

// Files of an evaluation's output directory (psrlcb evaluate --logs --out).
const (
	EstimatesFile = "estimates.arrow"
)

// EvaluationFiles are the files an evaluation writes, manifest first.
func EvaluationFiles() []string { return []string{ManifestFile, EstimatesFile, HTMLFile} }

// EstimateRow is one estimator of an evaluation, in the logs' units
// (null where the estimator could not be computed; Reason says why).
type EstimateRow struct {
	Estimator      string `json:"estimator"`
	Value          Float  `json:"value"`
	Lower          Float  `json:"lower"`
	Upper          Float  `json:"upper"`
	Interval       string `json:"interval"`
	NormalLower    Float  `json:"normal_lower"`
	NormalUpper    Float  `json:"normal_upper"`
	BernsteinLower Float  `json:"bernstein_lower"`
	BernsteinUpper Float  `json:"bernstein_upper"`
	ESS            Float  `json:"ess"`
	Episodes       int    `json:"episodes"`
	Reliable       bool   `json:"reliable"`
	Reason         string `json:"reason,omitempty"`
}

// Evaluation is an off-policy evaluation as written: its manifest (also
// the --json output) and what the page shows.
type Evaluation struct {
	Tool        string             `json:"tool"`
	Version     string             `json:"version"`
	GoVersion   string             `json:"go_version"`
	RunID       string             `json:"run_id"`
	Inputs      []InputFile        `json:"inputs"`
	Target      string             `json:"target"`
	Parameters  map[string]any     `json:"parameters"`
	Episodes    int                `json:"episodes"`
	Horizon     int                `json:"horizon"`
	Quarantined []Quarantined      `json:"quarantined"`
	Estimates   []EstimateRow      `json:"estimates"`
	Recommended string             `json:"recommended"`
	Summary     string             `json:"summary"`
	Models      string             `json:"models,omitempty"`
	Notes       []string           `json:"notes"`
	StageTimes  map[string]float64 `json:"stage_seconds"`
}

// EstimateRows converts the estimates for writing.
func EstimateRows(es []ope.Estimate) []EstimateRow {
	out := make([]EstimateRow, len(es))
	for i, e := range es {
		out[i] = EstimateRow{Estimator: e.Estimator, Value: Float(e.Value), Lower: Float(e.Lower), Upper: Float(e.Upper),
			Interval: e.Interval, NormalLower: Float(e.NormalLower), NormalUpper: Float(e.NormalUpper),
			BernsteinLower: Float(e.BernsteinLower), BernsteinUpper: Float(e.BernsteinUpper),
			ESS: Float(e.ESS), Episodes: e.Episodes, Reliable: e.Reliable, Reason: e.Reason}
	}
	return out
}

// EvaluationSummary is the sentence an evaluation leads with: the
// recommended estimate with its interval, beside the behaviour's mean.
func EvaluationSummary(ev *Evaluation) string {
	rec := estimateNamed(ev.Estimates, ev.Recommended)
	var beh *EstimateRow // the logs' mean, when it is not the recommended row itself
	if ev.Recommended != ope.EstBehavior {
		beh = estimateNamed(ev.Estimates, ope.EstBehavior)
	}
	behavior := ""
	if beh != nil {
		behavior = fmt.Sprintf("; behaviour (the logs' mean): %s", num(float64(beh.Value), 4))
	}
	if rec == nil {
		return "The logs cannot estimate the evaluated policy's value: no estimator could be computed" + behavior + "."
	}
	s := fmt.Sprintf("The evaluated policy: %s per episode", num(float64(rec.Value), 4)) + intervalText(rec)
	s += fmt.Sprintf(" (%s)%s.", EstimatorWords(rec.Estimator), behavior)
	if !rec.Reliable || rec.Estimator == ope.EstModel {
		s += " Caution: " + rec.Reason + "."
	}
	return s
}

// EstimatorWords names an estimator for a reader.
func EstimatorWords(name string) string {
	switch name {
	case ope.EstIS:
		return "importance sampling"
	case ope.EstWIS:
		return "self-normalised importance sampling"
	case ope.EstPDIS:
		return "per-decision importance sampling"
	case ope.EstWPDIS:
		return "self-normalised per-decision importance sampling"
	case ope.EstModel:
		return "the fitted model's value"
	case ope.EstModelLCB:
		return "the fitted model's lower bound"
	case ope.EstDR:
		return "doubly robust, cross-fitted"
	case ope.EstWDR:
		return "weighted doubly robust, cross-fitted"
	case ope.EstBehavior:
		return "the behaviour's mean return in the logs"
	}
	return name
}

// WriteEvaluation writes estimates.arrow, manifest.json and report.html
// of an evaluation into dir.
func WriteEvaluation(dir string, ev *Evaluation) error {
	if err := arrowio.WriteArrow(filepath.Join(dir, EstimatesFile), estimatesTable(ev)); err != nil {
		return err
	}
	b, err := marshalFinite(ev)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, ManifestFile), append(b, '\n')); err != nil {
		return err
	}
	var page bytes.Buffer
	if err := evalTmpl.Execute(&page, ev); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, HTMLFile), page.Bytes())
}

// estimatesTable is estimates.arrow: one row per estimator.
func estimatesTable(ev *Evaluation) Table {
	meta := map[string]string{"psrlcb.run_id": ev.RunID, "psrlcb.table": "estimates", "psrlcb.recommended": ev.Recommended}
	var name, interval, reason []string
	var val, lo, hi, nlo, nhi, blo, bhi, ess []float64
	var eps []int64
	var rel []bool
	for _, e := range ev.Estimates {
		name, interval, reason = append(name, e.Estimator), append(interval, e.Interval), append(reason, e.Reason)
		val, lo, hi = append(val, float64(e.Value)), append(lo, float64(e.Lower)), append(hi, float64(e.Upper))
		nlo, nhi = append(nlo, float64(e.NormalLower)), append(nhi, float64(e.NormalUpper))
		blo, bhi = append(blo, float64(e.BernsteinLower)), append(bhi, float64(e.BernsteinUpper))
		ess, eps, rel = append(ess, float64(e.ESS)), append(eps, int64(e.Episodes)), append(rel, e.Reliable)
	}
	return Table{Meta: meta, Columns: []Column{
		{Name: "estimator", String: name}, {Name: "value", Float64: val}, {Name: "lower", Float64: lo}, {Name: "upper", Float64: hi},
		{Name: "interval", String: interval}, {Name: "normal_lower", Float64: nlo}, {Name: "normal_upper", Float64: nhi},
		{Name: "bernstein_lower", Float64: blo}, {Name: "bernstein_upper", Float64: bhi},
		{Name: "ess", Float64: ess}, {Name: "episodes", Int64: eps}, {Name: "reliable", Bool: rel}, {Name: "reason", String: reason},
	}}
}

// HashInputs hashes the input files for a run's or an evaluation's manifest.
func HashInputs(ctx context.Context, files []string) ([]InputFile, error) {
	var out []InputFile
	for _, f := range files {
		in, err := hashFile(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

var evalTmpl = template.Must(template.New("evaluation").Funcs(template.FuncMap{
	"num":   func(f Float) string { return num(float64(f), 4) },
	"words": EstimatorWords,
	"lower": strings.ToLower,
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>psrlcb evaluation {{.RunID}}</title>
<style>
body{font-family:` + pageFonts + `;max-width:1100px;margin:1.5em auto;padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0} td,th{padding:.25em .7em;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{font-weight:600;background:#fafafa} td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.verdict{background:#f5f7fa;border-left:4px solid #4a78c2;padding:.3em 1em} .muted{color:#666}
tr.rec td{font-weight:600}
</style></head><body>
<h1>Off-policy evaluation</h1>
<p class="muted">{{.Target}} on {{.Episodes}} logged episodes of {{.Horizon}} steps · run {{.RunID}}</p>
<div class="verdict"><p>{{.Summary}}</p></div>
<h2>Estimates</h2>
<p>Values are expected returns per episode in the logs' units. Interval: 95%, {{"bootstrap"}} percentile over episodes unless the row says otherwise; the normal and empirical-Bernstein intervals are beside it where computed. ESS is the effective sample size of the importance weights; episodes, how many logged episodes follow the policy to the end (weight above zero). The row in bold is the one the summary leads with.</p>
<div style="overflow-x:auto"><table>
<tr><th>estimator</th><th>value</th><th>95% interval</th><th>normal</th><th>Bernstein</th><th>ESS</th><th>episodes</th><th>note</th></tr>
{{range .Estimates}}<tr{{if eq .Estimator $.Recommended}} class="rec"{{end}}><td>{{words .Estimator}}</td><td class="n">{{num .Value}}</td><td class="n">[{{num .Lower}}, {{num .Upper}}]</td><td class="n">[{{num .NormalLower}}, {{num .NormalUpper}}]</td><td class="n">[{{num .BernsteinLower}}, {{num .BernsteinUpper}}]</td><td class="n">{{num .ESS}}</td><td class="n">{{.Episodes}}</td><td>{{.Reason}}</td></tr>
{{end}}</table></div>
{{if .Notes}}<h2>Notes</h2><ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<h2>The estimators</h2>
<p>Importance sampling reweights each logged episode by how likely the evaluated policy was to take its actions against how likely the behaviour was (the propensities); per-decision forms weight each reward by the actions before it only, and self-normalised forms divide by the sum of the weights (a little bias, much less variance). The fitted model's value is what a latent-state model of the logs expects of the policy, over whole histories; its lower bound subtracts the pessimistic bonus of <code>psrlcb fit</code>. Doubly robust estimators use the model's values to cancel most of the importance weights' noise and the weights to correct the model's errors; cross-fitted: each episode is corrected with a model fitted on the other half of the logs. Huang, Liang, Yang, ICLR 2024, arXiv:2307.00405 for the model and its bonus; Precup et al. 2000, Jiang &amp; Li 2016, Thomas &amp; Brunskill 2016 and Maurer &amp; Pontil 2009 for the estimators and the Bernstein bound.</p>
<h2>Inputs</h2>
<table>{{range .Inputs}}<tr><td>{{.Path}}</td><td class="n">{{.Bytes}} bytes</td><td class="muted">{{.SHA256}}</td></tr>{{end}}</table>
{{if .Models}}<p>Models: {{.Models}}.</p>{{end}}
<p><small>{{.Tool}} {{.Version}}, {{.GoVersion}}</small></p>
</body></html>
`))

// EvaluationID is the evaluation's run id: a hash of the inputs, the
// target and the parameters, so the same evaluation gets the same id.
func EvaluationID(ev *Evaluation) string {
	b, _ := marshalFinite(struct {
		Inputs     []InputFile
		Target     string
		Parameters map[string]any
	}{ev.Inputs, ev.Target, ev.Parameters})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])[:16]
}
