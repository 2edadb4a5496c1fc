package pipeline

import (
	"fmt"
	"math"

	"github.com/psrlcb/psrlcb/errkind"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
)

// ErrReward matches logs whose rewards the fit cannot represent (kind
// errkind.Data): a reward beyond ±MaxAbsReward, or returns whose spread is
// below what double precision resolves at their size. The message names
// the episode.
var ErrReward = errkind.New(errkind.Data, "rewards out of range")

// MaxAbsReward bounds |r_h| (ingest.MaxAbsReward: logs read from files
// are checked there, with the file named; this check covers datasets
// built in Go).
const MaxAbsReward = ingest.MaxAbsReward

// minRelativeRange is the least spread of the returns, relative to their
// size, that the rescaling to [0,1] resolves: a return is a sum of H
// doubles (relative error about H·1.1e-16), so a spread of 1e-9 of the
// returns' magnitude keeps the rounding below H·1e-7 of the scale.
const minRelativeRange = 1e-9

// plural is "1 episode", "2 episodes".
func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// checkEnough is the least data every run needs: at least one episode in
// each of the H subsets D_0..D_{H−1} of the split (Huang, Liang, Yang,
// arXiv:2307.00405, Algorithm 2 line 1: U_h is built from D_h alone).
func checkEnough(K, H int) error {
	if K == 0 {
		return fmt.Errorf("%w: no valid episodes to fit", ErrTooFew)
	}
	if K < H {
		return fmt.Errorf("%w: %s of %s, but the split into H = %d subsets D_0..D_%d (one per step, Algorithm 2) needs at least %d",
			ErrTooFew, plural(K, "episode"), plural(H, "step"), H, H-1, H)
	}
	return nil
}

// checkRewards refuses rewards the rescaling to [0,1] cannot represent
// (see MaxAbsReward, minRelativeRange). Constant returns are fine: the
// verdict then says the logs cannot rank policies.
func checkRewards(d *ingest.Dataset) error {
	K := d.NumEpisodes()
	lo, hi, klo, khi := math.Inf(1), math.Inf(-1), 0, 0
	for k := 0; k < K; k++ {
		if err := checkEpisodeRewards(d, k); err != nil {
			return err
		}
		ret := d.Return(k)
		if ret < lo {
			lo, klo = ret, k
		}
		if ret > hi {
			hi, khi = ret, k
		}
	}
	if K == 0 || hi == lo {
		return nil
	}
	if size := math.Max(math.Abs(lo), math.Abs(hi)); hi-lo < minRelativeRange*size {
		return fmt.Errorf("%w: returns range from %.17g (episode %s) to %.17g (episode %s), a spread of %.3g at a size of %.3g, below what double precision resolves when they are rescaled to [0,1]; subtract a constant from the rewards", ErrReward, lo, d.EpisodeIDs[klo], hi, d.EpisodeIDs[khi], hi-lo, size)
	}
	return nil
}

// checkEpisodeRewards refuses a reward of episode k beyond ±MaxAbsReward
// (or NaN), naming the episode and step.
func checkEpisodeRewards(d *ingest.Dataset, k int) error {
	H := d.Horizon
	for h, r := range d.Reward[k*H : (k+1)*H] {
		if !(math.Abs(r) <= MaxAbsReward) {
			return fmt.Errorf("%w: episode %s step %d: reward %g is beyond ±%g; rescale the rewards (divide them by a constant)", ErrReward, d.EpisodeIDs[k], h+1, r, MaxAbsReward)
		}
	}
	return nil
}

// rewardSupportOf reports whether m's reward emission was fitted on the
// same reward support as rewards: the same distinct values (categorical)
// or more than estimate.MaxCategoricalRewards of them in both (Gaussian).
func rewardSupportOf(m *estimate.Model, rewards []float64) bool {
	seen := map[float64]bool{}
	for _, r := range rewards {
		seen[r] = true
		if len(seen) > estimate.MaxCategoricalRewards {
			return m.Reward == estimate.RewardGaussian
		}
	}
	if m.Reward != estimate.RewardCategorical || len(m.RewardValues) != len(seen) {
		return false
	}
	for _, v := range m.RewardValues {
		if !seen[v] {
			return false
		}
	}
	return true
}

// checkReturnRange refuses a known return range (Options.ReturnRange)
// that a logged return lies outside of.
func checkReturnRange(d *ingest.Dataset, r [2]float64) error {
	if r == [2]float64{} {
		return nil
	}
	for k := 0; k < d.NumEpisodes(); k++ {
		if ret := d.Return(k); ret < r[0] || ret > r[1] {
			return fmt.Errorf("%w: episode %s has return %g, outside the stated return range [%g, %g]", ErrReward, d.EpisodeIDs[k], ret, r[0], r[1])
		}
	}
	return nil
}

// applyReturnRange rescales m's returns by the known range r instead of
// the observed one (r zero: unchanged). The paper's bound (Huang, Liang,
// Yang, arXiv:2307.00405, Section 5) takes R ∈ [0,1] over every possible
// trajectory; the observed range only covers the logged ones, and a policy
// that leaves them can do worse than the worst logged return, below any
// bound whose bonus is capped at the observed range. The fit itself does
// not depend on the range.
func applyReturnRange(m *estimate.Model, r [2]float64) {
	if r != [2]float64{} {
		m.ReturnMin, m.ReturnMax = r[0], r[1]
	}
}
