package report

import "github.com/psrlcb/psrlcb/estimate"

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
