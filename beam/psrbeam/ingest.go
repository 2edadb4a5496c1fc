package psrbeam

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/psrlcb/psrlcb/ingest"
)

func init() {
	register.DoFn2x1[[]byte, func(string, []byte), error](&readGroupFn{})
	register.Emitter2[string, []byte]()
	register.Iter1[[]byte]()
	register.DoFn3x1[string, func(*[]byte) bool, func(int), error](&maxStepFn{})
	register.Emitter1[int]()
	register.Function2x1(maxInt)
	register.DoFn5x1[context.Context, string, func(*[]byte) bool, int, func([]byte), error](&checkFn{})
	register.DoFn1x0[[]byte](&writeRecordsFn{})
}

// orphanKey groups the rows whose episode id is null; a real id is never
// empty after this prefix byte.
const orphanKey = "\x00orphans"

// Ingest reads and validates the logs as a Beam pipeline and returns the
// dataset ingest.Read would return, errors and quarantine included. The
// driver lists the row groups (reading only the footers, with Read's
// file-level checks); workers read one row group each with parquet-go
// (ingest.ReadRowGroup, Read's reader and row checks), the rows are
// grouped by episode id across row groups and files, each episode is
// checked by ingest.CheckEpisode (Read's episode checks and messages)
// with the horizon given or the largest valid step (a Combine), and the
// checked episodes come back through files in the work directory to be
// merged on the driver (ingest.Merge). The log files must be readable by
// the workers at the same paths.
func (r *Runner) Ingest(ctx context.Context, files []string, opts ingest.Options) (*ingest.Dataset, error) {
	groups, err := ingest.ListRowGroups(files, opts)
	if err != nil {
		return nil, err
	}
	var rows int64
	var enc [][]byte
	for _, g := range groups {
		rows += g.Rows
		b, err := gobBytes(readGroupIn{Group: g, Opts: opts})
		if err != nil {
			return nil, err
		}
		enc = append(enc, b)
	}
	if rows == 0 {
		return ingest.Merge(nil, nil, 0, 0, opts)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.open(); err != nil {
		return nil, err
	}
	r.passes++
	dir := fmt.Sprintf("%s/ingest-%06d", r.dir, r.passes)
	if err := r.run(ctx, ingestPipeline(enc, opts.Horizon, dir)); err != nil {
		return nil, fmt.Errorf("ingest on the %s runner: %s", r.Name, lastCause(err))
	}
	checked, orphans, H, err := r.readChecked(ctx, dir)
	if err != nil {
		return nil, err
	}
	return ingest.Merge(checked, orphans, H, rows, opts)
}

func ingestPipeline(groups [][]byte, horizon int, dir string) *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	s = s.Scope("ingest")
	rows := beam.ParDo(s, &readGroupFn{}, beam.Reshuffle(s, beam.CreateList(s, groups)))
	byEpisode := beam.GroupByKey(s, rows)
	var h beam.PCollection
	if horizon > 0 {
		h = beam.Create(s, horizon)
	} else {
		// The 0 keeps the side input defined when every row has a null id.
		h = beam.Combine(s, maxInt, beam.Flatten(s, beam.Create(s, 0), beam.ParDo(s, &maxStepFn{}, byEpisode)))
	}
	checked := beam.ParDo(s, &checkFn{}, byEpisode, beam.SideInput{Input: h})
	beam.ParDo0(s, &writeRecordsFn{Dir: dir}, checked)
	return p
}

// readGroupIn is the element of the first step: a row group and the
// options to read it with.
type readGroupIn struct {
	Group ingest.RowGroup
	Opts  ingest.Options
}

// readGroupFn reads one row group and emits its rows by episode id.
type readGroupFn struct{}

func (readGroupFn) ProcessElement(in []byte, emit func(string, []byte)) error {
	var g readGroupIn
	if err := gob.NewDecoder(bytes.NewReader(in)).Decode(&g); err != nil {
		return err
	}
	eps, err := ingest.ReadRowGroup(g.Group, g.Opts)
	if err != nil {
		return err
	}
	for _, e := range eps {
		b, err := gobBytes(e)
		if err != nil {
			return err
		}
		key := "\x01" + e.ID
		if e.Orphans {
			key = orphanKey
		}
		emit(key, b)
	}
	return nil
}

func decodeParts(rows func(*[]byte) bool) ([]ingest.EpisodeRows, error) {
	var parts []ingest.EpisodeRows
	var b []byte
	for rows(&b) {
		var e ingest.EpisodeRows
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&e); err != nil {
			return nil, err
		}
		parts = append(parts, e)
	}
	return parts, nil
}

// maxStepFn emits what an episode brings to the automatic horizon.
type maxStepFn struct{}

func (maxStepFn) ProcessElement(key string, rows func(*[]byte) bool, emit func(int)) error {
	if key == orphanKey {
		return nil
	}
	parts, err := decodeParts(rows)
	if err != nil {
		return err
	}
	emit(ingest.EpisodeMaxStep(parts))
	return nil
}

func maxInt(a, b int) int { return max(a, b) }

// wireError is an ingest.EpisodeError on the wire.
type wireError struct {
	File, Episode string
	Row           int64
	Step          int
	Class, Detail string
}

func toWire(e *ingest.EpisodeError) wireError {
	return wireError{File: e.File, Episode: e.Episode, Row: e.Row, Step: e.Step, Class: e.Err.Error(), Detail: e.Detail}
}

func (w wireError) episodeError() *ingest.EpisodeError {
	return &ingest.EpisodeError{File: w.File, Episode: w.Episode, Row: w.Row, Step: w.Step, Err: ingest.ErrorClass(w.Class), Detail: w.Detail}
}

// checkedRecord is one checked episode, or the errors of the rows with a
// null id, with the horizon they were checked against.
type checkedRecord struct {
	H       int
	ID      string
	IntID   bool
	IDValue int64
	Data    *ingest.Dataset
	Err     *wireError
	Orphans []wireError
	Orphan  bool
}

// checkFn checks one episode with the horizon side input.
type checkFn struct{}

func (checkFn) ProcessElement(ctx context.Context, key string, rows func(*[]byte) bool, h int, emit func([]byte)) error {
	parts, err := decodeParts(rows)
	if err != nil {
		return err
	}
	rec := checkedRecord{H: h}
	if key == orphanKey {
		rec.Orphan = true
		slices.SortFunc(parts, func(a, b ingest.EpisodeRows) int {
			if a.FileIndex != b.FileIndex {
				return a.FileIndex - b.FileIndex
			}
			return a.Group - b.Group
		})
		for _, p := range parts {
			for _, e := range ingest.OrphanErrors(p) {
				rec.Orphans = append(rec.Orphans, toWire(e))
			}
		}
	} else {
		ce, err := ingest.CheckEpisode(ctx, parts, h)
		if err != nil {
			return err
		}
		rec.ID, rec.IntID, rec.IDValue, rec.Data = ce.ID, ce.IntID, ce.IDValue, ce.Data
		if ce.Err != nil {
			w := toWire(ce.Err)
			rec.Err = &w
		}
	}
	b, err := gobBytes(rec)
	if err != nil {
		return err
	}
	emit(b)
	return nil
}

// writeRecordsFn writes the records of a bundle to one file of Dir,
// length-prefixed. A retried bundle may leave a second file with the same
// records; the driver keeps one record per episode.
type writeRecordsFn struct {
	Dir string
	buf []byte
}

func (f *writeRecordsFn) ProcessElement(b []byte) {
	f.buf = binary.AppendUvarint(f.buf, uint64(len(b)))
	f.buf = append(f.buf, b...)
}

func (f *writeRecordsFn) FinishBundle(ctx context.Context) error {
	if len(f.buf) == 0 {
		return nil
	}
	var id [8]byte
	rand.Read(id[:])
	err := writeFile(ctx, fmt.Sprintf("%s/part-%s.bin", f.Dir, hex.EncodeToString(id[:])), f.buf)
	f.buf = f.buf[:0]
	return err
}

// readChecked reads the records the pipeline wrote.
func (r *Runner) readChecked(ctx context.Context, dir string) ([]ingest.CheckedEpisode, []*ingest.EpisodeError, int, error) {
	fs, err := filesystem.New(ctx, dir)
	if err != nil {
		return nil, nil, 0, err
	}
	defer fs.Close()
	names, err := fs.List(ctx, dir+"/part-*.bin")
	if err != nil {
		return nil, nil, 0, err
	}
	slices.Sort(names)
	seen := map[string]bool{}
	var eps []ingest.CheckedEpisode
	var orphans []*ingest.EpisodeError
	H := 0
	for _, name := range names {
		r.written = append(r.written, name)
		raw, err := readFile(ctx, name)
		if err != nil {
			return nil, nil, 0, err
		}
		for len(raw) > 0 {
			n, k := binary.Uvarint(raw)
			if k <= 0 || uint64(len(raw)-k) < n {
				return nil, nil, 0, fmt.Errorf("%s: %w", name, errors.New("truncated record"))
			}
			var rec checkedRecord
			if err := gob.NewDecoder(bytes.NewReader(raw[k : k+int(n)])).Decode(&rec); err != nil {
				return nil, nil, 0, fmt.Errorf("%s: %w", name, err)
			}
			raw = raw[k+int(n):]
			key := "\x01" + rec.ID
			if rec.Orphan {
				key = orphanKey
			}
			if seen[key] {
				continue
			}
			seen[key], H = true, rec.H
			for _, w := range rec.Orphans {
				orphans = append(orphans, w.episodeError())
			}
			if !rec.Orphan {
				ce := ingest.CheckedEpisode{ID: rec.ID, IntID: rec.IntID, IDValue: rec.IDValue, Data: rec.Data}
				if rec.Err != nil {
					ce.Err = rec.Err.episodeError()
				}
				eps = append(eps, ce)
			}
		}
	}
	return eps, orphans, H, nil
}

func gobBytes(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
