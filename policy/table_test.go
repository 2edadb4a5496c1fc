package policy

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// randomTree is a policy over obs observations of depth H in which each
// node has each observation as a child with probability keep, its rows
// in the order of a depth-first walk (parents precede children, but
// parents decrease along the rows, as the belief planner's walk leaves
// them).
func randomTree(rng *rand.Rand, obs []string, H int, keep float64) *Policy {
	p := &Policy{Horizon: H}
	var grow func(parent int64, step int)
	grow = func(parent int64, step int) {
		for _, o := range obs {
			if step > 1 && rng.Float64() > keep {
				continue
			}
			id := int64(len(p.Nodes))
			p.Nodes = append(p.Nodes, Node{ID: id, Parent: parent, Step: int32(step), Obs: o,
				Action: fmt.Sprintf("a%d", rng.IntN(3)), Fallback: fmt.Sprintf("a%d", rng.IntN(3)), ReachProb: rng.Float64()})
			if step < H {
				grow(id, step+1)
			}
		}
	}
	grow(-1, 1)
	return p
}

// TestLevelOrder: levelOrder keeps the tree (every node's path of
// observations and its fields) and leaves parents non-decreasing.
func TestLevelOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := randomTree(rng, []string{"x", "y", "z"}, 6, 0.7)
	paths := func(p *Policy) map[string]Node {
		m := map[string]Node{}
		for i := range p.Nodes {
			var key []string
			for j := int64(i); j >= 0; j = p.Nodes[j].Parent {
				key = append(key, p.Nodes[j].Obs)
			}
			slices.Reverse(key)
			n := p.Nodes[i]
			n.ID, n.Parent = 0, 0
			m[fmt.Sprint(key)] = n
		}
		return m
	}
	before := paths(p)
	if _, ok := batchIndex(p, 16); ok {
		t.Fatal("the depth-first tree already has non-decreasing parents: the test proves nothing")
	}
	levelOrder(p.Nodes)
	if err := p.check("levelOrder"); err != nil {
		t.Fatal(err)
	}
	if _, ok := batchIndex(p, 16); !ok {
		t.Error("parents decrease after levelOrder")
	}
	if after := paths(p); !reflect.DeepEqual(after, before) {
		t.Error("levelOrder changed the tree")
	}
}

// TestTableLookup: OpenTable's indexed lookup, reading batches of a few
// rows, gives the in-memory lookup's actions, nodes and fallbacks on every
// history of the tree and on histories that leave it, and a table
// without the index (written before it existed) is read whole.
func TestTableLookup(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	obs := []string{"x", "y", "z"}
	p := randomTree(rng, obs, 5, 0.6)
	levelOrder(p.Nodes)
	dir := t.TempDir()
	for _, rows := range []int{7, 1 << 16} {
		path := filepath.Join(dir, fmt.Sprintf("policy-%d.arrow", rows))
		writeBatches(t, path, p, rows, true)
		tab, err := OpenTable(path)
		if err != nil {
			t.Fatal(err)
		}
		if tab.whole != nil {
			t.Fatalf("batches of %d rows: the index was not used", rows)
		}
		checkLookups(t, tab, p, obs)
		tab.Close()
	}
	old := filepath.Join(dir, "old.arrow")
	writeBatches(t, old, p, 7, false)
	tab, err := OpenTable(old)
	if err != nil {
		t.Fatal(err)
	}
	if tab.whole == nil {
		t.Fatal("a table without the index was not read whole")
	}
	checkLookups(t, tab, p, obs)
	tab.Close()
}

// writeBatches writes p in batches of rows rows, with or without the
// lookup index.
func writeBatches(t *testing.T, path string, p *Policy, rows int, index bool) {
	t.Helper()
	saved := fileBatchRowsVar
	fileBatchRowsVar = rows
	defer func() { fileBatchRowsVar = saved }()
	noIndex = !index
	defer func() { noIndex = false }()
	if err := WriteFile(path, p, nil); err != nil {
		t.Fatal(err)
	}
}

func checkLookups(t *testing.T, tab *Table, p *Policy, obs []string) {
	t.Helper()
	n := 0
	var walk func(hist []string)
	walk = func(hist []string) {
		if len(hist) > p.Horizon {
			return
		}
		if len(hist) > 0 {
			n++
			acts, node, last, ok, err := tab.Lookup(hist)
			if err != nil {
				t.Fatal(err)
			}
			c := p.NewCursor()
			var want []string
			wantLast, wantNode, wantOK := int64(-1), int64(-1), true
			for _, o := range hist {
				a, nd, ok := c.Act(o)
				if !ok {
					wantOK = false
					break
				}
				if nd >= 0 {
					wantLast = nd
				}
				want, wantNode = append(want, a), nd
			}
			if ok != wantOK || (ok && (!slices.Equal(acts, want) || node != wantNode || last != wantLast)) {
				t.Fatalf("history %v: got %v %d %d %v, want %v %d %d %v", hist, acts, node, last, ok, want, wantNode, wantLast, wantOK)
			}
			if node >= 0 {
				got, err := tab.Node(node)
				if err != nil || got != p.Nodes[node] {
					t.Fatalf("Node(%d) = %+v, %v; want %+v", node, got, err, p.Nodes[node])
				}
			}
		}
		for _, o := range append([]string{"w"}, obs...) { // "w" is never in the tree
			walk(append(slices.Clone(hist), o))
		}
	}
	walk(nil)
	if n < 1000 {
		t.Fatalf("only %d histories checked", n)
	}
}
