package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/arrowio"
)

// sharedPomdp is ../shared/pomdp relative to the repository root (the test
// runs in bench/quality).
var sharedPomdp = filepath.Join("..", "..", "..", "shared", "pomdp")

// reducedSeeds is the number of seeds of the reduced study's test. The
// second target is stated against the seed spread (2 standard errors), so
// the test needs more than one seed to assert it as stated: three seeds of
// K ∈ {10², 10³} take seconds.
const reducedSeeds = 3

// TestReducedStudy runs the reduced study (K ∈ {10², 10³}, every problem,
// both behaviours, reducedSeeds seeds: 60 configurations, seconds on 2
// cores) and asserts the study's first two targets exactly as the full
// study states them:
//
//  1. the LCB is at or below the exact value of the PSR-LCB policy in at
//     least 95% of the runs (with N = 60 runs, at most 3 violations);
//  2. in every (problem, behaviour, K) cell, the mean of V^π̄ over the seeds
//     is at least V^b − 2 SE of the seed spread.
func TestReducedStudy(t *testing.T) {
	if _, err := os.Stat(sharedPomdp); err != nil {
		t.Skipf("benchmark POMDPs not found at %s (they live outside the repository): %v", sharedPomdp, err)
	}
	o := options{pomdpDir: sharedPomdp, ks: "100,1000", seeds: reducedSeeds, restarts: defaultRestarts, maxIter: defaultMaxIter}
	cfg, err := configFromOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Run(context.Background(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(rows), len(Problems)*len(Behaviors)*2*reducedSeeds*len(Methods); got != want {
		t.Fatalf("%d rows, want %d", got, want)
	}
	ix := newIndex(rows)

	v1, n, bad := lcbTarget(ix)
	for _, d := range v1.Detail {
		t.Log(d)
	}
	if maxBad := int(math.Floor((1 - lcbCoverage) * float64(n))); bad > maxBad {
		t.Errorf("LCB above the true value in %d of %d runs; at most %d allowed", bad, n, maxBad)
	}

	v2, _ := behaviorTarget(ix, singleSeedMargin)
	for _, d := range v2.Detail {
		t.Log(d)
	}
	if !v2.Met {
		t.Errorf("%s: not met", v2.Name)
	}

	// The reference rows must carry the exact values they stand for.
	for _, r := range rows {
		switch r.Method {
		case "optimal":
			if r.Regret != 0 {
				t.Errorf("%s %s: optimal row has regret %g", r.Problem, r.Behavior, r.Regret)
			}
		case "behavior":
			if math.Abs(float64(r.Regret)-1) > 1e-12 {
				t.Errorf("%s %s: behaviour row has regret %g", r.Problem, r.Behavior, r.Regret)
			}
		default:
			if float64(r.Value) > float64(r.Optimal)+1e-9 {
				t.Errorf("%s %s K=%d %s: value %.6g above the optimum %.6g", r.Problem, r.Behavior, r.K, r.Method, r.Value, r.Optimal)
			}
		}
	}
}

// The table written for the full study must read back with the same values.
func TestArrowRoundTrip(t *testing.T) {
	rows := []Row{
		{Problem: "p", Horizon: 4, Behavior: "uniform", K: 100, Seed: 0, Method: "psrlcb", Value: 1.5, Optimal: 2, BehaviorValue: 0, Regret: 0.25,
			LCBUnits: -1, ModelUnits: 1.4, BonusValue: 0.3, IWLowUnits: nan, Alpha: 0.3, Rank: 2, FitSeconds: 0.1, PlanExact: true, ReturnMin: -3, ReturnMax: 4},
		{Problem: "p", Horizon: 4, Behavior: "uniform", K: 100, Seed: 0, Method: "clone", Value: 0.5, Optimal: 2, BehaviorValue: 0, Regret: 0.75,
			LCBUnits: nan, ModelUnits: nan, BonusValue: nan, IWLowUnits: nan, Alpha: nan, FitSeconds: 0.01, ReturnMin: -3, ReturnMax: 4},
	}
	path := filepath.Join(t.TempDir(), "q.arrow")
	if err := writeArrow(path, rows, map[string]string{"study": "test"}); err != nil {
		t.Fatal(err)
	}
	tab, err := arrowio.ReadArrow(path)
	if err != nil {
		t.Fatal(err)
	}
	reg, ok := tab.Column("normalized_regret")
	if !ok || len(reg.Float64) != 2 || reg.Float64[0] != 0.25 || reg.Float64[1] != 0.75 {
		t.Fatalf("normalized_regret column %+v", reg)
	}
	lcb, _ := tab.Column("lcb_units")
	if lcb.Float64[0] != -1 || !math.IsNaN(lcb.Float64[1]) {
		t.Fatalf("lcb_units column %v, want [-1 NaN]", lcb.Float64)
	}
	m, _ := tab.Column("method")
	if m.String[0] != "psrlcb" || m.String[1] != "clone" {
		t.Fatalf("method column %v", m.String)
	}
}

func TestStats(t *testing.T) {
	const tol = 1e-12
	nanv := math.NaN()
	if got := median([]float64{3, 1, nanv, 2}); got != 2 {
		t.Errorf("median odd = %g, want 2", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median even = %g, want 2.5", got)
	}
	if !math.IsNaN(median([]float64{nanv})) {
		t.Error("median of no values is not NaN")
	}
	// Values 1,2,3,4: mean 2.5, sample sd sqrt(5/3), SE sqrt(5/3)/2.
	m, se := meanSE([]float64{1, 2, 3, 4})
	if m != 2.5 || math.Abs(se-math.Sqrt(5.0/3)/2) > tol {
		t.Errorf("meanSE = %g, %g", m, se)
	}
	if _, se := meanSE([]float64{7}); se != 0 {
		t.Errorf("SE of one value = %g, want 0", se)
	}
	// y = 3/√x exactly: slope −0.5; the point below the floor is ignored.
	xs := []float64{100, 1000, 10000, 100000}
	ys := []float64{0.3, 0.3 / math.Sqrt(10), 0.03, 0}
	if got := logSlope(xs, ys, 0.01); math.Abs(got+0.5) > tol {
		t.Errorf("slope = %g, want −0.5", got)
	}
	if got := logSlope(xs, []float64{0.5, 0, 0, 0}, 0.01); !math.IsNaN(got) {
		t.Errorf("slope through one point = %g, want NaN", got)
	}
	if got := normRegret(2, -2, 1); got != 0.25 {
		t.Errorf("normRegret = %g, want 0.25", got)
	}
	if !math.IsNaN(normRegret(1, 1, 1)) {
		t.Error("normRegret with V* = V^b is not NaN")
	}
}

// Hand-made rows with known verdicts for every target.
func TestTargets(t *testing.T) {
	var rows []Row
	add := func(p, b string, K, seed int, method string, v, lcb float64) {
		opt, vb := 1.0, 0.0
		rows = append(rows, Row{Problem: p, Behavior: b, K: K, Seed: seed, Method: method, Value: jfloat(v),
			Optimal: jfloat(opt), BehaviorValue: jfloat(vb), Regret: jfloat(normRegret(opt, vb, v)), LCBUnits: jfloat(lcb)})
	}
	// Problem a: PSR-LCB regret 0.5 at K=100, 0.05 at 10⁴ (slope −0.5);
	// greedy worse; tabular worse. Problem b: PSR-LCB below V^b at K=100
	// on the narrow logs, with an LCB above its value on one seed.
	for s := 0; s < 2; s++ {
		add("a", "uniform", 100, s, "psrlcb", 0.5, 0.4)
		add("a", "uniform", 10000, s, "psrlcb", 0.95, 0.9)
		add("a", "myopic:0.1", 100, s, "psrlcb", 0.6, 0.1)
		add("a", "myopic:0.1", 100, s, "greedy", 0.2, math.NaN())
		add("a", "myopic:0.1", 100, s, "tabular", 0.3, math.NaN())
		add("b", "uniform", 100, s, "psrlcb", 0.9, 0.1)
		add("b", "uniform", 10000, s, "psrlcb", 1, 0.5)
		add("b", "myopic:0.1", 100, s, "psrlcb", -0.5-0.1*float64(s), -1+1.2*float64(s))
		add("b", "myopic:0.1", 100, s, "greedy", 0.1, math.NaN())
		add("b", "myopic:0.1", 100, s, "tabular", 0.1, math.NaN())
	}
	ix := newIndex(rows)
	v1, n, bad := lcbTarget(ix)
	if n != 12 || bad != 1 || v1.Met { // 11/12 = 91.7% < 95%
		t.Errorf("lcb target: n=%d bad=%d met=%v, want 12, 1, false", n, bad, v1.Met)
	}
	// b/myopic: mean −0.55, SE 0.05, V^b = 0: −0.55 < −0.1 → one bad cell.
	if v2, nb := behaviorTarget(ix, 0.1); nb != 1 || v2.Met {
		t.Errorf("behaviour target: %d bad, met=%v; want 1, false", nb, v2.Met)
	}
	// Seeds that agree exactly (SE 0) or nearly get the single-seed
	// margin, 0.1 of V* − V^b = 1: c at −0.05 and e at −0.05 ± 10⁻⁴ pass,
	// d at −0.2 does not.
	rows0 := rows
	for s := 0; s < 3; s++ {
		add("c", "myopic:0.1", 100, s, "psrlcb", -0.05, -1)
		add("d", "myopic:0.1", 100, s, "psrlcb", -0.2, -1)
		add("e", "myopic:0.1", 100, s, "psrlcb", -0.05+1e-4*float64(s-1), -1)
	}
	if v, nb := behaviorTarget(newIndex(rows[len(rows0):]), 0.1); nb != 1 || v.Met || !strings.Contains(strings.Join(v.Detail, "\n"), "worse: d,") {
		t.Errorf("behaviour target with agreeing seeds: %d bad, met=%v, %v; want d alone", nb, v.Met, v.Detail)
	}
	rows = rows0
	g, tb := narrowTarget(ix, "myopic:0.1")
	// a: 0.4 < 0.8 (win); b: 1.55 > 0.9 (loss): 1 of 2, need ceil(1.2)=2.
	if g.Met || !strings.Contains(g.Detail[0], "below on 1 of 2 problems (need 2)") {
		t.Errorf("greedy target: %v %q", g.Met, g.Detail[0])
	}
	if tb.Met || !strings.Contains(tb.Detail[0], "1 (problem, K) cells above") {
		t.Errorf("tabular target: %v %q", tb.Met, tb.Detail[0])
	}
	a, s := rateTarget(ix, "uniform")
	if !a.Met {
		t.Errorf("rate target at the largest K not met: %v", a.Detail)
	}
	if !s.Met || !strings.Contains(strings.Join(s.Detail, "\n"), "a: slope -0.50") {
		t.Errorf("slope target: %v %v", s.Met, s.Detail)
	}
}

func TestCheckpointAndSplice(t *testing.T) {
	dir := t.TempDir()
	r := Row{Problem: "p", Behavior: "uniform", K: 100, Method: "psrlcb", Value: 1, LCBUnits: nan}
	b, err := json.Marshal(checkpointLine{FP: "x", Rows: []Row{r}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "c.jsonl")
	other, _ := json.Marshal(checkpointLine{FP: "y", Rows: []Row{{Problem: "q"}}})
	if err := os.WriteFile(path, append(append(b, '\n'), append(other, '\n')...), 0o644); err != nil {
		t.Fatal(err)
	}
	done, err := readCheckpoint(path, "x")
	if err != nil {
		t.Fatal(err)
	}
	got, ok := done[r.key()]
	if len(done) != 1 || !ok || got[0].Value != 1 || !math.IsNaN(float64(got[0].LCBUnits)) {
		t.Fatalf("checkpoint read back %+v", done)
	}
	if err := os.WriteFile(path, []byte("{bad\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readCheckpoint(path, "x"); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("corrupt checkpoint: err = %v, want one naming line 1", err)
	}

	md := filepath.Join(dir, "v.md")
	text := "# T\n\nprose before\n\n" + beginMarker + "\nold\n" + endMarker + "\n\nprose after\n"
	if err := os.WriteFile(md, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := spliceResults(md, "new", "small"); err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(md)
	want := "# T\n\nprose before\n\n" + beginMarker + "\nnew\n" + endMarker + "\n\nprose after\n"
	if string(out) != want {
		t.Errorf("spliced file:\n%s\nwant:\n%s", out, want)
	}
	if err := os.WriteFile(md, []byte("no markers"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := spliceResults(md, "new", "small"); err == nil {
		t.Error("splice into a file without markers succeeded")
	}
	// The larger tier appends its markers when missing and leaves the
	// small tier's block alone.
	if err := os.WriteFile(md, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := spliceResults(md, "big", "larger"); err != nil {
		t.Fatal(err)
	}
	out, _ = os.ReadFile(md)
	want2 := want + "\n" + largerBeginMarker + "\nbig\n" + largerEndMarker + "\n"
	if string(out) != want2 {
		t.Errorf("larger tier spliced file:\n%s\nwant:\n%s", out, want2)
	}
	if err := spliceResults(md, "bigger", "larger"); err != nil {
		t.Fatal(err)
	}
	out, _ = os.ReadFile(md)
	if string(out) != strings.Replace(want2, "\nbig\n", "\nbigger\n", 1) {
		t.Errorf("second larger splice:\n%s", out)
	}
}

// TestSmallKStudy is the reduced small-K study on the tiger model shipped
// in examples/ (so it never skips): K ∈ {10, 30, 100}, both behaviours, 4
// seeds, 24 runs. The LCB must be at or below the policy's exact value in
// at least 95% of them (at most one violation), and no verdict may
// recommend a policy whose exact value is below the behaviour's. With the
// returns rescaled by the range of logged returns (before the model's
// return bounds), 3 of these 24 runs had the bound above the true value.
func TestSmallKStudy(t *testing.T) {
	cfg := Config{PomdpDir: filepath.Join("..", "..", "examples"), Problems: []Problem{{"tiger", "tiger.pomdp", 4}},
		Behavs: Behaviors, Ks: []int{10, 30, 100}, Seeds: 4, Restarts: defaultRestarts, MaxIter: defaultMaxIter}
	rows, err := RunSmallK(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 24 {
		t.Fatalf("%d runs, want 24", len(rows))
	}
	bad := 0
	for _, r := range rows {
		if !r.Holds() {
			bad++
			t.Logf("bound above the true value: %+v", r)
		}
		if r.FalseClaim() {
			t.Errorf("verdict recommends a policy worse than the behaviour: %+v", r)
		}
		if r.K < 30 && r.Evidence != "insufficient" {
			t.Errorf("K = %d: evidence %s, want insufficient", r.K, r.Evidence)
		}
	}
	if maxBad := int(math.Floor((1 - lcbCoverage) * float64(len(rows)))); bad > maxBad {
		t.Errorf("LCB above the true value in %d of %d runs; at most %d allowed", bad, len(rows), maxBad)
	}
	md := smallKMarkdown(rows, cfg)
	if !strings.Contains(md, "| 10 | 8 |") {
		t.Errorf("table:\n%s", md)
	}
}

// TestLargerTierReduced is the reduced larger tier: two of its problems at
// K = 10³, uniform behaviour, one seed, with the rank searched (--rank
// auto, as users run it). It asserts what one seed can: the search
// recorded a rank, PSR-LCB is not worse than the behaviour beyond
// singleSeedMargin of V* − V^b, and the LCB is at or below the true value.
// The full tier is `go run ./bench/quality --tier larger` (see
// docs/validation.md).
func TestLargerTierReduced(t *testing.T) {
	if _, err := os.Stat(sharedPomdp); err != nil {
		t.Skipf("benchmark POMDPs not found at %s (they live outside the repository): %v", sharedPomdp, err)
	}
	if testing.Short() {
		t.Skip("-short")
	}
	o := options{pomdpDir: sharedPomdp, tier: "larger", problems: "mini-hall2,tiger-h10", ks: "1000", seeds: 1,
		restarts: defaultRestarts, maxIter: defaultMaxIter}
	cfg, err := configFromOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.RankAuto || cfg.Tier != "larger" {
		t.Fatalf("larger tier config %+v", cfg)
	}
	cfg.Behavs = []string{"uniform"}
	rows, err := Run(context.Background(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(rows), 2*len(Methods); got != want {
		t.Fatalf("%d rows, want %d", got, want)
	}
	for _, r := range rows {
		if r.Method != "psrlcb" {
			continue
		}
		t.Logf("%s K=%d: rank %d, α %g, regret %.3f, LCB %.4g, V %.4g", r.Problem, r.K, r.Rank, r.Alpha, r.Regret, r.LCBUnits, r.Value)
		if r.Rank < 1 {
			t.Errorf("%s: no rank recorded", r.Problem)
		}
		if float64(r.Regret) > 1+singleSeedMargin {
			t.Errorf("%s: regret %.3f, worse than the behaviour", r.Problem, r.Regret)
		}
		if float64(r.LCBUnits) > float64(r.Value)+1e-9 {
			t.Errorf("%s: LCB %.6g above the true value %.6g", r.Problem, r.LCBUnits, r.Value)
		}
	}
}

// checkpointLine is one line of the study's checkpoint file, as the study
// writes it (internal/checkpoint with field "rows").
type checkpointLine struct {
	FP   string `json:"fp"`
	Rows []Row  `json:"rows"`
}
