package main

import (
	"flag"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/psrlcb/psrlcb/beam/psrbeam"
	"github.com/psrlcb/psrlcb/errkind"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/internal/memlimit"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pipeline"
	"github.com/psrlcb/psrlcb/policy"
)

// TestHelpStatesDefaults: every flag whose help states what its zero
// value means, "(0: …)", states the main module's default for it (the
// constant psrlcb fit applies and prints), and the flags with a default
// value of their own have the main module's. A flag that starts stating
// a default must be added here.
func TestHelpStatesDefaults(t *testing.T) {
	fs := flag.NewFlagSet("fit", flag.ContinueOnError)
	registerFlags(fs)
	zero := map[string]string{
		"max-rank":       strconv.Itoa(estimate.DefaultMaxRank),
		"restarts":       strconv.Itoa(estimate.DefaultRestarts),
		"max-iter":       strconv.Itoa(estimate.DefaultMaxIter),
		"tol":            fmt.Sprintf("%g", estimate.DefaultTol),
		"lambda":         fmt.Sprintf("%g", pessimism.DefaultLambda),
		"select-heldout": fmt.Sprintf("%g", pipeline.DefaultSelectHeldOut),
		"plan-budget":    strconv.FormatInt(policy.DefaultBudget, 10),
		"plan-rows":      strconv.FormatInt(policy.DefaultRowBudget, 10),
		"plan-points":    strconv.Itoa(policy.DefaultPoints),
		"workers":        "all cores",
	}
	stated := regexp.MustCompile(`\(0: ([^)]*)\)`)
	seen := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		m := stated.FindStringSubmatch(f.Usage)
		if m == nil {
			return
		}
		seen[f.Name] = true
		want, ok := zero[f.Name]
		switch {
		case !ok:
			t.Errorf("--%s states the default %q, which this test does not check", f.Name, m[1])
		case m[1] != want:
			t.Errorf("--%s states the default %q, the main module's is %q", f.Name, m[1], want)
		}
	})
	for name := range zero {
		if !seen[name] {
			t.Errorf("--%s no longer states its default (0: %s)", name, zero[name])
		}
	}
	for name, want := range map[string]string{
		"shard-episodes": strconv.Itoa(psrbeam.DefaultShardEpisodes),
		"memory-limit":   memlimit.Default,
		"dynamics":       estimate.DynamicsStationary,
	} {
		if f := fs.Lookup(name); f == nil || f.DefValue != want {
			t.Errorf("--%s: default %v, want %q", name, f, want)
		}
	}
}

// TestExitCodesAreErrkinds: psrlcb-beam's exit codes are psrlcb's, and its
// own errors map to usage and I/O.
func TestExitCodesAreErrkinds(t *testing.T) {
	ctx := t.Context()
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, errkind.ExitOK},
		{usagef("bad flag"), errkind.ExitUsage},
		{fmt.Errorf("%w: localhost:1", errEndpoint), errkind.ExitIO},
		{fmt.Errorf("%w: gs://b/x", errRemote), errkind.ExitIO},
		{fmt.Errorf("episode 3: %w", estimate.ErrModel), errkind.ExitData},
		{fmt.Errorf("bug"), errkind.ExitInternal},
	} {
		if got := exitCode(ctx, c.err); got != c.want {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
