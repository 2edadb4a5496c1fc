// Command psrlcb turns logged trajectories into a pessimistic policy with
// PSR-LCB. The commands only parse flags and call the library stages.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/psrlcb/psrlcb/errkind"
	"github.com/urfave/cli/v2"
)

// Exit codes, documented in `psrlcb --help`.
const (
	exitOK          = 0
	exitInternal    = 1 // a bug: please report it
	exitUsage       = 2 // bad flags or arguments
	exitData        = 3 // the input data is invalid
	exitIO          = 4 // a file could not be read or written
	exitInterrupted = 130
)

const exitCodesHelp = `EXIT CODES:
   0    success
   1    internal error
   2    usage error (bad flags, arguments or option values)
   3    data error (the logs or a model file are invalid; the message names file, episode and step)
   4    I/O error (a file could not be opened, read or written)
   130  interrupted (SIGINT/SIGTERM); nothing partial is left behind
`

// commands is filled by each command's file in its init function, so
// that commands live in files of their own.
var commands []*cli.Command

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newApp() *cli.App {
	sort.Slice(commands, func(i, j int) bool { return commands[i].Name < commands[j].Name })
	app := &cli.App{
		Name:     "psrlcb",
		Usage:    "learn the best policy logged trajectories can justify (PSR-LCB)",
		Version:  version,
		Commands: commands,
		// Errors are printed once, by main.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(c *cli.Context, err error, isSub bool) error {
			return usageError{err}
		},
	}
	app.CustomAppHelpTemplate = cli.AppHelpTemplate + "\n" + exitCodesHelp
	return app
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := newApp()
	err := app.RunContext(ctx, interspersed(app, os.Args))
	code := exitCode(ctx, err)
	if err != nil {
		fmt.Fprintf(os.Stderr, "psrlcb: %v\n", err)
	}
	stop()
	os.Exit(code)
}

// usageError marks a mistake in how the command was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef builds a usage error.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func exitCode(ctx context.Context, err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return exitInterrupted
	}
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	switch errkind.Of(err) {
	case errkind.Data:
		return exitData
	case errkind.Options:
		return exitUsage
	case errkind.IO:
		return exitIO
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return exitIO
	}
	return exitInternal
}
