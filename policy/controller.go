package policy

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/estimate"
)

// ControllerFileName is the controller's file name inside a run's output
// directory, beside policy.arrow and model.arrow.
const ControllerFileName = "controller.arrow"

// Schema metadata of controller.arrow.
const (
	// MetaKappa is the slope κ of the surrogate bonus the lookahead
	// charges per unit of the bonus term (see beliefPlan).
	MetaKappa = "psrlcb.kappa"
	// MetaLookahead lists, for steps 1..H, whether the controller acts by
	// the one-step lookahead ("1") or by the best α-vector ("0").
	MetaLookahead = "psrlcb.lookahead"
	// MetaStates is the number of latent states of the model.
	MetaStates = "psrlcb.states"
)

// Row kinds of controller.arrow.
const (
	kindAlpha  = "alpha"  // α-vector coordinate: step, class, index, action, state
	kindReward = "reward" // rescaled expected reward: step, action, state
	kindBonus  = "bonus"  // bonus quadratic form entry: step, action, state, next_state
)

// Controller is the belief planner's policy in controller form, defined
// for every history: the model's filter carries the belief b over s_h
// from the history (o_1, a_1, …, o_h), and the action at b is the one-step
// lookahead of the planned surrogate objective against the α-vectors of
// step h+1 (or, on steps where the lookahead is too costly, the action of
// the best α-vector of step h) — the rule by which the decision tree of
// policy.arrow was written, so the tree and the controller agree on every
// history the tree holds. With a controller there is no fallback mass:
// the fallback_action of the tree is used only for a history the model
// gives probability 0 (or a symbol it does not know).
//
// The α-vectors are those of the point-based backups (Huang, Liang, Yang
// (ICLR 2024, arXiv:2307.00405), Algorithm 2's planning step, here over
// the fitted model's beliefs; docs/planning.md).
type Controller struct {
	bp   *beliefPlanner
	look []bool // [h]: act by the lookahead
	memo *actionMemo
	obs  map[string]int
	act  map[string]int
}

// newController is the controller of the planner's current α-sets and
// surrogate slope, acting by the lookahead on the steps look marks.
func newController(bp *beliefPlanner, look []bool) *Controller {
	snap := *bp // the α-sets and κ of this moment (later rounds replace them)
	return &Controller{bp: &snap, look: look, memo: newActionMemo(), obs: vocabIndex(bp.m.ObsVocab), act: vocabIndex(bp.m.ActVocab)}
}

// vocabIndex maps each symbol of vocab to its index (the last one of a
// repeated symbol).
func vocabIndex(vocab []string) map[string]int {
	idx := map[string]int{}
	for i, s := range vocab {
		idx[s] = i
	}
	return idx
}

// Model is the fitted model whose filter the controller runs.
func (c *Controller) Model() *estimate.Model { return c.bp.m }

// Horizon is H.
func (c *Controller) Horizon() int { return c.bp.H }

// Vectors is the number of α-vectors of the controller (both classes,
// every step).
func (c *Controller) Vectors() int {
	n := 0
	for h := 1; h <= c.bp.H; h++ {
		n += c.bp.gamma[h][0].n(c.bp.S) + c.bp.gamma[h][1].n(c.bp.S)
	}
	return n
}

// ctrlScratch is one caller's buffers for decide.
type ctrlScratch struct {
	rb  []float64
	key []byte
	sc  *backupScratch
}

// newScratch's buffers are allocated on the first memo miss: a Cursor
// per logged episode mostly finds its actions in the memo.
func (c *Controller) newScratch() *ctrlScratch { return &ctrlScratch{} }

// decide is the controller's action at belief b over s_h after an
// observation of class end. It is computed at b rounded to the grid of
// beliefKey, so it is a function of the key alone, and the memo (by key:
// histories with the same belief share their action) returns what a
// computation would, whoever asked first: actions do not depend on the
// memo, its limit or the worker count.
func (c *Controller) decide(h int, b []float64, end bool, x *ctrlScratch) int {
	k := x.memoKey(h, b, end)
	if a, ok := c.memo.load(k); ok {
		return a
	}
	a := c.compute(h, b, end, x)
	c.memo.store(k, a)
	return a
}

// memoKey is the memo's key of belief b over s_h after an observation
// of class end: h, then beliefKey's bytes (in x.key, reused).
func (x *ctrlScratch) memoKey(h int, b []float64, end bool) []byte {
	k := binary.LittleEndian.AppendUint32(x.key[:0], uint32(h))
	x.key = appendBeliefKey(k, b, end)
	return x.key
}

// compute is decide's action computed at b rounded to the grid of
// beliefKey: by the one-step lookahead on the steps marked for it, by
// the best α-vector on the others.
func (c *Controller) compute(h int, b []float64, end bool, x *ctrlScratch) int {
	if x.sc == nil {
		x.rb, x.sc = make([]float64, c.bp.S), newBackupScratch(c.bp.S, c.bp.O)
	}
	for s, v := range b {
		x.rb[s] = math.Round(v*beliefGrid) / beliefGrid
	}
	if c.look[h] {
		return c.bp.lookahead(h, x.rb, end, x.sc)
	}
	return c.bp.vectorAction(h, x.rb, end, x.sc)
}

// ctrlState is the filter's state of one episode: the belief over s_h
// after o_h (immutable: each step allocates the next, so copies of a
// Cursor may branch) and the action taken at step h.
type ctrlState struct {
	h    int
	bel  []float64
	a    int
	lost bool // the model cannot follow the history (probability 0, unknown symbol)
}

// step advances the filter by the observation sym (after the action
// c.a at step c.h) and reports whether the model follows it.
func (c *Controller) step(st ctrlState, sym string, pred []float64) (ctrlState, bool) {
	if st.lost {
		return st, false
	}
	o, ok := c.obs[sym]
	if !ok || st.h >= c.bp.H {
		return ctrlState{lost: true}, false
	}
	next, z := c.filter(st, o, pred)
	if !(z > 0) {
		return ctrlState{lost: true}, false
	}
	return ctrlState{h: st.h + 1, bel: next, a: -1}, true
}

// filter returns the belief after observation o from the state st (the
// prior's at the start) and the observation's probability (pred:
// scratch of S).
func (c *Controller) filter(st ctrlState, o int, pred []float64) ([]float64, float64) {
	next := make([]float64, c.bp.S)
	if st.h == 0 {
		c.bp.m.Prior(next)
		return next, c.bp.m.ObserveFirst(next, o)
	}
	t := &c.bp.tab[st.h][st.a]
	predict(t.t, st.bel, pred)
	return next, correct(t.e, c.bp.O, pred, o, next)
}

// Decide returns the controller's action after the history o_1, a_1, …,
// o_h (len(obs) = h, len(acts) = h − 1; the actions need not be the
// controller's own: the filter follows the history as given). ok is
// false when the model gives the history probability 0 or does not know
// one of its symbols; err names an action the model does not know.
func (c *Controller) Decide(obs, acts []string) (action string, ok bool, err error) {
	if len(obs) == 0 || len(obs) > c.bp.H || len(acts) != len(obs)-1 {
		return "", false, fmt.Errorf("%w: a history of %d observations and %d actions (horizon %d)", ErrOptions, len(obs), len(acts), c.bp.H)
	}
	x := c.newScratch()
	st, ok, err := c.follow(obs, acts)
	if err != nil || !ok {
		return "", false, err
	}
	a := c.decide(st.h, st.bel, c.obs[obs[len(obs)-1]] == c.bp.endObs, x)
	return c.bp.m.ActVocab[a], true, nil
}

// follow runs the controller's state along the history obs, acts; it is
// false when the history has model probability 0.
func (c *Controller) follow(obs, acts []string) (st ctrlState, ok bool, err error) {
	pred := make([]float64, c.bp.S)
	for i, o := range obs {
		if i > 0 {
			if st.a, err = c.knownAction(acts[i-1], i); err != nil {
				return st, false, err
			}
		}
		if st, ok = c.step(st, o, pred); !ok {
			return st, false, nil
		}
	}
	return st, true, nil
}

// knownAction is the code of the action sym at step i of a history
// given to Decide; the error names an action the model does not know.
func (c *Controller) knownAction(sym string, i int) (int, error) {
	a, known := c.act[sym]
	if !known {
		return 0, fmt.Errorf("%w: action %q at step %d is not one of the model's %d actions (%s)", ErrOptions, sym, i, len(c.bp.m.ActVocab), listSome(c.bp.m.ActVocab, 8))
	}
	return a, nil
}

// table is the controller as controller.arrow's rows.
func (c *Controller) table(meta map[string]string) arrowio.Table {
	bp := c.bp
	r := &controllerRows{}
	for h := 1; h <= bp.H; h++ {
		r.addAlphas(bp, h)
		r.addStepTables(bp, h)
	}
	return arrowio.Table{Meta: c.tableMeta(meta), Columns: r.columns()}
}

// columns are controller.arrow's columns holding the rows.
func (r *controllerRows) columns() []arrowio.Column {
	return []arrowio.Column{
		{Name: "kind", String: arrowio.OrEmpty(r.kind)},
		{Name: "step", Int32: arrowio.OrEmpty(r.step)},
		{Name: "class", Int32: arrowio.OrEmpty(r.class)},
		{Name: "index", Int32: arrowio.OrEmpty(r.index)},
		{Name: "action", String: arrowio.OrEmpty(r.act)},
		{Name: "state", Int32: arrowio.OrEmpty(r.state)},
		{Name: "next_state", Int32: arrowio.OrEmpty(r.next)},
		{Name: "value", Float64: arrowio.OrEmpty(r.value)},
	}
}

// ctrlKey is a row of controller.arrow less its value: kind, step,
// class, index, action, state and next state (−1 where they do not
// apply).
type ctrlKey struct {
	kind     string
	h, cl, i int
	act      string
	s, s2    int
}

// add appends the row k with value v.
func (r *controllerRows) add(k ctrlKey, v float64) {
	r.kind, r.act = append(r.kind, k.kind), append(r.act, k.act)
	r.step, r.class, r.index = append(r.step, int32(k.h)), append(r.class, int32(k.cl)), append(r.index, int32(k.i))
	r.state, r.next, r.value = append(r.state, int32(k.s)), append(r.next, int32(k.s2)), append(r.value, v)
}

// addAlphas appends the coordinates of step h's α-vectors, class by
// class.
func (r *controllerRows) addAlphas(bp *beliefPlanner, h int) {
	S := bp.S
	for cl := 0; cl < 2; cl++ {
		g := &bp.gamma[h][cl]
		for i := 0; i < g.n(S); i++ {
			for s := 0; s < S; s++ {
				r.add(ctrlKey{kindAlpha, h, cl, i, bp.m.ActVocab[g.act[i]], s, -1}, g.vec[i*S+s])
			}
		}
	}
}

// addStepTables appends step h's rewards and bonus forms, action by
// action.
func (r *controllerRows) addStepTables(bp *beliefPlanner, h int) {
	S := bp.S
	for a := 0; a < bp.A; a++ {
		t := &bp.tab[h][a]
		for s := 0; s < S; s++ {
			r.add(ctrlKey{kindReward, h, -1, -1, bp.m.ActVocab[a], s, -1}, t.r[s])
		}
		if t.m != nil {
			r.addBonusForm(bp, h, a)
		}
	}
}

// addBonusForm appends the bonus quadratic form of step h and action a,
// row by row.
func (r *controllerRows) addBonusForm(bp *beliefPlanner, h, a int) {
	S, m := bp.S, bp.tab[h][a].m
	for s := 0; s < S; s++ {
		for s2 := 0; s2 < S; s2++ {
			r.add(ctrlKey{kindBonus, h, -1, -1, bp.m.ActVocab[a], s, s2}, m[s*S+s2])
		}
	}
}

// tableMeta is controller.arrow's schema metadata: the caller's meta
// with the horizon, the states, κ and the lookahead flags.
func (c *Controller) tableMeta(meta map[string]string) map[string]string {
	bp := c.bp
	md := map[string]string{}
	for k, v := range meta {
		md[k] = v
	}
	md[MetaHorizon] = strconv.Itoa(bp.H)
	md[MetaStates] = strconv.Itoa(bp.S)
	md[MetaKappa] = strconv.FormatFloat(bp.kappa, 'g', -1, 64)
	md[MetaLookahead] = c.lookFlags()
	return md
}

// lookFlags is MetaLookahead's value: per step, "1" where the controller
// acts by the lookahead, "0" elsewhere.
func (c *Controller) lookFlags() string {
	look := make([]string, c.bp.H)
	for h := 1; h <= c.bp.H; h++ {
		look[h-1] = "0"
		if c.look[h] {
			look[h-1] = "1"
		}
	}
	return strings.Join(look, ",")
}

// WriteController writes c to path (controller.arrow), atomically, with
// the caller's schema metadata (a run id, say).
func WriteController(path string, c *Controller, meta map[string]string) error {
	return arrowio.WriteArrow(path, c.table(meta))
}

// ReadController reads controller.arrow (the file, or the run directory
// holding it) for the model m it was planned on (model.arrow of the same
// run). Errors wrap ErrFile and name the file and row.
func ReadController(path string, m *estimate.Model) (*Controller, error) {
	path = inDir(path, ControllerFileName)
	t, err := arrowio.ReadArrow(path)
	if err != nil {
		return nil, err
	}
	bp, look, err := controllerPlanner(t, m, fileErrorf(path))
	if err != nil {
		return nil, err
	}
	return newController(bp, look), nil
}

// fileErrorf returns the maker of the errors of the controller file
// path: ErrFile, the path and the formatted message.
func fileErrorf(path string) func(string, ...any) error {
	return func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrFile, path, fmt.Sprintf(format, args...))
	}
}

// controllerPlanner checks controller.arrow's table t against the model
// m and returns the planner state it holds (κ, α-sets, step tables) and
// the lookahead flags.
func controllerPlanner(t arrowio.Table, m *estimate.Model, bad func(string, ...any) error) (*beliefPlanner, []bool, error) {
	kappa, look, err := controllerMeta(t.Meta, m, bad)
	if err != nil {
		return nil, nil, err
	}
	rows, err := controllerColumns(t, bad)
	if err != nil {
		return nil, nil, err
	}
	bp := &beliefPlanner{planner: filterPlanner(m), kappa: kappa, tab: filterTables(m), gamma: make([][2]alphaSet, m.Horizon+2)}
	if err := rows.fillChecked(bp, bad); err != nil {
		return nil, nil, err
	}
	return bp, look, nil
}

// fillChecked fills the planner's tables and α-sets from the rows and
// checks the controller they make.
func (r *controllerRows) fillChecked(bp *beliefPlanner, bad func(string, ...any) error) error {
	if err := r.fill(bp, bad); err != nil {
		return err
	}
	return checkController(bp, bad)
}

// controllerMeta checks controller.arrow's metadata against the model and
// returns κ and the lookahead flag of each step.
func controllerMeta(meta map[string]string, m *estimate.Model, bad func(string, ...any) error) (float64, []bool, error) {
	if err := checkMetaSizes(meta, m, bad); err != nil {
		return 0, nil, err
	}
	kappa, err := parseKappa(meta[MetaKappa], bad)
	if err != nil {
		return 0, nil, err
	}
	look, err := parseLookahead(meta[MetaLookahead], m.Horizon, bad)
	return kappa, look, err
}

// checkMetaSizes checks that the controller's horizon and state count
// are the model's.
func checkMetaSizes(meta map[string]string, m *estimate.Model, bad func(string, ...any) error) error {
	H, S := m.Horizon, m.States
	if v := meta[MetaHorizon]; v != strconv.Itoa(H) {
		return bad("horizon %q, the model's is %d", v, H)
	}
	if v := meta[MetaStates]; v != strconv.Itoa(S) {
		return bad("%q states, the model has %d", v, S)
	}
	return nil
}

// parseKappa reads MetaKappa's slope κ ≥ 0.
func parseKappa(v string, bad func(string, ...any) error) (float64, error) {
	kappa, err := strconv.ParseFloat(v, 64)
	if err != nil || kappa < 0 || math.IsInf(kappa, 0) {
		return 0, bad("metadata %s = %q is not a slope ≥ 0", MetaKappa, v)
	}
	return kappa, nil
}

// parseLookahead reads MetaLookahead's flags for steps 1..H (index 0
// unused).
func parseLookahead(v string, H int, bad func(string, ...any) error) ([]bool, error) {
	lookS := strings.Split(v, ",")
	if len(lookS) != H {
		return nil, bad("metadata %s has %d steps, the horizon is %d", MetaLookahead, len(lookS), H)
	}
	look := make([]bool, H+1)
	for h, s := range lookS {
		look[h+1] = s == "1"
	}
	return look, nil
}

// controllerRows are controller.arrow's columns.
type controllerRows struct {
	kind, act                       []string
	step, class, index, state, next []int32
	value                           []float64
}

func controllerColumns(t arrowio.Table, bad func(string, ...any) error) (*controllerRows, error) {
	cols, err := namedColumns(t, bad)
	if err != nil {
		return nil, err
	}
	r := &controllerRows{kind: cols["kind"].String, act: cols["action"].String, value: cols["value"].Float64,
		step: cols["step"].Int32, class: cols["class"].Int32, index: cols["index"].Int32, state: cols["state"].Int32, next: cols["next_state"].Int32}
	if err := r.checkLengths(t.Rows(), bad); err != nil {
		return nil, err
	}
	return r, nil
}

// namedColumns returns the controller table's columns by name, an error
// when one is missing.
func namedColumns(t arrowio.Table, bad func(string, ...any) error) (map[string]arrowio.Column, error) {
	cols := map[string]arrowio.Column{}
	for _, name := range []string{"kind", "step", "class", "index", "action", "state", "next_state", "value"} {
		col, ok := t.Column(name)
		if !ok {
			return nil, bad("column %q is missing", name)
		}
		cols[name] = col
	}
	return cols, nil
}

// checkLengths checks that every column holds n values (a column of
// another type reads as none).
func (r *controllerRows) checkLengths(n int, bad func(string, ...any) error) error {
	for _, l := range []int{len(r.kind), len(r.act), len(r.value), len(r.step), len(r.class), len(r.index), len(r.state), len(r.next)} {
		if l != n {
			return bad("a column has the wrong type")
		}
	}
	return nil
}

// filterTables are the planner's step tables with the model's transitions
// and emissions; the rewards (NaN until read) and bonus forms come from
// the file.
func filterTables(m *estimate.Model) [][]stepTables {
	tab := make([][]stepTables, m.Horizon+1)
	for h := 1; h <= m.Horizon; h++ {
		tab[h] = filterStep(m, h)
	}
	return tab
}

// filterStep returns the step-h tables of every action: the model's
// transitions and emissions, and rewards not yet read (NaN).
func filterStep(m *estimate.Model, h int) []stepTables {
	S := m.States
	tabs := make([]stepTables, m.NumActions)
	tt := m.Table(h)
	for a := range tabs {
		st := &tabs[a]
		st.t = m.Trans[tt][a*S*S : (a+1)*S*S]
		st.e = m.EmitOf(tt, a)
		st.r = nanVector(S)
	}
	return tabs
}

// nanVector returns a vector of n NaNs.
func nanVector(n int) []float64 {
	v := make([]float64, n)
	for s := range v {
		v[s] = math.NaN()
	}
	return v
}

// fill stores the rows into bp's α-sets and step tables.
func (r *controllerRows) fill(bp *beliefPlanner, bad func(string, ...any) error) error {
	actIdx := vocabIndex(bp.m.ActVocab)
	for i := range r.kind {
		if err := r.fillRow(bp, i, actIdx, bad); err != nil {
			return err
		}
	}
	return nil
}

// fillRow checks that row i fits the model (actIdx: its actions' codes)
// and stores it by its kind.
func (r *controllerRows) fillRow(bp *beliefPlanner, i int, actIdx map[string]int, bad func(string, ...any) error) error {
	a, err := r.rowAction(bp, i, actIdx, bad)
	if err != nil {
		return err
	}
	switch r.kind[i] {
	case kindAlpha:
		return r.fillAlpha(bp, i, a, bad)
	case kindReward:
		bp.tab[r.step[i]][a].r[r.state[i]] = r.value[i]
		return nil
	case kindBonus:
		return r.fillBonus(bp, i, a, bad)
	}
	return bad("row %d: unknown kind %q", i, r.kind[i])
}

// rowAction checks that row i fits the model (its step, state, action
// and value) and returns its action's code.
func (r *controllerRows) rowAction(bp *beliefPlanner, i int, actIdx map[string]int, bad func(string, ...any) error) (int, error) {
	H, S := bp.H, bp.S
	h, s := int(r.step[i]), int(r.state[i])
	a, okA := actIdx[r.act[i]]
	if h < 1 || h > H || s < 0 || s >= S || !okA || math.IsNaN(r.value[i]) {
		return 0, bad("row %d (%s, step %d, action %q, state %d) does not fit the model (%d steps, %d states)", i, r.kind[i], h, r.act[i], s, H, S)
	}
	return a, nil
}

// fillAlpha stores α-vector row i (action a) into bp's α-sets; the rows
// of a vector come state by state, in order.
func (r *controllerRows) fillAlpha(bp *beliefPlanner, i, a int, bad func(string, ...any) error) error {
	h, s, S := int(r.step[i]), int(r.state[i]), bp.S
	cl, k := int(r.class[i]), int(r.index[i])
	if cl < 0 || cl > 1 {
		return bad("row %d: class %d", i, cl)
	}
	g := &bp.gamma[h][cl]
	if !g.nextEntry(a, s, k, S) {
		return bad("row %d: α-vector %d of step %d is not written state by state in order", i, k, h)
	}
	g.vec = append(g.vec, r.value[i])
	return nil
}

// nextEntry reports whether entry s of α-vector k (action a) comes next
// in the set, vectors written state by state in order, and records the
// action of a vector it starts.
func (g *alphaSet) nextEntry(a, s, k, S int) bool {
	switch {
	case s == 0 && k == len(g.act):
		g.act = append(g.act, a)
	case s == 0 || k != len(g.act)-1 || len(g.vec) != k*S+s || g.act[k] != a:
		return false
	}
	return true
}

// fillBonus stores bonus-form row i (action a) into bp's step tables.
func (r *controllerRows) fillBonus(bp *beliefPlanner, i, a int, bad func(string, ...any) error) error {
	h, s, s2, S := int(r.step[i]), int(r.state[i]), int(r.next[i]), bp.S
	st := &bp.tab[h][a]
	if s2 < 0 || s2 >= S || h == bp.H {
		return bad("row %d: bonus entry (%d, %d) at step %d", i, s, s2, h)
	}
	if st.m == nil {
		st.m = make([]float64, S*S)
	}
	st.m[s*S+s2] = r.value[i]
	return nil
}

// checkController finishes the α-sets and checks that every step has
// vectors, rewards and (with κ > 0) bonus forms.
func checkController(bp *beliefPlanner, bad func(string, ...any) error) error {
	for h := 1; h <= bp.H; h++ {
		if err := checkControllerStep(bp, h, bad); err != nil {
			return err
		}
	}
	return nil
}

// checkControllerStep is checkController at step h.
func checkControllerStep(bp *beliefPlanner, h int, bad func(string, ...any) error) error {
	S := bp.S
	if err := finishAlphaSets(bp, h, bad); err != nil {
		return err
	}
	if bp.gamma[h][0].n(S)+bp.gamma[h][1].n(S) == 0 {
		return bad("step %d has no α-vector", h)
	}
	for a := range bp.tab[h] {
		if err := checkStepTables(bp, h, a, bad); err != nil {
			return err
		}
	}
	return nil
}

// finishAlphaSets checks that both α-sets of step h hold whole vectors
// and finishes them.
func finishAlphaSets(bp *beliefPlanner, h int, bad func(string, ...any) error) error {
	for cl := 0; cl < 2; cl++ {
		g := &bp.gamma[h][cl]
		if len(g.vec) != len(g.act)*bp.S {
			return bad("step %d: an α-vector is incomplete", h)
		}
		g.finish(bp.S)
	}
	return nil
}

// checkStepTables checks that the file gave the rewards of step h and
// action a and, before H with κ > 0, its bonus form.
func checkStepTables(bp *beliefPlanner, h, a int, bad func(string, ...any) error) error {
	for _, x := range bp.tab[h][a].r {
		if math.IsNaN(x) {
			return bad("step %d, action %q: reward rows missing", h, bp.m.ActVocab[a])
		}
	}
	if h < bp.H && bp.kappa > 0 && bp.tab[h][a].m == nil {
		return bad("step %d, action %q: bonus rows missing", h, bp.m.ActVocab[a])
	}
	return nil
}

// filterPlanner is the part of a planner the controller needs: the
// model's sizes, the end symbol and the actions allowed after it.
func filterPlanner(m *estimate.Model) *planner {
	p := &planner{m: m, H: m.Horizon, S: m.States, O: m.NumObs, A: m.NumActions, endObs: -1}
	p.shift, p.scale = m.RewardScale()
	p.endObs, p.normal, p.end = endActions(m)
	return p
}

// listSome is the first n symbols, quoted, and how many more.
func listSome(syms []string, n int) string {
	var b strings.Builder
	for i, s := range syms[:min(n, len(syms))] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(s))
	}
	if len(syms) > n {
		fmt.Fprintf(&b, " and %d more", len(syms)-n)
	}
	return b.String()
}
