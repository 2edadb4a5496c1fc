// Package pqcol reads whole Parquet columns as values, for the few extra
// columns (exploration tags, a target policy's propensities) that the
// ingest path does not decode.
package pqcol

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/parquet-go/parquet-go"
)

// Read returns every value of a column chunk, cloned out of the reader's
// buffers.
func Read(cc parquet.ColumnChunk) ([]parquet.Value, error) {
	pages := cc.Pages()
	defer pages.Close()
	var out []parquet.Value
	for {
		p, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if out, err = appendPage(out, p); err != nil {
			return nil, err
		}
	}
}

// appendPage appends the values of page p, cloned, to out and releases
// the page.
func appendPage(out []parquet.Value, p parquet.Page) ([]parquet.Value, error) {
	defer parquet.Release(p)
	buf := make([]parquet.Value, p.NumValues())
	n, err := p.Values().ReadValues(buf)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	for _, v := range buf[:n] {
		out = append(out, v.Clone())
	}
	return out, nil
}

// MissingColumnError is Columns' error for a file without a named column.
type MissingColumnError struct{ Path, Name string }

func (e *MissingColumnError) Error() string {
	return fmt.Sprintf("%s has no column %q", e.Path, e.Name)
}

// Columns calls each(row, values) for every row group of the Parquet file
// at path with the values of the named columns (in the order of names) and
// the index of the group's first row in the file.
func Columns(path string, names []string, each func(first int64, vals [][]parquet.Value) error) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	f, err := openParquet(path, fh)
	if err != nil {
		return err
	}
	idx, err := columnIndexes(path, f, names)
	if err != nil {
		return err
	}
	row := int64(0)
	for _, rg := range f.RowGroups() {
		vals, err := readColumns(path, rg, idx, names)
		if err != nil {
			return err
		}
		if err := each(row, vals); err != nil {
			return err
		}
		row += rg.NumRows()
	}
	return nil
}

// openParquet opens the Parquet file fh, found at path.
func openParquet(path string, fh *os.File) (*parquet.File, error) {
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	f, err := parquet.OpenFile(fh, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable Parquet file: %v", path, err)
	}
	return f, nil
}

// columnIndexes returns the leaf column index of each of the named
// columns of f, or a *MissingColumnError.
func columnIndexes(path string, f *parquet.File, names []string) ([]int, error) {
	idx := make([]int, len(names))
	for i, name := range names {
		leaf, ok := f.Schema().Lookup(name)
		if !ok {
			return nil, &MissingColumnError{Path: path, Name: name}
		}
		idx[i] = leaf.ColumnIndex
	}
	return idx, nil
}

// readColumns returns the values of the columns idx (named names) of one
// row group, checking that each holds one value per row.
func readColumns(path string, rg parquet.RowGroup, idx []int, names []string) ([][]parquet.Value, error) {
	chunks := rg.ColumnChunks()
	vals := make([][]parquet.Value, len(idx))
	for i, c := range idx {
		v, err := Read(chunks[c])
		if err != nil {
			return nil, fmt.Errorf("%s: column %q: %v", path, names[i], err)
		}
		if int64(len(v)) != rg.NumRows() {
			return nil, fmt.Errorf("%s: column %q holds %d values for %d rows", path, names[i], len(v), rg.NumRows())
		}
		vals[i] = v
	}
	return vals, nil
}

// Symbol renders a categorical value as ingest does: integers in
// decimal, strings as they are; ok is false for nulls and other types.
func Symbol(v parquet.Value) (string, bool) {
	if v.IsNull() {
		return "", false
	}
	switch v.Kind() {
	case parquet.Int32, parquet.Int64:
		return strconv.FormatInt(v.Int64(), 10), true
	case parquet.ByteArray:
		return string(v.ByteArray()), true
	}
	return "", false
}
