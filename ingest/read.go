package ingest

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/psrlcb/psrlcb/internal/parallel"

	"github.com/psrlcb/psrlcb/schemas"
)

// Read reads trajectory logs from Parquet files into a validated Dataset.
// files are paths (see Expand for globs); their order does not matter: they
// are read in sorted order, episodes are sorted by id and vocabularies
// bytewise, so the result depends only on the set of files.
//
// File-level problems (unreadable file, missing or mistyped column) always
// fail. Episode-level problems fail too unless opts.OnInvalid is "skip",
// which quarantines the episode in Dataset.Quarantined. Data errors match
// ErrInvalid and their class sentinel; failures to read match ErrIO.
func Read(ctx context.Context, files []string, opts Options) (*Dataset, error) {
	return readFiles(ctx, files, opts, nil)
}

// ReadSummary is Summarize(Read(...)) without keeping the Dataset: on
// logs the direct path reads, the propensities are tallied rather than
// stored per step (propTally), which is all the summary needs of them.
func ReadSummary(ctx context.Context, files []string, opts Options) (Summary, error) {
	var t propTally
	d, err := readFiles(ctx, files, opts, &t)
	if err != nil {
		return Summary{}, err
	}
	return summarize(d, &t), nil
}

// readFiles opens the named files and reads them (readSources, which
// checks opts).
func readFiles(ctx context.Context, files []string, opts Options, t *propTally) (*Dataset, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no input files", ErrEmpty)
	}
	srcs, err := openSourceFiles(files)
	if err != nil {
		return nil, err
	}
	defer closeAll(srcs)
	return readSources(ctx, srcs, opts, t)
}

// openSourceFiles opens the named files, refusing a directory and a file
// named twice; on failure it closes the files it opened.
func openSourceFiles(files []string) ([]source, error) {
	srcs := make([]source, 0, len(files))
	stats := make([]os.FileInfo, 0, len(files))
	for _, name := range files {
		src, st, err := openSourceFile(name, files, stats)
		if err != nil {
			closeAll(srcs)
			return nil, err
		}
		srcs = append(srcs, src)
		stats = append(stats, st)
	}
	return srcs, nil
}

// openSourceFile opens the named file; stats are those of the files
// opened before it, the first of files.
func openSourceFile(name string, files []string, stats []os.FileInfo) (source, os.FileInfo, error) {
	f, err := os.Open(name)
	if err != nil {
		return source{}, nil, &FileError{File: name, Err: ErrIO, Detail: errors.Unwrap(err).Error()}
	}
	st, err := statSource(name, f, files, stats)
	if err != nil {
		f.Close()
		return source{}, nil, err
	}
	return source{name: name, r: f, size: st.Size()}, st, nil
}

// statSource returns the stats of the opened file f, or the error for a
// directory or for a file already opened under one of files (whose stats
// are stats).
func statSource(name string, f *os.File, files []string, stats []os.FileInfo) (os.FileInfo, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, &FileError{File: name, Err: ErrIO, Detail: err.Error()}
	}
	if st.IsDir() {
		return nil, &FileError{File: name, Err: ErrIO, Detail: "is a directory"}
	}
	for j, prev := range stats {
		if os.SameFile(prev, st) {
			detail := "name each file once"
			if files[j] != name {
				detail = fmt.Sprintf("also as %s; name each file once", files[j])
			}
			return nil, &FileError{File: name, Err: ErrSameFile, Detail: detail}
		}
	}
	return st, nil
}

func closeAll(srcs []source) {
	for _, s := range srcs {
		if c, ok := s.r.(*os.File); ok {
			c.Close()
		}
	}
}

// unit is one row group of one file.
type unit struct {
	file, rg int
	rowBase  int64
}

// readSources reads the opened sources; with t not nil, the direct path
// tallies the propensities into t instead of storing them (readDirect).
func readSources(ctx context.Context, srcs []source, opts Options, t *propTally) (*Dataset, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	files, units, err := openSources(srcs, opts)
	if err != nil {
		return nil, err
	}
	d, err := readDirect(ctx, files, units, opts, t)
	if err != errExact {
		return d, err
	}
	chunks, err := readUnits(ctx, files, units, opts)
	if err != nil {
		return nil, err
	}
	return assemble(ctx, files, chunks, opts)
}

// openSources opens the files in name order, resolves their columns and
// lists their row groups.
func openSources(srcs []source, opts Options) ([]*openedFile, []unit, error) {
	srcs = slices.Clone(srcs)
	slices.SortStableFunc(srcs, func(a, b source) int { return cmp.Compare(a.name, b.name) })

	files := make([]*openedFile, len(srcs))
	var units []unit
	for i, s := range srcs {
		of, err := openFile(s, opts.Columns)
		if err != nil {
			return nil, nil, err
		}
		files[i] = of
		units = appendUnits(units, i, of)
	}
	if err := checkPropensityColumns(files); err != nil {
		return nil, nil, err
	}
	if err := checkSymbolKinds(files); err != nil {
		return nil, nil, err
	}
	return files, units, nil
}

// appendUnits appends the row groups of file i (of) to units, each with
// the index of its first row in the file.
func appendUnits(units []unit, i int, of *openedFile) []unit {
	var base int64
	for j, rg := range of.f.RowGroups() {
		units = append(units, unit{i, j, base})
		base += rg.NumRows()
	}
	return units
}

// checkPropensityColumns checks that all files or none have propensities:
// a file without them would leave holes that no later stage could fill
// honestly.
func checkPropensityColumns(files []*openedFile) error {
	for i := range files {
		a, b := files[0].cols[schemas.Propensity], files[i].cols[schemas.Propensity]
		if (a.index >= 0) != (b.index >= 0) {
			with, without := files[0], files[i]
			if b.index >= 0 {
				with, without = files[i], files[0]
			}
			return &FileError{File: without.src.name, Err: ErrMissingColumn,
				Detail: fmt.Sprintf("no propensity column, but %s has one (%q)", with.src.name, with.cols[schemas.Propensity].name)}
		}
	}
	return nil
}

// checkSymbolKinds checks that the kinds of the symbol columns agree
// across files: symbols are compared as text, so an integer 1 in one file
// and a string "1" in another would silently become one symbol.
func checkSymbolKinds(files []*openedFile) error {
	for _, r := range []schemas.Role{schemas.Episode, schemas.Observation, schemas.Action} {
		for i := 1; i < len(files); i++ {
			a, b := files[0].cols[r], files[i].cols[r]
			if a.kind != b.kind {
				return &FileError{File: files[i].src.name, Err: ErrInconsistentCols,
					Detail: fmt.Sprintf("the %s column %q is %s here but %s in %s (%q); convert one so that all files agree",
						r, b.name, b.kind, a.kind, files[0].src.name, a.name)}
			}
		}
	}
	return nil
}

// readUnits reads the row groups in parallel. Results are kept in unit
// order and the reported error is that of the first failing unit, so
// neither depends on the worker count.
func readUnits(ctx context.Context, files []*openedFile, units []unit, opts Options) ([]*chunk, error) {
	chunks := make([]*chunk, len(units))
	err := parallel.For(ctx, len(units), opts.Workers, func(i int) error {
		u := units[i]
		c, err := readChunk(files[u.file], u.file, u.rg, u.rowBase, opts.Horizon)
		chunks[i] = c
		return err
	})
	if err != nil {
		return nil, err
	}
	return chunks, nil
}

// mergeKeys merges the chunk-local key tables into one sorted table of
// distinct keys and returns, per chunk, the map from local to global code.
func mergeKeys[T int64 | string](local [][]T) (global []T, l2g [][]int32) {
	if global, l2g, ok := mergeIncreasing(local); ok {
		return global, l2g
	}
	return mergeByPrefix(local, orderKey[T])
}

// orderKey is the 64-bit number mergeByPrefix sorts a key by: a string's
// first 8 bytes (prefix8), an integer as unsigned with its sign bit
// flipped.
func orderKey[T int64 | string](v T) uint64 {
	if s, ok := any(v).(string); ok {
		return prefix8(s)
	}
	return uint64(any(v).(int64)) ^ 1<<63
}

// mergeByPrefix is mergeKeys for keys in no order (ids such as UUIDs or
// hashes): every key is sorted at once by a 64-bit number that orders the
// keys as they order (radixSort), up to ties among keys of one number,
// sorted by the keys themselves after: an integer as unsigned with its
// sign bit flipped (no ties), a string by its first 8 bytes as a
// big-endian number (prefix8). Comparisons at every step of a sort or a
// merge of a million string ids cost more than the rest of inspect.
func mergeByPrefix[T cmp.Ordered](local [][]T, prefix func(T) uint64) (global []T, l2g [][]int32) {
	starts := make([]int, len(local)+1)
	for c, l := range local {
		starts[c+1] = starts[c] + len(l)
	}
	total := starts[len(local)]
	flat := make([]T, total)
	pre := make([]uint64, total)
	idx := make([]int32, total)
	parallel.Do(len(local), 0, func(c int) {
		for i, s := range local[c] {
			j := starts[c] + i
			flat[j], pre[j], idx[j] = s, prefix(s), int32(j)
		}
	})
	if total < 1<<12 { // too few for the radix passes' tables of 2¹⁶ counts
		slices.SortFunc(idx, func(x, y int32) int { return cmp.Compare(flat[x], flat[y]) })
		for r, j := range idx {
			pre[r] = prefix(flat[j])
		}
	} else {
		radixSort(pre, idx, make([]uint64, total), make([]int32, total), math.MaxUint64)
	}
	for a := 0; a < total; {
		b := a + 1
		for b < total && pre[b] == pre[a] {
			b++
		}
		if b-a > 1 {
			slices.SortFunc(idx[a:b], func(x, y int32) int { return cmp.Compare(flat[x], flat[y]) })
		}
		a = b
	}
	global = make([]T, 0, total)
	code := make([]int32, total) // by place in flat
	for r, j := range idx {
		if r == 0 || pre[r] != pre[r-1] || flat[j] != global[len(global)-1] {
			global = append(global, flat[j])
		}
		code[j] = int32(len(global) - 1)
	}
	l2g = make([][]int32, len(local))
	for c := range local {
		l2g[c] = code[starts[c]:starts[c+1]:starts[c+1]]
	}
	return global, l2g
}

// prefix8 is the first 8 bytes of s as a big-endian number, zeros past
// its end.
func prefix8(s string) uint64 {
	var b [8]byte
	copy(b[:], s)
	return binary.BigEndian.Uint64(b[:])
}

// mergeIncreasing is mergeKeys for the usual layout of logs written
// episode by episode: each table increasing, and each starting at or
// after the end of the one before (where a row group boundary splits an
// episode, the two tables share that key). The global table is then
// their concatenation, the shared keys once, and local code i of table c
// is global code base_c + i, without a sort. false for any other layout.
func mergeIncreasing[T cmp.Ordered](local [][]T) (global []T, l2g [][]int32, ok bool) {
	increasing := make([]bool, len(local))
	parallel.Do(len(local), 0, func(c int) {
		l := local[c]
		increasing[c] = true
		for i := 1; i < len(l); i++ {
			if !(l[i-1] < l[i]) {
				increasing[c] = false
				return
			}
		}
	})
	total := 0
	var last T
	bases := make([]int, len(local))
	for c, l := range local {
		if !increasing[c] {
			return nil, nil, false
		}
		if len(l) == 0 {
			continue
		}
		bases[c] = total
		if total > 0 {
			if l[0] < last {
				return nil, nil, false
			}
			if l[0] == last {
				bases[c]--
			}
		}
		total = bases[c] + len(l)
		last = l[len(l)-1]
	}
	global = make([]T, total)
	l2g = make([][]int32, len(local))
	parallel.Do(len(local), 0, func(c int) {
		copy(global[bases[c]:], local[c])
		m := make([]int32, len(local[c]))
		for i := range m {
			m[i] = int32(bases[c] + i)
		}
		l2g[c] = m
	})
	return global, l2g, true
}

// renderInts formats integers in decimal, into one buffer per part of
// 2¹⁶ values rendered in parallel, so that a million episode ids cost a
// few allocations rather than a million.
func renderInts(vals []int64) []string {
	out := make([]string, len(vals))
	const part = 1 << 16 // values per parallel part
	parallel.Do((len(vals)+part-1)/part, 0, func(i int) {
		lo, hi := i*part, min((i+1)*part, len(vals))
		renderIntsInto(out[lo:hi], vals[lo:hi])
	})
	return out
}

// renderIntsInto is renderInts of vals into out, in one buffer.
func renderIntsInto(out []string, vals []int64) {
	buf := make([]byte, 0, len(vals)*8)
	ends := make([]int, len(vals))
	for i, v := range vals {
		buf = strconv.AppendInt(buf, v, 10)
		ends[i] = len(buf)
	}
	start := 0
	for i, e := range ends {
		if e > start {
			out[i] = unsafe.String(&buf[start], e-start)
		}
		start = e
	}
}

// episodeKeys merges the episode ids of all chunks. Integer ids sort
// numerically; if any file has string ids, all ids are compared as strings
// (integers rendered in decimal).
//
// Without names, integer ids are not rendered (ids is nil); K is the
// number of distinct ids either way.
func episodeKeys(chunks []*chunk, names bool) (ids []string, K int, l2g [][]int32) {
	if !anyStringIDs(chunks) {
		g, m := mergeKeys(intIDs(chunks))
		if names {
			ids = renderInts(g)
		}
		return ids, len(g), m
	}
	ids, l2g = mergeKeys(stringIDs(chunks))
	return ids, len(ids), l2g
}

// anyStringIDs reports whether any chunk has string episode ids.
func anyStringIDs(chunks []*chunk) bool {
	for _, c := range chunks {
		if !c.ids.intKind {
			return true
		}
	}
	return false
}

// intIDs lists each chunk's integer episode ids.
func intIDs(chunks []*chunk) [][]int64 {
	local := make([][]int64, len(chunks))
	for i, c := range chunks {
		local[i] = c.ids.vals
	}
	return local
}

// stringIDs lists each chunk's episode ids as strings, integers rendered
// in decimal.
func stringIDs(chunks []*chunk) [][]string {
	local := make([][]string, len(chunks))
	for i, c := range chunks {
		if c.ids.intKind {
			local[i] = renderInts(c.ids.vals)
		} else {
			local[i] = c.ids.names
		}
	}
	return local
}

const padCode = 0xFFFF // code of EndSymbol until the vocabulary is final

// assemble merges the chunks into the K×H dataset and validates episodes.
// Its phases: the episode table with the row errors, the horizon, the
// global symbol codes, the scatter of rows into the K×H arrays, the
// per-episode checks with padding, and the quarantine of invalid episodes.
func assemble(ctx context.Context, files []*openedFile, chunks []*chunk, opts Options) (*Dataset, error) {
	rows := chunkRows(chunks)
	if rows == 0 {
		return nil, fmt.Errorf("%w: %s", ErrEmpty, noRows(files))
	}
	a := newAssembly(files, chunks, rows)
	H, err := a.horizon(opts)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	obs, act, err := a.globalSymbols()
	if err != nil {
		return nil, err
	}
	return a.build(ctx, H, obs, act, opts)
}

// chunkRows is the number of rows of the chunks.
func chunkRows(chunks []*chunk) int64 {
	var rows int64
	for _, c := range chunks {
		rows += int64(c.n)
	}
	return rows
}

// build scatters the rows into a new dataset with horizon H, checks its
// episodes (padding, quarantine) and sets its final vocabularies.
func (a *assembly) build(ctx context.Context, H int, obs, act symbolUnion, opts Options) (*Dataset, error) {
	d, g, err := a.scatter(H, obs.l2g, act.l2g, opts.Arrays)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	padded, err := a.settle(d, g, opts.OnInvalid)
	if err != nil {
		return nil, err
	}
	d.ObsVocab = finalVocab(obs.all, d.Obs, padded)
	d.ActVocab = finalVocab(act.all, d.Act, padded)
	return d, nil
}

// horizon is opts.Horizon, or when it is 0 the horizon inferred from the
// episodes without row errors; it fails when that is 0 too.
func (a *assembly) horizon(opts Options) (int, error) {
	H := opts.Horizon
	if H == 0 {
		H = a.inferHorizon()
	}
	if H == 0 {
		if opts.OnInvalid == OnInvalidSkip && a.nBad > 0 {
			return 0, fmt.Errorf("%w: all %d episodes are invalid, the first: %w", ErrEmpty, a.nBad, a.failure())
		}
		return 0, a.failure()
	}
	return H, nil
}

// symbolUnion is the global pre-codes of one symbol column.
type symbolUnion struct {
	all []string  // the sorted union of all chunks' symbols
	l2g [][]int32 // per chunk: local code → index in all
}

// globalSymbols gives global pre-codes to the observation and action
// symbols: the sorted union of all chunks' symbols.
func (a *assembly) globalSymbols() (obs, act symbolUnion, err error) {
	obsLocal := make([][]string, len(a.chunks))
	actLocal := make([][]string, len(a.chunks))
	for i, c := range a.chunks {
		obsLocal[i] = c.obsT.render()
		actLocal[i] = c.actT.render()
	}
	obs.all, obs.l2g = mergeKeys(obsLocal)
	act.all, act.l2g = mergeKeys(actLocal)
	if len(obs.all) >= padCode || len(act.all) >= padCode {
		return obs, act, fmt.Errorf("%w: %d observation and %d action symbols (at most %d each; %s)", ErrTooManySymbols, len(obs.all), len(act.all), MaxSymbols-1, symbolLimitHelp)
	}
	return obs, act, nil
}

// settle runs the per-episode checks with padding, sets d's episode ids
// and lengths, and with invalid episodes or orphan rows fails or, when
// onInvalid is OnInvalidSkip, quarantines them. It reports whether a kept
// episode was padded.
func (a *assembly) settle(d *Dataset, g *grid, onInvalid string) (padded bool, err error) {
	padded = a.checkEpisodes(d, g)
	lengths := make([]int32, len(a.ids))
	for k := range lengths {
		lengths[k] = int32(g.lastStep[k])
	}
	if a.nBad == 0 && len(a.orphans) == 0 {
		d.EpisodeIDs, d.Length = a.ids, lengths
		return padded, nil
	}
	if onInvalid != OnInvalidSkip {
		return false, a.failure()
	}
	if err := a.quarantine(d, lengths); err != nil {
		return false, err
	}
	H := d.Horizon
	return slices.ContainsFunc(d.Length, func(l int32) bool { return int(l) < H }), nil
}

// assembly is the state assemble's phases share: the chunks, the global
// episode table and the first error of each invalid episode.
type assembly struct {
	files   []*openedFile
	chunks  []*chunk
	rows    int64
	ids     []string  // episode ids, in order
	epL2G   [][]int32 // per chunk: local episode code → index in ids
	badEp   []*EpisodeError
	nBad    int
	orphans []*EpisodeError // rows whose episode id is null
}

// newAssembly builds the episode table and records the chunks' row errors
// against their episodes.
func newAssembly(files []*openedFile, chunks []*chunk, rows int64) *assembly {
	a := &assembly{files: files, chunks: chunks, rows: rows}
	a.ids, _, a.epL2G = episodeKeys(chunks, true)
	a.badEp = make([]*EpisodeError, len(a.ids))
	for ci, c := range chunks {
		for _, b := range c.bad {
			e := &EpisodeError{File: a.fileName(c), Row: c.rowBase + int64(b.row), Step: b.step, Err: b.err, Detail: b.detail}
			if l := c.ep[b.row]; l >= 0 {
				a.markBad(a.epL2G[ci][l], e)
			} else {
				a.orphans = append(a.orphans, e)
			}
		}
	}
	return a
}

func (a *assembly) fileName(c *chunk) string { return a.files[c.file].src.name }

// markBad records e as episode k's error unless it has one already.
func (a *assembly) markBad(k int32, e *EpisodeError) {
	if a.badEp[k] == nil {
		e.Episode = a.ids[k]
		a.badEp[k] = e
		a.nBad++
	}
}

// failure is the error reporting the invalid episodes and orphan rows.
func (a *assembly) failure() error { return failOrEmpty(a.badEp, a.orphans, a.nBad, a.rows) }

// inferHorizon is the largest step of an episode without row errors.
func (a *assembly) inferHorizon() int {
	H := 0
	for ci, c := range a.chunks {
		if a.nBad == 0 || len(c.bad) == 0 {
			H = max(H, c.maxStep)
			continue
		}
		m := a.epL2G[ci]
		for i, s := range c.step {
			if int(s) > H && c.ep[i] >= 0 && a.badEp[m[c.ep[i]]] == nil {
				H = int(s)
			}
		}
	}
	return H
}

// grid is what the scatter records per cell and per episode of the K×H
// arrays, for the per-episode checks.
type grid struct {
	seen     []bool
	lastStep []uint16
	termStep []uint16
	lastFile []int32
}

// scattering is the state of assembly.scatter's pass over the rows.
type scattering struct {
	*assembly
	d       *Dataset
	g       *grid
	H       int
	hasProp bool
	dups    bool // an episode has a duplicate step
}

// scatter writes the rows into the K×H arrays of a new dataset with
// horizon H, marking episodes with too-late, duplicate or doubly terminal
// steps. One pass, in unit order, so the first occurrence of a duplicate
// is well defined.
func (a *assembly) scatter(H int, obsL2G, actL2G [][]int32, arr Arrays) (*Dataset, *grid, error) {
	K := len(a.ids)
	hasProp := a.chunks[0].prop != nil
	d := &Dataset{Horizon: H, Rows: a.rows}
	cells := K * H
	if err := allocSteps(d, cells, hasProp, arr); err != nil {
		return nil, nil, fmt.Errorf("%w: the logs' step arrays: %v", ErrIO, err)
	}
	g := &grid{seen: make([]bool, cells), lastStep: make([]uint16, K), termStep: make([]uint16, K), lastFile: make([]int32, K)}
	s := &scattering{assembly: a, d: d, g: g, H: H, hasProp: hasProp}
	for ci, c := range a.chunks {
		em, om, am := a.epL2G[ci], obsL2G[ci], actL2G[ci]
		for i := 0; i < c.n; i++ {
			s.row(c, i, em, om, am)
		}
	}
	if s.dups {
		describeDuplicates(a.files, a.chunks, a.epL2G, a.badEp, H)
	}
	return d, g, nil
}

// row writes row i of chunk c into its cell and records its step; em, om
// and am map the chunk's local episode, observation and action codes to
// global ones.
func (s *scattering) row(c *chunk, i int, em, om, am []int32) {
	k, h, idx, ok := s.cell(c, i, em)
	if !ok {
		return
	}
	d := s.d
	s.g.seen[idx] = true
	d.Obs[idx] = uint16(om[c.obs[i]])
	d.Act[idx] = uint16(am[c.act[i]])
	d.Reward[idx] = c.rew[i]
	if s.hasProp {
		d.Propensity[idx] = c.prop[i]
	}
	if c.term != nil && c.term.at(i) && !s.terminal(c, k, h) {
		return
	}
	if h > s.g.lastStep[k] {
		s.g.lastStep[k] = h
		s.g.lastFile[k] = int32(c.file)
	}
}

// cell returns the episode k, step h and cell index of row i of chunk c;
// ok is false for a row to skip: one without episode id, of an invalid
// episode or with an invalid step, or one whose step is past H or
// duplicate, which marks its episode.
func (s *scattering) cell(c *chunk, i int, em []int32) (k int32, h uint16, idx int, ok bool) {
	if k, ok = s.episode(c, i, em); !ok {
		return 0, 0, 0, false
	}
	h = c.step[i]
	if idx, ok = s.stepCell(c, k, h); !ok {
		return 0, 0, 0, false
	}
	return k, h, idx, true
}

// episode returns the global episode k of row i of chunk c (em maps the
// chunk's episode codes to global ones); ok is false for a row without
// episode id or of an invalid episode.
func (s *scattering) episode(c *chunk, i int, em []int32) (k int32, ok bool) {
	l := c.ep[i]
	if l < 0 {
		return 0, false
	}
	k = em[l]
	return k, s.badEp[k] == nil
}

// stepCell returns the cell index of step h of episode k (a row of chunk
// c); ok is false for an invalid step, or for a step past H or duplicate,
// which marks the episode.
func (s *scattering) stepCell(c *chunk, k int32, h uint16) (idx int, ok bool) {
	if h == 0 {
		return 0, false // already a row error
	}
	if int(h) > s.H {
		s.markBad(k, &EpisodeError{File: s.fileName(c), Step: int(h), Err: ErrTooLong, Detail: fmt.Sprintf("(horizon %d)", s.H)})
		return 0, false
	}
	idx = int(k)*s.H + int(h) - 1
	if s.g.seen[idx] {
		s.markBad(k, &EpisodeError{File: s.fileName(c), Step: int(h), Err: ErrDuplicateStep})
		s.dups = true
		return 0, false
	}
	return idx, true
}

// terminal records step h as episode k's terminal step, or marks the
// episode for a second terminal step and returns false.
func (s *scattering) terminal(c *chunk, k int32, h uint16) bool {
	termStep := s.g.termStep
	if termStep[k] != 0 {
		s.markBad(k, &EpisodeError{File: s.fileName(c), Step: int(min(h, termStep[k])), Err: ErrTerminal,
			Detail: fmt.Sprintf("(terminal on steps %d and %d)", min(h, termStep[k]), max(h, termStep[k]))})
		return false
	}
	termStep[k] = h
	return true
}

// checkEpisodes marks episodes with a missing step, a terminal step
// before their last, or an early end without a terminal step, and pads
// the valid early-terminated ones to H with EndSymbol. It reports whether
// any episode was padded.
func (a *assembly) checkEpisodes(d *Dataset, g *grid) (padded bool) {
	for k := range a.ids {
		if a.badEp[k] != nil {
			continue
		}
		if e := a.episodeError(d.Horizon, g, k); e != nil {
			a.markBad(int32(k), e)
			continue
		}
		padded = padEpisode(d, k, int(g.lastStep[k])) || padded
	}
	return padded
}

// episodeError is the error of episode k when it has a missing step, a
// terminal step before its last, or an early end without a terminal step;
// nil otherwise.
func (a *assembly) episodeError(H int, g *grid, k int) *EpisodeError {
	L := int(g.lastStep[k])
	file := a.files[g.lastFile[k]].src.name
	row := g.seen[k*H : k*H+L]
	if gap := slices.Index(row, false); gap >= 0 {
		return &EpisodeError{File: file, Step: gap + 1, Err: ErrStepGap, Detail: fmt.Sprintf("(step %d missing; the episode reaches step %d)", gap+1, L)}
	}
	ts := int(g.termStep[k])
	if ts != 0 && ts != L {
		return &EpisodeError{File: file, Step: ts, Err: ErrTerminal, Detail: fmt.Sprintf("(the episode continues to step %d)", L)}
	}
	if L < H && ts == 0 {
		return &EpisodeError{File: file, Step: L, Err: ErrShortEpisode, Detail: fmt.Sprintf("(ends at step %d of %d; mark the last step of an episode that ended early as terminal)", L, H)}
	}
	return nil
}

// padEpisode pads episode k of length L to the horizon with EndSymbol (a
// zero reward and, when d has propensities, propensity 1) and reports
// whether it was shorter.
func padEpisode(d *Dataset, k, L int) bool {
	H := d.Horizon
	for h := L; h < H; h++ {
		i := k*H + h
		d.Obs[i], d.Act[i], d.Reward[i] = padCode, padCode, 0
		if d.Propensity != nil {
			d.Propensity[i] = 1
		}
	}
	return L < H
}

// quarantine drops the invalid episodes from d (whose episodes have the
// given lengths) and lists them, and the orphan rows, in d.Quarantined.
// It fails when no episode is left.
func (a *assembly) quarantine(d *Dataset, lengths []int32) error {
	K := len(a.ids)
	if a.nBad == K {
		return fmt.Errorf("%w: all %d episodes are invalid, the first: %w", ErrEmpty, K, a.failure())
	}
	d.Quarantined = append(d.Quarantined, orphanEntries(a.orphans)...)
	keep := make([]int, 0, K-a.nBad)
	for k := range K {
		if e := a.badEp[k]; e != nil {
			d.Quarantined = append(d.Quarantined, Quarantined{EpisodeID: e.Episode, File: e.File, Step: e.Step, Reason: e.Reason()})
		} else {
			keep = append(keep, k)
		}
	}
	ids, lens := make([]string, len(keep)), make([]int32, len(keep))
	for j, k := range keep {
		ids[j], lens[j] = a.ids[k], lengths[k]
	}
	keepEpisodes(d, keep)
	d.EpisodeIDs, d.Length = ids, lens
	return nil
}

// keepEpisodes keeps only the episodes keep (increasing) of d's step
// arrays. The kept episodes move forward in place, so the step arrays stay
// where Options.Arrays put them (a spill file) and no second copy of the
// logs is made.
func keepEpisodes(d *Dataset, keep []int) {
	H := d.Horizon
	for j, k := range keep {
		if j != k {
			copySteps(d, d, j, k)
		}
	}
	n := len(keep) * H
	d.Obs, d.Act, d.Reward = d.Obs[:n:n], d.Act[:n:n], d.Reward[:n:n]
	if d.Propensity != nil {
		d.Propensity = d.Propensity[:n:n]
	}
}

// finalVocab keeps the symbols the kept episodes use, adds EndSymbol when
// an episode was padded, and recodes codes in place to the sorted result.
func finalVocab(all []string, codes []uint16, padded bool) []string {
	used := usedCodes(codes, len(all))
	vocab := keptVocab(all, used, padded)
	applyCodes(codes, recodeTable(all, used, vocab), endCode(vocab, padded))
	return vocab
}

// usedCodes marks the codes below n that codes holds.
func usedCodes(codes []uint16, n int) []bool {
	used := make([]bool, n)
	for _, c := range codes {
		if c != padCode {
			used[c] = true
		}
	}
	return used
}

// keptVocab is the symbols of all that are used, with EndSymbol when an
// episode was padded, sorted.
func keptVocab(all []string, used []bool, padded bool) []string {
	vocab := make([]string, 0, len(all)+1)
	for i, s := range all {
		if used[i] {
			vocab = append(vocab, s)
		}
	}
	if padded {
		vocab = append(vocab, EndSymbol)
	}
	slices.Sort(vocab)
	return vocab
}

// recodeTable maps the indexes into all (sorted, of which used are kept)
// to indexes into vocab.
func recodeTable(all []string, used []bool, vocab []string) []uint16 {
	recode := make([]uint16, len(all))
	j := 0
	for i, s := range all {
		if used[i] {
			for vocab[j] != s {
				j++
			}
			recode[i] = uint16(j)
		}
	}
	return recode
}

// endCode is the index of EndSymbol in vocab when an episode was padded,
// 0 otherwise.
func endCode(vocab []string, padded bool) uint16 {
	if !padded {
		return 0
	}
	return uint16(slices.Index(vocab, EndSymbol))
}

// applyCodes recodes codes in place by recode, and padCode to end.
func applyCodes(codes, recode []uint16, end uint16) {
	for i, c := range codes {
		if c == padCode {
			codes[i] = end
		} else {
			codes[i] = recode[c]
		}
	}
}

// describeDuplicates adds to each duplicate-step error the file of the
// first occurrence.
func describeDuplicates(files []*openedFile, chunks []*chunk, epL2G [][]int32, badEp []*EpisodeError, H int) {
	want := duplicateCells(badEp, H)
	for ci, c := range chunks {
		c.describeDuplicates(files[c.file].src.name, epL2G[ci], want, H)
	}
}

// describeDuplicates names file f, where chunk c comes from, in each error
// of want whose duplicate cell a row of c fills first, and deletes it from
// want; m maps the chunk's episode codes to global ones.
func (c *chunk) describeDuplicates(f string, m []int32, want map[int]*EpisodeError, H int) {
	for i := 0; i < c.n; i++ {
		key, ok := c.cellKey(i, m, H)
		if e := want[key]; ok && e != nil {
			delete(want, key)
			e.Detail = duplicateDetail(f, e.File)
		}
	}
}

// cellKey returns the cell k*H+h-1 of row i of chunk c, whose episode
// codes m maps to global ones; ok is false for a row without episode id
// or valid step.
func (c *chunk) cellKey(i int, m []int32, H int) (key int, ok bool) {
	if c.ep[i] < 0 || c.step[i] == 0 {
		return 0, false
	}
	k := int(m[c.ep[i]])
	return k*H + int(c.step[i]) - 1, true
}

// duplicateDetail is the detail of a duplicate-step error in file ef
// whose first occurrence is in file f.
func duplicateDetail(f, ef string) string {
	if f == ef {
		return "(twice in this file)"
	}
	return "(also in " + f + ")"
}

// duplicateCells maps the cell k*H+h-1 of each duplicate step to its
// episode's error.
func duplicateCells(badEp []*EpisodeError, H int) map[int]*EpisodeError {
	want := map[int]*EpisodeError{}
	for k, e := range badEp {
		if e != nil && e.Err == ErrDuplicateStep {
			want[k*H+e.Step-1] = e
		}
	}
	return want
}

// noRows says that the input files hold no rows, naming them (the first
// three when there are more).
func noRows(files []*openedFile) string {
	var names []string
	for _, f := range files[:min(len(files), 3)] {
		names = append(names, f.src.name)
	}
	list := strings.Join(names, ", ")
	switch {
	case len(files) == 1:
		return list + " holds no rows"
	case len(files) > 3:
		list += fmt.Sprintf(" and %d more", len(files)-3)
	}
	return fmt.Sprintf("the %d input files (%s) hold no rows", len(files), list)
}

// failOrEmpty builds the error returned when invalid episodes fail the
// read: the first by episode order (rows with a null id first), with the
// count of the others.
func failOrEmpty(badEp []*EpisodeError, orphans []*EpisodeError, nBad int, rows int64) error {
	total := nBad + len(orphans)
	if total == 0 {
		return fmt.Errorf("%w: %d rows but no valid episode", ErrEmpty, rows)
	}
	if len(orphans) > 0 {
		// Rows without an id belong to no episode: they are counted as
		// rows, and every invalid episode is further.
		e := *orphans[0]
		if len(orphans) > 1 {
			e.Detail = strings.TrimSpace(e.Detail + fmt.Sprintf(" (%d rows in all have a null episode_id)", len(orphans)))
		}
		e.More = nBad
		return &e
	}
	e := *firstBad(badEp)
	e.More = nBad - 1
	return &e
}

// firstBad is the first error of badEp that is not nil.
func firstBad(badEp []*EpisodeError) *EpisodeError {
	for _, e := range badEp {
		if e != nil {
			return e
		}
	}
	return nil
}

// orphanEntries lists the rows whose episode id is null as one quarantine
// entry per file (they belong to no episode): how many, and which rows.
func orphanEntries(orphans []*EpisodeError) []Quarantined {
	var out []Quarantined
	for i := 0; i < len(orphans); {
		q, n := orphanEntry(orphans[i:])
		out = append(out, q)
		i += n
	}
	return out
}

// orphanEntry is the quarantine entry of the first rows of orphans that
// share a file, and how many rows it covers.
func orphanEntry(orphans []*EpisodeError) (Quarantined, int) {
	n, list := sameFileRows(orphans)
	reason := fmt.Sprintf("row %d: %s", orphans[0].Row, orphans[0].Reason())
	if n > 1 {
		reason += fmt.Sprintf(" (%d rows in all have a null episode_id: rows %s)", n, list)
	}
	return Quarantined{File: orphans[0].File, Reason: reason}, n
}

// sameFileRows counts the first rows of orphans that share the first one's
// file, and lists them (the first maxListedRows, then "…").
func sameFileRows(orphans []*EpisodeError) (n int, list string) {
	var rows []string
	for ; n < len(orphans) && orphans[n].File == orphans[0].File; n++ {
		if len(rows) < maxListedRows {
			rows = append(rows, fmt.Sprint(orphans[n].Row))
		}
	}
	list = strings.Join(rows, ", ")
	if n > maxListedRows {
		list += ", …"
	}
	return n, list
}

// maxListedRows is how many rows a quarantine entry of rows without an
// episode id lists.
const maxListedRows = 10
