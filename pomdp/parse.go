package pomdp

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// ParseFile reads a POMDP in Cassandra's .POMDP format from path.
func ParseFile(path string) (*POMDP, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads a POMDP in Cassandra's .POMDP format (the format of
// pomdp-solve and of the published example models); name is used in error
// messages. The whole grammar is accepted:
//
//   - the preamble "discount:", "values: reward|cost" (costs are negated),
//     "states:", "actions:", "observations:" as a count (elements are then
//     named "0", "1", …) or a list of names, in any order;
//   - "start:" followed by |S| probabilities, "uniform", or one state;
//     "start include: s…" and "start exclude: s…" (uniform over the listed
//     states, or over the others); without any start, uniform;
//   - "T:", "O:" and "R:" entries in single-entry, row and matrix forms,
//     with "*" standing for every element in any position, the keywords
//     "uniform" and "identity" for matrices and "uniform" and "reset" for
//     rows ("reset": the next state is drawn from the start distribution);
//   - later entries override earlier ones; elements may be referred to by
//     name or by 0-based number; '#' starts a comment; line breaks and
//     spaces around ':' do not matter.
//
// Every transition and observation row must sum to 1 within 1e-5 (it is then
// renormalised); errors name the file and the line. An observation may not
// be called "init" (InitSymbol), the fixed first observation.
func Parse(r io.Reader, name string) (*POMDP, error) {
	toks, err := tokenize(r, name)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, name: name, m: &POMDP{Name: name, Discount: 1}}
	return p.parse()
}

type token struct {
	s    string
	line int
}

// maxFileBytes bounds the size of a .POMDP text, so that a wrong path (a
// multi-gigabyte log, say) fails fast instead of filling memory; the largest
// published models are a few megabytes.
const maxFileBytes = 1 << 30

// tokenizer splits a .POMDP text into tokens: ':' is a token of its own,
// white space separates tokens and '#' starts a comment to the end of the
// line.
type tokenizer struct {
	br      *bufio.Reader
	name    string
	toks    []token
	cur     strings.Builder
	line    int // the line being read
	curLine int // the line where the current token started
	total   int // bytes read outside comments
}

// tokenize reads all the tokens of r, with the line of each; name is used
// in error messages.
func tokenize(r io.Reader, name string) ([]token, error) {
	z := &tokenizer{
		br:   bufio.NewReader(io.LimitReader(r, maxFileBytes+1)),
		name: name, line: 1, curLine: 1,
	}
	if err := z.readAll(); err != nil {
		return nil, err
	}
	z.flush()
	return z.toks, nil
}

// readAll reads and handles every byte of the text, up to the end of it.
func (z *tokenizer) readAll() error {
	for {
		c, err := z.br.ReadByte()
		if err != nil {
			return z.readErr(err)
		}
		if err := z.count(); err != nil {
			return err
		}
		z.add(c)
	}
}

// readErr is the error of a failed read: none at the end of the text,
// else err with the name of the file.
func (z *tokenizer) readErr(err error) error {
	if err == io.EOF {
		return nil
	}
	return fmt.Errorf("%s: %w", z.name, err)
}

// count counts one byte read and fails once the text exceeds maxFileBytes.
func (z *tokenizer) count() error {
	z.total++
	if z.total > maxFileBytes {
		return fmt.Errorf("%w: %s: larger than %d bytes", ErrSyntax, z.name, maxFileBytes)
	}
	return nil
}

// flush ends the current token, if any.
func (z *tokenizer) flush() {
	if z.cur.Len() > 0 {
		z.toks = append(z.toks, token{z.cur.String(), z.curLine})
		z.cur.Reset()
	}
}

// add handles the byte c: it ends, extends or starts a token, or skips a
// comment.
func (z *tokenizer) add(c byte) {
	switch {
	case c == '#':
		z.flush()
		z.skipComment()
	case c == ':':
		z.flush()
		z.toks = append(z.toks, token{":", z.line})
	case c == '\n':
		z.flush()
		z.line++
	case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
		z.flush()
	default:
		if z.cur.Len() == 0 {
			z.curLine = z.line
		}
		z.cur.WriteByte(c)
	}
}

// skipComment reads up to and including the end of the line; its bytes
// are not counted against maxFileBytes.
func (z *tokenizer) skipComment() {
	for {
		c, err := z.br.ReadByte()
		if err != nil {
			return
		}
		if c == '\n' {
			z.line++
			return
		}
	}
}

// keywords end name lists: they cannot be names.
var keywords = map[string]bool{
	"discount": true, "values": true, "states": true, "actions": true,
	"observations": true, "start": true, "T": true, "O": true, "R": true,
}

type parser struct {
	toks []token
	pos  int
	name string
	m    *POMDP

	idx        [3]map[string]int // states, actions, observations
	declared   [3]bool
	declLine   [3]int
	cost       bool
	startLine  int
	sawParams  bool
	tLine      [][]int // tLine[a][s]: last line that set row T[a][s]
	oLine      [][]int
	resetRows  [][]bool // T[a][s] is "reset" (filled with Start at the end)
	lastLine   int
	allocated  bool
	startSpecs bool
	// numLines[i] is the line of the i-th number of the last row or matrix
	// read, so that a row that does not sum to 1 is reported where it is.
	numLines []int
}

const (
	kState = iota
	kAction
	kObs
)

var kindName = [3]string{"state", "action", "observation"}

func (p *parser) errorf(line int, format string, args ...any) error {
	return fmt.Errorf("%w: %s:%d: %s", ErrSyntax, p.name, line, fmt.Sprintf(format, args...))
}

func (p *parser) eof() bool { return p.pos >= len(p.toks) }

func (p *parser) peek() (token, bool) {
	if p.eof() {
		return token{}, false
	}
	return p.toks[p.pos], true
}

func (p *parser) next() (token, bool) {
	t, ok := p.peek()
	if ok {
		p.pos++
		p.lastLine = t.line
	}
	return t, ok
}

func (p *parser) expectColon(after string) error {
	t, ok := p.next()
	if !ok {
		return p.errorf(p.lastLine, "unexpected end of file: expected ':' after %q", after)
	}
	if t.s != ":" {
		return p.errorf(t.line, "expected ':' after %q, found %q", after, t.s)
	}
	return nil
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	c := s[0]
	return c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+'
}

func isInt(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (p *parser) number(what string) (float64, int, error) {
	t, ok := p.next()
	if !ok {
		return 0, p.lastLine, p.errorf(p.lastLine, "unexpected end of file: expected %s", what)
	}
	if !isNumber(t.s) {
		return 0, t.line, p.errorf(t.line, "expected %s, found %q", what, t.s)
	}
	v, err := strconv.ParseFloat(t.s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, t.line, p.errorf(t.line, "%q is not a number", t.s)
	}
	return v, t.line, nil
}

// numbers reads exactly n numbers (a row or matrix); probs also checks that
// each lies in [0,1].
func (p *parser) numbers(n int, probs bool, what string, startLine int) ([]float64, error) {
	out := make([]float64, n)
	p.numLines = p.numLines[:0]
	for i := range n {
		if t, ok := p.peek(); !ok || !isNumber(t.s) {
			return nil, p.truncated(what, startLine, n, i)
		}
		v, err := p.rowNumber(probs, what)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// rowNumber reads one number of a row or matrix (what) and records its
// line; probs also checks that it lies in [0,1].
func (p *parser) rowNumber(probs bool, what string) (float64, error) {
	v, line, err := p.number("a number")
	if err != nil {
		return 0, err
	}
	if probs && !(v >= 0 && v <= 1) {
		return 0, p.errorf(line, "%s: probability %v is outside [0,1]", what, v)
	}
	p.numLines = append(p.numLines, line)
	return v, nil
}

// truncated reports a row or matrix (what, from startLine) of n numbers
// that ends after i of them, naming the token found instead.
func (p *parser) truncated(what string, startLine, n, i int) error {
	t, ok := p.peek()
	found := "end of file"
	line := p.lastLine
	if ok {
		found = strconv.Quote(t.s)
		line = t.line
	}
	return p.errorf(line, "%s (from line %d): expected %d numbers, found %d before %s (truncated row or matrix?)", what, startLine, n, i, found)
}

// ref reads a reference to a state, action or observation: a name, a
// 0-based number or '*' (all of them).
func (p *parser) ref(kind int) ([]int, string, error) {
	t, ok := p.next()
	if !ok {
		return nil, "", p.errorf(p.lastLine, "unexpected end of file: expected %s", kindName[kind])
	}
	n := p.count(kind)
	if t.s == "*" {
		return indices(n), "*", nil
	}
	if i, ok := p.idx[kind][t.s]; ok {
		return []int{i}, t.s, nil
	}
	return p.refOther(t, kind, n)
}

// refOther reads the reference t of kind that is neither '*' nor a name:
// a 0-based number below n, or an error.
func (p *parser) refOther(t token, kind, n int) ([]int, string, error) {
	if isInt(t.s) {
		return p.refNumber(t, kind, n)
	}
	if t.s == ":" {
		return nil, "", p.errorf(t.line, "expected %s, found ':'", kindName[kind])
	}
	return nil, "", p.errorf(t.line, "unknown %s %q", kindName[kind], t.s)
}

// refNumber reads the reference t by its 0-based number, which must be
// below n, the count of its kind.
func (p *parser) refNumber(t token, kind, n int) ([]int, string, error) {
	i, err := strconv.Atoi(t.s)
	if err != nil || i >= n {
		return nil, "", p.errorf(t.line, "%s number %s is out of range (there are %d)", kindName[kind], t.s, n)
	}
	return []int{i}, t.s, nil
}

// count is the number of states, actions or observations (kind).
func (p *parser) count(kind int) int {
	switch kind {
	case kState:
		return len(p.m.States)
	case kAction:
		return len(p.m.Actions)
	default:
		return len(p.m.Observations)
	}
}

// parse reads every entry, then completes and checks the model.
func (p *parser) parse() (*POMDP, error) {
	for !p.eof() {
		t, _ := p.next()
		if err := p.entry(t); err != nil {
			return nil, err
		}
	}
	return p.finish()
}

// entry reads the entry or declaration that starts with the keyword t.
func (p *parser) entry(t token) error {
	switch t.s {
	case "discount":
		return p.discount(t)
	case "values":
		return p.values(t)
	case "states":
		return p.declare(t, kState)
	case "actions":
		return p.declare(t, kAction)
	case "observations":
		return p.declare(t, kObs)
	case "start":
		return p.start(t)
	case "T":
		return p.trans(t)
	case "O":
		return p.obs(t)
	case "R":
		return p.reward(t)
	default:
		return p.errorf(t.line, "unexpected %q: expected discount, values, states, actions, observations, start, T, O or R", t.s)
	}
}

// preamble checks that a preamble keyword (t) comes before the entries and
// reads its ':'.
func (p *parser) preamble(t token) error {
	if p.sawParams {
		return p.errorf(t.line, "%q must come before the T:, O: and R: entries", t.s)
	}
	return p.expectColon(t.s)
}

func (p *parser) discount(t token) error {
	if err := p.preamble(t); err != nil {
		return err
	}
	v, line, err := p.number("the discount factor")
	if err != nil {
		return err
	}
	if v < 0 || v > 1 {
		return p.errorf(line, "discount %v is outside [0,1]", v)
	}
	p.m.Discount = v
	return nil
}

func (p *parser) values(t token) error {
	if err := p.preamble(t); err != nil {
		return err
	}
	v, ok := p.next()
	if !ok {
		return p.errorf(t.line, "unexpected end of file: expected reward or cost")
	}
	cost, err := p.costOf(v)
	if err != nil {
		return err
	}
	p.cost = cost
	return nil
}

// costOf reads the word v after "values:": whether the entries are costs
// ("cost") rather than rewards ("reward").
func (p *parser) costOf(v token) (bool, error) {
	switch v.s {
	case "reward":
		return false, nil
	case "cost":
		return true, nil
	}
	return false, p.errorf(v.line, "values must be reward or cost, found %q", v.s)
}

// declare reads the "states:", "actions:" or "observations:" declaration
// (kind): a count or a list of names.
func (p *parser) declare(t token, kind int) error {
	if err := p.declareOnce(t, kind); err != nil {
		return err
	}
	p.declared[kind] = true
	p.declLine[kind] = t.line
	names, err := p.elements(t, kind)
	if err != nil {
		return err
	}
	p.setNames(kind, names)
	return nil
}

// elements reads the names of the elements that the declaration t of
// kind declares: by a count (then named "0", "1", …) or as a list.
func (p *parser) elements(t token, kind int) ([]string, error) {
	if n, ok := p.peek(); ok && isNumber(n.s) {
		return p.declareCount(n, kind)
	}
	return p.declareNames(t, kind)
}

// declareOnce checks that the declaration t of kind comes in the preamble,
// for the first time, and (for states) before start.
func (p *parser) declareOnce(t token, kind int) error {
	if err := p.preamble(t); err != nil {
		return err
	}
	if p.declared[kind] {
		return p.errorf(t.line, "%ss declared twice (first on line %d)", kindName[kind], p.declLine[kind])
	}
	if p.startSpecs && kind == kState {
		return p.errorf(t.line, "states must be declared before start")
	}
	return nil
}

// declareCount reads the count n of a declaration and names the elements
// "0", "1", ….
func (p *parser) declareCount(n token, kind int) ([]string, error) {
	p.next()
	if !isInt(n.s) {
		return nil, p.errorf(n.line, "number of %ss must be a positive integer, found %q", kindName[kind], n.s)
	}
	c, err := strconv.Atoi(n.s)
	if err != nil || c <= 0 || c > maxDense {
		return nil, p.errorf(n.line, "number of %ss must be a positive integer, found %q", kindName[kind], n.s)
	}
	return numberNames(c), nil
}

// numberNames names c elements "0", "1", ….
func numberNames(c int) []string {
	names := make([]string, c)
	for i := range names {
		names[i] = strconv.Itoa(i)
	}
	return names
}

// declareNames reads the list of names of a declaration, up to the next
// keyword, and indexes them.
func (p *parser) declareNames(t token, kind int) ([]string, error) {
	p.idx[kind] = make(map[string]int)
	names, err := p.nameList(kind)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, p.errorf(t.line, "%ss: expected a count or a list of names", kindName[kind])
	}
	return names, nil
}

// nameList reads the names of kind up to the next keyword, checking and
// indexing each.
func (p *parser) nameList(kind int) ([]string, error) {
	var names []string
	for p.inList() {
		n, _ := p.next()
		if err := p.checkName(n, kind); err != nil {
			return nil, err
		}
		p.idx[kind][n.s] = len(names)
		names = append(names, n.s)
	}
	return names, nil
}

// inList reports whether a token follows that is not a keyword: a list of
// names or states goes on.
func (p *parser) inList() bool {
	n, ok := p.peek()
	return ok && !keywords[n.s]
}

// checkName checks that n is a valid name of kind, not listed before.
func (p *parser) checkName(n token, kind int) error {
	if n.s == ":" || n.s == "*" || isNumber(n.s) {
		return p.errorf(n.line, "%q is not a valid %s name (names start with a letter)", n.s, kindName[kind])
	}
	if first, dup := p.idx[kind][n.s]; dup {
		return p.errorf(n.line, "%s %q is listed twice (also %s number %d)", kindName[kind], n.s, kindName[kind], first)
	}
	return nil
}

// setNames stores the names of the states, actions or observations (kind).
func (p *parser) setNames(kind int, names []string) {
	switch kind {
	case kState:
		p.m.States = names
	case kAction:
		p.m.Actions = names
	case kObs:
		p.m.Observations = names
	}
}

// alloc creates the tables once the three sets are known.
func (p *parser) alloc(line int) error {
	if p.allocated {
		return nil
	}
	if err := p.checkDeclared(line); err != nil {
		return err
	}
	m := p.m
	S, A, O := len(m.States), len(m.Actions), len(m.Observations)
	if float64(A)*float64(S)*float64(S)*float64(O) > maxDense {
		return p.errorf(line, "%d actions × %d² states × %d observations is too large for dense tables", A, S, O)
	}
	p.allocTables(A, S, O)
	p.allocated = true
	return nil
}

// checkDeclared checks that the states, actions and observations are all
// declared before the entry on line.
func (p *parser) checkDeclared(line int) error {
	for k := range 3 {
		if !p.declared[k] {
			return p.errorf(line, "%ss must be declared before start, T:, O: and R:", kindName[k])
		}
	}
	return nil
}

// allocTables creates the zero tables for A actions, S states and O
// observations, and the records of the lines and reset rows.
func (p *parser) allocTables(A, S, O int) {
	m := p.m
	m.T = make([][][]float64, A)
	m.O = make([][][]float64, A)
	p.tLine = make([][]int, A)
	p.oLine = make([][]int, A)
	p.resetRows = make([][]bool, A)
	for a := range A {
		p.allocAction(a, S, O)
	}
	m.Reward = make([]float64, A*S*S*O)
}

// allocAction creates the zero transition and observation rows of action
// a and their line and reset records, for S states and O observations.
func (p *parser) allocAction(a, S, O int) {
	m := p.m
	m.T[a] = make([][]float64, S)
	m.O[a] = make([][]float64, S)
	for s := range S {
		m.T[a][s] = make([]float64, S)
		m.O[a][s] = make([]float64, O)
	}
	p.tLine[a] = make([]int, S)
	p.oLine[a] = make([]int, S)
	p.resetRows[a] = make([]bool, S)
}

// start reads "start:", "start include:" or "start exclude:" and the start
// distribution that follows.
func (p *parser) start(t token) error {
	if err := p.startOnce(t); err != nil {
		return err
	}
	if err := p.alloc(t.line); err != nil {
		return err
	}
	p.startSpecs = true
	p.startLine = t.line
	mode, err := p.startMode()
	if err != nil {
		return err
	}
	if mode != "" {
		return p.startSet(t, mode)
	}
	return p.startDist(t)
}

// startMode reads "include" or "exclude" when one follows "start", and
// the ':' after it.
func (p *parser) startMode() (string, error) {
	mode := p.keyword("include", "exclude")
	return mode, p.expectColon("start")
}

// startOnce checks that the start t comes before the entries, for the
// first time.
func (p *parser) startOnce(t token) error {
	if p.sawParams {
		return p.errorf(t.line, "start must come before the T:, O: and R: entries")
	}
	if p.startSpecs {
		return p.errorf(t.line, "start given twice (first on line %d)", p.startLine)
	}
	return nil
}

// startDist reads the distribution after "start:": "uniform", |S|
// probabilities or one state.
func (p *parser) startDist(t token) error {
	n, ok := p.peek()
	if !ok {
		return p.errorf(t.line, "unexpected end of file after start:")
	}
	switch {
	case n.s == "uniform":
		p.next()
		p.m.Start = uniform(len(p.m.States))
		return nil
	case isNumber(n.s):
		return p.startNumbers(t, n)
	default:
		return p.startState()
	}
}

// startNumbers reads |S| start probabilities; a lone integer followed by
// something else is a state number.
func (p *parser) startNumbers(t, n token) error {
	S := len(p.m.States)
	k := p.numbersAhead(S)
	if k < S && k == 1 && S > 1 && isInt(n.s) {
		return p.startState()
	}
	v, err := p.numbers(S, true, "start", t.line)
	if err != nil {
		return err
	}
	p.m.Start = v
	return nil
}

// numbersAhead counts the numbers that follow, up to S of them.
func (p *parser) numbersAhead(S int) int {
	k := 0
	for k < S && p.pos+k < len(p.toks) && isNumber(p.toks[p.pos+k].s) {
		k++
	}
	return k
}

// startState reads one state, the start with certainty, or '*', a uniform
// start.
func (p *parser) startState() error {
	S := len(p.m.States)
	ss, name, err := p.ref(kState)
	if err != nil {
		return err
	}
	if name == "*" {
		p.m.Start = uniform(S)
		return nil
	}
	p.m.Start = make([]float64, S)
	p.m.Start[ss[0]] = 1
	return nil
}

// startSet reads the states of `start include:` or `start exclude:`
// (mode) and sets a uniform start over the states included (or not
// excluded).
func (p *parser) startSet(t token, mode string) error {
	in, count, err := p.startStates()
	if err != nil {
		return err
	}
	if mode == "exclude" {
		count = invert(in, count)
	}
	if count == 0 {
		return p.emptyStart(t, mode)
	}
	p.m.Start = uniformOver(in, count)
	return nil
}

// invert turns the count states marked in in into the others, and returns
// their count.
func invert(in []bool, count int) int {
	for s := range in {
		in[s] = !in[s]
	}
	return len(in) - count
}

// emptyStart reports a `start include:` that lists no state, or a `start
// exclude:` (mode) that excludes every state.
func (p *parser) emptyStart(t token, mode string) error {
	if mode == "include" {
		return p.errorf(t.line, "start include: expected at least one state")
	}
	return p.errorf(t.line, "start exclude: every state is excluded")
}

// uniformOver is the uniform distribution over the count states marked
// in in.
func uniformOver(in []bool, count int) []float64 {
	u := make([]float64, len(in))
	for s := range in {
		if in[s] {
			u[s] = 1 / float64(count)
		}
	}
	return u
}

// startStates reads the states listed after `start include:` or `start
// exclude:`, up to the next keyword: which states are listed and how many.
func (p *parser) startStates() ([]bool, int, error) {
	in := make([]bool, len(p.m.States))
	count := 0
	for p.inList() {
		ss, _, err := p.ref(kState)
		if err != nil {
			return nil, 0, err
		}
		count += mark(in, ss)
	}
	return in, count, nil
}

// mark marks the states ss in in and returns how many were not marked
// before.
func mark(in []bool, ss []int) int {
	added := 0
	for _, s := range ss {
		if !in[s] {
			in[s] = true
			added++
		}
	}
	return added
}

// uniform returns the uniform distribution over n elements.
func uniform(n int) []float64 {
	u := make([]float64, n)
	for i := range u {
		u[i] = 1 / float64(n)
	}
	return u
}

// indices returns 0, 1, …, n-1.
func indices(n int) []int {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	return all
}

// entryHead reads "X:" and the action, and reports whether a ':' follows.
func (p *parser) entryHead(t token) ([]int, error) {
	if err := p.alloc(t.line); err != nil {
		return nil, err
	}
	p.sawParams = true
	if err := p.expectColon(t.s); err != nil {
		return nil, err
	}
	as, _, err := p.ref(kAction)
	return as, err
}

func (p *parser) colonNext() bool {
	if n, ok := p.peek(); ok && n.s == ":" {
		p.next()
		return true
	}
	return false
}

// keyword consumes the next token if it is one of the given keywords.
func (p *parser) keyword(words ...string) string {
	n, ok := p.peek()
	if !ok {
		return ""
	}
	for _, w := range words {
		if n.s == w {
			p.next()
			return w
		}
	}
	return ""
}

// trans reads a "T:" entry: a matrix, a row or a single probability.
func (p *parser) trans(t token) error {
	return p.probEntry(t, entryForms{p.transMatrix, p.transRow, p.setTransEntries, kState})
}

// entryForms are the forms of a "T:" or "O:" entry: how to read its
// matrix and row forms, how to set its single-entry form, and the kind of
// the last reference of that form (a next state or an observation).
type entryForms struct {
	matrix func(t token, as []int) error
	row    func(t token, as, ss []int) error
	set    func(as, ss, last []int, v float64, line int)
	last   int
}

// probEntry reads a "T:" or "O:" entry (forms f): a matrix after the
// action, a row after the state, or a single probability after the last
// reference.
func (p *parser) probEntry(t token, f entryForms) error {
	as, err := p.entryHead(t)
	if err != nil {
		return err
	}
	if !p.colonNext() {
		return f.matrix(t, as)
	}
	ss, _, err := p.ref(kState)
	if err != nil {
		return err
	}
	if !p.colonNext() {
		return f.row(t, as, ss)
	}
	return p.probSingle(t, f, as, ss)
}

// probSingle reads the rest of the single-entry form of a "T:" or "O:"
// entry (forms f), after the action (as) and the state (ss): the last
// reference and the probability.
func (p *parser) probSingle(t token, f entryForms, as, ss []int) error {
	last, _, err := p.ref(f.last)
	if err != nil {
		return err
	}
	v, err := p.probability()
	if err != nil {
		return err
	}
	f.set(as, ss, last, v, t.line)
	return nil
}

// probability reads one probability and checks that it lies in [0,1].
func (p *parser) probability() (float64, error) {
	v, line, err := p.number("a probability")
	if err != nil {
		return 0, err
	}
	if !(v >= 0 && v <= 1) {
		return 0, p.errorf(line, "probability %v is outside [0,1]", v)
	}
	return v, nil
}

// setTransEntries sets T[a][s][s'] to v for every a in as, s in ss and s'
// in s2s, given on line.
func (p *parser) setTransEntries(as, ss, s2s []int, v float64, line int) {
	forPairs(as, ss, func(a, s int) {
		p.materialise(a, s)
		for _, s2 := range s2s {
			p.m.T[a][s][s2] = v
		}
		p.tLine[a][s] = line
	})
}

// materialise fills the transition row of (a, s) from the start if it is
// a reset row, which it then no longer is.
func (p *parser) materialise(a, s int) {
	if p.resetRows[a][s] {
		// Overriding one entry of a reset row keeps the rest
		// of it: materialise the row now.
		copy(p.m.T[a][s], p.m.Start)
		p.resetRows[a][s] = false
	}
}

// setTrans sets the transition row of (a, s), the line it was given on
// and whether it is a reset row (filled from the start in finish).
func (p *parser) setTrans(a, s int, row []float64, reset bool, line int) {
	copy(p.m.T[a][s], row)
	p.tLine[a][s] = line
	p.resetRows[a][s] = reset
}

// transMatrix reads `T: a` followed by a matrix, uniform or identity.
func (p *parser) transMatrix(t token, as []int) error {
	S := len(p.m.States)
	switch p.keyword("uniform", "identity") {
	case "uniform":
		u := uniform(S)
		p.setTransRows(as, func(int) ([]float64, int) { return u, t.line })
	case "identity":
		p.setTransRows(as, func(s int) ([]float64, int) { return unitRow(S, s), t.line })
	default:
		return p.transNumbers(t, as)
	}
	return nil
}

// unitRow is the row of n entries that puts all the mass on s.
func unitRow(n, s int) []float64 {
	row := make([]float64, n)
	row[s] = 1
	return row
}

// transNumbers reads the |S|×|S| probabilities of `T: a` and sets the
// rows of every action in as.
func (p *parser) transNumbers(t token, as []int) error {
	S := len(p.m.States)
	v, err := p.numbers(S*S, true, "T matrix", t.line)
	if err != nil {
		return err
	}
	p.setTransRows(as, func(s int) ([]float64, int) { return v[s*S : (s+1)*S], p.numLines[s*S] })
	return nil
}

// setTransRows sets the transition row of (a, s), for every a in as and
// every state s, to the row that row(s) returns, given on the line it
// returns.
func (p *parser) setTransRows(as []int, row func(s int) ([]float64, int)) {
	forPairs(as, indices(len(p.m.States)), func(a, s int) {
		r, line := row(s)
		p.setTrans(a, s, r, false, line)
	})
}

// forPairs calls f for every a in as and s in ss, a in the outer loop.
func forPairs(as, ss []int, f func(a, s int)) {
	for _, a := range as {
		for _, s := range ss {
			f(a, s)
		}
	}
}

// transRow reads `T: a : s` followed by a row, uniform or reset.
func (p *parser) transRow(t token, as, ss []int) error {
	row, reset, line, err := p.transRowValues(t)
	if err != nil {
		return err
	}
	forPairs(as, ss, func(a, s int) { p.setTrans(a, s, row, reset, line) })
	return nil
}

// transRowValues reads the row of a `T: a : s` entry: uniform, reset (a
// row filled from Start in finish) or |S| probabilities, and the line it
// was given on.
func (p *parser) transRowValues(t token) (row []float64, reset bool, line int, err error) {
	S := len(p.m.States)
	switch p.keyword("uniform", "reset") {
	case "uniform":
		return uniform(S), false, t.line, nil
	case "reset":
		return make([]float64, S), true, t.line, nil // filled from Start in finish
	}
	if row, err = p.numbers(S, true, "T row", t.line); err != nil {
		return nil, false, 0, err
	}
	return row, false, p.numLines[0], nil
}

// obs reads an "O:" entry: a matrix, a row or a single probability.
func (p *parser) obs(t token) error {
	return p.probEntry(t, entryForms{p.obsMatrix, p.obsRow, p.setObsEntries, kObs})
}

// setObsEntries sets O[a][s'][o] to v for every a in as, s' in ss and o
// in os, given on line.
func (p *parser) setObsEntries(as, ss, os []int, v float64, line int) {
	forPairs(as, ss, func(a, s int) {
		for _, o := range os {
			p.m.O[a][s][o] = v
		}
		p.oLine[a][s] = line
	})
}

// setObs sets the observation row of (a, s') and the line it was given on.
func (p *parser) setObs(a, s int, row []float64, line int) {
	copy(p.m.O[a][s], row)
	p.oLine[a][s] = line
}

// obsMatrix reads `O: a` followed by a matrix or uniform.
func (p *parser) obsMatrix(t token, as []int) error {
	S, O := len(p.m.States), len(p.m.Observations)
	if p.keyword("uniform") != "" {
		u := uniform(O)
		forPairs(as, indices(S), func(a, s int) { p.setObs(a, s, u, t.line) })
		return nil
	}
	if n, ok := p.peek(); ok && (n.s == "identity" || n.s == "reset") {
		return p.errorf(n.line, "%q is not allowed for O: (only uniform or a matrix)", n.s)
	}
	return p.obsNumbers(t, as)
}

// obsNumbers reads the |S|×|O| probabilities of `O: a` and sets the rows
// of every action in as.
func (p *parser) obsNumbers(t token, as []int) error {
	S, O := len(p.m.States), len(p.m.Observations)
	v, err := p.numbers(S*O, true, "O matrix", t.line)
	if err != nil {
		return err
	}
	forPairs(as, indices(S), func(a, s int) { p.setObs(a, s, v[s*O:(s+1)*O], p.numLines[s*O]) })
	return nil
}

// obsRow reads `O: a : s'` followed by a row or uniform.
func (p *parser) obsRow(t token, as, ss []int) error {
	row, line, err := p.obsRowValues(t)
	if err != nil {
		return err
	}
	forPairs(as, ss, func(a, s int) { p.setObs(a, s, row, line) })
	return nil
}

// obsRowValues reads the row of an `O: a : s'` entry: uniform or |O|
// probabilities, and the line it was given on.
func (p *parser) obsRowValues(t token) ([]float64, int, error) {
	O := len(p.m.Observations)
	if p.keyword("uniform") != "" {
		return uniform(O), t.line, nil
	}
	if n, ok := p.peek(); ok && (n.s == "identity" || n.s == "reset") {
		return nil, 0, p.errorf(n.line, "%q is not allowed for an O: row (only uniform or %d probabilities)", n.s, O)
	}
	row, err := p.numbers(O, true, "O row", t.line)
	if err != nil {
		return nil, 0, err
	}
	return row, p.numLines[0], nil
}

// reward reads an "R:" entry: a matrix over (s', o) after the state, a
// row over o after the next state, or a single value.
func (p *parser) reward(t token) error {
	as, err := p.entryHead(t)
	if err != nil {
		return err
	}
	ss, err := p.rewardState(t)
	if err != nil {
		return err
	}
	if p.colonNext() {
		return p.rewardRow(t, as, ss)
	}
	return p.rewardMatrix(t, as, ss)
}

// rewardState reads the ':' and the start state of an "R:" entry, which
// every form needs.
func (p *parser) rewardState(t token) ([]int, error) {
	if !p.colonNext() {
		return nil, p.errorf(t.line, "R: needs at least an action and a start state (R: a : s followed by a |S|×|O| matrix)")
	}
	ss, _, err := p.ref(kState)
	return ss, err
}

// rewardMatrix reads the |S|×|O| matrix of an "R: a : s" entry.
func (p *parser) rewardMatrix(t token, as, ss []int) error {
	// R: a : s  matrix over (s', o)
	S, O := len(p.m.States), len(p.m.Observations)
	v, err := p.numbers(S*O, false, "R matrix", t.line)
	if err != nil {
		return err
	}
	p.setRewards(as, ss, indices(S), indices(O), func(s2, o int) float64 { return v[s2*O+o] })
	return nil
}

// rewardRow reads the rest of an "R: a : s :" entry: the next state, then
// a row over o or, after another ':', the observation and a single value.
func (p *parser) rewardRow(t token, as, ss []int) error {
	s2s, _, err := p.ref(kState)
	if err != nil {
		return err
	}
	if !p.colonNext() {
		return p.rewardObsRow(t, as, ss, s2s)
	}
	return p.rewardSingle(as, ss, s2s)
}

// rewardSingle reads the observation and the single value of an
// "R: a : s : s' : o" entry and sets it.
func (p *parser) rewardSingle(as, ss, s2s []int) error {
	os, _, err := p.ref(kObs)
	if err != nil {
		return err
	}
	v, _, err := p.number("a reward value")
	if err != nil {
		return err
	}
	p.setRewards(as, ss, s2s, os, func(int, int) float64 { return v })
	return nil
}

// rewardObsRow reads the row over o of an "R: a : s : s'" entry.
func (p *parser) rewardObsRow(t token, as, ss, s2s []int) error {
	// R: a : s : s'  row over o
	O := len(p.m.Observations)
	v, err := p.numbers(O, false, "R row", t.line)
	if err != nil {
		return err
	}
	p.setRewards(as, ss, s2s, indices(O), func(_, o int) float64 { return v[o] })
	return nil
}

// setRewards sets R(a, s, s', o) to val(s', o) for every a in as, s in ss,
// s' in s2s and o in os.
func (p *parser) setRewards(as, ss, s2s, os []int, val func(s2, o int) float64) {
	S, O := len(p.m.States), len(p.m.Observations)
	forPairs(as, ss, func(a, s int) {
		forPairs(s2s, os, func(s2, o int) { p.m.Reward[((a*S+s)*S+s2)*O+o] = val(s2, o) })
	})
}

// finish completes the model once every entry is read: the default
// start, the reset rows, the checks and renormalisation of every row, and
// the negation of costs.
func (p *parser) finish() (*POMDP, error) {
	line := p.lastLine
	if err := p.alloc(line); err != nil {
		return nil, err
	}
	if err := p.complete(); err != nil {
		return nil, err
	}
	if err := p.m.Check(); err != nil {
		return nil, err
	}
	return p.m, nil
}

// complete sets the start, fills the reset rows, checks and renormalises
// every row, and negates costs.
func (p *parser) complete() error {
	if err := p.finishStart(); err != nil {
		return err
	}
	if err := p.finishRows(); err != nil {
		return err
	}
	if p.cost {
		negate(p.m.Reward)
	}
	return nil
}

// finishStart sets the uniform start when none was given, then checks and
// renormalises the start.
func (p *parser) finishStart() error {
	m := p.m
	if m.Start == nil {
		m.Start = uniform(len(m.States))
	}
	if err := checkRow(m.Start, len(m.States)); err != nil {
		return fmt.Errorf("%w: %s:%d: start: %v", ErrInvalid, p.name, p.startLine, err)
	}
	normalize(m.Start)
	return nil
}

// negate negates every entry of xs (costs into rewards).
func negate(xs []float64) {
	for i := range xs {
		xs[i] = -xs[i]
	}
}

// finishRows fills the reset rows from the start, then checks and
// renormalises every transition and observation row.
func (p *parser) finishRows() error {
	for a := range p.m.Actions {
		for s := range p.m.States {
			if err := p.finishRow(a, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// finishRow fills the transition row of (a, s) from the start if it is a
// reset row, then checks and renormalises it and the observation row.
func (p *parser) finishRow(a, s int) error {
	m := p.m
	if p.resetRows[a][s] {
		copy(m.T[a][s], m.Start)
	}
	if err := p.rowErr("T", a, s, m.T[a][s], p.tLine[a][s]); err != nil {
		return err
	}
	if err := p.rowErr("O", a, s, m.O[a][s], p.oLine[a][s]); err != nil {
		return err
	}
	normalize(m.T[a][s])
	normalize(m.O[a][s])
	return nil
}

// rowErr reports a row of table ("T" or "O") for (a, s) that is not a
// distribution, naming the line of the last entry that set it.
func (p *parser) rowErr(table string, a, s int, row []float64, line int) error {
	err := checkRow(row, len(row))
	if err == nil {
		return nil
	}
	what := rowWhat(table)
	m := p.m
	if line == 0 {
		return fmt.Errorf("%w: %s: no %s: entry gives the %s distribution for action %s, state %s", ErrInvalid, p.name, table, what, m.Actions[a], m.States[s])
	}
	return fmt.Errorf("%w: %s:%d: %s: %s : %s: %v (the last entry that sets this row)", ErrInvalid, p.name, line, table, m.Actions[a], m.States[s], err)
}

// rowWhat names what a row of table ("T" or "O") is a distribution of.
func rowWhat(table string) string {
	if table == "O" {
		return "observation"
	}
	return "next-state"
}
