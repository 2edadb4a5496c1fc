package estimate

import (
	"context"
	"math"
	"sort"
	"testing"
)

// TestGrowSplit: the growth's held-out episodes are the sample's
// held-out ones and, after the sample in the search's order, as many
// more as make the share HeldOut of all the logs; none of them is in the
// sample's training part; the two parts cover every episode once.
func TestGrowSplit(t *testing.T) {
	const K, nTrain, nHeld = 1000, 160, 40
	o := &Options{Seed: 3, HeldOut: 0.2}
	rs := &rankSearcher{all: &coded{K: K}, tr: &coded{K: nTrain}, blocks: []*coded{{K: 25}, {K: nHeld - 25}}, o: o}
	train, held := rs.growSplit()
	if len(held) != 200 || len(train) != 800 {
		t.Fatalf("%d held out and %d training episodes, want 200 and 800", len(held), len(train))
	}
	perm := searchOrder(K, o.Seed)
	in := map[int]int{}
	for _, k := range held {
		in[k]++
	}
	for _, k := range train {
		in[k] += 10
	}
	for k := 0; k < K; k++ {
		if in[k] != 1 && in[k] != 10 {
			t.Fatalf("episode %d: held %d times, trained on %d times", k, in[k]%10, in[k]/10)
		}
	}
	for i, k := range perm[:nTrain+nHeld] {
		if want := map[bool]int{true: 1, false: 10}[i < nHeld]; in[k] != want {
			t.Fatalf("sample episode %d (position %d): held %v, want %v", k, i, in[k] == 1, want == 1)
		}
	}
	if !sort.IntsAreSorted(held) || !sort.IntsAreSorted(train) {
		t.Fatal("parts not sorted")
	}
	rs.all.K = nTrain + nHeld
	if train, held := rs.growSplit(); train != nil || held != nil {
		t.Fatalf("sample of every episode: %d and %d episodes, want none", len(train), len(held))
	}
}

// stickyModel has two hidden states that persist (0.95) and show one of
// two observations with probability 0.5 ± gap/2, one action and reward
// 0: a memory worth a little per step, that a few episodes do not show.
func stickyModel(gap float64, H int) *Model {
	m := randomModel(2, 2, 1, H, true, []float64{0}, 3)
	copy(m.Init, []float64{0.5, 0.5})
	e := []float64{0.5 + gap/2, 0.5 - gap/2, 0.5 - gap/2, 0.5 + gap/2}
	copy(m.Obs1, e)
	copy(m.Emit[0], e)
	copy(m.Trans[0], []float64{0.95, 0.05, 0.05, 0.95})
	m.Prepare()
	return m
}

// TestRankSearchGrowsOnAllLogs: on 6000 episodes of stickyModel the
// search's sample of 200 episodes does not show the memory (rank 2 fits
// its 160 training episodes better and loses on its 40 held-out ones);
// fitted again on all the logs (4800 training episodes, 1200 held out),
// rank 2 wins and is chosen (three rows: rank 1 in both forms, rank 2
// grown). With the growth off (GrowBudget < 0) or a
// budget its predicted work exceeds, the search keeps rank 1 and has no
// growth rows. The grown rank's other starts that find the memory too
// are kept beside it, of its rank.
func TestRankSearchGrowsOnAllLogs(t *testing.T) {
	d := sampleDataset(stickyModel(0.5, 8), 6000, 11)
	alts := 0
	search := func(grow float64) (int, []RankRow) {
		res := &Result{}
		o, c, proto := searchInputs(t, d, Options{MaxRank: 2, Restarts: 2, Seed: 1, MaxIter: 200, GrowBudget: grow, sampleEpisodes: 200})
		S, sm, alt, err := rankSearch(context.Background(), c, proto, &o, res, func(TraceRow) {})
		if err != nil {
			t.Fatal(err)
		}
		if sm.States != S {
			t.Fatalf("growth budget %g: rank %d, model of %d states", grow, S, sm.States)
		}
		// The other starts kept beside the grown model (its rank, not it).
		for i, m := range alt {
			if m.States != S || m == sm {
				t.Errorf("growth budget %g: alternative %d has %d states (rank %d) or is the chosen model", grow, i, m.States, S)
			}
		}
		alts = len(alt)
		t.Logf("growth budget %g: rank %d, rows %+v", grow, S, res.RankTable)
		return S, res.RankTable
	}
	grown := func(rows []RankRow) (n int) {
		for _, r := range rows {
			if r.Episodes == 4800 && r.HeldOutEpisodes == 1200 {
				n++
			}
		}
		return n
	}
	S, rows := search(0)
	if S != 2 || grown(rows) != 3 || !rows[len(rows)-1].Chosen {
		t.Errorf("default growth budget: rank %d, rows %+v; want rank 2, chosen on all the logs", S, rows)
	}
	// Another of rank 2's three starts finds the memory too: it is kept
	// for the α selection to judge (RankChoice.Alternatives).
	if alts == 0 {
		t.Errorf("default growth budget: no other start of rank 2 kept")
	}
	for _, b := range []float64{-1, 1} {
		if S, rows := search(b); S != 1 || grown(rows) != 0 {
			t.Errorf("growth budget %g: rank %d, rows %+v; want rank 1 and no growth", b, S, rows)
		}
	}
}

// TestGrowFits: the growth runs only when its copy of the training
// episodes (13 bytes a step) and a fit of the larger rank fit the memory
// limit together: at the sum it fits, a byte below it does not, and
// without a limit it always does.
func TestGrowFits(t *testing.T) {
	d := sampleDataset(stickyModel(0.5, 8), 100, 1)
	kind, values := rewardSupport(d.Reward)
	c := code(d, kind, values)
	o := &Options{Restarts: 2, Workers: 2}
	rs := &rankSearcher{all: c, tr: c, o: o, proto: protoModel(d, c, o)}
	hi := &rankTry{S: 4}
	fit := memoryNeed(c, 4, len(rs.proto.Trans), false, o)
	sum := int64(math.Ceil(fit + 1000*8*13))
	for _, x := range []struct {
		limit int64
		want  bool
	}{{0, true}, {sum, true}, {sum - 1, false}, {int64(fit), false}} {
		o.MemoryLimit = x.limit
		if got := rs.growFits(hi, 1000); got != x.want {
			t.Errorf("memory limit %d (fit %.0f bytes): growth fits %v, want %v", x.limit, fit, got, x.want)
		}
	}
}

// stickyWide is stickyModel in the compact form with |A| = 4 actions
// that do not change the chain and |O| = 8 observations, the first half
// more likely (0.5 + gap/2 in all) in state 0 and the second half in
// state 1, and a reward of 1 with probability (a+1)/5 under action a,
// 0 otherwise (the reward tells nothing of the state, so that the full
// form, whose reward may depend on the next observation, holds nothing
// more of the logs at rank 1 than the compact form).
// With actionDependent, it is the same chain in the full form whose
// observation after action a is o = a with probability 1/2 and the
// compact one otherwise: an emission the compact form cannot hold at
// the same rank.
func stickyWide(gap float64, H int, actionDependent bool) *Model {
	const S, O, A = 2, 8, 4
	m := randomCompactModel(S, O, A, H, []float64{0, 1}, 5)
	copy(m.Init, []float64{0.5, 0.5})
	for s := range S {
		for o := range O {
			p := (0.5 + gap/2) / (O / 2)
			if (o < O/2) != (s == 0) {
				p = (0.5 - gap/2) / (O / 2)
			}
			m.Obs1[s*O+o], m.Emit[0][s*O+o] = p, p
		}
	}
	for a := range A {
		copy(m.Trans[0][a*S*S:], []float64{0.95, 0.05, 0.05, 0.95})
		for s := range S {
			for s2 := range S {
				i := m.RewardIndex(s, a, s2, 0)
				p := float64(a+1) / 5
				copy(m.RewardProb[0][2*i:], []float64{1 - p, p})
			}
		}
	}
	m.Prepare()
	if !actionDependent {
		return m
	}
	f := fullOf(m)
	E := f.Emit[0]
	for a := range A {
		for s2 := range S {
			for o := range O {
				E[(a*S+s2)*O+o] = m.Emit[0][s2*O+o] / 2
				if o == a {
					E[(a*S+s2)*O+o] += 0.5
				}
			}
		}
	}
	f.Prepare()
	return f
}

// TestGrowthChoosesForm: the growth on all the logs fits the smaller
// rank in both forms and grows the one that wins on the held-out
// episodes. On logs of stickyWide the search's sample (200 episodes) in
// the automatic form (the full one at these sizes) keeps rank 1; on all
// the logs the compact form's rank 1 wins when the emission ignores the
// action, and the full form's when it does not, and rank 2 is grown and
// chosen in that form.
func TestGrowthChoosesForm(t *testing.T) {
	for _, dep := range []bool{false, true} {
		d := sampleDataset(stickyWide(0.5, 8, dep), 6000, 11)
		res := &Result{}
		o, c, proto := searchInputs(t, d, Options{MaxRank: 2, Restarts: 2, Seed: 1, MaxIter: 200, sampleEpisodes: 200})
		S, sm, _, err := rankSearch(context.Background(), c, proto, &o, res, func(TraceRow) {})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("action-dependent emission %v: rank %d, compact %v, rows %+v", dep, S, sm.Compact, res.RankTable)
		var held [2]float64 // rank 1 on all the logs: full, compact
		for _, r := range res.RankTable {
			if r.Rank == 1 && r.Episodes == 4800 {
				held[map[string]int{FormFull: 0, FormCompact: 1}[r.Form]] = r.HeldOutLogLik
			}
		}
		if held[0] == 0 || held[1] == 0 {
			t.Fatalf("action-dependent emission %v: rank 1 not fitted in both forms on all the logs: %+v", dep, res.RankTable)
		}
		if S != 2 || sm.Compact == dep || (held[1] > held[0]) == dep {
			t.Errorf("action-dependent emission %v: rank %d, compact %v, rank 1 held out (full, compact) %v; want rank 2 in the form of the better rank 1", dep, S, sm.Compact, held)
		}
	}
}
