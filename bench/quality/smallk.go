package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/psrlcb/psrlcb/pipeline"
	"github.com/psrlcb/psrlcb/pomdp"
	"github.com/psrlcb/psrlcb/report"
)

// SmallKs are the numbers of episodes of the small-K study: from below
// report.MinEpisodesForClaim to where the main study starts.
var SmallKs = []int{10, 30, 100, 300}

// SmallRow is one run of the small-K study: does the LCB hold, and does
// the verdict claim more than the truth allows, when K is small?
type SmallRow struct {
	Problem  string `json:"problem"`
	Behavior string `json:"behavior"`
	K        int    `json:"k"`
	Seed     int    `json:"seed"`
	// Value is V^π̄ (exact), BehaviorValue V^b (exact), LCBUnits the
	// reported lower bound, all in return units.
	Value         jfloat `json:"value"`
	BehaviorValue jfloat `json:"behavior_value"`
	LCBUnits      jfloat `json:"lcb_units"`
	Alpha         jfloat `json:"alpha"`
	// Evidence is the verdict's report.Evidence* level.
	Evidence string `json:"evidence"`
}

// Holds reports whether the reported bound is at or below the true value.
func (r SmallRow) Holds() bool { return float64(r.LCBUnits) <= float64(r.Value)+lcbTol }

// FalseClaim reports whether the verdict recommends a policy whose true
// value is below the behaviour's.
func (r SmallRow) FalseClaim() bool {
	return r.Evidence == report.EvidenceJustified && float64(r.Value) < float64(r.BehaviorValue)-lcbTol
}

// smallKOne fits one configuration of the small-K study with the study's
// fit options (FitOptions) and values the policy exactly.
func smallKOne(ctx context.Context, cfg Config, p Problem, tr *truth, k key) (SmallRow, error) {
	seed := seedFor(k)
	d, err := pomdp.SimulateDataset(ctx, tr.m, p.Horizon, k.K, tr.beh, seed)
	if err != nil {
		return SmallRow{}, fmt.Errorf("simulate %v: %w", k, err)
	}
	out, err := pipeline.Fit(ctx, d, nil, smallKOptions(cfg, tr, p.Horizon, seed))
	if err != nil {
		return SmallRow{}, fmt.Errorf("fit %v: %w", k, err)
	}
	v, err := pomdp.EvaluatePolicy(ctx, tr.m, p.Horizon, out.Policy)
	if err != nil {
		return SmallRow{}, fmt.Errorf("evaluate %v: %w", k, err)
	}
	return smallRow(p, k, tr, v, out), nil
}

// smallRow is configuration k's row: the policy's exact value v, the
// behaviour's, and the fit's LCB, α and verdict.
func smallRow(p Problem, k key, tr *truth, v float64, out *report.Outcome) SmallRow {
	h := out.Run.Manifest.Headline
	return SmallRow{Problem: p.Name, Behavior: k.Behavior, K: k.K, Seed: k.Seed,
		Value: jfloat(v), BehaviorValue: jfloat(tr.vb), LCBUnits: jfloat(h.LCBUnits), Alpha: jfloat(out.Alpha),
		Evidence: h.Evidence}
}

// smallKOptions are the fit options of a small-K run with seed: the
// study's (FitOptions), with --known-range the range of the returns
// possible over horizon H.
func smallKOptions(cfg Config, tr *truth, H int, seed uint64) pipeline.Options {
	o := FitOptions(cfg, tr.m, seed)
	if cfg.KnownRange {
		o.ReturnRange = possibleReturns(tr.m, H)
	}
	return o
}

// RunSmallK runs the small-K study: every problem and behaviour of cfg,
// K ∈ cfg.Ks, cfg.Seeds seeds.
func RunSmallK(ctx context.Context, cfg Config) ([]SmallRow, error) {
	var rows []SmallRow
	for _, p := range cfg.Problems {
		for _, bs := range cfg.Behavs {
			var err error
			if rows, err = smallKBehavior(ctx, cfg, p, bs, rows); err != nil {
				return rows, err
			}
		}
	}
	return rows, nil
}

// smallKBehavior values problem p and behaviour bs exactly, then appends
// to rows the runs of every K and seed under them.
func smallKBehavior(ctx context.Context, cfg Config, p Problem, bs string, rows []SmallRow) ([]SmallRow, error) {
	tr, err := loadTruth(ctx, cfg.PomdpDir, p, bs)
	if err != nil {
		return rows, err
	}
	for _, K := range cfg.Ks {
		for s := 0; s < cfg.Seeds; s++ {
			r, err := smallKRun(ctx, cfg, p, tr, key{p.Name, bs, K, s})
			if err != nil {
				return rows, err
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// smallKRun runs configuration k of the small-K study and logs its line.
func smallKRun(ctx context.Context, cfg Config, p Problem, tr *truth, k key) (SmallRow, error) {
	start := time.Now()
	r, err := smallKOne(ctx, cfg, p, tr, k)
	if err != nil {
		return r, err
	}
	if cfg.Log != nil {
		cfg.Log("small-K %-8s %-10s K=%-4d seed=%d %5.1fs  LCB %.4g ≤ V %.4g: %v  V^b %.4g  %s  α=%g",
			p.Name, k.Behavior, k.K, k.Seed, time.Since(start).Seconds(), r.LCBUnits, r.Value, r.Holds(), r.BehaviorValue, r.Evidence, r.Alpha)
	}
	return r, nil
}

// smallKCell counts the runs of one K.
type smallKCell struct {
	runs, holds, justified, falseClaims int
	insufficient, notProven             int
}

func smallKCells(rows []SmallRow) ([]int, map[int]*smallKCell) {
	cells := map[int]*smallKCell{}
	var ks []int
	for _, r := range rows {
		c := cells[r.K]
		if c == nil {
			c = &smallKCell{}
			cells[r.K] = c
			ks = append(ks, r.K)
		}
		c.add(r)
	}
	return ks, cells
}

// add counts the run r: whether its bound holds, whether its verdict
// claims too much, and its verdict.
func (c *smallKCell) add(r SmallRow) {
	c.runs++
	if r.Holds() {
		c.holds++
	}
	if r.FalseClaim() {
		c.falseClaims++
	}
	switch r.Evidence {
	case report.EvidenceJustified:
		c.justified++
	case report.EvidenceInsufficient:
		c.insufficient++
	default:
		c.notProven++
	}
}

// smallKMarkdown is the small-K table of docs/validation.md.
func smallKMarkdown(rows []SmallRow, cfg Config) string {
	var b strings.Builder
	ks, cells := smallKCells(rows)
	writeSmallKHeader(&b, cfg)
	var n, holds, falseClaims int
	for _, K := range ks {
		c := cells[K]
		n, holds, falseClaims = n+c.runs, holds+c.holds, falseClaims+c.falseClaims
		fmt.Fprintf(&b, "| %d | %d | %d (%.0f%%) | %d | %d | %d | %d |\n", K, c.runs, c.holds, 100*float64(c.holds)/float64(c.runs),
			c.justified, c.notProven, c.insufficient, c.falseClaims)
	}
	fmt.Fprintf(&b, "| all | %d | %d (%.1f%%) | | | | %d |\n", n, holds, 100*float64(holds)/math.Max(1, float64(n)), falseClaims)
	if bad := smallKFailures(rows); len(bad) > 0 {
		b.WriteString("\nRuns whose bound is above the true value or whose verdict claims too much:\n\n" + strings.Join(bad, "\n") + "\n")
	}
	return b.String()
}

// writeSmallKHeader writes the small-K table's provenance line and header.
func writeSmallKHeader(b *strings.Builder, cfg Config) {
	fmt.Fprintf(b, "Generated by `go run ./bench/quality --small-k` (%d seeds, problems %s, behaviours %s, EM: rank = |S|, %d restarts, ≤ %d iterations).\n\n",
		cfg.Seeds, problemList(cfg.Problems), strings.Join(cfg.Behavs, ", "), cfg.Restarts, cfg.MaxIter)
	b.WriteString("| K | runs | LCB ≤ V^π̄ | verdict: justified | not proven | insufficient | justified with V^π̄ < V^b |\n|---|---|---|---|---|---|---|\n")
}

// smallKFailures lists the runs whose bound is above the true value or
// whose verdict claims too much, one Markdown item each.
func smallKFailures(rows []SmallRow) []string {
	var bad []string
	for _, r := range rows {
		if !r.Holds() || r.FalseClaim() {
			bad = append(bad, fmt.Sprintf("- %s, %s, K = %d, seed %d: LCB %.4g, V^π̄ %.4g, V^b %.4g, α = %g, verdict %s",
				r.Problem, r.Behavior, r.K, r.Seed, r.LCBUnits, r.Value, r.BehaviorValue, r.Alpha, r.Evidence))
		}
	}
	return bad
}

func problemList(ps []Problem) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Name
	}
	return strings.Join(s, ", ")
}

// Markers delimiting the small-K table in docs/validation.md.
const (
	smallKBegin = "<!-- small-k:begin (generated by go run ./bench/quality --small-k; do not edit by hand) -->"
	smallKEnd   = "<!-- small-k:end -->"
)

// possibleReturns is the range of returns the model can give in H steps,
// [H·min R, H·max R] over its reward table: what a user who knows the
// bounds of the rewards states with --return-range.
func possibleReturns(m *pomdp.POMDP, H int) [2]float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range m.Reward {
		lo, hi = math.Min(lo, r), math.Max(hi, r)
	}
	return [2]float64{float64(H) * lo, float64(H) * hi}
}
