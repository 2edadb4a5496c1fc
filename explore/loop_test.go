package explore

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
)

// stayPolicy is a hand-written π^{k−1} for the tiny model: "stay" after
// init and after x, "flip" after y, at every step.
func stayPolicy(H int) *policy.Policy {
	pol := &policy.Policy{Horizon: H}
	type item struct {
		parent int64
		step   int
		obs    string
	}
	queue := []item{{-1, 1, pomdp.InitSymbol}}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		act := "stay"
		if it.obs == "y" {
			act = "flip"
		}
		id := int64(len(pol.Nodes))
		pol.Nodes = append(pol.Nodes, policy.Node{ID: id, Parent: it.parent, Step: int32(it.step), Obs: it.obs, Action: act, Fallback: act})
		if it.step < H {
			queue = append(queue, item{id, it.step + 1, "x"}, item{id, it.step + 1, "y"})
		}
	}
	return pol
}

// TestCollect: episodes of switch step h follow π^{k−1} with propensity 1
// before h and log 1/|A| from h on; the same seed gives the same logs.
func TestCollect(t *testing.T) {
	p := parseTiny(t)
	const H, n = 3, 40
	pi := stayPolicy(H)
	l, steps, err := Collect(context.Background(), p, H, pi, n, 2, 9)
	if err != nil {
		t.Fatal(err)
	}
	if l.NumEpisodes() != H*n || len(steps) != H*n {
		t.Fatalf("%d episodes, %d steps", l.NumEpisodes(), len(steps))
	}
	uniformActs := map[int32]int{}
	for k := range H * n {
		if want := k/n + 1; steps[k] != want {
			t.Fatalf("episode %d: switch step %d, want %d", k, steps[k], want)
		}
		for h := 1; h <= H; h++ {
			i := k*H + h - 1
			if h < steps[k] {
				want := int32(0) // stay
				if l.Obs[i] == 1 {
					want = 1 // flip after y
				}
				if l.Act[i] != want || l.Propensity[i] != 1 {
					t.Fatalf("episode %d step %d: action %d propensity %v, want π's %d with 1", k, h, l.Act[i], l.Propensity[i], want)
				}
			} else {
				if l.Propensity[i] != 0.5 {
					t.Fatalf("episode %d step %d: propensity %v, want 1/2", k, h, l.Propensity[i])
				}
				uniformActs[l.Act[i]]++
			}
		}
	}
	if uniformActs[0] == 0 || uniformActs[1] == 0 {
		t.Fatalf("uniform steps took actions %v", uniformActs)
	}
	l2, _, err := Collect(context.Background(), p, H, pi, n, 2, 9)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.Obs, l2.Obs) || !slices.Equal(l.Act, l2.Act) {
		t.Fatal("same seed, different logs")
	}
	if _, _, err := Collect(context.Background(), p, H, nil, 0, 1, 1); !errors.Is(err, ErrOptions) {
		t.Fatalf("0 episodes: %v", err)
	}
}

// TestSplits: D_{h−1} collects the episodes with switch step h.
func TestSplits(t *testing.T) {
	got, err := Splits([]int{2, 1, 2, 3}, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{1}, {0, 2}, {3}}
	for h := range want {
		if !slices.Equal(got[h], want[h]) {
			t.Fatalf("splits %v, want %v", got, want)
		}
	}
	if _, err := Splits([]int{1, 4}, 3); !errors.Is(err, ErrData) {
		t.Fatalf("step 4 of 3: %v", err)
	}
}

// TestPolicyFilesAndTags: the H exploration files round-trip with their
// metadata, Act gives the tree's action with propensity 1 before the
// switch step and a uniform one with 1/|A| after; tagged Parquet logs give
// back the tags per episode, and inconsistent tags are errors.
func TestPolicyFilesAndTags(t *testing.T) {
	dir := t.TempDir()
	const H = 3
	pi := stayPolicy(H)
	acts := []string{"flip", "stay"}
	if err := WritePolicies(dir, pi, H, 4, acts, map[string]string{"run": "x"}); err != nil {
		t.Fatal(err)
	}
	for h := 1; h <= H; h++ {
		sp, err := ReadPolicy(filepath.Join(dir, PolicyFileName(h)))
		if err != nil {
			t.Fatal(err)
		}
		if sp.Round != 4 || sp.Step != h || !slices.Equal(sp.Actions, acts) {
			t.Fatalf("file %d: %+v", h, sp)
		}
		if want := (1 << (h - 1)) - 1; len(sp.Tree.Nodes) != want {
			t.Fatalf("file %d: %d nodes, want %d (steps < %d)", h, len(sp.Tree.Nodes), want, h)
		}
		obs := []string{pomdp.InitSymbol, "y", "x"}
		for i := 1; i <= H; i++ {
			a, prop, err := sp.Act(obs[:i], 0.75)
			if err != nil {
				t.Fatal(err)
			}
			if i < h {
				want, _, _ := pi.Lookup(obs[:i])
				if a != want || prop != 1 {
					t.Fatalf("file %d step %d: %s %v, want %s 1", h, i, a, prop, want)
				}
			} else if a != "stay" || prop != 0.5 {
				t.Fatalf("file %d step %d: %s %v, want stay (u=0.75) 0.5", h, i, a, prop)
			}
		}
	}

	p := parseTiny(t)
	l, steps, err := Collect(context.Background(), p, H, pi, 5, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	rounds := make([]int, len(steps))
	for k := range rounds {
		rounds[k] = 3
	}
	logs := filepath.Join(dir, "logs.parquet")
	if err := WriteTaggedParquet(logs, l, rounds, steps); err != nil {
		t.Fatal(err)
	}
	d, err := ingest.Read(context.Background(), []string{logs}, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tags, err := ReadTags(context.Background(), []string{logs}, TagColumns{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := StepsOf(d.EpisodeIDs, tags, H)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, steps) {
		t.Fatalf("steps read back %v, written %v", got, steps)
	}
	// An episode whose explore_step changes between rows.
	bad := filepath.Join(dir, "bad.parquet")
	steps[0] = 2
	if err := WriteTaggedParquet(bad, l, rounds, steps); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTags(context.Background(), []string{logs, bad}, TagColumns{}); !errors.Is(err, ErrData) {
		t.Fatalf("inconsistent tags: %v", err)
	}
	if _, err := ReadTags(context.Background(), []string{logs}, TagColumns{Round: "nope"}); !errors.Is(err, ErrData) {
		t.Fatalf("missing column: %v", err)
	}
}

// TestOnlineKnownPOMDPs: PSR-UCB at H = 4 on tiger.95 and paint.95 with
// α = 0.5, ε = 0.2 and 50 episodes per switch step and round stops within
// 12 rounds, and the stopped model's exact total-variation error under the
// uniform and the optimal policy is at most ε (Theorem "online PSR": the
// statistic V_{θ̂,b̂}^{π^k} ≤ ε/2 certifies D_TV ≤ ε for every π).
func TestOnlineKnownPOMDPs(t *testing.T) {
	dir := sharedDir(t)
	for _, c := range []struct {
		file string
		rank int
	}{{"tiger.95.POMDP", 2}, {"paint.95.pomdp", 4}} {
		t.Run(c.file, func(t *testing.T) {
			m, err := pomdp.ParseFile(filepath.Join(dir, "pomdp", c.file))
			if err != nil {
				t.Fatal(err)
			}
			const eps = 0.2
			res, err := Online(context.Background(), m, OnlineOptions{Horizon: 4, PerStep: 50, MaxRounds: 12, Seed: 1,
				Round: Options{Alpha: 0.5, Epsilon: eps, Estimate: estimate.Options{Rank: c.rank, Restarts: 2}}})
			if err != nil {
				t.Fatal(err)
			}
			last := res.Rows[len(res.Rows)-1]
			if !last.Terminated {
				t.Fatalf("no termination in %d rounds: last statistic %v > %v", len(res.Rows), last.BonusValue, last.Threshold)
			}
			for _, r := range res.Rows {
				if r.Terminated != (r.BonusValue <= eps/2) {
					t.Fatalf("round %d: terminated %v with statistic %v", r.Round, r.Terminated, r.BonusValue)
				}
			}
			if last.TVUniform > eps || last.TVOptimal > eps {
				t.Fatalf("stopped model's TV: uniform %v, optimal %v > ε = %v", last.TVUniform, last.TVOptimal, eps)
			}
			if math.IsNaN(last.Regret) || last.Regret < -1e-9 {
				t.Fatalf("regret %v", last.Regret)
			}
			if res.Logs.NumEpisodes() != last.TotalEpisodes || last.TotalEpisodes != len(res.Rows)*4*50 {
				t.Fatalf("%d episodes logged, %d reported", res.Logs.NumEpisodes(), last.TotalEpisodes)
			}
		})
	}
}
