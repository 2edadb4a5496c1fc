package arrowio

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/psrlcb/psrlcb/internal/atomicfile"
)

// SchemaVersion is written as the schema metadata key
// "psrlcb.schema_version" of every Arrow file; it changes when a column is
// renamed, removed or changes meaning.
const SchemaVersion = "1"

// Column is one column of a Table: exactly one of the slices is set.
// Non-finite Float64 values (NaN, ±Inf) are written as nulls and read
// back as NaN.
type Column struct {
	Name    string
	Int64   []int64
	Int32   []int32
	Float64 []float64
	String  []string
	Bool    []bool
}

func (c Column) len() int {
	switch {
	case c.Int64 != nil:
		return len(c.Int64)
	case c.Int32 != nil:
		return len(c.Int32)
	case c.Float64 != nil:
		return len(c.Float64)
	case c.String != nil:
		return len(c.String)
	case c.Bool != nil:
		return len(c.Bool)
	}
	return 0
}

func (c Column) dataType() arrow.DataType {
	switch {
	case c.Int64 != nil:
		return arrow.PrimitiveTypes.Int64
	case c.Int32 != nil:
		return arrow.PrimitiveTypes.Int32
	case c.String != nil:
		return arrow.BinaryTypes.String
	case c.Bool != nil:
		return arrow.FixedWidthTypes.Boolean
	}
	return arrow.PrimitiveTypes.Float64
}

// finiteMask is the validity mask of a float column: NaN and ±Inf are
// written as nulls, so no reader meets a non-finite number (pandas reads
// them back as NaN, polars as null); nil when every value is finite.
func finiteMask(v []float64) []bool {
	var valid []bool
	for i, x := range v {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			continue
		}
		if valid == nil {
			valid = make([]bool, len(v))
			for j := range valid {
				valid[j] = true
			}
		}
		valid[i] = false
	}
	return valid
}

// OrEmpty is s, or an empty slice for nil: a Column's type is the slice
// that is set, so a column with no rows needs a non-nil empty slice.
func OrEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Table is a set of equal-length columns with schema metadata.
type Table struct {
	Columns []Column
	Meta    map[string]string
}

// Rows is the number of rows (the length of the first column).
func (t Table) Rows() int {
	if len(t.Columns) == 0 {
		return 0
	}
	return t.Columns[0].len()
}

// WriteArrow writes t as an Arrow IPC file (the random-access "file"
// flavour, uncompressed, no dictionary columns, so pyarrow, pandas, polars
// and the JavaScript reader open it directly) at path, atomically: the
// bytes go to a temporary file in the same directory that is renamed into
// place only after a successful close.
func WriteArrow(path string, t Table) error {
	return WriteArrowWith(memory.DefaultAllocator, path, t)
}

// WriteArrowWith is WriteArrow with an explicit allocator (tests pass a
// checked allocator to prove nothing leaks).
func WriteArrowWith(mem memory.Allocator, path string, t Table) error {
	return writeBatches(mem, path, t.Meta, func(emit func(Table) error) error { return emit(t) })
}

// WriteArrowBatches writes an Arrow IPC file record batch by record batch:
// each(emit) calls emit with successive tables of the same columns, whose
// rows follow each other in the file, so a table of millions of rows is
// never held whole, neither as Go slices nor as Arrow arrays. meta is the
// schema metadata (the tables' own Meta is ignored). The file appears
// atomically, and only when every batch was written; each must emit at
// least one table (the first fixes the columns' types).
func WriteArrowBatches(path string, meta map[string]string, each func(emit func(Table) error) error) error {
	return writeBatches(memory.DefaultAllocator, path, meta, each)
}

// batchWriter writes the record batches of one Arrow file; the first
// table fixes the schema and opens the writer.
type batchWriter struct {
	mem    memory.Allocator
	path   string
	meta   map[string]string
	f      *os.File
	schema *arrow.Schema
	w      *ipc.FileWriter
}

// writeBatches is WriteArrowBatches with an explicit allocator.
func writeBatches(mem memory.Allocator, path string, meta map[string]string, each func(emit func(Table) error) error) error {
	return atomicfile.Write(path, func(f *os.File) error {
		bw := &batchWriter{mem: mem, path: path, meta: meta, f: f}
		err := each(bw.emit)
		if bw.w == nil {
			if err == nil {
				err = fmt.Errorf("%s: no table to write", filepath.Base(path))
			}
			return err
		}
		if err != nil {
			bw.w.Close()
			return err
		}
		return bw.w.Close()
	})
}

// emit writes t as the next record batch.
func (bw *batchWriter) emit(t Table) error {
	if bw.schema == nil {
		var err error
		if bw.schema, err = schemaOf(bw.path, t, bw.meta); err != nil {
			return err
		}
		if bw.w, err = ipc.NewFileWriter(bw.f, ipc.WithSchema(bw.schema), ipc.WithAllocator(bw.mem)); err != nil {
			return err
		}
	}
	rec, err := record(bw.mem, bw.path, bw.schema, t)
	if err != nil {
		return err
	}
	defer rec.Release()
	return bw.w.Write(rec)
}

// schemaOf is the Arrow schema of t's columns with the metadata meta (and
// the schema version).
func schemaOf(path string, t Table, meta map[string]string) (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(t.Columns))
	for i, c := range t.Columns {
		fields[i] = arrow.Field{Name: c.Name, Type: c.dataType()}
	}
	keys := []string{"psrlcb.schema_version"}
	vals := []string{SchemaVersion}
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		if k == "psrlcb.schema_version" {
			continue
		}
		keys = append(keys, k)
		vals = append(vals, meta[k])
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(fields, &md), nil
}

// record builds one record batch of t under schema (whose columns t must
// have, in order, with the same types).
func record(mem memory.Allocator, path string, schema *arrow.Schema, t Table) (arrow.Record, error) {
	if err := checkBatch(path, schema, t); err != nil {
		return nil, err
	}
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i, c := range t.Columns {
		c.appendTo(b.Field(i))
	}
	return b.NewRecord(), nil
}

// appendTo appends the column's values to the record builder's field fb
// of the column's type (non-finite floats as nulls).
func (c Column) appendTo(fb array.Builder) {
	switch fb := fb.(type) {
	case *array.Int64Builder:
		fb.AppendValues(c.Int64, nil)
	case *array.Int32Builder:
		fb.AppendValues(c.Int32, nil)
	case *array.Float64Builder:
		fb.AppendValues(c.Float64, finiteMask(c.Float64))
	case *array.StringBuilder:
		fb.AppendValues(c.String, nil)
	case *array.BooleanBuilder:
		fb.AppendValues(c.Bool, nil)
	}
}

// checkBatch checks that t has the columns of schema, in order, with the
// same types, all of the same length.
func checkBatch(path string, schema *arrow.Schema, t Table) error {
	n := t.Rows()
	if len(t.Columns) != len(schema.Fields()) {
		return fmt.Errorf("%s: a batch of %d columns, want %d", filepath.Base(path), len(t.Columns), len(schema.Fields()))
	}
	for i, c := range t.Columns {
		if c.len() != n {
			return fmt.Errorf("%s: column %q has %d rows, want %d", filepath.Base(path), c.Name, c.len(), n)
		}
		if f := schema.Field(i); f.Name != c.Name || !arrow.TypeEqual(f.Type, c.dataType()) {
			return fmt.Errorf("%s: batch column %q (%s) where the file has %q (%s)", filepath.Base(path), c.Name, c.dataType(), f.Name, f.Type)
		}
	}
	return nil
}

// MergeMeta returns schema metadata with a's entries, overwritten by
// b's where both have a key (a new map; neither argument changes).
func MergeMeta(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	maps.Copy(out, a)
	maps.Copy(out, b)
	return out
}

// ReadArrow reads an Arrow IPC file written by WriteArrow back into a
// Table (all record batches concatenated). psrlcb reads its own outputs
// with it (a model, a controller, a policy table, `psrlcb inspect DIR`),
// and so do the tests.
func ReadArrow(path string) (Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return Table{}, err
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		return Table{}, fmt.Errorf("%s: %w", path, err)
	}
	defer r.Close()
	t, err := emptyTable(path, r.Schema())
	if err != nil {
		return Table{}, err
	}
	for b := 0; b < r.NumRecords(); b++ {
		rec, err := r.Record(b)
		if err != nil {
			return Table{}, fmt.Errorf("%s: batch %d: %w", path, b, err)
		}
		for i := range t.Columns {
			t.Columns[i].appendArray(rec.Column(i))
		}
	}
	return t, nil
}

// emptyTable is the Table of schema's metadata and columns, without rows;
// it fails on a column type a Column cannot hold.
func emptyTable(path string, schema *arrow.Schema) (Table, error) {
	t := Table{Meta: map[string]string{}}
	for i, k := range schema.Metadata().Keys() {
		t.Meta[k] = schema.Metadata().Values()[i]
	}
	t.Columns = make([]Column, len(schema.Fields()))
	for i, fd := range schema.Fields() {
		t.Columns[i].Name = fd.Name
		if !t.Columns[i].setEmpty(fd.Type.ID()) {
			return Table{}, fmt.Errorf("%s: column %q has unsupported type %s", path, fd.Name, fd.Type)
		}
	}
	return t, nil
}

// setEmpty sets the empty slice of the Arrow type id, or reports false for
// a type a Column cannot hold.
func (c *Column) setEmpty(id arrow.Type) bool {
	switch id {
	case arrow.INT64:
		c.Int64 = []int64{}
	case arrow.INT32:
		c.Int32 = []int32{}
	case arrow.FLOAT64:
		c.Float64 = []float64{}
	case arrow.STRING:
		c.String = []string{}
	case arrow.BOOL:
		c.Bool = []bool{}
	default:
		return false
	}
	return true
}

// appendArray appends the values of one record batch's column a (the
// nulls of a float column as NaN).
func (c *Column) appendArray(a arrow.Array) {
	switch a := a.(type) {
	case *array.Int64:
		c.Int64 = append(c.Int64, a.Int64Values()...)
	case *array.Int32:
		c.Int32 = append(c.Int32, a.Int32Values()...)
	case *array.Float64:
		for j, x := range a.Float64Values() {
			if a.IsNull(j) {
				x = math.NaN()
			}
			c.Float64 = append(c.Float64, x)
		}
	case *array.String:
		for j := 0; j < a.Len(); j++ {
			c.String = append(c.String, a.Value(j))
		}
	case *array.Boolean:
		for j := 0; j < a.Len(); j++ {
			c.Bool = append(c.Bool, a.Value(j))
		}
	}
}

// Column returns the column named name, or false.
func (t Table) Column(name string) (Column, bool) {
	for _, c := range t.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}
