package report

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

func TestFloatJSON(t *testing.T) {
	b, err := json.Marshal(struct{ A, B, C Float }{1.5, Float(math.Inf(1)), Float(math.NaN())})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"A":1.5,"B":null,"C":null}` {
		t.Errorf("got %s", b)
	}
	var back struct{ A, C Float }
	if err := json.Unmarshal(b, &back); err != nil || back.A != 1.5 || !math.IsNaN(float64(back.C)) {
		t.Errorf("back = %+v, %v", back, err)
	}
}

func TestOutDirCommitAndAbort(t *testing.T) {
	root := t.TempDir()
	final := filepath.Join(root, "run")
	o, err := CreateOutDir(final, false)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(o.Path("x"), []byte("1"), 0o644)
	if _, err := os.Stat(final); !os.IsNotExist(err) {
		t.Fatal("final directory visible before commit")
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateOutDir(final, false); err == nil {
		t.Fatal("existing directory accepted without force")
	}
	o2, err := CreateOutDir(final, true)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(o2.Path("y"), []byte("2"), 0o644)
	o2.Abort()
	if _, err := os.Stat(filepath.Join(final, "x")); err != nil {
		t.Fatal("aborted run damaged the previous result")
	}
	o3, _ := CreateOutDir(final, true)
	os.WriteFile(o3.Path("y"), []byte("3"), 0o644)
	if err := o3.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(final, "x")); !os.IsNotExist(err) {
		t.Error("forced replace kept old files")
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("leftovers in parent: %v", entries)
	}
}

func TestWriteTablesAndHTML(t *testing.T) {
	dir := t.TempDir()
	run := &Run{RunID: "abc",
		Coverage:   []CoverageRow{{Step: 1, LoggedHistories: 3, Iota: 0.5, CoveredMass: 1, CInf: 1}, {Step: 2, LoggedHistories: 9, Iota: 0.5, CoveredMass: 0.8, CInf: 2.5}},
		Episodes:   EpisodeRows{ID: []string{"1", "2"}, Split: []int32{0, 1}, LogLik: []float64{-1, -2}, Bonus: []float64{0.1, 0.2}, Weight: []float64{2, 0}},
		Trace:      []TraceRow{{2, 0, 0, -10}, {2, 0, 1, -9}, {2, 1, 0, -11}, {2, 1, 1, -9.5}},
		Ranks:      []RankRow{{1, -12, -13, false}, {2, -9, -9.5, true}},
		Alphas:     []AlphaRow{{Alpha: 0, ValueReward: .6, LCB: .6, IW: .55, IWLo: .5, IWHi: .6}, {Alpha: 1, ValueReward: .6, ValueBonus: .1, LCB: .5, IW: .55, IWLo: .5, IWHi: .6, Chosen: true}},
		BonusSteps: [][]float64{{0.1, 0.2, 0.3}, {0.2, 0.4}},
		Model:      Table{Columns: []Column{{Name: "x", Float64: []float64{1}}}},
	}
	run.Manifest.Headline = Headline{LCB: .5, ModelValue: .6, IWValue: .55, IWLow: .5, IWHigh: .6, CInf: 2.5, ESS: 100, PlanExact: true, Rank: 2}
	if err := WriteTables(dir, run); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{CoverageFile, EpisodesFile, FitFile, AlphaFile, ModelFile} {
		tb, err := ReadArrow(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tb.Meta["psrlcb.run_id"] != "abc" {
			t.Errorf("%s: run id metadata %q", name, tb.Meta["psrlcb.run_id"])
		}
	}
	fit, _ := ReadArrow(filepath.Join(dir, FitFile))
	if fit.Rows() != 6 {
		t.Errorf("fit.arrow rows = %d, want 4 trace + 2 rank", fit.Rows())
	}
	html, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(html), "<svg"); n != 6 {
		t.Errorf("report.html has %d plots, want 6", n)
	}
	if !strings.Contains(string(html), "Coverage is good") {
		t.Errorf("verdict missing from report.html")
	}
	m, err := ReadManifest(dir)
	if err != nil || m.Headline.CInf != 2.5 {
		t.Errorf("manifest = %+v, %v", m, err)
	}
}
