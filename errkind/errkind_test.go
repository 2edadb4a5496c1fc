package errkind_test

import (
	"errors"
	"fmt"
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
