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
	// Mix keeps the behaviour's own action distribution (its logged
	// propensities, renormalised over the logged actions; the visit
	// shares without propensities) wherever the logs do not show a better
	// action
	// (a stochastic policy; see BehaviorCloning). It replaces Improve's
	// test, with the same Z and MinVisits.
	Mix bool
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
// value_reward is the mean rescaled reward to go, Σ_{t≥h} r'_t, of the
// logged episodes that pass through the node and take the cloned action
// there and at every later step, an on-policy Monte Carlo estimate of the
// cloned policy's value to go from the node (at step 1, of its return R);
// it is NaN when no logged episode qualifies. That cannot happen
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
//
// With opts.Mix, the policy is the behaviour itself improved where the
// logs show it: at a history τ it takes every logged action a with the
// probability π̂^b(a|τ), the mean logged propensity of a at τ over the sum
// of those of τ's logged actions (the behaviour's own distribution
// wherever every action it takes at τ was logged there; the share of τ's
// logged visits when the logs have no propensities), except where one
// logged action a has a mean return-to-go Q̂^b(τ,a) above that of τ's
// other logged visits taken together by more
// than Z standard errors of the difference, both with at least MinVisits
// visits; there it takes the best such a. Q^b(τ,a) > V^b(τ) then holds
// on the logs' evidence, where Improve's test (against the most logged
// action alone) does not say so: the most logged action can be worse
// than the behaviour's mix. Where the history keeps the mix, a logged
// action whose mean return-to-go lies below that of τ's other logged
// visits by the same test is left out (the others' probabilities
// renormalised; never all of them): the mix over the rest is then worth
// more than V^b(τ). By the policy improvement theorem the result is worth
// at least V^b, up to the estimation of π̂^b and of the tests. A
// history that mixes has one row per logged action, its probability
// π̂^b(a|τ) (Policy.Probs; reach_prob is then the history's empirical
// probability times the row's, value_reward the mean
// return of the episodes that take the row's action and stay in the
// policy's actions after it).
func BehaviorCloning(ctx context.Context, d *ingest.Dataset, opts CloneOptions) (*policy.Policy, error) {
	ps, err := BehaviorClonings(ctx, d, opts)
	if err != nil {
		return nil, err
	}
	return ps[0], nil
}

// BehaviorClonings is BehaviorCloning of d with each of opts, the
// empirical history tree built once for all of them.
func BehaviorClonings(ctx context.Context, d *ingest.Dataset, opts ...CloneOptions) ([]*policy.Policy, error) {
	t, err := buildTrie(ctx, d)
	if err != nil {
		return nil, err
	}
	ps := make([]*policy.Policy, len(opts))
	for i, o := range opts {
		if ps[i], err = t.clone(ctx, d, o); err != nil {
			return nil, err
		}
	}
	return ps, nil
}

// clone is BehaviorCloning of d, whose tree t is, with opts.
func (t *trie) clone(ctx context.Context, d *ingest.Dataset, opts CloneOptions) (*policy.Policy, error) {
	choice, mix, err := t.cloneChoice(ctx, opts)
	if err != nil {
		return nil, err
	}
	sum, cnt, err := t.followers(ctx, choice, mix)
	if err != nil {
		return nil, err
	}
	p, _, edge := t.emitMixed(choice, mix)
	cloneValues(p, edge, sum, cnt)
	if opts.AllFirst {
		addFirst(p, d)
	}
	return p, nil
}

// mixing is the improved behaviour's plan (CloneOptions.Mix): per trie
// node whether it keeps the behaviour's mix, and per edge whether the mix
// leaves the edge's action out.
type mixing struct {
	node []bool
	drop []bool
}

// mixes says whether node v keeps the behaviour's mix (false for a
// deterministic clone, x nil).
func (x *mixing) mixes(v int32) bool { return x != nil && x.node[v] }

// cloneChoice is the clone's edge at every node: the most-logged action,
// improved where the logs show a better one when opts.Improve is set;
// with opts.Mix also the mixing (nil without Mix).
func (t *trie) cloneChoice(ctx context.Context, opts CloneOptions) ([]int32, *mixing, error) {
	choice := t.mostLogged()
	if opts.Mix {
		mix, err := t.mixChoice(ctx, choice, opts)
		return choice, mix, err
	}
	if opts.Improve {
		if err := t.improve(ctx, choice, opts); err != nil {
			return nil, nil, err
		}
	}
	return choice, nil, nil
}

// cloneValues sets the value columns of p, whose row i takes trie edge
// edge[i], to the mean rescaled reward to go of the episodes that take the
// edge and follow the policy after it (NaN when none does).
func cloneValues(p *policy.Policy, edge []int32, sum []float64, cnt []int32) {
	for i := range p.Nodes {
		v := edge[i]
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

// followers returns, per edge (τ, a) of step h, the sum of the rescaled
// rewards to go from step h and the number of the episodes that take it
// and follow the policy's actions from step h to the end: the chosen
// ones, any logged one the mix keeps at a node that mixes.
func (t *trie) followers(ctx context.Context, choice []int32, mix *mixing) (sum []float64, cnt []int32, err error) {
	ne := len(t.edgeNode)
	sum, cnt = make([]float64, ne), make([]int32, ne)
	for k := range t.K {
		if k%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		t.follow(k, choice, mix, sum, cnt)
	}
	return sum, cnt, nil
}

// follow adds episode k's rescaled reward to go from each step to sum and
// counts it in cnt at the edges of the steps from which on it follows the
// policy's actions.
func (t *trie) follow(k int, choice []int32, mix *mixing, sum []float64, cnt []int32) {
	H := t.H
	g := 0.0 // the rescaled reward-to-go from step h
	for h := H - 1; h >= 0; h-- {
		i := k*H + h
		v := t.path[i]
		e := choice[v]
		if mix.mixes(v) {
			e = t.edgeOf[uint64(v)<<16|uint64(t.d.Act[i])]
			if mix.drop[e] {
				break
			}
		} else if t.d.Act[i] != t.edgeAct[e] {
			break
		}
		g += (t.d.Reward[i] - t.shift) * t.scale
		sum[e] += g
		cnt[e]++
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
		if p.Stochastic() {
			p.Probs = append(p.Probs, 1)
		}
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

// mixChoice decides, per node, whether the policy of CloneOptions.Mix
// keeps the behaviour's mix there or takes one better action, which it
// writes to choice[v]; and, where it keeps the mix, which logged actions
// the logs show worse than the node's other logged visits (the mix leaves
// them out, unless that would leave none).
func (t *trie) mixChoice(ctx context.Context, choice []int32, opts CloneOptions) (*mixing, error) {
	z, minN := opts.improveTest()
	sum, sq, err := t.returnSums(ctx)
	if err != nil {
		return nil, err
	}
	nn := len(t.nodeObs)
	nodeSum, nodeSq := make([]float64, nn), make([]float64, nn)
	for e, v := range t.edgeNode {
		nodeSum[v] += sum[e]
		nodeSq[v] += sq[e]
	}
	mix := make([]bool, nn)
	for v := range mix {
		mix[v] = true
	}
	best := make([]float64, nn)
	worse := make([]bool, len(t.edgeNode))
	for e, v := range t.edgeNode {
		n, rest := int(t.edgeN[e]), int(t.nodeCnt[v]-t.edgeN[e])
		if n < minN || rest < minN {
			continue
		}
		me, se := meanSE(sum[e], sq[e], n)
		mr, sr := meanSE(nodeSum[v]-sum[e], nodeSq[v]-sq[e], rest)
		d := z * math.Hypot(se, sr)
		worse[e] = mr-me > d
		if me-mr > d && (mix[v] || me > best[v]) {
			choice[v], mix[v], best[v] = int32(e), false, me
		}
	}
	return &mixing{node: mix, drop: t.dropWorse(mix, worse)}, nil
}

// dropWorse is the mixing's drop set: at each node that mixes, the edges
// shown worse than the rest, unless every edge of the node is.
func (t *trie) dropWorse(mix, worse []bool) []bool {
	kept := make([]bool, len(mix))
	for e, v := range t.edgeNode {
		kept[v] = kept[v] || !worse[e]
	}
	drop := make([]bool, len(worse))
	for e, v := range t.edgeNode {
		drop[e] = mix[v] && worse[e] && kept[v]
	}
	return drop
}

// returnToGo returns, per edge (τ, a), the mean of the rescaled rewards
// logged from that step to the end over the edge's visits, and its
// standard error (0 with one visit).
func (t *trie) returnToGo(ctx context.Context) (mean, se []float64, err error) {
	sum, sq, err := t.returnSums(ctx)
	if err != nil {
		return nil, nil, err
	}
	mean, se = t.meanSE(sum, sq)
	return mean, se, nil
}

// returnSums returns, per edge, the sum of the rescaled returns-to-go
// logged from that step over the edge's visits and the sum of their
// squares.
func (t *trie) returnSums(ctx context.Context) (sum, sq []float64, err error) {
	ne := len(t.edgeNode)
	sum, sq = make([]float64, ne), make([]float64, ne)
	for k := range t.K {
		if k%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		t.addReturnsToGo(k, sum, sq)
	}
	return sum, sq, nil
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
		mean[e], se[e] = meanSE(sum[e], sq[e], int(t.edgeN[e]))
	}
	return mean, se
}

// meanSE is the mean of n ≥ 1 values of sum sum and sum of squares sq,
// and its standard error (0 with one value).
func meanSE(sum, sq float64, n int) (mean, se float64) {
	f := float64(n)
	mean = sum / f
	if n > 1 {
		v := math.Max(0, (sq-f*mean*mean)/(f-1))
		se = math.Sqrt(v / f)
	}
	return mean, se
}
