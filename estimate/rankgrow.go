package estimate

import (
	"math"
	"sort"
)

// The rank search's growth on all the logs (rank.go, step 3 of the
// search): a doubling that lost on the search's sample is fitted again
// on every episode and kept when it wins there, on held-out episodes, by
// the criterion that chooses the rank.
//
// Why: the sample (20,000 episodes, 16,000 to train on) bounds the
// search's cost, but a larger model needs more episodes to beat a
// smaller one on held-out episodes than to fit them. On hallway's logs
// (H = 4, 10⁵ uniform episodes, docs/validation.md) rank 32 lost to rank
// 16 on the sample by 41 nats and won on all the logs by 771 nats on
// 20,000 held-out episodes.

// growOnAll fits, when the search's sample left episodes out and the
// doubling from lo to hi failed on it, lo and then hi on all the logs
// (lo from the sample's fit, hi from two starts, growHi). It reports
// whether hi won there beyond the noise; the search then ends with hi
// chosen. When hi does not win, its fits stay in the rank table only and
// the search goes on as if they had not run.
//
// The comparison holds out the share HeldOut of all the logs
// (growSplit): the sample's held-out episodes and as many more from
// outside the sample, so that no held-out episode was seen by a fit and
// the paired block test resolves differences per episode √5 ≈ 2.2 times
// smaller than on the sample's held-out part (with the default HeldOut
// and logs of 10⁵ episodes).
//
// It runs only when it trains on at least twice the sample's training
// episodes, its predicted work (growWork) is within Options.GrowBudget
// and its copy of the training episodes fits the memory limit beside
// the fit (growFits); on logs many times larger than the sample
// (bench/fit.sh's 10⁶ episodes) the work is not within the budget.
func (rs *rankSearcher) growOnAll(lo, hi *rankTry) (bool, error) {
	train, held := rs.growSplit()
	if len(train) < 2*rs.tr.K || rs.growWork(lo, hi, len(train)) > rs.o.GrowBudget || !rs.growFits(hi, len(train)) {
		return false, nil
	}
	tr, blocks := rs.all.subset(train), heldOutBlocks(rs.all, held)
	loBig, err := rs.fitGrown(tr, lo.S, rs.so, lo.model, 0)
	if err != nil {
		return false, err
	}
	hiBig, err := rs.growHi(tr, loBig, hi)
	if err != nil {
		return false, err
	}
	for _, t := range []*rankTry{loBig, hiBig} {
		if err := rs.scoreOn(t, blocks); err != nil {
			return false, err
		}
	}
	rs.grows = append(rs.grows, loBig, hiBig)
	if !beats(hiBig, loBig) {
		return false, nil
	}
	rs.grown = hiBig
	return true, nil
}

// growHi fits hi's rank on tr from two starts and returns the one of
// the higher training log-likelihood (the rule that picks among any
// fit's starts): loBig's states split in two (SplitStart, the search's
// warm start) and the sample's fit of hi. Neither start finds the larger
// model's structure on all logs: on stickyModel's (rankgrow_test.go)
// the split of a one-state fit stays at its saddle point while the
// sample's two-state fit holds the memory, and on hallway's the sample's
// fit ends 739 nats higher; on tiger-grid's, in the compact form, the
// sample's rank-32 fit stays where it overfitted the sample while the
// split climbs 520 nats higher.
func (rs *rankSearcher) growHi(tr *coded, loBig, hi *rankTry) (*rankTry, error) {
	ro := SplitStart(rs.so, loBig.model, hi.S, rs.o.Seed+uint64(hi.S))
	split, err := rs.fitGrown(tr, hi.S, ro, ro.Start, 0)
	if err != nil {
		return nil, err
	}
	again, err := rs.fitGrown(tr, hi.S, rs.so, hi.model, 1)
	if err != nil {
		return nil, err
	}
	if again.train > split.train {
		return again, nil
	}
	return split, nil
}

// growSplit is growOnAll's training and held-out episodes, each sorted:
// in the search's order of all the episodes (searchOrder), the sample's
// held-out ones and, after the sample, as many more as make the share
// HeldOut of all the logs are held out; the rest train. Both are nil
// when the sample held all the episodes.
func (rs *rankSearcher) growSplit() (train, held []int) {
	nHeld := 0 // the sample's held-out episodes
	for _, b := range rs.blocks {
		nHeld += b.K
	}
	K, n := rs.all.K, rs.tr.K+nHeld // n: the sample
	if K <= n {
		return nil, nil
	}
	perm := searchOrder(K, rs.o.Seed)
	more := max(0, min(K-n, int(math.Round(rs.o.HeldOut*float64(K)))-nHeld))
	held = append(append([]int(nil), perm[:nHeld]...), perm[n:n+more]...)
	train = append(append([]int(nil), perm[nHeld:n]...), perm[n+more:]...)
	sort.Ints(held)
	sort.Ints(train)
	return train, held
}

// growStepBytes is the memory of one logged step in the growth's copy of
// the training episodes: observation and action codes (2 bytes each),
// the reward (8) and its code (1).
const growStepBytes = 13

// growFits says whether the growth's copy of n training episodes and a
// fit of hi's rank fit Options.MemoryLimit (always, without a limit).
func (rs *rankSearcher) growFits(hi *rankTry, n int) bool {
	if rs.o.MemoryLimit <= 0 {
		return true
	}
	need := float64(n*rs.tr.H)*growStepBytes + memoryNeed(rs.all, hi.S, len(rs.proto.Trans), rs.proto.Compact, rs.o)
	return need <= float64(rs.o.MemoryLimit)
}

// growWork is the predicted E-step work of growOnAll: the E-steps of lo's
// and hi's best sample starts, on big training episodes.
func (rs *rankSearcher) growWork(lo, hi *rankTry, big int) float64 {
	per := func(t *rankTry) float64 { return float64(t.esteps) * float64(t.S*t.S) }
	return (per(lo) + per(hi)) * float64(big*rs.tr.H)
}

// fitGrown runs EM with S states on tr from m0 (o.Start, probed for its
// saddle, or a model of S states) as start number start. Its work is not
// the search's (Options.GrowBudget bounds it, before it runs), so the
// bisection that follows a growth that did not win runs as if it had
// not.
func (rs *rankSearcher) fitGrown(tr *coded, S int, o Options, m0 *Model, start int) (*rankTry, error) {
	r := runEM(rs.ctx, tr, m0, &o, rs.o.Workers, TraceRow{Data: "grow", Rank: S, Restart: start}, rs.report)
	if r.err != nil {
		return nil, r.err
	}
	rs.res.Trace = append(rs.res.Trace, r.trace...)
	return tryOf(S, r, tr.K), nil
}
