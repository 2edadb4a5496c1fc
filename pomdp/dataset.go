package pomdp

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/psrlcb/psrlcb/ingest"
)

// Dataset converts the logs into the ingest.Dataset that ingest.Read
// gives for their Parquet file: vocabularies of the symbols that occur,
// sorted bytewise; episodes in the order of their integer episode_id,
// rendered in decimal; every episode of full length; propensities
// included.
func (l *Logs) Dataset() (*ingest.Dataset, error) {
	H, K := l.Horizon, l.NumEpisodes()
	if err := checkCodes(l.Model); err != nil {
		return nil, err
	}
	obsCode, obsVocab, actCode, actVocab := l.vocabs()
	d := newDataset(H, K, obsVocab, actVocab)
	ids, order := l.episodeOrder()
	for j, k := range order {
		d.EpisodeIDs[j] = ids[k]
		d.Length[j] = int32(H)
		l.copyEpisode(d, j, k, obsCode, actCode)
	}
	return d, nil
}

// checkCodes checks that the observations (with InitSymbol) and the
// actions of m fit 16-bit codes.
func checkCodes(m *POMDP) error {
	if m.NumObs()+1 > math.MaxUint16 || m.NumActions() > math.MaxUint16 {
		return fmt.Errorf("%w: %s has too many symbols for 16-bit codes", ErrInvalid, m.Name)
	}
	return nil
}

// newDataset is an empty dataset of K episodes of H steps with the given
// vocabularies.
func newDataset(H, K int, obsVocab, actVocab []string) *ingest.Dataset {
	return &ingest.Dataset{
		Horizon:    H,
		ObsVocab:   obsVocab,
		ActVocab:   actVocab,
		EpisodeIDs: make([]string, K),
		Length:     make([]int32, K),
		Obs:        make([]uint16, K*H),
		Act:        make([]uint16, K*H),
		Reward:     make([]float64, K*H),
		Propensity: make([]float64, K*H),
		Rows:       int64(K * H),
	}
}

// vocabs returns the codes (by observation index o+1, 0 for init, and by
// action index) and the vocabularies of the observations and actions the
// logs hold.
func (l *Logs) vocabs() (obsCode []uint16, obsVocab []string, actCode []uint16, actVocab []string) {
	m := l.Model
	seenObs := make([]bool, m.NumObs()+1)
	seenAct := make([]bool, m.NumActions())
	for i := range l.Obs {
		seenObs[l.Obs[i]+1] = true
		seenAct[l.Act[i]] = true
	}
	obsCode, obsVocab = vocab(seenObs, func(i int) string { return m.ObsName(i - 1) })
	actCode, actVocab = vocab(seenAct, func(i int) string { return m.Actions[i] })
	return obsCode, obsVocab, actCode, actVocab
}

// episodeOrder returns the episode ids and the order of the episodes in
// the dataset. Episode ids are the integers 1..K, which ingest orders
// numerically: simulation order.
func (l *Logs) episodeOrder() (ids []string, order []int) {
	K := l.NumEpisodes()
	ids = make([]string, K)
	order = make([]int, K)
	for k := range K {
		ids[k] = strconv.FormatInt(l.EpisodeID(k), 10)
		order[k] = k
	}
	return ids, order
}

// copyEpisode copies the steps of episode k of the logs to episode j of d,
// in the codes obsCode and actCode.
func (l *Logs) copyEpisode(d *ingest.Dataset, j, k int, obsCode, actCode []uint16) {
	H := l.Horizon
	for h := range H {
		src, dst := k*H+h, j*H+h
		d.Obs[dst] = obsCode[l.Obs[src]+1]
		d.Act[dst] = actCode[l.Act[src]]
		d.Reward[dst] = l.Reward[src]
		d.Propensity[dst] = l.Propensity[src]
	}
}

// vocab returns, for the indices marked seen, their codes in the sorted
// list of their names, and that list.
func vocab(seen []bool, name func(int) string) ([]uint16, []string) {
	names := sortedNames(seen, name)
	pos := positions(names)
	code := make([]uint16, len(seen))
	for i, ok := range seen {
		if ok {
			code[i] = pos[name(i)]
		}
	}
	return code, names
}

// positions maps each of names to its position in the list.
func positions(names []string) map[string]uint16 {
	pos := make(map[string]uint16, len(names))
	for c, n := range names {
		pos[n] = uint16(c)
	}
	return pos
}

// sortedNames are the names of the indices marked seen, sorted.
func sortedNames(seen []bool, name func(int) string) []string {
	var names []string
	for i, ok := range seen {
		if ok {
			names = append(names, name(i))
		}
	}
	slices.Sort(names)
	return names
}

// SimulateDataset is Simulate followed by Logs.Dataset: logs drawn from m
// under b, directly in the form the rest of the pipeline consumes.
func SimulateDataset(ctx context.Context, m *POMDP, H, K int, b Behavior, seed uint64) (*ingest.Dataset, error) {
	l, err := Simulate(ctx, m, H, K, b, seed)
	if err != nil {
		return nil, err
	}
	return l.Dataset()
}
