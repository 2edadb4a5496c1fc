package estimate

import (
	"context"
	"math"
	"testing"
)

// TestGrowModelKeepsDistribution: splitting every state of a model into
// copies (without jitter the copies are exact) leaves the likelihood of
// any data unchanged, since the copies of a state together carry its
// probability; with jitter the model is still valid and close.
func TestGrowModelKeepsDistribution(t *testing.T) {
	for _, rv := range [][]float64{{0, 1, 5}, nil} {
		m := RandomModel(3, 4, 2, 4, false, rv, 5)
		if rv == nil {
			// RandomModel with no reward support: Gaussian rewards.
			if m.Reward != RewardGaussian {
				t.Skip("RandomModel without rewards is not Gaussian")
			}
		}
		d := SampleDataset(m, 300, 6)
		want := m.DataLogLik(d)
		for _, S2 := range []int{4, 6, 7} {
			g := growModelJitter(m, S2, 1, 0)
			if err := g.Validate(1e-9); err != nil {
				t.Fatalf("grown to %d: %v", S2, err)
			}
			if got := g.DataLogLik(d); math.Abs(got-want) > 1e-8*math.Abs(want) {
				t.Fatalf("grown to %d: log-likelihood %v, want %v", S2, got, want)
			}
			j := growModel(m, S2, 1)
			if err := j.Validate(1e-9); err != nil {
				t.Fatalf("jittered %d: %v", S2, err)
			}
			if got := j.DataLogLik(d); math.Abs(got-want) > 0.05*math.Abs(want) {
				t.Fatalf("jittered %d: log-likelihood %v, far from %v", S2, got, want)
			}
		}
	}
}

// TestBeats: the noise rule on hand-made block log-likelihoods. Block
// differences 1,1,1,1 have no spread: any positive total difference wins.
// Differences 3,−1,3,−1 total 4 with sample sd 2.309, so the SE of the
// total is 2.309·2 = 4.62 and 4 < 2·4.62 does not win.
func TestBeats(t *testing.T) {
	a := &rankTry{blocks: []float64{-10, -10, -10, -10}, held: -40}
	b := &rankTry{blocks: []float64{-9, -9, -9, -9}, held: -36}
	if !beats(b, a) || beats(a, b) {
		t.Fatal("uniform gain of one nat per block must win")
	}
	c := &rankTry{blocks: []float64{-7, -11, -7, -11}, held: -36}
	if beats(c, a) {
		t.Fatal("a gain of 4 with SE 4.62 must not win at 2 SE")
	}
}

// TestChooseRankMatchesFit: ChooseRank alone gives the rank and table
// that Fit's automatic search gives.
func TestChooseRankMatchesFit(t *testing.T) {
	m := RandomModel(2, 3, 2, 4, true, []float64{0, 1}, 11)
	d := SampleDataset(m, 800, 12)
	o := Options{MaxRank: 4, Restarts: 2, Seed: 3, Tol: 1e-5}
	rc, err := ChooseRank(context.Background(), d, o)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Fit(context.Background(), d, o)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Rank != res.Model.States || len(rc.Table) != len(res.RankTable) || rc.Model == nil || rc.Model.States != rc.Rank {
		t.Fatalf("ChooseRank %d (%d rows), Fit %d (%d rows)", rc.Rank, len(rc.Table), res.Model.States, len(res.RankTable))
	}
	for i := range rc.Table {
		if rc.Table[i] != res.RankTable[i] {
			t.Fatalf("row %d: %+v vs %+v", i, rc.Table[i], res.RankTable[i])
		}
	}
}
