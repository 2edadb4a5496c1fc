// Command ope runs the validation study of psrlcb evaluate --logs
// (docs/evaluation.md): off-policy estimates against exact values.
//
// For each problem (a Cassandra .POMDP file), horizon H, behaviour policy
// and target policy it values the target exactly under the true model,
// then for each number of episodes K and each seed draws logs with
// pomdp.SimulateDataset and runs every estimator of package ope on them,
// as psrlcb evaluate --logs does (ope.Ratios, ope.FitModels with the rank
// chosen automatically, ope.Evaluate). Targets:
//
//	optimal  the exact optimal policy (pomdp.OptimalWithin), deterministic
//	clone    behaviour cloning (baseline.BehaviorCloning) trained on a
//	         separate log of 1000 episodes (seed 0): a deterministic
//	         history-dependent policy.arrow, followed with its lookup rule
//	random   a random stochastic policy of (step, observation): one
//	         Dirichlet(1,…,1) draw over the actions for each
//
// Every estimate goes to a CSV file (one row per seed and estimator);
// the summary (bias, RMSE and the coverage of each interval per cell) is
// printed as Markdown and, with --docs, written into docs/evaluation.md
// between its generated-results markers. Finished cells are not run again
// when the CSV already holds them, so an interrupted study resumes.
//
// Usage:
//
//	go run ./bench/ope --pomdp ../shared/pomdp/tiger.95.POMDP,../shared/pomdp/paint.95.pomdp \
//	    [--horizons 1,4,10] [--episodes 100,1000,10000] [--behaviors uniform,myopic:0.1] \
//	    [--targets optimal,clone,random] [--seeds 100] [--model-seeds 100] \
//	    [--model-max-episodes 10000] [--out bench/out/ope.csv] [--docs docs/evaluation.md]
package main

import (
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/ope"
	"github.com/psrlcb/psrlcb/pomdp"
)

type config struct {
	problems, behaviors, targets []string
	horizons, episodes           []int
	seeds, modelSeeds, modelMaxK int
	bootstrap, workers, maxNodes int
	out, docs                    string
}

func main() {
	c, err := parseConfig()
	if c.workers <= 0 {
		c.workers = runtime.GOMAXPROCS(0)
	}
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		err = run(ctx, c)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ope:", err)
		os.Exit(1)
	}
}

// parseConfig reads the study's configuration from the command line.
func parseConfig() (config, error) {
	var c config
	var problems, horizons, episodes, behaviors, targets string
	flag.StringVar(&problems, "pomdp", "", "comma-separated POMDP files (Cassandra's format)")
	flag.StringVar(&horizons, "horizons", "1,4,10", "comma-separated horizons H")
	flag.StringVar(&episodes, "episodes", "100,1000,10000", "comma-separated numbers of episodes K")
	flag.StringVar(&behaviors, "behaviors", "uniform,myopic:0.1", "comma-separated behaviour policies")
	flag.StringVar(&targets, "targets", "optimal,clone,random", "comma-separated target policies")
	flag.IntVar(&c.seeds, "seeds", 100, "logs per cell (seeds 1..N)")
	flag.IntVar(&c.modelSeeds, "model-seeds", 100, "of those, the first N also run the model-based estimators (they fit three models each)")
	flag.IntVar(&c.modelMaxK, "model-max-episodes", 10000, "run the model-based estimators only up to this K")
	flag.IntVar(&c.bootstrap, "bootstrap", ope.DefaultBootstrap, "bootstrap replicates per estimate")
	flag.IntVar(&c.workers, "workers", 0, "logs evaluated at once (0: all cores)")
	flag.IntVar(&c.maxNodes, "max-nodes", 2_000_000, "budget of the exact recursions (cells beyond it are left out)")
	flag.StringVar(&c.out, "out", "bench/out/ope.csv", "CSV of every estimate (appended to; finished cells are skipped)")
	flag.StringVar(&c.docs, "docs", "", "Markdown file whose generated-results section receives the summary")
	flag.Parse()
	c.problems, c.behaviors, c.targets = split(problems), split(behaviors), split(targets)
	var err error
	if c.horizons, err = ints(horizons); err == nil {
		c.episodes, err = ints(episodes)
	}
	if err == nil && len(c.problems) == 0 {
		err = errors.New("--pomdp is required")
	}
	return c, err
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range split(s) {
		v, err := strconv.Atoi(f)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// cell identifies one configuration of the study.
type cell struct {
	problem, behavior, target string
	H, K                      int
}

func (c cell) key() string {
	return fmt.Sprintf("%s|%d|%s|%s|%d", c.problem, c.H, c.behavior, c.target, c.K)
}

// record is one estimator's figures on one log.
type record struct {
	cell
	seed                  int
	truth                 float64
	estimator             string
	value, lower, upper   float64
	nLower, nUpper        float64
	bLower, bUpper        float64
	ess                   float64
	reliable, recommended bool
	withModel             bool
	seconds               float64 // the whole evaluation of the log
}

var header = []string{"problem", "H", "behavior", "target", "K", "seed", "truth", "estimator", "value", "lower", "upper",
	"normal_lower", "normal_upper", "bernstein_lower", "bernstein_upper", "ess", "reliable", "recommended", "with_model", "seconds"}

func (r record) row() []string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 10, 64) }
	return []string{r.problem, strconv.Itoa(r.H), r.behavior, r.target, strconv.Itoa(r.K), strconv.Itoa(r.seed), f(r.truth),
		r.estimator, f(r.value), f(r.lower), f(r.upper), f(r.nLower), f(r.nUpper), f(r.bLower), f(r.bUpper), f(r.ess),
		strconv.FormatBool(r.reliable), strconv.FormatBool(r.recommended), strconv.FormatBool(r.withModel), f(r.seconds)}
}

func parseRecord(row []string) (record, error) {
	if len(row) != len(header) {
		return record{}, fmt.Errorf("%d fields, want %d", len(row), len(header))
	}
	var r record
	var err error
	num := func(s string) float64 {
		v, e := strconv.ParseFloat(s, 64)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	r.problem, r.behavior, r.target, r.estimator = row[0], row[2], row[3], row[7]
	r.H, r.K, r.seed = int(num(row[1])), int(num(row[4])), int(num(row[5]))
	r.truth, r.value, r.lower, r.upper = num(row[6]), num(row[8]), num(row[9]), num(row[10])
	r.nLower, r.nUpper, r.bLower, r.bUpper, r.ess = num(row[11]), num(row[12]), num(row[13]), num(row[14]), num(row[15])
	r.reliable, r.recommended, r.withModel = row[16] == "true", row[17] == "true", row[18] == "true"
	r.seconds = num(row[19])
	return r, err
}

// readRecords reads the CSV written so far (none when it does not exist).
func readRecords(path string) ([]record, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeRecords(csv.NewReader(f), path)
}

// decodeRecords parses the rows of the CSV at path after its header, to
// its end.
func decodeRecords(cr *csv.Reader, path string) ([]record, error) {
	var out []record
	for i := 0; ; i++ {
		row, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if i == 0 {
			continue
		}
		r, err := parseRecord(row)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		out = append(out, r)
	}
}

func run(ctx context.Context, c config) error {
	recs, err := readRecords(c.out)
	if err != nil {
		return err
	}
	f, err := openAppend(c.out)
	if err != nil {
		return err
	}
	defer f.Close()
	return runStudy(ctx, c, recs, f)
}

// runStudy runs the study on top of the records recs already in the CSV
// f (writing its header when there are none) and reports the summary.
func runStudy(ctx context.Context, c config, recs []record, f *os.File) error {
	s := &study{c: c, done: doneCells(recs), w: csv.NewWriter(f), recs: recs}
	if len(recs) == 0 {
		if err := s.w.Write(header); err != nil {
			return err
		}
	}
	for _, path := range c.problems {
		if err := s.problem(ctx, path); err != nil {
			return err
		}
	}
	return report(c, s.recs)
}

// report prints the summary of the records and, with --docs, writes it
// into the docs file.
func report(c config, recs []record) error {
	sum := summarize(recs)
	fmt.Print(sum)
	if c.docs != "" {
		return writeDocs(c.docs, sum)
	}
	return nil
}

// openAppend opens the file at path to append to, creating it and its
// directory when missing.
func openAppend(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
}

// doneCells is the set of the keys of the cells the records hold.
func doneCells(recs []record) map[string]bool {
	done := map[string]bool{}
	for _, r := range recs {
		done[r.key()] = true
	}
	return done
}

// study is a run of the study: its configuration, the cells already
// done, the CSV it appends to and every record so far.
type study struct {
	c    config
	done map[string]bool
	w    *csv.Writer
	recs []record
}

// problem runs every cell of one problem file not done yet.
func (s *study) problem(ctx context.Context, path string) error {
	m, err := pomdp.ParseFile(path)
	if err != nil {
		return err
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	filter, err := m.NewFilter()
	if err != nil {
		return err
	}
	for _, H := range s.c.horizons {
		for _, bspec := range s.c.behaviors {
			if err := s.behaviorCells(ctx, m, filter, cell{problem: name, behavior: bspec, H: H}); err != nil {
				return err
			}
		}
	}
	return nil
}

// behaviorCells runs the cells of base's problem, H and behaviour for
// each target.
func (s *study) behaviorCells(ctx context.Context, m *pomdp.POMDP, filter *pomdp.Filter, base cell) error {
	beh, err := pomdp.ParseBehavior(base.behavior, m)
	if err != nil {
		return err
	}
	for _, tname := range s.c.targets {
		cl := base
		cl.target = tname
		if err := s.targetCells(ctx, m, filter, beh, cl); err != nil {
			return err
		}
	}
	return nil
}

// targetCells runs the cells of base's problem, H, behaviour and target
// for each K not done yet. The target is made (and valued) once, before
// the first of them; when it is too large to value exactly they are left
// out.
func (s *study) targetCells(ctx context.Context, m *pomdp.POMDP, filter *pomdp.Filter, beh pomdp.Behavior, base cell) error {
	var t *target
	var err error
	for _, K := range s.c.episodes {
		cl := base
		cl.K = K
		if s.done[cl.key()] {
			continue
		}
		if t == nil {
			var ok bool
			if t, ok, err = s.newTarget(ctx, m, beh, cl); !ok {
				return err
			}
		}
		if err := s.score(ctx, m, filter, beh, t, cl); err != nil {
			return err
		}
	}
	return nil
}

// newTarget makes the cell's target and values it; ok is false when that
// failed, or when the target is too large to value exactly, which leaves
// its cells out (reported, with no error).
func (s *study) newTarget(ctx context.Context, m *pomdp.POMDP, beh pomdp.Behavior, cl cell) (t *target, ok bool, err error) {
	t, err = makeTarget(ctx, cl.target, m, cl.H, beh, s.c.maxNodes)
	if errors.Is(err, pomdp.ErrTooLarge) {
		fmt.Fprintf(os.Stderr, "%s H=%d %s %s: left out (%v)\n", cl.problem, cl.H, cl.behavior, cl.target, err)
		return nil, false, nil
	}
	return t, err == nil, err
}

// score runs one cell, appends its records to the CSV (flushed at once,
// so that an interrupted study resumes after it) and reports its
// progress.
func (s *study) score(ctx context.Context, m *pomdp.POMDP, filter *pomdp.Filter, beh pomdp.Behavior, t *target, cl cell) error {
	start := time.Now()
	rs, skipped, err := runCell(ctx, s.c, m, filter, beh, t, cl)
	if err != nil {
		return fmt.Errorf("%s: %w", cl.key(), err)
	}
	if err := s.save(rs); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s H=%d %s %s K=%d: %d logs (%d skipped) in %.1fs\n",
		cl.problem, cl.H, cl.behavior, cl.target, cl.K, s.c.seeds-skipped, skipped, time.Since(start).Seconds())
	return nil
}

// save appends the records rs to the CSV, flushed at once, and to the
// study's records.
func (s *study) save(rs []record) error {
	for _, r := range rs {
		if err := s.w.Write(r.row()); err != nil {
			return err
		}
	}
	s.w.Flush()
	if err := s.w.Error(); err != nil {
		return err
	}
	s.recs = append(s.recs, rs...)
	return nil
}

// runCell evaluates the target on c.seeds logs of the cell, in parallel,
// and returns the records in seed order and how many logs were skipped
// (the target took an action the log never did).
func runCell(ctx context.Context, c config, m *pomdp.POMDP, filter *pomdp.Filter, beh pomdp.Behavior, t *target, cl cell) ([]record, int, error) {
	out, errs := runLogs(ctx, c, m, filter, beh, t, cl)
	var recs []record
	skipped := 0
	for s := range c.seeds {
		switch {
		case errors.Is(errs[s], errUnlogged):
			skipped++
		case errs[s] != nil:
			return nil, 0, fmt.Errorf("seed %d: %w", s+1, errs[s])
		}
		recs = append(recs, out[s]...)
	}
	return recs, skipped, nil
}

// runLogs evaluates the target on the c.seeds logs of the cell, c.workers
// at a time, and returns each seed's records and error.
func runLogs(ctx context.Context, c config, m *pomdp.POMDP, filter *pomdp.Filter, beh pomdp.Behavior, t *target, cl cell) ([][]record, []error) {
	out := make([][]record, c.seeds)
	errs := make([]error, c.seeds)
	var wg sync.WaitGroup
	next := make(chan int)
	for range c.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range next {
				out[s], errs[s] = runLog(ctx, c, m, filter, beh, t, cl, s+1)
			}
		}()
	}
	for s := range c.seeds {
		next <- s
	}
	close(next)
	wg.Wait()
	return out, errs
}

// runLog draws the log of one seed and runs every estimator on it.
func runLog(ctx context.Context, c config, m *pomdp.POMDP, filter *pomdp.Filter, beh pomdp.Behavior, t *target, cl cell, seed int) ([]record, error) {
	start := time.Now()
	d, tg, rho, err := drawLog(ctx, m, filter, beh, t, cl, seed)
	if err != nil {
		return nil, err
	}
	withModel := seed <= c.modelSeeds && cl.K <= c.modelMaxK
	o, err := evalOptions(ctx, c, d, seed, withModel)
	if err != nil {
		return nil, err
	}
	res, err := ope.Evaluate(ctx, d, rho, tg, o)
	if err != nil {
		return nil, err
	}
	out := records(res, cl, seed, t.value, withModel, time.Since(start).Seconds())
	if math.IsNaN(t.value) {
		return nil, errors.New("exact value is NaN")
	}
	return out, nil
}

// drawLog draws the log of one seed of the cell, the target's form for
// package ope on it and the target's importance ratios.
func drawLog(ctx context.Context, m *pomdp.POMDP, filter *pomdp.Filter, beh pomdp.Behavior, t *target, cl cell, seed int) (*ingest.Dataset, ope.Target, []float64, error) {
	d, err := pomdp.SimulateDataset(ctx, m, cl.H, cl.K, beh, uint64(seed))
	if err != nil {
		return nil, nil, nil, err
	}
	tg, err := t.opeTarget(m, d, filter)
	if err != nil {
		return nil, nil, nil, err
	}
	rho, err := ope.Ratios(ctx, d, tg, 1)
	return d, tg, rho, err
}

// evalOptions are the options of ope.Evaluate on the log d of seed; with
// withModel they carry the models ope.FitModels fits on it (on all the
// episodes and on each half) and their bonus.
func evalOptions(ctx context.Context, c config, d *ingest.Dataset, seed int, withModel bool) (ope.Options, error) {
	o := ope.Options{Bootstrap: c.bootstrap, Seed: uint64(seed), Workers: 1}
	if withModel {
		ms, err := ope.FitModels(ctx, d, nil, estimate.Options{Seed: uint64(seed), Workers: 1}, 1)
		if err != nil {
			return o, err
		}
		o.Model, o.Bonus, o.Folds, o.Fold, o.ModelNote = ms.All, ms.Bonus, ms.Folds, ms.Fold, ms.Note
	}
	return o, nil
}

// records turns the estimates on one log into the study's records (the
// model-based estimators left out when the models did not run).
func records(res *ope.Result, cl cell, seed int, truth float64, withModel bool, secs float64) []record {
	var out []record
	for _, e := range res.Estimates {
		if !withModel && (e.Estimator == ope.EstModel || e.Estimator == ope.EstModelLCB ||
			e.Estimator == ope.EstDR || e.Estimator == ope.EstWDR) {
			continue
		}
		out = append(out, record{cell: cl, seed: seed, truth: truth, estimator: e.Estimator,
			value: e.Value, lower: e.Lower, upper: e.Upper, nLower: e.NormalLower, nUpper: e.NormalUpper,
			bLower: e.BernsteinLower, bUpper: e.BernsteinUpper, ess: e.ESS, reliable: e.Reliable,
			recommended: e.Estimator == res.Recommended, withModel: withModel, seconds: secs})
	}
	return out
}
