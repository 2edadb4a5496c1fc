package main

import (
	"context"
	"io"
)

// runMain is the one harness every command test goes through: a fresh app,
// the argument handling of main (flags after the files, panics recovered)
// and main's exit-code mapping. It returns the error main would print and
// the exit code.
func runMain(ctx context.Context, stdout, stderr io.Writer, args ...string) (int, error) {
	app := newApp()
	app.Writer, app.ErrWriter = stdout, stderr
	err := execute(ctx, app, append([]string{"psrlcb"}, args...))
	return exitCode(ctx, err), err
}
