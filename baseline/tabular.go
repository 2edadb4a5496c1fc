package baseline

import (
	"context"
	"fmt"
	"math"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
)

// DefaultC is the penalty scale c of TabularLCB when TabularOptions.C is 0.
// With rewards on the [0,1] return scale, c/√n with c = 1 is the Hoeffding
// half-width √(ln(2/δ)/(2n)) at δ = 2e⁻² ≈ 0.27 per (history, action)
// pair: a plain scale choice, not a calibrated confidence level, that the
// validation study sweeps. An action tried once gets the full per-step
// penalty of 1.
const DefaultC = 1.0

// TabularOptions configures TabularLCB. The zero value uses DefaultC.
type TabularOptions struct {
	// C is the penalty scale c in pen(τ,a) = min(c/√n(τ,a), 1); 0 means
	// DefaultC. Negative or non-finite values are rejected.
	C float64
	// NoPenalty sets c = 0: certainty-equivalent planning in the empirical
	// model, the reference without pessimism.
	NoPenalty bool
}

func (o TabularOptions) penaltyScale() (float64, error) {
	switch {
	case o.NoPenalty:
		return 0, nil
	case math.IsNaN(o.C) || math.IsInf(o.C, 0) || o.C < 0:
		return 0, fmt.Errorf("%w: penalty scale C = %v, want a finite value ≥ 0", ErrInvalidOption, o.C)
	case o.C == 0:
		return DefaultC, nil
	}
	return o.C, nil
}

// TabularLCB plans the policy that maximises the pessimistic value of the
// empirical history tree (see the package documentation):
//
//	Q(τ,a) = r̂(τ,a) − min(c/√n(τ,a), 1) + Σ_o p̂(o|τ,a) V(τ a o),
//	V(τ)   = max_{a : n(τ,a)>0} Q(τ,a), ties to the lowest action code.
//
// The tree holds every logged first observation and, below each node, every
// observation logged after the chosen action. value_reward is the expected
// rescaled reward to go from the node's step and value_bonus E[Σ_h pen |
// node] (past steps included), both under the empirical model and the
// returned policy, value_lcb their difference; a step-1 node's value_lcb
// is V(o_1). Bad input returns an error wrapping
// ErrInvalidDataset or ErrInvalidOption; a cancelled ctx returns ctx.Err().
func TabularLCB(ctx context.Context, d *ingest.Dataset, opts TabularOptions) (*policy.Policy, error) {
	c, err := opts.penaltyScale()
	if err != nil {
		return nil, err
	}
	t, err := buildTrie(ctx, d)
	if err != nil {
		return nil, err
	}
	l := newLCBPlan(t, c)
	if err := l.backupAll(ctx); err != nil {
		return nil, err
	}
	p, from := t.emit(l.choice)
	l.values(p, from)
	return p, nil
}

// backupAll backs the values up from the last step to the first,
// checking ctx before each step.
func (l *lcbPlan) backupAll(ctx context.Context) error {
	for h := l.t.H - 1; h >= 0; h-- {
		if err := ctx.Err(); err != nil {
			return err
		}
		l.backup(h)
	}
	return nil
}

// lcbPlan is the backward induction of TabularLCB over the trie t with
// penalty scale c.
type lcbPlan struct {
	t *trie
	c float64
	// Per edge: the reward and penalty sums over child nodes, weighted by
	// the child counts (Σ_o n(τ a o)·V(τ a o)); per node: the chosen edge
	// and its reward and penalty values to go.
	accR, accB []float64
	choice     []int32
	bestQ      []float64
	vr, vb     []float64
}

// newLCBPlan allocates the sums and values of t, with no edge chosen yet.
func newLCBPlan(t *trie, c float64) *lcbPlan {
	nn, ne := len(t.nodeObs), len(t.edgeNode)
	l := &lcbPlan{
		t: t, c: c,
		accR: make([]float64, ne), accB: make([]float64, ne),
		choice: make([]int32, nn),
		bestQ:  make([]float64, nn),
		vr:     make([]float64, nn), vb: make([]float64, nn),
	}
	for i := range l.choice {
		l.choice[i] = -1
	}
	return l
}

// pen is the penalty min(c/√n, 1) of a pair visited n times.
func (l *lcbPlan) pen(n int32) float64 { return min(l.c/math.Sqrt(float64(n)), 1) }

// backup chooses, at every node of 0-based step h, the edge of the largest
// pessimistic Q (ties to the lowest action code), then adds the nodes'
// count-weighted values to their parent edges' sums.
func (l *lcbPlan) backup(h int) {
	l.choose(h)
	l.propagate(h)
}

// choose sets, at every node of 0-based step h, the chosen edge: the one
// of the largest pessimistic Q, ties to the lowest action code, with its
// reward and penalty values to go.
func (l *lcbPlan) choose(h int) {
	t := l.t
	for _, e := range t.edgesByStep[h] {
		n := float64(t.edgeN[e])
		r := (t.edgeR[e] + l.accR[e]) / n
		b := l.pen(t.edgeN[e]) + l.accB[e]/n
		q := r - b
		v := t.edgeNode[e]
		if best := l.choice[v]; best < 0 || q > l.bestQ[v] || (q == l.bestQ[v] && t.edgeAct[e] < t.edgeAct[best]) {
			l.choice[v], l.bestQ[v], l.vr[v], l.vb[v] = e, q, r, b
		}
	}
}

// propagate adds the values of the nodes of 0-based step h, weighted by
// their counts, to their parent edges' sums.
func (l *lcbPlan) propagate(h int) {
	t := l.t
	for _, v := range t.nodesByStep[h] {
		if p := t.nodePar[v]; p >= 0 {
			w := float64(t.nodeCnt[v])
			l.accR[p] += w * l.vr[v]
			l.accB[p] += w * l.vb[v]
		}
	}
}

// values fills the value columns of p, whose node i came from trie node
// from[i], as the planner's rows have them: the rescaled reward to go from
// the node's step, and the penalty of the whole episode (the steps
// already taken included, as the planner's bonus is the whole
// trajectory's), value_lcb their difference.
func (l *lcbPlan) values(p *policy.Policy, from []int32) {
	t := l.t
	pastB := make([]float64, len(p.Nodes))
	for i := range p.Nodes {
		node := &p.Nodes[i]
		v := from[i]
		if node.Parent >= 0 {
			e := l.choice[from[node.Parent]]
			pastB[i] = pastB[node.Parent] + l.pen(t.edgeN[e])
		}
		node.ValueReward = l.vr[v]
		node.ValueBonus = pastB[i] + l.vb[v]
		node.ValueLCB = node.ValueReward - node.ValueBonus
	}
}
