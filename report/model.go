package report

import (
	"math"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
)

// ModelTable is the fitted model θ̂ in long form (model.arrow): one row
// per parameter. Columns not used by a parameter are −1 (integers), ""
// (symbols) or NaN (reward). param is one of
//
//	init         P(s_1 = state)
//	obs1         P(o_1 = observation | s_1 = state)
//	trans        P(s_{h+1} = next_state | s_h = state, a_h = action)
//	emit         P(o_{h+1} = observation | s_{h+1} = next_state, a_h = action)
//	reward_prob  P(r_h = reward | state, action, next_state, observation)
//	reward_mean, reward_var   Gaussian reward emission
//	other        an observation --max-observations mapped to <other>
//	             (observation: the logged symbol, value: its count)
//
// In the compact model form (schema metadata psrlcb.model_form =
// "compact") the emission does not depend on the action and the reward
// not on the observation: those rows have action "" and observation ""
// respectively.
//
// step is h (1-based), or 0 for tables shared by every step (stationary
// dynamics). Schema metadata carries the sizes and the return range.
func ModelTable(m *estimate.Model) Table {
	var param, act, obs []string
	var step, state, next []int32
	var reward, value []float64
	add := func(p string, h, s int, a string, s2 int, o string, r, v float64) {
		param = append(param, p)
		step = append(step, int32(h))
		state = append(state, int32(s))
		act = append(act, a)
		next = append(next, int32(s2))
		obs = append(obs, o)
		reward = append(reward, r)
		value = append(value, v)
	}
	S, O, A := m.States, m.NumObs, m.NumActions
	nan := math.NaN()
	for s := 0; s < S; s++ {
		add("init", 1, s, "", -1, "", nan, m.Init[s])
	}
	for s := 0; s < S; s++ {
		for o := 0; o < O; o++ {
			add("obs1", 1, s, "", -1, m.ObsVocab[o], nan, m.Obs1[s*O+o])
		}
	}
	stepOf := func(t int) int {
		if m.Stationary {
			return 0
		}
		return t + 1
	}
	for t := range m.Trans {
		h := stepOf(t)
		for a := 0; a < A; a++ {
			for s := 0; s < S; s++ {
				for s2 := 0; s2 < S; s2++ {
					add("trans", h, s, m.ActVocab[a], s2, "", nan, m.Trans[t][(a*S+s)*S+s2])
				}
			}
		}
		// The compact form's emission and reward do not depend on the
		// action and the observation: one row each, with "" there.
		acts, obsR := A, O
		if m.Compact {
			acts, obsR = 1, 1
		}
		symbol := func(vocab []string, i, n int) string {
			if n == 1 && m.Compact {
				return ""
			}
			return vocab[i]
		}
		for a := 0; a < acts; a++ {
			E := m.EmitOf(t, a)
			for s2 := 0; s2 < S; s2++ {
				for o := 0; o < O; o++ {
					add("emit", h, -1, symbol(m.ActVocab, a, acts), s2, m.ObsVocab[o], nan, E[s2*O+o])
				}
			}
		}
		for s := 0; s < S; s++ {
			for a := 0; a < A; a++ {
				for s2 := 0; s2 < S; s2++ {
					for o := 0; o < obsR; o++ {
						i := m.RewardIndex(s, a, s2, o)
						os := symbol(m.ObsVocab, o, obsR)
						if m.Reward == estimate.RewardGaussian {
							add("reward_mean", h, s, m.ActVocab[a], s2, os, nan, m.RewardMean[t][i])
							add("reward_var", h, s, m.ActVocab[a], s2, os, nan, m.RewardVar[t][i])
							continue
						}
						V := len(m.RewardValues)
						for v, r := range m.RewardValues {
							if p := m.RewardProb[t][i*V+v]; p > 0 {
								add("reward_prob", h, s, m.ActVocab[a], s2, os, r, p)
							}
						}
					}
				}
			}
		}
	}
	meta := map[string]string{
		"psrlcb.states":      itoa(S),
		"psrlcb.horizon":     itoa(m.Horizon),
		"psrlcb.stationary":  boolStr(m.Stationary),
		"psrlcb.return_min":  ftoa(m.ReturnMin),
		"psrlcb.return_max":  ftoa(m.ReturnMax),
		"psrlcb.test_length": itoa(max(m.TestLength, 1)),
		"psrlcb.model_form":  modelForm(m),
	}
	return Table{Meta: meta, Columns: []Column{
		{Name: "param", String: param},
		{Name: "step", Int32: step},
		{Name: "state", Int32: state},
		{Name: "action", String: act},
		{Name: "next_state", Int32: next},
		{Name: "observation", String: obs},
		{Name: "reward", Float64: reward},
		{Name: "value", Float64: value},
	}}
}

// withMerged appends to the model table one row per observation that
// --max-observations mapped to ingest.OtherSymbol: param "other", the
// original symbol in observation and its logged count in value.
func withMerged(t Table, merged []ingest.MergedSymbol) Table {
	for _, s := range merged {
		for i := range t.Columns {
			c := &t.Columns[i]
			switch c.Name {
			case "param":
				c.String = append(c.String, "other")
			case "observation":
				c.String = append(c.String, s.Symbol)
			case "action":
				c.String = append(c.String, "")
			case "step", "state", "next_state":
				c.Int32 = append(c.Int32, -1)
			case "reward":
				c.Float64 = append(c.Float64, math.NaN())
			case "value":
				c.Float64 = append(c.Float64, float64(s.Count))
			}
		}
	}
	return t
}

func modelForm(m *estimate.Model) string {
	if m.Compact {
		return estimate.FormCompact
	}
	return estimate.FormFull
}
