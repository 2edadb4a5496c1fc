package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot conventions: steps are 1-based (h = 1..H) on every axis, integer
// axes have integer ticks, text is sans-serif like the page, and legends
// are drawn in HTML under the plot so they never cover the data.

// palette is the Okabe–Ito colour set, readable by colour-blind readers.
var palette = []color.RGBA{
	{0, 114, 178, 255},   // blue
	{230, 159, 0, 255},   // orange
	{0, 158, 115, 255},   // green
	{204, 121, 167, 255}, // purple
	{86, 180, 233, 255},  // sky blue
	{213, 94, 0, 255},    // vermillion
	{240, 228, 66, 255},  // yellow
	{0, 0, 0, 255},       // black
}

func colorAt(i int) color.RGBA { return palette[i%len(palette)] }

// sansFont is Liberation Sans (metric-compatible with Arial), which
// gonum/plot measures text with; the SVG names it with generic fallbacks.
var sansFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// pageFonts is the font stack of the page and of the plots' text.
const pageFonts = `'Liberation Sans',Arial,Helvetica,sans-serif`

// legendItem is one entry of a plot's HTML legend.
type legendItem struct {
	Label  string
	Color  string // CSS colour
	Marker bool   // a dot with an interval instead of a line
}

type htmlFig struct {
	ID, Title string
	SVG       template.HTML
	Legend    []legendItem
	Caption   string
}

func css(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// svgPlot renders p as an inline SVG fragment with the page's fonts.
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
	s := strings.ReplaceAll(string(b), "font-family:Liberation Sans;", "font-family:"+pageFonts+";")
	return template.HTML(s), nil
}

func newPlot(x, y string) *plot.Plot {
	p := plot.New()
	p.X.Label.Text = x
	p.Y.Label.Text = y
	for _, t := range []*draw.TextStyle{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle, &p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		t.Font = font.From(sansFont, t.Font.Size)
	}
	p.Y.Tick.Marker = cleanTicks{}
	p.X.Tick.Marker = cleanTicks{}
	p.Add(lightGrid())
	return p
}

// lightGrid is the plots' light grey grid.
func lightGrid() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 225}
	g.Horizontal.Color = color.Gray{Y: 225}
	return g
}

// integerTicks labels integers only: every integer up to ten of them,
// otherwise every 2^k-th, without minor ticks.
type integerTicks struct{}

func (integerTicks) Ticks(min, max float64) []plot.Tick {
	lo, hi := int(math.Ceil(min)), int(math.Floor(max))
	step := 1
	for (hi-lo)/step > 10 {
		step *= 2
	}
	var t []plot.Tick
	for i := lo; i <= hi; i += step {
		t = append(t, plot.Tick{Value: float64(i), Label: fmt.Sprint(i)})
	}
	return t
}

// cleanTicks are gonum's default ticks labelled like the page's numbers
// (no trailing zeros, a true minus sign).
type cleanTicks struct{}

func (cleanTicks) Ticks(min, max float64) []plot.Tick {
	t := plot.DefaultTicks{}.Ticks(min, max)
	for i := range t {
		if t[i].Label != "" {
			t[i].Label = num(t[i].Value, 6)
		}
	}
	return t
}

// log10Ticks label an axis that carries log10 of the values (gonum's own
// log scale pads the plot's top oddly): a tick at y reads 10^y, at the
// powers of ten, or at 1, 2 and 5 times them when the range is under two
// decades.
type log10Ticks struct{}

func (log10Ticks) Ticks(min, max float64) []plot.Tick {
	var t []plot.Tick
	mults := []float64{1}
	if max-min < 2 {
		mults = []float64{1, 2, 5}
	}
	for e := math.Floor(min); e <= math.Ceil(max); e++ {
		for _, m := range mults {
			if y := e + math.Log10(m); y >= min && y <= max {
				t = append(t, plot.Tick{Value: y, Label: num(m*math.Pow(10, e), 1)})
			}
		}
	}
	return t
}

func line(xy plotter.XYs, c color.RGBA, points bool) ([]plot.Plotter, error) {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return nil, err
	}
	l.Color, l.Width = c, vg.Points(1.5)
	out := []plot.Plotter{l}
	if points {
		s, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, err
		}
		s.Color, s.GlyphStyle.Radius, s.GlyphStyle.Shape = c, vg.Points(2.5), draw.CircleGlyph{}
		out = append(out, s)
	}
	return out, nil
}

// traceFloor is the smallest gap to the best start drawn on the log axis:
// below a hundredth of a nat the starts are indistinguishable.
const traceFloor = 1e-2

// plotTrace draws, for each start of the chosen rank, how far its
// log-likelihood lies below the best final value, on a log scale: the
// steep first iterations and the last digits of convergence both show.
func plotTrace(rows []TraceRow, chosenRank int) (*plot.Plot, []legendItem, error) {
	p := newPlot("EM iteration", "gap to the best start (nats)")
	byStart, keys, best := traceStarts(rows, chosenRank)
	var legend []legendItem
	maxGap := traceFloor
	for i, k := range keys {
		var xy plotter.XYs
		for _, r := range byStart[k] {
			gap := math.Max(best-r.LogLik, traceFloor)
			maxGap = math.Max(maxGap, gap)
			xy = append(xy, plotter.XY{X: float64(r.Iter), Y: math.Log10(gap)})
		}
		ps, err := line(xy, colorAt(i), false)
		if err != nil {
			return nil, nil, err
		}
		p.Add(ps...)
		legend = append(legend, legendItem{Label: fmt.Sprintf("start %d", k+1), Color: css(colorAt(i))})
	}
	p.Y.Tick.Marker = log10Ticks{}
	p.Y.Min, p.Y.Max = math.Log10(traceFloor/2), math.Log10(maxGap*2)
	p.X.Tick.Marker = integerTicks{}
	return p, legend, nil
}

// traceStarts groups the finite trace rows of the chosen rank by EM
// start, with the starts in order and the best log-likelihood of any.
func traceStarts(rows []TraceRow, chosenRank int) (byStart map[int][]TraceRow, keys []int, best float64) {
	byStart, best = map[int][]TraceRow{}, math.Inf(-1)
	for _, r := range rows {
		if r.Rank != chosenRank || math.IsNaN(r.LogLik) || math.IsInf(r.LogLik, 0) {
			continue // a non-finite log-likelihood cannot be drawn; fit.arrow keeps it
		}
		byStart[r.Restart] = append(byStart[r.Restart], r)
		best = math.Max(best, r.LogLik)
	}
	for k := range byStart {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return byStart, keys, best
}

// plotRanks draws the held-out log-likelihood per held-out episode
// against the rank, one line per model form and training set (the
// search's sample, and all the logs when the search grew its model on
// them, compared on a larger held-out part), the chosen rank circled.
func plotRanks(rows []RankRow) (*plot.Plot, []legendItem, error) {
	p := newPlot("rank (latent states)", "held-out nats per episode")
	var chosen plotter.XYs
	var leg []legendItem
	maxRank := 1
	for i, g := range rankGroups(rows) {
		var xy plotter.XYs
		for _, r := range g.rows {
			xy = append(xy, plotter.XY{X: float64(r.Rank), Y: r.HeldOutL / float64(max(r.HeldOutEpisodes, 1))})
			if r.Chosen {
				chosen = append(chosen, xy[len(xy)-1])
			}
			maxRank = max(maxRank, r.Rank)
		}
		ps, err := line(xy, colorAt(i), true)
		if err != nil {
			return nil, nil, err
		}
		p.Add(ps...)
		leg = append(leg, legendItem{Label: g.label, Color: css(colorAt(i))})
	}
	if len(chosen) > 0 {
		if err := addChosen(p, chosen); err != nil {
			return nil, nil, err
		}
		leg = append(leg, legendItem{Label: "chosen rank", Color: css(colorAt(5)), Marker: true})
	}
	stepAxis(p, maxRank)
	return p, leg, nil
}

// rankGroup is the rank rows of one model form and training set, in
// increasing rank.
type rankGroup struct {
	label string
	rows  []RankRow
}

// rankGroups groups rows by form and training episodes, in the order
// the groups first appear.
func rankGroups(rows []RankRow) []rankGroup {
	var gs []rankGroup
	at := map[string]int{}
	for _, r := range rows {
		label := fmt.Sprintf("held-out log-likelihood, %s form, %d training episodes", r.Form, r.Episodes)
		i, ok := at[label]
		if !ok {
			i = len(gs)
			at[label] = i
			gs = append(gs, rankGroup{label: label})
		}
		gs[i].rows = append(gs[i].rows, r)
	}
	for _, g := range gs {
		sort.SliceStable(g.rows, func(a, b int) bool { return g.rows[a].Rank < g.rows[b].Rank })
	}
	return gs
}

// addChosen marks the chosen rank's point with a circle.
func addChosen(p *plot.Plot, chosen plotter.XYs) error {
	s, err := plotter.NewScatter(chosen)
	if err != nil {
		return err
	}
	s.Color, s.GlyphStyle.Radius, s.GlyphStyle.Shape = colorAt(5), vg.Points(4), draw.CircleGlyph{}
	p.Add(s)
	return nil
}

// StepQuantiles are the 5, 25, 50, 75 and 95% quantiles and the maximum
// of one step's bonus contributions.
// StepQuantiles summarises a step's values: the 5, 25, 50, 75 and 95%
// quantiles and the maximum (NaN for no values).
type StepQuantiles struct{ Q05, Q25, Q50, Q75, Q95, Max float64 }

// quantile of sorted v at p by linear interpolation between order
// statistics (type 7 of Hyndman and Fan).
func quantile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	x := p * float64(len(v)-1)
	i := int(math.Floor(x))
	if i+1 >= len(v) {
		return v[len(v)-1]
	}
	return v[i] + (x-float64(i))*(v[i+1]-v[i])
}

// summarizeInPlace returns the StepQuantiles of s, sorting s.
func summarizeInPlace(s []float64) StepQuantiles {
	sort.Float64s(s)
	if len(s) == 0 {
		return StepQuantiles{math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	}
	return StepQuantiles{quantile(s, .05), quantile(s, .25), quantile(s, .5), quantile(s, .75), quantile(s, .95), s[len(s)-1]}
}

// plotBonus draws the bonus contribution per step as quantile summaries
// (a 5–95% whisker, a 25–75% bar, the median and the maximum): a fixed
// number of marks per step, so the page stays small at any K.
func plotBonus(qs []StepQuantiles) (*plot.Plot, []legendItem, error) {
	p := newPlot("step h", "‖ψ̄‖² in the U⁻¹ norm")
	f, positive := bonusScale(qs)
	marks, err := bonusBars(p, qs, f)
	if err != nil {
		return nil, nil, err
	}
	if len(marks.med) > 0 {
		if err := marks.add(p); err != nil {
			return nil, nil, err
		}
	}
	if positive && len(marks.med) > 0 {
		bonusLogAxis(p, qs)
	}
	stepAxis(p, len(qs))
	leg := []legendItem{
		{Label: "25–75% of episodes", Color: "#0072b270"},
		{Label: "median", Color: "#000000", Marker: true},
		{Label: "5–95% whisker", Color: css(colorAt(0))},
		{Label: "largest", Color: css(colorAt(5)), Marker: true},
	}
	return p, leg, nil
}

// bonusScale is the bonus plot's axis scale: with every value positive
// the axis carries log10 of the values (labelled in the values), so
// steps whose bonuses differ by orders of magnitude all show their
// spread; otherwise the values themselves.
func bonusScale(qs []StepQuantiles) (f func(float64) float64, positive bool) {
	for _, q := range qs {
		if !(q.Q05 > 0) {
			return func(x float64) float64 { return x }, false
		}
	}
	return math.Log10, true
}

// bonusMarks are the bonus plot's per-step marks beside the bars: the
// medians, the largest values, and the 5–95% whiskers about the medians.
type bonusMarks struct {
	med, mx, whisk plotter.XYs
	errs           plotter.YErrors
}

// bonusBars adds each step's 25–75% bar to p (on the axis scale f) and
// collects the step's other marks.
func bonusBars(p *plot.Plot, qs []StepQuantiles, f func(float64) float64) (*bonusMarks, error) {
	b := &bonusMarks{}
	for h, q := range qs {
		if math.IsNaN(q.Q50) {
			continue
		}
		x := float64(h + 1)
		bar, err := plotter.NewLine(plotter.XYs{{X: x, Y: f(q.Q25)}, {X: x, Y: f(q.Q75)}})
		if err != nil {
			return nil, err
		}
		bar.Color, bar.Width = color.RGBA{0, 114, 178, 110}, vg.Points(16)
		bar.LineStyle.Dashes = nil
		p.Add(bar)
		b.med = append(b.med, plotter.XY{X: x, Y: f(q.Q50)})
		b.mx = append(b.mx, plotter.XY{X: x, Y: f(q.Max)})
		b.whisk = append(b.whisk, plotter.XY{X: x, Y: f(q.Q50)})
		b.errs = append(b.errs, struct{ Low, High float64 }{f(q.Q50) - f(q.Q05), f(q.Q95) - f(q.Q50)})
	}
	return b, nil
}

// add draws the whiskers, the medians (black squares) and the largest
// values (crosses) on p.
func (b *bonusMarks) add(p *plot.Plot) error {
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{b.whisk, b.errs})
	if err != nil {
		return err
	}
	eb.Color, eb.CapWidth = colorAt(0), vg.Points(8)
	m, err := plotter.NewScatter(b.med)
	if err != nil {
		return err
	}
	m.Color, m.GlyphStyle.Shape, m.GlyphStyle.Radius = color.RGBA{0, 0, 0, 255}, draw.BoxGlyph{}, vg.Points(3)
	x, err := plotter.NewScatter(b.mx)
	if err != nil {
		return err
	}
	x.Color, x.GlyphStyle.Shape, x.GlyphStyle.Radius = colorAt(5), draw.CrossGlyph{}, vg.Points(3)
	p.Add(eb, m, x)
	return nil
}

// bonusLogAxis labels p's log10 axis in the values and fits it to the
// steps' 5% quantiles and largest values.
func bonusLogAxis(p *plot.Plot, qs []StepQuantiles) {
	p.Y.Tick.Marker = log10Ticks{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, q := range qs {
		lo, hi = math.Min(lo, math.Log10(q.Q05)), math.Max(hi, math.Log10(q.Max))
	}
	p.Y.Min, p.Y.Max = lo-0.15, hi+0.15
	p.Y.Label.Text = "‖ψ̄‖², U⁻¹ norm (log scale)"
}

func plotCoverage(rows []CoverageRow) (*plot.Plot, *plot.Plot, error) {
	mass, cinf := coverageXY(rows)
	p := newPlot("step h", "covered share of π̄'s mass")
	p.Y.Min, p.Y.Max = 0, 1.05
	ps, err := line(mass, colorAt(0), true)
	if err != nil {
		return nil, nil, err
	}
	p.Add(ps...)
	stepAxis(p, len(rows))
	q := newPlot("step h", "C∞ up to step h")
	if len(cinf) > 0 {
		ps, err := line(cinf, colorAt(5), true)
		if err != nil {
			return nil, nil, err
		}
		q.Add(ps...)
		q.Y.Min = 0
	}
	stepAxis(q, len(rows))
	return p, q, nil
}

// coverageXY are the covered mass and the finite C∞ of each step.
func coverageXY(rows []CoverageRow) (mass, cinf plotter.XYs) {
	for _, r := range rows {
		mass = append(mass, plotter.XY{X: float64(r.Step), Y: r.CoveredMass})
		c := r.CInf
		if math.IsInf(c, 0) || math.IsNaN(c) {
			continue
		}
		cinf = append(cinf, plotter.XY{X: float64(r.Step), Y: c})
	}
	return mass, cinf
}

// stepAxis makes p's x axis the integers 1..n with half a step of margin.
func stepAxis(p *plot.Plot, n int) {
	p.X.Tick.Marker = integerTicks{}
	p.X.Min, p.X.Max = 0.5, float64(n)+0.5
}

// plotAlpha draws the model's V_R, V_b and LCB of each α candidate and,
// slightly to the right in its own colour, the held-out importance-weighted
// value with its 95% interval.
func plotAlpha(rows []AlphaRow) (*plot.Plot, []legendItem, error) {
	p := newPlot("α (bonus coefficient)", "value on the [0,1] scale")
	leg, err := alphaLines(p, rows)
	if err != nil {
		return nil, nil, err
	}
	ink := color.RGBA{60, 60, 60, 255}
	if err := alphaIW(p, rows, ink); err != nil {
		return nil, nil, err
	}
	leg = append(leg, legendItem{Label: "held-out importance-weighted value, 95% interval", Color: css(ink), Marker: true})
	alphaTicks(p, rows)
	return p, leg, nil
}

// alphaLines draws the model value, the bonus and the LCB of each
// candidate α as lines, one x position per candidate.
func alphaLines(p *plot.Plot, rows []AlphaRow) ([]legendItem, error) {
	var vr, vb, lcb plotter.XYs
	for i, r := range rows {
		x := float64(i + 1)
		vr = append(vr, plotter.XY{X: x, Y: r.ValueReward})
		vb = append(vb, plotter.XY{X: x, Y: r.ValueBonus})
		lcb = append(lcb, plotter.XY{X: x, Y: r.LCB})
	}
	var leg []legendItem
	for i, s := range []struct {
		label string
		xy    plotter.XYs
	}{{"V_R (model value)", vr}, {"V_b (bonus)", vb}, {"LCB = V_R − V_b", lcb}} {
		ps, err := line(s.xy, colorAt(i), true)
		if err != nil {
			return nil, err
		}
		p.Add(ps...)
		leg = append(leg, legendItem{Label: s.label, Color: css(colorAt(i))})
	}
	return leg, nil
}

// alphaIW draws each candidate's held-out importance-weighted value with
// its 95% interval, just right of the candidate's position, in ink.
func alphaIW(p *plot.Plot, rows []AlphaRow, ink color.RGBA) error {
	var iw plotter.XYs
	var errs plotter.YErrors
	for i, r := range rows {
		iw = append(iw, plotter.XY{X: float64(i+1) + 0.12, Y: r.IW})
		errs = append(errs, struct{ Low, High float64 }{r.IW - r.IWLo, r.IWHi - r.IW})
	}
	s, err := plotter.NewScatter(iw)
	if err != nil {
		return err
	}
	s.Color, s.GlyphStyle.Shape, s.GlyphStyle.Radius = ink, draw.PyramidGlyph{}, vg.Points(3.5)
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{iw, errs})
	if err != nil {
		return err
	}
	eb.Color, eb.CapWidth = ink, vg.Points(6)
	p.Add(eb, s)
	return nil
}

// alphaTicks labels the x axis with the candidates' α and the y axis in
// quarters of the [0,1] scale, like the table beside it.
func alphaTicks(p *plot.Plot, rows []AlphaRow) {
	ticks := make([]plot.Tick, len(rows))
	for i, r := range rows {
		ticks[i] = plot.Tick{Value: float64(i + 1), Label: num(r.Alpha, 3)}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = 0.5, float64(len(rows))+0.5
	var yt []plot.Tick
	for v := math.Floor(p.Y.Min*4) / 4; v <= p.Y.Max+1e-9; v += 0.25 {
		if v >= p.Y.Min-1e-9 {
			yt = append(yt, plot.Tick{Value: v, Label: num(v, 3)})
		}
	}
	if len(yt) >= 2 && len(yt) <= 12 {
		p.Y.Tick.Marker = plot.ConstantTicks(yt)
	}
}
