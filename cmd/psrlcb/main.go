// Command psrlcb turns logged trajectories into a pessimistic policy with
// PSR-LCB. Each command turns its flags into an options value, checks it
// before any work, and runs its runX(ctx, stdout, opts) function, which
// calls the library (pipeline.Run for fit) and owns the command's output:
// the staged output directory (internal/outdir), the printed summary and
// the warnings. Errors are mapped to exit codes once, in exitCode.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"

	"github.com/psrlcb/psrlcb/errkind"
	"github.com/psrlcb/psrlcb/internal/parallel"
	"github.com/urfave/cli/v2"
)

// Exit codes, documented in `psrlcb --help`: errkind's, which psrlcb-beam
// shares.
const (
	exitOK          = errkind.ExitOK
	exitInternal    = errkind.ExitInternal // a bug: please report it
	exitUsage       = errkind.ExitUsage    // bad flags or arguments
	exitData        = errkind.ExitData     // the input data is invalid
	exitIO          = errkind.ExitIO       // a file could not be read or written
	exitInterrupted = errkind.ExitInterrupted
)

const exitCodesHelp = `EXIT CODES:
   0    success
   1    internal error (a bug in psrlcb; the message says where to report it)
   2    usage error (bad flags, arguments, option values or config keys, or a refused --out)
   3    data error (the logs or a model file are invalid; the message names file, episode and step)
   4    I/O error (a file could not be opened, read or written)
   130  interrupted (SIGINT/SIGTERM); nothing partial is left behind
`

// bugReportURL is where internal errors are reported.
const bugReportURL = "https://github.com/psrlcb/psrlcb/issues"

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// newCommands builds every command afresh (flags hold parsed values, so
// two apps must not share them).
func newCommands() []*cli.Command {
	cmds := []*cli.Command{
		newActCommand(),
		newEvaluateCommand(),
		newExploreCommand(),
		newExploreActCommand(),
		newFitCommand(),
		newInspectCommand(),
		newSimulateCommand(),
		newSimulateOnlineCommand(),
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	return cmds
}

func newApp() *cli.App {
	app := &cli.App{
		Name:     "psrlcb",
		Usage:    "learn the best policy logged trajectories can justify (PSR-LCB)",
		Version:  version,
		Commands: newCommands(),
		// Errors are printed once, by main.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(c *cli.Context, err error, isSub bool) error {
			return usageError{suggestFlag(c, err)}
		},
	}
	app.CustomAppHelpTemplate = cli.AppHelpTemplate + "\n" + exitCodesHelp
	// A flag a command does not have is a usage error of that command.
	for _, c := range app.Commands {
		c.OnUsageError = app.OnUsageError
	}
	return app
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopProfile := startProfile(os.Getenv("PSRLCB_CPUPROFILE"), os.Stderr)
	stopMemProfile := startMemProfile(os.Getenv("PSRLCB_MEMPROFILE"), os.Stderr)
	if p, ok := gcPercent(os.Getenv("GOGC"), os.Args[1:]); ok {
		debug.SetGCPercent(p)
	}
	code := dispatch(ctx)
	stopProfile()
	stopMemProfile()
	stop()
	os.Exit(code)
}

// dispatch runs the command line, handed to psrlcb-beam for a Beam
// runner and here otherwise, and returns the exit code.
func dispatch(ctx context.Context) int {
	if runner, beam := runnerArg(os.Args[1:]); beam {
		return handOff(runner, os.Args[1:], os.Stdout, os.Stderr)
	}
	return run(ctx, newApp(), os.Args, os.Stdout, os.Stderr)
}

// defaultGCPercent is the garbage collector's target heap growth of a
// run, unless GOGC says otherwise. A fit's heap is mostly long-lived data
// (the logs' codes, the policy table of up to 10⁷ rows) and its stages
// allocate little per unit of work, so collecting when the heap has
// grown by a quarter rather than doubled costs little CPU and keeps the
// peak near the live data (docs/validation.md, "Time budget", has the
// peak RSS and CPU time measured with and without it).
const defaultGCPercent = 25

// inspectGCPercent is inspect's target heap growth. Inspect reads the
// logs once and summarises them: its live heap is the logs' arrays, and
// what it allocates besides is the read's short-lived buffers. At the
// runtime's 100% the heap's growth to the arrays' size triggers eight
// collections on 10⁷ rows, each with a worker on one of the cores the
// read is using; at 400% there are four, and inspect of the DuckDB-written
// 10⁷ rows took 320 ms against 349 ms (medians of 15) with the same peak
// RSS (docs/speed.md).
const inspectGCPercent = 400

// gcPercent returns the GC percent to set for the environment's GOGC
// value and the command line args: inspectGCPercent for inspect,
// defaultGCPercent for any other command, and nothing (false) when the
// user set GOGC (the runtime has applied theirs).
func gcPercent(env string, args []string) (int, bool) {
	if env != "" {
		return 0, false
	}
	if len(args) > 0 && args[0] == "inspect" {
		return inspectGCPercent, true
	}
	return defaultGCPercent, true
}

// startProfile writes a CPU profile of the run to path (the environment
// variable PSRLCB_CPUPROFILE; nothing when empty), for `go tool pprof`
// when a run is slower than expected. A profile that cannot be started is
// reported and the run goes on.
func startProfile(path string, stderr io.Writer) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := createCPUProfile(path)
	if err != nil {
		fmt.Fprintf(stderr, "psrlcb: PSRLCB_CPUPROFILE: %v (no profile written)\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// createCPUProfile creates the file path and starts the CPU profile
// into it.
func createCPUProfile(path string) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// run runs the command line args (args[0] is the program's name) as main
// does, prints the error, and returns the exit code. Tests call it with an
// app of their own.
func run(ctx context.Context, app *cli.App, args []string, stdout, stderr io.Writer) int {
	app.Writer, app.ErrWriter = stdout, stderr
	err := execute(ctx, app, args)
	code := exitCode(ctx, err)
	switch {
	case code == exitInterrupted:
		fmt.Fprintf(stderr, "psrlcb: interrupted: %s stopped before it finished; nothing was written (a staged output directory is removed)\n", commandName(app, args))
	case err != nil:
		fmt.Fprintf(stderr, "psrlcb: %v\n", err)
	}
	return code
}

// commandName is the command args run ("psrlcb fit"), or "psrlcb".
func commandName(app *cli.App, args []string) string {
	for _, a := range args[1:] {
		if app.Command(a) != nil {
			return "psrlcb " + a
		}
	}
	return "psrlcb"
}

// suggestFlag adds to the parser's "flag provided but not defined" error
// the command's flag nearest to the unknown one, as config keys get.
func suggestFlag(c *cli.Context, err error) error {
	const undefined = "flag provided but not defined: -"
	msg := err.Error()
	i := strings.Index(msg, undefined)
	if i < 0 {
		return err
	}
	name := strings.TrimLeft(msg[i+len(undefined):], "-")
	if near := nearest(name, flagNames(c)); near != "" {
		return fmt.Errorf("%w; did you mean --%s?", err, near)
	}
	return err
}

// flagNames are all the names of the flags of c's command, or of the
// app's global flags outside a command.
func flagNames(c *cli.Context) []string {
	flags := c.App.Flags
	if c.Command != nil && c.Command.Name != "" {
		flags = c.Command.Flags
	}
	var names []string
	for _, f := range flags {
		names = append(names, f.Names()...)
	}
	return names
}

// execute runs the app on args with flags allowed after the positional
// arguments. A panic in the command (a bug) becomes an internalError once
// the command's deferred clean-ups (such as removing a staged output
// directory) have run; so does a panic in a worker goroutine, which
// parallel.For returns as a *parallel.PanicError.
func execute(ctx context.Context, app *cli.App, args []string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = internalError{value: r, stack: debug.Stack()}
		}
		var pe *parallel.PanicError
		if ie, ok := err.(internalError); ok && errors.As(asError(ie.value), &pe) || errors.As(err, &pe) {
			err = internalError{value: pe.Value, stack: pe.Stack}
		}
	}()
	return app.RunContext(ctx, interspersed(app, args))
}

// asError is v when it is an error, else nil.
func asError(v any) error {
	err, _ := v.(error)
	return err
}

// internalError is a recovered panic: a bug in psrlcb.
type internalError struct {
	value any
	stack []byte
}

func (e internalError) Error() string {
	return fmt.Sprintf("internal error: %v\n%s\nThis is a bug in psrlcb %s, not a problem with your data or flags. "+
		"Please report it at %s with the command line and this message; no output was written.", e.value, e.stack, version, bugReportURL)
}

// usageError marks a mistake in how the command was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef builds a usage error.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitCode maps err to the exit code: a recovered panic is internal even
// when the run was interrupted; otherwise errkind.ExitCode, with the usage
// errors of the command line as usage.
func exitCode(ctx context.Context, err error) int {
	var ie internalError
	if errors.As(err, &ie) {
		return exitInternal
	}
	return errkind.ExitCode(ctx, err, func(err error) (int, bool) {
		var ue usageError
		return exitUsage, errors.As(err, &ue)
	})
}
