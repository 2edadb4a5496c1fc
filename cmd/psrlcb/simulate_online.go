package main

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/explore"
	"github.com/psrlcb/psrlcb/internal/outdir"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
	"github.com/psrlcb/psrlcb/report"
)

// simulateOnlineFlags are the flags of `simulate --online`, appended to
// simulate's own.
var simulateOnlineFlags = append([]cli.Flag{
	&cli.BoolFlag{Name: "online", Usage: "run the PSR-UCB exploration loop against the model instead of logging one behaviour; --out is then a directory"},
	&cli.IntFlag{Name: "batch", Value: explore.DefaultPerStep, Usage: "--online: episodes per switch step and round (a round collects H·batch)"},
	&cli.IntFlag{Name: "rounds", Value: explore.DefaultMaxRounds, Usage: "--online: largest number of rounds"},
	&cli.BoolFlag{Name: "baseline", Usage: "--online: also fit uniformly explored logs of the same size each round and report their regret"},
	&cli.PathFlag{Name: "plot", Usage: "--online: also draw the statistic, the true errors and the regrets per round into this SVG `FILE`"},
	&cli.BoolFlag{Name: "force", Usage: "--online: replace an existing output directory"},
}, roundFlags()...)

// runSimulateOnline is `simulate --online`: Online against the model, with
// the per-round record in DIR/rounds.arrow.
func runSimulateOnline(c *cli.Context) error {
	var missing []string
	H := c.Int("horizon")
	if H <= 0 {
		missing = append(missing, "--horizon H (> 0)")
	}
	out := c.String("out")
	if out == "" {
		missing = append(missing, "--out DIR")
	}
	if len(missing) > 0 {
		return usagef("simulate --online needs %v", missing)
	}
	if c.Int("batch") <= 0 || c.Int("rounds") <= 0 {
		return usagef("--batch and --rounds must be positive")
	}
	if c.IsSet("episodes") {
		return usagef("simulate --online sizes rounds with --batch and --rounds, not --episodes")
	}
	if c.String("pomdp") == "" {
		return usagef("--pomdp FILE is required")
	}
	m, err := pomdp.ParseFile(c.String("pomdp"))
	if err != nil {
		return err
	}
	seed := c.Uint64("seed")
	ro, err := roundOptions(c, seed)
	if err != nil {
		return err
	}
	dir, err := outdir.Create(out, c.Bool("force"))
	if err != nil {
		return err
	}
	defer dir.Abort()
	w := c.App.Writer
	res, err := explore.Online(c.Context, m, explore.OnlineOptions{
		Horizon: H, PerStep: c.Int("batch"), MaxRounds: c.Int("rounds"), Round: ro, Seed: seed, Baseline: c.Bool("baseline"),
		Progress: func(r explore.RoundRow) {
			fmt.Fprintf(w, "round %d: %d episodes, statistic %.4g (ε/2 = %.4g), true TV uniform %.4g optimal %.4g, regret %.4g",
				r.Round, r.TotalEpisodes, r.BonusValue, r.Threshold, r.TVUniform, r.TVOptimal, r.Regret)
			if c.Bool("baseline") {
				fmt.Fprintf(w, ", uniform-exploration regret %.4g", r.BaselineRegret)
			}
			fmt.Fprintln(w)
		}})
	if err != nil {
		return err
	}
	meta := map[string]string{
		"psrlcb.pomdp": c.String("pomdp"), "psrlcb.horizon": strconv.Itoa(H), "psrlcb.seed": strconv.FormatUint(seed, 10),
		"psrlcb.alpha": strconv.FormatFloat(res.Last.Alpha, 'g', -1, 64), "psrlcb.epsilon": strconv.FormatFloat(res.Last.Epsilon, 'g', -1, 64),
		"psrlcb.batch": strconv.Itoa(c.Int("batch")),
	}
	if err := arrowio.WriteArrow(dir.Path("rounds.arrow"), explore.RoundsTable(res.Rows, meta)); err != nil {
		return err
	}
	if err := explore.WriteTaggedParquet(dir.Path("logs.parquet"), res.Logs, res.Rounds, res.Steps); err != nil {
		return err
	}
	if err := arrowio.WriteArrow(dir.Path("model.arrow"), report.ModelTable(res.Last.Fit.Model)); err != nil {
		return err
	}
	last := res.Rows[len(res.Rows)-1]
	if last.Terminated {
		if err := policy.WriteFile(dir.Path(policy.FileName), res.Last.Greedy, meta); err != nil {
			return err
		}
	}
	if p := c.Path("plot"); p != "" {
		if err := explore.WritePlot(p, filepath.Base(m.Name), res.Rows); err != nil {
			return err
		}
	}
	if err := dir.Commit(); err != nil {
		return err
	}
	state := fmt.Sprintf("terminated at round %d", last.Round)
	if !last.Terminated {
		state = fmt.Sprintf("did not terminate in %d rounds", last.Round)
	}
	fmt.Fprintf(w, "%s with %d episodes; wrote %s (rounds.arrow, logs.parquet, model.arrow", state, last.TotalEpisodes, out)
	if last.Terminated {
		fmt.Fprint(w, ", policy.arrow")
	}
	fmt.Fprintln(w, ")")
	return nil
}
