package ingest

import (
	"cmp"
	"slices"
)

// OtherSymbol is the observation that LimitObservations maps the rare
// observations to.
const OtherSymbol = "<other>"

// MergedSymbol is an observation that LimitObservations mapped to
// OtherSymbol, with the number of logged steps that carried it.
type MergedSymbol struct {
	Symbol string `json:"symbol"`
	Count  int64  `json:"count"`
}

// LimitObservations returns d with every observation but the n most
// frequent (ties: the bytewise smaller symbol first) mapped to
// OtherSymbol, and the mapped symbols listed in Merged (most frequent
// first). EndSymbol, the padding of early ends, is always kept and not
// counted in n. A logged observation spelled OtherSymbol is kept like any
// other and receives the merged ones when it is among the n. d is
// returned unchanged when it has at most n observations (besides
// EndSymbol) or n ≤ 0; it is never modified.
func LimitObservations(d *Dataset, n int) *Dataset {
	end, real := d.realObservations()
	if n <= 0 || real <= n {
		return d
	}
	count := d.obsCounts()
	order := frequencyOrder(count, end, real)
	vocab, recode := limitedVocab(d.ObsVocab, keptObservations(order[:n], end, d.NumObs()))
	out := *d
	out.Merged = mergedSymbols(d.ObsVocab, count, order[n:])
	out.ObsVocab = vocab
	out.Obs = recodeCodes(d.Obs, recode)
	return &out
}

// realObservations returns the code of EndSymbol among d's observations
// (−1 when absent) and the number of the other observations.
func (d *Dataset) realObservations() (end, real int) {
	end = slices.Index(d.ObsVocab, EndSymbol)
	real = d.NumObs()
	if end >= 0 {
		real--
	}
	return end, real
}

// obsCounts counts the logged steps that carry each observation code.
func (d *Dataset) obsCounts() []int64 {
	count := make([]int64, d.NumObs())
	for _, o := range d.Obs {
		count[o]++
	}
	return count
}

// recodeCodes returns the symbol codes recoded through recode.
func recodeCodes(codes []uint16, recode []uint16) []uint16 {
	out := make([]uint16, len(codes))
	for i, c := range codes {
		out[i] = recode[c]
	}
	return out
}

// mergedSymbols lists the observations merged (codes, most frequent
// first) with their counts.
func mergedSymbols(vocab []string, count []int64, merged []int) []MergedSymbol {
	var out []MergedSymbol
	for _, o := range merged {
		out = append(out, MergedSymbol{Symbol: vocab[o], Count: count[o]})
	}
	return out
}

// keptObservations marks, among O observation codes, those LimitObservations
// keeps: the most frequent (top) and EndSymbol's (end, when ≥ 0).
func keptObservations(top []int, end, O int) []bool {
	keep := make([]bool, O)
	for _, o := range top {
		keep[o] = true
	}
	if end >= 0 {
		keep[end] = true
	}
	return keep
}

// frequencyOrder returns the real observation codes (all but end, the
// code of EndSymbol or -1) from the most to the least frequent by count.
func frequencyOrder(count []int64, end, real int) []int {
	order := make([]int, 0, real)
	for o := range count {
		if o != end {
			order = append(order, o)
		}
	}
	// Symbols are sorted, so code order breaks ties bytewise.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(count[b], count[a]) })
	return order
}

// limitedVocab returns the sorted vocabulary of the kept observations and
// OtherSymbol, and the new code of each observation of the old vocabulary
// (OtherSymbol's for those not kept).
func limitedVocab(old []string, keep []bool) (vocab []string, recode []uint16) {
	vocab = []string{}
	for o := range old {
		if keep[o] {
			vocab = append(vocab, old[o])
		}
	}
	if !slices.Contains(vocab, OtherSymbol) {
		vocab = append(vocab, OtherSymbol)
	}
	slices.Sort(vocab)
	other := uint16(slices.Index(vocab, OtherSymbol))
	recode = make([]uint16, len(old))
	for o := range old {
		if keep[o] {
			recode[o] = uint16(slices.Index(vocab, old[o]))
		} else {
			recode[o] = other
		}
	}
	return vocab, recode
}
