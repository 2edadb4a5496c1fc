package explore

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
)

// stochasticPrev is a stochastic π^{k−1} for the tiny model:
//
//	step 1, init: stay 0.7 (row 0), flip 0.3 (row 1)
//	after stay: x → stay 0.4, flip 0.6;  y → flip 1
//	after flip: x → stay 1;  y → no row (row 1's fallback, stay)
func stochasticPrev() *policy.Policy {
	return &policy.Policy{Horizon: 2, Nodes: []policy.Node{
		{ID: 0, Parent: -1, Step: 1, Obs: pomdp.InitSymbol, Action: "stay", Fallback: "stay"},
		{ID: 1, Parent: -1, Step: 1, Obs: pomdp.InitSymbol, Action: "flip", Fallback: "stay"},
		{ID: 2, Parent: 0, Step: 2, Obs: "x", Action: "stay", Fallback: "stay"},
		{ID: 3, Parent: 0, Step: 2, Obs: "x", Action: "flip", Fallback: "stay"},
		{ID: 4, Parent: 0, Step: 2, Obs: "y", Action: "flip", Fallback: "stay"},
		{ID: 5, Parent: 1, Step: 2, Obs: "x", Action: "stay", Fallback: "stay"},
	}, Probs: []float64{0.7, 0.3, 0.4, 0.6, 1, 1}}
}

// stochasticPrevProb is stochasticPrev's probability of the action a2 at
// step 2 after the first action a1 and the observation o2, written out
// from its rows (actions 0 stay, 1 flip; observations 0 x, 1 y).
func stochasticPrevProb(a1, o2, a2 int32) float64 {
	switch {
	case a1 == 0 && o2 == 0:
		return []float64{0.4, 0.6}[a2]
	case a1 == 0 && o2 == 1:
		return float64(a2) // flip for certain
	default:
		return float64(1 - a2) // stay: row 5, or the fallback after y
	}
}

// TestCollectStochasticPrev: before the switch step the episodes take
// the stochastic π^{k−1}'s actions, logged with its probability of them
// (every logged propensity is the one the rows give the logged action,
// so never 0); the first action is stay in a fraction of the episodes
// within four standard errors of 0.7; the same seed gives the same logs.
func TestCollectStochasticPrev(t *testing.T) {
	p := parseTiny(t)
	const H, n = 3, 3000
	l, steps, err := Collect(context.Background(), p, H, stochasticPrev(), n, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	stays, followed := 0, 0
	for k, sw := range steps {
		i := k * H
		if sw > 1 {
			followed++
			if l.Act[i] == 0 {
				stays++
			}
			checkPropensity(t, l.Propensity[i], []float64{0.7, 0.3}[l.Act[i]], k, 1)
		}
		if sw > 2 {
			checkPropensity(t, l.Propensity[i+1], stochasticPrevProb(l.Act[i], l.Obs[i+1], l.Act[i+1]), k, 2)
		}
	}
	frac, se := float64(stays)/float64(followed), math.Sqrt(0.7*0.3/float64(followed))
	if math.Abs(frac-0.7) > 4*se {
		t.Errorf("stay at step 1 in %v of %d episodes, want 0.7 ± %v", frac, followed, 4*se)
	}
	l2, _, err := Collect(context.Background(), p, H, stochasticPrev(), n, 1, 4)
	if err != nil || !slices.Equal(l.Act, l2.Act) || !slices.Equal(l.Propensity, l2.Propensity) {
		t.Errorf("same seed, different logs (%v)", err)
	}
}

// checkPropensity checks episode k's logged propensity at step h against
// the policy's probability of the logged action.
func checkPropensity(t *testing.T, got, want float64, k, h int) {
	t.Helper()
	if want == 0 || got != want {
		t.Fatalf("episode %d step %d: propensity %v, want %v (positive)", k, h, got, want)
	}
}

// TestExplorationFilesRefuseStochastic: exploration files serve one
// action per observation history with propensity 1, so a stochastic
// policy is refused when writing them and when reading one, naming the
// file.
func TestExplorationFilesRefuseStochastic(t *testing.T) {
	dir := t.TempDir()
	if err := WritePolicies(dir, stochasticPrev(), 2, 1, []string{"flip", "stay"}, nil); !errors.Is(err, ErrOptions) {
		t.Errorf("writing a stochastic π: err = %v, want ErrOptions", err)
	}
	path := filepath.Join(dir, PolicyFileName(2))
	if err := policy.WriteFile(path, stochasticPrev(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPolicy(path); !errors.Is(err, ErrData) || !strings.Contains(err.Error(), path+" is a stochastic policy") {
		t.Errorf("reading a stochastic file: err = %v, want ErrData naming %s", err, path)
	}
}
