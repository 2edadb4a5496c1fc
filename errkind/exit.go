package errkind

import (
	"context"
	"errors"
	"os"
)

// Exit codes of psrlcb's commands (psrlcb and psrlcb-beam), one per kind
// of failure.
const (
	ExitOK          = 0
	ExitInternal    = 1 // an error of no kind: a bug
	ExitUsage       = 2 // Options: bad flags, arguments or option values
	ExitData        = 3 // Data: the input data is invalid
	ExitIO          = 4 // IO: a file could not be read or written
	ExitInterrupted = 130
)

// ExitCode is the exit code of a command whose work under ctx ended with
// err: ExitOK for nil; ExitInterrupted for context.Canceled or once ctx
// is done; then the code own gives for the command's own errors (a usage
// mistake, an unreachable service), when own is not nil and reports ok;
// then the code of err's kind (Of: Data, Options, IO); ExitIO for an
// *os.PathError of no kind; ExitInternal otherwise.
func ExitCode(ctx context.Context, err error, own func(error) (code int, ok bool)) int {
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return ExitInterrupted
	}
	if own != nil {
		if code, ok := own(err); ok {
			return code
		}
	}
	switch Of(err) {
	case Data:
		return ExitData
	case Options:
		return ExitUsage
	case IO:
		return ExitIO
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return ExitIO
	}
	return ExitInternal
}
