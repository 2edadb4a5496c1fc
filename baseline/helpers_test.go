package baseline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
)

// tol is the absolute tolerance for values that are sums and products of a
// few dozen float64 terms of size ≤ 2.
const tol = 1e-12

// step is one logged step (o_h, a_h, r_h) in the user's symbols.
type step struct {
	o, a string
	r    float64
}

// mkDataset builds a Dataset from episodes written as symbols. The
// vocabularies must be sorted, as ingest builds them.
func mkDataset(t testing.TB, H int, obsVocab, actVocab []string, eps [][]step) *ingest.Dataset {
	t.Helper()
	d := &ingest.Dataset{Horizon: H, ObsVocab: obsVocab, ActVocab: actVocab}
	for k, ep := range eps {
		if len(ep) != H {
			t.Fatalf("episode %d has %d steps, want %d", k, len(ep), H)
		}
		d.EpisodeIDs = append(d.EpisodeIDs, fmt.Sprintf("e%d", k))
		d.Length = append(d.Length, int32(H))
		for _, s := range ep {
			o, a := slices.Index(obsVocab, s.o), slices.Index(actVocab, s.a)
			if o < 0 || a < 0 {
				t.Fatalf("episode %d: symbol %q/%q not in the vocabularies", k, s.o, s.a)
			}
			d.Obs = append(d.Obs, uint16(o))
			d.Act = append(d.Act, uint16(a))
			d.Reward = append(d.Reward, s.r)
		}
	}
	return d
}

// randomDataset draws K episodes with uniform observations and actions and
// integer rewards in {0,1,2}.
func randomDataset(t testing.TB, seed uint64, K, H, nObs, nAct int) *ingest.Dataset {
	rng := rand.New(rand.NewPCG(seed, 7))
	var obs, act []string
	for i := range nObs {
		obs = append(obs, fmt.Sprintf("o%d", i))
	}
	for i := range nAct {
		act = append(act, fmt.Sprintf("a%d", i))
	}
	eps := make([][]step, K)
	for k := range eps {
		for range H {
			eps[k] = append(eps[k], step{obs[rng.IntN(nObs)], act[rng.IntN(nAct)], float64(rng.IntN(3))})
		}
	}
	return mkDataset(t, H, obs, act, eps)
}

// want is the expected content of one policy node.
type want struct {
	parent      int64
	step        int32
	obs, act    string
	fallback    string
	reach       float64
	vr, vb, lcb float64
}

func checkNodes(t *testing.T, p *policy.Policy, ws []want) {
	t.Helper()
	if len(p.Nodes) != len(ws) {
		t.Fatalf("got %d nodes, want %d: %+v", len(p.Nodes), len(ws), p.Nodes)
	}
	for i, w := range ws {
		n := p.Nodes[i]
		if n.ID != int64(i) || n.Parent != w.parent || n.Step != w.step || n.Obs != w.obs || n.Action != w.act || n.Fallback != w.fallback {
			t.Errorf("node %d = {id %d parent %d step %d obs %q act %q fallback %q}, want {parent %d step %d obs %q act %q fallback %q}",
				i, n.ID, n.Parent, n.Step, n.Obs, n.Action, n.Fallback, w.parent, w.step, w.obs, w.act, w.fallback)
		}
		for _, c := range []struct {
			name      string
			got, want float64
		}{{"reach_prob", n.ReachProb, w.reach}, {"value_reward", n.ValueReward, w.vr}, {"value_bonus", n.ValueBonus, w.vb}, {"value_lcb", n.ValueLCB, w.lcb}} {
			if math.Abs(c.got-c.want) > 1e-8 {
				t.Errorf("node %d %s = %.10f, want %.10f", i, c.name, c.got, c.want)
			}
		}
	}
}

// histKey renders an observation history with the actions in between.
func histKey(obs []string, acts []string) string {
	var b strings.Builder
	for i, o := range obs {
		if i > 0 {
			b.WriteString("|" + acts[i-1] + "|")
		}
		b.WriteString(o)
	}
	return b.String()
}

// emp is the empirical history tree recomputed with string keys, as a
// reference independent of the package's trie.
type emp struct {
	H, K     int
	node     map[string]int     // episodes through history τ
	edge     map[string]int     // n(τ,a), key τ + "#" + a
	rsum     map[string]float64 // Σ rescaled r over (τ,a)
	acts     map[string][]string
	next     map[string][]string // observations logged after (τ,a), key τ + "#" + a
	firsts   []string
	ret      []float64 // rescaled return per episode
	episodes [][]step
	// r'_h = (r_h − shift)·scale, the rescaled step reward.
	shift, scale float64
}

func newEmp(d *ingest.Dataset) *emp {
	H, K := d.Horizon, d.NumEpisodes()
	e := &emp{H: H, K: K, node: map[string]int{}, edge: map[string]int{}, rsum: map[string]float64{},
		acts: map[string][]string{}, next: map[string][]string{}}
	lo, hi := math.Inf(1), math.Inf(-1)
	for k := range K {
		r := d.Return(k)
		lo, hi = min(lo, r), max(hi, r)
	}
	scale := 1.0
	if hi > lo {
		scale = 1 / (hi - lo)
	}
	e.shift, e.scale = lo/float64(H), scale
	addUnique := func(m map[string][]string, k, v string) {
		if !slices.Contains(m[k], v) {
			m[k] = append(m[k], v)
			slices.Sort(m[k])
		}
	}
	for k := range K {
		var os, as []string
		var ep []step
		for h := range H {
			i := k*H + h
			o, a := d.ObsVocab[d.Obs[i]], d.ActVocab[d.Act[i]]
			ep = append(ep, step{o, a, d.Reward[i]})
			os = append(os, o)
			tau := histKey(os, as)
			if h == 0 && !slices.Contains(e.firsts, o) {
				e.firsts = append(e.firsts, o)
			}
			if h > 0 {
				addUnique(e.next, histKey(os[:h], as[:h-1])+"#"+as[h-1], o)
			}
			e.node[tau]++
			e.edge[tau+"#"+a]++
			e.rsum[tau+"#"+a] += (d.Reward[i] - lo/float64(H)) * scale
			addUnique(e.acts, tau, a)
			as = append(as, a)
		}
		e.ret = append(e.ret, (d.Return(k)-lo)*scale)
		e.episodes = append(e.episodes, ep)
	}
	slices.Sort(e.firsts)
	return e
}

// pen is the TabularLCB penalty min(c/√n, 1).
func pen(c float64, n int) float64 { return min(c/math.Sqrt(float64(n)), 1) }

// evalPaths enumerates every path of the empirical tree consistent with the
// policy pi (history key → action) below history (obs, acts) and returns the
// expected sums of rescaled rewards and of penalties to go.
func (e *emp) evalPaths(pi map[string]string, c float64, obs, acts []string) (r, b float64) {
	var walk func(obs, acts []string, prob, accR, accB float64)
	walk = func(obs, acts []string, prob, accR, accB float64) {
		tau := histKey(obs, acts)
		a, ok := pi[tau]
		if !ok {
			panic("policy has no action at " + tau)
		}
		n := e.edge[tau+"#"+a]
		accR += e.rsum[tau+"#"+a] / float64(n)
		accB += pen(c, n)
		if len(obs) == e.H {
			r += prob * accR
			b += prob * accB
			return
		}
		for _, o := range e.next[tau+"#"+a] {
			o2 := append(slices.Clone(obs), o)
			a2 := append(slices.Clone(acts), a)
			walk(o2, a2, prob*float64(e.node[histKey(o2, a2)])/float64(n), accR, accB)
		}
	}
	walk(obs, acts, 1, 0, 0)
	return r, b
}

// allPolicies lists every deterministic policy on the subtree below the
// history (obs, acts) that picks a logged action at every history it
// reaches, as maps from history key to action.
func (e *emp) allPolicies(obs, acts []string) []map[string]string {
	tau := histKey(obs, acts)
	var out []map[string]string
	for _, a := range e.acts[tau] {
		partial := []map[string]string{{tau: a}}
		if len(obs) < e.H {
			for _, o := range e.next[tau+"#"+a] {
				subs := e.allPolicies(append(slices.Clone(obs), o), append(slices.Clone(acts), a))
				var grown []map[string]string
				for _, p := range partial {
					for _, s := range subs {
						m := make(map[string]string, len(p)+len(s))
						for k, v := range p {
							m[k] = v
						}
						for k, v := range s {
							m[k] = v
						}
						grown = append(grown, m)
					}
				}
				partial = grown
			}
		}
		out = append(out, partial...)
	}
	return out
}

// policyMap reads the policy tree back as history key → action.
func policyMap(p *policy.Policy) map[string]string {
	keys := make([]string, len(p.Nodes))
	m := map[string]string{}
	for i, n := range p.Nodes {
		if n.Parent < 0 {
			keys[i] = n.Obs
		} else {
			keys[i] = keys[n.Parent] + "|" + p.Nodes[n.Parent].Action + "|" + n.Obs
		}
		m[keys[i]] = n.Action
	}
	return m
}

// checkTree checks the structural contract of a baseline policy against
// the logs: IDs and parent order, steps, unique children, children exactly
// the observations logged after the chosen action, reach probabilities
// that add up, the end symbol rule, and a Cursor that answers every logged
// first observation and follows every logged episode that agrees with it.
func checkTree(t *testing.T, d *ingest.Dataset, p *policy.Policy) {
	t.Helper()
	e := newEmp(d)
	if p.Horizon != d.Horizon {
		t.Errorf("horizon %d, want %d", p.Horizon, d.Horizon)
	}
	seen := map[string]bool{}
	kids := make([][]string, len(p.Nodes))
	var roots []string
	keys := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		if n.ID != int64(i) {
			t.Fatalf("node %d has ID %d", i, n.ID)
		}
		if n.Parent >= int64(i) || (n.Parent < 0) != (n.Step == 1) || n.Parent < -1 {
			t.Fatalf("node %d: parent %d step %d", i, n.Parent, n.Step)
		}
		if n.Parent >= 0 && p.Nodes[n.Parent].Step+1 != n.Step {
			t.Fatalf("node %d: step %d under a step-%d parent", i, n.Step, p.Nodes[n.Parent].Step)
		}
		k := fmt.Sprint(n.Parent, "/", n.Obs)
		if seen[k] {
			t.Fatalf("node %d: a second child of %d with observation %q", i, n.Parent, n.Obs)
		}
		seen[k] = true
		if n.Parent < 0 {
			roots = append(roots, n.Obs)
			keys[i] = n.Obs
		} else {
			kids[n.Parent] = append(kids[n.Parent], n.Obs)
			keys[i] = keys[n.Parent] + "|" + p.Nodes[n.Parent].Action + "|" + n.Obs
		}
		if n.Obs == ingest.EndSymbol && (n.Action != ingest.EndSymbol || n.Fallback != ingest.EndSymbol) {
			t.Errorf("node %d: observation %q with action %q fallback %q", i, n.Obs, n.Action, n.Fallback)
		}
		if e.edge[keys[i]+"#"+n.Action] == 0 {
			t.Errorf("node %d: action %q was never logged at %s", i, n.Action, keys[i])
		}
	}
	if !slices.Equal(roots, e.firsts) {
		t.Errorf("roots %v, want the logged first observations %v", roots, e.firsts)
	}
	sum := 0.0
	for i, n := range p.Nodes {
		if n.Parent < 0 {
			sum += n.ReachProb
		}
		if int(n.Step) < d.Horizon {
			want := e.next[keys[i]+"#"+n.Action]
			if !slices.Equal(kids[i], want) {
				t.Errorf("node %d (%s, action %s): children %v, want %v", i, keys[i], n.Action, kids[i], want)
			}
			s := 0.0
			for j, m := range p.Nodes {
				if m.Parent == int64(i) {
					s += p.Nodes[j].ReachProb
				}
			}
			if math.Abs(s-n.ReachProb) > tol {
				t.Errorf("node %d: children reach %v, node reach %v", i, s, n.ReachProb)
			}
		} else if len(kids[i]) > 0 {
			t.Errorf("node %d at the last step has children", i)
		}
	}
	if math.Abs(sum-1) > tol {
		t.Errorf("step-1 reach probabilities add up to %v", sum)
	}
	for _, o := range e.firsts {
		if _, _, ok := p.NewCursor().Act(o); !ok {
			t.Errorf("Cursor has no action for logged first observation %q", o)
		}
	}
	for k, ep := range e.episodes {
		c := p.NewCursor()
		for h, s := range ep {
			a, node, ok := c.Act(s.o)
			if !ok || node < 0 {
				t.Fatalf("episode %d step %d: cursor left the tree (ok %v) on a history that agrees with the policy", k, h+1, ok)
			}
			if a != s.a {
				break
			}
		}
	}
}

func policyOf(x any) *policy.Policy { return x.(*policy.Policy) }
