package estimate_test

import (
	"math"
	"testing"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/estimate/estimatetest"
	"github.com/psrlcb/psrlcb/ingest"
)

// TestModelTableMerged: every observation --max-observations merged is one
// "other" row (symbol, count) after the model's rows, every column of the
// same length; the metadata names the model form.
func TestModelTableMerged(t *testing.T) {
	m := estimatetest.RandomModel(2, 3, 2, 2, true, []float64{0, 1}, 1)
	merged := []ingest.MergedSymbol{{Symbol: "x", Count: 7}, {Symbol: "y", Count: 3}}
	tab := estimate.ModelRows{Model: m, Merged: merged}.Table()
	col := func(name string) arrowio.Column {
		for _, c := range tab.Columns {
			if c.Name == name {
				return c
			}
		}
		t.Fatalf("no column %s", name)
		return arrowio.Column{}
	}
	n := len(col("param").String)
	for _, c := range tab.Columns {
		if l := len(c.String) + len(c.Int32) + len(c.Float64); l != n {
			t.Fatalf("column %s has %d rows, want %d", c.Name, l, n)
		}
	}
	for i, s := range merged {
		r := n - len(merged) + i
		if col("param").String[r] != "other" || col("observation").String[r] != s.Symbol ||
			col("value").Float64[r] != float64(s.Count) || col("step").Int32[r] != -1 || !math.IsNaN(col("reward").Float64[r]) {
			t.Fatalf("row %d is not the merged symbol %v", r, s)
		}
	}
	if tab.Meta["psrlcb.model_form"] != "full" {
		t.Fatalf("model form %q", tab.Meta["psrlcb.model_form"])
	}
}
