package policy

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/psrlcb/psrlcb/errkind"

	"github.com/psrlcb/psrlcb/arrowio"
	"github.com/psrlcb/psrlcb/estimate"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/psrlcb/psrlcb/internal/atomicfile"
)

// FileName is the policy file's name inside a run's output directory.
const FileName = "policy.arrow"

// Schema metadata keys of policy.arrow. WriteFile sets them; the caller's
// values for them are ignored.
const (
	MetaSchemaVersion = "psrlcb.schema_version"
	MetaHorizon       = "psrlcb.horizon"
	// MetaBatchIndex is the lookup index of a table whose parent column
	// never decreases (the planners write their trees level by level):
	// the rows per record batch, then the parent of each batch's first
	// row, comma-separated. OpenTable answers a lookup by reading only
	// the batches that hold the path's rows.
	MetaBatchIndex = "psrlcb.batch_index"
)

// ErrFile: a policy file is not a valid policy.arrow (the message names
// the file and, where it applies, the row).
var ErrFile = errkind.New(errkind.Data, "policy: invalid policy file")

// fileBatchRows is the number of nodes per Arrow record batch: big trees are
// written and read batch by batch, and 64k rows keep each batch a few MB.
const fileBatchRows = 1 << 16

// fileBatchRowsVar is fileBatchRows, and noIndex leaves MetaBatchIndex
// out; tests change them to write small batches and tables of the
// layout that came before the index.
var (
	fileBatchRowsVar = fileBatchRows
	noIndex          = false
)

var fileFields = []arrow.Field{
	{Name: "node", Type: arrow.PrimitiveTypes.Int64},
	{Name: "parent", Type: arrow.PrimitiveTypes.Int64},
	{Name: "step", Type: arrow.PrimitiveTypes.Int32},
	{Name: "observation", Type: arrow.BinaryTypes.String},
	{Name: "action", Type: arrow.BinaryTypes.String},
	{Name: "fallback_action", Type: arrow.BinaryTypes.String},
	{Name: "reach_prob", Type: arrow.PrimitiveTypes.Float64},
	{Name: "value_reward", Type: arrow.PrimitiveTypes.Float64},
	{Name: "value_bonus", Type: arrow.PrimitiveTypes.Float64},
	{Name: "value_lcb", Type: arrow.PrimitiveTypes.Float64},
}

// probField is the column of a stochastic policy (Policy.Probs), after
// fileFields; a deterministic policy's file has none.
var probField = arrow.Field{Name: "probability", Type: arrow.PrimitiveTypes.Float64}

// probTolerance is how far the probabilities of a history's actions may
// sum from one.
const probTolerance = 1e-6

// WriteFile writes p to path as policy.arrow: an Arrow IPC file (the
// random-access "file" flavour, uncompressed, no dictionary columns) with
// one row per node and the columns node, parent, step, observation,
// action, fallback_action, reach_prob, value_reward, value_bonus,
// value_lcb, and for a stochastic policy (Policy.Probs) probability. The
// schema metadata holds psrlcb.schema_version ("1"),
// psrlcb.horizon and the caller's meta (a run id, say). The write is
// atomic: a temporary file in the same directory is renamed into place
// after a successful close, so readers never see a partial file.
func WriteFile(path string, p *Policy, meta map[string]string) error {
	return writeFileWith(memory.DefaultAllocator, path, p, meta)
}

func writeFileWith(mem memory.Allocator, path string, p *Policy, meta map[string]string) error {
	if p == nil {
		return fmt.Errorf("%w: %s: nil policy", ErrFile, path)
	}
	if err := p.check(path); err != nil {
		return err
	}
	return atomicfile.Write(path, func(f *os.File) error { return writeArrow(mem, f, p, meta) })
}

func writeArrow(mem memory.Allocator, w io.WriteSeeker, p *Policy, meta map[string]string) error {
	md := fileMetadata(p, meta)
	fields := fileFields
	if p.Stochastic() {
		fields = append(slices.Clip(fileFields), probField)
	}
	schema := arrow.NewSchema(fields, &md)
	fw, err := ipc.NewFileWriter(w, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	if err := writeRecords(fw, b, p); err != nil {
		fw.Close()
		return err
	}
	return fw.Close()
}

// writeRecords writes p's nodes with b to fw in record batches of
// fileBatchRowsVar rows (one empty batch for no nodes).
func writeRecords(fw *ipc.FileWriter, b *array.RecordBuilder, p *Policy) error {
	nb := newNodeBuilder(b)
	for lo := 0; lo < len(p.Nodes) || lo == 0; lo += fileBatchRowsVar {
		hi := min(len(p.Nodes), lo+fileBatchRowsVar)
		var probs []float64
		if p.Stochastic() {
			probs = p.Probs[lo:hi]
		}
		if err := writeBatch(fw, b, nb, p.Nodes[lo:hi], probs); err != nil {
			return err
		}
		if hi >= len(p.Nodes) {
			break
		}
	}
	return nil
}

// writeBatch appends the rows nodes (with their probabilities probs,
// nil for a deterministic policy) to the builder (nb over b) and writes
// them to fw as one record batch.
func writeBatch(fw *ipc.FileWriter, b *array.RecordBuilder, nb *nodeBuilder, nodes []Node, probs []float64) error {
	for i := range nodes {
		nb.append(&nodes[i])
	}
	if probs != nil {
		b.Field(len(fileFields)).(*array.Float64Builder).AppendValues(probs, nil)
	}
	rec := b.NewRecord()
	err := fw.Write(rec)
	rec.Release()
	return err
}

// fileMetadata is the schema metadata of p's file: the caller's meta in
// key order (less the keys WriteFile sets), then the schema version, the
// horizon and, when p has one, the batch index (a stochastic policy,
// whose tables are the logs' size, is read whole and has none).
func fileMetadata(p *Policy, meta map[string]string) arrow.Metadata {
	keys, vals := callerMeta(meta)
	keys = append(keys, MetaSchemaVersion, MetaHorizon)
	vals = append(vals, arrowio.SchemaVersion, strconv.Itoa(p.Horizon))
	if idx, ok := batchIndex(p, fileBatchRowsVar); ok && !noIndex && !p.Stochastic() {
		keys, vals = append(keys, MetaBatchIndex), append(vals, idx)
	}
	return arrow.NewMetadata(keys, vals)
}

// callerMeta returns the caller's meta in key order, less the keys
// WriteFile sets, as keys and values (room left for those).
func callerMeta(meta map[string]string) (keys, vals []string) {
	keys = make([]string, 0, len(meta)+2)
	vals = make([]string, 0, len(meta)+2)
	for _, k := range sortedMetaKeys(meta) {
		if k == MetaSchemaVersion || k == MetaHorizon || k == MetaBatchIndex {
			continue
		}
		keys = append(keys, k)
		vals = append(vals, meta[k])
	}
	return keys, vals
}

// nodeBuilder holds the column builders of a policy.arrow record batch.
type nodeBuilder struct {
	node, parent *array.Int64Builder
	step         *array.Int32Builder
	obs, act, fb *array.StringBuilder
	fl           []*array.Float64Builder // reach_prob, value_reward, value_bonus, value_lcb
}

// newNodeBuilder returns the column builders of b (schema fileFields).
func newNodeBuilder(b *array.RecordBuilder) *nodeBuilder {
	return &nodeBuilder{
		node:   b.Field(0).(*array.Int64Builder),
		parent: b.Field(1).(*array.Int64Builder),
		step:   b.Field(2).(*array.Int32Builder),
		obs:    b.Field(3).(*array.StringBuilder),
		act:    b.Field(4).(*array.StringBuilder),
		fb:     b.Field(5).(*array.StringBuilder),
		fl: []*array.Float64Builder{
			b.Field(6).(*array.Float64Builder), b.Field(7).(*array.Float64Builder),
			b.Field(8).(*array.Float64Builder), b.Field(9).(*array.Float64Builder),
		},
	}
}

// append appends the row of node n.
func (nb *nodeBuilder) append(n *Node) {
	nb.node.Append(n.ID)
	nb.parent.Append(n.Parent)
	nb.step.Append(n.Step)
	nb.obs.Append(n.Obs)
	nb.act.Append(n.Action)
	nb.fb.Append(n.Fallback)
	nb.fl[0].Append(n.ReachProb)
	nb.fl[1].Append(n.ValueReward)
	nb.fl[2].Append(n.ValueBonus)
	nb.fl[3].Append(n.ValueLCB)
}

// batchIndex is the MetaBatchIndex value of p written in batches of rows
// rows, and false when p's parent column decreases somewhere.
func batchIndex(p *Policy, rows int) (string, bool) {
	for i := 1; i < len(p.Nodes); i++ {
		if p.Nodes[i].Parent < p.Nodes[i-1].Parent {
			return "", false
		}
	}
	var b strings.Builder
	b.WriteString(strconv.Itoa(rows))
	for lo := 0; lo < len(p.Nodes); lo += rows {
		b.WriteByte(',')
		b.WriteString(strconv.FormatInt(p.Nodes[lo].Parent, 10))
	}
	return b.String(), true
}

func sortedMetaKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Insertion sort keeps this file free of another import; metadata
	// maps hold a handful of keys.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// ReadFile reads a policy.arrow written by WriteFile (or by anyone
// following its layout) and returns the policy and the schema metadata.
// path may also be a directory holding policy.arrow. It checks that the
// columns exist with the right types and no nulls, that node equals the
// row index, that parents precede their children, that steps start at 1
// under parent −1 and grow by one from parent to child, and that no two
// children of a node share an observation; errors wrap ErrFile and name
// the file and the row.
func ReadFile(path string) (*Policy, map[string]string, error) {
	return readFileWith(memory.DefaultAllocator, path)
}

func readFileWith(mem memory.Allocator, path string) (*Policy, map[string]string, error) {
	path = inDir(path, FileName)
	f, r, err := openArrow(mem, path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	defer r.Close()
	return readOpened(r, path)
}

// readOpened reads the policy and its metadata from the open file of r
// (path) and checks them.
func readOpened(r *ipc.FileReader, path string) (*Policy, map[string]string, error) {
	meta, col, err := fileSchema(r.Schema(), path)
	if err != nil {
		return nil, nil, err
	}
	p, err := readNodes(r, col, path)
	if err != nil {
		return nil, nil, err
	}
	if err := p.finishRead(meta, path); err != nil {
		return nil, nil, err
	}
	return p, meta, nil
}

// openArrow opens the Arrow IPC file at path for reading; the caller
// closes the reader and the file.
func openArrow(mem memory.Allocator, path string) (*os.File, *ipc.FileReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%w: %s: not an Arrow IPC file: %v", ErrFile, path, err)
	}
	return f, r, nil
}

// inDir is path, or the file name inside it when path is a directory.
func inDir(path, name string) string {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return filepath.Join(path, name)
	}
	return path
}

// finishRead checks the policy read from path, sets its horizon from
// the metadata and attaches the controller beside it.
func (p *Policy) finishRead(meta map[string]string, path string) error {
	if err := p.check(path); err != nil {
		return err
	}
	if err := p.setHorizon(meta, path); err != nil {
		return err
	}
	return attachController(p, path)
}

// fileSchema checks the schema of the policy file at path: its schema
// version, and each column of fileFields present once with its type. It
// returns the metadata and the columns' indices in fileFields' order.
func fileSchema(schema *arrow.Schema, path string) (map[string]string, []int, error) {
	meta := metaMap(schema.Metadata())
	if v, ok := meta[MetaSchemaVersion]; ok && v != arrowio.SchemaVersion {
		return nil, nil, fmt.Errorf("%w: %s: schema version %q, this psrlcb reads version %s", ErrFile, path, v, arrowio.SchemaVersion)
	}
	col, err := schemaColumns(schema, path)
	if err != nil {
		return nil, nil, err
	}
	return meta, col, nil
}

// schemaColumns checks that each column of fileFields is in the schema
// of the file at path once, with its type, and returns their indices in
// fileFields' order, then probField's when the file has it.
func schemaColumns(schema *arrow.Schema, path string) ([]int, error) {
	col := make([]int, len(fileFields), len(fileFields)+1)
	for j, want := range fileFields {
		idx := schema.FieldIndices(want.Name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("%w: %s: column %q is missing (or repeated)", ErrFile, path, want.Name)
		}
		if got := schema.Field(idx[0]).Type; !arrow.TypeEqual(got, want.Type) {
			return nil, fmt.Errorf("%w: %s: column %q has type %s, want %s", ErrFile, path, want.Name, got, want.Type)
		}
		col[j] = idx[0]
	}
	return probColumn(schema, path, col)
}

// probColumn appends to col the index of probField in schema, when the
// file at path has it (once, of its type).
func probColumn(schema *arrow.Schema, path string, col []int) ([]int, error) {
	idx := schema.FieldIndices(probField.Name)
	switch {
	case len(idx) == 0:
		return col, nil
	case len(idx) > 1:
		return nil, fmt.Errorf("%w: %s: column %q is repeated", ErrFile, path, probField.Name)
	case !arrow.TypeEqual(schema.Field(idx[0]).Type, probField.Type):
		return nil, fmt.Errorf("%w: %s: column %q has type %s, want %s", ErrFile, path, probField.Name, schema.Field(idx[0]).Type, probField.Type)
	}
	return append(col, idx[0]), nil
}

// metaMap returns the schema metadata md as a map.
func metaMap(md arrow.Metadata) map[string]string {
	meta := make(map[string]string, md.Len())
	for i, k := range md.Keys() {
		meta[k] = md.Values()[i]
	}
	return meta
}

// readNodes reads the rows of every record batch of r (columns col), at
// most MaxRows of them.
func readNodes(r *ipc.FileReader, col []int, path string) (*Policy, error) {
	p := &Policy{}
	for b := 0; b < r.NumRecords(); b++ {
		if err := p.readRecord(r, b, col, path); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// readRecord appends the rows of record batch b to the policy (col: the
// columns' indexes), an error past MaxRows rows.
func (p *Policy) readRecord(r *ipc.FileReader, b int, col []int, path string) error {
	rec, err := r.Record(b)
	if err != nil {
		return fmt.Errorf("%w: %s: record batch %d: %v", ErrFile, path, b, err)
	}
	if err := appendNodes(p, rec, col, path); err != nil {
		return err
	}
	if len(p.Nodes) > MaxRows {
		return fmt.Errorf("%w: %s: more than %d rows, the most a policy table may hold", ErrFile, path, MaxRows)
	}
	return nil
}

// deepestStep is the largest step of p's rows (0 for none).
func (p *Policy) deepestStep() int {
	maxStep := 0
	for i := range p.Nodes {
		maxStep = max(maxStep, int(p.Nodes[i].Step))
	}
	return maxStep
}

// setHorizon sets p's horizon from the metadata, which must not be below
// the deepest step, or else to the deepest step.
func (p *Policy) setHorizon(meta map[string]string, path string) error {
	maxStep := p.deepestStep()
	p.Horizon = maxStep
	if v, ok := meta[MetaHorizon]; ok {
		h, err := strconv.Atoi(v)
		if err != nil || h < maxStep {
			return fmt.Errorf("%w: %s: metadata %s = %q is not a horizon ≥ the deepest step %d", ErrFile, path, MetaHorizon, v, maxStep)
		}
		p.Horizon = h
	}
	return nil
}

// attachController attaches the controller beside policy.arrow, when
// the run wrote one (ControllerBeside).
func attachController(p *Policy, path string) error {
	c, err := ControllerBeside(path)
	if err != nil || c == nil {
		return err
	}
	if p.Stochastic() {
		return fmt.Errorf("%w: %s has a probability column, but a stochastic policy has no controller (%s)", ErrFile, path, filepath.Join(filepath.Dir(path), ControllerFileName))
	}
	if c.Horizon() != p.Horizon {
		return fmt.Errorf("%w: %s is for horizon %d, %s for %d", ErrFile, filepath.Join(filepath.Dir(path), ControllerFileName), c.Horizon(), path, p.Horizon)
	}
	p.Ctrl = c
	return nil
}

// ControllerBeside reads the controller of the run that wrote the policy
// at path (policy.arrow or its run directory), with the run's
// model.arrow; nil when the run has none (an exact plan, or a run of an
// earlier version, whose table and fallback_action are the whole policy).
func ControllerBeside(path string) (*Controller, error) {
	dir := runDir(path)
	cpath := filepath.Join(dir, ControllerFileName)
	if _, err := os.Stat(cpath); err != nil {
		return nil, nil
	}
	m, err := estimate.ReadModel(filepath.Join(dir, "model.arrow"))
	if err != nil {
		return nil, fmt.Errorf("%w: %s needs the run's model.arrow: %v", ErrFile, cpath, err)
	}
	return ReadController(cpath, m)
}

// runDir is the run directory of the policy at path: path itself when
// it is a directory, else the directory holding it.
func runDir(path string) string {
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		return filepath.Dir(path)
	}
	return path
}

// appendNodes copies the rows of one record batch (owned by the reader)
// into p.
func appendNodes(p *Policy, rec arrow.Record, col []int, path string) error {
	first := len(p.Nodes)
	for j, c := range col {
		if n := rec.Column(c).NullN(); n > 0 {
			return fmt.Errorf("%w: %s: column %q has %d nulls (first batch row %d)", ErrFile, path, columnName(j), n, first)
		}
	}
	nc := newNodeColumns(rec, col)
	for i := 0; i < int(rec.NumRows()); i++ {
		p.Nodes = append(p.Nodes, nc.row(i))
	}
	if len(col) > len(fileFields) {
		// The probability column, NaN-free nulls checked above.
		p.Probs = append(p.Probs, rec.Column(col[len(fileFields)]).(*array.Float64).Float64Values()...)
	}
	return nil
}

// columnName is the name of the j-th column read: fileFields', then
// probField.
func columnName(j int) string {
	if j < len(fileFields) {
		return fileFields[j].Name
	}
	return probField.Name
}

// nodeColumns are the typed columns of a policy.arrow record batch.
type nodeColumns struct {
	node, parent *array.Int64
	step         *array.Int32
	obs, act, fb *array.String
	fl           [4]*array.Float64 // reach_prob, value_reward, value_bonus, value_lcb
}

// newNodeColumns returns the columns col (in fileFields' order) of rec.
func newNodeColumns(rec arrow.Record, col []int) *nodeColumns {
	nc := &nodeColumns{
		node:   rec.Column(col[0]).(*array.Int64),
		parent: rec.Column(col[1]).(*array.Int64),
		step:   rec.Column(col[2]).(*array.Int32),
		obs:    rec.Column(col[3]).(*array.String),
		act:    rec.Column(col[4]).(*array.String),
		fb:     rec.Column(col[5]).(*array.String),
	}
	for k := range nc.fl {
		nc.fl[k] = rec.Column(col[6+k]).(*array.Float64)
	}
	return nc
}

// row returns row i.
func (nc *nodeColumns) row(i int) Node {
	n := Node{
		ID:          nc.node.Value(i),
		Parent:      nc.parent.Value(i),
		Step:        nc.step.Value(i),
		ReachProb:   nc.fl[0].Value(i),
		ValueReward: nc.fl[1].Value(i),
		ValueBonus:  nc.fl[2].Value(i),
		ValueLCB:    nc.fl[3].Value(i),
	}
	// String.Value points into the batch's buffers, which the reader
	// frees: copy the strings out.
	n.Obs = strings.Clone(nc.obs.Value(i))
	n.Action = strings.Clone(nc.act.Value(i))
	n.Fallback = strings.Clone(nc.fb.Value(i))
	return n
}

// check validates the tree layout that Cursor relies on; name is the file
// for messages.
func (p *Policy) check(name string) error {
	if p.Stochastic() {
		return p.checkStochastic(name)
	}
	dup, first := p.repeatedObs()
	for i := range p.Nodes {
		if err := p.checkNode(name, i, dup, first); err != nil {
			return err
		}
	}
	return nil
}

// checkNode checks row i of the table name (checkRow) and that it is not
// dup, the first row repeating the observation of row first under the
// same parent.
func (p *Policy) checkNode(name string, i, dup, first int) error {
	n := &p.Nodes[i]
	row := func(format string, args ...any) error {
		return rowError(name, i, n.ID, format, args...)
	}
	if err := p.checkRow(i, row); err != nil {
		return err
	}
	if i == dup {
		return row("observation %q repeats row %d under the same parent", n.Obs, first)
	}
	return nil
}

// checkRow checks row i's node id, its parent and step, and that its
// values are finite; row formats the error.
func (p *Policy) checkRow(i int, row func(string, ...any) error) error {
	n := &p.Nodes[i]
	if n.ID != int64(i) {
		return row("node is %d, want the row index %d", n.ID, i)
	}
	if err := p.checkParent(i, row); err != nil {
		return err
	}
	return checkFinite(n, row)
}

// checkFinite checks that node n's reach probability and values are not
// infinite.
func checkFinite(n *Node, row func(string, ...any) error) error {
	for _, v := range []float64{n.ReachProb, n.ValueReward, n.ValueBonus, n.ValueLCB} {
		if math.IsInf(v, 0) {
			return row("infinite value %v", v)
		}
	}
	return nil
}

// checkParent checks that row i's parent precedes it and that its step
// is one more than its parent's (1 under parent −1).
func (p *Policy) checkParent(i int, row func(string, ...any) error) error {
	n := &p.Nodes[i]
	switch {
	case n.Parent == -1:
		if n.Step != 1 {
			return row("step %d under parent −1, want 1", n.Step)
		}
	case n.Parent < 0 || n.Parent >= int64(i):
		return row("parent %d does not precede the node", n.Parent)
	default:
		if ps := p.Nodes[n.Parent].Step; n.Step != ps+1 {
			return row("step %d, but its parent %d is at step %d", n.Step, n.Parent, ps)
		}
	}
	return nil
}

// repeatedObs returns the first row (in file order) whose (parent,
// observation) repeats an earlier row's, and that earlier row's first
// occurrence; −1, −1 when none does. The rows are sorted by (parent,
// observation, row), so a repeat follows its group's first row: a sort
// of 4-byte row numbers, where a map of (parent, observation) keys would
// take gigabytes on tables of millions of rows.
func (p *Policy) repeatedObs() (dup, first int) {
	idx := p.byParentObs()
	dup, first = -1, -1
	start := 0 // the first position of the current group
	for k := 1; k < len(idx); k++ {
		a, b := &p.Nodes[idx[k-1]], &p.Nodes[idx[k]]
		if a.Parent != b.Parent || a.Obs != b.Obs {
			start = k
			continue
		}
		if k == start+1 && (dup < 0 || int(idx[k]) < dup) {
			dup, first = int(idx[k]), int(idx[start])
		}
	}
	return dup, first
}

// byParentObs returns the row numbers sorted by (parent, observation,
// row).
func (p *Policy) byParentObs() []int32 {
	idx := make([]int32, len(p.Nodes))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		na, nb := &p.Nodes[a], &p.Nodes[b]
		return cmp.Or(cmp.Compare(na.Parent, nb.Parent), strings.Compare(na.Obs, nb.Obs), cmp.Compare(a, b))
	})
	return idx
}

// checkStochastic validates a stochastic policy: every row as check
// does, a probability in (0, 1] per row, and under each parent and
// observation distinct actions whose probabilities sum to one.
func (p *Policy) checkStochastic(name string) error {
	if len(p.Probs) != len(p.Nodes) {
		return fmt.Errorf("%w: %s: %d probabilities for %d rows", ErrFile, name, len(p.Probs), len(p.Nodes))
	}
	for i := range p.Nodes {
		row := func(format string, args ...any) error { return rowError(name, i, p.Nodes[i].ID, format, args...) }
		if err := p.checkRow(i, row); err != nil {
			return err
		}
		if q := p.Probs[i]; !(q > 0 && q <= 1) {
			return row("probability %v, want one in (0, 1]", q)
		}
	}
	return p.checkGroups(name)
}

// checkGroups checks, for each parent and observation of a stochastic
// policy, that its rows have distinct actions and probabilities summing
// to one.
func (p *Policy) checkGroups(name string) error {
	idx := p.byParentObs()
	for lo := 0; lo < len(idx); {
		hi := lo + 1
		for hi < len(idx) && p.Nodes[idx[hi]].Parent == p.Nodes[idx[lo]].Parent && p.Nodes[idx[hi]].Obs == p.Nodes[idx[lo]].Obs {
			hi++
		}
		if err := p.checkGroup(name, idx[lo:hi]); err != nil {
			return err
		}
		lo = hi
	}
	return nil
}

// checkGroup checks the rows g of one parent and observation.
func (p *Policy) checkGroup(name string, g []int32) error {
	sum := 0.0
	seen := make(map[string]int32, len(g))
	for _, r := range g {
		n := &p.Nodes[r]
		if prev, dup := seen[n.Action]; dup {
			return rowError(name, int(r), n.ID, "action %q repeats row %d under the same parent and observation", n.Action, prev)
		}
		seen[n.Action] = r
		sum += p.Probs[r]
	}
	if math.Abs(sum-1) > probTolerance {
		last := g[len(g)-1]
		return rowError(name, int(last), p.Nodes[last].ID, "the probabilities of the actions at observation %q under parent %d sum to %v, want 1", p.Nodes[last].Obs, p.Nodes[last].Parent, sum)
	}
	return nil
}

func rowError(name string, i int, id int64, format string, args ...any) error {
	return fmt.Errorf("%w: %s: row %d (node %d): %s", ErrFile, name, i, id, fmt.Sprintf(format, args...))
}
