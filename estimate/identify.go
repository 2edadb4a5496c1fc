package estimate

import "fmt"

// distinctHistories returns the number of distinct logged prefixes
// τ_h = (o_1, a_1, …, a_{h−1}, o_h) at the step h that has the most,
// counting no further than atMost. A latent-state model with more states
// than that cannot be told apart from one with fewer on these logs: its
// predictive states (Huang, Liang, Yang, ICLR 2024, arXiv:2307.00405,
// Section 3) span at most as many dimensions as there are distinct
// histories to predict from.
func distinctHistories(c *coded, atMost int) int {
	H := c.H
	hash := make([]uint64, c.K)
	for k := range hash {
		hash[k] = 14695981039346656037
	}
	best := 0
	seen := make(map[uint64]struct{})
	for h := 0; h < H && best < atMost; h++ {
		best = max(best, c.stepHashes(hash, h, atMost, seen))
	}
	return best
}

// stepHashes extends every episode's history hash by step h and returns
// the number of distinct hashes, counting at most atMost (seen is
// scratch).
func (c *coded) stepHashes(hash []uint64, h, atMost int, seen map[uint64]struct{}) int {
	clear(seen)
	for k := range hash {
		hash[k] = c.extendHash(hash[k], k, h)
		if len(seen) < atMost {
			seen[hash[k]] = struct{}{}
		}
	}
	return len(seen)
}

// extendHash extends the FNV-style hash x of episode k's history before
// step h by a_{h−1} (h > 0) and o_h.
func (c *coded) extendHash(x uint64, k, h int) uint64 {
	H := c.H
	if h > 0 {
		x = (x ^ uint64(c.act[k*H+h-1]) ^ 1<<40) * 1099511628211
	}
	return (x ^ uint64(c.obs[k*H+h])) * 1099511628211
}

// freeParams is the number of free transition and emission parameters of
// a rank-S model of the form on c's vocabularies: S(S−1) per action of
// transitions, |O|−1 per emission row (a row per (action, state), or per
// state in the Compact form) and S−1 of the initial distribution.
func freeParams(c *coded, S int, compact bool) float64 {
	s, A, O := float64(S), float64(c.A), float64(c.O)
	rows := A * s
	if compact {
		rows = s
	}
	return A*s*(s-1) + rows*(O-1) + s - 1
}

// capRank checks the rank against what the logs can identify. An explicit
// rank above the logs' distinct histories is lowered to their number. The
// automatic rank's MaxRank is lowered to that number too, and to the
// largest rank with no more free transition and emission parameters than
// logged steps (freeParams; with thousands of actions and a few steps per
// action even two states cannot be estimated). MaxRankCause says why.
func capRank(c *coded, o *Options, compact func(S int) bool) error {
	S := o.largestRank()
	d := distinctHistories(c, S)
	if o.Rank != 0 {
		o.capAskedRank(d)
		return nil
	}
	capParams(c, o, o.capMaxRank(S, d), compact)
	return nil
}

// largestRank is the rank asked or, when the rank search chooses it, the
// search's largest rank.
func (o *Options) largestRank() int {
	if o.Rank == 0 {
		return o.MaxRank
	}
	return o.Rank
}

// capAskedRank lowers the rank asked to the d distinct histories (at
// least 1) when it is above them, and says why.
func (o *Options) capAskedRank(d int) {
	if d < o.Rank {
		o.MaxRankCause = fmt.Sprintf("rank %d was asked, but the logs hold at most %d distinct histories at any step, so no more than %d latent states can be told apart: rank %d was fitted", o.Rank, d, d, max(d, 1))
		o.Rank = max(d, 1)
	}
}

// capMaxRank lowers the rank search's largest rank S to the d distinct
// histories (at least 1) when it is above them, saying why, and returns
// the largest rank left.
func (o *Options) capMaxRank(S, d int) int {
	if d < S {
		S = max(d, 1)
		o.MaxRank = S
		o.MaxRankCause = fmt.Sprintf("the logs hold at most %d distinct histories at any step", d)
	}
	return S
}

// capParams lowers the automatic rank's MaxRank from S to the largest
// rank with no more free transition and emission parameters than logged
// steps.
func capParams(c *coded, o *Options, S int, compact func(S int) bool) {
	steps := float64(c.K * c.H)
	p := S
	for p > 1 && freeParams(c, p, compact(p)) > steps {
		p--
	}
	if p < S {
		o.MaxRank = p
		o.MaxRankCause = fmt.Sprintf("a rank-%d model of %d actions and %d observations has %.0f free transition and emission parameters, more than the %d logged steps", p+1, c.A, c.O, freeParams(c, p+1, compact(p+1)), c.K*c.H)
	}
}

// gib formats a byte count in GiB.
func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
