package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/psrlcb/psrlcb/baseline"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pipeline"
	"github.com/psrlcb/psrlcb/pomdp"
	"github.com/psrlcb/psrlcb/split"
)

// CloneRow compares, on one configuration's logs, the policies the
// behaviour fallback can return (pipeline/fallback.go): the behaviour's
// clone, its improved clone (baseline.CloneOptions.Improve) and the
// improved behaviour (baseline.CloneOptions.Mix, a stochastic policy), all
// fitted on all the logs and valued exactly under the true model. No model
// is fitted, so a clone study is quick.
type CloneRow struct {
	Family        string
	Problem, H, K int
	Behavior      string
	Optimal       float64 // V*
	Behav         float64 // V^b
	Clone         float64 // V of the clone
	Improved      float64 // V of the improved clone
	Mixed         float64 // V of the improved behaviour
	// Chosen is the candidate the fallback's rule returns once the plan
	// is set aside (pipeline.StandIn, on a seeded half split of the
	// logs), ChosenValue its V fitted on all the logs.
	Chosen      string
	ChosenValue float64
	// Deterministic is the rule's choice among the clone and the improved
	// clone alone (the rule before the improved behaviour), its V
	// DeterministicValue.
	Deterministic      string
	DeterministicValue float64
}

// Regret of a value, (V* − v)/(V* − V^b); NaN when V* = V^b.
func (r CloneRow) Regret(v float64) float64 {
	gap := r.Optimal - r.Behav
	if gap <= 1e-9 {
		return math.NaN()
	}
	return (r.Optimal - v) / gap
}

// RunClones values both clones on every configuration of cfg (Ks,
// horizons, behaviours, problems, families), skipping those whose exact
// references exceed cfg.MaxNodes.
func RunClones(ctx context.Context, cfg Config) ([]CloneRow, error) {
	var out []CloneRow
	for i := range cfg.Problems {
		for _, fam := range cfg.Families {
			for _, H := range cfg.Horizons {
				rows, err := loadedClones(ctx, cfg, fam, i, H)
				out = append(out, rows...)
				if err != nil {
					return out, err
				}
			}
		}
	}
	return out, nil
}

// loadedClones loads problem i of the family at horizon H and values both
// clones on its configurations; none when its exact references exceed
// cfg.MaxNodes.
func loadedClones(ctx context.Context, cfg Config, fam string, i, H int) ([]CloneRow, error) {
	p, err := loadProblem(ctx, cfg, fam, i, H)
	if errors.Is(err, pomdp.ErrTooLarge) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return problemClones(ctx, cfg, p, key{Family: fam, Problem: i, H: H})
}

// problemClones values both clones on every configuration (behaviour, K)
// of problem p at the horizon of base, skipping those whose exact
// references exceed cfg.MaxNodes.
func problemClones(ctx context.Context, cfg Config, p *problem, base key) ([]CloneRow, error) {
	var out []CloneRow
	for _, bs := range cfg.Behavs {
		for _, K := range cfg.Ks {
			k := base
			k.Behavior, k.K = bs, K
			r, err := cloneRun(ctx, cfg, p, k)
			if errors.Is(err, pomdp.ErrTooLarge) {
				continue
			} else if err != nil {
				return out, fmt.Errorf("%v: %w", k, err)
			}
			if cfg.Log != nil {
				cfg.Log("%-8s %3d H=%d %-10s K=%-6d regret clone %6.3f improved %6.3f improved behaviour %6.3f; returned %s", k.Family, k.Problem, k.H, bs, K, r.Regret(r.Clone), r.Regret(r.Improved), r.Regret(r.Mixed), r.Chosen)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// cloneRun simulates configuration k's logs (the same as the full study's,
// seedFor) and values both clones.
func cloneRun(ctx context.Context, cfg Config, p *problem, k key) (CloneRow, error) {
	r := CloneRow{Family: k.Family, Problem: k.Problem, H: k.H, K: k.K, Behavior: k.Behavior, Optimal: p.optVal}
	beh, vb, err := behaviorValue(ctx, cfg, p.m, k)
	if err != nil {
		return r, err
	}
	r.Behav = vb
	d, err := pomdp.SimulateDataset(ctx, p.m, k.H, k.K, beh, seedFor(k, cfg.Seed))
	if err != nil {
		return r, err
	}
	if r.Clone, err = cloneValue(ctx, cfg, p, k.H, d, baseline.CloneOptions{}); err != nil {
		return r, err
	}
	if r.Improved, err = cloneValue(ctx, cfg, p, k.H, d, baseline.CloneOptions{Improve: true}); err != nil {
		return r, err
	}
	if r.Mixed, err = cloneValue(ctx, cfg, p, k.H, d, baseline.CloneOptions{Mix: true}); err != nil {
		return r, err
	}
	if r.Chosen, r.Deterministic, err = fallbackChoice(ctx, d, seedFor(k, cfg.Seed)); err != nil {
		return r, err
	}
	values := map[string]float64{pipeline.PlannerClone: r.Clone, pipeline.PlannerImprovedClone: r.Improved, pipeline.PlannerImprovedBehavior: r.Mixed}
	r.ChosenValue, r.DeterministicValue = values[r.Chosen], values[r.Deterministic]
	return r, err
}

// fallbackChoice is the candidate the behaviour fallback returns once the
// plan is set aside, by its rule (pipeline.StandIn): the candidates fitted
// on a seeded half of the logs d, their importance-weighted 95% lower
// bounds and paired difference on the other half (pipeline.CandidateBound,
// pipeline.PairedDiff; returns rescaled by the logged range, which orders
// them as the fit's model does), and the rule's choice among the
// deterministic candidates alone.
func fallbackChoice(ctx context.Context, d *ingest.Dataset, seed uint64) (chosen, det string, err error) {
	K := d.NumEpisodes()
	perm := split.Permutation(K, seed)
	a, b := slices.Clone(perm[K/2:]), slices.Clone(perm[:K/2])
	slices.Sort(a)
	slices.Sort(b)
	train, held := d.Subset(a), d.Subset(b)
	scale := &estimate.Model{ReturnMin: math.Inf(1), ReturnMax: math.Inf(-1)}
	for k := range held.NumEpisodes() {
		r := held.Return(k)
		scale.ReturnMin, scale.ReturnMax = math.Min(scale.ReturnMin, r), math.Max(scale.ReturnMax, r)
	}
	cs, err := pipeline.ScoreCandidates(ctx, train, held, scale)
	if err != nil {
		return "", "", err
	}
	chosen, _, err = cs.Returned(scale, held)
	return chosen, pipeline.DeterministicStandIn(cs.Names, cs.Bounds), err
}

// cloneValue is the exact value of the behaviour's clone of kind opts
// fitted on the logs d.
func cloneValue(ctx context.Context, cfg Config, p *problem, H int, d *ingest.Dataset, opts baseline.CloneOptions) (float64, error) {
	opts.AllFirst = true
	pol, err := baseline.BehaviorCloning(ctx, d, opts)
	if err != nil {
		return 0, err
	}
	return pomdp.EvaluatePolicyWithin(ctx, p.m, H, pol, EvalNodesFactor*cfg.MaxNodes)
}

// clonesMarkdown is the clone study's table: per (H, K, behaviour, family)
// the normalized regret of the three candidates (median, 90th
// percentile, worst), how many are worse than the behaviour (regret > 1;
// for the improved behaviour also by more than worseMargin), on how many
// problems the improved clone is better or worse than the clone by more
// than worseMargin, and the improved behaviour than the improved clone.
// Problems with V* = V^b are left out.
func clonesMarkdown(rows []CloneRow) string {
	order, g := cloneGroups(rows)
	var b strings.Builder
	b.WriteString("| H | K | behaviour | family | problems | clone: median, p90, worst | clone worse than the behaviour | improved: median, p90, worst | improved worse than the behaviour | improved better / worse by > 0.05 | improved behaviour: median, p90, worst | improved behaviour worse than the behaviour (> 1, > 1.05) | improved behaviour better / worse than the improved clone by > 0.05 | returned (clone, improved clone, improved behaviour) | returned: median, p90, worst | returned worse than the behaviour (> 1, > 1.05) | deterministic rule: median, p90, worst | deterministic rule worse than the behaviour (> 1) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range order {
		writeCloneRow(&b, c, g[c])
	}
	return b.String()
}

// cloneCell is one (H, K, behaviour, family) of the clone study's table.
type cloneCell struct {
	H, K     int
	Behavior string
	Family   string
}

// cloneGroups groups the runs that have a normalized regret by cell, the
// cells ordered by H, K and behaviour (the families in the order they
// first appear).
func cloneGroups(rows []CloneRow) ([]cloneCell, map[cloneCell][]CloneRow) {
	g := map[cloneCell][]CloneRow{}
	var order []cloneCell
	for _, r := range rows {
		if math.IsNaN(r.Regret(r.Clone)) {
			continue
		}
		c := cloneCell{r.H, r.K, r.Behavior, r.Family}
		if _, ok := g[c]; !ok {
			order = append(order, c)
		}
		g[c] = append(g[c], r)
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].less(order[j]) })
	return order, g
}

// less orders the cells by H, K and behaviour.
func (a cloneCell) less(b cloneCell) bool {
	if a.H != b.H {
		return a.H < b.H
	}
	if a.K != b.K {
		return a.K < b.K
	}
	return a.Behavior < b.Behavior
}

// writeCloneRow writes cell c's row: both clones' regret quantiles, how
// many are worse than the behaviour, and how often the improved clone is
// better or worse than the clone by more than worseMargin.
func writeCloneRow(b *strings.Builder, c cloneCell, rs []CloneRow) {
	var t cloneTally
	for _, r := range rs {
		t.add(r)
	}
	fmt.Fprintf(b, "| %d | %s | %s | %s | %d | %s, %s, %s | %d | %s, %s, %s | %d | %d / %d | %s, %s, %s | %d, %d | %d / %d | %d, %d, %d | %s, %s, %s | %d, %d | %s, %s, %s | %d |\n", c.H, kLabel(c.K), c.Behavior, c.Family, len(rs),
		f3(quantile(t.cl, 0.5)), f3(quantile(t.cl, 0.9)), f3(quantile(t.cl, 1)), t.clBad,
		f3(quantile(t.im, 0.5)), f3(quantile(t.im, 0.9)), f3(quantile(t.im, 1)), t.imBad, t.better, t.worse,
		f3(quantile(t.mx, 0.5)), f3(quantile(t.mx, 0.9)), f3(quantile(t.mx, 1)), t.mxBad, t.mxBadMargin, t.mxBetter, t.mxWorse,
		t.chosen[pipeline.PlannerClone], t.chosen[pipeline.PlannerImprovedClone], t.chosen[pipeline.PlannerImprovedBehavior],
		f3(quantile(t.ch, 0.5)), f3(quantile(t.ch, 0.9)), f3(quantile(t.ch, 1)), t.chBad, t.chBadMargin,
		f3(quantile(t.dt, 0.5)), f3(quantile(t.dt, 0.9)), f3(quantile(t.dt, 1)), t.dtBad)
}

// cloneTally accumulates a cell's regrets of the clone (cl) and of the
// improved clone (im), how many of each are worse than the behaviour, and
// how often the improved clone is better or worse than the clone.
type cloneTally struct {
	cl, im, mx                  []float64
	better, worse, clBad, imBad int
	// The improved behaviour: worse than the behaviour (regret > 1, and
	// > 1 + worseMargin), better or worse than the improved clone.
	mxBad, mxBadMargin, mxBetter, mxWorse int
	// The candidate the fallback's rule returns: how often each, its
	// regrets, how many worse than the behaviour.
	chosen             map[string]int
	ch, dt             []float64
	chBad, chBadMargin int
	dtBad              int
}

// add takes in one configuration's row.
func (t *cloneTally) add(r CloneRow) {
	x, y := r.Regret(r.Clone), r.Regret(r.Improved)
	t.cl, t.im = append(t.cl, x), append(t.im, y)
	if y < x-worseMargin {
		t.better++
	} else if y > x+worseMargin {
		t.worse++
	}
	if x > 1 {
		t.clBad++
	}
	if y > 1 {
		t.imBad++
	}
	z := r.Regret(r.Mixed)
	t.mx = append(t.mx, z)
	switch {
	case z < y-worseMargin:
		t.mxBetter++
	case z > y+worseMargin:
		t.mxWorse++
	}
	if z > 1 {
		t.mxBad++
	}
	if z > 1+worseMargin {
		t.mxBadMargin++
	}
	if t.chosen == nil {
		t.chosen = map[string]int{}
	}
	t.chosen[r.Chosen]++
	w := r.Regret(r.ChosenValue)
	t.ch = append(t.ch, w)
	if w > 1 {
		t.chBad++
	}
	if w > 1+worseMargin {
		t.chBadMargin++
	}
	u := r.Regret(r.DeterministicValue)
	t.dt = append(t.dt, u)
	if u > 1 {
		t.dtBad++
	}
}
