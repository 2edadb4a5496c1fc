package pipeline

import "github.com/psrlcb/psrlcb/errkind"

var (
	// ErrOptions matches invalid options (kind errkind.Options), found
	// before any input is read.
	ErrOptions = errkind.New(errkind.Options, "pipeline: invalid options")
	// ErrTooFew matches logs with too few valid episodes for the run asked
	// for (kind errkind.Data); the message gives how many there are and how
	// many are needed.
	ErrTooFew = errkind.New(errkind.Data, "too few episodes")
)
