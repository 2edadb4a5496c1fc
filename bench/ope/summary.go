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

func summarize(recs []record) string {
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
		group[k][r.estimator] = append(group[k][r.estimator], r)
		if r.recommended {
			rr := r
			rr.estimator = recommendedName
			group[k][recommendedName] = append(group[k][recommendedName], rr)
		}
	}
	for _, k := range order {
		cs := cells[k]
		for est, rs := range group[k] {
			cs.byEst[est] = statOf(rs)
		}
		var pm []record
		for _, r := range group[k][ope.EstPDIS] {
			if r.withModel {
				pm = append(pm, r)
			}
		}
		if len(pm) > 0 {
			cs.pdisModel = statOf(pm)
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := cells[order[i]].cell, cells[order[j]].cell
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
	})
	var sb strings.Builder
	writeAggregate(&sb, cells, order)
	writeCells(&sb, cells, order)
	return sb.String()
}

func statOf(rs []record) *stat {
	s := &stat{cover: math.NaN(), coverN: math.NaN(), coverB: math.NaN(), rmseRel: math.NaN()}
	var se, seRel, bias, secs float64
	var cov, nCov, covN, covB, below int
	for _, r := range rs {
		secs += r.seconds
		if math.IsNaN(r.value) {
			continue
		}
		s.n++
		d := r.value - r.truth
		bias += d
		se += d * d
		if d <= 0 {
			below++
		}
		if !r.reliable {
			continue
		}
		s.reliable++
		seRel += d * d
		if !math.IsNaN(r.lower) {
			nCov++
			if r.lower <= r.truth && r.truth <= r.upper {
				cov++
			}
		}
		if !math.IsNaN(r.nLower) {
			s.nCoverN++
			if r.nLower <= r.truth && r.truth <= r.nUpper {
				covN++
			}
		}
		if !math.IsNaN(r.bLower) {
			s.nCoverB++
			if r.bLower <= r.truth && r.truth <= r.bUpper {
				covB++
			}
		}
	}
	s.seconds = secs / float64(len(rs))
	if s.n > 0 {
		s.bias, s.rmse, s.below = bias/float64(s.n), math.Sqrt(se/float64(s.n)), float64(below)/float64(s.n)
	} else {
		s.bias, s.rmse, s.below = math.NaN(), math.NaN(), math.NaN()
	}
	if s.reliable > 0 {
		s.rmseRel = math.Sqrt(seRel / float64(s.reliable))
	}
	if nCov > 0 {
		s.cover = float64(cov) / float64(nCov)
	}
	if s.nCoverN > 0 {
		s.coverN = float64(covN) / float64(s.nCoverN)
	}
	if s.nCoverB > 0 {
		s.coverB = float64(covB) / float64(s.nCoverB)
	}
	return s
}

// writeAggregate writes, per estimator, how its intervals held and how
// its error compares across cells: the figures the recommendation rule of
// psrlcb evaluate rests on.
func writeAggregate(sb *strings.Builder, cells map[string]*cellStats, order []string) {
	fmt.Fprintf(sb, "Across %d cells. *Cells* counts the cells where the estimator was reliable on at least half the logs "+
		"(ESS ≥ %d for the weighted ones); *coverage held* is the share of those where its 95%% interval (bootstrap) "+
		"covered the exact value on at least %.0f%% of the reliable logs; *normal* and *Bernstein* the same for those intervals; "+
		"*RMSE ratio* is the median over those cells of its RMSE divided by the smallest RMSE any estimator reached there "+
		"(1 is the best in every cell).\n\n", len(order), ope.MinESS, 100*coverTarget)
	fmt.Fprintln(sb, "| estimator | cells | coverage held | mean coverage | normal held | Bernstein held | RMSE ratio (median) | best RMSE in | best RMSE among held in |")
	fmt.Fprintln(sb, "|---|---|---|---|---|---|---|---|---|")
	heldBest, heldCells := bestAmongHeld(cells, order)
	for _, est := range estimators {
		if est == ope.EstModelLCB {
			continue
		}
		var n, nC, held, heldN, nN, heldB, nB, best int
		var covSum float64
		var ratios []float64
		for _, k := range order {
			cs := cells[k]
			s := cs.byEst[est]
			if s == nil || s.reliable*2 < s.n || s.n == 0 {
				continue
			}
			n++
			if !math.IsNaN(s.cover) {
				nC++
				covSum += s.cover
				if s.cover >= coverTarget {
					held++
				}
			}
			if !math.IsNaN(s.coverN) {
				nN++
				if s.coverN >= coverTarget {
					heldN++
				}
			}
			if !math.IsNaN(s.coverB) {
				nB++
				if s.coverB >= coverTarget {
					heldB++
				}
			}
			bestRMSE := math.Inf(1)
			for _, e := range estimators {
				if t := cs.byEst[e]; t != nil && e != recommendedName && e != ope.EstModelLCB && t.n > 0 && t.reliable*2 >= t.n {
					bestRMSE = math.Min(bestRMSE, t.rmse)
				}
			}
			if s.rmse <= bestRMSE {
				best++
			}
			if bestRMSE > 0 {
				ratios = append(ratios, s.rmse/bestRMSE)
			} else if s.rmse == 0 {
				ratios = append(ratios, 1)
			}
		}
		if n == 0 {
			fmt.Fprintf(sb, "| %s | 0 | | | | | | | |\n", est)
			continue
		}
		mean := "–"
		if nC > 0 {
			mean = fmt.Sprintf("%.3f", covSum/float64(nC))
		}
		among := "–"
		if est != ope.EstModel && est != recommendedName {
			among = share(heldBest[est], heldCells)
		}
		fmt.Fprintf(sb, "| %s | %d | %s | %s | %s | %s | %.2f | %d | %s |\n", est, n, share(held, nC), mean,
			share(heldN, nN), share(heldB, nB), median(ratios), best, among)
	}
	fmt.Fprintf(sb, "\n*Best RMSE among held*: in how many of the %d cells where at least one interval held the estimator had "+
		"the smallest RMSE among the estimators whose interval held there (the rule the recommended order follows).\n", heldCells)
	// The doubly robust estimators against per-decision IS on the same logs.
	for _, est := range []string{ope.EstDR, ope.EstWDR} {
		var n, le int
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
		if n > 0 {
			fmt.Fprintf(sb, "\n%s: RMSE at or below per-decision IS's (on the same logs) in %d of %d cells (%.0f%%).", est, le, n, 100*float64(le)/float64(n))
		}
	}
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
	fmt.Fprintln(sb)
	fmt.Fprintln(sb)
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
		if len(held) == 0 {
			continue
		}
		n++
		for _, e := range held {
			if cs.byEst[e].rmse <= min {
				best[e]++
			}
		}
	}
	return best, n
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
	fmt.Fprintln(sb, "Per cell: RMSE against the exact value V^π, then the coverage of the 95% interval over the logs where the "+
		"estimator was reliable; “–” where it was reliable on fewer than half the logs (the share follows in brackets). "+
		"model_lcb gives the share of logs where the bound was at or below V^π. "+
		"*s/log* is the mean time of one log's whole evaluation (one core), with the three model fits when they ran.")
	fmt.Fprintln(sb)
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
	for _, k := range order {
		cs := cells[k]
		fmt.Fprintf(sb, "| %s | %d | %s | %s | %d | %d | %.4g |", cs.problem, cs.H, cs.behavior, cs.target, cs.K, cs.logs, cs.truth)
		secs := 0.0
		for _, e := range estimators {
			s := cs.byEst[e]
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
			if s != nil {
				secs = math.Max(secs, s.seconds)
			}
		}
		fmt.Fprintf(sb, " %.2f |\n", secs)
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
