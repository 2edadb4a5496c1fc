package pipeline

import (
	"math"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/report"
)

// modelRewardCheck runs the reward check (report.RewardCheck) of model m on
// the episodes of d.
func modelRewardCheck(m *estimate.Model, d *ingest.Dataset, heldOut bool) *report.RewardCheck {
	K, H := d.NumEpisodes(), d.Horizon
	rc := &report.RewardCheck{HeldOut: heldOut, Episodes: K, Calibration: estimate.RewardCalibration(m, d, 0, heldOut)}
	if K == 0 || H != m.Horizon {
		rc.ObsLogLik, rc.RewardLogLik = report.Float(math.NaN()), report.Float(math.NaN())
		return rc
	}
	var obs, rew float64
	for k := range K {
		o, a, r := d.Obs[k*H:(k+1)*H], d.Act[k*H:(k+1)*H], d.Reward[k*H:(k+1)*H]
		lo := m.ObsLogLik(o, a)
		obs += lo
		rew += m.EpisodeLogLik(o, a, r) - lo
	}
	rc.ObsLogLik, rc.RewardLogLik = report.Float(obs/float64(K)), report.Float(rew/float64(K))
	return rc
}

// inSampleRewardCheck checks the final model's rewards on every episode
// of d when the α selection made no check on held-out episodes.
func inSampleRewardCheck(out *report.Outcome, d *ingest.Dataset) {
	if out.RewardCheck == nil {
		out.RewardCheck = modelRewardCheck(out.Model, d, false)
	}
}
