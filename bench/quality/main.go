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

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/internal/checkpoint"

	"github.com/psrlcb/psrlcb/pessimism"
)

// Defaults of the EM search of every fit, chosen so that the full study (200
// configurations, 50 of them at K = 10⁵) runs in under 30 minutes on 2 cores:
// two starts (the informed one and a perturbed one) of at most 200 iterations.
const (
	defaultRestarts = 2
	defaultMaxIter  = 200
	// singleSeedMargin is the shortfall below V^b allowed to PSR-LCB, as a
	// share of V* − V^b, when a cell has one seed and so no spread (the
	// reduced study).
	singleSeedMargin = 0.1
)

type options struct {
	out, docs, pomdpDir, checkpoint string
	problems, ks, alpha             string
	tier, rank, behaviors, fallback string
	seeds, restarts, maxIter        int
	workers                         int
	reduced, fresh, quiet, smallK   bool
	knownRange                      bool
}

// parseOptions reads the options from the command line.
func parseOptions() options {
	var o options
	flag.StringVar(&o.out, "out", "bench/out/quality.arrow", "Arrow IPC file of every run")
	flag.StringVar(&o.docs, "docs", "docs", "directory of validation.md and the plots (\"\" writes none)")
	flag.StringVar(&o.pomdpDir, "pomdp-dir", filepath.Join("..", "shared", "pomdp"), "directory holding the .POMDP files")
	flag.StringVar(&o.checkpoint, "checkpoint", "bench/out/quality.jsonl", "finished configurations, reused on the next run (\"\" for none)")
	flag.StringVar(&o.tier, "tier", "small", "\"small\" (the five H = 4 problems: "+problemNames(Problems)+") or \"larger\" ("+problemNames(LargerProblems)+")")
	flag.StringVar(&o.rank, "rank", "", "\"true\" (the true number of hidden states) or \"auto\" (the CLI default search); default true for the small tier, auto for the larger")
	flag.StringVar(&o.problems, "problems", "", "comma-separated problems of the tier (default all of them)")
	flag.StringVar(&o.behaviors, "behaviors", "", "comma-separated behaviour policies (default "+strings.Join(Behaviors, ",")+")")
	flag.StringVar(&o.ks, "ks", "100,1000,10000,100000", "comma-separated numbers of episodes K")
	flag.StringVar(&o.alpha, "alpha", "auto", "α of PSR-LCB: auto (the CLI default) or a number (a diagnostic run)")
	flag.IntVar(&o.seeds, "seeds", 5, "seeds per configuration")
	flag.IntVar(&o.restarts, "restarts", 0, "EM starts per fit (0: 2 with the true rank, psrlcb fit's default with --rank auto)")
	flag.IntVar(&o.maxIter, "max-iter", 0, "EM iterations per start (0: 200 with the true rank, psrlcb fit's default with --rank auto)")
	flag.IntVar(&o.workers, "workers", 0, "goroutines per fit (0: GOMAXPROCS)")
	flag.BoolVar(&o.reduced, "reduced", false, "the reduced study: one seed, K ≤ 1000")
	flag.BoolVar(&o.fresh, "fresh", false, "ignore the checkpoint and start over")
	flag.BoolVar(&o.quiet, "quiet", false, "no progress lines")
	flag.BoolVar(&o.smallK, "small-k", false, "the small-K study instead (K ∈ 10,30,100,300 unless --ks is given): LCB coverage and verdicts")
	flag.StringVar(&o.fallback, "fallback", "", "psrlcb fit's --fallback: clone (the default) or none")
	flag.BoolVar(&o.knownRange, "known-range", false, "with --small-k: state each problem's possible return range to the fit")
	flag.Parse()
	if o.smallK && !flagSet("ks") {
		o.ks = "10,30,100,300"
	}
	return o
}

func main() {
	o := parseOptions()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "quality:", err)
		if errors.Is(err, context.Canceled) {
			os.Exit(130)
		}
		os.Exit(1)
	}
}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func problemNames(ps []Problem) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Name
	}
	return strings.Join(s, ",")
}

// configFromOptions checks the flags and builds the study configuration.
func configFromOptions(o options) (Config, error) {
	cfg := Config{PomdpDir: o.pomdpDir, Behavs: Behaviors, Seeds: o.seeds, Restarts: o.restarts, MaxIter: o.maxIter, Workers: o.workers, KnownRange: o.knownRange, Fallback: o.fallback}
	if err := cfg.setAlpha(o.alpha); err != nil {
		return cfg, err
	}
	cfg.setBehaviors(o.behaviors)
	tier, err := cfg.setTier(o.tier, o.rank)
	if err != nil {
		return cfg, err
	}
	cfg.setEMDefaults()
	if err := cfg.setProblems(o.problems, tier); err != nil {
		return cfg, err
	}
	err = cfg.setRuns(o)
	return cfg, err
}

// setRuns sets the Ks (--ks, --reduced) and, with --reduced, a single
// seed; there must be something to run.
func (cfg *Config) setRuns(o options) error {
	if err := cfg.setKs(o.ks, o.reduced); err != nil {
		return err
	}
	if o.reduced {
		cfg.Seeds = 1
	}
	if len(cfg.Ks) == 0 || cfg.Seeds < 1 || cfg.Restarts < 1 || cfg.MaxIter < 1 {
		return fmt.Errorf("nothing to run: need at least one K, one seed, one restart and one iteration")
	}
	return nil
}

// setAlpha sets a fixed α ("" and "auto" leave the automatic choice).
func (cfg *Config) setAlpha(alpha string) error {
	if alpha != "" && alpha != "auto" {
		a, err := pessimism.ParseAlpha(alpha)
		if err != nil {
			return fmt.Errorf("--alpha: %w", err)
		}
		cfg.Alpha = a
	}
	return nil
}

// setBehaviors sets the comma-separated behaviour policies ("" keeps the
// default ones).
func (cfg *Config) setBehaviors(behaviors string) {
	if behaviors != "" {
		cfg.Behavs = nil
		for _, b := range strings.Split(behaviors, ",") {
			cfg.Behavs = append(cfg.Behavs, strings.TrimSpace(b))
		}
	}
}

// setTier sets the tier and whether the rank is searched (--tier, then
// --rank), and returns the tier's problems.
func (cfg *Config) setTier(tierName, rank string) ([]Problem, error) {
	tier := Problems
	switch tierName {
	case "", "small":
		cfg.Tier = "small"
	case "larger":
		tier, cfg.Tier, cfg.RankAuto = LargerProblems, "larger", true
	default:
		return tier, fmt.Errorf("--tier must be small or larger, not %q", tierName)
	}
	return tier, cfg.setRank(rank)
}

// setRank sets whether the rank is searched from --rank ("" keeps the
// tier's choice).
func (cfg *Config) setRank(rank string) error {
	switch rank {
	case "":
	case "auto":
		cfg.RankAuto = true
	case "true":
		cfg.RankAuto = false
	default:
		return fmt.Errorf("--rank must be true or auto, not %q", rank)
	}
	return nil
}

// setEMDefaults fills in the EM options not given.
//
// With the automatic rank the fits run as users run psrlcb fit (its
// EM defaults: the rank search's starts decide the rank); with the
// true rank, two shorter starts keep the small tier in its budget.
func (cfg *Config) setEMDefaults() {
	if cfg.Restarts == 0 {
		cfg.Restarts = defaultRestarts
		if cfg.RankAuto {
			cfg.Restarts = estimate.DefaultRestarts
		}
	}
	if cfg.MaxIter == 0 {
		cfg.MaxIter = defaultMaxIter
		if cfg.RankAuto {
			cfg.MaxIter = estimate.DefaultMaxIter
		}
	}
}

// setProblems sets the problems of the comma-separated names (all of the
// tier's when empty); every name must be one of the tier's.
func (cfg *Config) setProblems(names string, tier []Problem) error {
	if names == "" {
		cfg.Problems = tier
		return nil
	}
	for _, n := range strings.Split(names, ",") {
		ps := named(tier, strings.TrimSpace(n))
		if len(ps) == 0 {
			return fmt.Errorf("unknown problem %q of the %s tier (known: %s)", n, cfg.Tier, problemNames(tier))
		}
		cfg.Problems = append(cfg.Problems, ps...)
	}
	return nil
}

// named is the tier's problems named name.
func named(tier []Problem, name string) []Problem {
	var out []Problem
	for _, p := range tier {
		if p.Name == name {
			out = append(out, p)
		}
	}
	return out
}

// setKs sets the numbers of episodes of the comma-separated list (those
// up to 1000 in the reduced study).
func (cfg *Config) setKs(ks string, reduced bool) error {
	for _, s := range strings.Split(ks, ",") {
		K, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || K < 10 {
			return fmt.Errorf("--ks: %q is not a number of episodes ≥ 10", s)
		}
		if reduced && K > 1000 {
			continue
		}
		cfg.Ks = append(cfg.Ks, K)
	}
	return nil
}

// fingerprint names the options a checkpointed row depends on.
func fingerprint(cfg Config) string {
	fp := fmt.Sprintf("v2 restarts=%d maxiter=%d", cfg.Restarts, cfg.MaxIter)
	if cfg.RankAuto {
		fp += " rank=auto"
	}
	if len(cfg.Alpha.Values) > 0 || cfg.Alpha.Mode != pessimism.AlphaFixed {
		fp += fmt.Sprintf(" alpha=%v:%v", cfg.Alpha.Mode, cfg.Alpha.Values)
	}
	return fp
}

// readCheckpoint returns the finished configurations of the checkpoint
// stored under fp, each one's rows by key.
func readCheckpoint(path, fp string) (map[key][]Row, error) {
	lines, err := checkpoint.Read[[]Row](path, fp, "rows")
	done := map[key][]Row{}
	for _, rows := range lines {
		if len(rows) > 0 {
			done[rows[0].key()] = rows
		}
	}
	return done, err
}

func run(ctx context.Context, o options) error {
	cfg, err := configFromOptions(o)
	if err != nil {
		return err
	}
	if _, err := os.Stat(cfg.PomdpDir); err != nil {
		return fmt.Errorf("the benchmark POMDPs are not at %s (run from the repository root or pass --pomdp-dir): %w", cfg.PomdpDir, err)
	}
	if !o.quiet {
		cfg.Log = func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
	}
	if o.smallK {
		return runSmallK(ctx, cfg, o.docs)
	}
	return runStudy(ctx, o, cfg)
}

// runStudy runs the configurations the checkpoint does not hold yet
// (adding them to it), writes the Arrow table, validation.md's results
// and the plots, and prints the results.
func runStudy(ctx context.Context, o options, cfg Config) error {
	fp := fingerprint(cfg)
	done, w, err := openCheckpoint(o, fp)
	if err != nil {
		return err
	}
	var emit func([]Row) error
	if w != nil {
		defer w.Close()
		emit = w.Add
	}
	start := time.Now()
	rows, err := Run(ctx, cfg, done, emit)
	if err != nil {
		return err
	}
	return writeOutputs(o, cfg, fp, rows, time.Since(start).Seconds())
}

// writeOutputs writes the study's Arrow table, validation.md's results and
// the plots, and prints the results; the progress line on stderr gives
// this run's wall seconds.
func writeOutputs(o options, cfg Config, fp string, rows []Row, wall float64) error {
	fitSec := fitSeconds(rows)
	if err := writeStudyArrow(o.out, fp, cfg, rows); err != nil {
		return err
	}
	md := resultsMarkdown(rows, cfg, fitSec, singleSeedMargin)
	if err := writeDocs(o.docs, cfg, rows, md); err != nil {
		return err
	}
	if !o.quiet {
		fmt.Fprintf(os.Stderr, "%d configurations in %.0f s (this run); fit seconds in total %.0f\n", len(rows)/len(Methods), wall, fitSec)
	}
	fmt.Print(md)
	return nil
}

// openCheckpoint returns the finished configurations of o's checkpoint
// stored under fp (none with --fresh) and the checkpoint opened to add
// to; no writer without a checkpoint.
func openCheckpoint(o options, fp string) (map[key][]Row, *checkpoint.Writer[[]Row], error) {
	done := map[key][]Row{}
	if o.checkpoint == "" {
		return done, nil, nil
	}
	if !o.fresh {
		var err error
		if done, err = readCheckpoint(o.checkpoint, fp); err != nil {
			return nil, nil, err
		}
	}
	w, err := checkpoint.Create[[]Row](o.checkpoint, fp, "rows", o.fresh)
	if err != nil {
		return nil, nil, err
	}
	return done, w, nil
}

// fitSeconds is the fit time of the rows in total: PSR-LCB's and the
// baselines'.
func fitSeconds(rows []Row) float64 {
	var fitSec float64
	for _, r := range rows {
		if r.Method == "psrlcb" || r.Method == "tabular" || r.Method == "clone" {
			fitSec += float64(r.FitSeconds)
		}
	}
	return fitSec
}

// writeStudyArrow writes every row to the Arrow file out ("": none), with
// the study, its EM fingerprint fp and the seeds as metadata.
func writeStudyArrow(out, fp string, cfg Config, rows []Row) error {
	if out == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	meta := map[string]string{"study": "does pessimism pay", "em": fp, "seeds": strconv.Itoa(cfg.Seeds)}
	return writeArrow(out, rows, meta)
}

// writeDocs splices md into validation.md in the directory docs ("":
// none) and draws the tier's regret plot of each behaviour and its LCB
// plot there.
func writeDocs(docs string, cfg Config, rows []Row, md string) error {
	if docs == "" {
		return nil
	}
	if err := os.MkdirAll(docs, 0o755); err != nil {
		return err
	}
	if err := spliceResults(filepath.Join(docs, "validation.md"), md, cfg.Tier); err != nil {
		return err
	}
	return writePlots(docs, cfg, rows)
}

// plotPrefix is the start of the names of the tier's plot files.
func plotPrefix(tier string) string {
	if tier == "larger" {
		return "validation-larger-"
	}
	return "validation-"
}

// writePlots draws the tier's regret plot of each behaviour and its LCB
// plot in the directory docs.
func writePlots(docs string, cfg Config, rows []Row) error {
	prefix := plotPrefix(cfg.Tier)
	for _, b := range cfg.Behavs {
		name := prefix + "regret-" + strings.SplitN(b, ":", 2)[0] + ".svg"
		if err := regretPlot(rows, b, filepath.Join(docs, name)); err != nil {
			return err
		}
	}
	return lcbPlot(rows, filepath.Join(docs, prefix+"lcb.svg"))
}

// runSmallK runs the small-K study and splices its table into
// validation.md.
func runSmallK(ctx context.Context, cfg Config, docs string) error {
	rows, err := RunSmallK(ctx, cfg)
	if err != nil {
		return err
	}
	md := smallKMarkdown(rows, cfg)
	if docs != "" {
		if err := splice(filepath.Join(docs, "validation.md"), smallKBegin, smallKEnd, md, false); err != nil {
			return err
		}
	}
	fmt.Print(md)
	return nil
}
