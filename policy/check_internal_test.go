package policy

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
)

// TestRepeatedObsMatchesMap: the sort-based search for a repeated
// (parent, observation) finds the same rows as a scan with a map, on
// random forests with several repeats.
func TestRepeatedObsMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 300; trial++ {
		n := 1 + rng.IntN(40)
		p := &Policy{Nodes: make([]Node, n)}
		for i := range p.Nodes {
			parent := int64(-1)
			if i > 0 && rng.IntN(3) > 0 {
				parent = int64(rng.IntN(i))
			}
			p.Nodes[i] = Node{ID: int64(i), Parent: parent, Obs: strconv.Itoa(rng.IntN(4))}
		}
		type key struct {
			parent int64
			obs    string
		}
		seen := map[key]int{}
		wantDup, wantFirst := -1, -1
		for i, nd := range p.Nodes {
			k := key{nd.Parent, nd.Obs}
			if j, ok := seen[k]; ok {
				wantDup, wantFirst = i, j
				break
			}
			seen[k] = i
		}
		if dup, first := p.repeatedObs(); dup != wantDup || first != wantFirst {
			t.Fatalf("trial %d: repeatedObs = (%d, %d), map scan (%d, %d)", trial, dup, first, wantDup, wantFirst)
		}
	}
}

// TestChildMatchesMap: the sorted child index answers Child as a map from
// (parent, observation) to the last row with them would, for every
// parent (−1 included), observations present and absent, and parents out
// of range.
func TestChildMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 200; trial++ {
		n := rng.IntN(30)
		p := &Policy{Nodes: make([]Node, n)}
		type key struct {
			parent int64
			obs    string
		}
		want := map[key]int64{}
		for i := range p.Nodes {
			parent := int64(-1)
			if i > 0 && rng.IntN(3) > 0 {
				parent = int64(rng.IntN(i))
			}
			p.Nodes[i] = Node{ID: int64(i), Parent: parent, Obs: strconv.Itoa(rng.IntN(5))}
			want[key{parent, p.Nodes[i].Obs}] = int64(i)
		}
		for parent := int64(-2); parent <= int64(n); parent++ {
			for o := 0; o < 6; o++ {
				obs := strconv.Itoa(o)
				w, wok := want[key{parent, obs}]
				g, gok := p.Child(parent, obs)
				if wok != gok || (wok && w != g) {
					t.Fatalf("trial %d: Child(%d, %q) = %d, %v; map %d, %v", trial, parent, obs, g, gok, w, wok)
				}
			}
		}
	}
}

// TestBeliefAffordable: auto keeps the belief planner for benchmark-sized
// models (hallway: 60 states at most, 21 observations, 5 actions, H = 20)
// and leaves it for a catalogue of 20,000 items and 50 actions, where its
// backups (H·|A|·|O|·points²·r) would take hours.
func TestBeliefAffordable(t *testing.T) {
	small := &estimate.Model{Horizon: 20, NumActions: 5, NumObs: 21, States: 60}
	wide := &estimate.Model{Horizon: 5, NumActions: 50, NumObs: 20000, States: 4}
	if !beliefAffordable(small, DefaultPoints) || beliefAffordable(wide, DefaultPoints) {
		t.Fatalf("affordable: hallway-sized %v (want true), 20,000 items %v (want false)",
			beliefAffordable(small, DefaultPoints), beliefAffordable(wide, DefaultPoints))
	}
}
