package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/arrowio"
)

// reducedProblems is the number of problems per family of the reduced
// study: small problems (at most 9 states), K = 2000, H = 3, both
// behaviours — 24 fits, seconds each on 2 cores.
const reducedProblems = 4

func reducedConfig() Config {
	return Config{Families: familiesDefault, Small: true, Problems: reducedProblems, Horizons: []int{3},
		Behavs: Behaviors, Ks: []int{2000}, Seed: 1, Restarts: 2, MaxIter: 100, Workers: 2}
}

// TestReducedStudy runs the reduced study and checks what must hold on
// every run, whatever the fit:
//   - no policy is worth more than the exact optimum V*;
//   - the loss decomposition adds up: est + plan + over + bonus is the
//     normalized regret of PSR-LCB;
//   - with an exact greedy plan the planning term is ≤ 0 (the model
//     prefers its own optimum to the true optimal policy);
//
// and the study's headline on these easy problems: on uniform logs the
// median normalized regret of PSR-LCB is at most 0.1.
func TestReducedStudy(t *testing.T) {
	if testing.Short() {
		t.Skip("reduced stress study skipped in -short mode")
	}
	cfg := reducedConfig()
	var got []Row
	rows, err := Run(context.Background(), cfg, nil, func(r Row) error { got = append(got, r); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if want := len(cfg.Families) * reducedProblems * len(Behaviors); len(rows) != want || len(got) != want {
		t.Fatalf("%d rows (%d emitted), want %d", len(rows), len(got), want)
	}
	const tol = 1e-9
	for _, r := range rows {
		for name, v := range map[string]jfloat{"psrlcb": r.PSRLCB, "greedy": r.Greedy, "tabular": r.Tabular} {
			if float64(v) > float64(r.Optimal)+tol {
				t.Errorf("%s %d %s: %s value %v above V* %v", r.Family, r.Problem, r.Behavior, name, v, r.Optimal)
			}
		}
		if r.Clone == nil {
			t.Errorf("%s %d %s: the fallback's decision is not recorded", r.Family, r.Problem, r.Behavior)
		}
		reg := r.Regret(r.PSRLCB)
		if math.IsNaN(reg) {
			continue
		}
		if sum := r.EstErr() + r.PlanGap() + r.GreedyOver() + r.BonusLoss(); math.Abs(sum-reg) > 1e-9 {
			t.Errorf("%s %d %s: decomposition adds to %v, regret %v", r.Family, r.Problem, r.Behavior, sum, reg)
		}
		if r.PlanGap() > 1e-6 {
			t.Logf("%s %d %s: the model values π* above its greedy plan by %v (plan exact %v)", r.Family, r.Problem, r.Behavior, r.PlanGap(), r.PlanExact)
		}
	}
	order, g := groups(rows)
	for _, c := range order {
		s := summarise(g[c])
		t.Logf("%s %s: median %.3f p90 %.3f worst %.3f; est %.3f plan %.3f over %.3f bonus %.3f", c.Family, c.Behavior, s.Median, s.P90, s.Worst, s.Est, s.Plan, s.Over, s.Bonus)
		if c.Behavior == "uniform" && s.Median > 0.1 {
			t.Errorf("%s uniform: median normalized regret %.3f > 0.1", c.Family, s.Median)
		}
	}
	// The outputs: an Arrow table with one row per run, and the results
	// spliced into stress.md beside the two plots.
	dir := t.TempDir()
	if err := writeArrow(filepath.Join(dir, "s.arrow"), rows, map[string]string{"study": "stress"}); err != nil {
		t.Fatal(err)
	}
	tb, err := arrowio.ReadArrow(filepath.Join(dir, "s.arrow"))
	if err != nil || tb.Rows() != len(rows) {
		t.Fatalf("arrow: %v, %d rows", err, tb.Rows())
	}
	md := resultsMarkdown(rows, cfg)
	if err := writeDocs(dir, rows, md); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "stress.md"))
	if err != nil || !strings.Contains(string(b), "| maze | uniform | 3 | 2000 |") {
		t.Fatalf("stress.md: %v\n%s", err, b)
	}
	// Resuming from the emitted rows runs nothing again.
	done := map[key]Row{}
	for _, r := range got {
		done[r.key()] = r
	}
	again, err := Run(context.Background(), cfg, done, func(Row) error { t.Fatal("a finished run ran again"); return nil })
	if err != nil || len(again) != len(rows) {
		t.Fatalf("resume: %v, %d rows", err, len(again))
	}
}

// TestQuantile checks the interpolated quantile on a hand-sorted sample.
func TestQuantile(t *testing.T) {
	xs := []float64{3, math.NaN(), 1, 2, 4}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.5, 2.5}, {0.9, 3.7}, {1, 4}} {
		if got := quantile(xs, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("quantile %v = %v, want %v", c.q, got, c.want)
		}
	}
	if !math.IsNaN(quantile([]float64{math.NaN()}, 0.5)) {
		t.Error("quantile of no finite value is not NaN")
	}
}

// TestSkipBeyondBudget: with a node budget too small for any exact
// reference, every configuration is skipped with the reason, emitted (so a
// resumed study does not try it again) and left out of the measured rows.
func TestSkipBeyondBudget(t *testing.T) {
	cfg := reducedConfig()
	cfg.Problems, cfg.MaxNodes = 1, 1
	var emitted []Row
	rows, err := Run(context.Background(), cfg, nil, func(r Row) error { emitted = append(emitted, r); return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := len(cfg.Families) * len(Behaviors)
	if len(rows) != want || len(emitted) != want {
		t.Fatalf("%d rows (%d emitted), want %d", len(rows), len(emitted), want)
	}
	for _, r := range rows {
		if !strings.Contains(r.Skipped, "node budget") {
			t.Errorf("%s %d %s: skipped = %q, want the budget named", r.Family, r.Problem, r.Behavior, r.Skipped)
		}
	}
	if m, n := Measured(rows); len(m) != 0 || n != want {
		t.Errorf("Measured: %d measured, %d skipped; want 0 and %d", len(m), n, want)
	}
	// Resuming from the emitted rows runs nothing.
	done := map[key]Row{}
	for _, r := range emitted {
		done[r.key()] = r
	}
	again, err := Run(context.Background(), cfg, done, func(r Row) error { t.Errorf("re-ran %v", r.key()); return nil })
	if err != nil || len(again) != want {
		t.Errorf("resume: %d rows, %v", len(again), err)
	}
}

// TestClones: on the reduced families with narrow logs (6 problems each,
// H = 3, K = 3000) one clone is worse than the behaviour (aliased, regret
// 1.05); the improved clone is worse than the behaviour on none and
// better than the clone where they differ, and the improved behaviour
// worse than the behaviour by more than 0.05 on none. All are valued
// exactly, and none above the optimum. The table has a row per family.
func TestClones(t *testing.T) {
	cfg := Config{Families: familiesDefault, Small: true, Problems: 6, Horizons: []int{3}, Behavs: []string{"myopic:0.1"},
		Ks: []int{3000}, Seed: 1}
	rows, err := RunClones(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 18 {
		t.Fatalf("%d rows, want 18", len(rows))
	}
	cloneBad, better := 0, 0
	for _, r := range rows {
		for _, v := range []float64{r.Clone, r.Improved, r.Mixed} {
			if v > r.Optimal+1e-9 {
				t.Errorf("%+v: a clone above the optimum", r)
			}
		}
		c, g := r.Regret(r.Clone), r.Regret(r.Improved)
		if g > 1 {
			t.Errorf("%+v: improved clone regret %.3f, worse than the behaviour", r, g)
		}
		// The improved behaviour plays the logged shares where it does not
		// depart: its value is the behaviour's up to their estimation.
		if x := r.Regret(r.Mixed); x > 1+worseMargin {
			t.Errorf("%+v: improved behaviour regret %.3f, worse than the behaviour", r, x)
		}
		if c > 1 {
			cloneBad++
		}
		if g < c-worseMargin {
			better++
		}
	}
	if cloneBad == 0 || better == 0 {
		t.Errorf("%d clones worse than the behaviour, %d improved clones better than the clone: want both > 0", cloneBad, better)
	}
	md := clonesMarkdown(rows)
	for _, fam := range familiesDefault {
		if !strings.Contains(md, "| myopic:0.1 | "+fam+" | 6 |") {
			t.Errorf("no row for %s:\n%s", fam, md)
		}
	}
}
