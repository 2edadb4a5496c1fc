package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/internal/genpomdp"
	"github.com/psrlcb/psrlcb/pipeline"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
)

func TestDiagMaze(t *testing.T) {
	if os.Getenv("DIAG") == "" {
		t.Skip()
	}
	ctx := context.Background()
	var K, W, L, R, S0, rank int
	var SL, ON float64
	fmt.Sscan(os.Getenv("DIAG"), &K, &W, &L, &R, &S0, &SL, &ON, &rank)
	g, _ := genpomdp.Generate(genpomdp.Spec{Family: "maze", Width: W, Length: L, RewardStates: R, StartStates: S0, Slip: SL, ObsNoise: ON, Seed: 3})
	m, err := pomdp.Parse(strings.NewReader(g.Text), "maze")
	if err != nil {
		t.Fatal(err)
	}
	H := 4
	optVal, opt, _ := pomdp.OptimalContext(ctx, m, H)
	optTab, _ := policyTable(ctx, m, H, opt)
	beh, _ := pomdp.ParseBehavior("uniform", m)
	d, _ := pomdp.SimulateDataset(ctx, m, H, K, beh, 1)
	out, err := pipeline.Fit(ctx, d, nil, pipeline.Options{Estimate: estimate.Options{Rank: rank, Restarts: 2, MaxIter: 200}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	gpol, _, _ := policy.Plan(ctx, out.Model, out.Bonus.WithAlpha(0), policy.PlanOptions{})
	vg, _ := pomdp.EvaluatePolicy(ctx, m, H, gpol)
	vp, _ := pomdp.EvaluatePolicy(ctx, m, H, out.Policy)
	mo, _, _ := policy.ModelReturn(ctx, out.Model, optTab)
	mg, _, _ := policy.ModelReturn(ctx, out.Model, gpol)
	rc := out.Run.Manifest.RewardCheck
	tm := out.Fit.ThetaMin
	t.Logf("S=%d O=%d K=%d rank %d: opt %.4f psrlcb %.4f greedy %.4f | model: opt %.4f greedy %.4f | maxr %.3f vs %.3f | obsLL %.4f rewLL %.4f cal flagged %v share %.3f rmse %.3f | θmin binding %d mix %.3g | EM iter %d conv %v",
		m.NumStates(), m.NumObs(), K, out.Model.States, optVal, vp, vg, mo, mg, modelMaxReward(out.Model), trueMaxReward(m),
		rc.ObsLogLik, rc.RewardLogLik, rc.Calibration.Flagged, rc.Calibration.MiscalibratedShare, rc.Calibration.RMSE, tm.Binding, tm.MixWeight, out.Fit.Iterations, out.Fit.Converged)
}
