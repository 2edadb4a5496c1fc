package explore

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/atomicfile"
	"github.com/psrlcb/psrlcb/policy"
)

// Names of the files WriteRound writes besides the policy files.
const (
	TerminationFileName = "termination.json"
	ModelFileName       = "model.arrow"
)

// Termination is termination.json: the round's termination test (line 10
// of Algorithm 1) and what the round fitted.
type Termination struct {
	Round        int64   `json:"round"`
	NextRound    int64   `json:"next_round"`
	Episodes     int     `json:"episodes"`
	SplitSizes   []int   `json:"split_sizes"` // |D_h^k|, h = 0..H−1
	BonusValue   float64 `json:"bonus_value"` // V_{θ̂^k,b̂^k}^{π^k}
	Threshold    float64 `json:"threshold"`   // ε/2
	Epsilon      float64 `json:"epsilon"`
	Alpha        float64 `json:"alpha"`
	Lambda       float64 `json:"lambda"`
	Terminated   bool    `json:"terminated"`
	Rank         int     `json:"rank"`
	LogLik       float64 `json:"loglik"`
	ThetaMinMix  float64 `json:"theta_min_mix_weight"`
	GreedyValue  float64 `json:"greedy_model_value"` // V_{θ̂,R}^{π̄}, rescaled return
	GreedyPolicy string  `json:"greedy_policy,omitempty"`
}

// LogRound is one round run from tagged logs by RoundFromLogs.
type LogRound struct {
	// Round is k, the largest round tag in the logs.
	Round  int64
	Data   *ingest.Dataset
	Result *Result
	// Termination is the record WriteRound writes as termination.json.
	Termination Termination
}

// RoundFromLogs reads exploration logs (files, as ingest.Read takes them,
// with the round and explore_step tag columns named by tags), and runs
// Round on them: the round k is the largest round tag, the splits D_h are
// the episodes by their switch step.
func RoundFromLogs(ctx context.Context, files []string, in ingest.Options, tags TagColumns, opts Options) (*LogRound, error) {
	d, err := ingest.Read(ctx, files, in)
	if err != nil {
		return nil, err
	}
	steps, round, err := tagSteps(ctx, files, in, tags, d)
	if err != nil {
		return nil, err
	}
	res, err := Round(ctx, d, steps, opts)
	if err != nil {
		return nil, err
	}
	return &LogRound{Round: round, Data: d, Result: res, Termination: termination(round, d.NumEpisodes(), res)}, nil
}

// tagSteps reads the exploration tags of d's episodes from files (the
// episode column defaulting to in's) and returns every episode's switch
// step and the round k, the largest round tag.
func tagSteps(ctx context.Context, files []string, in ingest.Options, tags TagColumns, d *ingest.Dataset) ([]int, int64, error) {
	if tags.Episode == "" {
		tags.Episode = in.Columns.Episode
	}
	tg, err := ReadTags(ctx, files, tags)
	if err != nil {
		return nil, 0, err
	}
	steps, err := StepsOf(d.EpisodeIDs, tg, d.Horizon)
	if err != nil {
		return nil, 0, err
	}
	return steps, lastRound(d.EpisodeIDs, tg), nil
}

// lastRound is k, the largest round tag of the episodes ids.
func lastRound(ids []string, tg map[string]Tag) int64 {
	round := int64(0)
	for _, id := range ids {
		round = max(round, tg[id].Round)
	}
	return round
}

// termination is the record of round's result res on the given number of
// episodes.
func termination(round int64, episodes int, res *Result) Termination {
	t := Termination{Round: round, NextRound: round + 1, Episodes: episodes, BonusValue: res.BonusValue,
		Threshold: res.Threshold, Epsilon: res.Epsilon, Alpha: res.Alpha, Lambda: res.Bonus.Lambda, Terminated: res.Terminated,
		Rank: res.Fit.Model.States, LogLik: res.Fit.LogLik, ThetaMinMix: res.Fit.ThetaMin.MixWeight, GreedyValue: res.GreedyStats.ValueReward}
	for _, s := range res.Splits {
		t.SplitSizes = append(t.SplitSizes, len(s))
	}
	if res.Terminated {
		t.GreedyPolicy = policy.FileName
	}
	return t
}

// WriteRound writes the round's outputs into dir: the next round's
// exploration policies policy-h1.arrow..policy-hH.arrow, model.arrow,
// termination.json and, when the round terminated, the greedy policy as
// policy.arrow.
func WriteRound(ctx context.Context, dir string, lr *LogRound) error {
	if err := writeRoundPolicies(ctx, dir, lr); err != nil {
		return err
	}
	if err := writeRoundModel(dir, lr); err != nil {
		return err
	}
	return writeTermination(dir, lr)
}

// writeRoundPolicies writes the round's exploration policies, one per
// switch step, into dir.
func writeRoundPolicies(ctx context.Context, dir string, lr *LogRound) error {
	res, d := lr.Result, lr.Data
	meta := map[string]string{"psrlcb.explore.alpha": strconv.FormatFloat(res.Alpha, 'g', -1, 64)}
	if err := WritePolicies(dir, res.Explore, d.Horizon, int(lr.Round)+1, modelActions(res.Fit.Model), meta); err != nil {
		return err
	}
	return ctx.Err()
}

// writeRoundModel writes the round's fitted model into dir and, when the
// loop terminated, its greedy policy.
func writeRoundModel(dir string, lr *LogRound) error {
	res := lr.Result
	if err := arrowio.WriteArrow(filepath.Join(dir, ModelFileName), estimate.ModelTable(res.Fit.Model)); err != nil {
		return err
	}
	if res.Terminated {
		return policy.WriteFile(filepath.Join(dir, policy.FileName), res.Greedy, map[string]string{"psrlcb.explore.round": strconv.FormatInt(lr.Round, 10)})
	}
	return nil
}

// writeTermination writes the round's termination record into dir as
// indented JSON.
func writeTermination(dir string, lr *LogRound) error {
	b, err := json.MarshalIndent(lr.Termination, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(filepath.Join(dir, TerminationFileName), append(b, '\n'))
}

// modelActions are the actions of m's vocabulary but the end symbol.
func modelActions(m *estimate.Model) []string {
	var acts []string
	for _, a := range m.ActVocab {
		if a != ingest.EndSymbol {
			acts = append(acts, a)
		}
	}
	return acts
}
