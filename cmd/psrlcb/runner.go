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
// other than local: such a run is handed to psrlcb-beam.
func runnerArg(args []string) (string, bool) {
	if len(args) == 0 || args[0] != "fit" {
		return "", false
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		for _, name := range []string{"--runner", "-runner"} {
			if a == name && i+1 < len(args) {
				return args[i+1], args[i+1] != "local"
			}
			if v, ok := strings.CutPrefix(a, name+"="); ok {
				return v, v != "local"
			}
		}
	}
	return "", false
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
		fmt.Fprintf(stderr, "psrlcb: fit --runner %s runs on Apache Beam through %s, which was not found beside psrlcb or on PATH: %s\n", runner, beamCommand, beamBuildHint)
		return exitUsage
	}
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	err = cmd.Run()
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
