package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/psrlcb/psrlcb/schemas"
)

// source is one input file.
type source struct {
	name string
	r    io.ReaderAt
	size int64
}

// colSpec is how a role is stored in one file.
type colSpec struct {
	index int          // leaf column index; -1 when absent
	name  string       // the file's column name
	kind  schemas.Kind // KindInt, KindString, KindFloat or KindBool
	phys  parquet.Kind // physical type
	scale float64      // 10^-scale for decimals, 1 otherwise
	max   int          // max definition level (0 for required columns)
	_     [0]func()    // not comparable
}

// openedFile is a parquet file whose columns have been resolved.
type openedFile struct {
	src  source
	f    *parquet.File
	cols [schemas.NumRoles]colSpec
}

// recoverUnreadable turns a panic of the Parquet decoder on a damaged file
// into ErrUnreadable: corrupted bytes reach code paths that index without
// checking, and a bad file must give an error, never a crash.
func recoverUnreadable(name string, err *error) {
	if r := recover(); r != nil {
		*err = &FileError{File: name, Err: ErrUnreadable, Detail: fmt.Sprint("damaged file: ", r)}
	}
}

// openFile checks the framing of a parquet file, reads its footer and
// resolves the log columns.
func openFile(src source, m schemas.Mapping) (of *openedFile, err error) {
	defer recoverUnreadable(src.name, &err)
	footerLen, err := checkFraming(src)
	if err != nil {
		return nil, err
	}
	f, err := parquet.OpenFile(src.r, src.size,
		parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true), parquet.ReadBufferSize(1<<16))
	if err != nil {
		return nil, &FileError{File: src.name, Err: ErrUnreadable, Detail: err.Error()}
	}
	of = &openedFile{src: src, f: f}
	if err := of.checkRowGroups(); err != nil {
		return nil, err
	}
	if err := of.resolve(m); err != nil {
		return nil, err
	}
	if err := of.checkPages(footerLen); err != nil {
		return nil, err
	}
	return of, nil
}

// checkFraming checks the magic bytes and the footer length of a parquet
// file and returns that length. Parquet files begin and end with "PAR1"
// and the footer length sits before the trailing magic. Checking the
// length first keeps a damaged length from turning into a huge
// allocation.
func checkFraming(src source) (int64, error) {
	if src.size < 12 {
		return 0, &FileError{File: src.name, Err: ErrUnreadable, Detail: fmt.Sprintf("%d bytes is too short for Parquet", src.size)}
	}
	var head, tail [8]byte
	if _, err := src.r.ReadAt(head[:4], 0); err != nil {
		return 0, &FileError{File: src.name, Err: ErrIO, Detail: err.Error()}
	}
	if _, err := src.r.ReadAt(tail[:], src.size-8); err != nil {
		return 0, &FileError{File: src.name, Err: ErrIO, Detail: err.Error()}
	}
	if string(head[:4]) != "PAR1" || string(tail[4:]) != "PAR1" {
		return 0, &FileError{File: src.name, Err: ErrUnreadable, Detail: "bad magic bytes (truncated, encrypted or not Parquet)"}
	}
	footerLen := int64(binary.LittleEndian.Uint32(tail[:4]))
	if footerLen > src.size-12 {
		return 0, &FileError{File: src.name, Err: ErrUnreadable, Detail: "footer length exceeds the file (truncated?)"}
	}
	return footerLen, nil
}

// checkRowGroups checks that the row-group and chunk metadata agree with
// the footer before any page is read.
func (of *openedFile) checkRowGroups() error {
	f, name := of.f, of.src.name
	var total int64
	for _, rg := range f.RowGroups() {
		if rg.NumRows() < 0 || rg.NumRows() > math.MaxInt32 {
			return &FileError{File: name, Err: ErrUnreadable, Detail: fmt.Sprintf("row group of %d rows", rg.NumRows())}
		}
		if len(rg.ColumnChunks()) != len(f.Schema().Columns()) {
			return &FileError{File: name, Err: ErrUnreadable, Detail: "row group does not have one chunk per column"}
		}
		total += rg.NumRows()
	}
	if total != f.NumRows() {
		return &FileError{File: name, Err: ErrUnreadable, Detail: "row groups do not add up to the row count"}
	}
	return nil
}

// resolve finds each role's column and checks its type.
func (of *openedFile) resolve(m schemas.Mapping) error {
	leaves := map[string]*parquet.Column{}
	for _, c := range of.f.Root().Columns() {
		leaves[c.Name()] = c
	}
	for r := schemas.Role(0); r < schemas.NumRoles; r++ {
		if err := of.resolveRole(r, m, leaves); err != nil {
			return err
		}
	}
	return nil
}

// resolveRole finds the column of role r among the file's top-level
// columns (leaves, by name) and sets of.cols[r] from it; its index stays
// -1 when an optional column is absent.
func (of *openedFile) resolveRole(r schemas.Role, m schemas.Mapping, leaves map[string]*parquet.Column) error {
	spec := &of.cols[r]
	spec.index = -1
	c, err := of.findColumn(r, m, leaves)
	if err != nil || c == nil {
		return err
	}
	if !c.Leaf() || c.Repeated() || c.MaxRepetitionLevel() > 0 {
		return &FileError{File: of.src.name, Err: ErrColumnType,
			Detail: fmt.Sprintf("column %q (%s) must be a plain, non-repeated value", c.Name(), r)}
	}
	spec.index = c.Index()
	spec.name = c.Name()
	spec.max = c.MaxDefinitionLevel()
	isDec := spec.setType(c.Type())
	return of.checkKind(r, spec, c, isDec)
}

// findColumn returns the one column the mapping allows for role r, or
// nil when there is none and the role may be absent.
func (of *openedFile) findColumn(r schemas.Role, m schemas.Mapping, leaves map[string]*parquet.Column) (*parquet.Column, error) {
	var found []*parquet.Column
	for _, name := range m.Candidates(r) {
		if c, ok := leaves[name]; ok {
			found = append(found, c)
		}
	}
	if len(found) > 1 {
		return nil, &FileError{File: of.src.name, Err: ErrAmbiguousColumn,
			Detail: fmt.Sprintf("both %q and %q can be the %s column; name one with the column flag", found[0].Name(), found[1].Name(), r)}
	}
	if len(found) == 0 {
		if schemas.Columns[r].Required || m.Name(r) != "" {
			return nil, &FileError{File: of.src.name, Err: ErrMissingColumn,
				Detail: fmt.Sprintf("no %s column (looked for %q)", r, m.Candidates(r))}
		}
		return nil, nil
	}
	return found[0], nil
}

// setType sets the physical type, the kind and the scale of a column of
// type t, and reports whether t is a decimal.
func (spec *colSpec) setType(t parquet.Type) (isDec bool) {
	spec.scale = 1
	spec.phys = t.Kind()
	var lt format.LogicalTypeValue
	if l := t.LogicalType(); l != nil {
		lt = l.Value
	}
	dec, isDec := lt.(*format.DecimalType)
	spec.kind = physKind(spec.phys)
	if spec.kind == schemas.KindInt && isDec {
		spec.kind = schemas.KindFloat
		spec.scale = math.Pow10(-int(dec.Scale))
	}
	return isDec
}

// physKind is the kind of the values of a physical type (0 for a type
// ingest does not read).
func physKind(phys parquet.Kind) schemas.Kind {
	switch phys {
	case parquet.Int32, parquet.Int64:
		return schemas.KindInt
	case parquet.ByteArray:
		return schemas.KindString
	case parquet.Float, parquet.Double:
		return schemas.KindFloat
	case parquet.Boolean:
		return schemas.KindBool
	}
	return 0
}

// checkKind checks that role r accepts the kind of its column c (a
// decimal only for rewards and propensities); integer rewards and
// propensities are read as floats.
func (of *openedFile) checkKind(r schemas.Role, spec *colSpec, c *parquet.Column, isDec bool) error {
	accepted := schemas.Columns[r].Kinds
	if r == schemas.Reward || r == schemas.Propensity {
		// Numeric columns also accept integers, e.g. a reward of 0/1.
		accepted |= schemas.KindInt
	}
	if spec.kind&accepted == 0 || (isDec && r != schemas.Reward && r != schemas.Propensity) {
		return &FileError{File: of.src.name, Err: ErrColumnType,
			Detail: fmt.Sprintf("column %q (%s) is %s, want %s", c.Name(), r, c.Type(), schemas.Columns[r].Kinds)}
	}
	if spec.kind == schemas.KindInt && (r == schemas.Reward || r == schemas.Propensity) {
		spec.kind = schemas.KindFloat
	}
	return nil
}

// pageFunc receives one page: defs are the definition levels (nil for a
// required column), vals the non-null values, dict the dictionary of an
// indexed page (vals then hold int32 indexes). row is the first row of the
// page in the row group.
type pageFunc func(row int, nrows int, defs []byte, p parquet.Page) error

// walkPages reads a column chunk page by page and checks that the pages
// cover exactly n rows.
func walkPages(cc parquet.ColumnChunk, n int, fn pageFunc) error {
	pages := cc.Pages()
	defer pages.Close()
	row := 0
	for {
		p, err := pages.ReadPage()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		nr, err := visitPage(p, row, n, fn)
		if err != nil {
			return err
		}
		row += nr
	}
	if row != n {
		return fmt.Errorf("column chunk has %d rows, its row group %d", row, n)
	}
	return nil
}

// visitPage checks that page p, starting at row, stays within the n rows
// of its row group and has one definition level per row, passes it to fn
// and releases it. It returns the page's row count.
func visitPage(p parquet.Page, row, n int, fn pageFunc) (int, error) {
	nr := int(p.NumRows())
	if nr < 0 || row+nr > n {
		parquet.Release(p)
		return 0, fmt.Errorf("column chunk has more rows than its row group (%d)", n)
	}
	defs := p.DefinitionLevels()
	if defs != nil && len(defs) != nr {
		parquet.Release(p)
		return 0, errors.New("definition levels do not match the page rows")
	}
	err := fn(row, nr, defs, p)
	parquet.Release(p)
	return nr, err
}

// nonNull counts the values a page must hold.
func nonNull(defs []byte, max int, nr int) int {
	if defs == nil {
		return nr
	}
	// Definition levels are bytes; bytes.Count of one byte is vectorised.
	return bytes.Count(defs, []byte{byte(max)})
}

// dictIndexes returns the int32 indexes of an indexed page, checked against
// the dictionary length.
func dictIndexes(p parquet.Page, dict parquet.Dictionary, need int) ([]int32, error) {
	idx, err := pageIndexes(p, need)
	if err != nil {
		return nil, err
	}
	n := int32(dict.Len())
	for _, i := range idx[:need] {
		if uint32(i) >= uint32(n) {
			return nil, fmt.Errorf("dictionary index %d out of range [0,%d)", i, n)
		}
	}
	return idx[:need], nil
}

// pageIndexes returns the need int32 indexes of an indexed page without
// checking them against the dictionary: for a caller that indexes a slice
// of the dictionary's length with each, whose bounds check (a panic that
// recoverUnreadable words as a damaged file) stands in for the range
// check. The direct path does, and leaves the wording to the exact path.
func pageIndexes(p parquet.Page, need int) ([]int32, error) {
	dv := p.Data()
	idx := dv.Int32()
	if len(idx) < need {
		return nil, errShortPage
	}
	return idx[:need], nil
}

// errShortPage is the error for a page holding fewer values than its rows
// need.
var errShortPage = errors.New("page holds fewer values than its rows")

// intValues widens the integer values of a page (or dictionary page).
func intValues(p parquet.Page, phys parquet.Kind, need int, buf []int64) ([]int64, error) {
	d := p.Data()
	switch phys {
	case parquet.Int32:
		return widen(d.Int32(), need, buf[:0])
	case parquet.Int64:
		return firstValues(d.Int64(), need)
	}
	return nil, fmt.Errorf("unexpected physical type %s", phys)
}

// floatValues widens the numeric values of a page (or dictionary page).
func floatValues(p parquet.Page, phys parquet.Kind, scale float64, need int, buf []float64) ([]float64, error) {
	d := p.Data()
	switch phys {
	case parquet.Double:
		return firstValues(d.Double(), need)
	case parquet.Float:
		return widen(d.Float(), need, buf[:0])
	case parquet.Int32:
		return scaledInts(d.Int32(), scale, need, buf[:0])
	case parquet.Int64:
		return scaledInts(d.Int64(), scale, need, buf[:0])
	}
	return nil, fmt.Errorf("unexpected physical type %s", phys)
}

// firstValues is the first need values of v, in place.
func firstValues[T any](v []T, need int) ([]T, error) {
	if len(v) < need {
		return nil, errShortPage
	}
	return v[:need], nil
}

// widen appends to buf the first need values of v, converted to the wider
// type.
func widen[T int32 | float32, U int64 | float64](v []T, need int, buf []U) ([]U, error) {
	if len(v) < need {
		return nil, errShortPage
	}
	for _, x := range v[:need] {
		buf = append(buf, U(x))
	}
	return buf, nil
}

// scaledInts appends to buf the first need integers of v times scale (a
// decimal's 10^-scale, or 1).
func scaledInts[T int32 | int64](v []T, scale float64, need int, buf []float64) ([]float64, error) {
	if len(v) < need {
		return nil, errShortPage
	}
	for _, x := range v[:need] {
		buf = append(buf, float64(x)*scale)
	}
	return buf, nil
}

// byteArrays returns the values and offsets of a BYTE_ARRAY page: value i
// is data[off[i]:off[i+1]].
func byteArrays(p parquet.Page, need int) ([]byte, []uint32, error) {
	dv := p.Data()
	data, off := dv.ByteArray()
	if len(off) < need+1 {
		return nil, nil, errors.New("page holds fewer values than its rows")
	}
	for i := 0; i < need; i++ {
		if off[i] > off[i+1] || int(off[i+1]) > len(data) {
			return nil, nil, errors.New("bad byte array offsets")
		}
	}
	return data, off, nil
}

// symTable assigns chunk-local codes to the distinct values of a
// categorical column, in order of first appearance.
type symTable struct {
	intKind bool
	ints    map[int64]int32  // nil while the values seen are increasing
	strs    map[string]int32 // nil while the strings seen are increasing
	vals    []int64          // distinct integer values, by code
	names   []string         // distinct strings, by code
}

func newSymTable(intKind bool) *symTable {
	return &symTable{intKind: intKind}
}

func (t *symTable) len() int {
	if t.intKind {
		return len(t.vals)
	}
	return len(t.names)
}

// reserve makes room for n more symbols, so that a dictionary's entries
// are appended without a series of doublings.
func (t *symTable) reserve(n int) {
	if t.intKind {
		t.vals = slices.Grow(t.vals, n)
	} else {
		t.names = slices.Grow(t.names, n)
	}
}

func (t *symTable) int(v int64) int32 {
	if t.ints == nil {
		// Increasing values (ids of a file sorted by episode) need no map.
		if n := len(t.vals); n == 0 || v > t.vals[n-1] {
			t.vals = append(t.vals, v)
			return int32(n)
		} else if v == t.vals[n-1] {
			return int32(n - 1)
		}
		t.ints = make(map[int64]int32, len(t.vals))
		for i, x := range t.vals {
			t.ints[x] = int32(i)
		}
	}
	c, ok := t.ints[v]
	if !ok {
		c = int32(len(t.vals))
		t.ints[v] = c
		t.vals = append(t.vals, v)
	}
	return c
}

// str is the code of the string b, numbered when new. Increasing strings
// (ids of a file sorted by episode) need no map, as for integers; a
// dictionary's strings come as substrings of one string (strIn).
func (t *symTable) str(b []byte) int32 {
	// The lookup does not keep the string, so it may share b's bytes.
	if c, ok := t.lookup(unsafe.String(unsafe.SliceData(b), len(b))); ok {
		return c
	}
	return t.add(string(b))
}

// strIn is str of all[lo:hi], kept as a substring when new (no
// allocation).
func (t *symTable) strIn(all string, lo, hi int) int32 {
	if c, ok := t.lookup(all[lo:hi]); ok {
		return c
	}
	return t.add(all[lo:hi])
}

// lookup is the code of s when the table has it; while the strings are
// increasing, a new string beyond the last is reported absent, and any
// other one makes the map.
func (t *symTable) lookup(s string) (int32, bool) {
	if t.strs == nil {
		n := len(t.names)
		if n == 0 || s > t.names[n-1] {
			return 0, false
		} else if s == t.names[n-1] {
			return int32(n - 1), true
		}
		t.strs = make(map[string]int32, 2*n)
		for i, x := range t.names {
			t.strs[x] = int32(i)
		}
	}
	c, ok := t.strs[s]
	return c, ok
}

// add numbers the new string s.
func (t *symTable) add(s string) int32 {
	c := int32(len(t.names))
	if t.strs != nil {
		t.strs[s] = c
	}
	t.names = append(t.names, s)
	return c
}

// code is the code of s, false when the table does not have it.
func (t *symTable) code(s string) (int32, bool) {
	if t.strs == nil {
		i, ok := slices.BinarySearch(t.names, s) // increasing
		return int32(i), ok
	}
	c, ok := t.strs[s]
	return c, ok
}

// render returns the symbols of the table as strings (integers in decimal).
func (t *symTable) render() []string {
	if !t.intKind {
		return t.names
	}
	out := make([]string, len(t.vals))
	for i, v := range t.vals {
		out[i] = strconv.FormatInt(v, 10)
	}
	return out
}
