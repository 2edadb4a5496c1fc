package pipeline

import (
	"fmt"

	"github.com/psrlcb/psrlcb/errkind"
)

var (
	// ErrOptions matches invalid options (kind errkind.Options), found
	// before any input is read.
	ErrOptions = errkind.New(errkind.Options, "pipeline: invalid options")
	// ErrTooFew matches logs with too few valid episodes for the run asked
	// for (kind errkind.Data); the message gives how many there are and how
	// many are needed.
	ErrTooFew = errkind.New(errkind.Data, "too few episodes")
)

// OptionError is an invalid field of Options; it matches ErrOptions.
// Field is the field's name (as in Options), Msg what is wrong with it.
type OptionError struct {
	Field, Msg string
}

func (e *OptionError) Error() string { return ErrOptions.Error() + ": " + e.Msg }

// Unwrap makes an OptionError match ErrOptions (and its kind).
func (e *OptionError) Unwrap() error { return ErrOptions }

func optionErr(field, format string, args ...any) error {
	return &OptionError{Field: field, Msg: fmt.Sprintf(format, args...)}
}
