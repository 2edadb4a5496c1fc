package estimate

import (
	"cmp"
	"math"
	"slices"
	"sort"

	"github.com/psrlcb/psrlcb/ingest"
)

// RewardLogLik is the reward part of an episode's log-likelihood,
// ln P(r_{1:H} | o_{1:H}, a_{1:H}) = EpisodeLogLik − ObsLogLik: what the
// model says about the logged rewards once the observations are known.
// The observation part, ObsLogLik, can match the true model's while this
// one is far below it: a model can explain the observations and not the
// rewards that decide the policy.
func (m *Model) RewardLogLik(obs, act []uint16, rew []float64) float64 {
	return m.EpisodeLogLik(obs, act, rew) - m.ObsLogLik(obs, act)
}

// Calibration defaults.
const (
	// DefaultCalibrationMinCount is the fewest logged steps a (step,
	// history, action) cell needs before its average reward is compared
	// with the model: 30 makes the standard error of the mean a third of
	// the reward's spread, and the normal approximation of the test fair.
	DefaultCalibrationMinCount = 30
	// calibrationZ is the number of standard errors a cell's logged
	// average may sit from the model's prediction before the cell counts
	// as miscalibrated (3: about 0.3% of well-calibrated cells by chance).
	calibrationZ = 3
	// calibrationTol is the least gap, as a share of the per-step reward
	// range, that counts as miscalibration: cells whose rewards never vary
	// have a zero standard error, and a model within 5% of the range there
	// is calibrated for any planning purpose.
	calibrationTol = 0.05
	// calibrationFlagShare is the share of the checked steps lying in
	// miscalibrated cells above which the model is flagged: a few cells
	// beyond 3 SE happen by chance and by multiple testing, a tenth of the
	// logged mass does not.
	calibrationFlagShare = 0.1
	// calibrationWorst is how many of the worst cells are kept.
	calibrationWorst = 10
)

// CalibrationCell is one (step, history, action) cell of the logs: the
// average logged reward r_h of the Count steps that share o_1,a_1,…,o_h and
// a_h, against the model's prediction E_θ̂[r_h | o_1,a_1,…,o_h, a_h].
type CalibrationCell struct {
	Step      int     `json:"step"`
	History   string  `json:"history"` // "o1,a1,…,oh,ah" in the logs' symbols
	Count     int     `json:"count"`
	Logged    float64 `json:"logged"`
	Predicted float64 `json:"predicted"`
	StdErr    float64 `json:"std_err"`
}

// Calibration is the reward-calibration model check.
type Calibration struct {
	// Episodes is the number of episodes checked; HeldOut says they were
	// not used to fit the model.
	Episodes int  `json:"episodes"`
	HeldOut  bool `json:"held_out"`
	MinCount int  `json:"min_count"`
	// Cells is the number of cells with at least MinCount steps, and
	// StepShare the share of all checked steps they hold.
	Cells     int     `json:"cells"`
	StepShare float64 `json:"step_share"`
	// Miscalibrated is the number of cells whose logged average lies more
	// than 3 standard errors and 5% of the reward range from the model's
	// prediction; MiscalibratedShare the share of the checked cells' steps
	// they hold.
	Miscalibrated      int     `json:"miscalibrated"`
	MiscalibratedShare float64 `json:"miscalibrated_share"`
	// RMSE is the step-weighted root mean square of logged − predicted
	// over the checked cells, in reward units; Range is the per-step
	// reward range it compares with.
	RMSE  float64 `json:"rmse"`
	Range float64 `json:"range"`
	// Flagged: more than a tenth of the checked steps lie in
	// miscalibrated cells.
	Flagged bool `json:"flagged"`
	// Worst are the checked cells with the largest |logged − predicted|.
	Worst []CalibrationCell `json:"worst"`
}

type calAcc struct {
	step      int
	n         int
	sum, sum2 float64
	predicted float64
	k, h      int // the cell's first episode and its step, to name it
}

// RewardCalibration compares, on the episodes of d, the model's expected
// reward per (step, history, action) cell with the logged average wherever
// a cell holds at least minCount steps (0: DefaultCalibrationMinCount).
// The model's vocabularies must be d's (d a subset of the fitted logs, or
// held-out logs coded the same way). heldOut is recorded as given.
//
// The cells are found without a table of every logged prefix (most hold
// one step, and such a table outgrew the logs on large ones): the
// episodes are sorted once by o_1,a_1,…,o_H,a_H, so that the episodes
// sharing a length-h prefix are consecutive for every h, and each step
// scans the order. Memory is 5 bytes per episode; only cells with
// minCount steps are kept.
func RewardCalibration(m *Model, d *ingest.Dataset, minCount int, heldOut bool) Calibration {
	if minCount <= 0 {
		minCount = DefaultCalibrationMinCount
	}
	H, K := d.Horizon, d.NumEpisodes()
	cal := Calibration{Episodes: K, HeldOut: heldOut, MinCount: minCount}
	if H != m.Horizon || K == 0 {
		return cal
	}
	lo, hi := rewardRange(d.Reward[:K*H])
	sc := newCalScan(m, d, minCount)
	sc.scan()
	cal.Range = hi - lo
	cal.summarise(sc.cells, d, K*H)
	return cal
}

// rewardRange is the smallest and largest of rs (+Inf and −Inf when rs
// is empty).
func rewardRange(rs []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, r := range rs {
		lo, hi = math.Min(lo, r), math.Max(hi, r)
	}
	return lo, hi
}

// prefixOrder is the K episodes of d sorted by o_1,a_1,…,o_H,a_H (ties by
// index), so that the episodes sharing a prefix are consecutive.
func prefixOrder(d *ingest.Dataset, K, H int) []int32 {
	order := make([]int32, K)
	for k := range order {
		order[k] = int32(k)
	}
	slices.SortFunc(order, func(a, b int32) int { return compareEpisodes(d, H, a, b) })
	return order
}

// compareEpisodes orders episodes a and b of d by their observations and
// actions step by step, and by their index when those agree.
func compareEpisodes(d *ingest.Dataset, H int, a, b int32) int {
	ea, eb := int(a)*H, int(b)*H
	for i := range H {
		if c := cmp.Compare(d.Obs[ea+i], d.Obs[eb+i]); c != 0 {
			return c
		}
		if c := cmp.Compare(d.Act[ea+i], d.Act[eb+i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(a, b)
}

// calScan finds RewardCalibration's cells step by step in the prefix
// order of the episodes.
type calScan struct {
	m        *Model
	d        *ingest.Dataset
	H, K     int
	minCount int
	order    []int32
	// start[j]: order[j] begins a run of episodes sharing
	// o_1,a_1,…,o_h,a_h (refined step by step: a run at step h splits at
	// step h+1).
	start   []bool
	cells   []*calAcc
	b, pred []float64 // belief scratch of expectedReward
}

// newCalScan is the scan of the K episodes of d, of horizon H, in prefix
// order, with one run of all of them.
func newCalScan(m *Model, d *ingest.Dataset, minCount int) *calScan {
	H, K := d.Horizon, d.NumEpisodes()
	sc := &calScan{m: m, d: d, H: H, K: K, minCount: minCount, order: prefixOrder(d, K, H),
		start: make([]bool, K), b: make([]float64, m.States), pred: make([]float64, m.States)}
	sc.start[0] = true
	return sc
}

// scan adds the cells of every step, refining the runs step by step.
func (sc *calScan) scan() {
	for i := range sc.H {
		sc.refine(i)
		sc.addCells(i)
	}
}

// refine splits the runs of sc.start where o_{i+1} or a_{i+1} changes.
func (sc *calScan) refine(i int) {
	d, H := sc.d, sc.H
	for j := 1; j < sc.K; j++ {
		p, q := int(sc.order[j-1])*H+i, int(sc.order[j])*H+i
		if d.Obs[p] != d.Obs[q] || d.Act[p] != d.Act[q] {
			sc.start[j] = true
		}
	}
}

// addCells adds a cell of step i+1 for every run of at least minCount
// episodes.
func (sc *calScan) addCells(i int) {
	for j := 0; j < sc.K; {
		e := j + 1
		for e < sc.K && !sc.start[e] {
			e++
		}
		if e-j >= sc.minCount {
			sc.cells = append(sc.cells, sc.cell(i, sc.order[j:e]))
		}
		j = e
	}
}

// cell accumulates the step-(i+1) rewards of the run of episodes run and
// the model's prediction at its first episode.
func (sc *calScan) cell(i int, run []int32) *calAcc {
	c := &calAcc{step: i + 1, n: len(run), k: sc.K, h: i + 1}
	for _, k := range run {
		r := sc.d.Reward[int(k)*sc.H+i]
		c.sum += r
		c.sum2 += r * r
		c.k = min(c.k, int(k))
	}
	c.predicted = expectedReward(sc.m, sc.d, c.k, i, sc.b, sc.pred)
	return c
}

// expectedReward is E_θ̂[r_{i+1} | o_1,a_1,…,o_{i+1}, a_{i+1}] of episode k
// (step i+1, 0-based i), filtering the belief along the episode; b and
// pred are scratch of length m.States.
func expectedReward(m *Model, d *ingest.Dataset, k, i int, b, pred []float64) float64 {
	H := d.Horizon
	obs, act := d.Obs[k*H:(k+1)*H], d.Act[k*H:(k+1)*H]
	m.Prior(b)
	m.ObserveFirst(b, int(obs[0]))
	for t := 1; t <= i; t++ {
		m.Predict(t, b, int(act[t-1]), pred)
		m.Correct(t, pred, int(act[t-1]), int(obs[t]), b)
	}
	return m.ExpectedReward(i+1, b, int(act[i]))
}

// summarise fills cal's figures from the accumulated cells (those of at
// least MinCount steps) of the logs d of steps steps.
func (cal *Calibration) summarise(order []*calAcc, d *ingest.Dataset, steps int) {
	sortCells(order)
	tot, all := cal.tallyAll(order, d)
	if tot.checked == 0 {
		return
	}
	cal.StepShare = float64(tot.checked) / float64(steps)
	cal.MiscalibratedShare = float64(tot.bad) / float64(tot.checked)
	cal.RMSE = math.Sqrt(tot.sq / float64(tot.checked))
	cal.Flagged = cal.MiscalibratedShare > calibrationFlagShare
	cal.Worst = worstCells(all)
}

// tallyAll tallies the cells of at least MinCount steps, in order, and
// returns the totals and those cells.
func (cal *Calibration) tallyAll(order []*calAcc, d *ingest.Dataset) (calTotals, []CalibrationCell) {
	var tot calTotals
	var all []CalibrationCell
	for _, c := range order {
		if c.n < cal.MinCount {
			continue
		}
		cell := c.cell(d)
		cal.tally(&tot, c, cell)
		all = append(all, cell)
	}
	return tot, all
}

// sortCells puts the cells in a fixed order (the cells' first episode
// and step), so that the sums, and the figures, are those of one order
// of the cells.
func sortCells(order []*calAcc) {
	sort.Slice(order, func(i, j int) bool {
		if order[i].k != order[j].k {
			return order[i].k < order[j].k
		}
		return order[i].h < order[j].h
	})
}

// calTotals are summarise's sums over the checked cells: their steps,
// the steps of the miscalibrated ones, and Σ n·gap².
type calTotals struct {
	checked, bad int
	sq           float64
}

// tally counts the checked cell c, reported as cell, into cal and tot.
func (cal *Calibration) tally(tot *calTotals, c *calAcc, cell CalibrationCell) {
	n := float64(c.n)
	gap := math.Abs(cell.Logged - c.predicted)
	cal.Cells++
	tot.checked += c.n
	tot.sq += n * gap * gap
	if gap > calibrationZ*cell.StdErr && gap > calibrationTol*cal.Range {
		cal.Miscalibrated++
		tot.bad += c.n
	}
}

// cell is the report of the accumulated cell c: its logged mean, the
// model's prediction and the standard error of the mean.
func (c *calAcc) cell(d *ingest.Dataset) CalibrationCell {
	n := float64(c.n)
	mean := c.sum / n
	v := math.Max(c.sum2/n-mean*mean, 0) * n / (n - 1)
	return CalibrationCell{Step: c.step, Count: c.n, Logged: mean, Predicted: c.predicted, StdErr: math.Sqrt(v / n),
		History: historyName(d, c.k, c.h)}
}

// worstCells sorts all by decreasing |logged − predicted| (ties by
// history) and returns the first calibrationWorst.
func worstCells(all []CalibrationCell) []CalibrationCell {
	sort.Slice(all, func(i, j int) bool {
		gi, gj := math.Abs(all[i].Logged-all[i].Predicted), math.Abs(all[j].Logged-all[j].Predicted)
		if gi != gj {
			return gi > gj
		}
		return all[i].History < all[j].History
	})
	return all[:min(len(all), calibrationWorst)]
}

// historyName spells o_1,a_1,…,o_h,a_h of episode k in the logs' symbols.
func historyName(d *ingest.Dataset, k, h int) string {
	H := d.Horizon
	s := ""
	for i := range h {
		if i > 0 {
			s += ","
		}
		s += d.ObsVocab[d.Obs[k*H+i]] + "," + d.ActVocab[d.Act[k*H+i]]
	}
	return s
}
