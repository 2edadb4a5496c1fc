package policy

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// sampleTree is a small tree with two levels and every column set.
func sampleTree() *Policy {
	return &Policy{Horizon: 3, Nodes: []Node{
		{ID: 0, Parent: -1, Step: 1, Obs: "init", Action: "listen", Fallback: "listen", ReachProb: 1, ValueReward: 0.5, ValueBonus: 0.25, ValueLCB: 0.25},
		{ID: 1, Parent: 0, Step: 2, Obs: "hear-left", Action: "open-right", Fallback: "listen", ReachProb: 0.5, ValueReward: 0.75, ValueBonus: 0.125, ValueLCB: 0.625},
		{ID: 2, Parent: 0, Step: 2, Obs: "hear-right", Action: "open-left", Fallback: "listen", ReachProb: 0.5, ValueReward: 0.7, ValueBonus: 0.1, ValueLCB: 0.6},
		{ID: 3, Parent: 1, Step: 3, Obs: "hear-left", Action: "listen", Fallback: "", ReachProb: 0.25, ValueReward: -1e-3, ValueBonus: 0, ValueLCB: -1e-3},
	}}
}

func TestFileRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	want := sampleTree()
	meta := map[string]string{"psrlcb.run_id": "run-42", MetaSchemaVersion: "ignored"}
	if err := writeFileWith(mem, path, want, meta); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	for _, p := range []string{path, dir} { // a file or its directory
		got, gotMeta, err := readFileWith(mem, p)
		if err != nil {
			t.Fatal(err)
		}
		if got.Horizon != 3 || !reflect.DeepEqual(got.Nodes, want.Nodes) {
			t.Fatalf("round trip changed the policy:\n got %+v\nwant %+v", got, want)
		}
		wantMeta := map[string]string{"psrlcb.run_id": "run-42", MetaSchemaVersion: "1", MetaHorizon: "3", MetaBatchIndex: "65536,-1"}
		if !reflect.DeepEqual(gotMeta, wantMeta) {
			t.Errorf("metadata %v, want %v", gotMeta, wantMeta)
		}
		// The read tree works with the lookup rule.
		if a, node, ok := got.Lookup([]string{"init", "hear-left", "hear-left"}); !ok || a != "listen" || node != 3 {
			t.Errorf("Lookup = %q %d %v", a, node, ok)
		}
	}
}

func TestFileRoundTripManyBatches(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	// A chain root → … plus a wide level: more rows than one batch.
	n := fileBatchRows*2 + 5
	p := &Policy{Horizon: 2, Nodes: make([]Node, n)}
	p.Nodes[0] = Node{ID: 0, Parent: -1, Step: 1, Obs: "init", Action: "a"}
	for i := 1; i < n; i++ {
		p.Nodes[i] = Node{ID: int64(i), Parent: 0, Step: 2, Obs: "o" + itoa(i), Action: "b", ReachProb: 1 / float64(n)}
	}
	path := filepath.Join(t.TempDir(), "big.arrow")
	if err := writeFileWith(mem, path, p, nil); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	if r.NumRecords() != 3 {
		t.Errorf("%d record batches, want 3", r.NumRecords())
	}
	r.Close()
	f.Close()
	got, _, err := readFileWith(mem, path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Nodes, p.Nodes) {
		t.Fatal("many-batch round trip changed the policy")
	}
}

func TestFileEmptyPolicy(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := WriteFile(path, &Policy{Horizon: 4}, nil); err != nil {
		t.Fatal(err)
	}
	got, _, err := ReadFile(path)
	if err != nil || len(got.Nodes) != 0 || got.Horizon != 4 {
		t.Fatalf("empty policy read back as %+v, %v", got, err)
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func TestWriteFileRejectsBadTree(t *testing.T) {
	p := sampleTree()
	p.Nodes[2].Parent = 5
	path := filepath.Join(t.TempDir(), FileName)
	if err := WriteFile(path, p, nil); !errors.Is(err, ErrFile) {
		t.Fatalf("err = %v, want ErrFile", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a file was written for an invalid tree")
	}
}

// writeRaw writes an Arrow IPC file with arbitrary columns, to build
// malformed policy files.
func writeRaw(t *testing.T, path string, fields []arrow.Field, meta map[string]string, fill func(b *array.RecordBuilder)) {
	t.Helper()
	var keys, vals []string
	for k, v := range meta {
		keys = append(keys, k)
		vals = append(vals, v)
	}
	md := arrow.NewMetadata(keys, vals)
	schema := arrow.NewSchema(fields, &md)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	fill(b)
	rec := b.NewRecord()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// fillNodes appends nodes in the standard layout.
func fillNodes(nodes []Node) func(b *array.RecordBuilder) {
	return func(b *array.RecordBuilder) {
		for _, n := range nodes {
			b.Field(0).(*array.Int64Builder).Append(n.ID)
			b.Field(1).(*array.Int64Builder).Append(n.Parent)
			b.Field(2).(*array.Int32Builder).Append(n.Step)
			b.Field(3).(*array.StringBuilder).Append(n.Obs)
			b.Field(4).(*array.StringBuilder).Append(n.Action)
			b.Field(5).(*array.StringBuilder).Append(n.Fallback)
			for k, v := range []float64{n.ReachProb, n.ValueReward, n.ValueBonus, n.ValueLCB} {
				b.Field(6 + k).(*array.Float64Builder).Append(v)
			}
		}
	}
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	ok := sampleTree().Nodes
	mod := func(f func(n []Node)) []Node {
		n := append([]Node(nil), ok...)
		f(n)
		return n
	}
	cases := []struct {
		name   string
		fields []arrow.Field
		meta   map[string]string
		fill   func(b *array.RecordBuilder)
		want   string
	}{
		{"node-not-row", fileFields, nil, fillNodes(mod(func(n []Node) { n[2].ID = 7 })), "row 2 (node 7): node is 7, want the row index 2"},
		{"parent-after-child", fileFields, nil, fillNodes(mod(func(n []Node) { n[1].Parent = 3 })), "row 1 (node 1): parent 3 does not precede"},
		{"step-jump", fileFields, nil, fillNodes(mod(func(n []Node) { n[3].Step = 4 })), "row 3 (node 3): step 4, but its parent 1 is at step 2"},
		{"root-step", fileFields, nil, fillNodes(mod(func(n []Node) { n[0].Step = 2 })), "row 0 (node 0): step 2 under parent −1"},
		{"duplicate-child", fileFields, nil, fillNodes(mod(func(n []Node) { n[2].Obs = "hear-left" })), "row 2 (node 2): observation \"hear-left\" repeats row 1"},
		{"bad-version", fileFields, map[string]string{MetaSchemaVersion: "2"}, fillNodes(ok), "schema version \"2\""},
		{"bad-horizon", fileFields, map[string]string{MetaHorizon: "2"}, fillNodes(ok), "not a horizon ≥ the deepest step 3"},
		{"missing-column", fileFields[:9], nil, func(b *array.RecordBuilder) {}, "column \"value_lcb\" is missing"},
		{"wrong-type", append(append([]arrow.Field{}, fileFields[:2]...), append([]arrow.Field{{Name: "step", Type: arrow.PrimitiveTypes.Int64}}, fileFields[3:]...)...), nil, func(b *array.RecordBuilder) {}, "column \"step\" has type int64, want int32"},
		{"nulls", fileFields, nil, func(b *array.RecordBuilder) {
			fillNodes(ok[:1])(b)
			for i := range b.Fields() {
				b.Field(i).AppendNull()
			}
		}, "column \"node\" has 1 nulls"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".arrow")
			writeRaw(t, path, c.fields, c.meta, c.fill)
			_, _, err := ReadFile(path)
			if !errors.Is(err, ErrFile) {
				t.Fatalf("err = %v, want ErrFile", err)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name the file and say %q", err, c.want)
			}
		})
	}
	notArrow := filepath.Join(dir, "text.arrow")
	os.WriteFile(notArrow, []byte("node,parent\n0,-1\n"), 0o644)
	if _, _, err := ReadFile(notArrow); !errors.Is(err, ErrFile) {
		t.Errorf("text file: err = %v, want ErrFile", err)
	}
	if _, _, err := ReadFile(filepath.Join(dir, "absent.arrow")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: err = %v, want not-exist", err)
	}
}
