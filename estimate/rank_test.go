package estimate

import (
	"context"
	"math"
	"testing"

	"github.com/psrlcb/psrlcb/ingest"
)

// TestGrowModelKeepsDistribution: splitting every state of a model into
// copies (without jitter the copies are exact) leaves the likelihood of
// any data unchanged, since the copies of a state together carry its
// probability; with jitter the model is still valid and close.
func TestGrowModelKeepsDistribution(t *testing.T) {
	for i, rv := range [][]float64{{0, 1, 5}, nil, {0, 1, 5}} {
		m := randomModel(3, 4, 2, 4, false, rv, 5)
		if i == 2 {
			// The Compact form (emission shared by the actions, reward
			// given (s, a, s2)), as large vocabularies are fitted.
			m = randomCompactModel(3, 4, 2, 4, rv, 5)
		}
		if rv == nil {
			// randomModel with no reward support: Gaussian rewards.
			if m.Reward != RewardGaussian {
				t.Skip("randomModel without rewards is not Gaussian")
			}
		}
		d := sampleDataset(m, 300, 6)
		want := m.DataLogLik(d)
		for _, S2 := range []int{4, 6, 7} {
			g := growModelWith(m, S2, 1, 0, false)
			if err := g.Validate(1e-9); err != nil {
				t.Fatalf("grown to %d: %v", S2, err)
			}
			if got := g.DataLogLik(d); math.Abs(got-want) > 1e-8*math.Abs(want) {
				t.Fatalf("grown to %d: log-likelihood %v, want %v", S2, got, want)
			}
			j := growModel(m, S2, 1)
			if err := j.Validate(1e-9); err != nil {
				t.Fatalf("jittered %d: %v", S2, err)
			}
			if got := j.DataLogLik(d); math.Abs(got-want) > 0.05*math.Abs(want) {
				t.Fatalf("jittered %d: log-likelihood %v, far from %v", S2, got, want)
			}
		}
	}
}

// TestGrowPersistent: the persistent split's transitions carry the copy
// number from step to step. Grown without jitter from 3 states to 6,
// every state enters the copy of its own number with 1 − splitSwitch of
// its parent's probability of entering that parent and the other copy
// with splitSwitch; grown to 5 (two parents copied, one not), a state of
// the uncopied parent, or one entering it, shares equally. Swapping
// every state with its copy (splitPairs) leaves the grown model as it
// is, parameter for parameter, at both sizes, as the saddle probe
// assumes; and the grown model keeps the smaller one's likelihood.
func TestGrowPersistent(t *testing.T) {
	m := randomModel(3, 4, 2, 4, true, []float64{0, 1, 5}, 7)
	d := sampleDataset(m, 200, 8)
	const S = 3
	for _, S2 := range []int{6, 5} {
		g := growModelWith(m, S2, 1, 0, true)
		copies := func(p int) int { return (S2 - p + S - 1) / S }
		for a := 0; a < m.NumActions; a++ {
			for j := 0; j < S2; j++ {
				for j2 := 0; j2 < S2; j2++ {
					p, p2 := j%S, j2%S
					base := m.Trans[0][(a*S+p)*S+p2]
					want := base / float64(copies(p2))
					if copies(p) == 2 && copies(p2) == 2 {
						want = base * splitSwitch
						if j/S == j2/S {
							want = base * (1 - splitSwitch)
						}
					}
					if got := g.Trans[0][(a*S2+j)*S2+j2]; math.Abs(got-want) > 1e-12 {
						t.Fatalf("grown to %d, action %d: T(%d→%d) = %v, want %v", S2, a, j, j2, got, want)
					}
				}
			}
		}
		x, y := flatten(g, nil), flatten(permuteStates(g, splitPairs(S, S2)), nil)
		for i := range x {
			if math.Abs(x[i]-y[i]) > 1e-12 {
				t.Fatalf("grown to %d: the swap of the copies changed parameter %d: %v → %v", S2, i, x[i], y[i])
			}
		}
		if got, want := g.DataLogLik(d), m.DataLogLik(d); math.Abs(got-want) > 1e-8*math.Abs(want) {
			t.Fatalf("grown to %d: log-likelihood %v, want %v", S2, got, want)
		}
	}
}

// TestPersistentSplitFindsMemory: on episodes of stickyModel (a hidden
// state that persists, seen through weak observations), EM from the
// persistent split of a one-state fit reaches the optimum EM from the
// true model reaches, to within 1 nat, while EM from the equal split
// stays at the one-state fit's likelihood (within 0.1 nats): its copies
// are a saddle point EM does not leave here, though the chain's memory
// is worth 20 nats and more.
func TestPersistentSplitFindsMemory(t *testing.T) {
	for _, gap := range []float64{0.5, 0.3} {
		m := stickyModel(gap, 8)
		d := sampleDataset(m, 500, 11)
		fit := func(o Options) float64 {
			o.Restarts, o.Seed, o.SkipThetaMin, o.Tol = 1, 1, true, 1e-5
			res, err := Fit(context.Background(), d, o)
			if err != nil {
				t.Fatal(err)
			}
			return res.LogLik
		}
		one := fit(Options{Rank: 1})
		res, err := Fit(context.Background(), d, Options{Rank: 1, Restarts: 1, Seed: 1, SkipThetaMin: true, Tol: 1e-5})
		if err != nil {
			t.Fatal(err)
		}
		equal := fit(SplitStart(Options{}, res.Model, 2, 3))
		pers := SplitStart(Options{}, res.Model, 2, 3)
		pers.Start = growPersistent(res.Model, 2, 3)
		persistent := fit(pers)
		truth := fit(Options{Start: m})
		if truth < one+20 {
			t.Fatalf("gap %.1f: the memory is worth %.2f nats only", gap, truth-one)
		}
		if persistent < truth-1 || equal > one+0.1 {
			t.Errorf("gap %.1f: persistent split %.2f, equal split %.2f, from the truth %.2f, one state %.2f", gap, persistent, equal, truth, one)
		}
	}
}

// TestRetryPersistent: a doubling that lost gets the persistent split.
// On 500 episodes of stickyModel, a rank-2 try at the one-state fit's
// saddle (its equal split, not fitted, with the one-state likelihood) is
// replaced by the persistent split's fit, which gains more than 50 nats
// of training likelihood, is scored on the held-out blocks, beats rank 1
// there and becomes the rank's try; a try whose training likelihood no
// start can reach is kept as it is.
func TestRetryPersistent(t *testing.T) {
	d := sampleDataset(stickyModel(0.5, 8), 500, 11)
	o, c, proto := searchInputs(t, d, Options{MaxRank: 2, Seed: 1})
	rs, _ := newRankSearcher(context.Background(), c, proto, &o, &Result{}, func(TraceRow) {})
	lo, err := rs.fitAt(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	saddle := &rankTry{S: 2, model: growModel(lo.model, 2, 1), train: lo.train, n: rs.tr.K}
	got, err := rs.retryPersistent(saddle, lo)
	if err != nil {
		t.Fatal(err)
	}
	if got == saddle || got.train < lo.train+50 || len(got.blocks) != len(lo.blocks) {
		t.Fatalf("retry: training %.2f (one state %.2f), %d held-out blocks (rank 1: %d)", got.train, lo.train, len(got.blocks), len(lo.blocks))
	}
	if !beats(got, lo) || rs.tried[2] != got {
		t.Fatalf("retry: held-out %.2f against rank 1's %.2f, beats it %v, recorded %v", got.held, lo.held, beats(got, lo), rs.tried[2] == got)
	}
	best := &rankTry{S: 2, model: got.model, train: math.Inf(1), n: rs.tr.K}
	rs.tried[2] = best
	if kept, err := rs.retryPersistent(best, lo); err != nil || kept != best || rs.tried[2] != best {
		t.Fatalf("a try above any start was replaced (err %v)", err)
	}
}

// TestBeats: the noise rule on hand-made block log-likelihoods. Block
// differences 1,1,1,1 have no spread: any positive total difference wins.
// Differences 3,−1,3,−1 total 4 with sample sd 2.309, so the SE of the
// total is 2.309·2 = 4.62 and 4 < 2·4.62 does not win.
func TestBeats(t *testing.T) {
	a := &rankTry{blocks: []float64{-10, -10, -10, -10}, held: -40}
	b := &rankTry{blocks: []float64{-9, -9, -9, -9}, held: -36}
	if !beats(b, a) || beats(a, b) {
		t.Fatal("uniform gain of one nat per block must win")
	}
	c := &rankTry{blocks: []float64{-7, -11, -7, -11}, held: -36}
	if beats(c, a) {
		t.Fatal("a gain of 4 with SE 4.62 must not win at 2 SE")
	}
}

// TestChooseRankMatchesFit: ChooseRank alone gives the rank, table and
// model form that Fit's automatic search gives, in either form.
func TestChooseRankMatchesFit(t *testing.T) {
	m := randomModel(2, 3, 2, 4, true, []float64{0, 1}, 11)
	d := sampleDataset(m, 800, 12)
	for _, form := range []string{FormAuto, FormCompact} {
		o := Options{MaxRank: 4, Restarts: 2, Seed: 3, Tol: 1e-5, Form: form}
		rc, err := ChooseRank(context.Background(), d, o)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Fit(context.Background(), d, o)
		if err != nil {
			t.Fatal(err)
		}
		if rc.Rank != res.Model.States || len(rc.Table) != len(res.RankTable) || rc.Model == nil || rc.Model.States != rc.Rank {
			t.Fatalf("%s: ChooseRank %d (%d rows), Fit %d (%d rows)", form, rc.Rank, len(rc.Table), res.Model.States, len(res.RankTable))
		}
		if rc.Model.Compact != (form == FormCompact) || res.Model.Compact != rc.Model.Compact {
			t.Fatalf("%s: ChooseRank's model compact %v, Fit's %v", form, rc.Model.Compact, res.Model.Compact)
		}
		for i := range rc.Table {
			if rc.Table[i] != res.RankTable[i] {
				t.Fatalf("%s: row %d: %+v vs %+v", form, i, rc.Table[i], res.RankTable[i])
			}
		}
	}
}

// TestRankSearchGrowsPastEight: on logs of a 10-state chain whose
// observation is its state (each state moves to the next with probability
// 0.9), no model of 8 states or fewer fits the held-out episodes as well,
// so the search doubles past 8 and chooses more than 8 states (16 is the
// cap; the bisection below it settles on 12 here).
func TestRankSearchGrowsPastEight(t *testing.T) {
	if testing.Short() {
		t.Skip("fits ranks up to 16")
	}
	S2, sm, res := searchCyclic(t, 10, 16)
	t.Logf("rank rows %+v", res.RankTable)
	if S2 <= 8 || sm == nil || sm.States != S2 {
		t.Fatalf("chose rank %d (model %v), want more than 8", S2, sm != nil)
	}
	for i := 1; i < len(res.RankTable); i++ {
		if res.RankTable[i].Rank <= res.RankTable[i-1].Rank {
			t.Fatalf("rank rows not increasing: %+v", res.RankTable)
		}
	}
}

// cyclicModel has S states, each showing its own observation, moving to
// the next state with probability 0.9 (to any with 0.1), one action and
// reward 0: no model of fewer than S states fits its episodes.
func cyclicModel(S int) *Model {
	m := randomModel(S, S, 1, 4, true, []float64{0}, 3)
	for s := 0; s < S; s++ {
		m.Init[s] = 1.0 / float64(S)
		for o := 0; o < S; o++ {
			e := 0.0
			if o == s {
				e = 1
			}
			m.Obs1[s*S+o] = e
			m.Emit[0][s*S+o] = e
		}
		for s2 := 0; s2 < S; s2++ {
			p := 0.1 / float64(S)
			if s2 == (s+1)%S {
				p += 0.9
			}
			m.Trans[0][s*S+s2] = p
		}
	}
	m.Prepare()
	return m
}

// searchInputs is what the rank search takes for d and the options o:
// o with its defaults, the coded episodes and the prototype model.
func searchInputs(t *testing.T, d *ingest.Dataset, o Options) (Options, *coded, *Model) {
	t.Helper()
	o, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	kind, values := rewardSupport(d.Reward)
	c := code(d, kind, values)
	return o, c, protoModel(d, c, &o)
}

// searchCyclic runs the rank search (two starts of at most 100
// iterations, ranks up to maxRank) on 2000 episodes of cyclicModel(S) and
// returns the chosen rank, its model and the rank rows.
func searchCyclic(t *testing.T, S, maxRank int) (int, *Model, *Result) {
	t.Helper()
	d := sampleDataset(cyclicModel(S), 2000, 4)
	res := &Result{}
	o, c, proto := searchInputs(t, d, Options{MaxRank: maxRank, Restarts: 2, Seed: 1, MaxIter: 100})
	S2, sm, _, err := rankSearch(context.Background(), c, proto, &o, res, func(TraceRow) {})
	if err != nil {
		t.Fatal(err)
	}
	return S2, sm, res
}

// TestRankSearchBisectsBelowCap: when MaxRank (or the work budget) ends
// the doubling on an improvement, the ranks between the last two
// doublings are bisected for the smallest one the last does not beat:
// 5 hidden states, cap 8, the search doubles 1, 2, 4, 8 and must choose 5
// (before this refinement it chose 8, the cap).
func TestRankSearchBisectsBelowCap(t *testing.T) {
	if testing.Short() {
		t.Skip("fits ranks up to 8")
	}
	S2, sm, res := searchCyclic(t, 5, 8)
	var ranks []int
	for _, r := range res.RankTable {
		ranks = append(ranks, r.Rank)
	}
	t.Logf("tried %v, chose %d", ranks, S2)
	if S2 != 5 || sm == nil || sm.States != 5 {
		t.Fatalf("tried %v, chose rank %d, want 5", ranks, S2)
	}
}

// TestRankSampleSize: the fixed sample for a few dozen symbols; on a
// vocabulary of 20,000 items at H = 5, 50 steps per emission of a state:
// 200,000 episodes in the Compact form, |A| times that in the full form.
func TestRankSampleSize(t *testing.T) {
	small := &coded{O: 21, A: 5, H: 4}
	wide := &coded{O: 20000, A: 50, H: 5}
	if got := rankSampleSize(small, false); got != RankSampleEpisodes {
		t.Errorf("21 observations: %d episodes, want %d", got, RankSampleEpisodes)
	}
	if got := rankSampleSize(wide, true); got != 200000 {
		t.Errorf("20,000 observations, compact: %d episodes, want 200000", got)
	}
	if got := rankSampleSize(wide, false); got != 10000000 {
		t.Errorf("20,000 observations, full: %d episodes, want 10000000", got)
	}
}

// TestRankSearchHonoursTol: a tolerance asked for is the search's too
// (rankTol). At Tol 1e-12 no start of the search converges, so each runs
// its MaxIter iterations (rank 2; rank 1's EM is exact in one step); at
// the default the search uses rankSearchTol,
// and starts stop early. Before rankTol the search used max(Tol,
// rankSearchTol) and stopped early either way.
func TestRankSearchHonoursTol(t *testing.T) {
	d := sampleDataset(cyclicModel(3), 1000, 4)
	ranTo := func(tol float64) (full, starts int) {
		rc, err := ChooseRank(context.Background(), d, Options{MaxRank: 2, Restarts: 2, Seed: 1, MaxIter: 40, Tol: tol})
		if err != nil {
			t.Fatal(err)
		}
		last := map[[2]int]int{}
		for _, r := range rc.Trace {
			if r.Rank != 2 {
				continue // rank 1 has no latent state: EM is done in one step
			}
			k := [2]int{r.Rank, r.Restart}
			last[k] = max(last[k], r.Iter)
		}
		for _, it := range last {
			if it >= 39 {
				full++
			}
		}
		return full, len(last)
	}
	if full, n := ranTo(1e-12); n == 0 || full != n {
		t.Errorf("Tol 1e-12: %d of %d search starts ran to MaxIter, want all", full, n)
	}
	if full, n := ranTo(0); full == n {
		t.Errorf("default Tol: all %d search starts ran to MaxIter, want the search's own tolerance to stop some", n)
	}
	if got := rankTol(&Options{Tol: DefaultTol}); got != rankSearchTol {
		t.Errorf("rankTol at the default = %v, want rankSearchTol %v", got, rankSearchTol)
	}
	if got := rankTol(&Options{Tol: 1e-3}); got != 1e-3 {
		t.Errorf("rankTol(1e-3) = %v, want the tolerance asked for", got)
	}
}
