package baseline

import "github.com/psrlcb/psrlcb/errkind"

var (
	// ErrInvalidDataset reports a dataset that breaks the ingest.Dataset
	// invariants (shape, codes, finite rewards, forced end action).
	ErrInvalidDataset = errkind.New(errkind.Data, "baseline: invalid dataset")
	// ErrInvalidOption reports an option outside its documented range.
	ErrInvalidOption = errkind.New(errkind.Options, "baseline: invalid option")
)
