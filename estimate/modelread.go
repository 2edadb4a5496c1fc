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
	for _, x := range []modelCol{{"param", &c.param, nil, nil}, {"action", &c.act, nil, nil}, {"observation", &c.obs, nil, nil},
		{"step", nil, &c.step, nil}, {"state", nil, &c.state, nil}, {"next_state", nil, &c.next, nil},
		{"reward", nil, nil, &c.reward}, {"value", nil, nil, &c.value}} {
		if err := x.read(t); err != nil {
			return c, err
		}
	}
	return c, nil
}

// modelCol is a column of model.arrow: its name and where to store it,
// as strings (s), int32s (i) or float64s (f).
type modelCol struct {
	name string
	s    *[]string
	i    *[]int32
	f    *[]float64
}

// read stores t's column of x's name, which must exist and, when t has
// rows, have x's type.
func (x modelCol) read(t arrowio.Table) error {
	col, ok := t.Column(x.name)
	switch {
	case !ok:
		return fmt.Errorf("%w: model table has no column %q", ErrModel, x.name)
	case x.s != nil && col.String != nil:
		*x.s = col.String
	case x.i != nil && col.Int32 != nil:
		*x.i = col.Int32
	case x.f != nil && col.Float64 != nil:
		*x.f = col.Float64
	case t.Rows() > 0:
		return fmt.Errorf("%w: model table column %q has the wrong type", ErrModel, x.name)
	}
	return nil
}

func metaInt(meta map[string]string, key string) (int, error) {
	v, err := strconv.Atoi(meta[key])
	if err != nil {
		return 0, fmt.Errorf("%w: schema metadata %s = %q", ErrModel, key, meta[key])
	}
	return v, nil
}

// modelFromTable is the model that model.arrow's table t holds,
// validated and prepared.
func modelFromTable(t arrowio.Table) (*Model, error) {
	c, err := readModelCols(t)
	if err != nil {
		return nil, err
	}
	m, err := modelFromMeta(t.Meta)
	if err != nil {
		return nil, err
	}
	if err := m.setParams(c); err != nil {
		return nil, err
	}
	if err := m.Validate(1e-6); err != nil {
		return nil, err
	}
	m.Prepare()
	return m, nil
}

// setParams reads the vocabularies and the reward support from c's rows
// (scanVocab), allocates m's parameters and stores the rows into them.
func (m *Model) setParams(c modelCols) error {
	obsIdx, actIdx := scanVocab(m, c)
	if m.NumObs == 0 || m.NumActions == 0 {
		return fmt.Errorf("%w: no obs1 or trans rows", ErrModel)
	}
	nt := m.numTables()
	allocParams(m, nt)
	for i, p := range c.param {
		if err := setParam(m, p, c, i, obsIdx, actIdx, nt); err != nil {
			return err
		}
	}
	return nil
}

// scanVocab sets m's vocabularies from the rows of c (observations in
// the order of the obs1 rows, actions in that of the trans rows), its
// sizes, and its reward kind with the sorted categorical support; it
// returns the observations' and actions' codes.
func scanVocab(m *Model, c modelCols) (obsIdx, actIdx map[string]int) {
	v := vocabScan{obsIdx: map[string]int{}, actIdx: map[string]int{}, rewIdx: map[float64]bool{}}
	for i, p := range c.param {
		v.row(m, c, i, p)
	}
	m.NumObs, m.NumActions = len(m.ObsVocab), len(m.ActVocab)
	v.setReward(m)
	return v.obsIdx, v.actIdx
}

// vocabScan is scanVocab's state: the observation and action codes, the
// categorical reward values seen and whether a Gaussian row was seen.
type vocabScan struct {
	obsIdx, actIdx map[string]int
	rewIdx         map[float64]bool
	gauss          bool
}

// row reads the vocabulary word or reward value of row i, of param p.
func (v *vocabScan) row(m *Model, c modelCols, i int, p string) {
	switch p {
	case "obs1":
		m.ObsVocab = addWord(v.obsIdx, m.ObsVocab, c.obs[i])
	case "trans":
		m.ActVocab = addWord(v.actIdx, m.ActVocab, c.act[i])
	case "reward_prob":
		v.rewIdx[c.reward[i]] = true
	case "reward_mean", "reward_var":
		v.gauss = true
	}
}

// setReward sets m's reward kind and, when categorical, its sorted
// reward values.
func (v *vocabScan) setReward(m *Model) {
	if v.gauss {
		m.Reward = RewardGaussian
		return
	}
	m.Reward = RewardCategorical
	for r := range v.rewIdx {
		m.RewardValues = append(m.RewardValues, r)
	}
	sort.Float64s(m.RewardValues)
}

// addWord appends w to vocab, and gives it the next code in idx, when it
// is new.
func addWord(idx map[string]int, vocab []string, w string) []string {
	if _, ok := idx[w]; !ok {
		idx[w] = len(vocab)
		vocab = append(vocab, w)
	}
	return vocab
}

// allocParams allocates m's zero parameters for nt step tables.
func allocParams(m *Model, nt int) {
	S, O, A := m.States, m.NumObs, m.NumActions
	V, n := len(m.RewardValues), m.RewardCells()
	eA := A // the Compact form's emission has one row set for every action
	if m.Compact {
		eA = 1
	}
	m.Init, m.Obs1 = make([]float64, S), make([]float64, S*O)
	for range nt {
		m.Trans = append(m.Trans, make([]float64, A*S*S))
		m.Emit = append(m.Emit, make([]float64, eA*S*O))
		if m.Reward == RewardGaussian {
			m.RewardMean, m.RewardVar = append(m.RewardMean, make([]float64, n)), append(m.RewardVar, make([]float64, n))
		} else {
			m.RewardProb = append(m.RewardProb, make([]float64, n*V))
		}
	}
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
	r := newParamRow(m, c, i, obsIdx, actIdx)
	fits, known := r.set(m, p, c, i, nt)
	if !known {
		return fmt.Errorf("%w: row %d has unknown param %q", ErrModel, i, p)
	}
	if !fits {
		return fmt.Errorf("%w: row %d (%s) does not fit %d states, %d observations, %d actions, %d tables", ErrModel, i, p, m.States, m.NumObs, m.NumActions, nt)
	}
	return nil
}

// newParamRow decodes row i of c against m's vocabularies (obsIdx,
// actIdx) and dynamics.
func newParamRow(m *Model, c modelCols, i int, obsIdx, actIdx map[string]int) paramRow {
	r := paramRow{S: m.States, s: int(c.state[i]), s2: int(c.next[i]), v: c.value[i]}
	r.o, r.okO = obsIdx[c.obs[i]]
	r.a, r.okA = actIdx[c.act[i]]
	if !m.Stationary {
		r.t = int(c.step[i]) - 1
	}
	return r
}

// set stores row i, of param p, into m (of nt step tables): known is
// false for an unknown param, fits false when the row does not fit m.
func (r *paramRow) set(m *Model, p string, c modelCols, i, nt int) (fits, known bool) {
	needT := p == "trans" || p == "emit" || p == "reward_prob" || p == "reward_mean" || p == "reward_var"
	switch {
	case needT && (r.t < 0 || r.t >= nt): // no such step table
		return false, true
	case p == "init":
		return r.setInit(m), true
	case p == "obs1":
		return r.setObs1(m), true
	case p == "trans":
		return r.setTrans(m), true
	case p == "emit":
		return r.setEmit(m, c.act[i]), true
	case p == "reward_prob" || p == "reward_mean" || p == "reward_var":
		return r.setReward(m, p, c.obs[i], c.reward[i]), true
	}
	return false, false
}

// paramRow is a row of model.arrow decoded against the model: states s
// and s2, observation o and action a (okO, okA: in the vocabularies),
// step table t and value v. Its set methods store v into the model and
// report whether the row fits it.
type paramRow struct {
	S, s, s2, o, a, t int
	okO, okA          bool
	v                 float64
}

// inS says whether x is a state.
func (r *paramRow) inS(x int) bool { return x >= 0 && x < r.S }

// setInit stores an init row.
func (r *paramRow) setInit(m *Model) bool {
	if !r.inS(r.s) {
		return false
	}
	m.Init[r.s] = r.v
	return true
}

// setObs1 stores an obs1 row.
func (r *paramRow) setObs1(m *Model) bool {
	if !r.inS(r.s) || !r.okO {
		return false
	}
	m.Obs1[r.s*m.NumObs+r.o] = r.v
	return true
}

// setTrans stores a trans row.
func (r *paramRow) setTrans(m *Model) bool {
	if !r.inS(r.s) || !r.inS(r.s2) || !r.okA {
		return false
	}
	m.Trans[r.t][(r.a*r.S+r.s)*r.S+r.s2] = r.v
	return true
}

// setEmit stores an emit row of action act.
func (r *paramRow) setEmit(m *Model, act string) bool {
	if m.Compact { // one row set for every action, action ""
		r.a, r.okA = 0, act == ""
	}
	if !r.inS(r.s2) || !r.okA || !r.okO {
		return false
	}
	m.Emit[r.t][(r.a*r.S+r.s2)*m.NumObs+r.o] = r.v
	return true
}

// setReward stores a reward_prob (of reward value rew), reward_mean or
// reward_var row p of observation obs.
func (r *paramRow) setReward(m *Model, p, obs string, rew float64) bool {
	if m.Compact { // the reward does not depend on the observation ""
		r.o, r.okO = 0, obs == ""
	}
	if !r.inS(r.s) || !r.inS(r.s2) || !r.okA || !r.okO {
		return false
	}
	r.storeReward(m, p, rew)
	return true
}

// storeReward stores v into the reward table of param p at r's cell:
// reward_prob (of reward value rew), reward_mean or reward_var.
func (r *paramRow) storeReward(m *Model, p string, rew float64) {
	ri := m.RewardIndex(r.s, r.a, r.s2, r.o)
	switch p {
	case "reward_prob":
		V := len(m.RewardValues)
		m.RewardProb[r.t][ri*V+sort.SearchFloat64s(m.RewardValues, rew)] = r.v
	case "reward_mean":
		m.RewardMean[r.t][ri] = r.v
	default:
		m.RewardVar[r.t][ri] = r.v
	}
}
