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
}

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
func BehaviorCloning(ctx context.Context, d *ingest.Dataset, opts CloneOptions) (*policy.Policy, error) {
	t, err := buildTrie(ctx, d)
	if err != nil {
		return nil, err
	}
	nn := len(t.nodeObs)
	choice := make([]int32, nn)
	for i := range choice {
		choice[i] = -1
	}
	for e, v := range t.edgeNode {
		best := choice[v]
		if best < 0 || t.edgeN[e] > t.edgeN[best] || (t.edgeN[e] == t.edgeN[best] && t.edgeAct[e] < t.edgeAct[best]) {
			choice[v] = int32(e)
		}
	}

	// Episodes that follow the cloned actions from step h to the end.
	sum, cnt := make([]float64, nn), make([]int32, nn)
	H := t.H
	for k := range t.K {
		if k%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
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

	p, from := t.emit(choice)
	for i := range p.Nodes {
		v := from[i]
		r := math.NaN()
		if cnt[v] > 0 {
			r = sum[v] / float64(cnt[v])
		}
		p.Nodes[i].ValueReward = r
		p.Nodes[i].ValueLCB = r
	}
	if opts.AllFirst {
		addFirst(p, d)
	}
	return p, nil
}

// addFirst appends to p a step-1 row for every observation of d's
// vocabulary (the end symbol aside) that p has no step-1 row for (see
// CloneOptions.AllFirst).
func addFirst(p *policy.Policy, d *ingest.Dataset) {
	nan := math.NaN()
	have := map[string]bool{}
	fallback := ""
	for _, n := range p.Nodes {
		if n.Parent == -1 {
			have[n.Obs] = true
			if n.Obs != ingest.EndSymbol {
				fallback = n.Fallback
			}
		}
	}
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
