package errkind_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/psrlcb/psrlcb/errkind"
)

func TestSentinelKeepsIdentityAndKind(t *testing.T) {
	errA := errkind.New(errkind.Data, "a: invalid data")
	errB := errkind.New(errkind.Options, "b: invalid options")
	wrapped := fmt.Errorf("episode 3 step 2: %w", errA)
	if !errors.Is(wrapped, errA) || errors.Is(wrapped, errB) {
		t.Errorf("identity lost: %v", wrapped)
	}
	if errkind.Of(wrapped) != errkind.Data || errkind.Of(errB) != errkind.Options {
		t.Errorf("kinds: %v, %v", errkind.Of(wrapped), errkind.Of(errB))
	}
	if errkind.Of(errors.New("bug")) != nil {
		t.Error("a plain error has a kind")
	}
	if wrapped.Error() != "episode 3 step 2: a: invalid data" {
		t.Errorf("message %q", wrapped.Error())
	}
}

// TestExitCode: the codes of the kinds, of cancellation (which wins over
// a kind), of the command's own errors (after cancellation, before the
// kinds), of a path error and of an error of no kind.
func TestExitCode(t *testing.T) {
	bg := context.Background()
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	errUsage := errors.New("usage")
	own := func(err error) (int, bool) { return errkind.ExitUsage, errors.Is(err, errUsage) }
	data := fmt.Errorf("step 2: %w", errkind.New(errkind.Data, "x: invalid data"))
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want int
	}{
		{bg, nil, errkind.ExitOK},
		{bg, data, errkind.ExitData},
		{bg, errkind.New(errkind.Options, "x: invalid options"), errkind.ExitUsage},
		{bg, errkind.New(errkind.IO, "x: input/output error"), errkind.ExitIO},
		{bg, &os.PathError{Op: "open", Path: "f", Err: os.ErrNotExist}, errkind.ExitIO},
		{bg, errors.New("bug"), errkind.ExitInternal},
		{bg, fmt.Errorf("wrapped: %w", context.Canceled), errkind.ExitInterrupted},
		{cancelled, data, errkind.ExitInterrupted},
		{bg, fmt.Errorf("%w: %w", errUsage, data), errkind.ExitUsage},
		{cancelled, errUsage, errkind.ExitInterrupted},
	} {
		if got := errkind.ExitCode(c.ctx, c.err, own); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	if got := errkind.ExitCode(bg, data, nil); got != errkind.ExitData {
		t.Errorf("ExitCode without own errors = %d, want %d", got, errkind.ExitData)
	}
}
