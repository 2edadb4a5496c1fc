package policy

import (
	"context"
	"errors"
	"math"
	"slices"
)

// The exact value of the relaxed problem.
//
// upperBound's relaxed problem has step rewards linear in the belief, so
// its optimal value at step h is the upper envelope of finitely many
// vectors, max_{α∈Γ_h} α·b. Exact value iteration computes the sets:
//
//	Γ_{h,a} = rr_{h,a} ⊕_o {g_{a,o,α′} : α′ ∈ Γ_{h+1}},   g(s) = Σ_{s′} T_h(s′|s,a) E_h(o|s′,a) α′(s′),
//	Γ_h     = prune(∪_a Γ_{h,a}),
//
// the cross-sums over o taken one observation at a time and pruned after
// each (incremental pruning: Cassandra, Littman, Zhang, "Incremental
// pruning: a simple, fast, exact method for partially observable Markov
// decision processes", UAI 1997). A vector is kept when a linear program
// finds a belief where it beats every kept vector by more than
// exactPruneTol (Lark's filter, White 1991); one it beats by less is
// dropped, which can lower the envelope by at most exactPruneTol per
// pruning, so the bound adds that slack back (exactSlack). Where the sets
// stay small — few latent states, or few distinct optimal plans — this
// is the relaxed problem's optimum itself, with no interpolation, where
// the sawtooth's value between its points and the corners can lie far
// above it (paint at H = 20: docs/planning.md). Where a set or the work
// would pass its limit, the computation stops and the sawtooth stands
// alone.

// exactMaxVectors bounds each pruned set of the exact relaxed value
// iteration, exactMaxCross each cross-sum before pruning, and
// exactMaxWork its work: multiply–adds of the dominance checks and of
// the linear programs' pivots, at most 0.5 s on this machine. Counting
// work rather than time keeps the bound the same on every machine. paint
// at H = 20 (rank 6, 4 actions, 3 observations: sets of at most 79
// vectors) takes 3.9·10⁸ (0.2 s); bench/fit.sh's model (rank 8, 8
// observations) passes exactMaxVectors after 7·10⁸ (0.3 s).
const (
	exactMaxVectors = 256
	exactMaxCross   = 8192
	exactMaxWork    = 1e9
)

// exactPruneTol is the least advantage, on the [0,1] scale of the
// return, for which a vector is kept.
const exactPruneTol = 1e-9

// relaxedVI is the exact value iteration's state: the planner, the
// relaxed rewards rr[h][a] and the work done so far.
type relaxedVI struct {
	p    *beliefPlanner
	rr   [][][]float64
	work float64
}

// errTooLarge stops relaxedVI when a set or the work passes its limit.
var errTooLarge = errors.New("policy: the relaxed problem's vector sets pass their limit")

// exactRelaxedBound returns the relaxed problem's optimal value at the
// root (the same root as rootUpper) plus the pruning slack, and whether
// the sets and the work stayed within their limits.
func (p *beliefPlanner) exactRelaxedBound(ctx context.Context, sw *sawtooth) (float64, bool, error) {
	v, slack, ok, err := p.exactRelaxedValue(ctx, sw)
	return v + slack, ok, err
}

// exactRelaxedValue is exactRelaxedBound's value before the slack is
// added, and the slack.
func (p *beliefPlanner) exactRelaxedValue(ctx context.Context, sw *sawtooth) (v, slack float64, ok bool, err error) {
	vi := &relaxedVI{p: p, rr: sw.rr}
	gamma, err := vi.run(ctx)
	if errors.Is(err, errTooLarge) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, err
	}
	v = p.rootValue(func(b []float64) float64 { return envelope(gamma, b) })
	return v, exactSlack(p.H, p.O), true, nil
}

// envelope is max_{g∈gamma} g·b.
func envelope(gamma [][]float64, b []float64) float64 {
	best := math.Inf(-1)
	for _, g := range gamma {
		best = max(best, dot(g, b))
	}
	return best
}

// run computes Γ_1.
func (vi *relaxedVI) run(ctx context.Context) ([][]float64, error) {
	p := vi.p
	next := [][]float64{make([]float64, p.S)} // Γ_{H+1} = {0}
	for h := p.H; h >= 1; h-- {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var all [][]float64
		for a := 0; a < p.A; a++ {
			set, err := vi.actionVectors(h, a, next)
			if err != nil {
				return nil, err
			}
			all = append(all, set...)
		}
		var err error
		if next, err = vi.prune(all); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// exactSlack is what the dropped vectors may have taken from the
// envelope at the root: each pruning lowers the envelope of its set by
// at most exactPruneTol; a step's value is the best action's, whose
// vectors went through two prunings per observation (the projected set
// and the cross-sum), then the step's own; and a backup passes the next
// step's lowering on unchanged at most (the observation probabilities
// after a belief and an action sum to one). So H·(2|O| + 1) prunings'
// worth.
func exactSlack(H, O int) float64 { return float64(H*(2*O+1)) * exactPruneTol }

// actionVectors is Γ_{h,a} of step h from the next step's set next.
func (vi *relaxedVI) actionVectors(h, a int, next [][]float64) ([][]float64, error) {
	p := vi.p
	S, O := p.S, p.O
	rr := vi.rr[h][a]
	if h == p.H {
		return [][]float64{slices.Clone(rr)}, nil
	}
	st := &p.tab[h][a]
	sum := [][]float64{slices.Clone(rr)}
	for o := range O {
		g := project(st.t, st.e, S, O, o, next)
		vi.work += float64(len(next) * S * S)
		if g == nil {
			continue
		}
		g, err := vi.prune(g)
		if err != nil {
			return nil, err
		}
		if len(g)*len(sum) > exactMaxCross {
			return nil, errTooLarge
		}
		cross := make([][]float64, 0, len(g)*len(sum))
		for _, u := range sum {
			for _, w := range g {
				c := make([]float64, S)
				for s := range S {
					c[s] = u[s] + w[s]
				}
				cross = append(cross, c)
			}
		}
		if sum, err = vi.prune(cross); err != nil {
			return nil, err
		}
	}
	return sum, nil
}

// project is {g_{a,o,α′} : α′ ∈ next} for the step's transition t and
// emission e, g(s) = Σ_{s′} t(s′|s) e(o|s′) α′(s′); nil when o has
// probability 0 from every state.
func project(t, e []float64, S, O, o int, next [][]float64) [][]float64 {
	reachable := false
	for s2 := range S {
		for s := range S {
			reachable = reachable || (t[s*S+s2] != 0 && e[s2*O+o] != 0)
		}
	}
	if !reachable {
		return nil
	}
	w := make([]float64, S)
	g := make([][]float64, 0, len(next))
	for _, v := range next {
		for s2 := range S {
			w[s2] = e[s2*O+o] * v[s2]
		}
		gv := make([]float64, S)
		for s := range S {
			gv[s] = dot(t[s*S:(s+1)*S], w)
		}
		g = append(g, gv)
	}
	return g
}

// prune returns the vectors of set that lie on the upper envelope over
// the simplex (Lark's filter, in a fixed order so the result depends on
// set alone). A vector whose linear program fails is kept: a larger set
// only raises the envelope, so the bound stays a bound.
func (vi *relaxedVI) prune(set [][]float64) ([][]float64, error) {
	S := vi.p.S
	if float64(len(set))*float64(len(set))*float64(S) > exactMaxWork-vi.work {
		return nil, errTooLarge // the dominance checks alone would pass the limit
	}
	cands := undominated(set)
	vi.work += float64(len(set)) * float64(len(set)) * float64(S)
	var kept [][]float64
	for len(cands) > 0 {
		if len(kept) > exactMaxVectors || vi.work > exactMaxWork {
			return nil, errTooLarge
		}
		b, adv, work, ok := witness(cands[0], kept, S)
		vi.work += work
		if !ok {
			kept = append(kept, cands[0])
			cands = cands[1:]
			continue
		}
		if adv <= exactPruneTol {
			cands = cands[1:]
			continue
		}
		// The best candidate at the witness belief is on the envelope.
		bi, best := 0, dot(cands[0], b)
		for i := 1; i < len(cands); i++ {
			if v := dot(cands[i], b); v > best || (v == best && slices.Compare(cands[i], cands[bi]) > 0) {
				bi, best = i, v
			}
		}
		kept = append(kept, cands[bi])
		cands = slices.Delete(cands, bi, bi+1)
	}
	if len(kept) > exactMaxVectors {
		return nil, errTooLarge
	}
	return kept, nil
}

// undominated drops duplicates and the vectors some other vector of set
// is at least as large as in every coordinate, in a fixed (lexicographic)
// order.
func undominated(set [][]float64) [][]float64 {
	sorted := slices.Clone(set)
	slices.SortFunc(sorted, func(x, y []float64) int { return -slices.Compare(x, y) })
	sorted = slices.CompactFunc(sorted, slices.Equal)
	var out [][]float64
	for i, v := range sorted {
		dominated := false
		for j, w := range sorted {
			if i != j && geq(w, v) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, v)
		}
	}
	return out
}

// geq is whether w ≥ v in every coordinate.
func geq(w, v []float64) bool {
	for s := range v {
		if w[s] < v[s] {
			return false
		}
	}
	return true
}

// witness solves the linear program of Lark's filter: the belief b of
// the simplex where v most exceeds the best of kept, and that advantage
// (+Inf with kept empty, at the corner of v's largest coordinate).
// Standard form for lp.Simplex, variables (b, δ⁺, δ⁻, slacks):
//
//	minimize −δ⁺ + δ⁻  s.t.  (v − k_j)·b − δ⁺ + δ⁻ − s_j = 0 for each k_j,  Σ b = 1.
//
// witness solves the linear program of Lark's filter: the belief b of
// the simplex where v most exceeds the best of kept, that advantage
// δ* = max_b min_j (v − k_j)·b (+Inf with kept empty, at the corner of
// v's largest coordinate), and the multiply–adds the pivots took. With L = min_{j,s} (v − k_j)(s) and
// d_j = v − k_j − L ≥ 0 it is L plus
//
//	max δ′  s.t.  δ′ − d_j·b ≤ 0 for each j,  Σ_s b_s ≤ 1,  b, δ′ ≥ 0,
//
// (the optimum has Σ b = 1: raising b only loosens the constraints),
// whose origin is feasible, so the simplex method starts from the slack
// basis (simplexMax). false when it fails to finish.
func witness(v []float64, kept [][]float64, S int) ([]float64, float64, float64, bool) {
	b := make([]float64, S)
	if len(kept) == 0 {
		b[firstMax(v)] = 1
		return b, math.Inf(1), 0, true
	}
	L := math.Inf(1)
	for _, k := range kept {
		for s := range S {
			L = min(L, v[s]-k[s])
		}
	}
	n := len(kept)
	A := make([][]float64, n+1)
	for j, k := range kept {
		row := make([]float64, S+1)
		for s := range S {
			row[s] = -(v[s] - k[s] - L)
		}
		row[S] = 1
		A[j] = row
	}
	A[n] = make([]float64, S+1)
	for s := range S {
		A[n][s] = 1
	}
	rhs := make([]float64, n+1)
	rhs[n] = 1
	c := make([]float64, S+1)
	c[S] = 1
	x, opt, pivots, ok := simplexMax(c, A, rhs)
	work := float64(pivots+1) * float64(n+2) * float64(n+S+3)
	if !ok {
		return nil, 0, work, false
	}
	sum := 0.0
	for s := range S {
		b[s] = max(x[s], 0)
		sum += b[s]
	}
	if sum > 0 {
		for s := range b {
			b[s] /= sum
		}
	} else {
		for s := range b {
			b[s] = 1 / float64(S)
		}
	}
	return b, opt + L, work, true
}

// simplexMax maximises cᵀx subject to A x ≤ rhs, x ≥ 0, for rhs ≥ 0 (the
// origin is feasible), by the tableau simplex method with Bland's rule
// (the first improving column, the first row among tied ratios), which
// cannot cycle on the degenerate vertices these programs are full of. It
// returns x, the optimum, the pivots taken, and false when it takes more
// than simplexMaxPivots pivots per row and column.
func simplexMax(c []float64, A [][]float64, rhs []float64) ([]float64, float64, int, bool) {
	m, nv := len(A), len(c)
	w := nv + m + 1 // columns: x, slacks, right-hand side
	T := make([]float64, (m+1)*w)
	basis := make([]int, m)
	for i := range m {
		row := T[i*w : (i+1)*w]
		copy(row, A[i])
		row[nv+i] = 1
		row[w-1] = rhs[i]
		basis[i] = nv + i
	}
	z := T[m*w : (m+1)*w] // reduced costs, as −c̄ (the objective row)
	for j := range nv {
		z[j] = -c[j]
	}
	const eps = 1e-12
	pivots := 0
	for iter := 0; ; iter++ {
		if iter > simplexMaxPivots*(m+nv) {
			return nil, 0, iter, false
		}
		e := -1
		for j := 0; j < w-1; j++ {
			if z[j] < -eps {
				e = j
				break
			}
		}
		if e < 0 {
			pivots = iter
			break
		}
		r, ratio := -1, math.Inf(1)
		for i := range m {
			if a := T[i*w+e]; a > eps {
				q := T[i*w+w-1] / a
				if q < ratio-eps || (q <= ratio+eps && r >= 0 && basis[i] < basis[r]) {
					r, ratio = i, q
				}
			}
		}
		if r < 0 {
			return nil, 0, iter, false // unbounded: cannot happen with Σ b ≤ 1
		}
		pivot(T, w, m, r, e)
		basis[r] = e
	}
	x := make([]float64, nv)
	for i, j := range basis {
		if j < nv {
			x[j] = T[i*w+w-1]
		}
	}
	return x, z[w-1], pivots, true
}

// simplexMaxPivots bounds simplexMax's pivots per row and column.
const simplexMaxPivots = 50

// pivot makes column e of the (m+1)-row tableau T (row width w) the unit
// column of row r.
func pivot(T []float64, w, m, r, e int) {
	pr := T[r*w : (r+1)*w]
	inv := 1 / pr[e]
	for j := range pr {
		pr[j] *= inv
	}
	pr[e] = 1
	for i := 0; i <= m; i++ {
		if i == r {
			continue
		}
		row := T[i*w : (i+1)*w]
		f := row[e]
		if f == 0 {
			continue
		}
		for j := range row {
			row[j] -= f * pr[j]
		}
		row[e] = 0
	}
}
