package ingest

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/psrlcb/psrlcb/internal/parallel"
)

// Summary holds the figures `psrlcb inspect` prints about a Dataset. Only
// logged steps count (padding after an early end is excluded) unless said
// otherwise.
type Summary struct {
	Episodes   int   `json:"episodes"`
	Horizon    int   `json:"horizon"`
	Rows       int64 `json:"rows"`
	LoggedRows int64 `json:"logged_steps"`    // steps kept, before padding
	Padded     int   `json:"padded_episodes"` // episodes that ended early

	NumObs     int           `json:"num_observations"` // |O|, EndSymbol included when present
	NumActions int           `json:"num_actions"`      // |A|, EndSymbol included when present
	TopObs     []SymbolCount `json:"top_observations"`
	TopActions []SymbolCount `json:"top_actions"`

	StepReward []Range `json:"reward_per_step"` // index h-1
	Return     Range   `json:"return"`          // Σ_h r_h per episode

	// Propensity is nil when the logs carry none.
	Propensity *Quantiles `json:"propensity"`
	// Iota is ι for one-step tests: the least propensity of a logged
	// action. Without logged propensities it is estimated (IotaEstimated)
	// by the empirical frequency of the action among the logged steps with
	// the same step h and observation o_h, i.e. assuming π^b(a|τ_{h-1},o_h)
	// depends on (h, o_h) only.
	Iota          float64 `json:"iota"`
	IotaEstimated bool    `json:"iota_estimated"`

	// Histories[h-1] is the number of distinct histories τ_h = (o_1,a_1,
	// …,o_h,a_h) among the episodes, padding included.
	Histories []int `json:"distinct_histories"`

	Quarantined      int           `json:"quarantined"`
	FirstQuarantined []Quarantined `json:"first_quarantined"`
}

// SymbolCount is how often a symbol was logged.
type SymbolCount struct {
	Symbol string `json:"symbol"`
	Count  int64  `json:"count"`
}

// Range summarises a set of numbers.
type Range struct {
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
	N    int64   `json:"n"`
}

// Quantiles of logged propensities. Quantile q is the order statistic of
// rank floor(q·(n−1)) (0-based) of the n sorted values.
type Quantiles struct {
	Min    float64 `json:"min"`
	P01    float64 `json:"p01"`
	P05    float64 `json:"p05"`
	P25    float64 `json:"p25"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// TopSymbols is how many of the most frequent symbols Summarize lists.
const TopSymbols = 5

// FirstQuarantined is how many quarantined episodes Summarize lists.
const FirstQuarantined = 10

// Summarize computes the inspect figures of d.
func Summarize(d *Dataset) Summary {
	return summarize(d, nil)
}

// summarize is Summarize, with the propensities of the tally t when it
// counted them in place of d.Propensity.
func summarize(d *Dataset, t *propTally) Summary {
	s := newSummary(d)
	// The distinct-history counts run beside the rest of the summary;
	// they write only s.Histories. When they sort the episodes' keys,
	// the keys are made on both cores first.
	var histories func()
	if keys, ok := pathKeys(d); ok {
		histories = parallel.Go(func() { s.Histories = distinctSortedPaths(d, keys) })
	} else {
		histories = parallel.Go(func() { s.Histories = DistinctHistories(d) })
	}
	s.countSteps(d)
	if t != nil && t.counted {
		s.tallyPropensities(t)
	} else {
		s.summarizePropensities(d)
	}
	histories()
	return s
}

// newSummary is the Summary of d's sizes, padded and logged counts and
// first quarantined episodes.
func newSummary(d *Dataset) Summary {
	s := Summary{
		Episodes: d.NumEpisodes(), Horizon: d.Horizon, Rows: d.Rows,
		NumObs: d.NumObs(), NumActions: d.NumActions(),
		Quarantined: len(d.Quarantined),
	}
	for _, L := range d.Length {
		if int(L) < d.Horizon {
			s.Padded++
		}
		s.LoggedRows += int64(L)
	}
	s.FirstQuarantined = d.Quarantined[:min(len(d.Quarantined), FirstQuarantined)]
	if s.FirstQuarantined == nil {
		s.FirstQuarantined = []Quarantined{}
	}
	return s
}

// emptyRange is the Range of no value, ready for add.
func emptyRange() Range { return Range{Min: math.Inf(1), Max: math.Inf(-1)} }

// add counts v in the range, its minimum, maximum and sum.
func (r *Range) add(v float64) {
	r.Min, r.Max = min(r.Min, v), max(r.Max, v)
	r.Mean += v
	r.N++
}

// finish turns the sum into the mean, or the range into the zero Range
// when it holds no value.
func (r *Range) finish() {
	if r.N == 0 {
		*r = Range{}
		return
	}
	r.Mean /= float64(r.N)
}

// countSteps sets the reward ranges of each step and of the returns, and
// the most frequent symbols.
func (s *Summary) countSteps(d *Dataset) {
	obsCount := make([]int64, d.NumObs())
	actCount := make([]int64, d.NumActions())
	s.StepReward = make([]Range, s.Horizon)
	for h := range s.StepReward {
		s.StepReward[h] = emptyRange()
	}
	s.Return = emptyRange()
	for k := range s.Episodes {
		s.addEpisode(d, k, obsCount, actCount)
	}
	s.Return.finish()
	for h := range s.StepReward {
		s.StepReward[h].finish()
	}
	s.TopObs = top(d.ObsVocab, obsCount)
	s.TopActions = top(d.ActVocab, actCount)
}

// addEpisode counts episode k: its logged steps' symbols and rewards, and
// its return (padding rewards included).
func (s *Summary) addEpisode(d *Dataset, k int, obsCount, actCount []int64) {
	H := s.Horizon
	L := int(d.Length[k])
	ret := 0.0
	for h := range H {
		i := k*H + h
		ret += d.Reward[i]
		if h >= L {
			continue
		}
		obsCount[d.Obs[i]]++
		actCount[d.Act[i]]++
		s.StepReward[h].add(d.Reward[i])
	}
	s.Return.add(ret)
}

// summarizePropensities sets the quantiles of the logged propensities and
// ι, their minimum; without propensities, ι is estimated (estimatedIota).
func (s *Summary) summarizePropensities(d *Dataset) {
	if d.Propensity == nil {
		s.Iota, s.IotaEstimated = estimatedIota(d), true
		return
	}
	K, H := s.Episodes, s.Horizon
	logged := func(visit func([]float64)) {
		for k := range K {
			visit(d.Propensity[k*H : k*H+int(d.Length[k])])
		}
	}
	qs := propensityQuantiles
	q, ok := fewQuantiles(int(s.LoggedRows), logged, qs, fewDistinct)
	if !ok {
		q = streamQuantiles(int(s.LoggedRows), logged, qs)
	}
	s.Propensity = &Quantiles{q[0], q[1], q[2], q[3], q[4], q[5]}
	s.Iota = q[0]
}

// tallyPropensities is summarizePropensities from a tally of the logged
// propensities.
func (s *Summary) tallyPropensities(t *propTally) {
	q := t.quantiles(propensityQuantiles)
	s.Propensity = &Quantiles{q[0], q[1], q[2], q[3], q[4], q[5]}
	s.Iota = q[0]
}

// propensityQuantiles are the quantiles of Summary.Propensity.
var propensityQuantiles = []float64{0, 0.01, 0.05, 0.25, 0.5, 1}

func top(vocab []string, count []int64) []SymbolCount {
	out := make([]SymbolCount, 0, len(vocab))
	for i, c := range count {
		if c > 0 {
			out = append(out, SymbolCount{vocab[i], c})
		}
	}
	slices.SortFunc(out, func(a, b SymbolCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Symbol, b.Symbol)
	})
	return out[:min(len(out), TopSymbols)]
}

// estimatedIota is min over logged (h, o, a) of n(h,o,a)/n(h,o).
func estimatedIota(d *Dataset) float64 {
	K, H, nO, nA := d.NumEpisodes(), d.Horizon, d.NumObs(), d.NumActions()
	if K == 0 {
		return 0
	}
	n := make([]int64, H*nO*nA)
	for k := range K {
		for h := range int(d.Length[k]) {
			i := k*H + h
			n[(h*nO+int(d.Obs[i]))*nA+int(d.Act[i])]++
		}
	}
	iota := 1.0
	for node := range H * nO {
		iota = min(iota, leastShare(n[node*nA:(node+1)*nA]))
	}
	return iota
}

// leastShare is the least c/Σrow over the positive counts c of row (1
// when none is positive).
func leastShare(row []int64) float64 {
	var tot int64
	for _, c := range row {
		tot += c
	}
	least := 1.0
	for _, c := range row {
		if c > 0 {
			least = min(least, float64(c)/float64(tot))
		}
	}
	return least
}

// DistinctHistories returns, for h = 1..H, the number of distinct
// histories τ_h = (o_1,a_1,…,o_h,a_h) among d's episodes. While the
// histories are few, they are numbered in a table of (history, o, a)
// cells (historyIDTable), reading the episodes in order; then the
// episodes are split step by step into groups of equal histories
// (historyGroups): a history that one episode alone has stays one
// history at every later step, so only the groups of two or more are
// split further, and the work shrinks as the histories fan out. With
// more than groupSymbols (o, a) pairs, the histories are numbered by
// radix sorting instead (historyIDs). Every way the cost is linear in
// K·H.
//
// When an episode's whole sequence of (o, a) codes fits in 64 bits, the
// episodes are instead sorted as numbers whose digits are those codes
// (distinctByPaths): histories of length h are then distinct exactly
// where two neighbours in that order first differ within h steps.
func DistinctHistories(d *Dataset) []int {
	if out, ok := distinctByPaths(d); ok {
		return out
	}
	return distinctHistories(d, idTableCells)
}

// distinctByPaths is DistinctHistories by sorting: each episode's codes
// c_h = o_h·|A| + a_h, b bits each, written one after the other into a
// 64-bit key with c_1 highest, so that the keys sort as the sequences do
// lexicographically. In that order the histories of length h are
// distinct exactly where neighbours first differ at a step ≤ h, found
// from the leading zeros of the two keys' XOR. false when H·b > 64.
func distinctByPaths(d *Dataset) ([]int, bool) {
	keys, ok := pathKeys(d)
	if !ok {
		return nil, false
	}
	return distinctSortedPaths(d, keys), true
}

// pathBits is the width b of an (o, a) code in distinctByPaths's keys.
func pathBits(d *Dataset) int { return max(1, bits.Len(uint(d.NumObs()*d.NumActions()-1))) }

// pathKeys is the key of each episode (distinctByPaths), made in parallel
// parts of 2¹⁶ episodes; false when they do not fit in 64 bits.
func pathKeys(d *Dataset) ([]uint64, bool) {
	K, H, nA, b := d.NumEpisodes(), d.Horizon, d.NumActions(), pathBits(d)
	if H*b > 64 {
		return nil, false
	}
	keys := make([]uint64, K)
	const part = 1 << 16
	parallel.Do((K+part-1)/part, 0, func(p int) {
		for k := p * part; k < min(K, (p+1)*part); k++ {
			var key uint64
			for i := k * H; i < (k+1)*H; i++ {
				key = key<<b | uint64(int(d.Obs[i])*nA+int(d.Act[i]))
			}
			keys[k] = key
		}
	})
	return keys, true
}

// distinctSortedPaths is distinctByPaths from the episodes' keys, which
// it sorts in place.
func distinctSortedPaths(d *Dataset, keys []uint64) []int {
	K, H, b := len(keys), d.Horizon, pathBits(d)
	out := make([]int, H)
	if K == 0 {
		return out
	}
	radixSortKeys(keys, make([]uint64, K), H*b)
	firstDiff := make([]int, H) // neighbours whose first difference is at step h+1
	unused := 64 - H*b          // the keys' high bits that are always 0
	for j := 1; j < K; j++ {
		if x := keys[j-1] ^ keys[j]; x != 0 {
			firstDiff[(bits.LeadingZeros64(x)-unused)/b]++
		}
	}
	n := 1
	for h := range H {
		n += firstDiff[h]
		out[h] = n
	}
	return out
}

// radixSortKeys sorts keys of at most width bits ascending with 16-bit
// LSD passes; tmp has the same length.
func radixSortKeys(keys, tmp []uint64, width int) {
	var count [1 << 16]int
	for shift := 0; shift < width; shift += 16 {
		digitStarts(keys, uint(shift), &count)
		for _, k := range keys {
			d := (k >> shift) & 0xFFFF
			tmp[count[d]] = k
			count[d]++
		}
		keys, tmp = tmp, keys
	}
	if (width+15)/16%2 == 1 { // the sorted keys are in the other slice
		copy(tmp, keys)
	}
}

// distinctHistories is DistinctHistories with historyIDTable's table
// bounded by cells.
func distinctHistories(d *Dataset, cells int) []int {
	K, H := d.NumEpisodes(), d.Horizon
	out := make([]int, H)
	if K == 0 {
		return out
	}
	sym := d.NumObs() * d.NumActions()
	if sym > groupSymbols {
		return distinctByRadix(d)
	}
	ids := newHistoryIDTable(K)
	h := 0
	for ; h < H && ids.distinct*sym <= cells; h++ {
		out[h] = ids.step(d, h, sym)
	}
	if h == H {
		return out
	}
	g := ids.groups(sym, d.NumActions())
	for ; h < H; h++ {
		out[h] = g.step(d, h)
	}
	return out
}

// idTableCells bounds the (history, o, a) cells historyIDTable counts in:
// 2²² cells of 4 bytes.
const idTableCells = 1 << 22

// historyIDTable numbers the histories of the first steps, while there
// are few: the id of τ_h is the rank of the cell (id of τ_{h−1}, o_h·|A|
// + a_h) among the cells the episodes reach, found by marking cells in a
// table, so every pass reads the episodes in order.
type historyIDTable struct {
	id, cell []int32 // per episode: the id of its history, its cell
	table    []int32
	distinct int
}

func newHistoryIDTable(K int) *historyIDTable {
	return &historyIDTable{id: make([]int32, K), cell: make([]int32, K), distinct: 1}
}

// step numbers the histories τ_{h+1}, h 0-based, and returns how many
// there are.
func (t *historyIDTable) step(d *Dataset, h, sym int) int {
	H, nA := d.Horizon, d.NumActions()
	n := t.distinct * sym
	t.table = slices.Grow(t.table[:0], n)[:n]
	clear(t.table)
	for k, id := range t.id {
		i := k*H + h
		c := int32(int(id)*sym + int(d.Obs[i])*nA + int(d.Act[i]))
		t.cell[k] = c
		t.table[c] = 1
	}
	next := int32(0)
	for c, used := range t.table {
		if used != 0 {
			t.table[c] = next
			next++
		}
	}
	for k, c := range t.cell {
		t.id[k] = t.table[c]
	}
	t.distinct = int(next)
	return t.distinct
}

// groups hands the numbered histories to historyGroups: the episodes
// grouped by history (counting sort by id), the histories of one
// episode settled.
func (t *historyIDTable) groups(sym, nA int) *historyGroups {
	K := len(t.id)
	g := &historyGroups{nA: nA, order: make([]int32, 0, K), next: make([]int32, 0, K),
		local: make([]int32, K), stamp: make([]int32, sym), slot: make([]int32, sym)}
	start := make([]int32, t.distinct)
	for _, id := range t.id {
		start[id]++
	}
	var at int32
	at, g.bounds = g.offsets(start, 0, []int32{0})
	g.order = g.order[:at]
	for k, id := range t.id {
		if start[id] >= 0 {
			g.order[start[id]] = int32(k)
			start[id]++
		}
	}
	return g
}

// groupSymbols bounds the (o, a) pairs historyGroups indexes directly (8
// bytes each).
const groupSymbols = 1 << 20

// historyGroups holds the episodes whose history at the last step is
// shared with another episode, grouped: order[bounds[i]:bounds[i+1]] is
// group i. settled counts the histories of one episode each.
type historyGroups struct {
	nA            int
	order, next   []int32
	bounds, nextB []int32
	local, count  []int32 // per position: its subgroup; per subgroup: its size, then its cursor
	stamp, slot   []int32 // per (o, a): the group that saw it last, its subgroup there
	serial        int32
	settled       int
}

func newHistoryGroups(K, sym, nA int) *historyGroups {
	g := &historyGroups{nA: nA, order: make([]int32, K), next: make([]int32, 0, K),
		bounds: []int32{0, int32(K)}, local: make([]int32, K),
		stamp: make([]int32, sym), slot: make([]int32, sym)}
	for k := range g.order {
		g.order[k] = int32(k)
	}
	return g
}

// step splits every group by (o_h, a_h), h 0-based, and returns the
// number of distinct histories τ_{h+1}.
func (g *historyGroups) step(d *Dataset, h int) int {
	g.next, g.nextB = g.next[:0], append(g.nextB[:0], 0)
	for i := 0; i+1 < len(g.bounds); i++ {
		g.split(d, h, int(g.bounds[i]), int(g.bounds[i+1]))
	}
	g.order, g.next = g.next, g.order
	g.bounds, g.nextB = g.nextB, g.bounds
	return g.settled + len(g.bounds) - 1
}

// split splits group order[lo:hi] by (o_h, a_h): subgroups of one
// episode settle, the others are appended to next in the order of their
// first episode.
func (g *historyGroups) split(d *Dataset, h, lo, hi int) {
	H := d.Horizon
	if g.serial == math.MaxInt32 { // start over: no stamp may look current
		clear(g.stamp)
		g.serial = 0
	}
	g.serial++
	count := g.count[:0]
	for p := lo; p < hi; p++ {
		i := int(g.order[p])*H + h
		c := int(d.Obs[i])*g.nA + int(d.Act[i])
		if g.stamp[c] != g.serial {
			g.stamp[c], g.slot[c] = g.serial, int32(len(count))
			count = append(count, 0)
		}
		g.local[p] = g.slot[c]
		count[g.slot[c]]++
	}
	g.count = count
	g.place(lo, hi)
}

// place turns count into the subgroups' start offsets in next (−1 for a
// settling subgroup of one) and moves the group's episodes there.
func (g *historyGroups) place(lo, hi int) {
	var at int32
	at, g.nextB = g.offsets(g.count, int32(len(g.next)), g.nextB)
	g.next = g.next[:at]
	for p := lo; p < hi; p++ {
		if j := g.local[p]; g.count[j] >= 0 {
			g.next[g.count[j]] = g.order[p]
			g.count[j]++
		}
	}
}

// offsets turns the group sizes count into their start positions from at
// on (−1 for a group of one episode, which settles), appends each kept
// group's end to bounds, and returns the end of the last one.
func (g *historyGroups) offsets(count []int32, at int32, bounds []int32) (int32, []int32) {
	for j, c := range count {
		if c == 1 {
			g.settled++
			count[j] = -1
			continue
		}
		count[j] = at
		at += c
		bounds = append(bounds, at)
	}
	return at, bounds
}

// distinctByRadix is DistinctHistories by numbering the histories step
// by step: the id of τ_h is the rank of the pair (id of τ_{h-1},
// (o_h,a_h)) among the distinct pairs, found by radix sorting.
func distinctByRadix(d *Dataset) []int {
	K, H := d.NumEpisodes(), d.Horizon
	out := make([]int, H)
	r := &historyIDs{
		nA: uint64(d.NumActions()), sym: uint64(d.NumObs()) * uint64(d.NumActions()),
		parent: make([]uint64, K), keys: make([]uint64, K), idx: make([]int32, K),
		tmpK: make([]uint64, K), tmpI: make([]int32, K),
	}
	distinct := uint64(1)
	for h := range H {
		distinct = r.step(d, h, distinct)
		out[h] = int(distinct)
	}
	return out
}

// historyIDs numbers the histories of DistinctHistories step by step.
type historyIDs struct {
	nA, sym uint64   // |A| and |O|·|A|
	parent  []uint64 // id of τ_{h-1}; τ_0 = ∅ has id 0
	keys    []uint64
	idx     []int32
	tmpK    []uint64
	tmpI    []int32
}

// step replaces the ids of τ_{h-1} (of which distinct are distinct) by
// those of τ_h, h 0-based, and returns how many of them are distinct.
func (r *historyIDs) step(d *Dataset, h int, distinct uint64) uint64 {
	K, H := len(r.parent), d.Horizon
	for k := range K {
		i := k*H + h
		r.keys[k] = r.parent[k]*r.sym + uint64(d.Obs[i])*r.nA + uint64(d.Act[i])
		r.idx[k] = int32(k)
	}
	radixSort(r.keys, r.idx, r.tmpK, r.tmpI, distinct*r.sym-1)
	id := uint64(0)
	for j := range K {
		if j > 0 && r.keys[j] != r.keys[j-1] {
			id++
		}
		r.parent[r.idx[j]] = id
	}
	return id + 1
}

// digitStarts sets start[d] to the number of keys whose 16-bit digit at
// shift is below d: where an LSD pass puts the first key of digit d.
func digitStarts(keys []uint64, shift uint, start *[1 << 16]int) {
	clear(start[:])
	for _, k := range keys {
		start[(k>>shift)&0xFFFF]++
	}
	sum := 0
	for i, c := range start {
		start[i] = sum
		sum += c
	}
}

// radixSort sorts keys (carrying idx) ascending with 16-bit LSD passes,
// as many as maxKey needs; tmp slices have the same length.
func radixSort(keys []uint64, idx []int32, tmpK []uint64, tmpI []int32, maxKey uint64) {
	var count [1 << 16]int
	for shift := uint(0); shift < 64 && maxKey>>shift > 0; shift += 16 {
		digitStarts(keys, shift, &count)
		for j, k := range keys {
			b := (k >> shift) & 0xFFFF
			tmpK[count[b]] = k
			tmpI[count[b]] = idx[j]
			count[b]++
		}
		copy(keys, tmpK)
		copy(idx, tmpI)
	}
}

// fewDistinct is the most distinct values fewQuantiles tracks. Logged
// propensities usually take a handful of values (ε-greedy, uniform,
// discretised scores); 64 keeps fewCounter's table at most half full.
const fewDistinct = 64

// fewQuantiles returns the quantiles qs (as streamQuantiles does) of the n
// positive values that visit passes, in one pass that counts each distinct
// value, when there are at most max (≤ fewDistinct) of them; ok is false
// otherwise (or for a value that is not positive), and the caller falls
// back to streamQuantiles.
func fewQuantiles(n int, visit func(func([]float64)), qs []float64, max int) (out []float64, ok bool) {
	if n == 0 {
		return nil, false
	}
	c := &fewCounter{max: min(max, fewDistinct), ok: true}
	visit(c.add)
	if !c.ok {
		return nil, false
	}
	c.sortCounts()
	return c.quantiles(n, qs), true
}

// fewSlots is the size of fewCounter's table, a power of two at least
// twice fewDistinct.
const fewSlots = 2 * fewDistinct

// fewCounter counts the distinct values of a stream while there are at
// most max of them and all are positive (ok), in an open-addressed table
// keyed by the values' bits (0, the bits of +0, marks a free slot); vals
// and counts are the values in ascending order with their counts, once
// sortCounts has run.
type fewCounter struct {
	key      [fewSlots]uint64
	count    [fewSlots]int
	distinct int
	max      int
	ok       bool
	vals     []float64
	counts   []int
}

// add counts the values of one segment.
func (c *fewCounter) add(seg []float64) {
	if !c.ok {
		return
	}
	for _, v := range seg {
		i, ok := c.entry(v)
		if !ok {
			return
		}
		c.count[i]++
	}
}

// addCount counts n copies of the value v.
func (c *fewCounter) addCount(v float64, n int) {
	if !c.ok {
		return
	}
	if i, ok := c.entry(v); ok {
		c.count[i] += n
	}
}

// entry is the slot of v, taken for it when it is new; false (and c.ok
// false) when v is not positive or the table already holds max values.
func (c *fewCounter) entry(v float64) (uint64, bool) {
	if !(v > 0) {
		c.ok = false
		return 0, false
	}
	i, found := c.slot(math.Float64bits(v))
	if !found {
		if c.distinct == c.max {
			c.ok = false
			return 0, false
		}
		c.key[i] = math.Float64bits(v)
		c.distinct++
	}
	return i, true
}

// slot is the table slot of the bits b: the one holding them (found) or
// the free one where they would go, probing linearly from a Fibonacci
// hash of b.
func (c *fewCounter) slot(b uint64) (i uint64, found bool) {
	i = (b * 0x9E3779B97F4A7C15) >> 57 // the top 7 bits: fewSlots = 128
	for c.key[i] != b {
		if c.key[i] == 0 {
			return i, false
		}
		i = (i + 1) % fewSlots
	}
	return i, true
}

// sortCounts sets vals and counts from the table, in ascending order.
func (c *fewCounter) sortCounts() {
	c.vals, c.counts = c.vals[:0], c.counts[:0]
	for _, b := range c.key {
		if b != 0 {
			c.vals = append(c.vals, math.Float64frombits(b))
		}
	}
	slices.Sort(c.vals)
	for _, v := range c.vals {
		i, _ := c.slot(math.Float64bits(v))
		c.counts = append(c.counts, c.count[i])
	}
}

// quantiles returns the order statistics of rank floor(q·(n−1)) of the n
// values counted.
func (c *fewCounter) quantiles(n int, qs []float64) []float64 {
	out := make([]float64, len(qs))
	for j, q := range qs {
		r := int(math.Floor(q * float64(n-1)))
		i := 0
		for ; r >= c.counts[i]; i++ {
			r -= c.counts[i]
		}
		out[j] = c.vals[i]
	}
	return out
}

// streamQuantiles returns, for each q, the order statistic of rank
// floor(q·(n−1)) (NaN when n = 0) of the n values that visit passes,
// segment by segment, without storing them: it
// selects on the order-preserving keys of the values one 16-bit digit at a
// time from the top, each level one counting pass over the values, with
// one count table per distinct prefix of the wanted ranks (at most one
// per quantile): four passes that only read, no copy or sort of the
// values.
func streamQuantiles(n int, visit func(func([]float64)), qs []float64) []float64 {
	if n == 0 {
		return nanQuantiles(len(qs))
	}
	rank := quantileRanks(qs, n)
	prefix := make([]uint64, len(qs))
	for shift := 48; shift >= 0; shift -= 16 {
		groups, group := prefixGroups(prefix)
		counts := countDigits(visit, groups, shift)
		for i := range qs {
			rank[i], prefix[i] = selectDigit(&counts[group[i]], rank[i], prefix[i], shift)
		}
	}
	return keyFloats(prefix)
}

// nanQuantiles is the n quantiles of no values: all NaN.
func nanQuantiles(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

// quantileRanks returns the rank ⌊q·(n−1)⌋ of each quantile q of qs among
// n sorted values.
func quantileRanks(qs []float64, n int) []int {
	rank := make([]int, len(qs))
	for i, q := range qs {
		rank[i] = int(math.Floor(q * float64(n-1)))
	}
	return rank
}

// keyFloats returns the floats whose sort keys are keys.
func keyFloats(keys []uint64) []float64 {
	out := make([]float64, len(keys))
	for i, p := range keys {
		out[i] = keyFloat(p)
	}
	return out
}

// prefixGroups returns the distinct prefixes (digits above shift) of the
// wanted ranks, in order of first appearance, and the group of each rank.
func prefixGroups(prefix []uint64) (groups []uint64, group []int) {
	group = make([]int, len(prefix))
	for i, p := range prefix {
		j := slices.Index(groups, p)
		if j < 0 {
			j = len(groups)
			groups = append(groups, p)
		}
		group[i] = j
	}
	return groups, group
}

// countDigits counts, in one pass over the values visit passes, the
// 16-bit digit at shift of the keys of the values in each prefix group.
func countDigits(visit func(func([]float64)), groups []uint64, shift int) [][1 << 16]int {
	counts := make([][1 << 16]int, len(groups))
	high := uint(shift + 16)
	visit(func(vals []float64) {
		for _, v := range vals {
			k := floatKey(v)
			digit := (k >> uint(shift)) & 0xFFFF
			if high == 64 {
				counts[0][digit]++
				continue
			}
			for j, g := range groups {
				if k>>high == g>>high {
					counts[j][digit]++
					break
				}
			}
		}
	})
	return counts
}

// selectDigit finds the digit at shift of the value of rank r within its
// prefix group's counts c, and returns the rank within that digit and the
// prefix extended by the digit.
func selectDigit(c *[1 << 16]int, r int, prefix uint64, shift int) (int, uint64) {
	b := 0
	for ; r >= c[b]; b++ {
		r -= c[b]
	}
	return r, prefix | uint64(b)<<uint(shift)
}

// floatKey maps floats to integers with the same order.
func floatKey(f float64) uint64 {
	b := math.Float64bits(f)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

func keyFloat(k uint64) float64 {
	if k>>63 != 0 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}
