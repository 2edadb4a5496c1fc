package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/psrlcb/psrlcb/schemas"
)

// Read, cut into pieces for a data-parallel engine (an Apache Beam
// pipeline): list the row groups (ListRowGroups), read each one into the
// rows of the episodes it holds (ReadRowGroup), bring the rows of each
// episode together (the engine's group-by-key on EpisodeRows.ID), check
// each episode on its own (CheckEpisode, with the horizon of
// HorizonOf/EpisodeMaxStep when Options.Horizon is 0), and merge the
// checked episodes (Merge). The checks and their messages are Read's own:
// ReadRowGroup runs Read's row-group reader and CheckEpisode runs Read's
// assembly on the rows of one episode, so the result equals Read's,
// quarantine list and first error included.

// RowGroup names one row group of one log file, the unit of work of a
// distributed read.
type RowGroup struct {
	File      string
	FileIndex int   // position of File in sorted name order
	Index     int   // row group within the file
	RowBase   int64 // first row of the group in its file
	Rows      int64
	// Propensity: the logs carry propensities (all files do, or none).
	Propensity bool
}

// ListRowGroups opens the files' footers, runs Read's file-level checks
// (framing, columns and their types, propensities in all files or none)
// and lists their row groups in Read's order.
func ListRowGroups(files []string, opts Options) ([]RowGroup, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no input files", ErrEmpty)
	}
	srcs, err := openLocal(files)
	defer closeAll(srcs)
	if err != nil {
		return nil, err
	}
	opened, units, err := openSources(srcs, opts)
	if err != nil {
		return nil, err
	}
	out := make([]RowGroup, len(units))
	for i, u := range units {
		out[i] = u.rowGroup(opened[u.file])
	}
	return out, nil
}

// rowGroup describes the row group u of the opened file of.
func (u unit) rowGroup(of *openedFile) RowGroup {
	return RowGroup{File: of.src.name, FileIndex: u.file, Index: u.rg, RowBase: u.rowBase, Rows: of.f.RowGroups()[u.rg].NumRows(),
		Propensity: of.cols[schemas.Propensity].index >= 0}
}

// openLocal opens local files as Read does.
func openLocal(files []string) ([]source, error) {
	srcs := make([]source, 0, len(files))
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return srcs, &FileError{File: name, Err: ErrIO, Detail: errors.Unwrap(err).Error()}
		}
		st, err := f.Stat()
		if err == nil && st.IsDir() {
			err = errors.New("is a directory")
		}
		if err != nil {
			f.Close()
			return srcs, &FileError{File: name, Err: ErrIO, Detail: err.Error()}
		}
		srcs = append(srcs, source{name: name, r: f, size: st.Size()})
	}
	return srcs, nil
}

// EpisodeRows are the rows of one episode in one row group, with the row
// problems Read's row-group reader found in them (in its order). ID is ""
// for rows whose episode id is null (Orphans).
type EpisodeRows struct {
	ID      string
	IntID   bool // the file stores episode ids as integers
	IDValue int64
	Orphans bool

	File             string
	FileIndex, Group int
	Rows             []int64 // row in the file, per row
	Step             []uint16
	Obs, Act         []string
	Reward, Prop     []float64 // Prop nil without a propensity column
	Terminal         []bool    // nil without a terminal column
	Problems         []RowProblem
}

// RowProblem is a problem of one row of EpisodeRows (Row indexes its
// slices); Class is the message of the error class (ErrNull, ErrReward, …).
type RowProblem struct {
	Row    int32
	Step   int
	Class  string
	Detail string
}

// classes are the row-level error classes by message.
var classes = map[string]error{}

func init() {
	for _, e := range []error{ErrEmpty, ErrUnreadable, ErrMissingColumn, ErrAmbiguousColumn, ErrColumnType, ErrTooManySymbols,
		ErrNull, ErrStep, ErrDuplicateStep, ErrStepGap, ErrTooLong, ErrShortEpisode, ErrTerminal, ErrPropensity,
		ErrReward, ErrRewardRange, ErrReservedSymbol, ErrInconsistentCols} {
		classes[e.Error()] = e
	}
}

// ReadRowGroup reads one row group with Read's reader (row checks
// included) and returns its rows by episode, in the order the episodes
// first appear, and the rows whose id is null as one EpisodeRows with
// Orphans set. File-level problems are errors, as in Read.
func ReadRowGroup(g RowGroup, opts Options) ([]EpisodeRows, error) {
	srcs, err := openLocal([]string{g.File})
	defer closeAll(srcs)
	if err != nil {
		return nil, err
	}
	of, err := openFile(srcs[0], opts.Columns)
	if err != nil {
		return nil, err
	}
	if g.Index < 0 || g.Index >= len(of.f.RowGroups()) {
		return nil, &FileError{File: g.File, Err: ErrIO, Detail: fmt.Sprintf("no row group %d", g.Index)}
	}
	c, err := readChunk(of, g.FileIndex, g.Index, g.RowBase, opts.Horizon)
	if err != nil {
		return nil, err
	}
	return splitChunk(c, g), nil
}

// splitChunk cuts a chunk into its episodes' rows.
func splitChunk(c *chunk, g RowGroup) []EpisodeRows {
	obs, act := c.obsT.render(), c.actT.render()
	out := make([]EpisodeRows, c.ids.len()+1) // the last: null ids
	pos := make([]int32, c.n)                 // index of each row in its EpisodeRows
	for i := 0; i < c.n; i++ {
		e := &out[rowEpisode(c, i, len(out))]
		pos[i] = int32(len(e.Rows))
		e.addRow(c, i, obs, act)
	}
	for _, b := range c.bad {
		l := rowEpisode(c, int(b.row), len(out))
		out[l].Problems = append(out[l].Problems, RowProblem{Row: pos[b.row], Step: b.step, Class: b.err.Error(), Detail: b.detail})
	}
	return labelEpisodes(c, g, out)
}

// rowEpisode is the index in splitChunk's n EpisodeRows of row i's
// episode: its local code, or the last for a null id.
func rowEpisode(c *chunk, i, n int) int {
	l := int(c.ep[i])
	if l < 0 {
		l = n - 1
	}
	return l
}

// addRow appends row i of chunk c, whose observation and action symbols
// are obs and act, to e.
func (e *EpisodeRows) addRow(c *chunk, i int, obs, act []string) {
	e.Rows = append(e.Rows, c.rowBase+int64(i))
	e.Step = append(e.Step, c.step[i])
	e.Obs = append(e.Obs, obs[c.obs[i]])
	e.Act = append(e.Act, act[c.act[i]])
	e.Reward = append(e.Reward, c.rew[i])
	if c.prop != nil {
		e.Prop = append(e.Prop, c.prop[i])
	}
	if c.term != nil {
		e.Terminal = append(e.Terminal, c.term.at(i))
	}
}

// labelEpisodes keeps the EpisodeRows of out that have rows, labelled with
// their row group and episode id (the last, of null ids, as Orphans).
func labelEpisodes(c *chunk, g RowGroup, out []EpisodeRows) []EpisodeRows {
	ids := c.ids.render()
	keep := out[:0]
	for l := range out {
		e := out[l]
		if len(e.Rows) == 0 {
			continue
		}
		e.File, e.FileIndex, e.Group, e.IntID = g.File, g.FileIndex, g.Index, c.ids.intKind
		if l == len(out)-1 {
			e.Orphans = true
		} else {
			e.ID = ids[l]
			if c.ids.intKind {
				e.IDValue = c.ids.vals[l]
			}
		}
		keep = append(keep, e)
	}
	return keep
}

// OrphanErrors are the errors of rows whose episode id is null, one per
// row problem, as Read reports them.
func OrphanErrors(e EpisodeRows) []*EpisodeError {
	var out []*EpisodeError
	for _, p := range e.Problems {
		out = append(out, &EpisodeError{File: e.File, Row: e.Rows[p.Row], Step: p.Step, Err: classes[p.Class], Detail: p.Detail})
	}
	return out
}

// EpisodeMaxStep is what an episode's rows (from all row groups) bring to
// the automatic horizon: their largest step, or 0 if a row has a problem.
func EpisodeMaxStep(parts []EpisodeRows) int {
	m := 0
	for _, e := range parts {
		if len(e.Problems) > 0 {
			return 0
		}
		for _, s := range e.Step {
			m = max(m, int(s))
		}
	}
	return m
}

// CheckedEpisode is one episode after CheckEpisode: its data (a dataset
// of one episode with its own vocabularies) or its error.
type CheckedEpisode struct {
	ID      string
	IntID   bool
	IDValue int64
	Data    *Dataset
	Err     *EpisodeError
}

// CheckEpisode runs Read's episode checks on all the rows of one episode
// (parts from any row groups, in any order) with horizon H: Options.Horizon,
// or the largest EpisodeMaxStep of all episodes (0 when every episode has
// a row problem; each then gets its first one).
func CheckEpisode(ctx context.Context, parts []EpisodeRows, H int) (CheckedEpisode, error) {
	if len(parts) == 0 || H < 0 {
		return CheckedEpisode{}, fmt.Errorf("ingest: CheckEpisode needs rows and a horizon")
	}
	parts = slices.Clone(parts)
	slices.SortFunc(parts, func(a, b EpisodeRows) int {
		return cmp.Or(cmp.Compare(a.FileIndex, b.FileIndex), cmp.Compare(a.Group, b.Group))
	})
	ce := CheckedEpisode{ID: parts[0].ID, IntID: parts[0].IntID, IDValue: parts[0].IDValue}
	files, chunks := episodeChunks(parts)
	d, err := assemble(ctx, files, chunks, Options{Horizon: H, OnInvalid: OnInvalidFail})
	var ee *EpisodeError
	switch {
	case errors.As(err, &ee):
		ce.Err = ee
		ce.Err.More = 0
	case err != nil:
		return ce, err
	default:
		ce.Data = d
	}
	return ce, nil
}

// episodeChunks rebuilds Read's files and chunks from the rows of one
// episode, parts sorted by file and row group.
func episodeChunks(parts []EpisodeRows) ([]*openedFile, []*chunk) {
	var files []*openedFile
	chunks := make([]*chunk, len(parts))
	for i, p := range parts {
		if len(files) == 0 || files[len(files)-1].src.name != p.File {
			files = append(files, &openedFile{src: source{name: p.File}})
		}
		chunks[i] = p.chunk(len(files) - 1)
	}
	return files, chunks
}

// chunk rebuilds Read's chunk from the rows of one episode.
func (e *EpisodeRows) chunk(file int) *chunk {
	n := len(e.Rows)
	c := &chunk{file: file, rowBase: 0, n: n, ids: newSymTable(e.IntID), ep: make([]int32, n),
		step: e.Step, obsT: newSymTable(false), actT: newSymTable(false),
		obs: make([]uint16, n), act: make([]uint16, n), rew: e.Reward, prop: e.Prop}
	if e.Terminal != nil {
		c.term = newRowFlags(n)
		for i, t := range e.Terminal {
			if t {
				c.term.set(i)
			}
		}
	}
	if e.IntID {
		c.ids.int(e.IDValue)
	} else {
		c.ids.str([]byte(e.ID))
	}
	for i := range n {
		c.obs[i] = uint16(c.obsT.str([]byte(e.Obs[i])))
		c.act[i] = uint16(c.actT.str([]byte(e.Act[i])))
	}
	for _, p := range e.Problems {
		c.bad = append(c.bad, rowErr{row: p.Row, step: p.Step, err: classes[p.Class], detail: p.Detail})
	}
	c.setMaxStep()
	return c
}

// Merge builds Read's dataset from every checked episode of the logs, the
// errors of the rows with a null id (OrphanErrors, in row-group order),
// the horizon and the number of rows read: episodes in Read's order,
// vocabularies sorted, invalid episodes failing the read or quarantined
// as opts.OnInvalid says.
func Merge(eps []CheckedEpisode, orphans []*EpisodeError, H int, rows int64, opts Options) (*Dataset, error) {
	if rows == 0 {
		return nil, fmt.Errorf("%w: the input files hold no rows", ErrEmpty)
	}
	m := newMerging(eps, orphans, rows)
	if err := m.check(H, opts.OnInvalid); err != nil {
		return nil, err
	}
	d := &Dataset{Horizon: H, Rows: rows}
	if err := m.quarantineAndVocab(d); err != nil {
		return nil, err
	}
	for _, e := range m.eps {
		if e.Err == nil {
			d.append(e.Data)
		}
	}
	return d, nil
}

// merging is the state Merge's phases share: the episodes in Read's
// order, the rows with a null id and the episodes' errors.
type merging struct {
	eps     []CheckedEpisode
	orphans []*EpisodeError
	badEp   []*EpisodeError
	nBad    int
	rows    int64
}

// newMerging sorts the episodes as Read does (by id, numerically when all
// ids are integers) and collects their errors.
func newMerging(eps []CheckedEpisode, orphans []*EpisodeError, rows int64) *merging {
	allInt := !slices.ContainsFunc(eps, func(e CheckedEpisode) bool { return !e.IntID })
	eps = slices.Clone(eps)
	slices.SortFunc(eps, func(a, b CheckedEpisode) int {
		if allInt {
			return cmp.Compare(a.IDValue, b.IDValue)
		}
		return cmp.Compare(a.ID, b.ID)
	})
	m := &merging{eps: eps, orphans: orphans, rows: rows, badEp: make([]*EpisodeError, len(eps))}
	for k, e := range eps {
		if e.Err != nil {
			m.badEp[k] = e.Err
			m.nBad++
		}
	}
	return m
}

// failure is the error reporting the invalid episodes and orphan rows.
func (m *merging) failure() error { return failOrEmpty(m.badEp, m.orphans, m.nBad, m.rows) }

// check fails as Read does: without a horizon, on invalid episodes or
// orphan rows unless onInvalid is OnInvalidSkip, and when every episode
// is invalid.
func (m *merging) check(H int, onInvalid string) error {
	if H == 0 {
		// As Read: every episode invalid under skip says so.
		if onInvalid == OnInvalidSkip && m.nBad > 0 {
			return fmt.Errorf("%w: all %d episodes are invalid, the first: %w", ErrEmpty, m.nBad, m.failure())
		}
		return m.failure()
	}
	if m.nBad+len(m.orphans) > 0 && onInvalid != OnInvalidSkip {
		return m.failure()
	}
	if m.nBad == len(m.eps) {
		return fmt.Errorf("%w: all %d episodes are invalid, the first: %w", ErrEmpty, len(m.eps), m.failure())
	}
	return nil
}

// quarantineAndVocab lists the orphan rows and the invalid episodes in
// d.Quarantined and sets d's vocabularies to the sorted union of the
// valid episodes' symbols.
func (m *merging) quarantineAndVocab(d *Dataset) error {
	d.Quarantined = append(d.Quarantined, orphanEntries(m.orphans)...)
	var obsAll, actAll []string
	for _, e := range m.eps {
		if e.Err != nil {
			d.Quarantined = append(d.Quarantined, Quarantined{EpisodeID: e.ID, File: e.Err.File, Step: e.Err.Step, Reason: e.Err.Reason()})
			continue
		}
		obsAll = append(obsAll, e.Data.ObsVocab...)
		actAll = append(actAll, e.Data.ActVocab...)
	}
	slices.Sort(obsAll)
	slices.Sort(actAll)
	d.ObsVocab, d.ActVocab = slices.Compact(obsAll), slices.Compact(actAll)
	if len(d.ObsVocab) >= padCode || len(d.ActVocab) >= padCode {
		return fmt.Errorf("%w: %d observation and %d action symbols (at most %d each)", ErrTooManySymbols, len(d.ObsVocab), len(d.ActVocab), MaxSymbols-1)
	}
	return nil
}

// append adds the episode of one-episode dataset e, recoding its symbols
// into d's vocabularies.
func (d *Dataset) append(e *Dataset) {
	d.EpisodeIDs = append(d.EpisodeIDs, e.EpisodeIDs...)
	d.Length = append(d.Length, e.Length...)
	d.Obs = append(d.Obs, recodeCodes(e.Obs, vocabCodes(d.ObsVocab, e.ObsVocab))...)
	d.Act = append(d.Act, recodeCodes(e.Act, vocabCodes(d.ActVocab, e.ActVocab))...)
	d.Reward = append(d.Reward, e.Reward...)
	if e.Propensity != nil {
		d.Propensity = append(d.Propensity, e.Propensity...)
	}
}

// vocabCodes returns the code in the sorted vocabulary vocab of each
// symbol of local.
func vocabCodes(vocab, local []string) []uint16 {
	m := make([]uint16, len(local))
	for i, s := range local {
		j, _ := slices.BinarySearch(vocab, s)
		m[i] = uint16(j)
	}
	return m
}

// ErrorClass is the error class (ErrNull, ErrStepGap, …) whose message is
// msg, or nil: how an EpisodeError's Err travels between machines.
func ErrorClass(msg string) error { return classes[msg] }
