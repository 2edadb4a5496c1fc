package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/explore"
	"github.com/psrlcb/psrlcb/internal/outdir"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
)

// simulateOnlineFlags are simulate-online's own flags: the model's, the
// output's and the loop's.
func simulateOnlineFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "pomdp", Usage: "`FILE` holding the true model in Cassandra's .POMDP format (required)"},
		&cli.IntFlag{Name: "horizon", Usage: "steps per episode `H` (required)"},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random `SEED` of the episodes and the EM starts"},
		&cli.PathFlag{Name: "out", Aliases: []string{"o"}, Usage: "output `DIR` (required; written atomically)"},
		&cli.BoolFlag{Name: "force", Usage: "replace an earlier output of simulate-online (a directory holding rounds.arrow and only the files it writes)"},
		&cli.IntFlag{Name: "batch", Value: explore.DefaultPerStep, Usage: "episodes per switch step and round (a round collects H·batch)"},
		&cli.IntFlag{Name: "rounds", Value: explore.DefaultMaxRounds, Usage: "largest number of rounds"},
		&cli.BoolFlag{Name: "baseline", Usage: "also fit uniformly explored logs of the same size each round and report their regret"},
		&cli.PathFlag{Name: "plot", Usage: "also draw the statistic, the true errors and the regrets per round into this SVG `FILE`"},
	}
}

func newSimulateOnlineCommand() *cli.Command {
	flags, before := configurable(append(simulateOnlineFlags(), roundFlags()...))
	return &cli.Command{
		Name:  "simulate-online",
		Usage: "run the PSR-UCB exploration loop against a known POMDP, round by round",
		Description: "Runs the online side of the paper (Algorithm 1, PSR-UCB) against the model: each round\n" +
			"collects H·batch episodes with the exploration policies of the previous round, runs the round of\n" +
			"`psrlcb explore` on all the logs so far, and stops when the termination test passes or after\n" +
			"--rounds rounds. DIR gets rounds.arrow (one row per round: statistic, threshold, true errors,\n" +
			"regret), logs.parquet (the tagged logs), model.arrow and, when the loop terminated, policy.arrow.\n" +
			"See docs/exploration.md.",
		Flags:  flags,
		Before: before,
		Action: simulateOnlineAction,
	}
}

// simulateOnlineAction runs simulate-online with the options of its flags.
func simulateOnlineAction(c *cli.Context) error {
	if err := noArgs(c, "simulate-online"); err != nil {
		return err
	}
	o := simulateOnlineOptions{pomdp: c.String("pomdp"), horizon: c.Int("horizon"), seed: c.Uint64("seed"), out: c.Path("out"),
		force: c.Bool("force"), batch: c.Int("batch"), rounds: c.Int("rounds"), baseline: c.Bool("baseline"), plot: c.Path("plot"),
		stderr: c.App.ErrWriter}
	var err error
	if o.round, err = roundOptions(c, o.seed); err != nil {
		return err
	}
	return runSimulateOnline(c.Context, c.App.Writer, o)
}

// simulateOnlineOptions are the options of `psrlcb simulate-online`.
type simulateOnlineOptions struct {
	pomdp         string
	horizon       int
	seed          uint64
	out           string
	force         bool
	batch, rounds int
	baseline      bool
	plot          string
	round         explore.Options
	stderr        io.Writer
}

// runSimulateOnline runs Online against the model, with the per-round
// record in DIR/rounds.arrow.
func runSimulateOnline(ctx context.Context, w io.Writer, o simulateOnlineOptions) error {
	if err := checkSimulateOnline(o); err != nil {
		return err
	}
	dir, err := createOut(o.stderr, o.out, o.force, simulateOnlineOutput, []string{o.pomdp})
	if err != nil {
		return err
	}
	defer dir.Abort()
	m, res, err := simulateOnline(ctx, w, o)
	if err != nil {
		return err
	}
	if err := commitDir(ctx, dir, func() error { return writeOnline(dir, o, m, res) }); err != nil {
		return err
	}
	printOnlineSummary(w, res.Rows[len(res.Rows)-1], o.out)
	return nil
}

// simulateOnline reads the true model of o and runs the exploration
// loop against it, its progress printed to w.
func simulateOnline(ctx context.Context, w io.Writer, o simulateOnlineOptions) (*pomdp.POMDP, *explore.OnlineResult, error) {
	m, err := pomdp.ParseFile(o.pomdp)
	if err != nil {
		return nil, nil, err
	}
	res, err := explore.Online(ctx, m, onlineOptions(w, o))
	return m, res, err
}

// onlineOptions are the loop's options of o, its progress printed to w.
func onlineOptions(w io.Writer, o simulateOnlineOptions) explore.OnlineOptions {
	return explore.OnlineOptions{
		Horizon: o.horizon, PerStep: o.batch, MaxRounds: o.rounds, Round: o.round, Seed: o.seed, Baseline: o.baseline,
		Progress: onlineProgress(w, o.baseline)}
}

// onlineProgress prints each round's line to w as the round ends, with
// the uniform-exploration regret when baseline is set.
func onlineProgress(w io.Writer, baseline bool) func(explore.RoundRow) {
	return func(r explore.RoundRow) {
		fmt.Fprintf(w, "round %d: %d episodes, statistic %.4g (ε/2 = %.4g), true TV uniform %.4g optimal %.4g, regret %.4g",
			r.Round, r.TotalEpisodes, r.BonusValue, r.Threshold, r.TVUniform, r.TVOptimal, r.Regret)
		if baseline {
			fmt.Fprintf(w, ", uniform-exploration regret %.4g", r.BaselineRegret)
		}
		fmt.Fprintln(w)
	}
}

// printOnlineSummary says whether the loop terminated (last is the last
// round) and what was written into out.
func printOnlineSummary(w io.Writer, last explore.RoundRow, out string) {
	state := fmt.Sprintf("terminated at round %d", last.Round)
	if !last.Terminated {
		state = fmt.Sprintf("did not terminate in %d rounds", last.Round)
	}
	fmt.Fprintf(w, "%s with %d episodes; wrote %s (rounds.arrow, logs.parquet, model.arrow", state, last.TotalEpisodes, out)
	if last.Terminated {
		fmt.Fprint(w, ", policy.arrow")
	}
	fmt.Fprintln(w, ")")
}

// checkSimulateOnline checks simulate-online's options before any work.
func checkSimulateOnline(o simulateOnlineOptions) error {
	if missing := missingSimulateOnline(o); len(missing) > 0 {
		return usagef("simulate-online needs %s", strings.Join(missing, ", "))
	}
	if o.batch <= 0 || o.rounds <= 0 {
		return usagef("--batch and --rounds must be positive")
	}
	if o.plot != "" {
		// The plot is a file of its own beside the output: it may
		// overwrite neither the model nor lie inside the output, which
		// does not exist until the run succeeded.
		return checkPlotPath(o.plot, o.out, o.pomdp)
	}
	return nil
}

// missingSimulateOnline lists the required options of simulate-online
// that o lacks, in the order of the usage message.
func missingSimulateOnline(o simulateOnlineOptions) []string {
	var missing []string
	if o.horizon <= 0 {
		missing = append(missing, "--horizon H (> 0)")
	}
	if o.out == "" {
		missing = append(missing, "--out DIR")
	}
	if o.pomdp == "" {
		missing = append(missing, "--pomdp FILE")
	}
	return missing
}

// writeOnline writes the run's rounds, logs, last model and (when the
// loop terminated) its greedy policy into dir, and the plot.
func writeOnline(dir *outdir.Dir, o simulateOnlineOptions, m *pomdp.POMDP, res *explore.OnlineResult) error {
	meta := onlineMeta(o, res)
	if err := writeOnlineTables(dir, res, meta); err != nil {
		return err
	}
	if res.Rows[len(res.Rows)-1].Terminated {
		if err := policy.WriteFile(dir.Path(policy.FileName), res.Last.Greedy, meta); err != nil {
			return err
		}
	}
	if p := o.plot; p != "" {
		if err := explore.WritePlot(p, filepath.Base(m.Name), res.Rows); err != nil {
			return err
		}
	}
	return nil
}

// writeOnlineTables writes the run's rounds (with meta), tagged logs and
// last model into dir.
func writeOnlineTables(dir *outdir.Dir, res *explore.OnlineResult, meta map[string]string) error {
	if err := arrowio.WriteArrow(dir.Path(roundsFileName), explore.RoundsTable(res.Rows, meta)); err != nil {
		return err
	}
	if err := explore.WriteTaggedParquet(dir.Path(onlineLogsFileName), res.Logs, res.Rounds, res.Steps); err != nil {
		return err
	}
	return arrowio.WriteArrow(dir.Path("model.arrow"), estimate.ModelTable(res.Last.Fit.Model))
}

// onlineMeta is the metadata of the run's Arrow files: the model, the
// horizon, the seed, the last round's α and ε, and the batch size.
func onlineMeta(o simulateOnlineOptions, res *explore.OnlineResult) map[string]string {
	return map[string]string{
		"psrlcb.pomdp": o.pomdp, "psrlcb.horizon": strconv.Itoa(o.horizon), "psrlcb.seed": strconv.FormatUint(o.seed, 10),
		"psrlcb.alpha": strconv.FormatFloat(res.Last.Alpha, 'g', -1, 64), "psrlcb.epsilon": strconv.FormatFloat(res.Last.Epsilon, 'g', -1, 64),
		"psrlcb.batch": strconv.Itoa(o.batch),
	}
}

// checkPlotPath refuses a --plot file that is the model file, a
// directory, or lies inside the output directory.
func checkPlotPath(plot, out, model string) error {
	if insideDir(plot, out) {
		return usagef("--plot %s lies inside --out %s; put the plot beside the output directory", plot, out)
	}
	if st, err := os.Stat(plot); err == nil {
		if st.IsDir() {
			return usagef("--plot %s is a directory; name the SVG file to write", plot)
		}
		if ms, err := os.Stat(model); err == nil && os.SameFile(st, ms) {
			return usagef("--plot %s is the model file --pomdp %s", plot, model)
		}
	}
	return nil
}

// insideDir reports whether path is dir or lies inside it, false when
// either has no absolute form.
func insideDir(path, dir string) bool {
	pa, err1 := filepath.Abs(path)
	oa, err2 := filepath.Abs(dir)
	return err1 == nil && err2 == nil && (pa == oa || strings.HasPrefix(pa, oa+string(filepath.Separator)))
}
