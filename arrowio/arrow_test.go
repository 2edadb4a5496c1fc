package arrowio

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

func TestArrowRoundTripNoLeak(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	path := filepath.Join(t.TempDir(), "t.arrow")
	in := Table{Meta: map[string]string{"psrlcb.run_id": "r1"}, Columns: []Column{
		{Name: "i64", Int64: []int64{1, -2, 3}},
		{Name: "i32", Int32: []int32{4, 5, 6}},
		{Name: "f", Float64: []float64{0.5, math.NaN(), -1e300}},
		{Name: "s", String: []string{"a", "", "ü"}},
		{Name: "b", Bool: []bool{true, false, true}},
	}}
	if err := WriteArrowWith(mem, path, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadArrow(path)
	if err != nil {
		t.Fatal(err)
	}
	if out.Meta["psrlcb.schema_version"] != SchemaVersion || out.Meta["psrlcb.run_id"] != "r1" {
		t.Errorf("metadata = %v", out.Meta)
	}
	if out.Rows() != 3 || len(out.Columns) != 5 {
		t.Fatalf("rows %d cols %d", out.Rows(), len(out.Columns))
	}
	c, _ := out.Column("f")
	if c.Float64[0] != 0.5 || !math.IsNaN(c.Float64[1]) || c.Float64[2] != -1e300 {
		t.Errorf("float column = %v", c.Float64)
	}
	s, _ := out.Column("s")
	if strings.Join(s.String, "|") != "a||ü" {
		t.Errorf("string column = %q", s.String)
	}
	b, _ := out.Column("b")
	if !b.Bool[0] || b.Bool[1] || !b.Bool[2] {
		t.Errorf("bool column = %v", b.Bool)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestArrowRejectsRaggedColumns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.arrow")
	err := WriteArrow(path, Table{Columns: []Column{{Name: "a", Int64: []int64{1}}, {Name: "b", Int64: []int64{1, 2}}}})
	if err == nil {
		t.Fatal("ragged table written")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("file exists after failed write")
	}
}

// Non-finite floats are written as nulls (no reader meets NaN or ±Inf) and
// read back as NaN.
func TestArrowNonFiniteAsNull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.arrow")
	in := Table{Columns: []Column{{Name: "f", Float64: []float64{1, math.Inf(1), math.NaN(), math.Inf(-1)}}}}
	if err := WriteArrow(path, in); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec, err := r.Record(0)
	if err != nil {
		t.Fatal(err)
	}
	col := rec.Column(0).(*array.Float64)
	if col.NullN() != 3 || col.IsNull(0) || col.Value(0) != 1 {
		t.Errorf("nulls = %d (want 3), first = %v", col.NullN(), col.Value(0))
	}
	for i := 1; i < 4; i++ {
		if !col.IsNull(i) {
			t.Errorf("row %d: %v written, want null", i, col.Value(i))
		}
	}
	out, err := ReadArrow(path)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := out.Column("f")
	if c.Float64[0] != 1 || !math.IsNaN(c.Float64[1]) || !math.IsNaN(c.Float64[2]) || !math.IsNaN(c.Float64[3]) {
		t.Errorf("read back %v", c.Float64)
	}
}

// TestMergeMeta: b's entries win, a's others stay, and neither argument
// changes.
func TestMergeMeta(t *testing.T) {
	a := map[string]string{"x": "1", "y": "2"}
	b := map[string]string{"y": "3", "z": "4"}
	got := MergeMeta(a, b)
	want := map[string]string{"x": "1", "y": "3", "z": "4"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if a["y"] != "2" || len(a) != 2 || len(b) != 2 {
		t.Fatalf("arguments changed: %v %v", a, b)
	}
}
