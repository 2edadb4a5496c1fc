package policy

import "github.com/psrlcb/psrlcb/ingest"

// Visits is how the logs walk down π̄'s tree: N[n] counts the episodes
// whose observations o_1..o_h and actions a_1..a_{h−1} lead to node n, out
// of K, and Count(n, a) how many of them took action a there. An episode
// stops at the first action that departs from π̄ (or at its end). In a
// stochastic policy every row of a history (one per action the policy
// may take) counts the episodes that reach the history, and an episode
// goes on below the row of the action it took, while there is one.
type Visits struct {
	N []int64
	K int
	// Action counts of the visited nodes only: the counts of node n are
	// counts[at[n]·|A| : (at[n]+1)·|A|] in the order of acts (at[n] = −1:
	// never visited), so memory grows with the visited nodes, not the tree.
	acts   []string
	at     []int32
	counts []int64
}

// LoggedVisits walks every logged episode of d down pol's tree.
func LoggedVisits(pol *Policy, d *ingest.Dataset) *Visits {
	v := &Visits{N: make([]int64, len(pol.Nodes)), K: d.NumEpisodes(), acts: d.ActVocab, at: make([]int32, len(pol.Nodes))}
	for i := range v.at {
		v.at[i] = -1
	}
	for k := 0; k < v.K; k++ {
		v.walk(pol, d, k)
	}
	return v
}

// walk counts episode k of d down pol's tree until its first action
// that departs from pol (or its end).
func (v *Visits) walk(pol *Policy, d *ingest.Dataset, k int) {
	if pol.Stochastic() {
		v.walkChoices(pol, d, k)
		return
	}
	H, node := d.Horizon, int64(-1)
	for h := 0; h < H && h < int(d.Length[k]); h++ {
		n, ok := pol.Child(node, d.ObsVocab[d.Obs[k*H+h]])
		if !ok {
			return
		}
		a := int(d.Act[k*H+h])
		v.add(n, a)
		if d.ActVocab[a] != pol.Nodes[n].Action {
			return
		}
		node = n
	}
}

// walkChoices is walk for a stochastic policy: at each step it counts
// the episode at every row of its history and goes on below the row of
// the logged action (it stops when there is none).
func (v *Visits) walkChoices(pol *Policy, d *ingest.Dataset, k int) {
	H, node := d.Horizon, int64(-1)
	for h := 0; h < H && h < int(d.Length[k]); h++ {
		rows := pol.rowsWithObs(node, d.ObsVocab[d.Obs[k*H+h]])
		a := int(d.Act[k*H+h])
		node = -1
		for _, r := range rows {
			v.add(int64(r), a)
			if pol.Nodes[r].Action == d.ActVocab[a] {
				node = int64(r)
			}
		}
		if node < 0 {
			return
		}
	}
}

// add counts a visit of node n that took action a (an index of the
// logs' actions), allocating the node's counts at its first visit.
func (v *Visits) add(n int64, a int) {
	A := len(v.acts)
	v.N[n]++
	if v.at[n] < 0 {
		v.at[n] = int32(len(v.counts) / A)
		v.counts = append(v.counts, make([]int64, A)...)
	}
	v.counts[int(v.at[n])*A+a]++
}

// Count is the number of logged visits of node n that took action a.
func (v *Visits) Count(n int64, a string) int64 {
	if v.at[n] < 0 {
		return 0
	}
	A := len(v.acts)
	for i, s := range v.acts {
		if s == a {
			return v.counts[int(v.at[n])*A+i]
		}
	}
	return 0
}

// MostLogged is the action logged most often at node n (the first in
// vocabulary order on ties), "" when the node was never visited.
func (v *Visits) MostLogged(n int64) string {
	if v.at[n] < 0 {
		return ""
	}
	A := len(v.acts)
	c := v.counts[int(v.at[n])*A : int(v.at[n]+1)*A]
	best := 0
	for i := range c {
		if c[i] > c[best] {
			best = i
		}
	}
	return v.acts[best]
}
