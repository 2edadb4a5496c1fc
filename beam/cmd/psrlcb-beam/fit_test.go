package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/policy"
)

const tigerLogs = "../../../examples/tiger-logs.parquet"

func TestMain(m *testing.M) {
	flag.Parse()
	beam.Init()
	quietBeamLogs()
	os.Exit(m.Run())
}

// config parses args as the command line of fit.
func config(t *testing.T, args ...string) (*fitConfig, []string) {
	t.Helper()
	fs := flag.NewFlagSet("fit", flag.ContinueOnError)
	c := registerFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return c, fs.Args()
}

// TestPrismMatchesLocal: the whole fit of the tiger example logs (α chosen
// among two candidates on held-out episodes, then the warm-started final
// fit) with the ingest and every E-step pass on Prism gives the model of
// --runner local within 1e-9 and the same policy rows (values within
// 1e-9).
func TestPrismMatchesLocal(t *testing.T) {
	var pol [2]*policy.Policy
	var model [2]*estimate.Model
	var loglik [2][]float64
	for i, runner := range []string{"local", "prism"} {
		c, args := config(t, "--runner", runner, "--rank", "2", "--restarts", "1", "--max-iter", "8", "--alpha", "0.1,1", "--shard-episodes", "700", "--out", "unused", tigerLogs)
		opts, err := c.options()
		if err != nil {
			t.Fatal(err)
		}
		br, err := c.beamRunner()
		if err != nil {
			t.Fatal(err)
		}
		if (br == nil) != (runner == "local") {
			t.Fatalf("runner %s: Beam runner %v", runner, br)
		}
		var stderr bytes.Buffer
		res, err := fitLogs(context.Background(), br, args, ingestOpts(c), opts, &stderr)
		if err != nil {
			t.Fatal(err)
		}
		if br != nil && br.Passes < 8 {
			t.Errorf("%d passes on prism: the E-steps did not run there", br.Passes)
		}
		pol[i], model[i] = res.Policy, res.Model
		loglik[i] = res.Run.Episodes.LogLik
	}
	// episodes.arrow's log-likelihoods, scored on Prism in the second run.
	if len(loglik[0]) != len(loglik[1]) || len(loglik[0]) == 0 {
		t.Fatalf("%d and %d episode log-likelihoods", len(loglik[0]), len(loglik[1]))
	}
	for k := range loglik[0] {
		if math.Abs(loglik[0][k]-loglik[1][k]) > 1e-6 {
			t.Fatalf("episode %d: log-likelihood %v locally, %v on prism", k, loglik[0][k], loglik[1][k])
		}
	}
	if d := model[0].MaxParamDiff(model[1]); d > 1e-9 {
		t.Errorf("models differ by %g", d)
	}
	a, b := pol[0].Nodes, pol[1].Nodes
	if len(a) != len(b) {
		t.Fatalf("%d policy rows on prism, %d locally", len(b), len(a))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.ID != y.ID || x.Parent != y.Parent || x.Step != y.Step || x.Obs != y.Obs || x.Action != y.Action || x.Fallback != y.Fallback {
			t.Errorf("policy row %d: local %+v, prism %+v", i, x, y)
		}
		for _, v := range [][2]float64{{x.ReachProb, y.ReachProb}, {x.ValueReward, y.ValueReward}, {x.ValueBonus, y.ValueBonus}} {
			if math.Abs(v[0]-v[1]) > 1e-9 {
				t.Errorf("policy row %d: values %v and %v", i, v[0], v[1])
			}
		}
	}
}

// TestUnreachableEndpoint: a job service nobody listens on fails within
// seconds with exit code 4, a message naming the endpoint, and no output.
func TestUnreachableEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	old := *jobopts.Endpoint
	*jobopts.Endpoint = addr
	defer func() { *jobopts.Endpoint = old }()
	out := filepath.Join(t.TempDir(), "run")
	c, args := config(t, "--runner", "flink", "--out", out, tigerLogs)
	start := time.Now()
	err = runFit(context.Background(), c, args, &bytes.Buffer{}, &bytes.Buffer{})
	if code := exitCode(context.Background(), err); code != exitIO {
		t.Errorf("exit code %d (%v), want %d", code, err, exitIO)
	}
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "flink") {
		t.Errorf("message %q does not name the flink endpoint %s", err, addr)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %v", el)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("output directory exists after the failure: %v", err)
	}
}

// TestUsageErrors: bad flags are usage errors (exit 2) before any work.
func TestUsageErrors(t *testing.T) {
	old := *jobopts.Endpoint
	*jobopts.Endpoint = ""
	defer func() { *jobopts.Endpoint = old }()
	out := filepath.Join(t.TempDir(), "run")
	cases := map[string][]string{
		"--runner must be one of":    {"--runner", "storm", "--out", out, tigerLogs},
		"needs --endpoint":           {"--runner", "spark", "--out", out, tigerLogs},
		"--out DIR is required":      {tigerLogs},
		"give the Parquet log files": {"--out", out},
		"--rank must be":             {"--rank", "0", "--out", out, tigerLogs},
		"--on-invalid must be":       {"--on-invalid", "drop", "--out", out, tigerLogs},
		"not offered by psrlcb-beam": {"--alpha", "theory", "--out", out, tigerLogs},
	}
	for want, argv := range cases {
		c, args := config(t, argv...)
		err := runFit(context.Background(), c, args, &bytes.Buffer{}, &bytes.Buffer{})
		if code := exitCode(context.Background(), err); code != exitUsage || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: exit %d, %v; want %d and %q", argv, code, err, exitUsage, want)
		}
	}
}

// TestPlannerFlags: --planner, --plan-rows, --plan-points and
// --hull-bound reach the pipeline's options as psrlcb fit's do.
func TestPlannerFlags(t *testing.T) {
	c, _ := config(t, "--planner", "belief", "--plan-rows", "400", "--plan-points", "250", "--hull-bound", "--out", "unused", tigerLogs)
	opts, err := c.options()
	if err != nil {
		t.Fatal(err)
	}
	if opts.Planner != "belief" || opts.PlanRows != 400 || opts.PlanPoints != 250 || !opts.HullBound {
		t.Fatalf("options: planner %q, rows %d, points %d, hull bound %v", opts.Planner, opts.PlanRows, opts.PlanPoints, opts.HullBound)
	}
}
