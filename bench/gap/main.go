// Command gap measures the belief planner's planning loss apart from the
// model's: it plans on a benchmark POMDP's true model (pomdp.TrueModel,
// α = 0, so neither EM nor the bonus enters) with several numbers of
// belief points, and prints per plan the stated gap (the planner's
// distance from its upper bound of the optimum, as a share of the return
// range), the true normalized regret (V* − V^π)/(V* − V^b) of the
// controller (exact, or Monte Carlo with its standard error past 2·10⁷
// histories) and the planning time.
//
// Usage:
//
//	go run ./bench/gap --pomdp ../shared/pomdp/cheese.95.POMDP --horizon 20 [--points 250,500,1000]
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
	flag.Parse()
	if err := run(context.Background(), *file, *H, *pts, *rows); err != nil {
		fmt.Fprintln(os.Stderr, "gap:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, file string, H int, pts string, rows int64) error {
	m, err := pomdp.ParseFile(file)
	if err != nil {
		return err
	}
	beh, err := pomdp.ParseBehavior("uniform", m)
	if err != nil {
		return err
	}
	// A small log fixes the vocabularies and gives the bonus its
	// (unused, α = 0) covariances.
	const K = 2000
	d, err := pomdp.SimulateDataset(ctx, m, H, K, beh, 1)
	if err != nil {
		return err
	}
	truth, err := m.TrueModel(d)
	if err != nil {
		return err
	}
	splits, err := split.Split(K, H, 1)
	if err != nil {
		return err
	}
	b, err := pessimism.Build(ctx, truth, d, splits, pessimism.Options{})
	if err != nil {
		return err
	}
	b = b.WithAlpha(0)
	vStar, _, err := pomdp.OptimalWithin(ctx, m, H, 20_000_000)
	if errors.Is(err, pomdp.ErrTooLarge) {
		vStar = truth.ReturnMax // unknown: regret against the return range's top
		fmt.Println("V* not computed (too many beliefs); regret is against the model's largest return")
	} else if err != nil {
		return err
	}
	vb, err := pomdp.BehaviorValueWithin(ctx, m, H, beh, 20_000_000)
	if err != nil {
		return err
	}
	fmt.Printf("%s H=%d: V*=%.5g V^b=%.5g, %d states\n", m.Name, H, vStar, vb, truth.States)
	fmt.Printf("%8s %10s %10s %16s %8s %10s\n", "points", "gap", "rollout", "regret", "rows", "plan s")
	for _, f := range strings.Split(pts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		start := time.Now()
		pol, st, err := policy.Plan(ctx, truth, b, policy.PlanOptions{Planner: policy.PlannerBelief, Points: n, RowBudget: rows})
		if err != nil {
			return err
		}
		secs := time.Since(start).Seconds()
		v, se := 0.0, 0.0
		if v, err = pomdp.EvaluatePolicyWithin(ctx, m, H, pol, 20_000_000); errors.Is(err, pomdp.ErrTooLarge) {
			v, se, err = pomdp.SimulatePolicy(ctx, m, H, pol, 100_000, 1)
		}
		if err != nil {
			return err
		}
		reg := fmt.Sprintf("%.4f", (vStar-v)/(vStar-vb))
		if se > 0 {
			reg += fmt.Sprintf("±%.4f", se/(vStar-vb))
		}
		fmt.Printf("%8d %10.4f %10.3g %16s %8d %10.1f\n", n, st.GapBound, st.RolloutMass, reg, st.Nodes, secs)
	}
	return nil
}
