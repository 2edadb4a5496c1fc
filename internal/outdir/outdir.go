package outdir

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/psrlcb/psrlcb/errkind"
)

// ErrExists is returned when the output directory exists and the
// caller did not ask to replace it.
var ErrExists = errkind.New(errkind.Options, "output directory exists")

// Dir stages a run's outputs in a hidden temporary directory beside the
// final one and moves it into place only on Commit, so a failed or
// cancelled run never leaves a partial result under the final name.
type Dir struct {
	Final string
	Tmp   string
	force bool
}

// Create prepares the staging directory for final. An existing final
// directory is an error unless force is set; it is then replaced on Commit
// (and kept untouched if the run fails).
func Create(final string, force bool) (*Dir, error) {
	final = filepath.Clean(final)
	if fi, err := os.Stat(final); err == nil {
		if !force {
			return nil, fmt.Errorf("%w: %s (use --force to replace it)", ErrExists, final)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%w: %s is a file, not a directory", ErrExists, final)
		}
	}
	parent := filepath.Dir(final)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(final)+".partial-")
	if err != nil {
		return nil, err
	}
	return &Dir{Final: final, Tmp: tmp, force: force}, nil
}

// Path is where a file named name is staged.
func (o *Dir) Path(name string) string { return filepath.Join(o.Tmp, name) }

// Commit moves the staged directory into place.
func (o *Dir) Commit() error {
	if err := os.Chmod(o.Tmp, 0o755); err != nil {
		return err
	}
	var old string
	if _, err := os.Stat(o.Final); err == nil {
		if !o.force {
			return fmt.Errorf("%w: %s appeared during the run", ErrExists, o.Final)
		}
		old = o.Tmp + ".old"
		if err := os.Rename(o.Final, old); err != nil {
			return err
		}
	}
	if err := os.Rename(o.Tmp, o.Final); err != nil {
		if old != "" {
			_ = os.Rename(old, o.Final)
		}
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

// Abort removes the staged directory; the final one is left as it was.
func (o *Dir) Abort() { _ = os.RemoveAll(o.Tmp) }
