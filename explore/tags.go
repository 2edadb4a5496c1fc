package explore

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/parquet-go/parquet-go"

	"github.com/psrlcb/psrlcb/internal/pqcol"
)

// Default names of the exploration tag columns (schemas package
// documentation: optional columns of the trajectory logs).
const (
	RoundColumn       = "round"
	ExploreStepColumn = "explore_step"
)

// Tag is the exploration tag of one episode: the round k that collected it
// and the step h at which its actions switched from π^{k−1} to uniform.
type Tag struct {
	Round       int64
	ExploreStep int64
}

// TagColumns names the columns ReadTags reads; empty fields mean the
// defaults ("episode_id", RoundColumn, ExploreStepColumn).
type TagColumns struct {
	Episode, Round, ExploreStep string
}

// ReadTags reads the round and explore_step columns of the Parquet logs,
// keyed by episode_id rendered as ingest renders it (integers in decimal,
// strings as they are), so that ingest.Dataset.EpisodeIDs index the map.
// Both columns are integers, constant within an episode, and without
// nulls; a violation is an ErrData error naming the file, the row and the
// episode.
func ReadTags(ctx context.Context, files []string, cols TagColumns) (map[string]Tag, error) {
	cols = cols.withDefaults()
	tags := map[string]Tag{}
	for _, path := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := readTagsFile(path, cols, tags); err != nil {
			return nil, err
		}
	}
	if len(tags) == 0 {
		return nil, fmt.Errorf("%w: no tagged episodes in %d files", ErrData, len(files))
	}
	return tags, nil
}

// withDefaults is cols with the default name of every empty field.
func (cols TagColumns) withDefaults() TagColumns {
	if cols.Episode == "" {
		cols.Episode = "episode_id"
	}
	if cols.Round == "" {
		cols.Round = RoundColumn
	}
	if cols.ExploreStep == "" {
		cols.ExploreStep = ExploreStepColumn
	}
	return cols
}

// readTagsFile adds the tags of the Parquet file path to tags, with the
// file's own errors as ErrData errors naming it (but a missing or
// unreadable file).
func readTagsFile(path string, cols TagColumns, tags map[string]Tag) error {
	err := pqcol.Columns(path, []string{cols.Episode, cols.Round, cols.ExploreStep}, func(row int64, vals [][]parquet.Value) error {
		for r := range vals[0] {
			if err := addTag(path, cols, row+int64(r)+1, vals[0][r], vals[1][r], vals[2][r], tags); err != nil {
				return err
			}
		}
		return nil
	})
	return tagsError(path, cols, err)
}

// tagsError is readTagsFile's error for err, the error of reading path's
// tags: a missing tag column or an unreadable file as ErrData, a file
// that does not exist or may not be read as it is.
func tagsError(path string, cols TagColumns, err error) error {
	var missing *pqcol.MissingColumnError
	switch {
	case err == nil, errors.Is(err, ErrData):
		return err
	case errors.As(err, &missing):
		return fmt.Errorf("%w: %s has no column %q (the exploration logs need %q and %q beside the episode id)", ErrData, path, missing.Name, cols.Round, cols.ExploreStep)
	case errors.Is(err, os.ErrNotExist), errors.Is(err, os.ErrPermission):
		return err
	default:
		return fmt.Errorf("%w: %v", ErrData, err)
	}
}

// addTag checks the values ep (episode id), rd (round) and hs
// (explore_step) of row line of path and records the episode's tag,
// which must agree with the one its earlier rows gave.
func addTag(path string, cols TagColumns, line int64, ep, rd, hs parquet.Value, tags map[string]Tag) error {
	if ep.IsNull() || rd.IsNull() || hs.IsNull() {
		return fmt.Errorf("%w: %s row %d: null episode id, %s or %s", ErrData, path, line, cols.Round, cols.ExploreStep)
	}
	id, ok := pqcol.Symbol(ep)
	if !ok {
		return fmt.Errorf("%w: %s: episode id column has type %v", ErrData, path, ep.Kind())
	}
	if err := checkTagKinds(path, cols, rd, hs); err != nil {
		return err
	}
	t := Tag{Round: rd.Int64(), ExploreStep: hs.Int64()}
	if old, ok := tags[id]; ok && old != t {
		return fmt.Errorf("%w: %s row %d: episode %s has round %d, explore_step %d here and round %d, explore_step %d on another row (they must be constant within an episode)",
			ErrData, path, line, id, t.Round, t.ExploreStep, old.Round, old.ExploreStep)
	}
	tags[id] = t
	return nil
}

// checkTagKinds checks that a row's round rd and explore step hs are
// integers.
func checkTagKinds(path string, cols TagColumns, rd, hs parquet.Value) error {
	for j, v := range []parquet.Value{rd, hs} {
		if k := v.Kind(); k != parquet.Int32 && k != parquet.Int64 {
			return fmt.Errorf("%w: %s: column %q must be an integer, has type %v", ErrData, path, []string{cols.Round, cols.ExploreStep}[j], k)
		}
	}
	return nil
}

// StepsOf returns the switch step of every episode of a dataset from the
// tags (ids are ingest.Dataset.EpisodeIDs), checking 1 ≤ explore_step ≤ H.
func StepsOf(ids []string, tags map[string]Tag, H int) ([]int, error) {
	steps := make([]int, len(ids))
	for k, id := range ids {
		t, ok := tags[id]
		if !ok {
			return nil, fmt.Errorf("%w: episode %s has no exploration tag", ErrData, id)
		}
		if t.ExploreStep < 1 || t.ExploreStep > int64(H) {
			return nil, fmt.Errorf("%w: episode %s: explore_step %d outside 1..%d", ErrData, id, t.ExploreStep, H)
		}
		steps[k] = int(t.ExploreStep)
	}
	return steps, nil
}
