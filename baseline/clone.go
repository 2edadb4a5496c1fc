package baseline

import (
	"context"
	"math"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
)

// CloneOptions configures BehaviorCloning. The zero value is the
// documented behaviour.
type CloneOptions struct {
	// AllFirst adds a step-1 row for every observation of the vocabulary
	// that no episode logged first, acting with the action logged most
	// often at step 1 (ties to the lowest code), so that a model which can
	// emit any observation first can value the policy. Those rows have
	// reach_prob 0 and NaN values (no logged episode passes them).
	AllFirst bool
	// Improve departs from the most logged action where the logs show
	// another logged action better for the behaviour's own continuation
	// (see BehaviorCloning); Z is the normal quantile of that test (0:
	// DefaultImproveZ) and MinVisits the least number of logged visits of
	// each of the two actions compared (0: DefaultImproveVisits).
	Improve   bool
	Z         float64
	MinVisits int
}

// DefaultImproveZ is the one-sided normal quantile of the improvement
// test: a 2.5% chance, per comparison, of departing for an action no
// better than the most logged one, the level of the 95% intervals of the
// report.
const DefaultImproveZ = 1.96

// DefaultImproveVisits is the least number of logged visits of each
// compared action: below 30 a normal interval for a mean is not
// trustworthy (policy.MinClaimESS).
const DefaultImproveVisits = 30

// BehaviorCloning returns the policy that takes, at every logged history,
// the action logged there most often (ties to the lowest action code). The
// tree holds every history reachable from a logged first observation when
// following the cloned actions, with the fallbacks of the package
// documentation.
//
// value_reward is the mean rescaled return R of the logged episodes that
// pass through the node and take the cloned action there and at every later
// step, an on-policy Monte Carlo estimate of the cloned policy's value given
// the node; it is NaN when no logged episode qualifies. That cannot happen
// for a dataset that passes validation: a node's cloned action was logged,
// so by induction on the steps left some episode follows the cloned actions
// from it to the end. Cloning has no pessimism: value_bonus is 0 and
// value_lcb equals value_reward. reach_prob is the probability of the
// history under the empirical model and the cloned policy. Errors are as
// for TabularLCB.
//
// With opts.Improve, the clone is the behaviour improved by one step of
// policy iteration where the logs show it: at a history τ where another
// logged action a has a mean return-to-go Q̂^b(τ,a) (the logged rewards
// from that step to the end, the behaviour acting after it) above the
// most logged action's by more than Z standard errors of the difference,
// both with at least MinVisits visits, it takes the best such a. By the
// policy improvement theorem, a deterministic policy that takes at every
// history an action with Q^b(τ,a) ≥ V^b(τ) = Σ_a π^b(a|τ)·Q^b(τ,a) is worth
// at least V^b; the most logged action alone need not be (it can be worse
// than the behaviour that mixes it with a better, rarer one), and the
// test departs from it only where the logs show such a better action.
func BehaviorCloning(ctx context.Context, d *ingest.Dataset, opts CloneOptions) (*policy.Policy, error) {
	t, err := buildTrie(ctx, d)
	if err != nil {
		return nil, err
	}
	choice, err := t.cloneChoice(ctx, opts)
	if err != nil {
		return nil, err
	}
	sum, cnt, err := t.followers(ctx, choice)
	if err != nil {
		return nil, err
	}
	p, from := t.emit(choice)
	cloneValues(p, from, sum, cnt)
	if opts.AllFirst {
		addFirst(p, d)
	}
	return p, nil
}

// cloneChoice is the clone's edge at every node: the most-logged action,
// improved where the logs show a better one when opts.Improve is set.
func (t *trie) cloneChoice(ctx context.Context, opts CloneOptions) ([]int32, error) {
	choice := t.mostLogged()
	if opts.Improve {
		if err := t.improve(ctx, choice, opts); err != nil {
			return nil, err
		}
	}
	return choice, nil
}

// cloneValues sets the value columns of p, whose node i came from trie
// node from[i], to the mean return of the episodes that follow the clone
// from the node on (NaN when none does).
func cloneValues(p *policy.Policy, from []int32, sum []float64, cnt []int32) {
	for i := range p.Nodes {
		v := from[i]
		r := math.NaN()
		if cnt[v] > 0 {
			r = sum[v] / float64(cnt[v])
		}
		p.Nodes[i].ValueReward = r
		p.Nodes[i].ValueLCB = r
	}
}

// mostLogged returns, per node, the edge of the action logged there most
// often, ties to the lowest action code.
func (t *trie) mostLogged() []int32 {
	choice := make([]int32, len(t.nodeObs))
	for i := range choice {
		choice[i] = -1
	}
	for e, v := range t.edgeNode {
		best := choice[v]
		if best < 0 || t.edgeN[e] > t.edgeN[best] || (t.edgeN[e] == t.edgeN[best] && t.edgeAct[e] < t.edgeAct[best]) {
			choice[v] = int32(e)
		}
	}
	return choice
}

// followers returns, per node of step h, the sum of the rescaled returns
// and the number of the episodes that pass it and follow the chosen
// actions from step h to the end.
func (t *trie) followers(ctx context.Context, choice []int32) (sum []float64, cnt []int32, err error) {
	nn := len(t.nodeObs)
	sum, cnt = make([]float64, nn), make([]int32, nn)
	for k := range t.K {
		if k%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		t.follow(k, choice, sum, cnt)
	}
	return sum, cnt, nil
}

// follow adds episode k's rescaled return to sum and counts it in cnt at
// the nodes of the steps from which on it follows the chosen actions.
func (t *trie) follow(k int, choice []int32, sum []float64, cnt []int32) {
	H := t.H
	for h := H - 1; h >= 0; h-- {
		i := k*H + h
		v := t.path[i]
		if t.d.Act[i] != t.edgeAct[choice[v]] {
			break
		}
		sum[v] += t.ret[k]
		cnt[v]++
	}
}

// addFirst appends to p a step-1 row for every observation of d's
// vocabulary (the end symbol aside) that p has no step-1 row for (see
// CloneOptions.AllFirst).
func addFirst(p *policy.Policy, d *ingest.Dataset) {
	nan := math.NaN()
	have, fallback := firstRows(p)
	first := mostLoggedFirst(d)
	if fallback == "" {
		fallback = d.ActVocab[first]
	}
	for _, o := range d.ObsVocab {
		if have[o] || o == ingest.EndSymbol {
			continue
		}
		p.Nodes = append(p.Nodes, policy.Node{ID: int64(len(p.Nodes)), Parent: -1, Step: 1, Obs: o,
			Action: d.ActVocab[first], Fallback: fallback, ValueReward: nan, ValueBonus: nan, ValueLCB: nan})
	}
}

// firstRows returns the observations p has a step-1 row for and the
// fallback action of its last such row (the end symbol's aside), "" if
// none.
func firstRows(p *policy.Policy) (have map[string]bool, fallback string) {
	have = map[string]bool{}
	for _, n := range p.Nodes {
		if n.Parent == -1 {
			have[n.Obs] = true
			if n.Obs != ingest.EndSymbol {
				fallback = n.Fallback
			}
		}
	}
	return have, fallback
}

// mostLoggedFirst is the action code logged most often at step 1, ties to
// the lowest code.
func mostLoggedFirst(d *ingest.Dataset) int {
	count := make([]int, len(d.ActVocab))
	for k := range d.NumEpisodes() {
		count[d.Act[k*d.Horizon]]++
	}
	first := 0
	for a, c := range count {
		if c > count[first] {
			first = a
		}
	}
	return first
}

// improveTest is the normal quantile and the least number of visits of
// the improvement test, the defaults in place of zeros.
func (opts CloneOptions) improveTest() (z float64, minN int) {
	z, minN = opts.Z, opts.MinVisits
	if z == 0 {
		z = DefaultImproveZ
	}
	if minN == 0 {
		minN = DefaultImproveVisits
	}
	return z, minN
}

// improve replaces choice[v] (the most logged action's edge) by the edge
// of the largest mean return-to-go among those that beat it by the test
// of CloneOptions.Improve.
func (t *trie) improve(ctx context.Context, choice []int32, opts CloneOptions) error {
	z, minN := opts.improveTest()
	mean, se, err := t.returnToGo(ctx)
	if err != nil {
		return err
	}
	best := append([]int32(nil), choice...)
	for e, v := range t.edgeNode {
		m := choice[v]
		if int32(e) == m || int(t.edgeN[e]) < minN || int(t.edgeN[m]) < minN {
			continue
		}
		if mean[e]-mean[m] > z*math.Hypot(se[e], se[m]) && mean[e] > mean[best[v]] {
			best[v] = int32(e)
		}
	}
	copy(choice, best)
	return nil
}

// returnToGo returns, per edge (τ, a), the mean of the rescaled rewards
// logged from that step to the end over the edge's visits, and its
// standard error (0 with one visit).
func (t *trie) returnToGo(ctx context.Context) (mean, se []float64, err error) {
	ne := len(t.edgeNode)
	sum, sq := make([]float64, ne), make([]float64, ne)
	for k := range t.K {
		if k%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		t.addReturnsToGo(k, sum, sq)
	}
	mean, se = t.meanSE(sum, sq)
	return mean, se, nil
}

// addReturnsToGo adds, at every edge episode k takes, its rescaled
// return from that step to the end to sum and its square to sq.
func (t *trie) addReturnsToGo(k int, sum, sq []float64) {
	H := t.H
	g := 0.0
	for h := H - 1; h >= 0; h-- {
		i := k*H + h
		g += (t.d.Reward[i] - t.shift) * t.scale
		e := t.edgeOf[uint64(t.path[i])<<16|uint64(t.d.Act[i])]
		sum[e] += g
		sq[e] += g * g
	}
}

// meanSE returns, per edge, the mean of values whose sum and sum of
// squares over the edge's visits are sum and sq, and its standard error
// (0 with one visit).
func (t *trie) meanSE(sum, sq []float64) (mean, se []float64) {
	ne := len(t.edgeNode)
	mean, se = make([]float64, ne), make([]float64, ne)
	for e := range ne {
		n := float64(t.edgeN[e])
		mean[e] = sum[e] / n
		if n > 1 {
			v := math.Max(0, (sq[e]-n*mean[e]*mean[e])/(n-1))
			se[e] = math.Sqrt(v / n)
		}
	}
	return mean, se
}
