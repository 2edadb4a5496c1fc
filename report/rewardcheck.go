package report

import (
	"math"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
)

// RewardCheck is the model check on rewards (manifest.json "reward_check"):
// the log-likelihood split into its observation part ln P(o|a) and its
// reward part ln P(r|o,a), per episode, and the reward-calibration check of
// estimate.RewardCalibration. A model can match the observations and miss
// the rewards that decide the policy; this is where that shows.
//
// When α is chosen among candidates the check runs on the held-out
// episodes of that choice with the model fitted on the rest (HeldOut);
// otherwise on every episode with the final model (in sample).
type RewardCheck struct {
	HeldOut bool `json:"held_out"`
	// Episodes checked; ObsLogLik and RewardLogLik are their means per
	// episode.
	Episodes     int                  `json:"episodes"`
	ObsLogLik    Float                `json:"obs_loglik"`
	RewardLogLik Float                `json:"reward_loglik"`
	Calibration  estimate.Calibration `json:"calibration"`
}

// CheckRewards runs the reward check of model m on the episodes of d.
func CheckRewards(m *estimate.Model, d *ingest.Dataset, heldOut bool) *RewardCheck {
	K, H := d.NumEpisodes(), d.Horizon
	rc := &RewardCheck{HeldOut: heldOut, Episodes: K, Calibration: estimate.RewardCalibration(m, d, 0, heldOut)}
	if K == 0 || H != m.Horizon {
		rc.ObsLogLik, rc.RewardLogLik = Float(math.NaN()), Float(math.NaN())
		return rc
	}
	var obs, rew float64
	for k := range K {
		o, a, r := d.Obs[k*H:(k+1)*H], d.Act[k*H:(k+1)*H], d.Reward[k*H:(k+1)*H]
		lo := m.ObsLogLik(o, a)
		obs += lo
		rew += m.EpisodeLogLik(o, a, r) - lo
	}
	rc.ObsLogLik, rc.RewardLogLik = Float(obs/float64(K)), Float(rew/float64(K))
	return rc
}
