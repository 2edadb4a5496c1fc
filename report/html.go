package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// svgPlot renders p as an inline SVG fragment.
func svgPlot(p *plot.Plot) (template.HTML, error) {
	wt, err := p.WriterTo(6*vg.Inch, 3.2*vg.Inch, "svg")
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return "", err
	}
	// Drop the XML prolog so the SVG can sit inside HTML.
	b := buf.Bytes()
	if i := bytes.Index(b, []byte("<svg")); i > 0 {
		b = b[i:]
	}
	return template.HTML(b), nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	return p
}

// plotTrace: log-likelihood per EM iteration, one line per (rank, restart).
func plotTrace(rows []TraceRow, chosenRank int) (*plot.Plot, error) {
	p := newPlot("EM convergence (rank "+fmt.Sprint(chosenRank)+")", "iteration", "training log-likelihood")
	byRestart := map[int]plotter.XYs{}
	for _, r := range rows {
		if r.Rank != chosenRank || math.IsNaN(r.LogLik) || math.IsInf(r.LogLik, 0) {
			continue // a non-finite log-likelihood cannot be drawn; fit.arrow keeps it
		}
		byRestart[r.Restart] = append(byRestart[r.Restart], plotter.XY{X: float64(r.Iter), Y: r.LogLik})
	}
	keys := make([]int, 0, len(byRestart))
	for k := range byRestart {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var vs []any
	for _, k := range keys {
		vs = append(vs, fmt.Sprintf("restart %d", k), byRestart[k])
	}
	if len(keys) > 8 {
		p.Legend.Top = false
	}
	// The first iterations of a random start sit far below the rest;
	// zoom on the part where the starts are compared.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, xy := range byRestart {
		for _, pt := range xy {
			hi = math.Max(hi, pt.Y)
		}
	}
	for _, xy := range byRestart {
		if len(xy) > 2 {
			lo = math.Min(lo, xy[2].Y)
		}
	}
	if lo < hi {
		p.Y.Min, p.Y.Max = lo-0.05*(hi-lo), hi+0.05*(hi-lo)
	}
	return p, plotutil.AddLines(p, vs...)
}

func plotRanks(rows []RankRow) (*plot.Plot, error) {
	p := newPlot("Held-out log-likelihood per rank", "rank (latent states)", "held-out log-likelihood per episode")
	var xy plotter.XYs
	for _, r := range rows {
		xy = append(xy, plotter.XY{X: float64(r.Rank), Y: r.HeldOutL})
	}
	return p, plotutil.AddLinePoints(p, "held-out", xy)
}

func plotBonus(steps [][]float64) (*plot.Plot, error) {
	p := newPlot("Bonus contribution per step", "step h (history length)", "‖ψ̄(τ_h)‖² in U_h⁻¹ norm")
	for h, v := range steps {
		if len(v) == 0 {
			continue
		}
		b, err := plotter.NewBoxPlot(vg.Points(14), float64(h), plotter.Values(v))
		if err != nil {
			return nil, err
		}
		p.Add(b)
	}
	return p, nil
}

func plotCoverage(rows []CoverageRow) (*plot.Plot, *plot.Plot, error) {
	p := newPlot("Coverage of the policy's histories", "step h", "mass of π̄'s histories the logs contain")
	var mass, cinf plotter.XYs
	for _, r := range rows {
		mass = append(mass, plotter.XY{X: float64(r.Step), Y: r.CoveredMass})
		c := r.CInf
		if math.IsInf(c, 0) || math.IsNaN(c) {
			continue
		}
		cinf = append(cinf, plotter.XY{X: float64(r.Step), Y: c})
	}
	p.Y.Min, p.Y.Max = 0, 1.05
	if err := plotutil.AddLinePoints(p, "covered mass", mass); err != nil {
		return nil, nil, err
	}
	q := newPlot("Concentrability C∞ of π̄ up to step h", "step h", "C∞ estimate")
	if len(cinf) > 0 {
		if err := plotutil.AddLinePoints(q, "C∞", cinf); err != nil {
			return nil, nil, err
		}
	}
	return p, q, nil
}

func plotAlpha(rows []AlphaRow) (*plot.Plot, error) {
	p := newPlot("α sweep", "α (index of candidate, value in table)", "value on [0,1] scale")
	var vr, vb, lcb, iw plotter.XYs
	var errs plotter.YErrors
	for i, r := range rows {
		x := float64(i)
		vr = append(vr, plotter.XY{X: x, Y: r.ValueReward})
		vb = append(vb, plotter.XY{X: x, Y: r.ValueBonus})
		lcb = append(lcb, plotter.XY{X: x, Y: r.LCB})
		iw = append(iw, plotter.XY{X: x, Y: r.IW})
		errs = append(errs, struct{ Low, High float64 }{r.IW - r.IWLo, r.IWHi - r.IW})
	}
	if err := plotutil.AddLinePoints(p, "V_R (model)", vr, "V_b (bonus)", vb, "LCB", lcb); err != nil {
		return nil, err
	}
	s, err := plotter.NewScatter(iw)
	if err != nil {
		return nil, err
	}
	s.Color = color.RGBA{R: 200, A: 255}
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{iw, errs})
	if err != nil {
		return nil, err
	}
	eb.Color = s.Color
	p.Add(s, eb)
	p.Legend.Add("importance-weighted (95% CI)", s)
	labels := make([]string, len(rows))
	ticks := make([]plot.Tick, len(rows))
	for i, r := range rows {
		labels[i] = fmt.Sprintf("%.3g", r.Alpha)
		ticks[i] = plot.Tick{Value: float64(i), Label: labels[i]}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Label.Text = "α"
	return p, nil
}

type htmlFig struct {
	Title string
	SVG   template.HTML
}

type htmlData struct {
	Run     *Run
	H       Headline
	Figures []htmlFig
	Verdict []string
	Params  [][2]string
	Stages  [][2]string
}

// WriteHTML renders report.html: the headline figures, a plain-language
// verdict and the plots, self-contained (inline SVG, no scripts, no
// network).
func WriteHTML(path string, run *Run) error {
	d := htmlData{Run: run, H: run.Manifest.Headline, Verdict: Verdict(run)}
	add := func(title string, p *plot.Plot, err error) error {
		if err != nil {
			return fmt.Errorf("report: plot %q: %w", title, err)
		}
		svg, err := svgPlot(p)
		if err != nil {
			return fmt.Errorf("report: plot %q: %w", title, err)
		}
		d.Figures = append(d.Figures, htmlFig{title, svg})
		return nil
	}
	if len(run.Trace) > 0 {
		p, err := plotTrace(run.Trace, run.Manifest.Headline.Rank)
		if err := add("EM convergence", p, err); err != nil {
			return err
		}
	}
	if len(run.Ranks) > 1 {
		p, err := plotRanks(run.Ranks)
		if err := add("Held-out likelihood per rank", p, err); err != nil {
			return err
		}
	}
	if len(run.BonusSteps) > 0 {
		p, err := plotBonus(run.BonusSteps)
		if err := add("Bonus distribution per step", p, err); err != nil {
			return err
		}
	}
	if len(run.Coverage) > 0 {
		p, q, err := plotCoverage(run.Coverage)
		if err := add("Coverage per step", p, err); err != nil {
			return err
		}
		if err := add("C∞ per step", q, err); err != nil {
			return err
		}
	}
	if len(run.Alphas) > 0 {
		p, err := plotAlpha(run.Alphas)
		if err := add("α sweep", p, err); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(run.Manifest.Parameters) {
		d.Params = append(d.Params, [2]string{k, fmt.Sprint(run.Manifest.Parameters[k])})
	}
	for _, k := range sortedKeys(run.Manifest.StageTimes) {
		d.Stages = append(d.Stages, [2]string{k, fmt.Sprintf("%.2f s", run.Manifest.StageTimes[k])})
	}
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, d); err != nil {
		return err
	}
	return writeFileAtomic(path, buf.Bytes())
}

var pageTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"f": func(x any) string {
		if v, ok := x.(float64); ok {
			x = Float(v)
		}
		return fmt.Sprintf("%.4g", x)
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>psrlcb report {{.Run.RunID}}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0} td,th{padding:.25em .7em;border-bottom:1px solid #eee;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.verdict{background:#f5f7fa;border-left:4px solid #4a78c2;padding:.6em 1em}
figure{margin:1.5em 0} figcaption{font-weight:600;margin-bottom:.3em}
</style></head><body>
<h1>psrlcb: policy from logged trajectories</h1>
<p>Run <code>{{.Run.RunID}}</code>, {{.Run.Manifest.Episodes}} episodes of {{.Run.Manifest.Horizon}} steps, {{.Run.Manifest.NumObs}} observations, {{.Run.Manifest.NumActions}} actions; {{len .Run.Manifest.Quarantined}} episodes quarantined.</p>
<h2>Verdict</h2>
<div class="verdict">{{range .Verdict}}<p>{{.}}</p>{{end}}</div>
<h2>Headline figures</h2>
<table>
<tr><th>figure</th><th>[0,1] scale</th><th>user's units</th></tr>
<tr><td>lower confidence bound V<sub>R</sub> − V<sub>b</sub></td><td class="n">{{f .H.LCB}}</td><td class="n">{{f .H.LCBUnits}}</td></tr>
<tr><td>model value V<sub>R</sub> of π̄</td><td class="n">{{f .H.ModelValue}}</td><td class="n">{{f .H.ModelValueUnits}}</td></tr>
<tr><td>bonus value V<sub>b</sub> of π̄</td><td class="n">{{f .H.BonusValue}}</td><td></td></tr>
<tr><td>importance-weighted value of π̄ from the logs</td><td class="n">{{f .H.IWValue}} [{{f .H.IWLow}}, {{f .H.IWHigh}}]</td><td class="n">{{f .H.IWValueUnits}} [{{f .H.IWLowUnits}}, {{f .H.IWHighUnits}}]</td></tr>
<tr><td>behaviour policy's mean return in the logs</td><td class="n">{{f .H.BehaviorValue}}</td><td class="n">{{f .H.BehaviorUnits}}</td></tr>
<tr><td>effective sample size of the importance weights</td><td class="n">{{f .H.ESS}}</td><td></td></tr>
<tr><td>C∞ estimate of π̄</td><td class="n">{{f .H.CInf}}</td><td></td></tr>
<tr><td>ι (least logged propensity){{if .H.IotaEstimated}} — estimated, propensities were not logged{{end}}</td><td class="n">{{f .H.Iota}}</td><td></td></tr>
<tr><td>Θ<sub>min</sub> slack (log)</td><td class="n">{{f .H.ThetaMinSlack}}</td><td></td></tr>
<tr><td>α, rank</td><td class="n">{{f .H.Alpha}}, {{.H.Rank}}</td><td></td></tr>
<tr><td>planner</td><td>{{if .H.PlanExact}}exact{{else}}approximate, worst-case gap {{f .H.PlanGap}}{{end}}</td><td></td></tr>
</table>
{{range .Figures}}<figure><figcaption>{{.Title}}</figcaption>{{.SVG}}</figure>
{{end}}
{{if .Run.Alphas}}<h2>α candidates</h2>
<table><tr><th>α</th><th>V<sub>R</sub></th><th>V<sub>b</sub></th><th>LCB</th><th>IW [95%]</th><th>ESS</th><th>C∞</th><th></th></tr>
{{range .Run.Alphas}}<tr><td class="n">{{f .Alpha}}</td><td class="n">{{f .ValueReward}}</td><td class="n">{{f .ValueBonus}}</td><td class="n">{{f .LCB}}</td><td class="n">{{f .IW}} [{{f .IWLo}}, {{f .IWHi}}]</td><td class="n">{{f .ESS}}</td><td class="n">{{f .CInf}}</td><td>{{if .Chosen}}chosen{{end}}</td></tr>
{{end}}</table>{{end}}
{{if .Run.Manifest.Quarantined}}<h2>Quarantined episodes</h2>
<table><tr><th>episode</th><th>file</th><th>step</th><th>reason</th></tr>
{{range .Run.Manifest.Quarantined}}<tr><td>{{.EpisodeID}}</td><td>{{.File}}</td><td>{{.Step}}</td><td>{{.Reason}}</td></tr>{{end}}</table>{{end}}
{{if .Run.Manifest.Notes}}<h2>Notes</h2><ul>{{range .Run.Manifest.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<h2>Parameters</h2>
<table>{{range .Params}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td></tr>{{end}}</table>
<h2>Stage times</h2>
<table>{{range .Stages}}<tr><td>{{index . 0}}</td><td class="n">{{index . 1}}</td></tr>{{end}}</table>
<p><small>{{.Run.Manifest.Tool}} {{.Run.Manifest.Version}}, {{.Run.Manifest.GoVersion}}</small></p>
</body></html>
`))
