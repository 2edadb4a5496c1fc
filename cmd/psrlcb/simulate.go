package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/psrlcb/psrlcb/pomdp"
)

func newSimulateCommand() *cli.Command {
	flags, before := configurable([]cli.Flag{
		&cli.StringFlag{Name: "pomdp", Usage: "`FILE` holding the true model in Cassandra's .POMDP format (required)"},
		&cli.IntFlag{Name: "horizon", Usage: "steps per episode `H` (required)"},
		&cli.IntFlag{Name: "episodes", Usage: "number of episodes `K` (required)"},
		&cli.StringFlag{Name: "behavior", Value: "uniform", Usage: "behaviour policy `SPEC`: uniform, myopic:EPS or fixed:ACTION:EPS"},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random `SEED`; the same seed gives the same logs on any machine and core count"},
		&cli.StringFlag{Name: "out", Usage: "Parquet `FILE` to write (required); written atomically"},
		&cli.BoolFlag{Name: "online", Hidden: true, Usage: "moved to the command simulate-online"},
	})
	return &cli.Command{
		Name:  "simulate",
		Usage: "simulate trajectory logs from a known POMDP under a behaviour policy",
		Description: "Draws K episodes of H steps from the model and writes them as Parquet in psrlcb's input schema\n" +
			"(episode_id, step, observation, action, reward, propensity, terminal) with the true propensities.\n" +
			"Timing: o_1 is the symbol \"init\"; after a_h the state moves s→s', o_{h+1} ~ O(·|s',a_h) is emitted\n" +
			"and r_h = R(a_h,s,s',o_{h+1}). Behaviours: uniform; myopic:EPS (with probability 1−EPS the action\n" +
			"with the highest expected immediate reward under the true belief, else uniform); fixed:ACTION:EPS.",
		Flags:  flags,
		Before: before,
		Action: simulateAction,
	}
}

// simulateAction runs simulate with the options of its flags.
func simulateAction(c *cli.Context) error {
	if err := noArgs(c, "simulate"); err != nil {
		return err
	}
	if c.Bool("online") {
		return usagef("simulate --online is now its own command: psrlcb simulate-online")
	}
	return runSimulate(c.Context, c.App.Writer, simulateOptions{
		pomdp: c.String("pomdp"), horizon: c.Int("horizon"), episodes: c.Int("episodes"),
		behavior: c.String("behavior"), seed: c.Uint64("seed"), out: c.String("out"),
	})
}

type simulateOptions struct {
	pomdp             string
	horizon, episodes int
	behavior          string
	seed              uint64
	out               string
}

// loadModelAndBehavior reads the model and builds the behaviour, with the
// errors a command line user needs.
func loadModelAndBehavior(path, spec string) (*pomdp.POMDP, pomdp.Behavior, error) {
	if path == "" {
		return nil, nil, usagef("--pomdp FILE is required")
	}
	m, err := pomdp.ParseFile(path)
	if err != nil {
		return nil, nil, err
	}
	b, err := pomdp.ParseBehavior(spec, m)
	if err != nil {
		return nil, nil, usageError{fmt.Errorf("--behavior: %w", err)}
	}
	return m, b, nil
}

// runSimulate draws the episodes of o's model and behaviour, writes them
// as Parquet and prints a summary with their mean return.
func runSimulate(ctx context.Context, w io.Writer, o simulateOptions) error {
	if err := checkSimulate(o); err != nil {
		return err
	}
	m, b, err := loadModelAndBehavior(o.pomdp, o.behavior)
	if err != nil {
		return err
	}
	logs, err := simulateFile(ctx, o, m, b)
	if err != nil {
		return err
	}
	printSimulateSummary(w, o, m, b, logs)
	return nil
}

// simulateFile simulates o's episodes of m under the behaviour b and,
// unless ctx was cancelled meanwhile, writes them into o.out.
func simulateFile(ctx context.Context, o simulateOptions, m *pomdp.POMDP, b pomdp.Behavior) (*pomdp.Logs, error) {
	logs, err := pomdp.Simulate(ctx, m, o.horizon, o.episodes, b, o.seed)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return logs, pomdp.WriteParquetFile(o.out, logs)
}

// printSimulateSummary says what was written, from which model and
// behaviour, and the logs' mean return.
func printSimulateSummary(w io.Writer, o simulateOptions, m *pomdp.POMDP, b pomdp.Behavior, logs *pomdp.Logs) {
	mean := meanReturn(logs, o.episodes)
	size := int64(0)
	if st, err := os.Stat(o.out); err == nil {
		size = st.Size()
	}
	fmt.Fprintf(w, "wrote %s: %d episodes × %d steps = %d rows (%s)\n", o.out, o.episodes, o.horizon, o.episodes*o.horizon, humanBytes(size))
	fmt.Fprintf(w, "model %s (%d states, %d actions, %d observations), behaviour %s, seed %d\n",
		o.pomdp, m.NumStates(), m.NumActions(), m.NumObs(), b, o.seed)
	fmt.Fprintf(w, "mean return %.6g\n", mean)
}

// meanReturn is the mean return of the first K episodes of logs.
func meanReturn(logs *pomdp.Logs, K int) float64 {
	mean := 0.0
	for k := range K {
		mean += logs.Return(k)
	}
	return mean / float64(K)
}

// checkSimulate refuses options without a horizon, episodes or output
// file, and an output that is the model file or a directory.
func checkSimulate(o simulateOptions) error {
	var missing []string
	if o.horizon <= 0 {
		missing = append(missing, "--horizon H (> 0)")
	}
	if o.episodes <= 0 {
		missing = append(missing, "--episodes K (> 0)")
	}
	if o.out == "" {
		missing = append(missing, "--out FILE")
	}
	if len(missing) > 0 {
		return usagef("simulate needs %s", strings.Join(missing, ", "))
	}
	return checkSimulateOut(o)
}

// checkSimulateOut checks that --out names neither the model file nor a
// directory.
func checkSimulateOut(o simulateOptions) error {
	if a, err := os.Stat(o.pomdp); err == nil {
		if b, err := os.Stat(o.out); err == nil && os.SameFile(a, b) {
			return usagef("--out %s is the model file --pomdp %s; name a new Parquet file", o.out, o.pomdp)
		}
	}
	if st, err := os.Stat(o.out); err == nil && st.IsDir() {
		return usagef("--out %s is a directory; name the Parquet file to write", o.out)
	}
	return nil
}
