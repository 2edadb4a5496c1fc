// Command gap measures the belief planner's planning loss apart from the
// model's: it plans on a benchmark POMDP's true model (pomdp.TrueModel,
// α = 0, so neither EM nor the bonus enters) with several numbers of
// belief points, and prints per plan the stated gap (the planner's
// distance from its upper bound of the optimum, as a share of the return
// range; the upper bound as fit states it for its final plan), the true normalized regret (V* − V^π)/(V* − V^b) of the
// controller (exact, or Monte Carlo with its standard error past 2·10⁷
// histories) and the planning time.
//
// Usage:
//
//	go run ./bench/gap --pomdp ../shared/pomdp/cheese.95.POMDP --horizon 20 [--points 250,500,1000] [--hull]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
	"github.com/psrlcb/psrlcb/split"
)

func main() {
	file := flag.String("pomdp", "", "benchmark POMDP file (Cassandra's format)")
	H := flag.Int("horizon", 20, "steps per episode")
	pts := flag.String("points", "250,500,1000", "belief points per step, comma-separated")
	rows := flag.Int64("rows", 0, "table rows (0: the planner's default)")
	hull := flag.Bool("hull", false, "interpolate the upper bound by the convex hull of its points (fit --hull-bound)")
	flag.Parse()
	if err := run(context.Background(), *file, *H, *pts, *rows, *hull); err != nil {
		fmt.Fprintln(os.Stderr, "gap:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, file string, H int, pts string, rows int64, hull bool) error {
	m, beh, err := loadUniform(file)
	if err != nil {
		return err
	}
	g := &gapStudy{m: m, H: H, rows: rows, hull: hull}
	if err := g.trueModel(ctx, beh); err != nil {
		return err
	}
	if err := g.references(ctx, beh); err != nil {
		return err
	}
	fmt.Printf("%s H=%d: V*=%.5g V^b=%.5g, %d states\n", m.Name, H, g.vStar, g.vb, g.truth.States)
	fmt.Printf("%8s %10s %10s %16s %8s %10s\n", "points", "gap", "rollout", "regret", "rows", "plan s")
	return g.planAll(ctx, pts)
}

// loadUniform reads the POMDP file and the uniform behaviour on it.
func loadUniform(file string) (*pomdp.POMDP, pomdp.Behavior, error) {
	m, err := pomdp.ParseFile(file)
	if err != nil {
		return nil, nil, err
	}
	beh, err := pomdp.ParseBehavior("uniform", m)
	return m, beh, err
}

// planAll plans with each of the comma-separated numbers of belief
// points and prints their rows.
func (g *gapStudy) planAll(ctx context.Context, pts string) error {
	for _, f := range strings.Split(pts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		if err := g.plan(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// gapStudy is the planning study of one problem: its true model in the
// fit's form with an α = 0 bonus, the references V* and V^b, and the
// planner's row budget.
type gapStudy struct {
	m         *pomdp.POMDP
	H         int
	rows      int64
	hull      bool
	truth     *estimate.Model
	b         *pessimism.Bonus
	vStar, vb float64
}

// trueModel writes the true model in the fit's form and its bonus at
// α = 0. A small log fixes the vocabularies and gives the bonus its
// (unused, α = 0) covariances.
func (g *gapStudy) trueModel(ctx context.Context, beh pomdp.Behavior) error {
	const K = 2000
	d, err := pomdp.SimulateDataset(ctx, g.m, g.H, K, beh, 1)
	if err != nil {
		return err
	}
	if g.truth, err = g.m.TrueModel(d); err != nil {
		return err
	}
	return g.zeroBonus(ctx, d, K)
}

// zeroBonus sets the true model's bonus at α = 0, its covariances from
// the log d of K episodes.
func (g *gapStudy) zeroBonus(ctx context.Context, d *ingest.Dataset, K int) error {
	splits, err := split.Split(K, g.H, 1)
	if err != nil {
		return err
	}
	b, err := pessimism.Build(ctx, g.truth, d, splits, pessimism.Options{})
	if err != nil {
		return err
	}
	g.b = b.WithAlpha(0)
	return nil
}

// references computes V* (the model's largest return when there are too
// many beliefs, said in a line) and the behaviour's value V^b.
func (g *gapStudy) references(ctx context.Context, beh pomdp.Behavior) error {
	var err error
	g.vStar, _, err = pomdp.OptimalWithin(ctx, g.m, g.H, 20_000_000)
	if errors.Is(err, pomdp.ErrTooLarge) {
		g.vStar = g.truth.ReturnMax // unknown: regret against the return range's top
		fmt.Println("V* not computed (too many beliefs); regret is against the model's largest return")
	} else if err != nil {
		return err
	}
	g.vb, err = pomdp.BehaviorValueWithin(ctx, g.m, g.H, beh, 20_000_000)
	return err
}

// plan plans on the true model with n belief points per step and prints
// the plan's row: the stated gap, the rollout mass, the true normalized
// regret, the table rows and the planning time.
func (g *gapStudy) plan(ctx context.Context, n int) error {
	start := time.Now()
	pol, st, err := policy.Plan(ctx, g.truth, g.b, policy.PlanOptions{Planner: policy.PlannerBelief, Points: n, RowBudget: g.rows, TightBound: true, HullBound: g.hull})
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	v, se, err := g.value(ctx, pol)
	if err != nil {
		return err
	}
	fmt.Printf("%8d %10.4f %10.3g %16s %8d %10.1f\n", n, st.GapBound, st.RolloutMass, g.regret(v, se), st.Nodes, secs)
	return nil
}

// regret is the normalized regret of a plan of value v, with its
// standard error when the value is estimated (se > 0).
func (g *gapStudy) regret(v, se float64) string {
	reg := fmt.Sprintf("%.4f", (g.vStar-v)/(g.vStar-g.vb))
	if se > 0 {
		reg += fmt.Sprintf("±%.4f", se/(g.vStar-g.vb))
	}
	return reg
}

// value is pol's true value: exact, or Monte Carlo with its standard
// error past 2·10⁷ histories.
func (g *gapStudy) value(ctx context.Context, pol *policy.Policy) (v, se float64, err error) {
	if v, err = pomdp.EvaluatePolicyWithin(ctx, g.m, g.H, pol, 20_000_000); errors.Is(err, pomdp.ErrTooLarge) {
		v, se, err = pomdp.SimulatePolicy(ctx, g.m, g.H, pol, 100_000, 1)
	}
	return v, se, err
}
