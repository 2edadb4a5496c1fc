package ingest

import (
	"fmt"
	"io"
	"slices"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// Bounds on what a file may claim before anything is allocated for it.
// The Parquet decoder sizes its buffers from page headers and the reader
// sizes its arrays from row counts, so a damaged header could otherwise ask
// for gigabytes.
const (
	// maxRowsPerByte bounds the rows of a file by its size: valid logs need
	// distinct (episode, step) pairs, which no encoding stores in less than
	// about a byte per row; 64 leaves a wide margin.
	maxRowsPerByte = 64
	// A page may decompress to at most max(minPageBound, pageRatio×its
	// compressed size): general-purpose codecs reach a few thousand only on
	// constant data, and pages are at most a few MiB in practice.
	minPageBound = 8 << 20
	pageRatio    = 4096
)

// checkPages walks the page headers of the column chunks ingest will read
// and checks each claimed size against the file before the decoder sees it.
func (of *openedFile) checkPages(footerLen int64) error {
	md := of.f.Metadata()
	dataEnd := of.src.size - 8 - footerLen
	if md.NumRows > maxRowsPerByte*of.src.size {
		return &FileError{File: of.src.name, Err: ErrUnreadable, Detail: fmt.Sprintf("%d rows claimed in %d bytes", md.NumRows, of.src.size)}
	}
	for i := range md.RowGroups {
		for r := range of.cols {
			if of.cols[r].index < 0 {
				continue
			}
			if err := of.checkChunk(i, &md.RowGroups[i], of.cols[r].index, of.cols[r].name, dataEnd); err != nil {
				return err
			}
		}
	}
	return nil
}

// bad is the ErrUnreadable error of the file, with a formatted detail.
func (of *openedFile) bad(format string, args ...any) error {
	return &FileError{File: of.src.name, Err: ErrUnreadable, Detail: fmt.Sprintf(format, args...)}
}

// checkChunk checks the chunk of column col (leaf index) in row group i
// (rg): its value count, its extent within the data (which ends at
// dataEnd) and each of its pages.
func (of *openedFile) checkChunk(i int, rg *format.RowGroup, index int, col string, dataEnd int64) error {
	if index >= len(rg.Columns) {
		return of.bad("row group %d has no chunk for column %q", i, col)
	}
	m := rg.Columns[index].MetaData
	if m.NumValues != rg.NumRows {
		return of.bad("column %q, row group %d: %d values for %d rows", col, i, m.NumValues, rg.NumRows)
	}
	start, end := chunkExtent(&m)
	if start < 4 || m.TotalCompressedSize < 0 || end > dataEnd || end < start {
		return of.bad("column %q, row group %d: chunk [%d,%d) outside the data", col, i, start, end)
	}
	return of.checkChunkPages(i, rg.NumRows, col, start, end)
}

// chunkExtent returns the byte range [start, end) a column chunk claims:
// from its dictionary page, when it comes first, or its first data page.
func chunkExtent(m *format.ColumnMetaData) (start, end int64) {
	start = m.DataPageOffset
	if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < start {
		start = m.DictionaryPageOffset
	}
	return start, start + m.TotalCompressedSize
}

// checkChunkPages checks each page of the chunk [start, end) of column col
// in row group i of the given rows.
func (of *openedFile) checkChunkPages(i int, rows int64, col string, start, end int64) error {
	for o := start; o < end; {
		n, err := of.checkPage(i, rows, col, o, end)
		if err != nil {
			return err
		}
		o += n
	}
	return nil
}

// checkPage checks the page at offset o of a chunk of column col ending
// at end, in row group i of the given rows: its header, its sizes and its
// value count. It returns the page's length, header included.
func (of *openedFile) checkPage(i int, rows int64, col string, o, end int64) (int64, error) {
	h, n, err := readPageHeader(of.src.r, o, end)
	if err != nil {
		return 0, of.bad("column %q, row group %d: page header at %d: %v", col, i, o, err)
	}
	comp, unc := int64(h.CompressedPageSize), int64(h.UncompressedPageSize)
	if comp < 0 || o+n+comp > end {
		return 0, of.bad("column %q, row group %d: page of %d bytes overruns its chunk", col, i, comp)
	}
	if unc < 0 || unc > max(minPageBound, pageRatio*comp) {
		return 0, of.bad("column %q, row group %d: page claims %d bytes uncompressed from %d", col, i, unc, comp)
	}
	if nv := valueCount(h); nv < 0 || nv > rows {
		return 0, of.bad("column %q, row group %d: page of %d values in a row group of %d rows", col, i, nv, rows)
	}
	return n + comp, nil
}

// valueCount is the number of values a page header claims (0 for a page
// that is neither data nor dictionary).
func valueCount(h *format.PageHeader) int64 {
	switch {
	case h.DataPageHeader.Valid:
		return int64(h.DataPageHeader.V.NumValues)
	case h.DataPageHeaderV2.Valid:
		return int64(h.DataPageHeaderV2.V.NumValues)
	case h.DictionaryPageHeader.Valid:
		return int64(h.DictionaryPageHeader.V.NumValues)
	}
	return 0
}

// readPageHeader decodes the thrift page header at off and returns it with
// its encoded length.
func readPageHeader(r io.ReaderAt, off, end int64) (*format.PageHeader, int64, error) {
	var proto thrift.CompactProtocol
	for size := int64(256); ; size *= 8 {
		n := min(size, end-off)
		buf := make([]byte, n)
		if _, err := r.ReadAt(buf, off); err != nil && err != io.EOF {
			return nil, 0, err
		}
		h := new(format.PageHeader)
		pr := proto.NewReaderFromBytes(buf)
		err := thrift.NewDecoder(pr).Decode(h)
		if err == nil {
			return h, int64(pr.BytesRead()), nil
		}
		if n == end-off || size >= 1<<20 {
			return nil, 0, err
		}
	}
}

// Page values shared by the exact path (chunk.go) and the direct path
// (fast.go): both decode a column chunk page by page, plain or through the
// row group's dictionary, and differ only in where the values go.

// numDecoder decodes the non-null values of a numeric column's pages. A
// row group's dictionary is decoded once, when its first page arrives.
type numDecoder[V int64 | float64] struct {
	plain    func(p parquet.Page, n int, buf []V) ([]V, error) // intValues or floatValues
	reuse    bool                                              // plain converts into buf rather than returning the page's memory
	buf      []V
	lastDict parquet.Dictionary
	dictVals []V
}

// intDecoder decodes an integer column.
func intDecoder(spec colSpec) *numDecoder[int64] {
	return &numDecoder[int64]{
		plain: func(p parquet.Page, n int, buf []int64) ([]int64, error) { return intValues(p, spec.phys, n, buf) },
		reuse: spec.phys == parquet.Int32,
	}
}

// floatDecoder decodes a numeric column as float64.
func floatDecoder(spec colSpec) *numDecoder[float64] {
	return &numDecoder[float64]{
		plain: func(p parquet.Page, n int, buf []float64) ([]float64, error) {
			return floatValues(p, spec.phys, spec.scale, n, buf)
		},
		reuse: spec.phys != parquet.Double,
	}
}

// dictionary returns the values of dict; fresh reports that dict was not
// the dictionary of the previous call, so its values were just decoded.
func (d *numDecoder[V]) dictionary(dict parquet.Dictionary) (vals []V, fresh bool, err error) {
	if dict == d.lastDict {
		return d.dictVals, false, nil
	}
	dv, err := d.plain(dict.Page(), dict.Len(), nil)
	if err != nil {
		return nil, false, err
	}
	d.dictVals, d.lastDict = append(d.dictVals[:0], dv...), dict
	return d.dictVals, true, nil
}

// plainValues returns the n values of a plain-encoded page. They are valid
// until the next call.
func (d *numDecoder[V]) plainValues(p parquet.Page, n int) ([]V, error) {
	v, err := d.plain(p, n, d.buf)
	if err != nil {
		return nil, err
	}
	if d.reuse {
		d.buf = v
	}
	return v, nil
}

// values returns the n non-null values of page p, gathered through its
// dictionary when it has one. They are valid until the next call.
func (d *numDecoder[V]) values(p parquet.Page, n int) ([]V, error) {
	dict := p.Dictionary()
	if dict == nil {
		return d.plainValues(p, n)
	}
	dv, _, err := d.dictionary(dict)
	if err != nil {
		return nil, err
	}
	idx, err := dictIndexes(p, dict, n)
	if err != nil {
		return nil, err
	}
	d.buf = slices.Grow(d.buf[:0], len(idx)) // one allocation per page size, not a doubling series
	for _, i := range idx {
		d.buf = append(d.buf, dv[i])
	}
	return d.buf, nil
}

// dictSymbols appends to dst the chunk-local codes t assigns to the
// entries of a categorical column's dictionary, in dictionary order.
func dictSymbols(dst []int32, dict parquet.Dictionary, spec colSpec, t *symTable, ibuf []int64) ([]int32, error) {
	dp := dict.Page()
	t.reserve(dict.Len())
	dst = slices.Grow(dst, dict.Len())
	if t.intKind {
		dv, err := intValues(dp, spec.phys, dict.Len(), ibuf)
		if err != nil {
			return nil, err
		}
		for _, v := range dv {
			dst = append(dst, t.int(v))
		}
		return dst, nil
	}
	data, off, err := byteArrays(dp, dict.Len())
	if err != nil {
		return nil, err
	}
	if dict.Len() == 0 {
		return dst, nil
	}
	all := string(data[off[0]:off[dict.Len()]]) // one allocation for the new symbols
	for i := range dict.Len() {
		dst = append(dst, t.strIn(all, int(off[i]-off[0]), int(off[i+1]-off[0])))
	}
	return dst, nil
}
