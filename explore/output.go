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
	n := len(rows)
	i64 := func(name string, f func(RoundRow) int) arrowio.Column {
		c := arrowio.Column{Name: name, Int64: make([]int64, n)}
		for i, r := range rows {
			c.Int64[i] = int64(f(r))
		}
		return c
	}
	f64 := func(name string, f func(RoundRow) float64) arrowio.Column {
		c := arrowio.Column{Name: name, Float64: make([]float64, n)}
		for i, r := range rows {
			c.Float64[i] = f(r)
		}
		return c
	}
	term := arrowio.Column{Name: "terminated", Bool: make([]bool, n)}
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

// WritePlot draws the termination statistic V_{θ̂^k,b̂^k}^{π^k}, the
// threshold ε/2 and the true TV errors of θ̂^k per round (left), and the
// true regret of the greedy policy beside the uniform-exploration
// baseline's against the episodes used (right), as an SVG (or any format
// gonum/plot infers from the extension).
func WritePlot(path, title string, rows []RoundRow) error {
	if len(rows) == 0 {
		return fmt.Errorf("%w: no rounds to plot", ErrData)
	}
	line := func(p *plot.Plot, name string, dash bool, c color.Color, x, y func(RoundRow) float64) error {
		var pts plotter.XYs
		for _, r := range rows {
			if v := y(r); !math.IsNaN(v) {
				pts = append(pts, plotter.XY{X: x(r), Y: v})
			}
		}
		if len(pts) == 0 {
			return nil
		}
		l, s, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		l.Color, s.Color = c, c
		if dash {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l, s)
		p.Legend.Add(name, l, s)
		return nil
	}
	blue := color.RGBA{31, 119, 180, 255}
	orange := color.RGBA{255, 127, 14, 255}
	green := color.RGBA{44, 160, 44, 255}
	grey := color.RGBA{120, 120, 120, 255}
	red := color.RGBA{214, 39, 40, 255}
	round := func(r RoundRow) float64 { return float64(r.Round) }
	eps := func(r RoundRow) float64 { return float64(r.TotalEpisodes) }

	left := plot.New()
	left.Title.Text = title + ": termination statistic and true error"
	left.X.Label.Text = "round k"
	left.Y.Label.Text = "value"
	left.Legend.Top = true
	for _, l := range []struct {
		name string
		dash bool
		c    color.Color
		f    func(RoundRow) float64
	}{
		{"statistic V of π^k under (θ̂^k, b̂^k)", false, blue, func(r RoundRow) float64 { return r.BonusValue }},
		{"ε/2 (threshold)", true, grey, func(r RoundRow) float64 { return r.Threshold }},
		{"true TV, uniform π", false, orange, func(r RoundRow) float64 { return r.TVUniform }},
		{"true TV, optimal π", false, green, func(r RoundRow) float64 { return r.TVOptimal }},
	} {
		if err := line(left, l.name, l.dash, l.c, round, l.f); err != nil {
			return err
		}
	}
	right := plot.New()
	right.Title.Text = "true regret of the greedy policy"
	right.X.Label.Text = "episodes"
	right.Y.Label.Text = "V* − V^π (reward units)"
	right.Legend.Top = true
	if err := line(right, "PSR-UCB exploration", false, blue, eps, func(r RoundRow) float64 { return r.Regret }); err != nil {
		return err
	}
	if err := line(right, "uniform exploration", true, red, eps, func(r RoundRow) float64 { return r.BaselineRegret }); err != nil {
		return err
	}
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
