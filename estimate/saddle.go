package estimate

import (
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Leaving the saddle point of a split start.
//
// The rank search warm-starts rank S2 from the rank-S optimum with every
// state copied (growModel). Copies that are exactly alike are a fixed
// point of EM: relabelling the copies (the involution σ that swaps each
// state with its copy) maps the model to itself, and EM commutes with
// relabelling. When the larger rank can hold more, the fixed point is a
// saddle: the seeded jitter between the copies grows under EM, but by a
// factor close to 1 per step, so the log-likelihood gains thousandths of
// a nat per step for dozens of steps before tens of nats per step
// (stand-tiger, docs/validation.md, "Second diagnosis"). A stopping rule
// on the gain of one step stops in that lull, and the search sees no gain
// in the larger rank.
//
// At a would-be stop of a split start, escape tests whether the run
// stopped at a maximum or in such a lull, from the EM map itself:
//
//  1. the Jacobian J of the EM map M at the stopping point θ (in SQUAREM's
//     extrapolation space, accel.go: log-probabilities, rows
//     renormalised) is probed by finite differences, (M(θ + εv) −
//     M(θ))/ε, and the eigenvalue of J − I of largest real part, μ, is
//     found by escapeKrylov steps of Arnoldi's method started from the
//     run's last step, which in a lull already points along the slowest
//     directions (Saad, "Numerical Methods for Large Eigenvalue
//     Problems", 2nd ed., 2011, ch. 6). Near a fixed point EM is
//     θ ↦ θ + I_c⁻¹∇ℓ with the complete-data information I_c positive
//     definite, so J − I = I_c⁻¹∇²ℓ, and μ > 0 means a direction u of
//     positive curvature, uᵀ∇²ℓ u = μ·uᵀI_c u > 0: a saddle, which EM
//     leaves at the rate 1 + μ per step;
//  2. when μ is too small for EM to leave within its remaining iterations
//     (escapeGrowth), the run stops as before; a maximum (μ ≤ 0) always
//     stops. Copies with nothing to tell apart are a maximum of this kind:
//     what they differ in either decays under EM or does not change the
//     likelihood at all;
//  3. otherwise a line search along θ + t·u, t = escapeStep·2^k, takes
//     the best point while the objective rises. When it gains no more
//     than the tolerance (what one EM step that stops the run gains), the
//     direction is no way out worth the iterations and the run stops;
//     otherwise EM goes on from that point at the tolerance saddleTol for
//     the ln 10/μ steps the saddle needs (escapeGrowth), then at the
//     run's own. Where it stops again, the test is repeated (at most
//     maxProbes times).
//
// A probe costs escapeKrylov E-steps and the line search at most
// escapeSearch; a run that is at a maximum pays the probe only. The
// probe's eight Arnoldi steps resolve a rate that stands apart from EM's
// slow stable modes; a saddle whose rate is buried among them (μ ≈ 0.005
// among stable rates as close to 0) is taken for a maximum.

// escapeKrylov is the number of Arnoldi steps (EM-map probes) of one
// escape.
const escapeKrylov = 8

// escapeEps is the finite-difference step of a probe, in the
// extrapolation space's units (a unit vector of log-probabilities).
const escapeEps = 1e-3

// escapeStep and escapeSearch: the line search tries t = escapeStep·2^k,
// k < escapeSearch, along a unit direction of log-probabilities.
const (
	escapeStep   = 0.125
	escapeSearch = 9
)

// escapeGrowth: along a direction of growth rate μ per EM step
// (eigenvalue 1 + μ of the EM map) the copies' difference grows tenfold,
// from growModel's jitter of 0.1 to copies that differ by O(1), in
// ln 10/μ steps. A saddle is worth leaving when the run has that many
// iterations left; the run then keeps saddleTol for that many.
const escapeGrowth = math.Ln10

// saddleTol is the tolerance of a run while it leaves a saddle: below
// the gains of the lull, a few thousandths of a nat per step on 10⁴
// episodes (relative 10⁻⁷, stand-tiger in docs/validation.md).
const saddleTol = 1e-8

// maxProbes bounds the probes of one run: a run that left one saddle
// can stop near the next (a second pair of copies still alike).
const maxProbes = 3

// splitPairs is the involution σ of growModel's copies when S states grow
// to S2: state j < S and its copy j+S (when j+S < S2) swap; other states
// are fixed. Nil when no state is copied.
func splitPairs(S, S2 int) []int {
	if S2 <= S || S <= 0 {
		return nil
	}
	p := make([]int, S2)
	for j := range p {
		p[j] = j
	}
	for j := 0; j < S && j+S < S2; j++ {
		p[j], p[j+S] = j+S, j
	}
	return p
}

// permuteStates returns m with its states relabelled: state j of the
// result is state perm[j] of m.
func permuteStates(m *Model, perm []int) *Model {
	n := shapeLike(m)
	permuteFirst(n, m, perm)
	for t := range m.Trans {
		T, E := permuteTable(m, t, perm)
		n.Trans = append(n.Trans, T)
		n.Emit = append(n.Emit, E)
		pullRewards(n, m, t, func(j int) int { return perm[j] })
	}
	n.Prepare()
	return n
}

// permuteFirst sets n's first-step distributions, Init and Obs1, to m's
// with state j of n taken from state perm[j] of m.
func permuteFirst(n, m *Model, perm []int) {
	S, O := m.States, m.NumObs
	n.Init = make([]float64, S)
	n.Obs1 = make([]float64, S*O)
	for j, pj := range perm {
		n.Init[j] = m.Init[pj]
		copy(n.Obs1[j*O:(j+1)*O], m.Obs1[pj*O:(pj+1)*O])
	}
}

// permuteTable returns m's transitions and emissions of step table t
// with the states relabelled as in permuteStates.
func permuteTable(m *Model, t int, perm []int) (T, E []float64) {
	S, O, A := m.States, m.NumObs, m.NumActions
	eA := A
	if m.Compact {
		eA = 1
	}
	T = make([]float64, len(m.Trans[t]))
	E = make([]float64, len(m.Emit[t]))
	for a := 0; a < A; a++ {
		for j, pj := range perm {
			for j2, pj2 := range perm {
				T[(a*S+j)*S+j2] = m.Trans[t][(a*S+pj)*S+pj2]
			}
			if a < eA {
				copy(E[(a*S+j)*O:(a*S+j+1)*O], m.Emit[t][(a*S+pj)*O:(a*S+pj+1)*O])
			}
		}
	}
	return T, E
}

// pullRewards appends to n the reward parameters of m's step table t,
// n's state j taking those of m's state from(j) (n has m's actions,
// observations and reward form; growModel and permuteStates).
func pullRewards(n, m *Model, t int, from func(int) int) {
	cells := func(dst, src []float64, V int) { pullCells(n, m, from, dst, src, V) }
	nc := n.RewardCells()
	if m.Reward == RewardCategorical {
		V := len(m.RewardValues)
		R := make([]float64, nc*V)
		cells(R, m.RewardProb[t], V)
		n.RewardProb = append(n.RewardProb, R)
		return
	}
	mu, vr := make([]float64, nc), make([]float64, nc)
	cells(mu, m.RewardMean[t], 1)
	cells(vr, m.RewardVar[t], 1)
	n.RewardMean = append(n.RewardMean, mu)
	n.RewardVar = append(n.RewardVar, vr)
}

// pullCells copies the reward cells (V numbers each) of m in src into
// those of n in dst, n's state j taking those of m's state from(j).
func pullCells(n, m *Model, from func(int) int, dst, src []float64, V int) {
	S2, A, rO := n.States, n.NumActions, n.NumObs
	if n.Compact {
		rO = 1 // the Compact form's rewards do not depend on o_{h+1}
	}
	for j := 0; j < S2; j++ {
		for a := 0; a < A; a++ {
			for j2 := 0; j2 < S2; j2++ {
				for o := 0; o < rO; o++ {
					d, s := n.RewardIndex(j, a, j2, o)*V, m.RewardIndex(from(j), a, from(j2), o)*V
					copy(dst[d:d+V], src[s:s+V])
				}
			}
		}
	}
}

// flatPerm is σ on the extrapolation space of m: flatten(σm)[i] =
// flatten(m)[perm[i]].
func flatPerm(m *Model, pairs []int) []int {
	idx, n := indexModel(m)
	perm := make([]int, 0, n)
	for _, b := range paramBlocks(permuteStates(idx, pairs)) {
		for _, v := range b.p {
			perm = append(perm, int(v))
		}
	}
	return perm
}

// indexModel is a model of m's shape whose every parameter holds its own
// index in the flat vector, and the number n of parameters.
func indexModel(m *Model) (idx *Model, n int) {
	idx, _ = unflatten(m, flatten(m, nil), math.Inf(-1))
	for _, b := range paramBlocks(idx) {
		for i := range b.p {
			b.p[i] = float64(n)
			n++
		}
	}
	return idx, n
}

// escape probes the point the run stopped on for an unstable direction
// (see above) and says whether the run goes on: when it finds one along
// which EM leaves within its remaining iterations, EM goes on from the
// best point of a line search along it, at the tolerance saddleTol for
// the steps the saddle needs.
func (r *emRun) escape() (bool, error) {
	if r.pairs == nil || r.probes >= maxProbes || r.esteps+escapeKrylov+1 > r.o.MaxIter {
		return false, nil
	}
	r.probes++
	cur := r.fin
	x := flatten(cur.m, nil)
	u, mu, err := r.unstableDirection(cur, x)
	if err != nil || u == nil {
		return false, err
	}
	best, err := r.lineSearch(cur, x, u)
	if err != nil {
		return false, err
	}
	if best.obj-cur.obj <= r.o.Tol*math.Abs(best.obj) {
		// Along the direction the objective gains no more than one EM
		// step that stops the run: no way out worth the iterations.
		return false, nil
	}
	r.tight = r.esteps + int(math.Ceil(escapeGrowth/mu))
	r.res = emResult{trace: r.res.trace, obj: r.res.obj}
	r.cur, r.start = cur, true
	return !r.advance(best, false), nil
}

// unstableDirection is the direction u, at the stopping point cur
// (flattened: x), of the Jacobian's eigenvalue mu of largest real part,
// turned along the start vector, when EM leaves along it within the
// run's remaining iterations (nil otherwise).
func (r *emRun) unstableDirection(cur emPoint, x []float64) ([]float64, float64, error) {
	d := r.startVector(cur, x)
	if d == nil {
		return nil, 0, nil
	}
	u, mu, err := arnoldiTop(d, r.jacobianProbe(cur, x), escapeKrylov)
	if err != nil || u == nil || !(mu*float64(r.o.MaxIter-r.esteps) > escapeGrowth) {
		return nil, 0, err
	}
	if floats.Dot(u, d) < 0 {
		floats.Scale(-1, u)
	}
	return u, mu, nil
}

// startVector is the Arnoldi start vector at the stopping point cur
// (flattened: x): the last step of the run, which in the lull of a saddle
// points along its unstable direction; the copies' difference when the
// run stopped on its first point; nil when both are 0.
func (r *emRun) startVector(cur emPoint, x []float64) []float64 {
	d := make([]float64, len(x))
	if r.cur.m != cur.m {
		floats.SubTo(d, x, flatten(r.cur.m, nil))
	}
	if floats.Norm(d, 2) == 0 {
		for i, j := range flatPerm(cur.m, r.pairs) {
			d[i] = (x[i] - x[j]) / 2
		}
	}
	if floats.Norm(d, 2) == 0 {
		return nil
	}
	return d
}

// jacobianProbe is v ↦ (J − I)v for the EM map's Jacobian J at cur
// (flattened: x), by a forward difference of step escapeEps; each call
// runs one E-step.
func (r *emRun) jacobianProbe(cur emPoint, x []float64) func([]float64) ([]float64, error) {
	n, vf := len(x), r.c.varFloor()
	f0 := flatten(cur.k.mstep(cur.st, r.c, r.o.Smoothing), nil)
	return func(v []float64) ([]float64, error) {
		xv := make([]float64, n)
		for i := range xv {
			xv[i] = x[i] + escapeEps*v[i]
		}
		mv, ok := unflatten(cur.m, xv, vf)
		if !ok {
			return nil, nil
		}
		p, err := r.eval(mv)
		if err != nil {
			return nil, err
		}
		fv := flatten(p.k.mstep(p.st, r.c, r.o.Smoothing), nil)
		w := make([]float64, n)
		for i := range w {
			w[i] = (fv[i]-f0[i])/escapeEps - v[i]
		}
		return w, nil
	}
}

// lineSearch returns the best of cur and the points x + t·u, t =
// escapeStep·2^k, while the objective rises.
func (r *emRun) lineSearch(cur emPoint, x, u []float64) (emPoint, error) {
	best := cur
	xt := make([]float64, len(x))
	for k, t := 0, escapeStep; k < escapeSearch && r.esteps < r.o.MaxIter; k, t = k+1, t*2 {
		for i := range xt {
			xt[i] = x[i] + t*u[i]
		}
		m, ok := unflatten(cur.m, xt, r.c.varFloor())
		if !ok {
			break
		}
		p, err := r.eval(m)
		if err != nil {
			return best, err
		}
		if math.IsInf(p.st.ll, -1) || !(p.obj > best.obj) {
			break
		}
		best = p
	}
	return best, nil
}

// arnoldiTop runs k steps of Arnoldi's method on the operator apply from
// v0 and returns the unit Ritz vector of the Ritz value of largest real
// part, and that real part (nil when apply could not be evaluated).
func arnoldiTop(v0 []float64, apply func([]float64) ([]float64, error), k int) ([]float64, float64, error) {
	Q, Hm, m, err := arnoldi(v0, apply, k)
	if Q == nil {
		return nil, 0, err
	}
	return topRitz(Q, Hm, m, len(v0))
}

// arnoldi runs up to k steps of Arnoldi's method on apply from v0 and
// returns the orthonormal basis Q, the (k+1)×k Hessenberg matrix Hm and
// the number m of steps taken (fewer when the Krylov space is exhausted);
// Q is nil when apply could not be evaluated.
func arnoldi(v0 []float64, apply func([]float64) ([]float64, error), k int) ([][]float64, *mat.Dense, int, error) {
	q0 := append([]float64(nil), v0...)
	floats.Scale(1/floats.Norm(q0, 2), q0)
	Q := [][]float64{q0}
	Hm := mat.NewDense(k+1, k, nil)
	m := 0
	for j := 0; j < k; j++ {
		w, err := apply(Q[j])
		if err != nil || w == nil {
			return nil, nil, 0, err
		}
		gramSchmidt(Q, Hm, j, w)
		m = j + 1
		nw := floats.Norm(w, 2)
		Hm.Set(j+1, j, nw)
		if nw < 1e-12 {
			break
		}
		floats.Scale(1/nw, w)
		Q = append(Q, w)
	}
	return Q, Hm, m, nil
}

// gramSchmidt orthogonalises w against Q[0..j] and adds the projections
// into column j of Hm: modified Gram–Schmidt, twice for orthogonality.
func gramSchmidt(Q [][]float64, Hm *mat.Dense, j int, w []float64) {
	for pass := 0; pass < 2; pass++ {
		for i := 0; i <= j; i++ {
			h := floats.Dot(Q[i], w)
			Hm.Set(i, j, Hm.At(i, j)+h)
			floats.AddScaled(w, -h, Q[i])
		}
	}
}

// topRitz returns the unit Ritz vector (length n) of the Ritz value of
// largest real part of the m×m leading block of Hm, and that real part
// (nil when the eigen-decomposition fails or the vector vanishes).
func topRitz(Q [][]float64, Hm *mat.Dense, m, n int) ([]float64, float64, error) {
	Hk := mat.DenseCopyOf(Hm.Slice(0, m, 0, m))
	var eig mat.Eigen
	if !eig.Factorize(Hk, mat.EigenRight) {
		return nil, 0, nil
	}
	vals := eig.Values(nil)
	top := 0
	for i, v := range vals {
		if real(v) > real(vals[top]) {
			top = i
		}
	}
	var vecs mat.CDense
	eig.VectorsTo(&vecs)
	u := make([]float64, n)
	for i := 0; i < m; i++ {
		floats.AddScaled(u, real(vecs.At(i, top)), Q[i])
	}
	nu := floats.Norm(u, 2)
	if nu == 0 {
		return nil, 0, nil
	}
	floats.Scale(1/nu, u)
	return u, real(vals[top]), nil
}
