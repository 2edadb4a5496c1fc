package estimate

import (
	"math"
	"slices"
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
// (lo in one or both model forms, growLo; hi in the form of lo's best
// fit, from three starts, growHi). It reports whether hi won there
// beyond the noise; the search then ends with hi chosen, in its form.
// When hi does not win, the fits stay in the rank table only and the
// search goes on as if they had not run.
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
	loBig, err := rs.growLo(tr, lo, blocks)
	if err != nil {
		return false, err
	}
	tries, err := rs.growHi(tr, loBig, hi)
	if err != nil {
		return false, err
	}
	hiBig := tries[0]
	if err := rs.scoreOn(hiBig, blocks); err != nil {
		return false, err
	}
	rs.grows = append(rs.grows, hiBig)
	if !beats(hiBig, loBig) {
		return false, nil
	}
	rs.grown = hiBig
	// The other starts are scored only when the larger rank won: they
	// matter then alone.
	for _, t := range tries[1:] {
		if err := rs.scoreOn(t, blocks); err != nil {
			return false, err
		}
		if beats(t, loBig) {
			rs.grownAlt = append(rs.grownAlt, t.model)
		}
	}
	return true, nil
}

// growLo fits lo's rank on tr and returns the fit that predicts the
// held-out blocks best, the model the larger rank must beat and is
// grown from. In the form the search used, the fit starts from the
// sample's. When the form is the automatic choice and the search used
// the full form (chosen by the size of its step kernel alone), the
// compact form is fitted too (growCompact), and a row of each form
// enters the rank table.
//
// Why held out and not training likelihood: fits of the same rank from
// different starts reach optima whose training likelihoods differ by
// less than their held-out ones, and the held-out order is the order of
// the decisions they plan (docs/validation.md, "Fifth session": on
// tiger-grid's logs two compact rank-36 fits within 0.0001 nats per
// episode of each other on the logs were 0.0044 apart on fresh
// episodes, and planned with regrets 0.004 and 0.909). Which rank-16
// optimum the split starts from decides whether the larger rank finds
// the memory that decides tiger-grid's plan. Choosing the smaller model
// on the held-out episodes it is then compared on makes the larger rank
// beat the best of the fits, not a chosen one.
func (rs *rankSearcher) growLo(tr *coded, lo *rankTry, blocks []*coded) (*rankTry, error) {
	full, err := rs.fitGrown(tr, lo.S, rs.so, lo.model, 0)
	if err != nil {
		return nil, err
	}
	if err := rs.scoreOn(full, blocks); err != nil {
		return nil, err
	}
	rs.grows = append(rs.grows, full)
	if rs.o.Form != FormAuto || full.model.Compact {
		return full, nil
	}
	compact, err := rs.growCompact(tr, full, blocks)
	if err != nil {
		return nil, err
	}
	rs.grows = append(rs.grows, compact)
	if compact.held > full.held {
		return compact, nil
	}
	return full, nil
}

// growCompact fits the rank of full, a full-form fit on tr, in the
// compact form on tr from two starts and returns the one that predicts
// the held-out blocks better, scored: full's model in the compact form
// (CompactOf) and the best of the search's starts fitted in the compact
// form on the search's training episodes. On tiger-grid's logs (seeds 1
// and 2) each start led to the larger rank that found the memory on one
// seed, and the held-out episodes chose that start on both.
func (rs *rankSearcher) growCompact(tr *coded, full *rankTry, blocks []*coded) (*rankTry, error) {
	S := full.S
	from, err := rs.fitGrown(tr, S, rs.so, CompactOf(full.model), 1)
	if err != nil {
		return nil, err
	}
	proto := *rs.proto
	proto.Compact = true
	ro := rs.so
	ro.Start = nil
	fits, err := fitRank(rs.ctx, rs.tr, &proto, S, &ro, "compact", rs.report)
	if err != nil {
		return nil, err
	}
	for _, r := range fits {
		rs.res.Trace = append(rs.res.Trace, r.trace...)
	}
	sample, err := rs.fitGrown(tr, S, rs.so, fits[best(fits)].model, 2)
	if err != nil {
		return nil, err
	}
	for _, t := range []*rankTry{from, sample} {
		if err := rs.scoreOn(t, blocks); err != nil {
			return nil, err
		}
	}
	if sample.held > from.held {
		return sample, nil
	}
	return from, nil
}

// growHi fits hi's rank on tr from three starts, in loBig's form, and
// returns them, the one of the higher training log-likelihood (the rule
// that picks among any fit's starts) first and the others in their
// order. When the larger rank wins, the others that beat loBig too are
// the pipeline's alternatives (RankChoice.Alternatives): the α
// selection's cross-fitted decision value chooses among them (see
// RankChoice). The starts: loBig's states split in two
// (SplitStart, the search's warm start), the same split with the
// copies' number persisting along the episode (PersistentSplitStart,
// the start the search retries a lost doubling with) and the sample's
// fit of hi (in the compact form when loBig is compact). No one start
// finds the larger model's structure on all logs: on stickyModel's
// (rankgrow_test.go) the split of a one-state fit stays at its saddle
// point while the sample's two-state fit holds the memory; on hallway's
// the sample's fit ends 739 nats higher than the split; on tiger-grid's,
// in the compact form, the sample's rank-32 fit stays where it
// overfitted the sample, and of the three seeds on which the growth
// found the memory (docs/validation.md, "Eighth session") the
// persistent split did on two and the equal split on the third.
func (rs *rankSearcher) growHi(tr *coded, loBig, hi *rankTry) ([]*rankTry, error) {
	seed := rs.o.Seed + uint64(hi.S)
	again := rs.so
	again.Start = hi.model
	if loBig.model.Compact {
		again.Start = CompactOf(hi.model)
	}
	var tries []*rankTry
	b := 0
	for i, o := range []Options{SplitStart(rs.so, loBig.model, hi.S, seed), PersistentSplitStart(rs.so, loBig.model, hi.S, seed), again} {
		t, err := rs.fitGrown(tr, hi.S, o, o.Start, i)
		if err != nil {
			return nil, err
		}
		if tries = append(tries, t); t.train > tries[b].train {
			b = i
		}
	}
	first := tries[b]
	return slices.Insert(slices.Delete(tries, b, b+1), 0, first), nil
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
// and hi's best sample starts, on big training episodes. It gates the
// growth by its size; the growth runs more fits than these two (up to
// three of lo, the compact form's starts on the sample, three of hi),
// most of them warm and short, and the larger rank's persistent split
// long where it finds a memory (149 E-steps of rank 32 on tiger-grid's
// logs, 44 s of the growth's 80 s).
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
