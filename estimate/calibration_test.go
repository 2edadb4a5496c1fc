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
