package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
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

// TestUnknownFlagSuggestion: a misspelt flag is a usage error that names
// the command's nearest flag, as a misspelt config key does.
func TestUnknownFlagSuggestion(t *testing.T) {
	for args, want := range map[string]string{
		"fit --rnak 2 x.parquet":        "did you mean --rank?",
		"act --polcy p --history o":     "did you mean --policy?",
		"simulate --episodez 3":         "did you mean --episodes?",
		"fit --zzzzzzzzzzzz x.parquet":  "flag provided but not defined",
		"inspect --polcy run --top 3 x": "did you mean --policy?",
	} {
		var stderr bytes.Buffer
		code := run(t.Context(), newApp(), append([]string{"psrlcb"}, strings.Fields(args)...), &bytes.Buffer{}, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), want) {
			t.Errorf("%s: exit %d, %q; want exit %d and %q", args, code, stderr.String(), exitUsage, want)
		}
	}
}

// TestInterruptedMessage: a cancelled run says which command stopped and
// that nothing was written, not only "context canceled".
func TestInterruptedMessage(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var stderr bytes.Buffer
	code := run(ctx, newApp(), []string{"psrlcb", "fit", exampleLogs, "--out", filepath.Join(t.TempDir(), "run")}, &bytes.Buffer{}, &stderr)
	if code != exitInterrupted || !strings.Contains(stderr.String(), "psrlcb fit stopped") || !strings.Contains(stderr.String(), "nothing was written") {
		t.Errorf("exit %d, %q", code, stderr.String())
	}
}

// TestHelpStatesDefaults: no flag of any command says "(0: default)"; a
// zero value's meaning is the default itself, printed from the constant
// the code uses.
func TestHelpStatesDefaults(t *testing.T) {
	for _, c := range newCommands() {
		for _, f := range c.Flags {
			u, ok := f.(interface{ GetUsage() string })
			if !ok {
				continue
			}
			if strings.Contains(u.GetUsage(), "(0: default)") || strings.Contains(u.GetUsage(), "stage's default") {
				t.Errorf("%s --%s: %q", c.Name, f.Names()[0], u.GetUsage())
			}
		}
	}
	var out bytes.Buffer
	run(t.Context(), newApp(), []string{"psrlcb", "fit", "--help"}, &out, &bytes.Buffer{})
	for _, want := range []string{"(0: 4)", "(0: 300)", "(0: 1e-06)", "(0: 50000000)", "(0: 64)", "(0: 0.5)", "(0: 50000)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("fit --help does not say %q", want)
		}
	}
}
