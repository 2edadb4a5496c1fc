package policy

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/psrlcb/psrlcb/arrowio"
)

// Table is an open policy.arrow that answers lookups by reading only the
// record batches that hold a history's rows, when the file carries
// MetaBatchIndex (every table psrlcb writes level by level does); a file
// without it is read whole (ReadFile) and looked up in memory. One act
// on a table of millions of rows then reads a few batches of
// fileBatchRows rows instead of the whole file. A Table is not safe for
// concurrent use.
type Table struct {
	Meta    map[string]string
	Horizon int

	whole *Policy // a file without the index, read whole

	path    string
	f       *os.File
	r       *ipc.FileReader
	col     []int
	rows    int     // rows per batch
	first   []int64 // parent of each batch's first row
	batches map[int]*tableBatch
}

// tableBatch is the part of a record batch a lookup reads, copied out.
type tableBatch struct {
	lo     int64 // row of the batch's first row
	node   []int64
	parent []int64
	step   []int32
	rec    arrow.Record
	obs    *array.String
}

// maxCachedBatches bounds the batches a Table keeps between reads.
const maxCachedBatches = 8

// OpenTable opens the policy at path (policy.arrow or a run directory
// holding it) for lookups. Close releases it.
func OpenTable(path string) (*Table, error) {
	path = inDir(path, FileName)
	f, r, err := openArrow(memory.DefaultAllocator, path)
	if err != nil {
		return nil, err
	}
	t := &Table{path: path, f: f, r: r, batches: map[int]*tableBatch{}, Meta: metaMap(r.Schema().Metadata())}
	return t.indexedOrWhole()
}

// indexedOrWhole returns the table read by its index, checked, or, when
// it has no usable index, the whole table read by openWhole.
func (t *Table) indexedOrWhole() (*Table, error) {
	path := t.path
	if !t.hasIndex() {
		// No usable index: the whole table, checked by ReadFile.
		t.Close()
		return openWhole(path)
	}
	if err := t.checkIndexed(); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// openWhole reads the table at path whole (ReadFile), for lookups in
// memory.
func openWhole(path string) (*Table, error) {
	pol, meta, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return &Table{Meta: meta, Horizon: pol.Horizon, whole: pol}, nil
}

// checkIndexed checks the schema, schema version and horizon of a table
// with the batch index, and sets its horizon.
func (t *Table) checkIndexed() error {
	if err := t.checkSchema(); err != nil {
		return err
	}
	if v, ok := t.Meta[MetaSchemaVersion]; ok && v != arrowio.SchemaVersion {
		return fmt.Errorf("%w: %s: schema version %q, this psrlcb reads version %s", ErrFile, t.path, v, arrowio.SchemaVersion)
	}
	h, err := strconv.Atoi(t.Meta[MetaHorizon])
	if err != nil || h < 1 {
		return fmt.Errorf("%w: %s: metadata %s = %q is not a horizon", ErrFile, t.path, MetaHorizon, t.Meta[MetaHorizon])
	}
	t.Horizon = h
	return nil
}

// hasIndex reads MetaBatchIndex; false when the file has none, it
// does not describe the file's batches or the file has a probability
// column.
func (t *Table) hasIndex() bool {
	idx, ok := t.Meta[MetaBatchIndex]
	// A stochastic policy is read whole: the lookups by index know one
	// action per history.
	stochastic := len(t.r.Schema().FieldIndices(probField.Name)) > 0
	return ok && !stochastic && t.parseIndex(idx)
}

// parseIndex reads MetaBatchIndex; false when it does not describe the
// file's batches.
func (t *Table) parseIndex(s string) bool {
	parts := strings.Split(s, ",")
	n, err := strconv.Atoi(parts[0])
	if err != nil || n < 1 || len(parts)-1 != t.r.NumRecords() {
		return false
	}
	first, ok := parseParents(parts[1:])
	t.rows, t.first = n, first
	return ok
}

// parseParents parses the index's parents of the batches' first rows,
// which must never decrease.
func parseParents(parts []string) ([]int64, bool) {
	var first []int64
	for _, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || (len(first) > 0 && v < first[len(first)-1]) {
			return first, false
		}
		first = append(first, v)
	}
	return first, true
}

// checkSchema checks the columns (schemaColumns) and sets t.col.
func (t *Table) checkSchema() error {
	var err error
	t.col, err = schemaColumns(t.r.Schema(), t.path)
	return err
}

// Close releases the file.
func (t *Table) Close() error {
	t.releaseBatches()
	if t.r != nil {
		t.r.Close()
		t.r = nil
	}
	if t.f != nil {
		err := t.f.Close()
		t.f = nil
		return err
	}
	return nil
}

// releaseBatches releases and drops the cached batches.
func (t *Table) releaseBatches() {
	for _, b := range t.batches {
		b.rec.Release()
	}
	t.batches = nil
}

// batch reads record batch b (cached).
func (t *Table) batch(b int) (*tableBatch, error) {
	if tb, ok := t.batches[b]; ok {
		return tb, nil
	}
	tb, err := t.readBatch(b)
	if err != nil {
		return nil, err
	}
	t.cache(b, tb)
	return tb, nil
}

// readBatch reads record batch b and checks it and its rows' parents.
func (t *Table) readBatch(b int) (*tableBatch, error) {
	rec, err := t.r.Record(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: record batch %d: %v", ErrFile, t.path, b, err)
	}
	if err := t.checkBatch(b, rec); err != nil {
		return nil, err
	}
	rec.Retain() // the reader releases its own reference at the next read
	tb := t.newBatch(b, rec)
	if err := t.checkParents(b, tb); err != nil {
		rec.Release()
		return nil, err
	}
	return tb, nil
}

// cache keeps batch b, dropping another one when maxCachedBatches are
// kept.
func (t *Table) cache(b int, tb *tableBatch) {
	if len(t.batches) >= maxCachedBatches {
		for k, old := range t.batches {
			old.rec.Release()
			delete(t.batches, k)
			break
		}
	}
	t.batches[b] = tb
}

// newBatch is record batch b's lookup columns.
func (t *Table) newBatch(b int, rec arrow.Record) *tableBatch {
	return &tableBatch{lo: int64(b) * int64(t.rows), rec: rec,
		node:   rec.Column(t.col[0]).(*array.Int64).Int64Values(),
		parent: rec.Column(t.col[1]).(*array.Int64).Int64Values(),
		step:   rec.Column(t.col[2]).(*array.Int32).Int32Values(),
		obs:    rec.Column(t.col[3]).(*array.String),
	}
}

// checkBatch checks record batch b's row count against the index and
// that its node, parent, step and observation columns have no nulls.
func (t *Table) checkBatch(b int, rec arrow.Record) error {
	n := int(rec.NumRows())
	if n == 0 || (b < t.r.NumRecords()-1 && n != t.rows) || n > t.rows {
		return fmt.Errorf("%w: %s: record batch %d has %d rows, the index says %d", ErrFile, t.path, b, n, t.rows)
	}
	for j, c := range t.col[:4] {
		if rec.Column(c).NullN() > 0 {
			return fmt.Errorf("%w: %s: column %q has nulls in record batch %d", ErrFile, t.path, fileFields[j].Name, b)
		}
	}
	return nil
}

// checkParents checks that batch b starts with the parent the index
// says and that its parents never decrease.
func (t *Table) checkParents(b int, tb *tableBatch) error {
	if tb.parent[0] != t.first[b] {
		return fmt.Errorf("%w: %s: record batch %d starts with parent %d, the index says %d", ErrFile, t.path, b, tb.parent[0], t.first[b])
	}
	for i := 1; i < len(tb.parent); i++ {
		if tb.parent[i] < tb.parent[i-1] {
			return fmt.Errorf("%w: %s: row %d: parent %d after %d, but the index says parents never decrease", ErrFile, t.path, tb.lo+int64(i), tb.parent[i], tb.parent[i-1])
		}
	}
	return nil
}

// child finds the row of parent's child with observation obs (parent −1:
// the step-1 rows), reading the batches its children lie in.
func (t *Table) child(parent int64, obs string) (int64, bool, error) {
	// The first batch that can hold a row with this parent: the last one
	// whose first row's parent is below it (children may start there).
	b := sort.Search(len(t.first), func(i int) bool { return t.first[i] >= parent }) - 1
	b = max(b, 0)
	for ; b < len(t.first); b++ {
		if t.first[b] > parent {
			return 0, false, nil
		}
		id, found, ended, err := t.childIn(b, parent, obs)
		if found || ended || err != nil {
			return id, found, err
		}
	}
	return 0, false, nil
}

// childIn looks in batch b for the child of parent with observation obs:
// its id and whether it is there, and whether the search ends in this
// batch (the child's row found or the parent's rows ending here).
func (t *Table) childIn(b int, parent int64, obs string) (id int64, found, ended bool, err error) {
	tb, err := t.batch(b)
	if err != nil {
		return 0, false, true, err
	}
	i, ended := tb.find(parent, obs)
	if i >= 0 {
		id, found, err = t.rowOf(tb, i)
		return id, found, true, err
	}
	return 0, false, ended, nil // ended: the parent's rows end inside this batch
}

// fallbackOf is row cur's fallback action (none for cur −1).
func (t *Table) fallbackOf(cur int64) (string, error) {
	if cur < 0 {
		return "", nil
	}
	n, err := t.Node(cur)
	if err != nil {
		return "", err
	}
	return n.Fallback, nil
}

// find returns the batch row of parent's child with observation obs (−1
// if none) and whether the parent's rows end inside the batch.
func (tb *tableBatch) find(parent int64, obs string) (int, bool) {
	i := sort.Search(len(tb.parent), func(i int) bool { return tb.parent[i] >= parent })
	for ; i < len(tb.parent) && tb.parent[i] == parent; i++ {
		if tb.obs.Value(i) == obs {
			return i, true
		}
	}
	return -1, i < len(tb.parent)
}

// rowOf is the table row of batch row i, which its node column must
// equal.
func (t *Table) rowOf(tb *tableBatch, i int) (int64, bool, error) {
	row := tb.lo + int64(i)
	if tb.node[i] != row {
		return 0, false, fmt.Errorf("%w: %s: row %d (node %d): node is not the row index", ErrFile, t.path, row, tb.node[i])
	}
	return row, true, nil
}

// Node returns the row id.
func (t *Table) Node(id int64) (Node, error) {
	if t.whole != nil {
		return t.wholeNode(id)
	}
	b := int(id / int64(t.rows))
	if id < 0 || b >= len(t.first) {
		return Node{}, t.noRow(id)
	}
	return t.batchNode(b, id)
}

// batchNode returns row id of batch b.
func (t *Table) batchNode(b int, id int64) (Node, error) {
	tb, err := t.batch(b)
	if err != nil {
		return Node{}, err
	}
	i := int(id - tb.lo)
	if i >= len(tb.node) {
		return Node{}, t.noRow(id)
	}
	return tb.row(t.col, i), nil
}

// noRow is the error for a row id the table does not have.
func (t *Table) noRow(id int64) error {
	return fmt.Errorf("%w: %s: no row %d", ErrFile, t.path, id)
}

// wholeNode is Node on a table read whole.
func (t *Table) wholeNode(id int64) (Node, error) {
	if id < 0 || id >= int64(len(t.whole.Nodes)) {
		return Node{}, fmt.Errorf("%w: no row %d", ErrFile, id)
	}
	return t.whole.Nodes[id], nil
}

// row copies batch row i out of the batch (col: the columns' indices in
// fileFields' order).
func (tb *tableBatch) row(col []int, i int) Node {
	rec := tb.rec
	str := func(k int) string { return strings.Clone(rec.Column(col[k]).(*array.String).Value(i)) }
	fl := func(k int) float64 { return rec.Column(col[k]).(*array.Float64).Value(i) }
	return Node{ID: tb.node[i], Parent: tb.parent[i], Step: tb.step[i], Obs: str(3), Action: str(4), Fallback: str(5),
		ReachProb: fl(6), ValueReward: fl(7), ValueBonus: fl(8), ValueLCB: fl(9)}
}

// Lookup follows obs through the table with the lookup rule of
// Cursor.Act: it returns the action at each step (the last one is the
// action for the last observation), the node used at the last step (−1
// once the history has left the tree) and the last node found (whose
// fallback action plays past the tree). ok is false when the first
// observation has no row.
func (t *Table) Lookup(obs []string) (actions []string, node, last int64, ok bool, err error) {
	if t.whole != nil {
		return lookupWhole(t.whole, obs)
	}
	c := tableCursor{cur: -1, last: -1}
	actions, found, err := c.actions(t, obs)
	if err != nil || !found {
		return nil, -1, -1, false, err
	}
	if c.fallback != "" {
		c.cur = -1 // the history has left the tree
	}
	return actions, c.cur, c.last, true, nil
}

// actions moves the cursor along the observations obs and returns the
// actions it plays; found is false when the table has no action for
// the history.
func (c *tableCursor) actions(t *Table, obs []string) (actions []string, found bool, err error) {
	for h, o := range obs {
		a, found, err := c.act(t, h, o)
		if err != nil || !found {
			return nil, false, err
		}
		actions = append(actions, a)
	}
	return actions, true, nil
}

// tableCursor is Lookup's place in the table: the row of the last step
// (−1 before the first), the last row found, and the fallback action
// once the history has left the tree.
type tableCursor struct {
	cur, last int64
	fallback  string
}

// act returns the action at step h+1 after observation o and moves the
// cursor; found is false when the first observation has no row.
func (c *tableCursor) act(t *Table, h int, o string) (action string, found bool, err error) {
	if c.fallback != "" {
		return c.fallback, true, nil
	}
	id, a, found, err := t.lookupStep(c.cur, h, o)
	if err != nil {
		return "", false, err
	}
	if !found {
		return c.leave(a)
	}
	c.cur, c.last = id, id
	return a, true, nil
}

// leave moves the cursor out of the table with its node's fallback
// action a and returns it; it is false at the root, where there is none.
func (c *tableCursor) leave(a string) (action string, found bool, err error) {
	if c.cur < 0 {
		return "", false, nil
	}
	c.fallback = a
	return a, true, nil
}

// lookupWhole is Lookup on a table read whole, by a Cursor.
func lookupWhole(pol *Policy, obs []string) (actions []string, node, last int64, ok bool, err error) {
	last = -1
	c := pol.NewCursor()
	for _, o := range obs {
		a, n, found := c.Act(o)
		if !found {
			return nil, -1, -1, false, nil
		}
		if n >= 0 {
			last = n
		}
		actions, node = append(actions, a), n
	}
	return actions, node, last, true, nil
}

// lookupStep finds the child of row cur (−1: the step-1 rows) with
// observation o, at step h+1, and returns it with its action; when there
// is none, found is false and action is cur's fallback action (none when
// cur is −1).
func (t *Table) lookupStep(cur int64, h int, o string) (id int64, action string, found bool, err error) {
	id, found, err = t.child(cur, o)
	if err != nil {
		return 0, "", false, err
	}
	if !found {
		action, err = t.fallbackOf(cur)
		return 0, action, false, err
	}
	action, err = t.actionAt(id, h)
	if err != nil {
		return 0, "", false, err
	}
	return id, action, true, nil
}

// actionAt returns the action of row id, which must be at step h+1.
func (t *Table) actionAt(id int64, h int) (string, error) {
	n, err := t.Node(id)
	if err != nil {
		return "", err
	}
	if int(n.Step) != h+1 {
		return "", fmt.Errorf("%w: %s: row %d is at step %d, want %d", ErrFile, t.path, id, n.Step, h+1)
	}
	return n.Action, nil
}

// Whole is the policy of a table read whole (a file without the batch
// index, every stochastic policy among them), nil for a table looked up
// by its index.
func (t *Table) Whole() *Policy { return t.whole }
