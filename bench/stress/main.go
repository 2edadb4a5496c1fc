package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/psrlcb/psrlcb/internal/checkpoint"
)

type options struct {
	out, docs, checkpoint        string
	families, ks, horizons, behs string
	problems, restarts, maxIter  int
	workers                      int
	seed                         uint64
	small, autoRank, fresh       bool
	clones                       bool
	quiet                        bool
	maxNodes                     int
}

// parseOptions reads the options from the command line.
func parseOptions() options {
	var o options
	flag.StringVar(&o.out, "out", "bench/out/stress.arrow", "Arrow IPC file of every run (\"\" for none)")
	flag.StringVar(&o.docs, "docs", "docs", "directory of stress.md and its plots (\"\" writes none)")
	flag.StringVar(&o.checkpoint, "checkpoint", "bench/out/stress.jsonl", "finished configurations, reused on the next run (\"\" for none)")
	flag.StringVar(&o.families, "families", strings.Join(familiesDefault, ","), "comma-separated problem families")
	flag.StringVar(&o.ks, "ks", "10000", "comma-separated numbers of episodes K")
	flag.StringVar(&o.horizons, "horizons", "4", "comma-separated horizons H")
	flag.StringVar(&o.behs, "behaviors", strings.Join(Behaviors, ","), "comma-separated behaviour policies")
	flag.IntVar(&o.problems, "problems", 20, "problems per family")
	flag.IntVar(&o.restarts, "restarts", 2, "EM starts per fit")
	flag.IntVar(&o.maxIter, "max-iter", 200, "EM iterations per start")
	flag.IntVar(&o.workers, "workers", 0, "goroutines per fit (0: GOMAXPROCS)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the problem draws")
	flag.BoolVar(&o.small, "small", false, "the reduced families (at most 9 states)")
	flag.BoolVar(&o.autoRank, "auto-rank", false, "choose the rank by held-out likelihood as fit does by default (--rank auto) instead of the true |S|")
	flag.BoolVar(&o.fresh, "fresh", false, "ignore the checkpoint and start over")
	flag.BoolVar(&o.quiet, "quiet", false, "no progress lines")
	flag.BoolVar(&o.clones, "clones", false, "only compare the behaviour fallback's two candidates, the clone and the improved clone, valued exactly on each configuration's logs (no fit; prints a table)")
	flag.IntVar(&o.maxNodes, "max-nodes", 2_000_000, "skip a problem at a horizon whose exact optimal or behaviour value needs more (step, belief) nodes, or a run whose policies reach 10× as many histories (0: no budget)")
	flag.Parse()
	return o
}

func main() {
	o := parseOptions()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "stress:", err)
		if errors.Is(err, context.Canceled) {
			os.Exit(130)
		}
		os.Exit(1)
	}
}

var familiesDefault = []string{"maze", "aliased", "dense"}

func ints(s, what string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("--%s: %q is not a positive integer", what, f)
		}
		out = append(out, v)
	}
	return out, nil
}

func configFromOptions(o options) (Config, error) {
	cfg := Config{Small: o.small, Problems: o.problems, Seed: o.seed, Restarts: o.restarts, MaxIter: o.maxIter,
		AutoRank: o.autoRank, Workers: o.workers, MaxNodes: o.maxNodes}
	var err error
	if cfg.Ks, err = ints(o.ks, "ks"); err != nil {
		return cfg, err
	}
	if cfg.Horizons, err = ints(o.horizons, "horizons"); err != nil {
		return cfg, err
	}
	cfg.Families, cfg.Behavs = trimmed(o.families), trimmed(o.behs)
	if cfg.Problems < 1 || cfg.Restarts < 1 || cfg.MaxIter < 1 {
		return cfg, fmt.Errorf("nothing to run: need at least one problem, one restart and one iteration")
	}
	return cfg, nil
}

// trimmed splits the comma-separated list s, each entry trimmed of
// spaces.
func trimmed(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		out = append(out, strings.TrimSpace(f))
	}
	return out
}

// fingerprint names the options a checkpointed row depends on.
func fingerprint(cfg Config) string {
	return fmt.Sprintf("v1 seed=%d small=%v restarts=%d maxiter=%d autorank=%v variant=%s",
		cfg.Seed, cfg.Small, cfg.Restarts, cfg.MaxIter, cfg.AutoRank, cfg.Label)
}

// readCheckpoint returns the finished runs of the checkpoint stored under
// fp, by key.
func readCheckpoint(path, fp string) (map[key]Row, error) {
	rows, err := checkpoint.Read[Row](path, fp, "row")
	done := map[key]Row{}
	for _, r := range rows {
		done[r.key()] = r
	}
	return done, err
}

func run(ctx context.Context, o options) error {
	cfg, err := configFromOptions(o)
	if err != nil {
		return err
	}
	if !o.quiet {
		cfg.Log = func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
	}
	if o.clones {
		return runClones(ctx, cfg)
	}
	return runStudy(ctx, o, cfg)
}

// runStudy runs the study, resuming from and appending to the checkpoint
// when there is one, and writes its results.
func runStudy(ctx context.Context, o options, cfg Config) error {
	fp := fingerprint(cfg)
	done := map[key]Row{}
	var emit func(Row) error
	if o.checkpoint != "" {
		w, d, err := openCheckpoint(o, fp)
		if err != nil {
			return err
		}
		defer w.Close()
		done, emit = d, w.Add
	}
	start := time.Now()
	all, err := Run(ctx, cfg, done, emit)
	if err != nil {
		return err
	}
	return writeResults(o, cfg, fp, all, start)
}

// openCheckpoint reads the rows the checkpoint holds for the fingerprint
// fp (none with --fresh) and opens it to append to.
func openCheckpoint(o options, fp string) (*checkpoint.Writer[Row], map[key]Row, error) {
	done := map[key]Row{}
	var err error
	if !o.fresh {
		if done, err = readCheckpoint(o.checkpoint, fp); err != nil {
			return nil, nil, err
		}
	}
	w, err := checkpoint.Create[Row](o.checkpoint, fp, "row", o.fresh)
	return w, done, err
}

// runClones runs the clone study and prints its table.
func runClones(ctx context.Context, cfg Config) error {
	rows, err := RunClones(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Print(clonesMarkdown(rows))
	return nil
}

// writeResults writes the Arrow table of the measured runs of all and
// stress.md's results with the plots, and prints the results (with how
// many configurations were skipped); start is when the session's runs
// began.
func writeResults(o options, cfg Config, fp string, all []Row, start time.Time) error {
	rows, skipped := Measured(all)
	if o.out != "" {
		if err := saveArrow(o.out, rows, fp); err != nil {
			return err
		}
	}
	md := studyMarkdown(rows, cfg, skipped)
	if o.docs != "" {
		if err := writeDocs(o.docs, rows, md); err != nil {
			return err
		}
	}
	if !o.quiet {
		fmt.Fprintf(os.Stderr, "%d runs (%.0f s this session)\n", len(rows), time.Since(start).Seconds())
	}
	fmt.Print(md)
	return nil
}

// saveArrow writes the measured rows to the Arrow file at path, creating
// its directory.
func saveArrow(path string, rows []Row, fp string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return writeArrow(path, rows, map[string]string{"study": "stress", "em": fp})
}

// studyMarkdown is the results' Markdown, headed by the count of the
// configurations skipped over the node budget when there are any.
func studyMarkdown(rows []Row, cfg Config, skipped int) string {
	md := resultsMarkdown(rows, cfg)
	if skipped > 0 {
		md = fmt.Sprintf("%d configurations skipped: an exact reference exceeded the node budget (--max-nodes %d).\n\n", skipped, cfg.MaxNodes) + md
	}
	return md
}
