package estimate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pomdp"
)

// standTiger is the standing tiger problem, written from its definition:
// the tiger is behind the left or the right door; the agent sits or
// stands. Listening while sitting costs 1 and hears the tiger's side
// right 80% of the time; standing up is free and tells nothing; a door
// opened while standing pays −100 on the tiger's side and 30 on the
// other and seats the agent before a new tiger; a door opened while
// sitting does nothing. Which door pays is a memory of the listening
// observations that only the rewards of opening reveal.
const standTiger = `discount: 1.0
values: reward
states: left-sit right-sit left-stand right-stand
actions: listen open-left open-right stand
observations: hear-left hear-right up-a up-b
T: listen
identity
T: open-left
1 0 0 0
0 1 0 0
0.5 0.5 0 0
0.5 0.5 0 0
T: open-right
1 0 0 0
0 1 0 0
0.5 0.5 0 0
0.5 0.5 0 0
T: stand
0 0 1 0
0 0 0 1
0 0 1 0
0 0 0 1
O: listen
0.8 0.2 0 0
0.2 0.8 0 0
0 0 0.5 0.5
0 0 0.5 0.5
O: open-left
0.5 0.5 0 0
0.5 0.5 0 0
0.5 0.5 0 0
0.5 0.5 0 0
O: open-right
0.5 0.5 0 0
0.5 0.5 0 0
0.5 0.5 0 0
0.5 0.5 0 0
O: stand
0 0 0.5 0.5
0 0 0.5 0.5
0 0 0.5 0.5
0 0 0.5 0.5
R: listen : left-sit : * : * -1
R: listen : right-sit : * : * -1
R: open-left : left-stand : * : * -100
R: open-left : right-stand : * : * 30
R: open-right : left-stand : * : * 30
R: open-right : right-stand : * : * -100
`

// standTigerLogs simulates 10⁴ episodes of four steps of standTiger under
// the uniform behaviour, with the given seed.
func standTigerLogs(t *testing.T, seed uint64) *ingest.Dataset {
	t.Helper()
	p, err := pomdp.Parse(strings.NewReader(standTiger), "stand-tiger")
	if err != nil {
		t.Fatal(err)
	}
	beh, err := pomdp.ParseBehavior("uniform", p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := pomdp.SimulateDataset(context.Background(), p, 4, 10000, beh, seed)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRankSearchLeavesSaddle: on 10⁴ uniform episodes of four steps of
// the standing tiger, the rank search's split of its rank-2 model
// ("sitting", "standing") into four copies is a saddle point of EM, and
// the memory of the tiger's side appears only after about a hundred EM
// steps. At a tolerance of 1e-8 asked for (--tol), which the search keeps
// (rankTol), it finds the memory and chooses rank 4; at its own 1e-5 it
// stopped first, saw no gain in rank 4 and chose rank 2 before the
// search probed its split starts for the saddle (docs/validation.md,
// "Second diagnosis" and "Third attempt").
func TestRankSearchLeavesSaddle(t *testing.T) {
	if testing.Short() {
		t.Skip("fits ranks up to 4 on 10⁴ episodes at a tolerance of 1e-8")
	}
	d := standTigerLogs(t, 2)
	rc, err := estimate.ChooseRank(context.Background(), d, estimate.Options{Seed: 1, Tol: 1e-8, MaxRank: 4})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Rank < 4 {
		for _, r := range rc.Table {
			t.Logf("rank %d: training %.1f, held out %.1f", r.Rank, r.TrainLogLik, r.HeldOutLogLik)
		}
		t.Errorf("chose rank %d, want at least the problem's 4 states", rc.Rank)
	}
}

// TestRankSearchProbesSaddle: the same problem at the search's own
// tolerance. Its split start stops in the lull after four EM steps; the
// probe of the EM map there finds a direction that grows by about 1.3%
// per step (saddle.go), so the run goes on at saddleTol, finds the
// memory (training log-likelihood about 130 nats above rank 2's on 8000
// episodes) and the search chooses rank 4. Without the probe the search
// chose rank 2 on these logs.
func TestRankSearchProbesSaddle(t *testing.T) {
	if testing.Short() {
		t.Skip("fits ranks up to 4 on 10⁴ episodes")
	}
	d := standTigerLogs(t, 3)
	rc, err := estimate.ChooseRank(context.Background(), d, estimate.Options{Seed: 1, MaxRank: 4})
	if err != nil {
		t.Fatal(err)
	}
	train := map[int]float64{}
	for _, r := range rc.Table {
		train[r.Rank] = r.TrainLogLik
		t.Logf("rank %d: training %.1f, held out %.1f", r.Rank, r.TrainLogLik, r.HeldOutLogLik)
	}
	if rc.Rank != 4 {
		t.Errorf("chose rank %d, want the problem's 4 states", rc.Rank)
	}
	if g := train[4] - train[2]; g < 100 {
		t.Errorf("rank 4 gains %.1f nats of training log-likelihood over rank 2, want the memory's 100 or more", g)
	}
}

// TestSplitStartProbesSaddle: SplitStart is the rank search's warm start
// for callers of Fit. Its four states split from a rank-2 fit of the
// standing tiger begin at the copies' saddle point; at the search's
// tolerance, with the probe, EM leaves it for the memory of the tiger's
// side (over 100 nats above rank 2 on 10⁴ episodes), while the same
// start without the split's pairs stops in the saddle's lull.
func TestSplitStartProbesSaddle(t *testing.T) {
	if testing.Short() {
		t.Skip("fits ranks 2 and 4 on 10⁴ episodes")
	}
	ctx := context.Background()
	d := standTigerLogs(t, 2)
	small, err := estimate.Fit(ctx, d, estimate.Options{Rank: 2, Seed: 1, SkipThetaMin: true})
	if err != nil {
		t.Fatal(err)
	}
	o := estimate.SplitStart(estimate.Options{Seed: 1, Restarts: 1, Tol: 1e-5, SkipThetaMin: true}, small.Model, 4, 5)
	if o.Start == nil || o.Start.States != 4 {
		t.Fatalf("SplitStart's start: %v, want a 4-state model", o.Start)
	}
	probed, err := estimate.Fit(ctx, d, o)
	if err != nil {
		t.Fatal(err)
	}
	// The same start (drawn again: Fit may change its start), no pairs.
	again := estimate.SplitStart(estimate.Options{}, small.Model, 4, 5).Start
	plainRes, err := estimate.Fit(ctx, d, estimate.Options{Start: again, Seed: 1, Restarts: 1, Tol: 1e-5, SkipThetaMin: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rank 2 %.1f, split start probed %.1f, unprobed %.1f", small.LogLik, probed.LogLik, plainRes.LogLik)
	if probed.Model.States != 4 {
		t.Errorf("probed fit has %d states, want 4", probed.Model.States)
	}
	if g := probed.LogLik - small.LogLik; g < 100 {
		t.Errorf("split start gains %.1f nats over rank 2, want the memory's 100 or more", g)
	}
	if g := plainRes.LogLik - small.LogLik; g >= 100 {
		t.Errorf("the unprobed split start gains %.1f nats: the test no longer shows the probe's part", g)
	}
}
