package ingest

import (
	"fmt"
	"strconv"

	"github.com/psrlcb/psrlcb/errkind"
)

// invalid is the type of the data-error sentinels: each names one class of
// bad input and matches ErrInvalid with errors.Is.
type invalid string

func (e invalid) Error() string { return string(e) }

func (e invalid) Is(target error) bool { return target == ErrInvalid || target == errkind.Data }

// ErrInvalid matches every error caused by the content of the logs (as
// opposed to ErrIO, a failure to read them).
var ErrInvalid = errkind.New(errkind.Data, "invalid trajectory logs")

// ErrSameFile: one file is among the inputs twice (under one name or
// two). It is a mistake in the call, not in the data.
var ErrSameFile = errkind.New(errkind.Options, "input file given twice")

// ErrIO matches failures to open or read an input file.
var ErrIO = errkind.New(errkind.IO, "cannot read input")

// MaxAbsReward bounds |r_h|. Returns are rescaled to [0,1] by the range
// of returns the model can produce (docs/design.md, section 3) and the
// Gaussian reward emission sums squares of rewards over every logged
// step; below 1e100 the squares and sums of any log that fits in memory
// stay finite (1e200·1e12 rows is far from 1.8e308), past it they
// overflow to Inf and every figure after them is meaningless.
const MaxAbsReward = 1e100

// Data-error classes. Each wraps ErrInvalid.
var (
	ErrEmpty            error = invalid("no valid episodes")
	ErrUnreadable       error = invalid("not a readable Parquet file")
	ErrMissingColumn    error = invalid("missing column")
	ErrAmbiguousColumn  error = invalid("ambiguous column")
	ErrColumnType       error = invalid("unsupported column type")
	ErrTooManySymbols   error = invalid("too many distinct symbols")
	ErrNull             error = invalid("null value")
	ErrStep             error = invalid("step out of range")
	ErrDuplicateStep    error = invalid("duplicate step")
	ErrStepGap          error = invalid("gap in steps")
	ErrTooLong          error = invalid("episode longer than the horizon")
	ErrShortEpisode     error = invalid("episode shorter than the horizon without terminal")
	ErrTerminal         error = invalid("terminal before the last step")
	ErrPropensity       error = invalid("propensity not in (0,1]")
	ErrReward           error = invalid("reward not finite")
	ErrRewardRange      error = invalid(fmt.Sprintf("reward beyond ±%g", MaxAbsReward))
	ErrReservedSymbol   error = invalid("reserved symbol " + strconv.Quote(EndSymbol))
	ErrInconsistentCols error = invalid("inconsistent columns across files")
)

// FileError is a problem with a whole input file (unreadable, missing or
// mistyped column). It always fails the read, whatever OnInvalid says.
type FileError struct {
	File   string
	Err    error // a sentinel: ErrUnreadable, ErrMissingColumn, ErrIO, ...
	Detail string
}

func (e *FileError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s: %v: %s", e.File, e.Err, e.Detail)
}

func (e *FileError) Unwrap() error { return e.Err }

// EpisodeError is a problem with one episode. Under OnInvalid "skip" the
// episode is quarantined instead.
type EpisodeError struct {
	File    string
	Episode string // the user's episode_id ("" when the id itself is null)
	Row     int64  // 0-based row in File, used when Episode is unknown
	Step    int    // 1-based step, 0 when unknown
	Err     error  // a sentinel wrapping ErrInvalid
	Detail  string // extra context, e.g. "(also in b.parquet)" or the bad value
	// More is the number of further invalid episodes (set on the error
	// returned by Read in "fail" mode).
	More int
}

// Reason is the message without file and episode, as stored in Quarantined.
func (e *EpisodeError) Reason() string {
	if e.Detail == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + " " + e.Detail
}

func (e *EpisodeError) Error() string {
	var s string
	switch {
	case e.Episode == "" && e.Step == 0:
		s = fmt.Sprintf("%s: row %d: %s", e.File, e.Row, e.Reason())
	case e.Step == 0:
		s = fmt.Sprintf("%s: episode %q: %s", e.File, e.Episode, e.Reason())
	default:
		s = fmt.Sprintf("%s: episode %q step %d: %s", e.File, e.Episode, e.Step, e.Reason())
	}
	if e.More > 0 {
		s += fmt.Sprintf(" (and %d more invalid episodes; --on-invalid=skip quarantines them)", e.More)
	}
	return s
}

func (e *EpisodeError) Unwrap() error { return e.Err }
