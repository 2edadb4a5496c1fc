package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// beamCommand is the program that runs fit's passes over the episodes on
// Apache Beam (the beam/ module, a separate Go module so that psrlcb
// itself links no Beam code; docs/scale-out.md).
const beamCommand = "psrlcb-beam"

// beamBuildHint says how to get psrlcb-beam.
const beamBuildHint = "build it from a checkout with `cd beam && go build -o \"$(go env GOPATH)/bin/psrlcb-beam\" ./cmd/psrlcb-beam` (docs/scale-out.md)"

// runnerArg returns the value of fit's --runner in args (the arguments
// after the program name) and whether the command is fit with a runner
// other than local, or with an object-store URL (gs://…, s3://…) among
// its arguments: such a run is handed to psrlcb-beam, which links Beam's
// runners and filesystems.
func runnerArg(args []string) (string, bool) {
	if len(args) == 0 || args[0] != "fit" {
		return "", false
	}
	runner, url := "", false
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		url = url || isURL(strings.TrimLeft(a[strings.Index(a, "=")+1:], " "))
		if v, ok := runnerValue(args, i); ok {
			runner = v
		}
	}
	return runner, (runner != "" && runner != "local") || url
}

// runnerValue is the runner that args[i] names, as "--runner X" or
// "--runner=X" (with one dash or two), if it does.
func runnerValue(args []string, i int) (string, bool) {
	a := args[i]
	runner, found := "", false
	for _, name := range []string{"--runner", "-runner"} {
		if a == name && i+1 < len(args) {
			runner, found = args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			runner, found = v, true
		}
	}
	return runner, found
}

// isURL says whether s names an object through a URL scheme (gs://,
// s3://, …) rather than a local path.
func isURL(s string) bool {
	i := strings.Index(s, "://")
	return i > 0 && !strings.ContainsAny(s[:i], "/\\=")
}

// findBeam looks for psrlcb-beam beside this program, then on PATH.
func findBeam() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), beamCommand)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return exec.LookPath(beamCommand)
}

// handOff runs `psrlcb-beam fit ARGS` for `psrlcb fit --runner R ARGS`,
// with this process's standard streams, and returns its exit code; when
// psrlcb-beam cannot be found, a usage error saying how to build it.
func handOff(runner string, args []string, stdout, stderr io.Writer) int {
	path, err := findBeam()
	if err != nil {
		what := "fit --runner " + runner + " runs on Apache Beam"
		if runner == "" || runner == "local" {
			what = "fit reads and writes object-store URLs (gs://, s3://) through Apache Beam's filesystems"
		}
		fmt.Fprintf(stderr, "psrlcb: %s with %s, which was not found beside psrlcb or on PATH: %s\n", what, beamCommand, beamBuildHint)
		return exitUsage
	}
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	return beamExit(cmd.Run(), path, stderr)
}

// beamExit is psrlcb's exit code for psrlcb-beam's (at path) outcome err:
// its own exit code, or that of an interrupt when a signal killed it; a
// failure to run it is reported to stderr.
func beamExit(err error, path string, stderr io.Writer) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode()
	case errors.As(err, &exit):
		return exitInterrupted // killed by a signal
	default:
		fmt.Fprintf(stderr, "psrlcb: running %s: %v\n", path, err)
		return exitIO
	}
}
