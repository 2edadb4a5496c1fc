package estimate

import (
	"math"
	"strconv"

	"github.com/psrlcb/psrlcb/arrowio"

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
func ModelTable(m *Model) arrowio.Table {
	return ModelRows{Model: m}.Table()
}

// ModelRows is model.arrow before it is written: the model and the
// observations --max-observations merged (the "other" rows). It is
// generated when written, in batches of modelBatchRows, so a model of
// millions of parameters is never held in long form.
type ModelRows struct {
	Model  *Model
	Merged []ingest.MergedSymbol
}

// modelBatchRows is the rows of one record batch of model.arrow: large
// enough that the per-batch cost vanishes, small enough (a few MiB) that
// a model's size does not move the report's memory.
const modelBatchRows = 1 << 16

// Table is the whole long-form table (for small models and tests).
func (r ModelRows) Table() arrowio.Table {
	var out arrowio.Table
	r.each(math.MaxInt, func(t arrowio.Table) error {
		out = t
		return nil
	})
	return out
}

// Write writes model.arrow to path with the extra metadata meta, batch by
// batch.
func (r ModelRows) Write(path string, meta map[string]string) error {
	return arrowio.WriteArrowBatches(path, arrowio.MergeMeta(modelMeta(r.Model), meta), func(emit func(arrowio.Table) error) error {
		return r.each(modelBatchRows, emit)
	})
}

// modelBatch accumulates rows of model.arrow.
type modelBatch struct {
	param, act, obs   []string
	step, state, next []int32
	reward, value     []float64
}

func (b *modelBatch) add(p string, h, s int, a string, s2 int, o string, r, v float64) {
	b.param = append(b.param, p)
	b.step = append(b.step, int32(h))
	b.state = append(b.state, int32(s))
	b.act = append(b.act, a)
	b.next = append(b.next, int32(s2))
	b.obs = append(b.obs, o)
	b.reward = append(b.reward, r)
	b.value = append(b.value, v)
}

func (b *modelBatch) table(meta map[string]string) arrowio.Table {
	return arrowio.Table{Meta: meta, Columns: []arrowio.Column{
		{Name: "param", String: arrowio.OrEmpty(b.param)},
		{Name: "step", Int32: arrowio.OrEmpty(b.step)},
		{Name: "state", Int32: arrowio.OrEmpty(b.state)},
		{Name: "action", String: arrowio.OrEmpty(b.act)},
		{Name: "next_state", Int32: arrowio.OrEmpty(b.next)},
		{Name: "observation", String: arrowio.OrEmpty(b.obs)},
		{Name: "reward", Float64: arrowio.OrEmpty(b.reward)},
		{Name: "value", Float64: arrowio.OrEmpty(b.value)},
	}}
}

// each emits the rows of model.arrow in tables of at most batch rows, the
// schema metadata on each.
func (r ModelRows) each(batch int, emit func(arrowio.Table) error) error {
	w := &batchWriter{meta: modelMeta(r.Model), batch: batch, emit: emit}
	modelParams(r.Model, w.add)
	for _, s := range r.Merged {
		w.add("other", -1, -1, "", -1, s.Symbol, math.NaN(), float64(s.Count))
	}
	return w.flush()
}

// batchWriter cuts model.arrow's rows into tables of at most batch rows,
// each with the schema metadata meta, and emits them; err is emit's
// first error, after which rows are dropped.
type batchWriter struct {
	meta    map[string]string
	batch   int
	emit    func(arrowio.Table) error
	b       modelBatch
	emitted bool
	err     error
}

// add adds a row, emitting the batch when it is full.
func (w *batchWriter) add(p string, h, s int, a string, s2 int, o string, rw, v float64) {
	if w.err != nil {
		return
	}
	w.b.add(p, h, s, a, s2, o, rw, v)
	if len(w.b.param) >= w.batch {
		w.err, w.emitted, w.b = w.emit(w.b.table(w.meta)), true, modelBatch{}
	}
}

// flush emits the last batch when it holds rows, or the empty table when
// none was emitted, and returns the first error.
func (w *batchWriter) flush() error {
	if w.err == nil && (len(w.b.param) > 0 || !w.emitted) {
		w.err = w.emit(w.b.table(w.meta))
	}
	return w.err
}

// modelParams calls add for every parameter of m, in the table's order.
func modelParams(m *Model, add func(p string, h, s int, a string, s2 int, o string, r, v float64)) {
	w := paramWriter{m: m, add: add}
	w.firstStep()
	for t := range m.Trans {
		h := t + 1
		if m.Stationary {
			h = 0
		}
		w.trans(t, h)
		w.emit(t, h)
		w.rewards(t, h)
	}
}

// paramWriter calls add for the parameters of m (modelParams).
type paramWriter struct {
	m   *Model
	add func(p string, h, s int, a string, s2 int, o string, r, v float64)
}

// firstStep adds the init and obs1 rows.
func (w paramWriter) firstStep() {
	m, nan := w.m, math.NaN()
	S, O := m.States, m.NumObs
	for s := 0; s < S; s++ {
		w.add("init", 1, s, "", -1, "", nan, m.Init[s])
	}
	for s := 0; s < S; s++ {
		for o := 0; o < O; o++ {
			w.add("obs1", 1, s, "", -1, m.ObsVocab[o], nan, m.Obs1[s*O+o])
		}
	}
}

// trans adds the trans rows of step table t (step h).
func (w paramWriter) trans(t, h int) {
	m, nan := w.m, math.NaN()
	S := m.States
	for a := 0; a < m.NumActions; a++ {
		for s := 0; s < S; s++ {
			for s2 := 0; s2 < S; s2++ {
				w.add("trans", h, s, m.ActVocab[a], s2, "", nan, m.Trans[t][(a*S+s)*S+s2])
			}
		}
	}
}

// symbol is vocab[i], or "" for the one row (n = 1) of the compact
// form's emission and reward, which do not depend on the action and the
// observation.
func (w paramWriter) symbol(vocab []string, i, n int) string {
	if n == 1 && w.m.Compact {
		return ""
	}
	return vocab[i]
}

// emit adds the emit rows of step table t (step h): one row set per
// action, or one with action "" in the compact form.
func (w paramWriter) emit(t, h int) {
	acts := w.m.NumActions
	if w.m.Compact {
		acts = 1
	}
	for a := 0; a < acts; a++ {
		w.emitAction(t, h, a, acts)
	}
}

// emitAction writes the emission rows of step table t for action a, of
// the acts actions that have rows of their own.
func (w paramWriter) emitAction(t, h, a, acts int) {
	m, nan := w.m, math.NaN()
	S, O := m.States, m.NumObs
	E := m.EmitOf(t, a)
	for s2 := 0; s2 < S; s2++ {
		for o := 0; o < O; o++ {
			w.add("emit", h, -1, w.symbol(m.ActVocab, a, acts), s2, m.ObsVocab[o], nan, E[s2*O+o])
		}
	}
}

// rewards adds the reward rows of step table t (step h): one set per
// observation, or one with observation "" in the compact form.
func (w paramWriter) rewards(t, h int) {
	m := w.m
	S, A, obsR := m.States, m.NumActions, m.NumObs
	if m.Compact {
		obsR = 1
	}
	for s := 0; s < S; s++ {
		for a := 0; a < A; a++ {
			w.rewardsFrom(t, h, s, a, obsR)
		}
	}
}

// rewardsFrom writes the reward rows of step table t from state s under
// action a, for every next state and each of the obsR observations the
// rewards depend on.
func (w paramWriter) rewardsFrom(t, h, s, a, obsR int) {
	for s2 := 0; s2 < w.m.States; s2++ {
		for o := 0; o < obsR; o++ {
			w.reward(t, h, s, a, s2, o, w.symbol(w.m.ObsVocab, o, obsR))
		}
	}
}

// reward adds the rows of the reward cell (s, a, s2, o) of table t,
// observation symbol os: its Gaussian mean and variance, or its
// categorical values of positive probability.
func (w paramWriter) reward(t, h, s, a, s2, o int, os string) {
	m, nan := w.m, math.NaN()
	i := m.RewardIndex(s, a, s2, o)
	if m.Reward == RewardGaussian {
		w.add("reward_mean", h, s, m.ActVocab[a], s2, os, nan, m.RewardMean[t][i])
		w.add("reward_var", h, s, m.ActVocab[a], s2, os, nan, m.RewardVar[t][i])
		return
	}
	V := len(m.RewardValues)
	for v, r := range m.RewardValues {
		if p := m.RewardProb[t][i*V+v]; p > 0 {
			w.add("reward_prob", h, s, m.ActVocab[a], s2, os, r, p)
		}
	}
}

// modelMeta is model.arrow's schema metadata: the sizes, the return range
// and the form.
func modelMeta(m *Model) map[string]string {
	return map[string]string{
		"psrlcb.states":      strconv.Itoa(m.States),
		"psrlcb.horizon":     strconv.Itoa(m.Horizon),
		"psrlcb.stationary":  strconv.FormatBool(m.Stationary),
		"psrlcb.return_min":  strconv.FormatFloat(m.ReturnMin, 'g', -1, 64),
		"psrlcb.return_max":  strconv.FormatFloat(m.ReturnMax, 'g', -1, 64),
		"psrlcb.test_length": strconv.Itoa(max(m.TestLength, 1)),
		"psrlcb.model_form":  m.Form(),
	}
}

// Form is the model's form, FormCompact or FormFull (model.arrow's
// psrlcb.model_form, the manifest's model_form).
func (m *Model) Form() string {
	if m.Compact {
		return FormCompact
	}
	return FormFull
}
