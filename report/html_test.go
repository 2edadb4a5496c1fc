package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
)

func TestNum(t *testing.T) {
	for _, c := range []struct {
		x    float64
		sig  int
		want string
	}{
		{-21.688119135434998, 4, "−21.69"}, // log_p_min, once printed with 17 digits
		{0.9078123, 4, "0.9078"},
		{-123.456, 4, "−123.5"},
		{5000, 4, "5000"},
		{123456, 3, "123000"},
		{0.00409912, 3, "0.0041"},
		{1.2e-6, 3, "1.2e-6"},
		{0.1 + 0.2, 6, "0.3"},
		{1, 4, "1"},
		{0, 4, "0"},
		{-0.00001, 2, "−1e-5"},
		{math.NaN(), 4, "—"},
		{math.Inf(1), 4, "∞"},
	} {
		if got := num(c.x, c.sig); got != c.want {
			t.Errorf("num(%v, %d) = %q, want %q", c.x, c.sig, got, c.want)
		}
	}
	for x, want := range map[float64]string{0: "0%", 0.0004: "<0.1%", 0.0123: "1.2%", 0.5: "50%", 0.9996: ">99.9%", 1: "100%"} {
		if got := pct(x); got != want {
			t.Errorf("pct(%v) = %q, want %q", x, got, want)
		}
	}
}

func TestQuantile(t *testing.T) {
	// Type-7 quantiles of 1..5 by hand: position p·(n−1).
	v := []float64{1, 2, 3, 4, 5}
	for p, want := range map[float64]float64{0: 1, 0.25: 2, 0.5: 3, 0.05: 1.2, 0.95: 4.8, 1: 5} {
		if got := quantile(v, p); math.Abs(got-want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", p, got, want)
		}
	}
	q := summarize([]float64{5, 1, 4, 2, 3})
	if q.Q50 != 3 || q.Max != 5 || q.Q25 != 2 || q.Q75 != 4 {
		t.Errorf("summarize = %+v", q)
	}
}

// A departure needs a − b > 2√(a+b): at 100 visits split 60/40 the gap
// is exactly 2 standard deviations (not clear), 61/39 is past it.
func TestClearlyMore(t *testing.T) {
	for _, c := range []struct {
		a, b int64
		want bool
	}{{60, 40, false}, {61, 39, true}, {1, 0, false}, {5, 0, true}, {34, 33, false}, {3400, 3300, false}, {3500, 3200, true}} {
		if got := clearlyMore(c.a, c.b); got != c.want {
			t.Errorf("clearlyMore(%d, %d) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestStageOrder(t *testing.T) {
	got := orderedStages(map[string]float64{"split": 0.001, "estimate": 3.5, "ingest": 0.03, "report": 0.2, "select-α": 25.55, "policy": 0, "pessimism": 0.5})
	want := []string{"ingest", "select-α", "split", "estimate", "pessimism", "policy", "report", "total"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i][0] != want[i] {
			t.Errorf("row %d is %s, want %s", i, got[i][0], want[i])
		}
	}
	if got[1][1] != "25.6 s" || got[2][1] != "<0.01 s" || got[7][1] != "29.8 s" {
		t.Errorf("times %v", got)
	}
}

// A two-step policy on a hand-made log: root "a" → act "x"; after it
// observation "a" → "y", "b" → "x". Episodes (o1 a1 o2 a2):
//
//	a x a y   follows the policy to the end
//	a x b y   reaches node (a,b) and departs there (policy says x)
//	a y a x   departs at the root
//	a x a y
//
// Root: 4 visits, x taken 3 times. Node (x→a): 2 visits, y twice.
// Node (x→b): 1 visit, y once (most logged y, policy x: a departure).
func TestLoggedVisitsAndView(t *testing.T) {
	pol := &policy.Policy{Horizon: 2, Nodes: []policy.Node{
		{ID: 0, Parent: -1, Step: 1, Obs: "a", Action: "x", ReachProb: 1, ValueReward: 0.5, ValueBonus: 0.1},
		{ID: 1, Parent: 0, Step: 2, Obs: "a", Action: "y", ReachProb: 0.7, ValueReward: 0.3, ValueBonus: 0.1},
		{ID: 2, Parent: 0, Step: 2, Obs: "b", Action: "x", ReachProb: 0.3, ValueReward: 0.2, ValueBonus: 0.1},
	}}
	obsV, actV := []string{"a", "b"}, []string{"x", "y"}
	o := map[string]uint16{"a": 0, "b": 1}
	a := map[string]uint16{"x": 0, "y": 1}
	d := &ingest.Dataset{Horizon: 2, ObsVocab: obsV, ActVocab: actV}
	for _, ep := range [][4]string{{"a", "x", "a", "y"}, {"a", "x", "b", "y"}, {"a", "y", "a", "x"}, {"a", "x", "a", "y"}} {
		d.Obs = append(d.Obs, o[ep[0]], o[ep[2]])
		d.Act = append(d.Act, a[ep[1]], a[ep[3]])
		d.Length = append(d.Length, 2)
	}
	vis := policy.LoggedVisits(pol, d)
	if vis.N[0] != 4 || vis.N[1] != 2 || vis.N[2] != 1 || vis.K != 4 {
		t.Errorf("visits %v of %d, want [4 2 1] of 4", vis.N, vis.K)
	}
	if vis.Count(0, "x") != 3 || vis.Count(0, "y") != 1 || vis.Count(2, "y") != 1 || vis.Count(2, "x") != 0 || vis.Count(1, "y") != 2 {
		t.Errorf("action counts x,y at node 0: %d,%d; at node 2: %d,%d; y at node 1: %d",
			vis.Count(0, "x"), vis.Count(0, "y"), vis.Count(2, "x"), vis.Count(2, "y"), vis.Count(1, "y"))
	}
	if vis.MostLogged(0) != "x" || vis.MostLogged(2) != "y" {
		t.Errorf("most logged %q %q", vis.MostLogged(0), vis.MostLogged(2))
	}
	// Returns range over [−10, 10]: a step-2 node's rescaled value to go
	// v maps to 20·v − 10·(1/2); the bonus to 20·b.
	v := NewPolicyView(pol, ReturnRange{-10, 10}, vis, 0)
	if len(v.Rows) != 3 || v.Rows[0].Node != 0 || v.Rows[1].Node != 1 || v.Rows[2].Node != 2 {
		t.Fatalf("rows %+v", v.Rows)
	}
	r := v.Rows[1]
	if math.Abs(r.Value-(20*0.3-5)) > 1e-12 || math.Abs(r.Bonus-2) > 1e-12 || math.Abs(r.LCB-(1-2)) > 1e-12 {
		t.Errorf("node 1 values %v %v %v", r.Value, r.Bonus, r.LCB)
	}
	if root := v.Rows[0]; root.ActionShare != 0.75 || root.LoggedShare != 1 || root.MostLogged != "x" || math.Abs(root.Value-0) > 1e-12 {
		t.Errorf("root %+v", root)
	}
	if got := strings.Join(v.Rows[2].History, " "); got != "a x b" {
		t.Errorf("node 2 history %q, want \"a x b\"", got)
	}
	if dep := v.Rows[2]; dep.MostLogged != "y" || dep.ActionShare != 0 || dep.Logged != 1 || dep.MostShare != 1 || dep.Departs {
		t.Errorf("node 2 %+v", dep)
	}
	// Top 2 by reach: the root and its most probable child.
	if top := NewPolicyView(pol, ReturnRange{0, 1}, nil, 2); len(top.Rows) != 2 || top.Rows[1].Node != 1 || top.Rows[1].Logs {
		t.Errorf("top-2 view %+v", top.Rows)
	}
}

// The bonus plot draws quantile summaries and the page lists at most
// maxQuarantinedRows quarantined episodes: report.html stays small however
// many episodes the logs hold (200k episodes of 6 steps here, 16 MB with
// one marker per episode).
func TestPageSizeIndependentOfEpisodes(t *testing.T) {
	if testing.Short() {
		t.Skip("renders a page over 1.2M values")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const K, H = 200_000, 6
	run := &Run{RunID: "big"}
	run.BonusSteps = make([]StepQuantiles, H)
	for h := range run.BonusSteps {
		v := make([]float64, K)
		for k := range v {
			v[k] = math.Exp(rng.NormFloat64()) * 1e-3
		}
		run.BonusSteps[h] = summarize(v)
	}
	for h := 1; h <= H; h++ {
		run.Coverage = append(run.Coverage, CoverageRow{Step: int32(h), CoveredMass: 1, CInf: float64(h)})
	}
	run.Manifest.Episodes, run.Manifest.Horizon = K, H
	for k := 0; k < 50_000; k++ {
		run.Manifest.Quarantined = append(run.Manifest.Quarantined, Quarantined{EpisodeID: "e", File: "logs.parquet", Step: 3, Reason: "step 3 missing"})
	}
	b, err := RenderHTML(run)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 2<<20 {
		t.Errorf("report.html is %d bytes for %d episodes", len(b), K)
	}
	small := &Run{RunID: "small", BonusSteps: summarizeSteps([][]float64{{1e-3, 2e-3}, {1e-3, 3e-3}, {2e-3}, {1e-3}, {1e-3}, {1e-3}}), Coverage: run.Coverage}
	small.Manifest.Quarantined = run.Manifest.Quarantined[:maxQuarantinedRows]
	s, err := RenderHTML(small)
	if err != nil {
		t.Fatal(err)
	}
	// Same marks whatever K: the sizes differ only by the labels' digits.
	if d := len(b) - len(s); d > 4096 || d < -4096 {
		t.Errorf("page is %d bytes at K=%d and %d at K=2", len(b), K, len(s))
	}
	if strings.Contains(string(b), "Liberation Serif") {
		t.Error("plot text is serif")
	}
}

// summarize is summarizeInPlace of a copy of v.
func summarize(v []float64) StepQuantiles {
	return summarizeInPlace(slices.Clone(v))
}

// A stochastic policy's view gives each row its probability and keeps
// the rows of one observation together (by the observation's reach, then
// by probability); the page adds a probability column, which a
// deterministic policy's page does not have.
func TestStochasticPolicyView(t *testing.T) {
	pol := &policy.Policy{Horizon: 2, Nodes: []policy.Node{
		{ID: 0, Parent: -1, Step: 1, Obs: "a", Action: "x", ReachProb: 0.3},
		{ID: 1, Parent: -1, Step: 1, Obs: "b", Action: "x", ReachProb: 0.4},
		{ID: 2, Parent: -1, Step: 1, Obs: "a", Action: "y", ReachProb: 0.3},
		{ID: 3, Parent: 2, Step: 2, Obs: "a", Action: "y", ReachProb: 0.3},
	}, Probs: []float64{0.4, 1, 0.6, 1}}
	v := NewPolicyView(pol, ReturnRange{0, 1}, nil, 0)
	// a's rows (reach 0.6) before b's (0.4), y (0.6) before x (0.4),
	// each row's children under it.
	var got []string
	for _, r := range v.Rows {
		got = append(got, fmt.Sprintf("%d:%g", r.Node, r.Prob))
	}
	if want := "2:0.6 3:1 0:0.4 1:1"; strings.Join(got, " ") != want || !v.Stochastic {
		t.Errorf("rows %v (stochastic %v), want %s", got, v.Stochastic, want)
	}
	page, err := RenderHTML(&Run{RunID: "s", Policy: v})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `<th class="n">probability</th>`) || !strings.Contains(string(page), `<td class="n">0.6</td>`) {
		t.Errorf("page has no probability column")
	}
	pol.Probs = nil
	det := NewPolicyView(pol, ReturnRange{0, 1}, nil, 0)
	if det.Stochastic || det.Rows[0].Prob != 1 {
		t.Errorf("deterministic view: stochastic %v, first row %+v", det.Stochastic, det.Rows[0])
	}
	page, err = RenderHTML(&Run{RunID: "d", Policy: det})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(page), "probability</th>") || strings.Contains(string(page), "The policy is stochastic") {
		t.Errorf("deterministic page has a probability column")
	}
}

// TestStochasticDepartures: the rows of a history where a stochastic
// policy keeps the logged mix are no departures, even those whose action
// the logs take less often; a row of probability one that the logs
// clearly disfavour is one. The mixed history counts once as agreeing.
func TestStochasticDepartures(t *testing.T) {
	pol := &policy.Policy{Horizon: 2, Nodes: []policy.Node{
		{ID: 0, Parent: -1, Step: 1, Obs: "a", Action: "x", Fallback: "x", ReachProb: 0.8},
		{ID: 1, Parent: -1, Step: 1, Obs: "a", Action: "y", Fallback: "x", ReachProb: 0.2},
		{ID: 2, Parent: 0, Step: 2, Obs: "a", Action: "y", Fallback: "x", ReachProb: 0.8},
	}, Probs: []float64{0.8, 0.2, 1}}
	// 80 episodes take x then x at a; 20 take y then x.
	d := &ingest.Dataset{Horizon: 2, ObsVocab: []string{"a"}, ActVocab: []string{"x", "y"}}
	for k := range 100 {
		a := uint16(0)
		if k >= 80 {
			a = 1
		}
		d.EpisodeIDs = append(d.EpisodeIDs, fmt.Sprint(k))
		d.Length = append(d.Length, 2)
		d.Obs = append(d.Obs, 0, 0)
		d.Act = append(d.Act, a, 0)
		d.Reward = append(d.Reward, 0, 1)
	}
	v := policy.LoggedVisits(pol, d)
	if v.N[0] != 100 || v.N[1] != 100 || v.N[2] != 80 {
		t.Fatalf("visits %v, want 100 at both step-1 rows and 80 below x", v.N)
	}
	m := &estimate.Model{ReturnMin: 0, ReturnMax: 2}
	c := Departures(m, pol, v, 0.5, 1)
	if len(c.Departures) != 1 || c.Departures[0].Row.Node != 2 || c.Agree != 1 || c.Ties != 0 {
		t.Errorf("departures %+v, agree %d, ties %d: want node 2 alone, one agreeing history", c.Departures, c.Agree, c.Ties)
	}
	view := NewPolicyView(pol, ReturnRange{0, 2}, v, 0)
	for _, r := range view.Rows {
		if r.Departs != (r.Node == 2) {
			t.Errorf("row %d: departs %v", r.Node, r.Departs)
		}
	}
}
