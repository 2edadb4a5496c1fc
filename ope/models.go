package ope

import (
	"context"
	"fmt"
	"slices"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/split"
)

// Models are the fitted models the model-based estimators use.
type Models struct {
	// All is fitted on every episode (the model and model_lcb
	// estimators), with Bonus its bonus of eq. (6).
	All   *estimate.Model
	Bonus *pessimism.Bonus
	// Folds are fitted on each half of the episodes, Fold[k] the half of
	// episode k (the doubly robust estimators' control variates).
	Folds [2]*estimate.Model
	Fold  []int
	// Note says how they were fitted, for the estimates' reasons.
	Note string
}

// FitModels fits the models of the model-based estimators on d: the model
// of every episode (start, when given, is that model — a fit's, with the
// same vocabularies — else EM with eo's options, the rank chosen as psrlcb
// fit chooses it), then one model per half of a seeded split, each
// warm-started from it, and the bonus of the first at alpha.
func FitModels(ctx context.Context, d *ingest.Dataset, start *estimate.Model, eo estimate.Options, alpha float64) (*Models, error) {
	if err := checkHalves(d); err != nil {
		return nil, err
	}
	ms := &Models{}
	var err error
	if ms.All, ms.Note, err = fitAll(ctx, d, start, eo); err != nil {
		return nil, err
	}
	if err := ms.fitHalves(ctx, d, eo); err != nil {
		return nil, err
	}
	if ms.Bonus, err = bonusOf(ctx, ms.All, d, eo, alpha); err != nil {
		return nil, err
	}
	return ms, nil
}

// checkHalves checks that d has enough episodes to fit a model on each
// half: at least twice the horizon.
func checkHalves(d *ingest.Dataset) error {
	K, H := d.NumEpisodes(), d.Horizon
	if K < 2*H {
		return fmt.Errorf("%w: %d episodes, too few to fit a model on each half (at least %d)", ErrData, K, 2*H)
	}
	return nil
}

// bonusOf is the bonus of eq. (6) of the model m of the logs d at alpha,
// built on eo's seeded split of the episodes.
func bonusOf(ctx context.Context, m *estimate.Model, d *ingest.Dataset, eo estimate.Options, alpha float64) (*pessimism.Bonus, error) {
	splits, err := split.Split(d.NumEpisodes(), d.Horizon, eo.Seed)
	if err != nil {
		return nil, err
	}
	b, err := pessimism.Build(ctx, m, d, splits, pessimism.Options{Workers: eo.Workers})
	if err != nil {
		return nil, err
	}
	return b.WithAlpha(alpha), nil
}

// fitAll returns the model of every episode, start when given (checked
// against d's vocabularies) else fitted with eo, and the note saying how
// the models are fitted.
func fitAll(ctx context.Context, d *ingest.Dataset, start *estimate.Model, eo estimate.Options) (*estimate.Model, string, error) {
	if start != nil {
		if !slices.Equal(start.ObsVocab, d.ObsVocab) || !slices.Equal(start.ActVocab, d.ActVocab) {
			return nil, "", fmt.Errorf("%w: the model's observations and actions are not the logs' (fit it on these logs)", ErrData)
		}
		return start, fmt.Sprintf("the given model of rank %d; the halves' models warm-started from it", start.States), nil
	}
	all, err := fitOn(ctx, d, eo, nil)
	if err != nil {
		return nil, "", err
	}
	return all, fmt.Sprintf("models of rank %d fitted on all episodes and on each half", all.States), nil
}

// fitHalves splits the episodes of d in two halves by a seeded
// permutation and fits one model on each, warm-started from ms.All.
func (ms *Models) fitHalves(ctx context.Context, d *ingest.Dataset, eo estimate.Options) error {
	var halves [2][]int
	ms.Fold, halves = splitHalves(d.NumEpisodes(), eo.Seed)
	for f := range 2 {
		slices.Sort(halves[f])
		m, err := fitOn(ctx, d.Subset(halves[f]), eo, ms.All)
		if err != nil {
			return err
		}
		ms.Folds[f] = m
	}
	return nil
}

// splitHalves deals K episodes, in a permutation seeded by seed, into two
// halves: the half of each episode and the episodes of each half.
func splitHalves(K int, seed uint64) (fold []int, halves [2][]int) {
	perm := split.Permutation(K, seed^0x0fe)
	fold = make([]int, K)
	for i, k := range perm {
		f := i % 2
		fold[k] = f
		halves[f] = append(halves[f], k)
	}
	return fold, halves
}

// fitOptions are eo for a fit with the rank of start, warm-started from
// it, or eo itself when start is nil; either skips the θ_min search.
func fitOptions(eo estimate.Options, start *estimate.Model) estimate.Options {
	o := eo
	o.SkipThetaMin = true
	if start != nil {
		o.Rank = start.States
		o.Start, o.Restarts = start, 1
	}
	return o
}

// fitWarm fits a model on d with o; when a warm-started fit fails, it fits
// again without the warm start, with restarts restarts.
func fitWarm(ctx context.Context, d *ingest.Dataset, o estimate.Options, restarts int) (*estimate.Result, error) {
	res, err := estimate.Fit(ctx, d, o)
	if err != nil && o.Start != nil {
		o.Start, o.Restarts = nil, restarts
		res, err = estimate.Fit(ctx, d, o)
	}
	return res, err
}

// fitOn fits a model on d: warm-started from start when its reward
// values are d's (a half may miss a rare reward value), otherwise with the
// rank of start, or searched when start is nil.
func fitOn(ctx context.Context, d *ingest.Dataset, eo estimate.Options, start *estimate.Model) (*estimate.Model, error) {
	res, err := fitWarm(ctx, d, fitOptions(eo, start), eo.Restarts)
	if err != nil {
		return nil, err
	}
	if start != nil {
		res.Model.ReturnMin, res.Model.ReturnMax = start.ReturnMin, start.ReturnMax
	}
	return res.Model, nil
}
