package policy

import (
	"context"
	"math"
)

// The table's action is the one-step lookahead when it costs at most
// lookaheadMaxCost multiply–adds per node (|A|·|O|·|Γ_{h+1}|·r) and at
// most lookaheadTotal over the largest table the walk can build
// (min(rows, Σ_h |O|^h) nodes), and the action of the best α-vector of the
// step (|Γ_h|·r) otherwise: the lookahead is the better policy, the
// vector keeps tables of millions of rows affordable. Memoised beliefs
// cost nothing either way.
const (
	lookaheadMaxCost = 1 << 19
	lookaheadTotal   = 1 << 35
)

// memoLimit bounds the entries of the belief → action memo of the table
// walk (an entry holds a belief key of 8·r bytes): beyond it actions are
// recomputed, which costs time but no memory.
const memoLimit = 1 << 20

// tableWalker extracts the belief policy's decision tree over the
// histories it reaches with model probability ≥ eps and evaluates the
// resulting policy (table plus fallback) under the model with the paper's
// bonus.
type tableWalker struct {
	bp    *beliefPlanner
	ft    *fallbackTables
	eps   float64
	limit int64
	count int64
	over  bool
	build bool
	nodes []Node
	memo  []map[string]int
	nmemo int
	ctx   context.Context

	bel, pred [][]float64
	weights   [][]float64
	acc       [][]float64 // per depth: per fallback candidate, the cut children's sums
	sc        *backupScratch
	look      []bool // per step: act by the lookahead (else by the best vector)
	// reached, when not nil, collects the beliefs of the table's nodes per
	// step (with their reach probability) during the building walk.
	reached [][]bpoint
}

// tval is what a table subtree returns, conditional on reaching its node:
// E[reward-to-go], an upper bound of E[b̂], the probability of leaving the
// table, and an estimate of E[Σ_h ‖ψ̄̂(τ_h)‖²_{U_h⁻¹}] (for the tangent
// of the surrogate).
type tval struct {
	r, b, out, sum float64
}

func newTableWalker(bp *beliefPlanner, ft *fallbackTables) *tableWalker {
	H, S := bp.H, bp.S
	w := &tableWalker{bp: bp, ft: ft, memo: make([]map[string]int, H+1), sc: newBackupScratch(S, bp.O)}
	w.bel = make([][]float64, H+2)
	w.pred = make([][]float64, H+2)
	w.weights = make([][]float64, H+2)
	w.acc = make([][]float64, H+2)
	for h := range w.bel {
		w.bel[h] = make([]float64, S)
		w.pred[h] = make([]float64, S)
		w.weights[h] = make([]float64, bp.A)
		w.acc[h] = make([]float64, 4*bp.A)
	}
	for h := range w.memo {
		w.memo[h] = map[string]int{}
	}
	return w
}

// action is the belief policy's action at belief b over s_h (memoised by
// belief, since histories with the same belief share it).
func (w *tableWalker) action(h int, b []float64, end bool) int {
	k := beliefKey(b, end)
	if a, ok := w.memo[h][k]; ok {
		return a
	}
	var a int
	if w.look[h] {
		a = w.bp.lookahead(h, b, end, w.sc)
	} else {
		a = w.bp.vectorAction(h, b, end)
	}
	if w.nmemo < memoLimit {
		w.memo[h][k] = a
		w.nmemo++
	}
	return a
}

// walk visits every node of the policy's tree with reach ≥ eps (all of
// step 1), counting them, and, when build is set, appends them to nodes.
// It returns the root values (unconditional).
func (w *tableWalker) walk(ctx context.Context, eps float64, limit int64, build bool) tval {
	bp := w.bp
	w.ctx, w.eps, w.limit, w.build, w.count, w.over = ctx, eps, limit, build, 0, false
	w.nodes = w.nodes[:0]
	first := make([]float64, bp.O)
	bp.m.FirstObsProbs(first)
	var tot tval
	for o, po := range first {
		if po == 0 {
			continue
		}
		bp.m.Prior(w.bel[1])
		bp.m.ObserveFirst(w.bel[1], o)
		v, _ := w.visit(1, o, -1, po, po, bp.bonus.Root)
		tot.add(po, v)
		if w.over {
			break
		}
	}
	return tot
}

func (t *tval) add(p float64, v tval) {
	t.r += p * v.r
	t.b += p * v.b
	t.out += p * v.out
	t.sum += p * v.sum
}

// visit evaluates the node (τ_{h−1}, o_h) with belief w.bel[h], reached
// with probability reach (cond given its parent) and running bonus sum
// sum. It returns the node's values and its action.
func (w *tableWalker) visit(h, o int, parent int64, cond, reach, sum float64) (tval, int) {
	bp := w.bp
	w.count++
	if w.count > w.limit {
		w.over = true
	}
	if w.over || (w.count&0xfff == 0 && w.ctx.Err() != nil) {
		w.over = true
		return tval{}, 0
	}
	b := w.bel[h]
	end := o == bp.endObs
	a := w.action(h, b, end)
	st := &bp.tab[h][a]
	id := int64(len(w.nodes))
	if w.build && w.reached != nil {
		w.reached[h] = append(w.reached[h], bpoint{b: append([]float64(nil), b...), w: reach, end: end, key: beliefKey(b, end)})
	}
	if w.build {
		w.nodes = append(w.nodes, Node{ID: id, Parent: parent, Step: int32(h), Obs: bp.m.ObsVocab[o], Action: bp.m.ActVocab[a], ReachProb: reach})
	}
	v := tval{r: dot(st.r, b)}
	if h == bp.H {
		v.b, v.sum = bp.bonus.Value(sum), sum
		w.finish(id, v, a)
		return v, a
	}
	s2 := sum + max(quad(st.m, b), 0)
	pred, next := w.pred[h], w.bel[h+1]
	predict(st.t, b, pred)
	weights, acc := w.weights[h], w.acc[h]
	clear(weights)
	clear(acc)
	cut := false
	acts := bp.acts(end)
	for o2 := 0; o2 < bp.O; o2++ {
		z := correct(st.e, bp.O, pred, o2, next)
		if z == 0 {
			continue
		}
		if reach*z < w.eps {
			cut = true
			w.standIn(h, acts, next, z, s2, acc)
			continue
		}
		cv, ca := w.visit(h+1, o2, id, z, reach*z, s2)
		if w.over {
			return tval{}, 0
		}
		v.add(z, cv)
		weights[ca] += z
	}
	fb := a
	if cut {
		fb = w.bestFallback(acts, acc, &v)
	} else {
		bestW := 0.0
		for f, x := range weights {
			if x > bestW {
				bestW, fb = x, f
			}
		}
	}
	w.finishFallback(id, v, fb)
	return v, a
}

// finish stores a leaf's values.
func (w *tableWalker) finish(id int64, v tval, a int) {
	if w.build {
		n := &w.nodes[id]
		n.Fallback = w.bp.m.ActVocab[a]
		n.ValueReward, n.ValueBonus, n.ValueLCB = v.r, v.b, v.r-v.b
	}
}

func (w *tableWalker) finishFallback(id int64, v tval, fb int) {
	if w.build {
		n := &w.nodes[id]
		n.Fallback = w.bp.m.ActVocab[fb]
		n.ValueReward, n.ValueBonus, n.ValueLCB = v.r, v.b, v.r-v.b
	}
}

// standIn adds, for every fallback candidate f, the cut child (belief cb
// over s_{h+1}, probability z) played with f from step h+1 to H: its
// expected rescaled reward-to-go w_f·cb (exact) and an upper bound of its
// expected bonus, min{α·sqrt(s2 + u_f·cb), 1} (Jensen: the bonus is
// concave in Σ and u_f·cb bounds the expected future terms; see
// fallbackTables), with the same bound of E[Σ].
func (w *tableWalker) standIn(h int, acts []int, cb []float64, z, s2 float64, acc []float64) {
	ft, t := w.ft, h+1
	for i, f := range acts {
		j := t*ft.A + f
		r := dot(ft.w[j], cb)
		sum := s2 + max(dot(ft.u[j], cb), 0)
		c := acc[4*i : 4*i+4]
		c[0] += z * r
		c[1] += z * w.bp.bonus.Value(sum)
		c[2] += z
		c[3] += z * sum
	}
}

// bestFallback picks the candidate with the largest stand-in value (ties
// to the first), adds its sums to v and returns it.
func (w *tableWalker) bestFallback(acts []int, acc []float64, v *tval) int {
	best, bi := math.Inf(-1), 0
	for i := range acts {
		c := acc[4*i : 4*i+4]
		if x := c[0] - c[1]; x > best {
			best, bi = x, i
		}
	}
	c := acc[4*bi : 4*bi+4]
	v.r += c[0]
	v.b += c[1]
	v.out += c[2]
	v.sum += c[3]
	return acts[bi]
}

// table builds the policy's table within rows rows and returns the
// policy, its root values and the reach threshold. Under a fixed policy
// the reach probabilities of one step's histories sum to at most 1, so at
// most 1/ε of them reach ε: the threshold starts at the smallest ε = 2^−k
// with Σ_h min(|O|^h, 1/ε) ≤ rows (0 when the whole tree fits), which
// always fits. It is then lowered by 2^−j while a count of the rows it
// keeps (stopping at the budget) still fits, j extrapolated from the
// growth of the count per halving (aiming at 90% of the budget, halved
// after a miss), refineSteps counts at most.
func (w *tableWalker) table(ctx context.Context, rows int64) (*Policy, tval, float64, error) {
	nodes := math.Min(float64(rows), treeRows(w.bp.O, w.bp.H))
	w.look = make([]bool, w.bp.H+1)
	for h := 1; h <= w.bp.H; h++ {
		c := float64(w.bp.lookaheadCost(h))
		w.look[h] = c <= lookaheadMaxCost && c*nodes <= lookaheadTotal
	}
	eps := startThreshold(w.bp.O, w.bp.H, rows)
	c, growth, j := 0.0, 2.0, 1
	for i := 0; i < refineSteps && eps > 0 && j >= 1; i++ {
		try := math.Ldexp(eps, -j)
		if try < 1e-300 {
			try = 0
		}
		w.walk(ctx, try, rows, false)
		if err := ctx.Err(); err != nil {
			return nil, tval{}, 0, err
		}
		if w.over {
			j /= 2
			continue
		}
		n := float64(w.count)
		if c > 0 && n > c {
			growth = math.Pow(n/c, 1/float64(j))
		}
		eps, c = try, n
		if growth <= 1.0001 {
			j *= 2
		} else {
			j = max(1, int(math.Log(0.9*float64(rows)/n)/math.Log(growth)))
		}
	}
	v := w.walk(ctx, eps, math.MaxInt64, true)
	if err := ctx.Err(); err != nil {
		return nil, tval{}, 0, err
	}
	pol := &Policy{Horizon: w.bp.H, Nodes: append([]Node(nil), w.nodes...)}
	return pol, v, eps, nil
}

// refineSteps bounds the counts that lower the table threshold past the
// guaranteed one (each costs at most the row budget in nodes).
const refineSteps = 6

// treeRows is Σ_{h=1}^H |O|^h, the most rows a policy's tree can have.
func treeRows(O, H int) float64 {
	n := 0.0
	for h := 1; h <= H; h++ {
		n += math.Pow(float64(O), float64(h))
	}
	return n
}

// startThreshold is the smallest ε = 2^−k (or 0) for which the bound
// Σ_{h=1}^H min(|O|^h, 1/ε) on the table's rows fits rows (step 1 is
// always kept whole).
func startThreshold(O, H int, rows int64) float64 {
	bound := func(eps float64) float64 {
		n := 0.0
		for h := 1; h <= H; h++ {
			c := math.Pow(float64(O), float64(h))
			if eps > 0 && h > 1 {
				c = math.Min(c, 1/eps)
			}
			n += c
		}
		return n
	}
	if bound(0) <= float64(rows) {
		return 0
	}
	eps := 1.0
	for k := 0; k < 1000 && bound(eps/2) <= float64(rows); k++ {
		eps /= 2
	}
	return eps
}
