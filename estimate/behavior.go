package estimate

import "github.com/psrlcb/psrlcb/ingest"

// EstimateBehavior estimates the behaviour policy's propensities when the
// logs carry none: π̂^b(a | o_h, h) is the frequency of action a among the
// logged steps h with observation o_h, with add-½ (Jeffreys) smoothing so
// that no logged action gets propensity 0 or 1 from few counts:
//
//	π̂^b(a | o, h) = (n_h(o, a) + ½) / (n_h(o) + ½·|A|).
//
// It conditions on the current observation and the step only (not the
// whole history τ_{h−1}), the largest context that stays estimable from
// logs of ordinary size. The result has one entry per logged step (K·H,
// like Dataset.Propensity).
func EstimateBehavior(d *ingest.Dataset) []float64 {
	H, O, A := d.Horizon, d.NumObs(), d.NumActions()
	K := d.NumEpisodes()
	n, tot := behaviorCounts(d)
	out := make([]float64, K*H)
	for k := 0; k < K; k++ {
		for i := 0; i < H; i++ {
			j := k*H + i
			row := i*O + int(d.Obs[j])
			out[j] = (n[row*A+int(d.Act[j])] + 0.5) / (tot[row] + 0.5*float64(A))
		}
	}
	return out
}

// behaviorCounts returns the counts n_h(o, a) (index (h·|O|+o)·|A|+a)
// of d and their totals n_h(o) (index h·|O|+o).
func behaviorCounts(d *ingest.Dataset) (n, tot []float64) {
	H, O, A := d.Horizon, d.NumObs(), d.NumActions()
	K := d.NumEpisodes()
	n = make([]float64, H*O*A)
	for k := 0; k < K; k++ {
		for i := 0; i < H; i++ {
			j := k*H + i
			n[(i*O+int(d.Obs[j]))*A+int(d.Act[j])]++
		}
	}
	return n, rowTotals(n, H*O, A)
}

// rowTotals is the sum of each of the rows rows of A entries of n.
func rowTotals(n []float64, rows, A int) []float64 {
	tot := make([]float64, rows)
	for i := range tot {
		for a := 0; a < A; a++ {
			tot[i] += n[i*A+a]
		}
	}
	return tot
}
