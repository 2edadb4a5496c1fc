package ingest

import (
	"fmt"
	"math"
)

// EndSymbol is the observation and action symbol used to pad episodes that
// ended early (terminal) up to the horizon: the observation is absorbing, the
// action is forced and its propensity is 1 (docs/design.md, section 3).
const EndSymbol = "<end>"

// Dataset is the validated, compact in-memory form of the logs: K episodes
// of exactly Horizon steps each, stored row-major (episode k, step h at index
// k*Horizon+h, h 0-based). Observations and actions are small integer codes
// into sorted vocabularies, so the codes do not depend on file order.
//
// Timing follows the paper: at step h (1-based) the agent sees o_h, takes a_h
// with logged propensity π^b(a_h | τ_{h-1}, o_h), then receives r_h.
type Dataset struct {
	Horizon int

	// Vocabularies, sorted bytewise. If any episode was padded, EndSymbol
	// is in both.
	ObsVocab []string
	ActVocab []string

	// EpisodeIDs[k] is the user's episode_id rendered as a string, sorted
	// so that episode order does not depend on file order.
	EpisodeIDs []string
	// Length[k] is the number of logged steps before padding (== Horizon
	// for episodes that ran to the end).
	Length []int32

	Obs        []uint16  // K*Horizon observation codes
	Act        []uint16  // K*Horizon action codes
	Reward     []float64 // K*Horizon rewards, 0 on padded steps
	Propensity []float64 // K*Horizon logged π^b(a_h|τ_{h-1},o_h); nil when the logs carry none

	// Quarantined lists the episodes dropped under --on-invalid=skip, with
	// the reason; nothing is dropped silently.
	Quarantined []Quarantined

	// Rows is the number of input rows read (including quarantined ones).
	Rows int64

	// Merged lists the observations LimitObservations mapped to
	// OtherSymbol (nil when none were).
	Merged []MergedSymbol
}

// Quarantined is an episode set aside by --on-invalid=skip, or (with no
// EpisodeID) the rows of one file whose episode id is null.
type Quarantined struct {
	EpisodeID string `json:"episode_id"`
	File      string `json:"file"`
	Step      int    `json:"step"`
	Reason    string `json:"reason"`
}

// String says where and why, as the error of the fail mode does.
func (q Quarantined) String() string {
	switch {
	case q.EpisodeID == "":
		return q.File + ": " + q.Reason
	case q.Step == 0:
		return fmt.Sprintf("%s: episode %q: %s", q.File, q.EpisodeID, q.Reason)
	}
	return fmt.Sprintf("%s: episode %q step %d: %s", q.File, q.EpisodeID, q.Step, q.Reason)
}

// NumEpisodes is K.
func (d *Dataset) NumEpisodes() int {
	if d.Horizon == 0 {
		return 0
	}
	return len(d.Obs) / d.Horizon
}

// NumObs is |O| including EndSymbol when present.
func (d *Dataset) NumObs() int { return len(d.ObsVocab) }

// NumActions is |A| including EndSymbol when present.
func (d *Dataset) NumActions() int { return len(d.ActVocab) }

// HasPropensity reports whether the logs carried propensities.
func (d *Dataset) HasPropensity() bool { return d.Propensity != nil }

// Return is the undiscounted sum of rewards of episode k in the user's units.
func (d *Dataset) Return(k int) float64 {
	s := 0.0
	for _, r := range d.Reward[k*d.Horizon : (k+1)*d.Horizon] {
		s += r
	}
	return s
}

// ReturnRange is the smallest and largest episode return (+Inf and −Inf
// when there is no episode).
func (d *Dataset) ReturnRange() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for k := 0; k < d.NumEpisodes(); k++ {
		r := d.Return(k)
		lo, hi = math.Min(lo, r), math.Max(hi, r)
	}
	return lo, hi
}

// Subset returns a dataset holding only the listed episodes (in the given
// order); vocabularies are shared, slices copied.
func (d *Dataset) Subset(episodes []int) *Dataset {
	out := d.emptyLike(len(episodes))
	for i, k := range episodes {
		out.EpisodeIDs[i] = d.EpisodeIDs[k]
		out.Length[i] = d.Length[k]
		copySteps(out, d, i, k)
	}
	return out
}

// emptyLike returns a dataset of n episodes with d's horizon and
// vocabularies, and zeroed slices (propensities when d has them).
func (d *Dataset) emptyLike(n int) *Dataset {
	H := d.Horizon
	out := &Dataset{
		Horizon:    H,
		ObsVocab:   d.ObsVocab,
		ActVocab:   d.ActVocab,
		EpisodeIDs: make([]string, n),
		Length:     make([]int32, n),
		Obs:        make([]uint16, n*H),
		Act:        make([]uint16, n*H),
		Reward:     make([]float64, n*H),
	}
	if d.Propensity != nil {
		out.Propensity = make([]float64, n*H)
	}
	return out
}

// copySteps copies the steps of episode k of src to episode j of dst
// (which may be src).
func copySteps(dst, src *Dataset, j, k int) {
	H := src.Horizon
	copy(dst.Obs[j*H:(j+1)*H], src.Obs[k*H:(k+1)*H])
	copy(dst.Act[j*H:(j+1)*H], src.Act[k*H:(k+1)*H])
	copy(dst.Reward[j*H:(j+1)*H], src.Reward[k*H:(k+1)*H])
	if src.Propensity != nil {
		copy(dst.Propensity[j*H:(j+1)*H], src.Propensity[k*H:(k+1)*H])
	}
}
