// Command psrlcb-beam is `psrlcb fit` with the passes over the episodes
// run as Apache Beam pipelines: on Beam's in-process Prism runner, or on
// Flink, Spark or Dataflow. It lives in its own Go module so that users
// who stay on one machine never build Beam (docs/scale-out.md).
//
//	psrlcb-beam fit --runner prism --out runs/x [flags] FILES...
//
// Flags may come before or after the log files. --runner local runs exactly what
// `psrlcb fit` runs and never starts Beam. Beam's own flags (--endpoint,
// --environment_type, --environment_config, --job_name, --project,
// --region, --temp_location, --staging_location, …) are accepted as
// well; `psrlcb-beam -help` lists them all.
//
// Exit codes: 0 success, 1 internal error, 2 usage error, 3 data error,
// 4 I/O error (an unreadable file or an unreachable runner endpoint),
// 130 interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/psrlcb/psrlcb/errkind"
)

// The exit codes are psrlcb's (errkind).
const (
	exitOK          = errkind.ExitOK
	exitInternal    = errkind.ExitInternal
	exitUsage       = errkind.ExitUsage
	exitData        = errkind.ExitData
	exitIO          = errkind.ExitIO
	exitInterrupted = errkind.ExitInterrupted
)

// usageError is a mistake in the flags or arguments.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// errEndpoint: the runner's job service cannot be reached.
var errEndpoint = errors.New("runner endpoint unreachable")

func main() {
	// Beam's workers start this binary with Beam's flags only; beam.Init
	// turns such a process into a worker and does not return.
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "fit" {
		args = args[1:]
	}
	cfg := registerFlags(flag.CommandLine)
	flag.CommandLine.Parse(interspersed(flag.CommandLine, args))
	beam.Init()
	quietBeamLogs()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runFit(ctx, cfg, flag.Args(), os.Stdout, os.Stderr)
	code := exitCode(ctx, err)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "psrlcb-beam: %v\n", err)
	}
	os.Exit(code)
}

// quietBeamLogs keeps Beam's and Prism's informational logging (a few lines
// per pipeline) off the terminal; warnings and errors still show.
func quietBeamLogs() {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// exitCode maps err to the exit code as psrlcb does (errkind.ExitCode),
// with this command's usage errors as usage and an unreachable runner
// endpoint or object store as I/O.
func exitCode(ctx context.Context, err error) int {
	return errkind.ExitCode(ctx, err, func(err error) (int, bool) {
		var ue usageError
		switch {
		case errors.As(err, &ue):
			return exitUsage, true
		case errors.Is(err, errEndpoint), errors.Is(err, errRemote):
			return exitIO, true
		}
		return 0, false
	})
}
