package estimate

// CompactOf is the full-form model f in the Compact form, the start of
// a compact fit from a full one: the initial state, first observation
// and transitions are f's; each state's emission is its emission
// averaged over the actions, and each step's reward distribution given
// (s, a, s2) is f's averaged over the next observation o_{h+1} with f's
// emission under a. It is f itself when f's emissions ignore the action
// and its rewards the observation; otherwise it is the nearest model of
// the compact form under which every step's expected reward E[r | s, a]
// is f's. A compact f is returned as it is.
func CompactOf(f *Model) *Model {
	if f.Compact {
		return f
	}
	c := *f
	c.Compact = true
	S, A, O := f.States, f.NumActions, f.NumObs
	c.Emit = make([][]float64, len(f.Emit))
	for t := range f.Emit {
		e := make([]float64, S*O)
		for a := range A {
			for i, p := range f.EmitOf(t, a) {
				e[i] += p / float64(A)
			}
		}
		c.Emit[t] = e
	}
	switch f.Reward {
	case RewardCategorical:
		V := len(f.RewardValues)
		c.RewardProb = compactRewards(f, func(t, i int) []float64 { return f.RewardProb[t][i*V : (i+1)*V] })
	case RewardGaussian:
		// The mixture over o_{h+1} of f's Gaussians, matched in its first
		// two moments.
		mean := compactRewards(f, func(t, i int) []float64 { return f.RewardMean[t][i : i+1] })
		second := compactRewards(f, func(t, i int) []float64 {
			m := f.RewardMean[t][i]
			return []float64{f.RewardVar[t][i] + m*m}
		})
		c.RewardMean, c.RewardVar = mean, second
		for t := range mean {
			for j, m := range mean[t] {
				c.RewardVar[t][j] = max(second[t][j]-m*m, 0)
			}
		}
	}
	c.Prepare()
	return &c
}

// compactRewards averages, for every step table and (s, a, s2), the
// vectors of(t, RewardIndex(s, a, s2, o)) over o with f's emission
// E(o | s2, a); each result has the length of of's vectors and the
// tables are laid out like the Compact form's (RewardIndex (s*A+a)*S+s2,
// the vectors one after the other).
func compactRewards(f *Model, of func(t, i int) []float64) [][]float64 {
	S, A, O := f.States, f.NumActions, f.NumObs
	nt := len(f.Trans)
	out := make([][]float64, nt)
	for t := range nt {
		var tab []float64
		for s := range S {
			for a := range A {
				E := f.EmitOf(t, a)
				for s2 := range S {
					var acc []float64
					for o, p := range E[s2*O : (s2+1)*O] {
						v := of(t, f.RewardIndex(s, a, s2, o))
						if acc == nil {
							acc = make([]float64, len(v))
						}
						for j, x := range v {
							acc[j] += p * x
						}
					}
					tab = append(tab, acc...)
				}
			}
		}
		out[t] = tab
	}
	return out
}
