// Package errkind holds the three kinds of failure that psrlcb's stages
// report, so that a caller maps any stage's error to one response
// (ExitCode maps them to the exit codes of psrlcb and psrlcb-beam):
//
//   - Data: the input is wrong (the logs, a model or policy file): a
//     person must fix the data. The message names the file, episode and
//     step where it can.
//   - Options: the caller asked for something invalid (a negative budget,
//     α = theory without γ). Checked before any work.
//   - IO: a file could not be opened, read or written.
//
// Every sentinel error of the stage packages matches exactly one kind with
// errors.Is, and keeps its own identity: errors.Is(err, estimate.ErrData)
// and errors.Is(err, errkind.Data) both hold for a data error from
// estimate. An error of none of the kinds is a bug.
package errkind

import "errors"

//lint:file-ignore ST1012 the kinds are named for what they classify (errkind.Data), not as errors a function returns

// The kinds.
var (
	Data    = errors.New("invalid data")
	Options = errors.New("invalid options")
	IO      = errors.New("input/output error")
)

// New returns a sentinel error with message msg that matches kind.
func New(kind error, msg string) error { return &sentinel{msg: msg, kind: kind} }

type sentinel struct {
	msg  string
	kind error
}

func (e *sentinel) Error() string { return e.msg }
func (e *sentinel) Unwrap() error { return e.kind }

// Of is the kind of err (Data, Options or IO), or nil when err is of none
// of them.
func Of(err error) error {
	for _, k := range []error{Data, Options, IO} {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}
