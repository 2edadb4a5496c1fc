package estimate

import (
	"context"
	"math"
	"testing"
)

// TestRankAuto: with Rank 0 the rank table lists every tried rank (1, 2
// by doubling, then 3 = MaxRank), no tried rank beats the chosen one by
// more than the noise, and on data from a 2-state model with strong
// memory the chosen rank is 2 (3 adds a fraction of a nat).
func TestRankAuto(t *testing.T) {
	m := randomModel(2, 3, 2, 5, true, []float64{0, 1}, 71)
	// Make the state persistent so that one state cannot explain the data.
	for a := 0; a < 2; a++ {
		copy(m.Trans[0][a*4:(a+1)*4], []float64{0.95, 0.05, 0.05, 0.95})
		copy(m.Emit[0][a*6:(a+1)*6], []float64{0.8, 0.1, 0.1, 0.1, 0.1, 0.8})
	}
	m.Prepare()
	d := sampleDataset(m, 3000, 72)
	res, err := Fit(context.Background(), d, Options{MaxRank: 3, Restarts: 2, Seed: 9, Tol: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RankTable) != 3 {
		t.Fatalf("rank table has %d rows: %+v", len(res.RankTable), res.RankTable)
	}
	chosen := 0
	for _, r := range res.RankTable {
		t.Logf("%+v", r)
		if r.Chosen {
			if chosen != 0 {
				t.Fatal("two ranks chosen")
			}
			chosen = r.Rank
		}
	}
	for _, r := range res.RankTable {
		if r.HeldOutLogLik > res.RankTable[chosen-1].HeldOutLogLik+5 {
			t.Fatalf("rank %d has a much larger held-out log-likelihood than the chosen %d", r.Rank, chosen)
		}
	}
	if chosen != 2 || res.Model.States != chosen || res.HeldOutLogLik != res.RankTable[chosen-1].HeldOutLogLik {
		t.Fatalf("chosen %d, model states %d, held-out %v", chosen, res.Model.States, res.HeldOutLogLik)
	}
}

// tvBehaviour is the total variation distance between P_a^{π^b} and
// P_b^{π^b} over τ_H = (o_1, a_1, …, o_H, a_H) under the uniform
// behaviour, by enumeration.
func tvBehaviour(a, b *Model) float64 {
	H, O, A := a.Horizon, a.NumObs, a.NumActions
	obs, act := make([]int, H), make([]int, H)
	pb := math.Pow(1/float64(A), float64(H))
	tv := 0.0
	var rec func(i int)
	rec = func(i int) {
		if i == H {
			_, pa := a.PredictHistory(obs, act)
			_, pbb := b.PredictHistory(obs, act)
			tv += math.Abs(pa-pbb) * pb
			return
		}
		for o := 0; o < O; o++ {
			for x := 0; x < A; x++ {
				obs[i], act[i] = o, x
				rec(i + 1)
			}
		}
	}
	rec(0)
	return tv / 2
}

// TestConsistencyTV: the TV distance between P_θ̂^{π^b} and P_θ*^{π^b}
// over τ_H falls as K grows, at a log-log slope near −1/2 (the checked
// bound, slope < −0.2 and a 4× smaller distance over a 64× larger K, is
// loose on purpose: the figures vary with the seeds).
func TestConsistencyTV(t *testing.T) {
	truth := randomModel(2, 2, 2, 3, true, []float64{0, 1}, 81)
	Ks := []int{250, 1000, 4000, 16000}
	var xs, ys []float64
	for i, K := range Ks {
		d := sampleDataset(truth, K, uint64(82+i))
		res, err := Fit(context.Background(), d, Options{Rank: 2, Seed: 1, Restarts: 2, SkipThetaMin: true})
		if err != nil {
			t.Fatal(err)
		}
		tv := tvBehaviour(res.Model, truth)
		t.Logf("K=%d TV=%.5f", K, tv)
		xs = append(xs, math.Log(float64(K)))
		ys = append(ys, math.Log(tv))
	}
	mx, my := 0.0, 0.0
	for i := range xs {
		mx += xs[i] / float64(len(xs))
		my += ys[i] / float64(len(xs))
	}
	num, den := 0.0, 0.0
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	slope := num / den
	t.Logf("log-log slope of TV against K: %.3f", slope)
	if !(slope < -0.2) || !(ys[len(ys)-1] < ys[0]-math.Log(4)) {
		t.Fatalf("TV does not fall with K: slope %.3f, TV %v → %v", slope, math.Exp(ys[0]), math.Exp(ys[len(ys)-1]))
	}
}
