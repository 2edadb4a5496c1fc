package ingest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/psrlcb/psrlcb/errkind"
)

// symbolTable is a one-episode log whose role column (observation, action
// or episode_id) is an integer column when intCol is set.
func symbolTable(role string, intCol bool, id string) *table {
	tb := &table{}
	cols := []string{"episode_id", "step", "observation", "action", "reward"}
	for _, c := range cols {
		switch {
		case c == "step":
			tb.col(c, parquet.Int(64))
		case c == "reward":
			tb.col(c, parquet.Leaf(parquet.DoubleType))
		case c == role && intCol:
			tb.col(c, parquet.Int(64))
		default:
			tb.col(c, parquet.String())
		}
	}
	val := func(c string, v int64) any {
		if c == role && intCol {
			return v
		}
		if c == "episode_id" {
			return id
		}
		return "1"
	}
	for h := int64(1); h <= 2; h++ {
		tb.add(val("episode_id", int64(id[len(id)-1]-'0')), h, val("observation", 1), val("action", 1), 0.5)
	}
	return tb
}

// TestSymbolKindsAgreeAcrossFiles: an integer symbol column in one file
// and a string one in another would merge 1 and "1" into one symbol; it
// is a data error naming both files and both types.
func TestSymbolKindsAgreeAcrossFiles(t *testing.T) {
	for _, role := range []string{"observation", "action", "episode_id"} {
		dir := t.TempDir()
		a := symbolTable(role, true, "e1").write(t, filepath.Join(dir, "a.parquet"), 0)
		b := symbolTable(role, false, "e2").write(t, filepath.Join(dir, "b.parquet"), 0)
		_, err := Read(context.Background(), []string{a, b}, Options{})
		if !errors.Is(err, ErrInconsistentCols) || !errors.Is(err, errkind.Data) {
			t.Errorf("%s: err %v, want ErrInconsistentCols", role, err)
			continue
		}
		for _, want := range []string{"a.parquet", "b.parquet", "integer", "string", role} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: message lacks %q: %v", role, want, err)
			}
		}
		// One kind in both files reads.
		c := symbolTable(role, true, "e3").write(t, filepath.Join(dir, "c.parquet"), 0)
		if _, err := Read(context.Background(), []string{a, c}, Options{}); err != nil {
			t.Errorf("%s: same kinds in both files refused: %v", role, err)
		}
	}
}

// TestSameFileTwice: a file given twice (also through another path or a
// link) is named as such, not reported as duplicate steps.
func TestSameFileTwice(t *testing.T) {
	dir := t.TempDir()
	a := symbolTable("observation", false, "e1").write(t, filepath.Join(dir, "a.parquet"), 0)
	link := filepath.Join(dir, "link.parquet")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	for _, files := range [][]string{{a, a}, {a, link}, {a, filepath.Join(dir, ".", "a.parquet")}} {
		_, err := Read(context.Background(), files, Options{})
		if !errors.Is(err, ErrSameFile) || !errors.Is(err, errkind.Options) {
			t.Errorf("%v: err %v, want ErrSameFile", files, err)
			continue
		}
		if !strings.Contains(err.Error(), "given twice") || strings.Contains(err.Error(), "duplicate step") {
			t.Errorf("%v: message %v", files, err)
		}
	}
}
