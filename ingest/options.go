package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/psrlcb/psrlcb/schemas"
)

// MaxHorizon bounds the horizon: the dataset holds K×H cells and the
// planner's history tree grows like (|O||A|)^H, so a step beyond this is
// a data error rather than a request for gigabytes of padding.
const MaxHorizon = 1 << 12

// MaxSymbols is the largest vocabulary: codes are uint16, so a column may
// hold at most MaxSymbols−1 = 65,534 distinct symbols (one code is kept
// for the padding of early ends). Past it Read fails with
// ErrTooManySymbols; --max-observations cannot help there, since it maps
// symbols after they are coded.
const MaxSymbols = 1<<16 - 1

// symbolLimitHelp is what the ErrTooManySymbols message tells the user.
const symbolLimitHelp = "psrlcb codes symbols in 16 bits; bucket the ids before fitting, e.g. in DuckDB: hash(observation) % 20000, or keep the frequent ids and map the rest to one symbol"

// Invalid-data policies for Options.OnInvalid.
const (
	OnInvalidFail = "fail" // the first invalid episode fails the read (default)
	OnInvalidSkip = "skip" // invalid episodes are quarantined and counted
)

// Options configures Read. The zero value reads the default column names,
// takes the horizon from the data and fails on the first invalid episode.
type Options struct {
	// Horizon H; 0 means the largest step seen in a valid row.
	Horizon int
	// OnInvalid is "fail" (or "") or "skip".
	OnInvalid string
	// Columns maps the user's column names.
	Columns schemas.Mapping
	// Workers reading row groups in parallel; 0 means GOMAXPROCS. The
	// result does not depend on it.
	Workers int
	// Arrays, when not nil, allocates the dataset's step arrays (Obs,
	// Act, Reward, Propensity): a file-backed arena keeps logs larger than
	// memory on disk. nil allocates them on the heap.
	Arrays Arrays
}

// Arrays allocates zeroed step arrays of the given length.
type Arrays interface {
	Uint16s(n int) ([]uint16, error)
	Float64s(n int) ([]float64, error)
}

// allocSteps gives d its step arrays of cells entries (Propensity only
// with prop), from arr or the heap.
func allocSteps(d *Dataset, cells int, prop bool, arr Arrays) error {
	if arr == nil {
		d.Obs, d.Act, d.Reward = make([]uint16, cells), make([]uint16, cells), make([]float64, cells)
		if prop {
			d.Propensity = make([]float64, cells)
		}
		return nil
	}
	var err error
	if d.Obs, err = arr.Uint16s(cells); err != nil {
		return err
	}
	if d.Act, err = arr.Uint16s(cells); err != nil {
		return err
	}
	if d.Reward, err = arr.Float64s(cells); err != nil {
		return err
	}
	if prop {
		d.Propensity, err = arr.Float64s(cells)
	}
	return err
}

func (o *Options) check() error {
	switch o.OnInvalid {
	case "", OnInvalidFail, OnInvalidSkip:
	default:
		return fmt.Errorf("ingest: OnInvalid must be %q or %q, not %q", OnInvalidFail, OnInvalidSkip, o.OnInvalid)
	}
	if o.Horizon < 0 || o.Horizon > MaxHorizon {
		return fmt.Errorf("ingest: horizon %d not in [1,%d]", o.Horizon, MaxHorizon)
	}
	return o.Columns.Validate()
}

// Expand turns command-line arguments into a sorted list of files: a glob
// pattern expands to its matches, a directory to the *.parquet files in it,
// anything else must name an existing file. A pattern matching nothing is
// an error (wrapping ErrIO), so a typo never reads an empty input.
func Expand(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		m, err := expandArg(a)
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	slices.Sort(out)
	return out, nil
}

// expandArg is the files one argument of Expand names.
func expandArg(a string) ([]string, error) {
	if strings.ContainsAny(a, "*?[") {
		return globFiles(a)
	}
	st, err := os.Stat(a)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIO, err)
	}
	if st.IsDir() {
		return dirFiles(a)
	}
	return []string{a}, nil
}

// globFiles is the files the pattern a matches, at least one.
func globFiles(a string) ([]string, error) {
	m, err := filepath.Glob(a)
	if err != nil {
		return nil, fmt.Errorf("%w: bad pattern %q: %v", ErrIO, a, err)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("%w: no file matches %q", ErrIO, a)
	}
	return m, nil
}

// dirFiles is the *.parquet files of directory a, at least one.
func dirFiles(a string) ([]string, error) {
	m, _ := filepath.Glob(filepath.Join(a, "*.parquet"))
	if len(m) == 0 {
		return nil, fmt.Errorf("%w: no *.parquet file in directory %s", ErrIO, a)
	}
	return m, nil
}
