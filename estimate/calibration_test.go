package estimate_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/genpomdp"
	"github.com/psrlcb/psrlcb/pomdp"
)

// aliasedLogs simulates K uniform episodes of a small generated problem
// (6 states behind 4 symbols, rewards ±1 on entering 2 states) and returns
// the true model as an estimate.Model on the logs' vocabularies (numeric
// symbols sort as their indexes, and the observation noise makes every
// symbol appear).
func aliasedLogs(t *testing.T, K, H int) (*estimate.Model, *ingest.Dataset) {
	t.Helper()
	g, err := genpomdp.Generate(genpomdp.Spec{Family: "aliased", States: 6, Actions: 3, Obs: 4, ObsNoise: 0.05, RewardStates: 2, StartStates: 2, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pomdp.Parse(strings.NewReader(g.Text), "maze")
	if err != nil {
		t.Fatal(err)
	}
	beh, _ := pomdp.ParseBehavior("uniform", p)
	d, err := pomdp.SimulateDataset(context.Background(), p, H, K, beh, 5)
	if err != nil {
		t.Fatal(err)
	}
	m := fromPOMDP(p, H)
	if !slices.Equal(m.ObsVocab, d.ObsVocab) || !slices.Equal(m.ActVocab, d.ActVocab) {
		t.Fatalf("vocabularies differ: model %v %v, logs %v %v", m.ObsVocab, m.ActVocab, d.ObsVocab, d.ActVocab)
	}
	return m, d
}

// TestRewardLogLikStateFree: when every cell emits the same reward
// distribution q, the rewards are independent of everything else and the
// reward part of the log-likelihood is Σ_h ln q(r_h) exactly.
func TestRewardLogLikStateFree(t *testing.T) {
	m, d := aliasedLogs(t, 50, 3)
	V := len(m.RewardValues)
	q := make([]float64, V)
	for v := range q {
		q[v] = float64(v+1) / float64(V*(V+1)/2)
	}
	R := m.RewardProb[0]
	for i := 0; i < len(R); i += V {
		copy(R[i:i+V], q)
	}
	m.Prepare()
	H := d.Horizon
	for k := range d.NumEpisodes() {
		want := 0.0
		for _, r := range d.Reward[k*H : (k+1)*H] {
			want += math.Log(q[slices.Index(m.RewardValues, r)])
		}
		got := m.RewardLogLik(d.Obs[k*H:(k+1)*H], d.Act[k*H:(k+1)*H], d.Reward[k*H:(k+1)*H])
		if math.Abs(got-want) > 1e-12 {
			t.Fatalf("episode %d: reward log-likelihood %v, want Σ ln q = %v", k, got, want)
		}
	}
}

// TestRewardCalibration: the true model passes the check on its own logs;
// the same model with every reward emission moved to the value 0 (the
// failure of the maze: observations right, rewards flat) is flagged, and
// its worst cells are the ones whose logged average is ±1.
func TestRewardCalibration(t *testing.T) {
	m, d := aliasedLogs(t, 4000, 3)
	cal := estimate.RewardCalibration(m, d, 0, true)
	if cal.Cells == 0 || cal.Flagged || cal.MiscalibratedShare > 0.02 {
		t.Fatalf("true model: %+v", cal)
	}
	for _, c := range cal.Worst {
		// The package's rule: within 3 SE or within 5% of the reward range.
		if gap := math.Abs(c.Logged - c.Predicted); gap > 3*c.StdErr && gap > 0.05*cal.Range {
			t.Errorf("true model, cell %s: logged %v, predicted %v, SE %v", c.History, c.Logged, c.Predicted, c.StdErr)
		}
	}
	flat := *m
	V := len(m.RewardValues)
	zero := slices.Index(m.RewardValues, 0)
	R := make([]float64, len(m.RewardProb[0]))
	for i := zero; i < len(R); i += V {
		R[i] = 1
	}
	flat.RewardProb = [][]float64{R}
	flat.Prepare()
	bad := estimate.RewardCalibration(&flat, d, 0, true)
	if !bad.Flagged || bad.Miscalibrated == 0 {
		t.Fatalf("flat-reward model not flagged: %+v", bad)
	}
	if w := bad.Worst[0]; w.Predicted != 0 || math.Abs(w.Logged) < 0.5 {
		t.Errorf("worst cell %+v: want a prediction of 0 against a logged average near ±1", w)
	}
	if bad.RMSE <= cal.RMSE {
		t.Errorf("RMSE %v of the flat model not above the true model's %v", bad.RMSE, cal.RMSE)
	}
}

// TestRewardCalibrationDeterministic: the figures are the same, bit for
// bit, on every call (the cells are summed in a fixed order, not in map
// order).
func TestRewardCalibrationDeterministic(t *testing.T) {
	m, d := aliasedLogs(t, 4000, 3)
	first := estimate.RewardCalibration(m, d, 0, true)
	for i := 0; i < 20; i++ {
		got := estimate.RewardCalibration(m, d, 0, true)
		if got.RMSE != first.RMSE || got.Cells != first.Cells || got.StepShare != first.StepShare {
			t.Fatalf("call %d: RMSE %v, %d cells; first call RMSE %v, %d cells", i, got.RMSE, got.Cells, first.RMSE, first.Cells)
		}
	}
}

// TestRewardCalibrationBruteForce: the check's figures equal those of its
// definition computed another way, a table of every logged (step,
// history, action) cell filled episode by episode with the belief filtered
// along each episode, at several minimum counts (tolerance 1e-12: the
// sums are added in another order).
func TestRewardCalibrationBruteForce(t *testing.T) {
	m, d := aliasedLogs(t, 3000, 4)
	H, K := d.Horizon, d.NumEpisodes()
	type cell struct {
		n         int
		sum, sum2 float64
		pred      float64
	}
	cells := map[string]*cell{}
	b, pred := make([]float64, m.States), make([]float64, m.States)
	lo, hi := math.Inf(1), math.Inf(-1)
	for k := range K {
		m.Prior(b)
		m.ObserveFirst(b, int(d.Obs[k*H]))
		key := ""
		for i := range H {
			if i > 0 {
				m.Predict(i, b, int(d.Act[k*H+i-1]), pred)
				m.Correct(i, pred, int(d.Act[k*H+i-1]), int(d.Obs[k*H+i]), b)
			}
			key += string(rune('a'+d.Obs[k*H+i])) + string(rune('A'+d.Act[k*H+i]))
			c := cells[key]
			if c == nil {
				c = &cell{pred: m.ExpectedReward(i+1, b, int(d.Act[k*H+i]))}
				cells[key] = c
			}
			r := d.Reward[k*H+i]
			c.n++
			c.sum += r
			c.sum2 += r * r
			lo, hi = math.Min(lo, r), math.Max(hi, r)
		}
	}
	for _, minCount := range []int{1, 2, 30, 200} {
		var checked, bad, nCells, nBad int
		var sq float64
		for _, c := range cells {
			if c.n < minCount {
				continue
			}
			n := float64(c.n)
			mean := c.sum / n
			se := math.NaN() // one step has no spread: never miscalibrated
			if c.n > 1 {
				se = math.Sqrt(math.Max(c.sum2/n-mean*mean, 0) * n / (n - 1) / n)
			}
			gap := math.Abs(mean - c.pred)
			nCells++
			checked += c.n
			sq += n * gap * gap
			if gap > 3*se && gap > 0.05*(hi-lo) {
				nBad++
				bad += c.n
			}
		}
		got := estimate.RewardCalibration(m, d, minCount, true)
		if got.Cells != nCells || got.Miscalibrated != nBad || got.Range != hi-lo {
			t.Fatalf("min count %d: %d cells, %d miscalibrated, range %v; want %d, %d, %v", minCount, got.Cells, got.Miscalibrated, got.Range, nCells, nBad, hi-lo)
		}
		if nCells == 0 {
			t.Fatalf("min count %d: no cell checked; the test needs some", minCount)
		}
		rmse := math.Sqrt(sq / float64(checked))
		if math.Abs(got.RMSE-rmse) > 1e-12 || math.Abs(got.StepShare-float64(checked)/float64(K*H)) > 1e-12 ||
			math.Abs(got.MiscalibratedShare-float64(bad)/float64(checked)) > 1e-12 {
			t.Fatalf("min count %d: RMSE %v, step share %v, miscalibrated share %v; want %v, %v, %v", minCount,
				got.RMSE, got.StepShare, got.MiscalibratedShare, rmse, float64(checked)/float64(K*H), float64(bad)/float64(checked))
		}
		for _, w := range got.Worst {
			parts := strings.Split(w.History, ",")
			key := ""
			for j := 0; j < len(parts); j += 2 {
				key += string(rune('a'+slices.Index(d.ObsVocab, parts[j]))) + string(rune('A'+slices.Index(d.ActVocab, parts[j+1])))
			}
			c := cells[key]
			if c == nil || c.n != w.Count || math.Abs(c.pred-w.Predicted) > 1e-12 || math.Abs(c.sum/float64(c.n)-w.Logged) > 1e-12 {
				t.Fatalf("min count %d: worst cell %+v, want %+v", minCount, w, c)
			}
		}
	}
}

// TestScoreEpisodes: the per-episode log-likelihoods are those of the
// model's own functions, episode by episode, whatever the worker count
// (more episodes than one block, so blocks run in parallel).
func TestScoreEpisodes(t *testing.T) {
	m, d := aliasedLogs(t, 9000, 3)
	H := d.Horizon
	for _, w := range []int{1, 3} {
		obs, rew, err := estimate.ScoreEpisodes(context.Background(), m, d, w)
		if err != nil {
			t.Fatal(err)
		}
		for k := range d.NumEpisodes() {
			o, a, r := d.Obs[k*H:(k+1)*H], d.Act[k*H:(k+1)*H], d.Reward[k*H:(k+1)*H]
			if obs[k] != m.ObsLogLik(o, a) || rew[k] != m.RewardLogLik(o, a, r) {
				t.Fatalf("workers %d, episode %d: %v, %v; want %v, %v", w, k, obs[k], rew[k], m.ObsLogLik(o, a), m.RewardLogLik(o, a, r))
			}
		}
	}
}
