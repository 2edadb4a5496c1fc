package pipeline

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/internal/genpomdp"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pomdp"
	"github.com/psrlcb/psrlcb/report"
)

// TestFitRewardCheck: a run reports the reward part of every episode's
// log-likelihood beside the observation part (their sum is the episode's
// full log-likelihood), and the reward check in the manifest: held out
// when α is chosen among candidates, in sample with a single α.
func TestFitRewardCheck(t *testing.T) {
	g, err := genpomdp.Generate(genpomdp.Spec{Family: "aliased", States: 4, Actions: 2, Obs: 3, ObsNoise: 0.05, RewardStates: 2, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pomdp.Parse(strings.NewReader(g.Text), "aliased")
	if err != nil {
		t.Fatal(err)
	}
	beh, _ := pomdp.ParseBehavior("uniform", p)
	d, err := pomdp.SimulateDataset(context.Background(), p, 3, 600, beh, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, single := range []bool{true, false} {
		opts := Options{Estimate: estimate.Options{Rank: 4, Restarts: 1, MaxIter: 50}, Seed: 3, Workers: 1}
		if single {
			opts.Alpha = pessimism.AlphaSpec{Mode: pessimism.AlphaFixed, Values: []float64{0.1}}
		}
		out, err := Fit(context.Background(), d, nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		rc := out.Run.Manifest.RewardCheck
		if rc == nil || rc.HeldOut == single {
			t.Fatalf("single α %v: reward check %+v", single, rc)
		}
		m, H, e := out.Model, d.Horizon, out.Run.Episodes
		var obs, rew float64
		for k := range d.NumEpisodes() {
			o, a, r := d.Obs[k*H:(k+1)*H], d.Act[k*H:(k+1)*H], d.Reward[k*H:(k+1)*H]
			full := m.EpisodeLogLik(o, a, r)
			if math.Abs(e.LogLik[k]+e.RewardLogLik[k]-full) > 1e-9 || e.RewardLogLik[k] > 1e-12 {
				t.Fatalf("episode %d: observation %v + reward %v ≠ %v", k, e.LogLik[k], e.RewardLogLik[k], full)
			}
			obs += e.LogLik[k]
			rew += e.RewardLogLik[k]
		}
		if single {
			K := float64(d.NumEpisodes())
			if math.Abs(float64(rc.ObsLogLik)-obs/K) > 1e-9 || math.Abs(float64(rc.RewardLogLik)-rew/K) > 1e-9 {
				t.Fatalf("in-sample check %v / %v, episodes %v / %v", rc.ObsLogLik, rc.RewardLogLik, obs/K, rew/K)
			}
		} else if rc.Episodes != int(math.Round(DefaultSelectHeldOut*float64(d.NumEpisodes()))) {
			t.Fatalf("held-out check on %d episodes", rc.Episodes)
		}
		dir := t.TempDir()
		if err := report.WriteTables(dir, out.Run); err != nil {
			t.Fatal(err)
		}
		fit, err := arrowio.ReadArrow(filepath.Join(dir, report.FitFile))
		if err != nil {
			t.Fatal(err)
		}
		kind, _ := fit.Column("kind")
		rl, _ := fit.Column("reward_loglik")
		last := len(kind.String) - 1
		if kind.String[last] != "reward_check" || float64(rc.RewardLogLik) != rl.Float64[last] {
			t.Fatalf("fit.arrow's last row %q reward_loglik %v, want reward_check %v", kind.String[last], rl.Float64[last], rc.RewardLogLik)
		}
	}
}
