package policy

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/psrlcb/psrlcb/ingest"
)

// mixedTree is a stochastic policy of two steps: after "init" it listens
// with probability 0.75 and opens the right door with 0.25; after
// listening and hearing left it opens the right door, and after opening
// it listens.
func mixedTree() *Policy {
	return &Policy{Horizon: 2, Nodes: []Node{
		{ID: 0, Parent: -1, Step: 1, Obs: "init", Action: "listen", Fallback: "listen", ReachProb: 0.75},
		{ID: 1, Parent: -1, Step: 1, Obs: "init", Action: "open-right", Fallback: "listen", ReachProb: 0.25},
		{ID: 2, Parent: 0, Step: 2, Obs: "hear-left", Action: "open-right", Fallback: "listen", ReachProb: 0.375},
		{ID: 3, Parent: 1, Step: 2, Obs: "hear-left", Action: "listen", Fallback: "listen", ReachProb: 0.125},
	}, Probs: []float64{0.75, 0.25, 1, 1}}
}

// TestStochasticCursor: Choices lists a history's actions with their
// probabilities; Take follows the action taken and returns its
// probability (0 for one the policy never takes); Sample draws by the
// cumulative probabilities; Act plays the most probable action.
func TestStochasticCursor(t *testing.T) {
	p := mixedTree()
	c := p.NewCursor()
	ch, ok := c.Choices("init")
	want := []Choice{{"listen", 0.75, 0}, {"open-right", 0.25, 1}}
	if !ok || !reflect.DeepEqual(ch, want) {
		t.Fatalf("Choices(init) = %v %v, want %v", ch, ok, want)
	}
	for _, path := range []struct {
		first, next string
		prob        float64
	}{{"listen", "open-right", 0.75}, {"open-right", "listen", 0.25}} {
		c := p.NewCursor()
		if q, ok := c.Take("init", path.first); !ok || q != path.prob {
			t.Errorf("Take(init, %s) = %v %v, want %v", path.first, q, ok, path.prob)
		}
		if q, ok := c.Take("hear-left", path.next); !ok || q != 1 {
			t.Errorf("after %s: Take(hear-left, %s) = %v %v, want 1", path.first, path.next, q, ok)
		}
	}
	c = p.NewCursor()
	if q, ok := c.Take("init", "open-left"); !ok || q != 0 {
		t.Errorf("Take(init, open-left) = %v %v, want probability 0", q, ok)
	}
	// Past the tree, the fallback with probability 1.
	c = p.NewCursor()
	c.Take("init", "listen")
	if q, ok := c.Take("hear-right", "listen"); !ok || q != 1 {
		t.Errorf("fallback: Take(hear-right, listen) = %v %v, want 1", q, ok)
	}
	for _, u := range []struct {
		u    float64
		want string
	}{{0, "listen"}, {0.7499, "listen"}, {0.75, "open-right"}, {0.9999, "open-right"}} {
		c := p.NewCursor()
		if a, node, ok := c.Sample("init", u.u); !ok || a != u.want || p.Nodes[node].Action != a {
			t.Errorf("Sample(init, %v) = %q %d %v, want %q", u.u, a, node, ok, u.want)
		}
	}
	if a, _, ok := p.NewCursor().Act("init"); !ok || a != "listen" {
		t.Errorf("Act(init) = %q %v, want the most probable, listen", a, ok)
	}
	// A deterministic policy: one choice of probability one.
	det := sampleTree()
	if ch, ok := det.NewCursor().Choices("init"); !ok || !reflect.DeepEqual(ch, []Choice{{"listen", 1, 0}}) {
		t.Errorf("deterministic Choices(init) = %v %v", ch, ok)
	}
}

// TestStochasticFileRoundTrip: the probability column is written and
// read back, the file has no batch index, and bad probabilities are
// refused with the row named.
func TestStochasticFileRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	want := mixedTree()
	if err := writeFileWith(mem, path, want, nil); err != nil {
		t.Fatal(err)
	}
	got, meta, err := readFileWith(mem, path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Nodes, want.Nodes) || !reflect.DeepEqual(got.Probs, want.Probs) {
		t.Fatalf("round trip changed the policy:\n got %+v %v\nwant %+v %v", got.Nodes, got.Probs, want.Nodes, want.Probs)
	}
	if _, ok := meta[MetaBatchIndex]; ok {
		t.Errorf("a stochastic policy's file has a batch index: %v", meta)
	}
	tab, err := OpenTable(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	if w := tab.Whole(); w == nil || !reflect.DeepEqual(w.Probs, want.Probs) {
		t.Errorf("OpenTable did not read the stochastic policy whole: %+v", w)
	}
	// A deterministic policy's file has no probability column.
	det := filepath.Join(dir, "det.arrow")
	if err := writeFileWith(mem, det, sampleTree(), nil); err != nil {
		t.Fatal(err)
	}
	if p, _, err := readFileWith(mem, det); err != nil || p.Stochastic() {
		t.Errorf("deterministic round trip: stochastic %v, %v", p != nil && p.Stochastic(), err)
	}

	for _, c := range []struct {
		name string
		edit func(p *Policy)
		msg  string
	}{
		{"sum", func(p *Policy) { p.Probs[1] = 0.2 }, "sum to 0.95"},
		{"zero", func(p *Policy) { p.Probs[0], p.Probs[1] = 1, 0 }, "probability 0"},
		{"above one", func(p *Policy) { p.Probs[2] = 1.5 }, "probability 1.5"},
		{"nan", func(p *Policy) { p.Probs[3] = math.NaN() }, "probability NaN"},
		{"repeated action", func(p *Policy) { p.Nodes[1].Action = "listen" }, `action "listen" repeats row 0`},
		{"length", func(p *Policy) { p.Probs = p.Probs[:3] }, "3 probabilities for 4 rows"},
	} {
		p := mixedTree()
		c.edit(p)
		err := writeFileWith(mem, filepath.Join(dir, c.name+".arrow"), p, nil)
		if !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want an ErrFile naming %q", c.name, err, c.msg)
		}
	}
}

// TestStochasticWeights: the importance weight of a logged episode under
// a stochastic policy is Π π(a_h|τ)/π^b(a_h|τ), by hand on mixedTree.
func TestStochasticWeights(t *testing.T) {
	obs, acts := []string{"hear-left", "hear-right", "init"}, []string{"listen", "open-left", "open-right"}
	type st struct {
		o, a string
		p    float64
	}
	eps := [][]st{
		{{"init", "listen", 0.5}, {"hear-left", "open-right", 0.5}},      // 0.75/0.5 · 1/0.5 = 3
		{{"init", "open-right", 0.25}, {"hear-left", "open-right", 0.5}}, // π(open-right | …, open-right, hear-left) = 0
		{{"init", "open-left", 0.25}, {"hear-left", "listen", 0.5}},      // π(open-left | init) = 0
		{{"init", "listen", 0.5}, {"hear-right", "listen", 0.4}},         // past the tree: fallback listen, 0.75/0.5/0.4 = 3.75
		{{"init", "open-right", 0.5}, {"hear-left", "listen", 0.8}},      // 0.25/0.5 · 1/0.8 = 0.625
	}
	want := []float64{3, 0, 0, 3.75, 0.625}
	d := &ingest.Dataset{Horizon: 2, ObsVocab: obs, ActVocab: acts}
	for k, ep := range eps {
		d.EpisodeIDs = append(d.EpisodeIDs, fmt.Sprint(k))
		d.Length = append(d.Length, 2)
		for _, s := range ep {
			d.Obs = append(d.Obs, uint16(slices.Index(obs, s.o)))
			d.Act = append(d.Act, uint16(slices.Index(acts, s.a)))
			d.Reward = append(d.Reward, 0)
			d.Propensity = append(d.Propensity, s.p)
		}
	}
	w, err := Weights(mixedTree(), d)
	if err != nil {
		t.Fatal(err)
	}
	for k := range want {
		if math.Abs(w[k]-want[k]) > 1e-12 {
			t.Errorf("episode %d: weight %v, want %v", k, w[k], want[k])
		}
	}
	cov, err := CoverageOf(mixedTree(), d)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(cov.CInf-3.75) > 1e-12 {
		t.Errorf("C∞ %v, want 3.75 (episode 3)", cov.CInf)
	}
}
