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
// rank 2 wins and is chosen. With the growth off (GrowBudget < 0) or a
// budget its predicted work exceeds, the search keeps rank 1 and has no
// growth rows.
func TestRankSearchGrowsOnAllLogs(t *testing.T) {
	d := sampleDataset(stickyModel(0.5, 8), 6000, 11)
	search := func(grow float64) (int, []RankRow) {
		res := &Result{}
		o, c, proto := searchInputs(t, d, Options{MaxRank: 2, Restarts: 2, Seed: 1, MaxIter: 200, GrowBudget: grow, sampleEpisodes: 200})
		S, sm, err := rankSearch(context.Background(), c, proto, &o, res, func(TraceRow) {})
		if err != nil {
			t.Fatal(err)
		}
		if sm.States != S {
			t.Fatalf("growth budget %g: rank %d, model of %d states", grow, S, sm.States)
		}
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
	if S != 2 || grown(rows) != 2 || !rows[len(rows)-1].Chosen {
		t.Errorf("default growth budget: rank %d, rows %+v; want rank 2, chosen on all the logs", S, rows)
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
