package pomdp

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/parquet-go/parquet-go"
)

func examplesDir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(filepath.Dir(file)), "examples")
}

// examples/tiger.pomdp is the textbook tiger problem: the same model as
// tigerText, whose values are worked by hand in TestTigerByHand.
func TestExampleTigerModel(t *testing.T) {
	m, err := ParseFile(filepath.Join(examplesDir(t), "tiger.pomdp"))
	if err != nil {
		t.Fatal(err)
	}
	want := tiger(t)
	m.Name, want.Name = "", ""
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("examples/tiger.pomdp differs from the textbook tiger")
	}
	// The table of examples/README.md. H=4 by hand: listen three times
	// (−3); all three agree with probability 0.85³+0.15³ = 0.6175, and
	// opening the other door then earns 0.85³·10 − 0.15³·100 = 5.80375 in
	// total; otherwise (0.3825) the belief is 0.85 and listening (−1)
	// beats opening (−6.5): −3 + 5.80375 − 0.3825 = 2.42125.
	for H, v := range map[int]float64{1: -1, 2: -2, 3: 2.72, 4: 2.42125} {
		if got, _ := optimal(m, H); !approx(got, v) {
			t.Errorf("H=%d: V* = %v, README says %v", H, got, v)
		}
	}
}

// examples/tiger-logs.parquet holds the rows that its command in
// examples/README.md produces.
func TestExampleTigerLogs(t *testing.T) {
	dir := examplesDir(t)
	path := filepath.Join(dir, "tiger-logs.parquet")
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	m, err := ParseFile(filepath.Join(dir, "tiger.pomdp"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ParseBehavior("uniform", m)
	l, err := Simulate(context.Background(), m, 4, 5000, b, 1)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.ReadFile[LogRow](path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(l.Obs) {
		t.Fatalf("%d rows, want %d", len(rows), len(l.Obs))
	}
	for i := range rows {
		if rows[i] != l.Row(i) {
			t.Fatalf("row %d = %+v, the command gives %+v: regenerate the example (see examples/README.md)", i, rows[i], l.Row(i))
		}
	}
}
