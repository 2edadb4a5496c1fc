package main

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/psrlcb/psrlcb/internal/atomicfile"
	"github.com/psrlcb/psrlcb/ope"
)

// estimators of the summary, in the order of its columns; "recommended"
// is whichever one psrlcb evaluate led with on each log.
var estimators = []string{ope.EstIS, ope.EstWIS, ope.EstPDIS, ope.EstWPDIS, ope.EstDR, ope.EstWDR, ope.EstModel, ope.EstModelLCB, recommendedName}

const recommendedName = "recommended"

// coverTarget is the coverage an interval must reach in a cell to hold.
const coverTarget = 0.90

// stat summarises one estimator on one cell.
type stat struct {
	n, reliable           int     // logs with a value; of them, reliable
	bias, rmse            float64 // over every log with a value
	rmseRel               float64 // over the reliable logs
	cover, coverN, coverB float64 // coverage over the reliable logs (NaN: none)
	nCoverN, nCoverB      int
	below                 float64 // share of values at or below the truth
	seconds               float64 // mean time per log (the whole evaluation)
}

type cellStats struct {
	cell
	truth float64
	logs  int // logs scored (seeds not skipped)
	byEst map[string]*stat
	// pdisModel is per-decision IS on the logs that also ran the models,
	// the comparison the doubly robust estimators are held to.
	pdisModel *stat
}

// summarize groups the records by cell, summarises every estimator of
// each cell and returns the aggregate table and the per-cell table, the
// cells ordered by problem, H, behaviour, target and K.
func summarize(recs []record) string {
	cells, group, order := groupRecords(recs)
	for _, k := range order {
		cells[k].fill(group[k])
	}
	sort.SliceStable(order, func(i, j int) bool {
		return cells[order[i]].cell.less(cells[order[j]].cell)
	})
	var sb strings.Builder
	writeAggregate(&sb, cells, order)
	writeCells(&sb, cells, order)
	return sb.String()
}

// groupRecords sorts the records into cells (in the order they first
// appear) and, within a cell, by estimator; a behaviour record only
// counts a scored log, and a recommended one also goes under
// recommendedName.
func groupRecords(recs []record) (map[string]*cellStats, map[string]map[string][]record, []string) {
	cells := map[string]*cellStats{}
	var order []string
	group := map[string]map[string][]record{}
	for _, r := range recs {
		k := r.key()
		if cells[k] == nil {
			cells[k] = &cellStats{cell: r.cell, truth: r.truth, byEst: map[string]*stat{}}
			group[k] = map[string][]record{}
			order = append(order, k)
		}
		if r.estimator == ope.EstBehavior {
			cells[k].logs++
			continue
		}
		addEstimate(group[k], r)
	}
	return cells, group, order
}

// addEstimate files the record under its estimator and, when it is the
// recommended one, also under recommendedName.
func addEstimate(byEst map[string][]record, r record) {
	byEst[r.estimator] = append(byEst[r.estimator], r)
	if r.recommended {
		rr := r
		rr.estimator = recommendedName
		byEst[recommendedName] = append(byEst[recommendedName], rr)
	}
}

// fill summarises each estimator's records of the cell, and per-decision
// IS on the logs that also ran the models.
func (cs *cellStats) fill(byEst map[string][]record) {
	for est, rs := range byEst {
		cs.byEst[est] = statOf(rs)
	}
	var pm []record
	for _, r := range byEst[ope.EstPDIS] {
		if r.withModel {
			pm = append(pm, r)
		}
	}
	if len(pm) > 0 {
		cs.pdisModel = statOf(pm)
	}
}

// less orders cells by problem, H, behaviour (uniform before myopic),
// target and K.
func (a cell) less(b cell) bool {
	if a.problem != b.problem {
		return a.problem < b.problem
	}
	if a.H != b.H {
		return a.H < b.H
	}
	if a.behavior != b.behavior {
		return a.behavior > b.behavior // uniform before myopic
	}
	if a.target != b.target {
		return a.target < b.target
	}
	return a.K < b.K
}

// statOf summarises one estimator's records on one cell.
func statOf(rs []record) *stat {
	s := &stat{cover: math.NaN(), coverN: math.NaN(), coverB: math.NaN(), rmseRel: math.NaN()}
	var sums statSums
	for _, r := range rs {
		sums.add(s, r)
	}
	sums.finish(s, len(rs))
	return s
}

// statSums accumulates one estimator's errors, interval hits and times
// over its records; the counts of logs go straight into the stat.
type statSums struct {
	se, seRel, bias, secs        float64
	cov, nCov, covN, covB, below int
}

// add takes in one record: its time always, its error when it has a
// value, its squared error and interval hits when it is also reliable.
func (a *statSums) add(s *stat, r record) {
	a.secs += r.seconds
	if math.IsNaN(r.value) {
		return
	}
	s.n++
	d := r.value - r.truth
	a.addError(d)
	if r.reliable {
		a.addReliable(s, r, d)
	}
}

// addError sums the error d of one record with a value: its bias, its
// square and whether it is at most 0.
func (a *statSums) addError(d float64) {
	a.bias += d
	a.se += d * d
	if d <= 0 {
		a.below++
	}
}

// addReliable sums the squared error d of a reliable record and counts
// its interval hits.
func (a *statSums) addReliable(s *stat, r record, d float64) {
	s.reliable++
	a.seRel += d * d
	a.addCover(s, r)
}

// addCover counts whether each of the record's intervals (bootstrap,
// normal, Bernstein) that it has covers the truth.
func (a *statSums) addCover(s *stat, r record) {
	countCover(r.lower, r.upper, r.truth, &a.nCov, &a.cov)
	countCover(r.nLower, r.nUpper, r.truth, &s.nCoverN, &a.covN)
	countCover(r.bLower, r.bUpper, r.truth, &s.nCoverB, &a.covB)
}

// countCover counts an interval [lower, upper] the record has (lower is
// not NaN) in *n and, when it covers truth, in *hits.
func countCover(lower, upper, truth float64, n, hits *int) {
	if math.IsNaN(lower) {
		return
	}
	*n++
	if lower <= truth && truth <= upper {
		*hits++
	}
}

// finish turns the sums over logs records into the stat's means, RMSEs
// and coverages (NaN where no record counts).
func (a *statSums) finish(s *stat, logs int) {
	s.seconds = a.secs / float64(logs)
	a.finishErrors(s)
	a.finishCover(s)
}

// finishErrors sets the stat's bias, RMSE and share at or below the truth
// (NaN without a value), and its RMSE over the reliable records.
func (a *statSums) finishErrors(s *stat) {
	if s.n > 0 {
		s.bias, s.rmse, s.below = a.bias/float64(s.n), math.Sqrt(a.se/float64(s.n)), float64(a.below)/float64(s.n)
	} else {
		s.bias, s.rmse, s.below = math.NaN(), math.NaN(), math.NaN()
	}
	if s.reliable > 0 {
		s.rmseRel = math.Sqrt(a.seRel / float64(s.reliable))
	}
}

// finishCover sets the stat's coverage of each interval (NaN when no
// record has it).
func (a *statSums) finishCover(s *stat) {
	if a.nCov > 0 {
		s.cover = float64(a.cov) / float64(a.nCov)
	}
	if s.nCoverN > 0 {
		s.coverN = float64(a.covN) / float64(s.nCoverN)
	}
	if s.nCoverB > 0 {
		s.coverB = float64(a.covB) / float64(s.nCoverB)
	}
}

// writeAggregate writes, per estimator, how its intervals held and how
// its error compares across cells: the figures the recommendation rule of
// psrlcb evaluate rests on.
func writeAggregate(sb *strings.Builder, cells map[string]*cellStats, order []string) {
	writeAggregateHeader(sb, len(order))
	heldBest, heldCells := bestAmongHeld(cells, order)
	for _, est := range estimators {
		if est == ope.EstModelLCB {
			continue
		}
		aggregateOf(est, cells, order).write(sb, est, heldBest, heldCells)
	}
	fmt.Fprintf(sb, "\n*Best RMSE among held*: in how many of the %d cells where at least one interval held the estimator had "+
		"the smallest RMSE among the estimators whose interval held there (the rule the recommended order follows).\n", heldCells)
	// The doubly robust estimators against per-decision IS on the same logs.
	for _, est := range []string{ope.EstDR, ope.EstWDR} {
		writeAgainstPDIS(sb, est, cells, order)
	}
	writeLCBBelow(sb, cells, order)
	fmt.Fprintln(sb)
	fmt.Fprintln(sb)
}

// writeAggregateHeader writes the aggregate table's legend over the cells
// and its header.
func writeAggregateHeader(sb *strings.Builder, cells int) {
	fmt.Fprintf(sb, "Across %d cells. *Cells* counts the cells where the estimator was reliable on at least half the logs "+
		"(ESS ≥ %d for the weighted ones); *coverage held* is the share of those where its 95%% interval (bootstrap) "+
		"covered the exact value on at least %.0f%% of the reliable logs; *normal* and *Bernstein* the same for those intervals; "+
		"*RMSE ratio* is the median over those cells of its RMSE divided by the smallest RMSE any estimator reached there "+
		"(1 is the best in every cell).\n\n", cells, ope.MinESS, 100*coverTarget)
	fmt.Fprintln(sb, "| estimator | cells | coverage held | mean coverage | normal held | Bernstein held | RMSE ratio (median) | best RMSE in | best RMSE among held in |")
	fmt.Fprintln(sb, "|---|---|---|---|---|---|---|---|---|")
}

// aggregate is one estimator's row of the aggregate table, over the cells
// where it was reliable on at least half the logs: how many, how its
// intervals held there, where its RMSE was the best and its RMSE ratios.
type aggregate struct {
	n, nC, held, heldN, nN, heldB, nB, best int
	covSum                                  float64
	ratios                                  []float64
}

// aggregateOf gathers the estimator's aggregate over the cells, in order.
func aggregateOf(est string, cells map[string]*cellStats, order []string) *aggregate {
	g := &aggregate{}
	for _, k := range order {
		cs := cells[k]
		s := cs.byEst[est]
		if s == nil || s.reliable*2 < s.n || s.n == 0 {
			continue
		}
		g.n++
		g.addCoverage(s)
		g.addRMSE(s.rmse, cs.bestRMSE())
	}
	return g
}

// addCoverage counts the cell's coverage of each interval, and whether
// it reached coverTarget.
func (g *aggregate) addCoverage(s *stat) {
	if !math.IsNaN(s.cover) {
		g.covSum += s.cover
	}
	countHeld(s.cover, &g.nC, &g.held)
	countHeld(s.coverN, &g.nN, &g.heldN)
	countHeld(s.coverB, &g.nB, &g.heldB)
}

// countHeld counts a coverage the cell has (not NaN) in *n and, when it
// reached coverTarget, in *held.
func countHeld(cover float64, n, held *int) {
	if math.IsNaN(cover) {
		return
	}
	*n++
	if cover >= coverTarget {
		*held++
	}
}

// addRMSE counts whether the cell's rmse is the best one, and records its
// ratio to the best (1 where both are 0).
func (g *aggregate) addRMSE(rmse, bestRMSE float64) {
	if rmse <= bestRMSE {
		g.best++
	}
	if bestRMSE > 0 {
		g.ratios = append(g.ratios, rmse/bestRMSE)
	} else if rmse == 0 {
		g.ratios = append(g.ratios, 1)
	}
}

// bestRMSE is the smallest RMSE in the cell among the estimators reliable
// on at least half the logs, recommended and model_lcb aside.
func (cs *cellStats) bestRMSE() float64 {
	bestRMSE := math.Inf(1)
	for _, e := range estimators {
		if t := cs.byEst[e]; t != nil && e != recommendedName && e != ope.EstModelLCB && t.n > 0 && t.reliable*2 >= t.n {
			bestRMSE = math.Min(bestRMSE, t.rmse)
		}
	}
	return bestRMSE
}

// write writes the estimator's row of the aggregate table; heldBest and
// heldCells are bestAmongHeld's counts.
func (g *aggregate) write(sb *strings.Builder, est string, heldBest map[string]int, heldCells int) {
	if g.n == 0 {
		fmt.Fprintf(sb, "| %s | 0 | | | | | | | |\n", est)
		return
	}
	mean := "–"
	if g.nC > 0 {
		mean = fmt.Sprintf("%.3f", g.covSum/float64(g.nC))
	}
	among := "–"
	if est != ope.EstModel && est != recommendedName {
		among = share(heldBest[est], heldCells)
	}
	fmt.Fprintf(sb, "| %s | %d | %s | %s | %s | %s | %.2f | %d | %s |\n", est, g.n, share(g.held, g.nC), mean,
		share(g.heldN, g.nN), share(g.heldB, g.nB), median(g.ratios), g.best, among)
}

// writeAgainstPDIS writes in how many cells a doubly robust estimator's
// RMSE was at or below per-decision IS's on the same logs.
func writeAgainstPDIS(sb *strings.Builder, est string, cells map[string]*cellStats, order []string) {
	n, le := againstPDIS(est, cells, order)
	if n > 0 {
		fmt.Fprintf(sb, "\n%s: RMSE at or below per-decision IS's (on the same logs) in %d of %d cells (%.0f%%).", est, le, n, 100*float64(le)/float64(n))
	}
}

// againstPDIS counts the cells where both the estimator and per-decision
// IS on the same logs have errors (n) and, of those, the cells where the
// estimator's RMSE was at or below per-decision IS's (le).
func againstPDIS(est string, cells map[string]*cellStats, order []string) (n, le int) {
	for _, k := range order {
		cs := cells[k]
		s, p := cs.byEst[est], cs.pdisModel
		if s == nil || p == nil || s.n == 0 || p.n == 0 {
			continue
		}
		n++
		if s.rmse <= p.rmse {
			le++
		}
	}
	return n, le
}

// writeLCBBelow writes in how many cells model_lcb was at or below the
// exact value on at least 95% of the logs.
func writeLCBBelow(sb *strings.Builder, cells map[string]*cellStats, order []string) {
	var n, below int
	for _, k := range order {
		if s := cells[k].byEst[ope.EstModelLCB]; s != nil && s.n > 0 {
			n++
			if s.below >= 0.95 {
				below++
			}
		}
	}
	if n > 0 {
		fmt.Fprintf(sb, "\nmodel_lcb: at or below the exact value on at least 95%% of the logs in %d of %d cells.", below, n)
	}
}

// intervalEstimators are the estimators with a 95% interval, the ones
// psrlcb evaluate can lead with.
var intervalEstimators = []string{ope.EstIS, ope.EstWIS, ope.EstPDIS, ope.EstWPDIS, ope.EstDR, ope.EstWDR}

// bestAmongHeld counts, per estimator, the cells where its RMSE was the
// smallest among the estimators whose bootstrap interval held there
// (reliable on at least half the logs, coverage ≥ coverTarget), and how
// many cells had at least one such estimator. Ties count for each.
func bestAmongHeld(cells map[string]*cellStats, order []string) (map[string]int, int) {
	best := map[string]int{}
	n := 0
	for _, k := range order {
		cs := cells[k]
		held, min := cs.held()
		if len(held) == 0 {
			continue
		}
		n++
		cs.countBest(best, held, min)
	}
	return best, n
}

// countBest counts in best each estimator of held whose RMSE in the cell
// is at most min.
func (cs *cellStats) countBest(best map[string]int, held []string, min float64) {
	for _, e := range held {
		if cs.byEst[e].rmse <= min {
			best[e]++
		}
	}
}

// held is the interval estimators whose bootstrap interval held in the
// cell (reliable on at least half the logs, coverage ≥ coverTarget), and
// the smallest RMSE among them.
func (cs *cellStats) held() ([]string, float64) {
	min := math.Inf(1)
	var held []string
	for _, e := range intervalEstimators {
		s := cs.byEst[e]
		if s == nil || s.n == 0 || s.reliable*2 < s.n || math.IsNaN(s.cover) || s.cover < coverTarget {
			continue
		}
		held = append(held, e)
		min = math.Min(min, s.rmse)
	}
	return held, min
}

func share(a, n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%d/%d", a, n)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// writeCells writes one row per cell: every estimator's RMSE and the
// coverage of its interval over the reliable logs.
func writeCells(sb *strings.Builder, cells map[string]*cellStats, order []string) {
	writeCellsHeader(sb)
	for _, k := range order {
		cs := cells[k]
		fmt.Fprintf(sb, "| %s | %d | %s | %s | %d | %d | %.4g |", cs.problem, cs.H, cs.behavior, cs.target, cs.K, cs.logs, cs.truth)
		secs := 0.0
		for _, e := range estimators {
			s := cs.byEst[e]
			writeCellFigure(sb, e, s)
			if s != nil {
				secs = math.Max(secs, s.seconds)
			}
		}
		fmt.Fprintf(sb, " %.2f |\n", secs)
	}
}

// writeCellsHeader writes the per-cell table's explanation and header.
func writeCellsHeader(sb *strings.Builder) {
	fmt.Fprintln(sb, "Per cell: RMSE against the exact value V^π, then the coverage of the 95% interval over the logs where the "+
		"estimator was reliable; “–” where it was reliable on fewer than half the logs (the share follows in brackets). "+
		"model_lcb gives the share of logs where the bound was at or below V^π. "+
		"*s/log* is the mean time of one log's whole evaluation (one core), with the three model fits when they ran.")
	fmt.Fprintln(sb)
	writeCellsColumns(sb)
}

// writeCellsColumns writes the per-cell table's header row, a column per
// estimator.
func writeCellsColumns(sb *strings.Builder) {
	fmt.Fprint(sb, "| problem | H | behaviour | target | K | logs | V^π |")
	for _, e := range estimators {
		fmt.Fprintf(sb, " %s |", e)
	}
	fmt.Fprintln(sb, " s/log |")
	fmt.Fprint(sb, "|---|---|---|---|---|---|---|")
	for range estimators {
		fmt.Fprint(sb, "---|")
	}
	fmt.Fprintln(sb, "---|")
}

// writeCellFigure writes estimator e's entry in a cell's row (s nil: the
// estimator did not run there).
func writeCellFigure(sb *strings.Builder, e string, s *stat) {
	switch {
	case s == nil:
		fmt.Fprint(sb, " |")
	case e == ope.EstModelLCB:
		fmt.Fprintf(sb, " %.0f%% ≤ |", 100*s.below)
	case s.n == 0:
		fmt.Fprint(sb, " no value |")
	case s.reliable*2 < s.n:
		fmt.Fprintf(sb, " – (%d/%d) |", s.reliable, s.n)
	case math.IsNaN(s.cover):
		fmt.Fprintf(sb, " %.3g |", s.rmse)
	default:
		fmt.Fprintf(sb, " %.3g, %.0f%% |", s.rmse, 100*s.cover)
	}
}

// Markers of the generated section of docs/evaluation.md.
const (
	beginMarker = "<!-- bench/ope results: begin -->"
	endMarker   = "<!-- bench/ope results: end -->"
)

// writeDocs replaces the generated section of path by sum.
func writeDocs(path, sum string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %q … %q section", path, beginMarker, endMarker)
	}
	out := s[:i+len(beginMarker)] + "\n\n" + sum + "\n" + s[j:]
	return atomicfile.WriteBytes(path, []byte(out))
}
