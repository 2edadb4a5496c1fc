package estimate

import (
	"encoding/binary"
	"math"
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
	k, h      int // one episode and step of the cell, to name it
}

// RewardCalibration compares, on the episodes of d, the model's expected
// reward per (step, history, action) cell with the logged average wherever
// a cell holds at least minCount steps (0: DefaultCalibrationMinCount).
// The model's vocabularies must be d's (d a subset of the fitted logs, or
// held-out logs coded the same way). heldOut is recorded as given.
func RewardCalibration(m *Model, d *ingest.Dataset, minCount int, heldOut bool) Calibration {
	if minCount <= 0 {
		minCount = DefaultCalibrationMinCount
	}
	H, K := d.Horizon, d.NumEpisodes()
	cal := Calibration{Episodes: K, HeldOut: heldOut, MinCount: minCount}
	if H != m.Horizon || K == 0 {
		return cal
	}
	cells := map[string]*calAcc{}
	key := make([]byte, 0, 4*H)
	b := make([]float64, m.States)
	pred := make([]float64, m.States)
	lo, hi := math.Inf(1), math.Inf(-1)
	for k := range K {
		obs, act, rew := d.Obs[k*H:(k+1)*H], d.Act[k*H:(k+1)*H], d.Reward[k*H:(k+1)*H]
		m.Prior(b)
		m.ObserveFirst(b, int(obs[0]))
		key = key[:0]
		for i := range H {
			h := i + 1
			if i > 0 {
				m.Predict(i, b, int(act[i-1]), pred)
				m.Correct(i, pred, int(act[i-1]), int(obs[i]), b)
			}
			key = binary.LittleEndian.AppendUint16(key, obs[i])
			key = binary.LittleEndian.AppendUint16(key, act[i])
			c := cells[string(key)]
			if c == nil {
				c = &calAcc{step: h, predicted: m.ExpectedReward(h, b, int(act[i])), k: k, h: h}
				cells[string(key)] = c
			}
			r := rew[i]
			c.n++
			c.sum += r
			c.sum2 += r * r
			lo, hi = math.Min(lo, r), math.Max(hi, r)
		}
	}
	cal.Range = hi - lo
	cal.summarise(cells, d, K*H)
	return cal
}

func (cal *Calibration) summarise(cells map[string]*calAcc, d *ingest.Dataset, steps int) {
	var checked, bad int
	var sq float64
	var all []CalibrationCell
	// In a fixed order (the cells' first episode and step), so that the
	// sums, and the figures, do not depend on map iteration.
	order := make([]*calAcc, 0, len(cells))
	for _, c := range cells {
		order = append(order, c)
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].k != order[j].k {
			return order[i].k < order[j].k
		}
		return order[i].h < order[j].h
	})
	for _, c := range order {
		if c.n < cal.MinCount {
			continue
		}
		n := float64(c.n)
		mean := c.sum / n
		v := math.Max(c.sum2/n-mean*mean, 0) * n / (n - 1)
		cell := CalibrationCell{Step: c.step, Count: c.n, Logged: mean, Predicted: c.predicted, StdErr: math.Sqrt(v / n),
			History: historyName(d, c.k, c.h)}
		gap := math.Abs(mean - c.predicted)
		cal.Cells++
		checked += c.n
		sq += n * gap * gap
		if gap > calibrationZ*cell.StdErr && gap > calibrationTol*cal.Range {
			cal.Miscalibrated++
			bad += c.n
		}
		all = append(all, cell)
	}
	if checked == 0 {
		return
	}
	cal.StepShare = float64(checked) / float64(steps)
	cal.MiscalibratedShare = float64(bad) / float64(checked)
	cal.RMSE = math.Sqrt(sq / float64(checked))
	cal.Flagged = cal.MiscalibratedShare > calibrationFlagShare
	sort.Slice(all, func(i, j int) bool {
		gi, gj := math.Abs(all[i].Logged-all[i].Predicted), math.Abs(all[j].Logged-all[j].Predicted)
		if gi != gj {
			return gi > gj
		}
		return all[i].History < all[j].History
	})
	cal.Worst = all[:min(len(all), calibrationWorst)]
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
