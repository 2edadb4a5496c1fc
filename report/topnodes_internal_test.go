package report

import (
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"github.com/psrlcb/psrlcb/policy"
)

// TestTopNodesMatchesStableSort: the heap selection keeps the same nodes
// as ranking all nodes by reach with a stable sort (ties to the earlier
// node) and keeping the first top with their ancestors, on random trees
// whose reaches repeat.
func TestTopNodesMatchesStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		n := 1 + rng.IntN(60)
		pol := &policy.Policy{Nodes: make([]policy.Node, n)}
		for i := range pol.Nodes {
			parent := int64(-1)
			if i > 0 && rng.IntN(4) > 0 {
				parent = int64(rng.IntN(i))
			}
			pol.Nodes[i] = policy.Node{ID: int64(i), Parent: parent, ReachProb: float64(rng.IntN(5)) / 4}
		}
		top := rng.IntN(n + 2)
		want := make([]bool, n)
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return pol.Nodes[idx[a]].ReachProb > pol.Nodes[idx[b]].ReachProb })
		if top <= 0 || top >= n {
			for i := range want {
				want[i] = true
			}
		} else {
			for _, i := range idx[:top] {
				for j := int64(i); j >= 0 && !want[j]; j = pol.Nodes[j].Parent {
					want[j] = true
				}
			}
		}
		if got := topNodes(pol, top); !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d (n=%d, top=%d): got %v, want %v", trial, n, top, got, want)
		}
	}
}
