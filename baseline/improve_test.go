package baseline

import (
	"context"
	"testing"
)

// repeat returns n copies of the episode ep.
func repeat(n int, ep []step) [][]step {
	out := make([][]step, n)
	for i := range out {
		out[i] = ep
	}
	return out
}

// TestImproveHand: two steps; at the start the behaviour took x 90 times
// and y 40 times.
func TestImproveHand(t *testing.T) {
	ctx := context.Background()
	obs, act := []string{"a", "b", "s"}, []string{"x", "y"}
	// Case 1: y pays nothing at once but leads to b, where every action
	// pays 1; x leads to a, which pays 0. Q^b(s,x) = 0, Q^b(s,y) = 1
	// with no spread, so any z departs to y; the plain clone takes x.
	var eps [][]step
	eps = append(eps, repeat(90, []step{{"s", "x", 0}, {"a", "x", 0}})...)
	eps = append(eps, repeat(40, []step{{"s", "y", 0}, {"b", "x", 1}})...)
	d := mkDataset(t, 2, obs, act, eps)
	cases := []struct {
		name string
		opts CloneOptions
		want string
	}{
		{"plain", CloneOptions{}, "x"},
		{"improved", CloneOptions{Improve: true}, "y"},
		// 40 visits of y, fewer than 41 asked: no departure.
		{"too few visits", CloneOptions{Improve: true, MinVisits: 41}, "x"},
	}
	for _, c := range cases {
		p, err := BehaviorCloning(ctx, d, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Nodes[0].Action; p.Nodes[0].Obs != "s" || got != c.want {
			t.Errorf("%s: step 1 takes %q, want %q", c.name, got, c.want)
		}
	}
}

// TestImproveStandardError checks the test's threshold against a figure
// computed by hand. One step; x (the most logged) always pays 0.45; y
// pays 0 and 1 alternately, mean 0.5, sample variance n/(4(n−1)), so the
// standard error of its mean is sqrt(1/(4(n−1))) and that of the
// difference the same (x has none). The difference 0.05 exceeds
// 1.96·SE only when n − 1 > (1.96/0.1)² = 384.16: y with 384 visits keeps
// x, y with 386 departs. Returns are rescaled by their range 1, which
// changes no comparison.
func TestImproveStandardError(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		ny   int
		want string
	}{{384, "x"}, {386, "y"}} {
		eps := repeat(1000, []step{{"s", "x", 0.45}})
		for i := range c.ny {
			eps = append(eps, []step{{"s", "y", float64(i % 2)}})
		}
		d := mkDataset(t, 1, []string{"s"}, []string{"x", "y"}, eps)
		p, err := BehaviorCloning(ctx, d, CloneOptions{Improve: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Nodes[0].Action; got != c.want {
			t.Errorf("y logged %d times: step 1 takes %q, want %q", c.ny, got, c.want)
		}
	}
}
