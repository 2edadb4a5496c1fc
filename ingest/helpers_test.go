package ingest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// table is a small Parquet file to write in tests: named columns with
// their node type and the rows (nil is a null).
type table struct {
	names []string
	nodes []parquet.Node
	rows  [][]any
}

func (tb *table) col(name string, n parquet.Node) *table {
	tb.names = append(tb.names, name)
	tb.nodes = append(tb.nodes, n)
	return tb
}

func (tb *table) add(vals ...any) *table {
	tb.rows = append(tb.rows, vals)
	return tb
}

// logTable is the default schema: string ids and symbols, float64 numbers.
func logTable(withProp, withTerm bool) *table {
	tb := &table{}
	tb.col("episode_id", parquet.String()).col("step", parquet.Int(64)).
		col("observation", parquet.String()).col("action", parquet.String()).
		col("reward", parquet.Leaf(parquet.DoubleType))
	if withProp {
		tb.col("propensity", parquet.Leaf(parquet.DoubleType))
	}
	if withTerm {
		tb.col("terminal", parquet.Leaf(parquet.BooleanType))
	}
	return tb
}

// write writes the table with at most rowGroup rows per row group.
func (tb *table) write(t testing.TB, path string, rowGroup int) string {
	t.Helper()
	g := parquet.Group{}
	for i, n := range tb.names {
		g[n] = tb.nodes[i]
	}
	schema := parquet.NewSchema("logs", g)
	leaf := map[string]int{}
	for i, p := range schema.Columns() {
		leaf[p[0]] = i
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opts := []parquet.WriterOption{schema}
	if rowGroup > 0 {
		opts = append(opts, parquet.MaxRowsPerRowGroup(int64(rowGroup)), parquet.PageBufferSize(256))
	}
	w := parquet.NewWriter(f, opts...)
	for _, r := range tb.rows {
		row := make(parquet.Row, len(tb.names))
		for i, n := range tb.names {
			j := leaf[n]
			def := 0
			if tb.nodes[i].Optional() {
				def = 1
			}
			if r[i] == nil {
				row[j] = parquet.NullValue().Level(0, 0, j)
				continue
			}
			row[j] = parquet.ValueOf(r[i]).Level(0, def, j)
		}
		if _, err := w.WriteRows([]parquet.Row{row}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func tmpPath(t testing.TB, name string) string {
	return filepath.Join(t.TempDir(), name)
}
