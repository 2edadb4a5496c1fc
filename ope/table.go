package ope

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/pqcol"
)

// A stochastic policy table (schemas package documentation, "Policy
// tables") gives, row by row, the probability of an action at a history:
//
//	column       type      meaning
//	step         integer   h (1-based) the row applies to; 0 or absent: any step
//	history      string    o_1,a_1,…,o_{h−1},a_{h−1} before o_h, comma-separated or as a
//	                       JSON array of strings; "*" or absent: any history
//	observation  string    o_h; "*": any observation
//	action       string    the action
//	probability  double    π_e(action | history, observation)
//
// The rows of one (step, history, observation) form a distribution over
// actions (summing to one; unlisted actions have probability zero). At a
// logged step the most specific group applies: a given history before
// "*", a given observation before "*", a given step before any step.

// Wildcard matches any history or observation.
const Wildcard = "*"

// TableTarget is a stochastic policy table as a Target.
type TableTarget struct {
	nAct, nObs     int
	actSym, obsSym []string
	groups         map[groupKey][]float64
	hasHistory     bool // some group names a history (followers must keep it)
}

type groupKey struct {
	step         int
	history, obs string // history joined by histSep; Wildcard for any
}

// histSep joins the symbols of a history in group keys: a byte no symbol
// of a Parquet string column holds in practice, and never a comma.
const histSep = "\x1f"

// tableRow is one row of a policy table as read.
type tableRow struct {
	line         int // 1-based row, for messages
	step         int
	history, obs string
	action       string
	prob         float64
}

// ReadTable reads a stochastic policy table (Arrow IPC file, or Parquet
// by the extension .parquet) and checks it against the logs d: every
// action and observation it names must be the logs' (after the history's
// symbols), every group must sum to one. Errors name the file and row.
func ReadTable(path string, d *ingest.Dataset) (*TableTarget, error) {
	rows, err := readTableRows(path)
	if err != nil {
		return nil, err
	}
	return newTableTarget(path, rows, d)
}

// readTableRows reads the rows of a policy table: Parquet by the
// extension .parquet, else Arrow IPC.
func readTableRows(path string) ([]tableRow, error) {
	if strings.EqualFold(filepath.Ext(path), ".parquet") {
		return readTableParquet(path)
	}
	return readTableArrow(path)
}

// readTableArrow reads the rows of a policy table stored as an Arrow IPC
// file.
func readTableArrow(path string) ([]tableRow, error) {
	t, err := arrowio.ReadArrow(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrTarget, path, err)
	}
	c := arrowTable{
		path: path, obs: column(t, "observation"), act: column(t, "action"), prob: column(t, "probability"),
		step: column(t, "step"), hist: column(t, "history"),
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.rows(t.Rows())
}

// check checks that the table has the string columns observation and
// action and the double column probability.
func (c arrowTable) check() error {
	if c.obs == nil || c.obs.String == nil || c.act == nil || c.act.String == nil || c.prob == nil || c.prob.Float64 == nil {
		return fmt.Errorf("%w: %s: a policy table needs string columns observation and action and a double column probability", ErrTarget, c.path)
	}
	return nil
}

// rows returns the n rows of the table.
func (c arrowTable) rows(n int) ([]tableRow, error) {
	rows := make([]tableRow, n)
	for i := range rows {
		var err error
		if rows[i], err = c.row(i); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// column returns the column of t called name, or nil.
func column(t arrowio.Table, name string) *arrowio.Column {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i]
		}
	}
	return nil
}

// arrowTable holds the columns of a policy table read from the Arrow file
// path; step and hist are nil when absent.
type arrowTable struct {
	path                       string
	obs, act, prob, step, hist *arrowio.Column
}

// row returns row i (0-based) of the table.
func (c arrowTable) row(i int) (tableRow, error) {
	r := tableRow{line: i + 1, history: Wildcard, obs: c.obs.String[i], action: c.act.String[i], prob: c.prob.Float64[i]}
	if c.step != nil {
		var err error
		if r.step, err = c.stepAt(i); err != nil {
			return r, err
		}
	}
	if c.hist != nil {
		var err error
		if r.history, err = c.historyAt(i); err != nil {
			return r, err
		}
	}
	return r, nil
}

// historyAt is the history of row i, from a string history column.
func (c arrowTable) historyAt(i int) (string, error) {
	if c.hist.String == nil {
		return Wildcard, fmt.Errorf("%w: %s: column history must be a string", ErrTarget, c.path)
	}
	return c.hist.String[i], nil
}

// stepAt is the step of row i, from an integer step column.
func (c arrowTable) stepAt(i int) (int, error) {
	switch {
	case c.step.Int64 != nil:
		return int(c.step.Int64[i]), nil
	case c.step.Int32 != nil:
		return int(c.step.Int32[i]), nil
	}
	return 0, fmt.Errorf("%w: %s: column step must be an integer", ErrTarget, c.path)
}

// readTableParquet reads the rows of a policy table stored as a Parquet
// file.
func readTableParquet(path string) ([]tableRow, error) {
	names := []string{"observation", "action", "probability"}
	c := &parquetTable{optional: tableOptional(path)}
	names = append(names, c.optional...)
	if err := pqcol.Columns(path, names, c.batch); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrTarget, path, err)
	}
	return c.rows, nil
}

// parquetTable collects the rows of a Parquet policy table with the
// optional columns it has.
type parquetTable struct {
	optional []string
	rows     []tableRow
}

// batch adds the rows of a batch of Parquet values whose first row is
// first (0-based).
func (c *parquetTable) batch(first int64, vals [][]parquet.Value) error {
	for r := range vals[0] {
		row, err := parquetTableRow(int(first)+r+1, vals, r, c.optional)
		if err != nil {
			return err
		}
		c.rows = append(c.rows, row)
	}
	return nil
}

// parquetTableRow returns row r of a batch of Parquet values (observation,
// action, probability, then the optional columns), the table's row line.
func parquetTableRow(line int, vals [][]parquet.Value, r int, optional []string) (tableRow, error) {
	row := tableRow{line: line, history: Wildcard}
	if err := row.setRequired(vals[0][r], vals[1][r], vals[2][r]); err != nil {
		return row, err
	}
	for i, name := range optional {
		row.setOptional(name, vals[3+i][r])
	}
	return row, nil
}

// setRequired sets the observation, action and probability of the row
// from obs and act, which must be symbols, and prob, a double.
func (row *tableRow) setRequired(obs, act, prob parquet.Value) error {
	var ok bool
	if row.obs, ok = pqcol.Symbol(obs); !ok {
		return fmt.Errorf("row %d: observation is null or not a symbol", row.line)
	}
	if row.action, ok = pqcol.Symbol(act); !ok {
		return fmt.Errorf("row %d: action is null or not a symbol", row.line)
	}
	if row.prob, ok = doubleOf(prob); !ok {
		return fmt.Errorf("row %d: probability must be a double", row.line)
	}
	return nil
}

// setOptional sets the step or history (name) of the row from v unless v
// is null.
func (row *tableRow) setOptional(name string, v parquet.Value) {
	if v.IsNull() {
		return
	}
	switch name {
	case "step":
		row.step = int(v.Int64())
	case "history":
		row.history = string(v.ByteArray())
	}
}

// tableOptional lists the optional columns a Parquet policy table has.
func tableOptional(path string) []string {
	var out []string
	for _, name := range []string{"step", "history"} {
		if pqcol.Columns(path, []string{name}, func(int64, [][]parquet.Value) error { return errStop }) == errStop {
			out = append(out, name)
		}
	}
	return out
}

var errStop = fmt.Errorf("stop")

// parseHistory splits a history cell: Wildcard, a JSON array of strings,
// or comma-separated symbols (spaces around them dropped); "" is the
// empty history of step 1.
func parseHistory(s string) ([]string, bool, error) {
	t := strings.TrimSpace(s)
	switch {
	case t == Wildcard:
		return nil, true, nil
	case t == "":
		return nil, false, nil
	case strings.HasPrefix(t, "["):
		items, err := jsonHistory(s, t)
		return items, false, err
	}
	return splitHistory(t), false, nil
}

// splitHistory splits the comma-separated symbols of t, dropping the
// spaces around them.
func splitHistory(t string) []string {
	items := strings.Split(t, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

// jsonHistory parses the history cell s, trimmed to t, as a JSON array of
// strings.
func jsonHistory(s, t string) ([]string, error) {
	var items []string
	if err := json.Unmarshal([]byte(t), &items); err != nil {
		return nil, fmt.Errorf("history %q is not a JSON array of strings: %v", s, err)
	}
	return items, nil
}

// newTableTarget checks the rows of the policy table at path against the
// logs d and groups them by (step, history, observation).
func newTableTarget(path string, rows []tableRow, d *ingest.Dataset) (*TableTarget, error) {
	b := newTableBuilder(path, d)
	if err := b.addAll(rows); err != nil {
		return nil, err
	}
	if err := b.finish(); err != nil {
		return nil, err
	}
	return b.t, nil
}

// tableBuilder collects the rows of the policy table at path into the
// groups of t, checking them against the logs d.
type tableBuilder struct {
	path             string
	d                *ingest.Dataset
	t                *TableTarget
	actCode, obsCode map[string]int
	first            map[groupKey]int // the first row of each group
}

// newTableBuilder is a builder of an empty table target for the policy
// table at path and the logs d.
func newTableBuilder(path string, d *ingest.Dataset) *tableBuilder {
	return &tableBuilder{
		path:    path,
		d:       d,
		t:       &TableTarget{nAct: d.NumActions(), nObs: d.NumObs(), actSym: d.ActVocab, obsSym: d.ObsVocab, groups: map[groupKey][]float64{}},
		actCode: codes(d.ActVocab),
		obsCode: codes(d.ObsVocab),
		first:   map[groupKey]int{},
	}
}

// addAll checks the rows in order and sets their probabilities in their
// groups.
func (b *tableBuilder) addAll(rows []tableRow) error {
	for _, r := range rows {
		if err := b.add(r); err != nil {
			return err
		}
	}
	return nil
}

// finish checks that the table holds rows and that its groups are
// distributions.
func (b *tableBuilder) finish() error {
	if len(b.t.groups) == 0 {
		return fmt.Errorf("%w: %s holds no rows", ErrTarget, b.path)
	}
	return b.checkGroups()
}

// bad reports a fault of row r.
func (b *tableBuilder) bad(r tableRow, format string, a ...any) error {
	return fmt.Errorf("%w: %s row %d: %s", ErrTarget, b.path, r.line, fmt.Sprintf(format, a...))
}

// add checks row r and sets its action's probability in its group.
func (b *tableBuilder) add(r tableRow) error {
	if r.step < 0 || r.step > b.d.Horizon {
		return b.bad(r, "step %d outside 0..%d (0: any step)", r.step, b.d.Horizon)
	}
	hist, err := b.history(r)
	if err != nil {
		return err
	}
	a, err := b.checkSymbols(r)
	if err != nil {
		return err
	}
	return b.set(r, groupKey{step: r.step, history: hist, obs: r.obs}, a)
}

// history parses and checks the history of row r and returns it as its
// group keys hold it: Wildcard, or the symbols joined by histSep.
func (b *tableBuilder) history(r tableRow) (string, error) {
	hist, any, err := parseHistory(r.history)
	if err != nil {
		return "", b.bad(r, "%v", err)
	}
	if any {
		return Wildcard, nil
	}
	if err := b.checkHistory(r, hist); err != nil {
		return "", err
	}
	b.t.hasHistory = true
	return strings.Join(hist, histSep), nil
}

// checkHistory checks the history hist of row r: alternating observations
// and actions of the logs, as many steps as the row's step has before it.
func (b *tableBuilder) checkHistory(r tableRow, hist []string) error {
	if len(hist)%2 != 0 {
		return b.bad(r, "history %q must alternate observations and actions and end with an action (o1,a1,…,o_{h−1},a_{h−1})", r.history)
	}
	if r.step != 0 && len(hist) != 2*(r.step-1) {
		return b.bad(r, "history %q has %d steps, but the row is for step %d", r.history, len(hist)/2, r.step)
	}
	return b.checkHistorySymbols(r, hist)
}

// checkHistorySymbols checks that the history hist of row r names the
// logs' observations and actions, in turn.
func (b *tableBuilder) checkHistorySymbols(r tableRow, hist []string) error {
	for i, sym := range hist {
		vocab, what := b.obsCode, "observation"
		if i%2 == 1 {
			vocab, what = b.actCode, "action"
		}
		if _, ok := vocab[sym]; !ok {
			return b.bad(r, "history names %s %q, which the logs do not have", what, sym)
		}
	}
	return nil
}

// checkSymbols checks the observation, action and probability of row r and
// returns the action's index.
func (b *tableBuilder) checkSymbols(r tableRow) (int, error) {
	if _, ok := b.obsCode[r.obs]; !ok && r.obs != Wildcard {
		return 0, b.bad(r, "observation %q is not one of the logs'", r.obs)
	}
	a, ok := b.actCode[r.action]
	if !ok {
		return 0, b.bad(r, "action %q is not one of the logs'", r.action)
	}
	if !(r.prob >= 0 && r.prob <= 1) {
		return 0, b.bad(r, "probability %v outside [0,1]", r.prob)
	}
	return a, nil
}

// set sets the probability of action a in group k to row r's, creating
// the group at its first row; an action may appear once per group.
func (b *tableBuilder) set(r tableRow, k groupKey, a int) error {
	p, seen := b.t.groups[k]
	if !seen {
		p = make([]float64, b.t.nAct)
		b.t.groups[k] = p
		b.first[k] = r.line
	}
	if p[a] != 0 {
		return b.bad(r, "action %q appears twice for this step, history and observation", r.action)
	}
	p[a] = r.prob
	return nil
}

// checkGroups checks that every group is a distribution over actions,
// naming its first row otherwise.
func (b *tableBuilder) checkGroups() error {
	for k, p := range b.t.groups {
		if err := checkDistribution(p); err != nil {
			return fmt.Errorf("%w: %s row %d: the group of step %d, history %q, observation %q: %v", ErrTarget, b.path, b.first[k], k.step, strings.ReplaceAll(k.history, histSep, ","), k.obs, err)
		}
	}
	return nil
}

// codes maps each symbol to its index.
func codes(vocab []string) map[string]int {
	m := make(map[string]int, len(vocab))
	for i, s := range vocab {
		m[s] = i
	}
	return m
}

// Deterministic says whether every group gives one action probability one.
func (t *TableTarget) Deterministic() bool {
	for _, p := range t.groups {
		for _, x := range p {
			if x != 0 && x != 1 {
				return false
			}
		}
	}
	return true
}

// Follow starts an episode.
func (t *TableTarget) Follow() Follower { return &tableFollower{t: t} }

type tableFollower struct {
	t    *TableTarget
	h    int      // steps seen
	hist []string // o_1,a_1,…: kept only when some group names a history
	obs  string   // the last observation's symbol
}

func (f *tableFollower) Clone() Follower {
	c := *f
	c.hist = append([]string(nil), f.hist...)
	return &c
}

// Next finds the most specific group for (step, history, o_h).
func (f *tableFollower) Next(prevAct, obs int, p []float64) error {
	t := f.t
	if t.hasHistory && f.h > 0 {
		f.hist = append(f.hist, f.obs, t.actSym[prevAct])
	}
	f.h++
	f.obs = t.obsSym[obs]
	if g, ok := t.group(f.h, strings.Join(f.hist, histSep), f.obs); ok {
		copy(p, g)
		return nil
	}
	return fmt.Errorf("%w: the policy table has no row for step %d, history %q, observation %q", ErrTarget, f.h, strings.Join(f.hist, ","), f.obs)
}

// group is the most specific group for step h, the history hist (joined
// by histSep) and the observation obs: a given history before Wildcard, a
// given observation before Wildcard, a given step before any step.
func (t *TableTarget) group(h int, hist, obs string) ([]float64, bool) {
	for _, step := range []int{h, 0} {
		for _, hs := range []string{hist, Wildcard} {
			if hs == hist && !t.hasHistory {
				continue
			}
			if g, ok := t.groupFor(step, hs, obs); ok {
				return g, true
			}
		}
	}
	return nil, false
}

// groupFor is the group of the step and the history hs for the
// observation obs, else for Wildcard.
func (t *TableTarget) groupFor(step int, hs, obs string) ([]float64, bool) {
	for _, o := range []string{obs, Wildcard} {
		if g, ok := t.groups[groupKey{step, hs, o}]; ok {
			return g, true
		}
	}
	return nil, false
}
