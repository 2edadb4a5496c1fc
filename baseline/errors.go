package baseline

import "errors"

var (
	// ErrInvalidDataset reports a dataset that breaks the ingest.Dataset
	// invariants (shape, codes, finite rewards, forced end action).
	ErrInvalidDataset = errors.New("baseline: invalid dataset")
	// ErrInvalidOption reports an option outside its documented range.
	ErrInvalidOption = errors.New("baseline: invalid option")
)
