package explore

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/psrlcb/psrlcb/arrowio"
)

// RoundsTable is the per-round record of Online as an Arrow table
// (rounds.arrow): one row per round with the columns of RoundRow.
func RoundsTable(rows []RoundRow, meta map[string]string) arrowio.Table {
	i64 := func(name string, f func(RoundRow) int) arrowio.Column { return intColumn(rows, name, f) }
	f64 := func(name string, f func(RoundRow) float64) arrowio.Column { return floatColumn(rows, name, f) }
	term := arrowio.Column{Name: "terminated", Bool: make([]bool, len(rows))}
	for i, r := range rows {
		term.Bool[i] = r.Terminated
	}
	return arrowio.Table{Meta: meta, Columns: []arrowio.Column{
		i64("round", func(r RoundRow) int { return r.Round }),
		i64("episodes", func(r RoundRow) int { return r.Episodes }),
		i64("total_episodes", func(r RoundRow) int { return r.TotalEpisodes }),
		f64("bonus_value", func(r RoundRow) float64 { return r.BonusValue }),
		f64("threshold", func(r RoundRow) float64 { return r.Threshold }),
		term,
		i64("rank", func(r RoundRow) int { return r.Rank }),
		f64("loglik", func(r RoundRow) float64 { return r.LogLik }),
		f64("theta_min_mix_weight", func(r RoundRow) float64 { return r.MixWeight }),
		f64("tv_uniform", func(r RoundRow) float64 { return r.TVUniform }),
		f64("tv_optimal", func(r RoundRow) float64 { return r.TVOptimal }),
		f64("greedy_value", func(r RoundRow) float64 { return r.GreedyValue }),
		f64("optimal_value", func(r RoundRow) float64 { return r.OptimalValue }),
		f64("uniform_value", func(r RoundRow) float64 { return r.UniformValue }),
		f64("regret", func(r RoundRow) float64 { return r.Regret }),
		f64("norm_regret", func(r RoundRow) float64 { return r.NormRegret }),
		f64("baseline_regret", func(r RoundRow) float64 { return r.BaselineRegret }),
		f64("baseline_tv_uniform", func(r RoundRow) float64 { return r.BaselineTVUniform }),
		f64("baseline_tv_optimal", func(r RoundRow) float64 { return r.BaselineTVOptimal }),
	}}
}

// intColumn is the int64 column name holding f of every row.
func intColumn(rows []RoundRow, name string, f func(RoundRow) int) arrowio.Column {
	c := arrowio.Column{Name: name, Int64: make([]int64, len(rows))}
	for i, r := range rows {
		c.Int64[i] = int64(f(r))
	}
	return c
}

// floatColumn is the float64 column name holding f of every row.
func floatColumn(rows []RoundRow, name string, f func(RoundRow) float64) arrowio.Column {
	c := arrowio.Column{Name: name, Float64: make([]float64, len(rows))}
	for i, r := range rows {
		c.Float64[i] = f(r)
	}
	return c
}

// The colours of the plot's lines.
var (
	plotBlue   = color.RGBA{31, 119, 180, 255}
	plotOrange = color.RGBA{255, 127, 14, 255}
	plotGreen  = color.RGBA{44, 160, 44, 255}
	plotGrey   = color.RGBA{120, 120, 120, 255}
	plotRed    = color.RGBA{214, 39, 40, 255}
)

// plotLine is one line of a panel: its legend name, whether it is dashed,
// its colour, and its x and y per round.
type plotLine struct {
	name string
	dash bool
	c    color.Color
	x, y func(RoundRow) float64
}

// plotRound and plotEpisodes are the panels' x axes: the round and the
// episodes used so far.
func plotRound(r RoundRow) float64    { return float64(r.Round) }
func plotEpisodes(r RoundRow) float64 { return float64(r.TotalEpisodes) }

// WritePlot draws the termination statistic V_{θ̂^k,b̂^k}^{π^k}, the
// threshold ε/2 and the true TV errors of θ̂^k per round (left), and the
// true regret of the greedy policy beside the uniform-exploration
// baseline's against the episodes used (right), as an SVG (or any format
// gonum/plot infers from the extension).
func WritePlot(path, title string, rows []RoundRow) error {
	if len(rows) == 0 {
		return fmt.Errorf("%w: no rounds to plot", ErrData)
	}
	left, err := statisticPanel(title, rows)
	if err != nil {
		return err
	}
	right, err := regretPanel(rows)
	if err != nil {
		return err
	}
	return drawPanels(path, left, right)
}

// statisticPanel is the plot's left panel: the termination statistic,
// its threshold ε/2 and the true errors per round.
func statisticPanel(title string, rows []RoundRow) (*plot.Plot, error) {
	return newPanel(title+": termination statistic and true error", "round k", "value", rows, []plotLine{
		{"statistic V of π^k under (θ̂^k, b̂^k)", false, plotBlue, plotRound, func(r RoundRow) float64 { return r.BonusValue }},
		{"ε/2 (threshold)", true, plotGrey, plotRound, func(r RoundRow) float64 { return r.Threshold }},
		{"true TV, uniform π", false, plotOrange, plotRound, func(r RoundRow) float64 { return r.TVUniform }},
		{"true TV, optimal π", false, plotGreen, plotRound, func(r RoundRow) float64 { return r.TVOptimal }},
	})
}

// regretPanel is the plot's right panel: the greedy policy's true regret
// against the episodes, under PSR-UCB and under uniform exploration.
func regretPanel(rows []RoundRow) (*plot.Plot, error) {
	return newPanel("true regret of the greedy policy", "episodes", "V* − V^π (reward units)", rows, []plotLine{
		{"PSR-UCB exploration", false, plotBlue, plotEpisodes, func(r RoundRow) float64 { return r.Regret }},
		{"uniform exploration", true, plotRed, plotEpisodes, func(r RoundRow) float64 { return r.BaselineRegret }},
	})
}

// newPanel is a plot titled title with the given axis labels, the legend
// on top, and lines drawn over rows.
func newPanel(title, xLabel, yLabel string, rows []RoundRow, lines []plotLine) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Legend.Top = true
	for _, l := range lines {
		if err := addLine(p, rows, l); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// addLine adds l's points over rows (NaN values of l.y left out) to p and
// its legend; a line without points is not drawn.
func addLine(p *plot.Plot, rows []RoundRow, l plotLine) error {
	pts := l.points(rows)
	if len(pts) == 0 {
		return nil
	}
	line, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	line.Color, s.Color = l.c, l.c
	if l.dash {
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(line, s)
	p.Legend.Add(l.name, line, s)
	return nil
}

// points are l's points over rows, NaN values of l.y left out.
func (l plotLine) points(rows []RoundRow) plotter.XYs {
	var pts plotter.XYs
	for _, r := range rows {
		if v := l.y(r); !math.IsNaN(v) {
			pts = append(pts, plotter.XY{X: l.x(r), Y: v})
		}
	}
	return pts
}

// drawPanels draws left and right side by side on a 10×4 inch canvas in
// the format of path's extension and writes it to path.
func drawPanels(path string, left, right *plot.Plot) error {
	const w, h = 10 * vg.Inch, 4 * vg.Inch
	img, err := draw.NewFormattedCanvas(w, h, extOf(path))
	if err != nil {
		return err
	}
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Millimeter * 4, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{{left, right}}, tiles, draw.New(img))
	left.Draw(canvases[0][0])
	right.Draw(canvases[0][1])
	return writeCanvas(path, img)
}
