package estimate

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/ingest"
)

// TestModelWrittenInBatches: model.arrow written batch by batch (a model
// of more rows than one batch) reads back as the whole table, row for
// row, and batches of any size concatenate to it.
func TestModelWrittenInBatches(t *testing.T) {
	m := randomModel(20, 20, 4, 3, true, []float64{0, 1}, 9)
	rows := ModelRows{Model: m, Merged: []ingest.MergedSymbol{{Symbol: "rare", Count: 3}}}
	whole := rows.Table()
	if whole.Rows() <= modelBatchRows {
		t.Fatalf("%d rows: the model must span several batches", whole.Rows())
	}
	path := filepath.Join(t.TempDir(), "model.arrow")
	if err := rows.Write(path, map[string]string{"psrlcb.run_id": "x"}); err != nil {
		t.Fatal(err)
	}
	back, err := arrowio.ReadArrow(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Meta["psrlcb.run_id"] != "x" || back.Meta["psrlcb.states"] != "20" {
		t.Errorf("metadata %v", back.Meta)
	}
	var small []arrowio.Table
	rows.each(1000, func(b arrowio.Table) error { small = append(small, b); return nil })
	for i, c := range whole.Columns {
		got, n := back.Columns[i], 0
		for _, b := range small {
			n += b.Rows()
		}
		if c.Name != got.Name || n != whole.Rows() || back.Rows() != whole.Rows() {
			t.Fatalf("column %s: %d rows read, %d in batches, %d whole", c.Name, back.Rows(), n, whole.Rows())
		}
		for r := 0; r < whole.Rows(); r += 977 {
			if fmt.Sprint(cell(c, r)) != fmt.Sprint(cell(got, r)) {
				t.Fatalf("column %s row %d: %v read back, %v written", c.Name, r, cell(got, r), cell(c, r))
			}
		}
	}
}

// cell is one value of a column, for comparison.
func cell(c arrowio.Column, r int) any {
	switch {
	case c.String != nil:
		return c.String[r]
	case c.Int32 != nil:
		return c.Int32[r]
	case c.Float64 != nil:
		return c.Float64[r]
	}
	return nil
}
