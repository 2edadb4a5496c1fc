package estimate

import (
	"math/rand/v2"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/categorical"
)

// dirichlet1 fills p with a draw from the flat Dirichlet distribution.
func dirichlet1(rng *rand.Rand, p []float64) { categorical.Dirichlet1(rng, p) }

// DataLogLik is Σ_k EpisodeLogLik over the episodes of d.
func (m *Model) DataLogLik(d *ingest.Dataset) float64 {
	H := d.Horizon
	ll := 0.0
	for k := 0; k < d.NumEpisodes(); k++ {
		ll += m.EpisodeLogLik(d.Obs[k*H:(k+1)*H], d.Act[k*H:(k+1)*H], d.Reward[k*H:(k+1)*H])
	}
	return ll
}
