package estimate

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/psrlcb/psrlcb/arrowio"
)

// ReadModel reads the fitted model θ̂ back from model.arrow (the path of
// the file or of the run directory holding it), the inverse of ModelTable (modelwrite.go):
// the observation vocabulary is the order of the obs1 rows, the action
// vocabulary the order of the trans rows, the categorical reward support
// the distinct rewards of the reward_prob rows; the Compact form
// (psrlcb.model_form = "compact") has emission rows of action "" and
// reward rows of observation "". The model is validated and prepared.
func ReadModel(path string) (*Model, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "model.arrow")
	}
	t, err := arrowio.ReadArrow(path)
	if err != nil {
		return nil, err
	}
	m, err := modelFromTable(t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// modelCols are model.arrow's columns.
type modelCols struct {
	param, act, obs   []string
	step, state, next []int32
	reward, value     []float64
}

func readModelCols(t arrowio.Table) (modelCols, error) {
	var c modelCols
	for _, x := range []struct {
		name string
		s    *[]string
		i    *[]int32
		f    *[]float64
	}{{"param", &c.param, nil, nil}, {"action", &c.act, nil, nil}, {"observation", &c.obs, nil, nil},
		{"step", nil, &c.step, nil}, {"state", nil, &c.state, nil}, {"next_state", nil, &c.next, nil},
		{"reward", nil, nil, &c.reward}, {"value", nil, nil, &c.value}} {
		col, ok := t.Column(x.name)
		switch {
		case !ok:
			return c, fmt.Errorf("%w: model table has no column %q", ErrModel, x.name)
		case x.s != nil && col.String != nil:
			*x.s = col.String
		case x.i != nil && col.Int32 != nil:
			*x.i = col.Int32
		case x.f != nil && col.Float64 != nil:
			*x.f = col.Float64
		case t.Rows() > 0:
			return c, fmt.Errorf("%w: model table column %q has the wrong type", ErrModel, x.name)
		}
	}
	return c, nil
}

func metaInt(meta map[string]string, key string) (int, error) {
	v, err := strconv.Atoi(meta[key])
	if err != nil {
		return 0, fmt.Errorf("%w: schema metadata %s = %q", ErrModel, key, meta[key])
	}
	return v, nil
}

func modelFromTable(t arrowio.Table) (*Model, error) {
	c, err := readModelCols(t)
	if err != nil {
		return nil, err
	}
	m, err := modelFromMeta(t.Meta)
	if err != nil {
		return nil, err
	}
	S, H := m.States, m.Horizon
	obsIdx, actIdx, rewIdx := map[string]int{}, map[string]int{}, map[float64]bool{}
	gauss := false
	for i, p := range c.param {
		switch p {
		case "obs1":
			if _, ok := obsIdx[c.obs[i]]; !ok {
				obsIdx[c.obs[i]] = len(m.ObsVocab)
				m.ObsVocab = append(m.ObsVocab, c.obs[i])
			}
		case "trans":
			if _, ok := actIdx[c.act[i]]; !ok {
				actIdx[c.act[i]] = len(m.ActVocab)
				m.ActVocab = append(m.ActVocab, c.act[i])
			}
		case "reward_prob":
			rewIdx[c.reward[i]] = true
		case "reward_mean", "reward_var":
			gauss = true
		}
	}
	m.NumObs, m.NumActions = len(m.ObsVocab), len(m.ActVocab)
	O, A := m.NumObs, m.NumActions
	if O == 0 || A == 0 {
		return nil, fmt.Errorf("%w: no obs1 or trans rows", ErrModel)
	}
	nt := H
	if m.Stationary {
		nt = 1
	}
	if gauss {
		m.Reward = RewardGaussian
	} else {
		m.Reward = RewardCategorical
		for r := range rewIdx {
			m.RewardValues = append(m.RewardValues, r)
		}
		sort.Float64s(m.RewardValues)
	}
	V, n := len(m.RewardValues), m.RewardCells()
	eA := A // the Compact form's emission has one row set for every action
	if m.Compact {
		eA = 1
	}
	m.Init, m.Obs1 = make([]float64, S), make([]float64, S*O)
	for range nt {
		m.Trans = append(m.Trans, make([]float64, A*S*S))
		m.Emit = append(m.Emit, make([]float64, eA*S*O))
		if gauss {
			m.RewardMean, m.RewardVar = append(m.RewardMean, make([]float64, n)), append(m.RewardVar, make([]float64, n))
		} else {
			m.RewardProb = append(m.RewardProb, make([]float64, n*V))
		}
	}
	for i, p := range c.param {
		if err := setParam(m, p, c, i, obsIdx, actIdx, nt); err != nil {
			return nil, err
		}
	}
	if err := m.Validate(1e-6); err != nil {
		return nil, err
	}
	m.Prepare()
	return m, nil
}

// modelFromMeta is the model that model.arrow's schema metadata
// describes: its sizes, dynamics, form, test length and return range.
func modelFromMeta(meta map[string]string) (*Model, error) {
	m := &Model{Stationary: meta["psrlcb.stationary"] == "true", Compact: meta["psrlcb.model_form"] == "compact"}
	var err error
	if m.States, err = metaInt(meta, "psrlcb.states"); err != nil {
		return nil, err
	}
	if m.Horizon, err = metaInt(meta, "psrlcb.horizon"); err != nil {
		return nil, err
	}
	if m.TestLength, err = metaInt(meta, "psrlcb.test_length"); err != nil {
		return nil, err
	}
	if m.ReturnMin, err = strconv.ParseFloat(meta["psrlcb.return_min"], 64); err != nil {
		return nil, fmt.Errorf("%w: schema metadata psrlcb.return_min", ErrModel)
	}
	if m.ReturnMax, err = strconv.ParseFloat(meta["psrlcb.return_max"], 64); err != nil {
		return nil, fmt.Errorf("%w: schema metadata psrlcb.return_max", ErrModel)
	}
	if m.States <= 0 || m.Horizon <= 0 {
		return nil, fmt.Errorf("%w: %d states, horizon %d", ErrModel, m.States, m.Horizon)
	}
	return m, nil
}

// setParam stores row i of model.arrow into m.
func setParam(m *Model, p string, c modelCols, i int, obsIdx, actIdx map[string]int, nt int) error {
	S, O := m.States, m.NumObs
	s, s2, v := int(c.state[i]), int(c.next[i]), c.value[i]
	o, okO := obsIdx[c.obs[i]]
	a, okA := actIdx[c.act[i]]
	t := 0
	if !m.Stationary {
		t = int(c.step[i]) - 1
	}
	bad := func() error {
		return fmt.Errorf("%w: row %d (%s) does not fit %d states, %d observations, %d actions, %d tables", ErrModel, i, p, S, O, m.NumActions, nt)
	}
	inS := func(x int) bool { return x >= 0 && x < S }
	needT := p == "trans" || p == "emit" || p == "reward_prob" || p == "reward_mean" || p == "reward_var"
	if needT && (t < 0 || t >= nt) {
		return bad()
	}
	switch p {
	case "init":
		if !inS(s) {
			return bad()
		}
		m.Init[s] = v
	case "obs1":
		if !inS(s) || !okO {
			return bad()
		}
		m.Obs1[s*O+o] = v
	case "trans":
		if !inS(s) || !inS(s2) || !okA {
			return bad()
		}
		m.Trans[t][(a*S+s)*S+s2] = v
	case "emit":
		if m.Compact { // one row set for every action, action ""
			a, okA = 0, c.act[i] == ""
		}
		if !inS(s2) || !okA || !okO {
			return bad()
		}
		m.Emit[t][(a*S+s2)*O+o] = v
	case "reward_prob", "reward_mean", "reward_var":
		if m.Compact { // the reward does not depend on the observation ""
			o, okO = 0, c.obs[i] == ""
		}
		if !inS(s) || !inS(s2) || !okA || !okO {
			return bad()
		}
		ri := m.RewardIndex(s, a, s2, o)
		switch p {
		case "reward_prob":
			V := len(m.RewardValues)
			m.RewardProb[t][ri*V+sort.SearchFloat64s(m.RewardValues, c.reward[i])] = v
		case "reward_mean":
			m.RewardMean[t][ri] = v
		default:
			m.RewardVar[t][ri] = v
		}
	default:
		return fmt.Errorf("%w: row %d has unknown param %q", ErrModel, i, p)
	}
	return nil
}
