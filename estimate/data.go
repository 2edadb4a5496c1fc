package estimate

import (
	"math"
	"sort"

	"github.com/psrlcb/psrlcb/ingest"
)

// coded is a dataset prepared for EM: rewards coded into value indexes
// when categorical.
type coded struct {
	K, H, O, A int
	obs, act   []uint16
	rew        []float64
	rv         []uint8 // reward value index, categorical only
	kind       RewardKind
	values     []float64 // categorical support
	rewMean    float64   // global reward mean and variance (Gaussian)
	rewVar     float64
	src        *ingest.Dataset // the dataset coded, handed to an EStepper
}

// rewardSupport decides the reward emission from the data: categorical
// over the distinct values when there are at most MaxCategoricalRewards,
// Gaussian otherwise.
func rewardSupport(rew []float64) (RewardKind, []float64) {
	seen, ok := distinctRewards(rew)
	if !ok {
		return RewardGaussian, nil
	}
	vals := make([]float64, 0, len(seen))
	for r := range seen {
		vals = append(vals, r)
	}
	sort.Float64s(vals)
	return RewardCategorical, vals
}

// distinctRewards is the set of distinct values of rew; ok is false (and
// the set incomplete) once there are more than MaxCategoricalRewards.
func distinctRewards(rew []float64) (seen map[float64]struct{}, ok bool) {
	seen = make(map[float64]struct{})
	for _, r := range rew {
		if _, ok := seen[r]; !ok {
			seen[r] = struct{}{}
			if len(seen) > MaxCategoricalRewards {
				return seen, false
			}
		}
	}
	return seen, true
}

// checkDataset checks that d is a non-empty dataset whose columns hold
// its episodes and whose every step is valid.
func checkDataset(d *ingest.Dataset) error {
	if d == nil || d.Horizon <= 0 {
		return errorf(ErrData, "empty dataset")
	}
	if err := checkLengths(d); err != nil {
		return err
	}
	return checkSteps(d)
}

// checkSteps checks that d's vocabulary is not empty and every step of d
// against it (checkStep), in order.
func checkSteps(d *ingest.Dataset) error {
	n := d.NumEpisodes() * d.Horizon
	O, A := d.NumObs(), d.NumActions()
	if O == 0 || A == 0 {
		return errorf(ErrData, "empty vocabulary")
	}
	for i := 0; i < n; i++ {
		if err := checkStep(d, i, O, A); err != nil {
			return err
		}
	}
	return nil
}

// checkLengths checks that d has episodes and that its columns hold
// them.
func checkLengths(d *ingest.Dataset) error {
	K := d.NumEpisodes()
	H := d.Horizon
	if K == 0 {
		return errorf(ErrData, "no episodes")
	}
	n := K * H
	if len(d.Obs) != n || len(d.Act) != n || len(d.Reward) != n {
		return errorf(ErrData, "%d observations, %d actions, %d rewards for %d episodes of %d steps", len(d.Obs), len(d.Act), len(d.Reward), K, H)
	}
	if d.Propensity != nil && len(d.Propensity) != n {
		return errorf(ErrData, "%d propensities for %d steps", len(d.Propensity), n)
	}
	return nil
}

// checkStep checks step i of d: its codes against O observations and A
// actions, a finite reward and a propensity in (0,1].
func checkStep(d *ingest.Dataset, i, O, A int) error {
	H := d.Horizon
	if int(d.Obs[i]) >= O || int(d.Act[i]) >= A {
		return errorf(ErrData, "episode %d step %d: code out of vocabulary", i/H, i%H+1)
	}
	if r := d.Reward[i]; math.IsNaN(r) || math.IsInf(r, 0) {
		return errorf(ErrData, "episode %d step %d: reward %v", i/H, i%H+1, r)
	}
	if d.Propensity != nil {
		if p := d.Propensity[i]; !(p > 0 && p <= 1) {
			return errorf(ErrData, "episode %d step %d: propensity %v", i/H, i%H+1, p)
		}
	}
	return nil
}

// code prepares d with the given reward support (kind and values are
// decided on the full dataset so that subsets share them).
func code(d *ingest.Dataset, kind RewardKind, values []float64) *coded {
	c := &coded{K: d.NumEpisodes(), H: d.Horizon, O: d.NumObs(), A: d.NumActions(),
		obs: d.Obs, act: d.Act, rew: d.Reward, kind: kind, values: values, src: d}
	if kind == RewardCategorical {
		c.rv = make([]uint8, len(d.Reward))
		for i, r := range d.Reward {
			c.rv[i] = uint8(sort.SearchFloat64s(values, r))
		}
	}
	c.rewMean, c.rewVar = meanVar(d.Reward)
	return c
}

// meanVar is the mean and the (population) variance of xs.
func meanVar(xs []float64) (mean, vr float64) {
	n := float64(len(xs))
	for _, r := range xs {
		mean += r
	}
	mean /= n
	for _, r := range xs {
		vr += (r - mean) * (r - mean)
	}
	vr /= n
	return mean, vr
}

// varFloor is the smallest variance of a Gaussian reward emission: 1e-4 of
// the overall reward variance keeps the likelihood bounded (a component
// cannot collapse on a single reward value) while resolving reward levels
// a hundredth of the overall spread apart; 1e-12 when all rewards agree.
func (c *coded) varFloor() float64 {
	if c.rewVar > 0 {
		return 1e-4 * c.rewVar
	}
	return 1e-12
}
