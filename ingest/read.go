package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
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
	if err := opts.check(); err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no input files", ErrEmpty)
	}
	srcs := make([]source, 0, len(files))
	stats := make([]os.FileInfo, 0, len(files))
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			closeAll(srcs)
			return nil, &FileError{File: name, Err: ErrIO, Detail: errors.Unwrap(err).Error()}
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			closeAll(srcs)
			return nil, &FileError{File: name, Err: ErrIO, Detail: err.Error()}
		}
		if st.IsDir() {
			f.Close()
			closeAll(srcs)
			return nil, &FileError{File: name, Err: ErrIO, Detail: "is a directory"}
		}
		for j, prev := range stats {
			if os.SameFile(prev, st) {
				f.Close()
				closeAll(srcs)
				detail := "name each file once"
				if files[j] != name {
					detail = fmt.Sprintf("also as %s; name each file once", files[j])
				}
				return nil, &FileError{File: name, Err: ErrSameFile, Detail: detail}
			}
		}
		srcs = append(srcs, source{name: name, r: f, size: st.Size()})
		stats = append(stats, st)
	}
	defer closeAll(srcs)
	return readSources(ctx, srcs, opts)
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

func readSources(ctx context.Context, srcs []source, opts Options) (*Dataset, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	files, units, err := openSources(srcs, opts)
	if err != nil {
		return nil, err
	}
	d, err := readDirect(ctx, files, units, opts)
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
		var base int64
		for j, rg := range of.f.RowGroups() {
			units = append(units, unit{i, j, base})
			base += rg.NumRows()
		}
	}
	// Propensities are all or nothing: a file without them would leave
	// holes that no later stage could fill honestly.
	for i := range files {
		a, b := files[0].cols[schemas.Propensity], files[i].cols[schemas.Propensity]
		if (a.index >= 0) != (b.index >= 0) {
			with, without := files[0], files[i]
			if b.index >= 0 {
				with, without = files[i], files[0]
			}
			return nil, nil, &FileError{File: without.src.name, Err: ErrMissingColumn,
				Detail: fmt.Sprintf("no propensity column, but %s has one (%q)", with.src.name, with.cols[schemas.Propensity].name)}
		}
	}
	// Symbols are compared as text, so an integer 1 in one file and a
	// string "1" in another would silently become one symbol: the kinds of
	// the symbol columns must agree across files.
	for _, r := range []schemas.Role{schemas.Episode, schemas.Observation, schemas.Action} {
		for i := 1; i < len(files); i++ {
			a, b := files[0].cols[r], files[i].cols[r]
			if a.kind != b.kind {
				return nil, nil, &FileError{File: files[i].src.name, Err: ErrInconsistentCols,
					Detail: fmt.Sprintf("the %s column %q is %s here but %s in %s (%q); convert one so that all files agree",
						r, b.name, b.kind, a.kind, files[0].src.name, a.name)}
			}
		}
	}
	return files, units, nil
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
func mergeKeys[T cmp.Ordered](local [][]T) (global []T, l2g [][]int32) {
	perms := make([][]int32, len(local))
	total := 0
	parallel.Do(len(local), 0, func(c int) {
		keys := local[c]
		p := make([]int32, len(keys))
		for i := range p {
			p[i] = int32(i)
		}
		if !slices.IsSortedFunc(p, func(a, b int32) int { return cmp.Compare(keys[a], keys[b]) }) {
			slices.SortFunc(p, func(a, b int32) int { return cmp.Compare(keys[a], keys[b]) })
		}
		perms[c] = p
	})
	for _, l := range local {
		total += len(l)
	}
	global = make([]T, 0, total)
	for _, l := range local {
		global = append(global, l...)
	}
	slices.Sort(global)
	global = slices.Compact(global)
	l2g = make([][]int32, len(local))
	parallel.Do(len(local), 0, func(c int) {
		keys := local[c]
		m := make([]int32, len(keys))
		j := 0
		for _, i := range perms[c] {
			for global[j] != keys[i] {
				j++
			}
			m[i] = int32(j)
		}
		l2g[c] = m
	})
	return global, l2g
}

// renderInts formats integers in decimal into one shared buffer, so that
// a million episode ids cost one allocation rather than a million.
func renderInts(vals []int64) []string {
	buf := make([]byte, 0, len(vals)*8)
	ends := make([]int, len(vals))
	for i, v := range vals {
		buf = strconv.AppendInt(buf, v, 10)
		ends[i] = len(buf)
	}
	out := make([]string, len(vals))
	start := 0
	for i, e := range ends {
		if e > start {
			out[i] = unsafe.String(&buf[start], e-start)
		}
		start = e
	}
	return out
}

// episodeKeys merges the episode ids of all chunks. Integer ids sort
// numerically; if any file has string ids, all ids are compared as strings
// (integers rendered in decimal).
func episodeKeys(chunks []*chunk) (ids []string, l2g [][]int32) {
	anyStr := false
	for _, c := range chunks {
		if !c.ids.intKind {
			anyStr = true
		}
	}
	if !anyStr {
		local := make([][]int64, len(chunks))
		for i, c := range chunks {
			local[i] = c.ids.vals
		}
		g, m := mergeKeys(local)
		return renderInts(g), m
	}
	local := make([][]string, len(chunks))
	for i, c := range chunks {
		if c.ids.intKind {
			local[i] = renderInts(c.ids.vals)
		} else {
			local[i] = c.ids.names
		}
	}
	return mergeKeys(local)
}

const padCode = 0xFFFF // code of EndSymbol until the vocabulary is final

// assemble merges the chunks into the K×H dataset and validates episodes.
func assemble(ctx context.Context, files []*openedFile, chunks []*chunk, opts Options) (*Dataset, error) {
	var rows int64
	for _, c := range chunks {
		rows += int64(c.n)
	}
	if rows == 0 {
		return nil, fmt.Errorf("%w: the %d input files hold no rows", ErrEmpty, len(files))
	}
	fileName := func(c *chunk) string { return files[c.file].src.name }

	ids, epL2G := episodeKeys(chunks)
	K := len(ids)
	badEp := make([]*EpisodeError, K)
	nBad := 0
	markBad := func(k int32, e *EpisodeError) {
		if badEp[k] == nil {
			e.Episode = ids[k]
			badEp[k] = e
			nBad++
		}
	}
	var orphans []*EpisodeError // rows whose episode id is null
	for ci, c := range chunks {
		for _, b := range c.bad {
			e := &EpisodeError{File: fileName(c), Row: c.rowBase + int64(b.row), Step: b.step, Err: b.err, Detail: b.detail}
			if l := c.ep[b.row]; l >= 0 {
				markBad(epL2G[ci][l], e)
			} else {
				orphans = append(orphans, e)
			}
		}
	}

	H := opts.Horizon
	if H == 0 {
		for ci, c := range chunks {
			if nBad == 0 || len(c.bad) == 0 {
				H = max(H, c.maxStep)
				continue
			}
			m := epL2G[ci]
			for i, s := range c.step {
				if int(s) > H && c.ep[i] >= 0 && badEp[m[c.ep[i]]] == nil {
					H = int(s)
				}
			}
		}
	}
	if H == 0 {
		if opts.OnInvalid == OnInvalidSkip && nBad > 0 {
			return nil, fmt.Errorf("%w: all %d episodes are invalid, the first: %w", ErrEmpty, nBad, failOrEmpty(badEp, orphans, nBad, rows))
		}
		return nil, failOrEmpty(badEp, orphans, nBad, rows)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// Global pre-codes for symbols: the sorted union of all chunks' symbols.
	obsLocal := make([][]string, len(chunks))
	actLocal := make([][]string, len(chunks))
	for i, c := range chunks {
		obsLocal[i] = c.obsT.render()
		actLocal[i] = c.actT.render()
	}
	obsAll, obsL2G := mergeKeys(obsLocal)
	actAll, actL2G := mergeKeys(actLocal)
	if len(obsAll) >= padCode || len(actAll) >= padCode {
		return nil, fmt.Errorf("%w: %d observation and %d action symbols (at most %d each; %s)", ErrTooManySymbols, len(obsAll), len(actAll), MaxSymbols-1, symbolLimitHelp)
	}

	hasProp := chunks[0].prop != nil
	d := &Dataset{Horizon: H, Rows: rows}
	cells := K * H
	d.Obs = make([]uint16, cells)
	d.Act = make([]uint16, cells)
	d.Reward = make([]float64, cells)
	if hasProp {
		d.Propensity = make([]float64, cells)
	}
	seen := make([]bool, cells)
	lastStep := make([]uint16, K)
	termStep := make([]uint16, K)
	lastFile := make([]int32, K)
	type dup struct {
		k    int32
		step uint16
		ci   int
	}
	var dups []dup

	// Scatter rows into the K×H arrays. One pass, in unit order, so the
	// first occurrence of a duplicate is well defined.
	for ci, c := range chunks {
		em, om, am := epL2G[ci], obsL2G[ci], actL2G[ci]
		for i := 0; i < c.n; i++ {
			l := c.ep[i]
			if l < 0 {
				continue
			}
			k := em[l]
			if badEp[k] != nil {
				continue
			}
			h := c.step[i]
			if h == 0 {
				continue // already a row error
			}
			if int(h) > H {
				markBad(k, &EpisodeError{File: fileName(c), Step: int(h), Err: ErrTooLong, Detail: fmt.Sprintf("(horizon %d)", H)})
				continue
			}
			idx := int(k)*H + int(h) - 1
			if seen[idx] {
				markBad(k, &EpisodeError{File: fileName(c), Step: int(h), Err: ErrDuplicateStep})
				dups = append(dups, dup{k, h, ci})
				continue
			}
			seen[idx] = true
			d.Obs[idx] = uint16(om[c.obs[i]])
			d.Act[idx] = uint16(am[c.act[i]])
			d.Reward[idx] = c.rew[i]
			if hasProp {
				d.Propensity[idx] = c.prop[i]
			}
			if c.term != nil && c.term[i] {
				if termStep[k] != 0 {
					markBad(k, &EpisodeError{File: fileName(c), Step: int(min(h, termStep[k])), Err: ErrTerminal,
						Detail: fmt.Sprintf("(terminal on steps %d and %d)", min(h, termStep[k]), max(h, termStep[k]))})
					continue
				}
				termStep[k] = h
			}
			if h > lastStep[k] {
				lastStep[k] = h
				lastFile[k] = int32(c.file)
			}
		}
	}
	if len(dups) > 0 {
		describeDuplicates(files, chunks, epL2G, badEp, H)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// Per-episode checks, then padding of early-terminated episodes.
	padded := false
	for k := range K {
		if badEp[k] != nil {
			continue
		}
		L := int(lastStep[k])
		file := files[lastFile[k]].src.name
		row := seen[k*H : k*H+L]
		if gap := slices.Index(row, false); gap >= 0 {
			markBad(int32(k), &EpisodeError{File: file, Step: gap + 1, Err: ErrStepGap, Detail: fmt.Sprintf("(step %d missing; the episode reaches step %d)", gap+1, L)})
			continue
		}
		ts := int(termStep[k])
		if ts != 0 && ts != L {
			markBad(int32(k), &EpisodeError{File: file, Step: ts, Err: ErrTerminal, Detail: fmt.Sprintf("(the episode continues to step %d)", L)})
			continue
		}
		if L < H && ts == 0 {
			markBad(int32(k), &EpisodeError{File: file, Step: L, Err: ErrShortEpisode, Detail: fmt.Sprintf("(ends at step %d of %d; mark the last step of an episode that ended early as terminal)", L, H)})
			continue
		}
		for h := L; h < H; h++ {
			i := k*H + h
			d.Obs[i], d.Act[i], d.Reward[i] = padCode, padCode, 0
			if hasProp {
				d.Propensity[i] = 1
			}
			padded = true
		}
	}
	lengths := make([]int32, K)
	for k := range K {
		lengths[k] = int32(lastStep[k])
	}

	if nBad > 0 || len(orphans) > 0 {
		if opts.OnInvalid != OnInvalidSkip {
			return nil, failOrEmpty(badEp, orphans, nBad, rows)
		}
		if nBad == K {
			return nil, fmt.Errorf("%w: all %d episodes are invalid, the first: %w", ErrEmpty, K, failOrEmpty(badEp, orphans, nBad, rows))
		}
		for _, e := range orphans {
			d.Quarantined = append(d.Quarantined, Quarantined{File: e.File, Step: e.Step, Reason: fmt.Sprintf("row %d: %s", e.Row, e.Reason())})
		}
		keep := make([]int, 0, K-nBad)
		for k := range K {
			if e := badEp[k]; e != nil {
				d.Quarantined = append(d.Quarantined, Quarantined{EpisodeID: e.Episode, File: e.File, Step: e.Step, Reason: e.Reason()})
			} else {
				keep = append(keep, k)
			}
		}
		full := &Dataset{Horizon: H, EpisodeIDs: ids, Length: lengths, Obs: d.Obs, Act: d.Act, Reward: d.Reward, Propensity: d.Propensity}
		sub := full.Subset(keep)
		d.EpisodeIDs, d.Length, d.Obs, d.Act, d.Reward, d.Propensity = sub.EpisodeIDs, sub.Length, sub.Obs, sub.Act, sub.Reward, sub.Propensity
		padded = slices.ContainsFunc(d.Length, func(l int32) bool { return int(l) < H })
	} else {
		d.EpisodeIDs, d.Length = ids, lengths
	}
	d.ObsVocab = finalVocab(obsAll, d.Obs, padded)
	d.ActVocab = finalVocab(actAll, d.Act, padded)
	return d, nil
}

// finalVocab keeps the symbols the kept episodes use, adds EndSymbol when
// an episode was padded, and recodes codes in place to the sorted result.
func finalVocab(all []string, codes []uint16, padded bool) []string {
	used := make([]bool, len(all))
	for _, c := range codes {
		if c != padCode {
			used[c] = true
		}
	}
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
	recode := make([]uint16, len(all)+1)
	j := 0
	for i, s := range all {
		if used[i] {
			for vocab[j] != s {
				j++
			}
			recode[i] = uint16(j)
		}
	}
	end := uint16(0)
	if padded {
		end = uint16(slices.Index(vocab, EndSymbol))
	}
	for i, c := range codes {
		if c == padCode {
			codes[i] = end
		} else {
			codes[i] = recode[c]
		}
	}
	return vocab
}

// describeDuplicates adds to each duplicate-step error the file of the
// first occurrence.
func describeDuplicates(files []*openedFile, chunks []*chunk, epL2G [][]int32, badEp []*EpisodeError, H int) {
	want := map[int]*EpisodeError{}
	for k, e := range badEp {
		if e != nil && e.Err == ErrDuplicateStep {
			want[k*H+e.Step-1] = e
		}
	}
	for ci, c := range chunks {
		for i := 0; i < c.n; i++ {
			if c.ep[i] < 0 || c.step[i] == 0 {
				continue
			}
			k := int(epL2G[ci][c.ep[i]])
			key := k*H + int(c.step[i]) - 1
			e, ok := want[key]
			if !ok {
				continue
			}
			delete(want, key)
			if f := files[c.file].src.name; f == e.File {
				e.Detail = "(twice in this file)"
			} else {
				e.Detail = "(also in " + f + ")"
			}
		}
	}
}

// failOrEmpty builds the error returned when invalid episodes fail the
// read: the first by episode order (rows with a null id first), with the
// count of the others.
func failOrEmpty(badEp []*EpisodeError, orphans []*EpisodeError, nBad int, rows int64) error {
	total := nBad + len(orphans)
	if total == 0 {
		return fmt.Errorf("%w: %d rows but no valid episode", ErrEmpty, rows)
	}
	var first *EpisodeError
	if len(orphans) > 0 {
		first = orphans[0]
	} else {
		for _, e := range badEp {
			if e != nil {
				first = e
				break
			}
		}
	}
	e := *first
	e.More = total - 1
	return &e
}
