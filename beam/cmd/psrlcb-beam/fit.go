package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/psrlcb/psrlcb/beam/psrbeam"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/fitflag"
	"github.com/psrlcb/psrlcb/internal/memlimit"
	"github.com/psrlcb/psrlcb/internal/outdir"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pipeline"
	"github.com/psrlcb/psrlcb/report"
)

// Runners of --runner. local is psrlcb's own in-process engine.
var runners = []string{"local", "prism", "flink", "spark", "dataflow", "universal"}

// fitConfig holds the flags of fit.
type fitConfig struct {
	runner, out, rank, dynamics, alpha, onInvalid, workDir *string
	planner                                                *string
	ingestOn, memoryLimit                                  *string
	force, hullBound                                       *bool
	maxRank, restarts, maxIter, horizon, shardEpisodes     *int
	planPoints                                             *int
	workers                                                *int
	lambda, selectHeldOut, tol                             *float64
	seed                                                   *uint64
	planBudget, planRows                                   *int64
	dialTimeout                                            *time.Duration
}

func registerFlags(fs *flag.FlagSet) *fitConfig {
	return &fitConfig{
		runner:        fs.String("runner", "local", "where the passes over the episodes run: "+strings.Join(runners, ", ")+" (local never starts Beam)"),
		out:           fs.String("out", "", "output directory (required; written only when the whole run succeeds)"),
		force:         fs.Bool("force", false, "replace an existing output directory"),
		rank:          str(fs, fitflag.Rank),
		maxRank:       num(fs, fitflag.MaxRank),
		dynamics:      str(fs, fitflag.Dynamics),
		restarts:      num(fs, fitflag.Restarts),
		maxIter:       num(fs, fitflag.MaxIter),
		tol:           num(fs, fitflag.Tol),
		alpha:         fs.String("alpha", "auto", `bonus coefficient α: a number, a list "0.1,1", "auto" or "theory"`),
		lambda:        num(fs, fitflag.Lambda),
		selectHeldOut: num(fs, fitflag.SelectHeldOut),
		planBudget:    num(fs, fitflag.PlanBudget),
		planner:       str(fs, fitflag.Planner),
		planRows:      num(fs, fitflag.PlanRows),
		planPoints:    num(fs, fitflag.PlanPoints),
		hullBound:     fs.Bool(fitflag.HullBound.Name, fitflag.HullBound.Value, fitflag.HullBound.Usage),
		seed:          num(fs, fitflag.Seed),
		workers:       fs.Int("workers", 0, "goroutines of the driver (0: all cores)"),
		horizon:       num(fs, fitflag.Horizon),
		onInvalid:     str(fs, fitflag.OnInvalid),
		ingestOn:      fs.String("ingest", "", `where the logs are read and validated: "beam" (a pipeline; default with a Beam runner) or "driver" (this process, as psrlcb fit)`),
		workDir:       fs.String("work-dir", "", "where the episode shards and pass results go; every worker must read it (gs://…, s3://… on a cluster; default: --temp_location, else a local temporary directory)"),
		shardEpisodes: fs.Int("shard-episodes", psrbeam.DefaultShardEpisodes, "episodes per shard, the unit of work of a pass"),
		memoryLimit:   fs.String("memory-limit", memlimit.Default, `memory budget of the driver: a size ("4GiB"), a share of the machine's memory ("50%") or "none" (as psrlcb fit)`),
		dialTimeout:   fs.Duration("endpoint-timeout", 5*time.Second, "how long to try reaching --endpoint before failing"),
	}
}

// str defines the shared string option f on fs.
func str(fs *flag.FlagSet, f fitflag.Flag[string]) *string {
	return fs.String(f.Name, f.Value, f.Usage)
}

// num defines the shared numeric option f on fs, with the flag type of
// its value's type.
func num[T int | int64 | uint64 | float64](fs *flag.FlagSet, f fitflag.Flag[T]) *T {
	var p any
	switch v := any(f.Value).(type) {
	case int:
		p = fs.Int(f.Name, v, f.Usage)
	case int64:
		p = fs.Int64(f.Name, v, f.Usage)
	case uint64:
		p = fs.Uint64(f.Name, v, f.Usage)
	case float64:
		p = fs.Float64(f.Name, v, f.Usage)
	}
	return p.(*T)
}

// options turns the flags into the pipeline's options.
func (c *fitConfig) options() (pipeline.Options, error) {
	var o pipeline.Options
	if *c.rank != "auto" {
		n, err := strconv.Atoi(*c.rank)
		if err != nil || n < 1 {
			return o, usagef(`--rank must be a positive integer or "auto", not %q`, *c.rank)
		}
		o.Estimate.Rank = n
	}
	o.Estimate.MaxRank, o.Estimate.Dynamics = *c.maxRank, *c.dynamics
	o.Estimate.Restarts, o.Estimate.MaxIter, o.Estimate.Tol = *c.restarts, *c.maxIter, *c.tol
	spec, err := pessimism.ParseAlpha(*c.alpha)
	if err != nil {
		return o, usagef("--alpha: %v", err)
	}
	if spec.Mode == pessimism.AlphaTheory {
		return o, usagef("--alpha theory is not offered by psrlcb-beam; use psrlcb fit")
	}
	o.Alpha, o.Lambda, o.SelectHeldOut = spec, *c.lambda, *c.selectHeldOut
	o.PlanBudget, o.Seed, o.Workers = *c.planBudget, *c.seed, *c.workers
	o.Planner, o.PlanRows, o.PlanPoints, o.HullBound = *c.planner, *c.planRows, *c.planPoints, *c.hullBound
	limit, err := memlimit.Parse(*c.memoryLimit, memlimit.System.Machine())
	if err != nil {
		return o, usagef("--memory-limit: %v", err)
	}
	o.MemoryLimit = limit
	return o, nil
}

// beamRunner checks --runner and its endpoint and returns the Beam runner
// (nil for local).
func (c *fitConfig) beamRunner() (*psrbeam.Runner, error) {
	name := *c.runner
	known := false
	for _, r := range runners {
		known = known || r == name
	}
	if !known {
		return nil, usagef("--runner must be one of %s, not %q", strings.Join(runners, ", "), name)
	}
	if name == "local" {
		return nil, nil
	}
	ep := *jobopts.Endpoint
	switch {
	case ep == "" && (name == "flink" || name == "spark" || name == "universal"):
		return nil, usagef("--runner %s needs --endpoint HOST:PORT of its job server", name)
	case ep != "" && name != "dataflow":
		if err := reachable(ep, *c.dialTimeout); err != nil {
			return nil, fmt.Errorf("%w: %s job service at %s: %v", errEndpoint, name, ep, err)
		}
	}
	work := *c.workDir
	if work == "" && name != "prism" {
		work = tempLocation()
	}
	return &psrbeam.Runner{Name: name, WorkDir: work, ShardEpisodes: *c.shardEpisodes}, nil
}

// tempLocation is Beam's --temp_location when a linked runner defines it.
func tempLocation() string {
	if f := flag.Lookup("temp_location"); f != nil {
		return f.Value.String()
	}
	return ""
}

// reachable dials the job service's TCP address once.
func reachable(endpoint string, timeout time.Duration) error {
	addr := endpoint
	if i := strings.Index(addr, "://"); i >= 0 {
		addr = addr[i+3:]
	}
	conn, err := net.DialTimeout("tcp", strings.TrimSuffix(addr, "/"), timeout)
	if err != nil {
		return err
	}
	return conn.Close()
}

// runFit is fit: pipeline.Run (ingest through the policy and the report)
// with the ingest, the E-step passes, the U_h sums and the episode scores
// on the chosen runner (fitLogs), then the output directory, written
// atomically.
func runFit(ctx context.Context, c *fitConfig, args []string, stdout, stderr io.Writer) error {
	if *c.out == "" {
		return usagef("fit: --out DIR is required")
	}
	if len(args) == 0 {
		return usagef("fit: give the Parquet log files (globs and directories allowed), after the flags")
	}
	opts, err := c.options()
	if err != nil {
		return err
	}
	if opts.MemoryLimit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(opts.MemoryLimit) // the driver's heap, as psrlcb fit
	}
	if *c.onInvalid != ingest.OnInvalidFail && *c.onInvalid != ingest.OnInvalidSkip {
		return usagef("--on-invalid must be %q or %q, not %q", ingest.OnInvalidFail, ingest.OnInvalidSkip, *c.onInvalid)
	}
	br, err := c.beamRunner()
	if err != nil {
		return err
	}
	switch *c.ingestOn {
	case "":
	case "driver":
		if br != nil {
			br.DriverIngest = true
		}
	case "beam":
		if br == nil {
			return usagef("--ingest beam needs a Beam runner (--runner prism, flink, …)")
		}
	default:
		return usagef(`--ingest must be "beam" or "driver", not %q`, *c.ingestOn)
	}
	// Object-store inputs and output go through a local scratch directory.
	remoteOut := isURL(*c.out)
	var scratch string
	if remoteOut || slices.ContainsFunc(args, isURL) {
		if scratch, err = os.MkdirTemp("", "psrlcb-beam-io-"); err != nil {
			return err
		}
		defer os.RemoveAll(scratch)
	}
	if remoteOut {
		if err := checkRemoteOut(ctx, *c.out, *c.force); err != nil {
			return err
		}
	}
	local, err := fetchInputs(ctx, args, filepath.Join(scratch, "in"))
	if err != nil {
		return err
	}
	files, err := ingest.Expand(local)
	if err != nil {
		return err
	}
	var dir *outdir.Dir
	if !remoteOut {
		dir, err = outdir.Create(*c.out, outdir.Options{Force: *c.force, Command: "psrlcb-beam fit",
			Marker: report.ManifestFile, Known: report.OutputFiles(), Inputs: append(append([]string(nil), args...), files...)})
		if err != nil {
			return err
		}
		defer dir.Abort()
	}
	res, err := fitLogs(ctx, br, files, ingestOpts(c), opts, stderr)
	if err != nil {
		return err
	}
	defer res.Close()
	if remoteOut {
		staged := filepath.Join(scratch, "out")
		if err := os.MkdirAll(staged, 0o755); err != nil {
			return err
		}
		if err := report.WriteOutcome(staged, &res.Outcome); err != nil {
			return fmt.Errorf("writing %s: %w", *c.out, err)
		}
		if err := publish(ctx, staged, *c.out, *c.force); err != nil {
			return err
		}
	} else {
		if err := report.WriteOutcome(dir.Tmp, &res.Outcome); err != nil {
			return fmt.Errorf("writing %s: %w", *c.out, err)
		}
		if err := dir.Commit(); err != nil {
			return fmt.Errorf("moving the results into %s: %w", *c.out, err)
		}
	}
	h := res.Run.Manifest.Headline
	fmt.Fprintf(stdout, "run %s: %d episodes × %d steps, rank %d, α = %.4g, runner %s\n", res.Run.Manifest.RunID,
		res.Run.Manifest.Episodes, res.Run.Manifest.Horizon, h.Rank, float64(h.Alpha), *c.runner)
	fmt.Fprintf(stdout, "  lower confidence bound  %.4g  (%.4g in return units)\n", float64(h.LCB), float64(h.LCBUnits))
	fmt.Fprintf(stdout, "wrote %s (open %s)\n", *c.out, filepath.Join(*c.out, report.HTMLFile))
	return nil
}

func ingestOpts(c *fitConfig) ingest.Options {
	return ingest.Options{Horizon: *c.horizon, OnInvalid: *c.onInvalid}
}

// fitLogs runs pipeline.Run on the logs, with the ingest and the E-step
// passes on br when it is set.
func fitLogs(ctx context.Context, br *psrbeam.Runner, files []string, iopts ingest.Options, opts pipeline.Options, stderr io.Writer) (*pipeline.Result, error) {
	opts.Ingest = iopts
	if br != nil {
		defer br.Close(context.WithoutCancel(ctx))
		opts.Estimate.EStepper = br
		opts.USummer = br
		opts.Scorer = br
		if !br.DriverIngest {
			opts.Read = br.Ingest
		}
	}
	res, err := pipeline.Run(ctx, files, opts)
	if err != nil {
		return nil, err
	}
	if br != nil {
		fmt.Fprintf(stderr, "%d Beam passes on %s (E-steps, U_h sums, episode scores) in %.1f s\n", br.Passes, br.Name, br.PassTime.Seconds())
	}
	return res, ctx.Err()
}
