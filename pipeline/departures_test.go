package pipeline

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/pessimism/pessimismtest"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/report"
)

// report.Departures and valueDepartures on logs whose behaviour clearly favours action a1 (90%) and a
// policy planned with α = 0, the model's own optimum over history-
// dependent policies. Checked independently of LoggedVisits and of the
// comparison's code:
//   - the departures are exactly the nodes where a direct count over the
//     logged prefixes (policy.Lookup) clearly favours another action;
//   - each departure's worth is V_R(π̄) − V_R(π̄ with that node's action
//     swapped), evaluated here, times the return range;
//   - since π̄ maximises V_R when α = 0, undoing departures never raises
//     the model value: every worth is ≥ 0.
func TestCompareDepartures(t *testing.T) {
	ctx := context.Background()
	favour := func(h, o int, p []float64) { p[0], p[1] = 0.1, 0.9 }
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		sp := pessimismtest.Spec{States: 2, Obs: 2, Actions: 2, Horizon: 3}
		m := pessimismtest.RandomModel(rng, sp)
		d := pessimismtest.Sample(rng, m, favour, 3000)
		b, err := pessimism.Build(ctx, m, d, pessimismtest.EvenSplits(3000, 3), pessimism.Options{})
		if err != nil {
			t.Fatal(err)
		}
		b = b.WithAlpha(0)
		pol, st, err := policy.Plan(ctx, m, b, policy.PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := report.Departures(m, pol, policy.LoggedVisits(pol, d), st.ValueReward, -1)
		if err := valueDepartures(m, b, pol, c); err != nil {
			t.Fatal(err)
		}
		if len(c.Departures) == 0 {
			continue
		}

		// Direct count: for each node, the actions of the logged episodes
		// whose prefix leads there following π̄.
		H := d.Horizon
		counts := map[int64]map[string]int64{}
		for k := 0; k < d.NumEpisodes(); k++ {
			var obs []string
			for h := 0; h < H; h++ {
				obs = append(obs, d.ObsVocab[d.Obs[k*H+h]])
				act, node, ok := pol.Lookup(obs)
				if !ok {
					break
				}
				if counts[node] == nil {
					counts[node] = map[string]int64{}
				}
				a := d.ActVocab[d.Act[k*H+h]]
				counts[node][a]++
				if a != act {
					break
				}
			}
		}
		want := map[int64]bool{}
		for node, cs := range counts {
			pa := pol.Nodes[node].Action
			for a, n := range cs {
				if a != pa && float64(n-cs[pa]) > 2*math.Sqrt(float64(n+cs[pa])) {
					want[node] = true
				}
			}
		}
		if len(want) != len(c.Departures) {
			t.Fatalf("seed %d: %d departures, the direct count finds %d", seed, len(c.Departures), len(want))
		}
		width := m.ReturnMax - m.ReturnMin
		full, err := policy.ModelValue(m, b, pol)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.ReturnMin + full.Reward*width - (-1); !(math.Abs(c.Total-got) <= 1e-9) {
			t.Errorf("total gain %v, want %v", c.Total, got)
		}
		for _, dep := range c.Departures {
			if !want[dep.Row.Node] {
				t.Errorf("node %d is not a clear departure", dep.Row.Node)
			}
			q := &policy.Policy{Horizon: pol.Horizon, Nodes: append([]policy.Node(nil), pol.Nodes...)}
			q.Nodes[dep.Row.Node].Action = dep.Row.MostLogged
			v, err := policy.ModelValue(m, b, q)
			if err != nil {
				t.Fatal(err)
			}
			if w := (full.Reward - v.Reward) * width; math.Abs(dep.Gain-w) > 1e-9 {
				t.Errorf("node %d worth %v, want %v", dep.Row.Node, dep.Gain, w)
			}
			if dep.Gain < -1e-9 {
				t.Errorf("node %d: undoing a departure of the V_R-optimal policy raises V_R by %v", dep.Row.Node, -dep.Gain)
			}
		}
		if c.Gain < -1e-9 {
			t.Errorf("undoing every departure raises V_R by %v", -c.Gain)
		}
		t.Logf("seed %d: %d departures at steps %v, worth %.4g of a total gain %.4g", seed, len(c.Departures), c.Steps, c.Gain, c.Total)
		return
	}
	t.Fatal("no seed gave a policy that departs from the logs' favourite")
}
