package estimate

import (
	"context"
	"math"

	"github.com/psrlcb/psrlcb/internal/parallel"
	"github.com/psrlcb/psrlcb/internal/simd"
)

// blockEpisodes is the number of episodes per E-step block. Blocks are
// accumulated separately and added in block order, so the sums — and the
// fitted model — do not depend on the number of workers. 1024 episodes
// make a block's work far larger than the cost of adding its accumulator.
const blockEpisodes = 1024

// kernel holds the per-iteration products of the parameters that the
// E-step reads.
type kernel struct {
	m                 *Model
	S, O, A, V, H, nt int
	kind              RewardKind

	// Categorical rewards: the step matrix
	// M[t][(((a*O+o)*V+v)*S+s)*S+s2] = T(s2|s,a)·E(o|s2,a)·R(v|s,a,s2,o)
	// and its row sums g[t][((a*V+v)*S+s)] (the last step, where s2 and o
	// are not logged and are summed out). MT holds each S×S block of M
	// transposed, for the backward pass's vector kernel, when the blocks
	// are few (transposeCells); nil otherwise.
	M, g, MT [][]float64

	// Gaussian rewards: TE[t][((a*O+o)*S+s)*S+s2] = T·E, and per
	// RewardIndex the mean, inverse variance and log normaliser.
	TE, mu, iv, ln [][]float64

	// cp is the kernel of the Compact form (compact.go); the fields
	// above are then unused.
	cp *compactKernel
}

// newKernel computes the step products of m that the E-step reads
// (the Compact form's through newCompactKernel).
func newKernel(m *Model, c *coded) *kernel {
	S, O, A := m.States, m.NumObs, m.NumActions
	k := &kernel{m: m, S: S, O: O, A: A, H: m.Horizon, nt: len(m.Trans), kind: m.Reward}
	if m.Reward == RewardCategorical {
		k.V = len(m.RewardValues)
	}
	if m.Compact {
		newCompactKernel(k)
		return k
	}
	k.addTables()
	k.addTransposes()
	return k
}

// transposeCells bounds the numbers of the categorical kernel that get a
// transposed copy (kernel.MT): 2²⁰ numbers are 8 MiB.
const transposeCells = 1 << 20

// keepsTransposes is whether a categorical kernel of cells numbers over
// every table, of S states, keeps MT where the vector kernels run. The
// memory estimate counts MT by this rule whatever the processor, so that
// it, and the choices it makes, are the same everywhere.
func keepsTransposes(cells float64, S int) bool {
	return S >= 4 && cells <= transposeCells
}

// addTransposes sets k.MT when keepsTransposes says so and the vector
// kernels run.
func (k *kernel) addTransposes() {
	if k.kind != RewardCategorical || !useStepKernels(k.S) || !keepsTransposes(float64(k.nt*k.A*k.O*k.V*k.S*k.S), k.S) {
		return
	}
	S := k.S
	for _, M := range k.M {
		MT := make([]float64, len(M))
		for b := 0; b < len(M); b += S * S {
			for s := 0; s < S; s++ {
				for s2 := 0; s2 < S; s2++ {
					MT[b+s2*S+s] = M[b+s*S+s2]
				}
			}
		}
		k.MT = append(k.MT, MT)
	}
}

// block is block idx (of size SS) of table t of tables, nil when tables
// is.
func (k *kernel) block(tables [][]float64, t, idx, SS int) []float64 {
	if tables == nil {
		return nil
	}
	return tables[t][idx*SS : (idx+1)*SS]
}

// addTables adds the full form's kernel tables of every step table, of
// categorical or Gaussian rewards.
func (k *kernel) addTables() {
	for t := 0; t < k.nt; t++ {
		if k.kind == RewardCategorical {
			k.addCatTable(t)
		} else {
			k.addGaussTable(t)
		}
	}
}

// addCatTable appends step table t's categorical step matrix M and its
// last-step row sums g (s2 and o summed out) to k.M and k.g.
func (k *kernel) addCatTable(t int) {
	S, O, A, V := k.S, k.O, k.A, k.V
	M := make([]float64, A*O*V*S*S)
	g := make([]float64, A*V*S)
	for a := 0; a < A; a++ {
		for o := 0; o < O; o++ {
			for v := 0; v < V; v++ {
				k.catBlock(t, a, o, v, M[((a*O+o)*V+v)*S*S:], g)
			}
		}
	}
	k.M = append(k.M, M)
	k.g = append(k.g, g)
}

// catBlock fills blk, the kernel block of action a, observation o and
// reward value v at step table t, with T(s2|s,a)·E(o|s2,a)·R(v|s,a,s2,o)
// for every s and s2, and adds every row's entries into g.
func (k *kernel) catBlock(t, a, o, v int, blk, g []float64) {
	m, S, O, V := k.m, k.S, k.O, k.V
	T, E, R := m.Trans[t], m.Emit[t], m.RewardProb[t]
	for s := 0; s < S; s++ {
		for s2 := 0; s2 < S; s2++ {
			x := T[(a*S+s)*S+s2] * E[(a*S+s2)*O+o] * R[m.RewardIndex(s, a, s2, o)*V+v]
			blk[s*S+s2] = x
			g[(a*V+v)*S+s] += x
		}
	}
}

// addGaussTable appends step table t's products T·E and its Gaussian
// reward means, inverse variances and log normalisers to k.
func (k *kernel) addGaussTable(t int) {
	m, S, O, A := k.m, k.S, k.O, k.A
	T, E := m.Trans[t], m.Emit[t]
	TE := make([]float64, A*O*S*S)
	for a := 0; a < A; a++ {
		for o := 0; o < O; o++ {
			for s := 0; s < S; s++ {
				for s2 := 0; s2 < S; s2++ {
					TE[((a*O+o)*S+s)*S+s2] = T[(a*S+s)*S+s2] * E[(a*S+s2)*O+o]
				}
			}
		}
	}
	mu, iv, ln := gaussTerms(m, t)
	k.TE = append(k.TE, TE)
	k.mu = append(k.mu, mu)
	k.iv = append(k.iv, iv)
	k.ln = append(k.ln, ln)
}

// gaussTerms returns step table t's Gaussian reward means, inverse
// variances and log normalisers −½·ln(2π·σ²) per RewardIndex.
func gaussTerms(m *Model, t int) (mu, iv, ln []float64) {
	n := m.RewardCells()
	mu, iv, ln = make([]float64, n), make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		v := m.RewardVar[t][i]
		mu[i] = m.RewardMean[t][i]
		iv[i] = 1 / v
		ln[i] = -0.5 * math.Log(2*math.Pi*v)
	}
	return mu, iv, ln
}

// stats are the expected sufficient statistics of one E-step (or block).
type stats struct {
	ll   float64
	zero int       // episodes of probability 0 (left out of the counts)
	init []float64 // [o*S+s] posterior of s_1 with o_1 = o
	// Categorical: bucket[t][(((a*O+o)*V+v)*S+s)*S+s2] = Σ α̂_h(s)·β̂_{h+1}(s2)/c_{h+1}
	// over steps with (a_h, o_{h+1}, r_h) = (a, o, v); multiplied
	// elementwise by M it is the posterior count of the step
	// (s, a, s2, o, v). last[t][((a*V+v)*S+s)] likewise for the last step.
	bucket, last [][]float64
	// Gaussian: posterior counts, Σ ξ·r and Σ ξ·r² per RewardIndex.
	cnt, sr, srr [][]float64
	// cp holds the Compact form's counts (compact.go).
	cp *compactStats
}

// newStats returns zero statistics for k; for the Compact form, total
// says whether they are the sum of all blocks or one block's (see
// compactStats).
func newStats(k *kernel, H int, total bool) *stats {
	S, O := k.S, k.O
	if k.cp != nil {
		st := &stats{}
		newCompactStats(k, st, H, total)
		return st
	}
	st := &stats{init: make([]float64, O*S)}
	for t := 0; t < k.nt; t++ {
		st.appendFullTable(k)
	}
	return st
}

// appendFullTable appends the full form's zero statistics of one step
// table: the buckets and last steps of categorical rewards, or the
// Gaussian sums.
func (st *stats) appendFullTable(k *kernel) {
	S, O, A, V := k.S, k.O, k.A, k.V
	if k.kind == RewardCategorical {
		st.bucket = append(st.bucket, make([]float64, A*O*V*S*S))
		st.last = append(st.last, make([]float64, A*V*S))
	} else {
		st.appendGaussTable(S * A * S * O)
	}
}

// appendGaussTable appends a table of n cells of zero Gaussian counts
// and reward sums to st.
func (st *stats) appendGaussTable(n int) {
	st.cnt = append(st.cnt, make([]float64, n))
	st.sr = append(st.sr, make([]float64, n))
	st.srr = append(st.srr, make([]float64, n))
}

// each calls f on every vector of st in a fixed order, with a slot
// number i: 0 for the initial and the Compact form's counts, 1 + the
// vector's place among the per-table vectors otherwise.
func (st *stats) each(f func(dst []float64, i int)) {
	f(st.init, 0)
	if st.cp != nil {
		st.cp.each(f)
	}
	for t := range st.bucket {
		f(st.bucket[t], 1+t)
		f(st.last[t], 1+len(st.bucket)+t)
	}
	for t := range st.cnt {
		f(st.cnt[t], 1+t)
		f(st.sr[t], 1+len(st.cnt)+t)
		f(st.srr[t], 1+2*len(st.cnt)+t)
	}
}

// each calls f on every vector of cs with index 0.
func (cs *compactStats) each(f func(dst []float64, i int)) {
	for t := range cs.rc {
		f(cs.rc[t], 0)
	}
	for t := range cs.lastS {
		f(cs.lastS[t], 0)
	}
	for t := range cs.emit {
		f(cs.emit[t], 0)
	}
}

// reset zeroes st.
func (st *stats) reset() {
	st.ll, st.zero = 0, 0
	st.each(func(d []float64, _ int) { clear(d) })
}

// add adds o into st; both come from the same kernel shape.
func (st *stats) add(o *stats) {
	st.ll += o.ll
	st.zero += o.zero
	addTo(st.init, o.init)
	for t := range st.bucket {
		addTo(st.bucket[t], o.bucket[t])
		addTo(st.last[t], o.last[t])
	}
	st.addGauss(o)
}

// addGauss adds o's Gaussian counts and reward sums into st.
func (st *stats) addGauss(o *stats) {
	for t := range st.cnt {
		addTo(st.cnt[t], o.cnt[t])
		addTo(st.sr[t], o.sr[t])
		addTo(st.srr[t], o.srr[t])
	}
}

// work is one goroutine's scratch space.
type work struct {
	alpha, scale, beta, bp, mstore []float64
	xi                             []float64 // S×S step posterior (compact form, Gaussian rewards)
}

func newWork(S, H int, gaussian bool) *work {
	w := &work{alpha: make([]float64, H*S), scale: make([]float64, H+1), beta: make([]float64, S), bp: make([]float64, S),
		xi: make([]float64, S*S)}
	if gaussian {
		w.mstore = make([]float64, H*S*S)
	}
	return w
}

func (k *kernel) table(h int) int {
	if k.nt == 1 {
		return 0
	}
	return h - 1
}

// firstForward sets a0 to the scaled forward vector of step 1,
// P(s_1 | o_1) = Init(s)·Obs1(o_1|s)/c_1, and returns c_1 = P(o_1) (0 when
// o_1 is impossible, a0 then unnormalised).
func (k *kernel) firstForward(a0 []float64, o1 int) float64 {
	z := k.m.firstLik(a0, o1)
	if z > 0 {
		normalize(a0, z)
	}
	return z
}

// forwardStep is one step of the scaled forward pass shared by estepCat
// and estepGauss: nxt = cur·M / z, with M the row-major S×S step matrix
// and z = Σ cur·M returned. ok is false, nxt then unnormalised, when z is
// not positive and finite (the episode is impossible under the model).
func forwardStep(cur, nxt, M []float64) (z float64, ok bool) {
	S := len(cur)
	if useStepKernels(S) {
		nc := S &^ 3
		matVecCols(&cur[0], &M[0], &nxt[0], S, nc)
		matVecTail(cur, M, nxt, nc)
	} else {
		clear(nxt)
		for s, as := range cur {
			row := M[s*S : (s+1)*S]
			row = row[:len(nxt)]
			for s2 := range nxt {
				nxt[s2] += as * row[s2]
			}
		}
	}
	z = sumOf(nxt)
	if !(z > 0) || math.IsInf(z, 0) {
		return z, false
	}
	normalize(nxt, z)
	return z, true
}

// sumLogs is Σ ln x: an episode's log-likelihood from its normalisers.
func sumLogs(xs []float64) float64 {
	ll := 0.0
	for _, x := range xs {
		ll += math.Log(x)
	}
	return ll
}

// addProducts adds a[s]·b[s] to dst[s]: the posterior of s_1 from the
// first forward and backward vectors.
func addProducts(dst, a, b []float64) {
	for s := range dst {
		dst[s] += a[s] * b[s]
	}
}

// markImpossible records an episode of probability 0 under the model: it
// is left out of the counts and makes the log-likelihood −∞.
func (st *stats) markImpossible() {
	st.zero++
	st.ll = math.Inf(-1)
}

// scaleInto sets dst[s] = src[s]·inv: the backward vector β̂_{h+1}
// divided by its step's normaliser.
func scaleInto(dst, src []float64, inv float64) {
	for s := range dst {
		dst[s] = src[s] * inv
	}
}

// estepCat runs scaled forward–backward on episodes [k0, k1) with
// categorical rewards and adds their statistics to st.
//
// Scaling: α̂_h is the forward vector normalised to sum 1 with
// normaliser c_h, so ln P = Σ_h ln c_h never underflows; β̂ is scaled by
// the same c's, so that Σ_s α̂_h(s)·β̂_h(s) = 1 at every h.
func (k *kernel) estepCat(c *coded, k0, k1 int, st *stats, w *work) {
	H := c.H
	for ep := k0; ep < k1; ep++ {
		base := ep * H
		e := catEpisode{k: k, w: w, obs: c.obs[base : base+H], act: c.act[base : base+H], rv: c.rv[base : base+H]}
		e.run(st)
	}
}

// catEpisode is the forward–backward pass of one episode with
// categorical rewards (estepCat), in the kernel k and scratch w.
type catEpisode struct {
	k        *kernel
	w        *work
	obs, act []uint16
	rv       []uint8
	// tH and lastIdx locate the last step's row sums in k.g (set by
	// forward).
	tH, lastIdx int
}

// run adds the episode's statistics to st, or marks it impossible.
func (e *catEpisode) run(st *stats) {
	S, H := e.k.S, len(e.obs)
	if !e.forward() {
		st.markImpossible()
		return
	}
	st.ll += sumLogs(e.w.scale[:H+1])
	e.backward(st)
	o1 := int(e.obs[0])
	addProducts(st.init[o1*S:(o1+1)*S], e.w.alpha[:S], e.w.beta)
}

// stepIndex is the index (a_i, o_{i+1}, r_i) of step i's S×S matrix in
// the kernel's M (and of its bucket in the stats).
func (e *catEpisode) stepIndex(i int) int {
	return (int(e.act[i])*e.k.O+int(e.obs[i+1]))*e.k.V + int(e.rv[i])
}

// forward runs the scaled forward pass into w.alpha and w.scale, the last
// normaliser c_{H+1} = Σ_s α̂_H(s)·g(s) included; it is false when the
// episode is impossible under the model.
func (e *catEpisode) forward() bool {
	k, alpha, scale := e.k, e.w.alpha, e.w.scale
	S, H := k.S, len(e.obs)
	SS := S * S
	z := k.firstForward(alpha[:S], int(e.obs[0]))
	ok := z > 0
	scale[0] = z
	for i := 0; ok && i < H-1; i++ {
		idx := e.stepIndex(i)
		M := k.M[k.table(i+1)][idx*SS : (idx+1)*SS]
		if z, ok = forwardStep(alpha[i*S:(i+1)*S], alpha[(i+1)*S:(i+2)*S], M); !ok {
			break
		}
		scale[i+1] = z
	}
	return ok && e.lastForward()
}

// lastForward locates the last step's row sums g in the kernel and sets
// scale[H] to c_{H+1} = Σ_s α̂_H(s)·g(s); it reports whether c_{H+1} is
// positive and finite.
func (e *catEpisode) lastForward() bool {
	k, S, H := e.k, e.k.S, len(e.obs)
	e.tH = k.table(H)
	e.lastIdx = (int(e.act[H-1])*k.V + int(e.rv[H-1])) * S
	gg := k.g[e.tH][e.lastIdx : e.lastIdx+S]
	aH := e.w.alpha[(H-1)*S : H*S]
	z := 0.0
	for s, x := range aH {
		z += x * gg[s]
	}
	e.w.scale[H] = z
	return z > 0 && !math.IsInf(z, 0) && !math.IsNaN(z)
}

// backward runs the scaled backward pass after forward, leaving β̂_1 in
// w.beta; it adds α̂_H/c_{H+1} to st.last and α̂_h(s)·β̂_{h+1}(s2)/c_{h+1}
// to st.bucket.
func (e *catEpisode) backward(st *stats) {
	k, alpha, scale, beta := e.k, e.w.alpha, e.w.scale, e.w.beta
	S, H := k.S, len(e.obs)
	SS := S * S
	inv := 1 / scale[H]
	gg := k.g[e.tH][e.lastIdx : e.lastIdx+S]
	last := st.last[e.tH][e.lastIdx : e.lastIdx+S]
	aH := alpha[(H-1)*S : H*S]
	for s := range beta {
		last[s] += aH[s] * inv
		beta[s] = gg[s] * inv
	}
	for i := H - 2; i >= 0; i-- {
		t := k.table(i + 1)
		idx := e.stepIndex(i)
		scaleInto(e.w.bp, beta, 1/scale[i+1])
		backwardStepCat(alpha[i*S:(i+1)*S], e.w.bp, beta, k.M[t][idx*SS:(idx+1)*SS], k.block(k.MT, t, idx, SS), st.bucket[t][idx*SS:(idx+1)*SS])
	}
}

// backwardStepCat is one step of the categorical backward pass: with
// bp = β̂_{h+1}/c_{h+1} and cur = α̂_h, it adds cur(s)·bp(s2) to the
// bucket B and sets beta = M·bp. MT, M transposed (nil when the kernel
// keeps none), lets the vector kernels compute M·bp a column of MT at a
// time, adding the same products in the same order.
func backwardStepCat(cur, bp, beta, M, MT, B []float64) {
	S := len(cur)
	if MT != nil && useStepKernels(S) {
		nc := S &^ 3
		addOuter(&B[0], &cur[0], &bp[0], S, nc)
		matVecCols(&bp[0], &MT[0], &beta[0], S, nc)
		outerTail(cur, bp, B, nc)
		matVecTail(bp, MT, beta, nc)
		return
	}
	for s, as := range cur {
		row := M[s*S : (s+1)*S]
		brow := B[s*S : (s+1)*S]
		row = row[:len(bp)]
		brow = brow[:len(bp)]
		sum := 0.0
		for s2, b := range bp {
			brow[s2] += as * b
			sum += row[s2] * b
		}
		beta[s] = sum
	}
}

// useStepKernels is whether the E-step's vector kernels (matVecCols,
// addOuter) serve S states: on amd64 with AVX2, for S ≥ 4.
func useStepKernels(S int) bool { return simd.AVX2 && S >= 4 }

// matVecTail sets y[j] = Σ_s x[s]·M[s·S+j] for the columns j ≥ nc that
// matVecCols leaves, in its order.
func matVecTail(x, M, y []float64, nc int) {
	S := len(x)
	for j := nc; j < S; j++ {
		v := 0.0
		for s, xs := range x {
			v += xs * M[s*S+j]
		}
		y[j] = v
	}
}

// outerTail adds x[s]·y[j] to B[s·S+j] for the columns j ≥ nc that
// addOuter leaves.
func outerTail(x, y, B []float64, nc int) {
	S := len(x)
	for s, xs := range x {
		for j := nc; j < S; j++ {
			B[s*S+j] += xs * y[j]
		}
	}
}

// estepGauss is estepCat for Gaussian rewards: the step matrices depend
// on the logged reward and are built per step.
func (k *kernel) estepGauss(c *coded, k0, k1 int, st *stats, w *work) {
	H := c.H
	for ep := k0; ep < k1; ep++ {
		base := ep * H
		e := gaussEpisode{k: k, w: w, obs: c.obs[base : base+H], act: c.act[base : base+H], rew: c.rew[base : base+H]}
		e.run(st)
	}
}

// gaussEpisode is the forward–backward pass of one episode with Gaussian
// rewards (estepGauss), in the kernel k and scratch w.
type gaussEpisode struct {
	k        *kernel
	w        *work
	obs, act []uint16
	rew      []float64
	// The last step's table, action and reward.
	tH, aL int
	rL     float64
}

// run adds the episode's statistics to st, or marks it impossible.
func (e *gaussEpisode) run(st *stats) {
	S, H := e.k.S, len(e.obs)
	e.tH, e.aL, e.rL = e.k.table(H), int(e.act[H-1]), e.rew[H-1]
	if !e.forward() {
		st.markImpossible()
		return
	}
	st.ll += sumLogs(e.w.scale[:H+1])
	e.backwardLast(st)
	for i := H - 2; i >= 0; i-- {
		e.backwardStep(i, st)
	}
	o1 := int(e.obs[0])
	addProducts(st.init[o1*S:(o1+1)*S], e.w.alpha[:S], e.w.beta)
}

// stepMatrix builds step i's matrix at table t in w.mstore,
// M[s*S+s2] = T·E·N(r_i; μ, σ²), and returns it.
func (e *gaussEpisode) stepMatrix(i, t int) []float64 {
	k := e.k
	S, O, A := k.S, k.O, k.A
	SS := S * S
	a, o, r := int(e.act[i]), int(e.obs[i+1]), e.rew[i]
	TE := k.TE[t][(a*O+o)*SS : (a*O+o+1)*SS]
	M := e.w.mstore[i*SS : (i+1)*SS]
	for s := 0; s < S; s++ {
		for s2 := 0; s2 < S; s2++ {
			ri := ((s*A+a)*S+s2)*O + o
			d := r - k.mu[t][ri]
			M[s*S+s2] = TE[s*S+s2] * math.Exp(k.ln[t][ri]-0.5*d*d*k.iv[t][ri])
		}
	}
	return M
}

// lastTerm(s, s2, o) = T·E·N(r_H) for the unlogged (s_{H+1}, o_{H+1}).
func (e *gaussEpisode) lastTerm(s, s2, o int) float64 {
	k, tH, aL := e.k, e.tH, e.aL
	S, O, A := k.S, k.O, k.A
	ri := ((s*A+aL)*S+s2)*O + o
	d := e.rL - k.mu[tH][ri]
	return k.TE[tH][((aL*O+o)*S+s)*S+s2] * math.Exp(k.ln[tH][ri]-0.5*d*d*k.iv[tH][ri])
}

// forward runs the scaled forward pass into w.alpha and w.scale (the step
// matrices into w.mstore) and then lastForward; it is false when the
// episode is impossible under the model.
func (e *gaussEpisode) forward() bool {
	k, alpha, scale := e.k, e.w.alpha, e.w.scale
	S, H := k.S, len(e.obs)
	z := k.firstForward(alpha[:S], int(e.obs[0]))
	ok := z > 0
	scale[0] = z
	for i := 0; ok && i < H-1; i++ {
		M := e.stepMatrix(i, k.table(i+1))
		if z, ok = forwardStep(alpha[i*S:(i+1)*S], alpha[(i+1)*S:(i+2)*S], M); !ok {
			break
		}
		scale[i+1] = z
	}
	return ok && e.lastForward()
}

// lastForward sets w.beta to the unscaled last-step sums
// g(s) = Σ_{s2,o} lastTerm(s, s2, o) and scale[H] to
// c_{H+1} = Σ_s α̂_H(s)·g(s); it reports whether c_{H+1} is positive and
// finite.
func (e *gaussEpisode) lastForward() bool {
	S, O, H := e.k.S, e.k.O, len(e.obs)
	aH := e.w.alpha[(H-1)*S : H*S]
	z := 0.0
	for s := 0; s < S; s++ {
		gs := 0.0
		for s2 := 0; s2 < S; s2++ {
			for o := 0; o < O; o++ {
				gs += e.lastTerm(s, s2, o)
			}
		}
		e.w.beta[s] = gs
		z += aH[s] * gs
	}
	e.w.scale[H] = z
	return z > 0 && !math.IsInf(z, 0)
}

// backwardLast scales the last-step sums in w.beta to β̂_H and adds the
// last step's posterior counts, Σ ξ·r and Σ ξ·r² to st.
func (e *gaussEpisode) backwardLast(st *stats) {
	S, O, A, H := e.k.S, e.k.O, e.k.A, len(e.obs)
	beta, rL := e.w.beta, e.rL
	inv := 1 / e.w.scale[H]
	aH := e.w.alpha[(H-1)*S : H*S]
	cnt, sr, srr := st.cnt[e.tH], st.sr[e.tH], st.srr[e.tH]
	for s := 0; s < S; s++ {
		beta[s] *= inv
		for s2 := 0; s2 < S; s2++ {
			for o := 0; o < O; o++ {
				x := aH[s] * inv * e.lastTerm(s, s2, o)
				ri := ((s*A+e.aL)*S+s2)*O + o
				cnt[ri] += x
				sr[ri] += x * rL
				srr[ri] += x * rL * rL
			}
		}
	}
}

// backwardStep is step i of the backward pass: it sets w.beta from
// β̂_{i+2} to β̂_{i+1} with the stored step matrix and adds the step's
// posterior counts, Σ ξ·r and Σ ξ·r² to st.
func (e *gaussEpisode) backwardStep(i int, st *stats) {
	k, beta, bp := e.k, e.w.beta, e.w.bp
	S, O, A := k.S, k.O, k.A
	SS := S * S
	t := k.table(i + 1)
	a, o, r := int(e.act[i]), int(e.obs[i+1]), e.rew[i]
	M := e.w.mstore[i*SS : (i+1)*SS]
	cnt, sr, srr := st.cnt[t], st.sr[t], st.srr[t]
	scaleInto(bp, beta, 1/e.w.scale[i+1])
	for s, as := range e.w.alpha[i*S : (i+1)*S] {
		sum := 0.0
		for s2, b := range bp {
			mb := M[s*S+s2] * b
			x := as * mb
			ri := ((s*A+a)*S+s2)*O + o
			cnt[ri] += x
			sr[ri] += x * r
			srr[ri] += x * r * r
			sum += mb
		}
		beta[s] = sum
	}
}

// estep runs the E-step over all episodes of c with the given number of
// workers. Blocks of blockEpisodes episodes are processed in windows of
// `workers` blocks; each block accumulates into its own stats and the
// blocks are added in block order.
func (k *kernel) estep(ctx context.Context, c *coded, workers int) (*stats, error) {
	nb := (c.K + blockEpisodes - 1) / blockEpisodes
	workers = windowWorkers(workers, nb)
	r := newEstepRun(k, c, nb, workers)
	if nb == 1 {
		r.run(0, 0)
		if r.slots[0] != r.total {
			r.merge(0)
		}
		return r.total, ctx.Err()
	}
	for b0 := 0; b0 < nb; b0 += workers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := r.window(ctx, b0, min(workers, nb-b0)); err != nil {
			return nil, err
		}
	}
	return r.total, nil
}

// windowWorkers is the number of blocks of a window: workers, at most
// the nb blocks and at least 1.
func windowWorkers(workers, nb int) int {
	if workers > nb {
		workers = nb
	}
	if workers < 1 {
		workers = 1
	}
	return workers
}

// estepRun is the state of one E-step: the total, and per worker slot a
// block's stats and scratch space.
type estepRun struct {
	k     *kernel
	c     *coded
	gauss bool
	total *stats
	slots []*stats
	works []*work
}

// newEstepRun allocates the total and the workers' slots for nb blocks;
// a single block of a non-Compact kernel accumulates into the total
// directly.
func newEstepRun(k *kernel, c *coded, nb, workers int) *estepRun {
	r := &estepRun{k: k, c: c, gauss: k.kind == RewardGaussian, total: newStats(k, c.H, true),
		slots: make([]*stats, workers), works: make([]*work, workers)}
	for j := range r.slots {
		if j == 0 && nb == 1 && k.cp == nil {
			r.slots[j] = r.total
		} else {
			r.slots[j] = newStats(k, c.H, false)
		}
		r.works[j] = newWork(k.S, c.H, r.gauss)
	}
	return r
}

// merge adds slot j's block statistics into the total.
func (r *estepRun) merge(j int) {
	if r.k.cp != nil {
		r.total.addCompact(r.k, r.c, r.slots[j])
	} else {
		r.total.add(r.slots[j])
	}
}

// run computes block b's statistics in slot j.
func (r *estepRun) run(j, b int) {
	k, c := r.k, r.c
	k0 := b * blockEpisodes
	k1 := min(k0+blockEpisodes, c.K)
	if k.cp != nil {
		k.estepCompact(c, k0, k1, r.slots[j], r.works[j])
	} else if r.gauss {
		k.estepGauss(c, k0, k1, r.slots[j], r.works[j])
	} else {
		k.estepCat(c, k0, k1, r.slots[j], r.works[j])
	}
}

// window runs the n blocks from b0 in parallel, one per slot, and adds
// them to the total in block order.
func (r *estepRun) window(ctx context.Context, b0, n int) error {
	for j := 0; j < n; j++ {
		r.slots[j].reset()
	}
	if err := parallel.For(ctx, n, n, func(j int) error {
		r.run(j, b0+j)
		return nil
	}); err != nil {
		return err
	}
	for j := 0; j < n; j++ {
		r.merge(j)
	}
	return nil
}

// normRow normalises counts+eps in place into a distribution; an all-zero
// row becomes uniform.
func normRow(p []float64, eps float64) {
	z := 0.0
	for i := range p {
		p[i] += eps
		z += p[i]
	}
	if z > 0 && !math.IsInf(z, 0) {
		scaleBy(p, 1/z)
		return
	}
	fillUniform(p)
}

// scaleBy multiplies every entry of p by inv.
func scaleBy(p []float64, inv float64) {
	for i := range p {
		p[i] *= inv
	}
}

// fillUniform sets p to the uniform distribution.
func fillUniform(p []float64) {
	u := 1 / float64(len(p))
	for i := range p {
		p[i] = u
	}
}

// normRows normalises each of the rows rows of width entries of p with
// normRow.
func normRows(p []float64, rows, width int, eps float64) {
	for r := 0; r < rows; r++ {
		normRow(p[r*width:(r+1)*width], eps)
	}
}

// shapeLike returns an empty model with the shape, vocabularies and
// metadata of m.
func shapeLike(m *Model) *Model {
	nm := &Model{States: m.States, NumObs: m.NumObs, NumActions: m.NumActions, Horizon: m.Horizon,
		Stationary: m.Stationary, Compact: m.Compact, ObsVocab: m.ObsVocab, ActVocab: m.ActVocab, Reward: m.Reward,
		RewardValues: m.RewardValues, ReturnMin: m.ReturnMin, ReturnMax: m.ReturnMax, TestLength: m.TestLength}
	return nm
}

// mstepCategorical is the M-step of step table t's categorical rewards;
// it adds the expected transition and emission counts into tc and ec.
func (k *kernel) mstepCategorical(t int, st *stats, eps float64, tc, ec []float64) []float64 {
	m, S, O, A, V := k.m, k.S, k.O, k.A, k.V
	n := S * A * S * O
	C := make([]float64, n*V)
	B, L, M := st.bucket[t], st.last[t], k.M[t]
	for a := 0; a < A; a++ {
		for o := 0; o < O; o++ {
			for v := 0; v < V; v++ {
				base := ((a*O+o)*V + v) * S * S
				for s := 0; s < S; s++ {
					l := L[(a*V+v)*S+s]
					for s2 := 0; s2 < S; s2++ {
						x := (B[base+s*S+s2] + l) * M[base+s*S+s2]
						C[m.RewardIndex(s, a, s2, o)*V+v] = x
						tc[(a*S+s)*S+s2] += x
						ec[(a*S+s2)*O+o] += x
					}
				}
			}
		}
	}
	normRows(C, n, V, eps)
	return C
}

// mstepGaussian is the M-step of step table t's Gaussian rewards (means
// and variances, the Dirichlet prior's pseudo-observations at the data's
// mean and variance); it adds the expected transition and emission
// counts into tc and ec.
func (k *kernel) mstepGaussian(t int, st *stats, c *coded, eps float64, tc, ec []float64) (mean, vr []float64) {
	m, S, O, A := k.m, k.S, k.O, k.A
	n := S * A * S * O
	cnt, sr, srr := st.cnt[t], st.sr[t], st.srr[t]
	mean, vr = make([]float64, n), make([]float64, n)
	floor := c.varFloor()
	gm, gv := c.rewMean, c.rewVar
	for s := 0; s < S; s++ {
		for a := 0; a < A; a++ {
			for s2 := 0; s2 < S; s2++ {
				for o := 0; o < O; o++ {
					ri := m.RewardIndex(s, a, s2, o)
					x := cnt[ri]
					tc[(a*S+s)*S+s2] += x
					ec[(a*S+s2)*O+o] += x
					mean[ri], vr[ri] = gaussCell(x, sr[ri], srr[ri], eps, gm, gv, floor)
				}
			}
		}
	}
	return mean, vr
}

// mstep maximises the expected complete-data log-likelihood plus the
// Dirichlet log-prior (pseudo-count eps per cell).
func (k *kernel) mstep(st *stats, c *coded, eps float64) *Model {
	nm := shapeLike(k.m)
	k.mstepFirst(st, eps, nm)
	if k.cp != nil {
		k.mstepCompact(st, c, eps, nm)
		nm.Prepare()
		return nm
	}
	for t := 0; t < k.nt; t++ {
		k.mstepTable(t, st, c, eps, nm)
	}
	nm.Prepare()
	return nm
}

// mstepFirst sets nm's initial-state distribution and first-observation
// emission from the posteriors of s_1 in st.init.
func (k *kernel) mstepFirst(st *stats, eps float64, nm *Model) {
	S, O := k.S, k.O
	nm.Init = make([]float64, S)
	nm.Obs1 = make([]float64, S*O)
	for o := 0; o < O; o++ {
		for s := 0; s < S; s++ {
			x := st.init[o*S+s]
			nm.Init[s] += x
			nm.Obs1[s*O+o] = x
		}
	}
	normRow(nm.Init, eps)
	normRows(nm.Obs1, S, O, eps)
}

// mstepTable appends step table t's rewards, transitions and emissions
// to nm.
func (k *kernel) mstepTable(t int, st *stats, c *coded, eps float64, nm *Model) {
	S, O, A := k.S, k.O, k.A
	tc := make([]float64, A*S*S)
	ec := make([]float64, A*S*O)
	if k.kind == RewardCategorical {
		nm.RewardProb = append(nm.RewardProb, k.mstepCategorical(t, st, eps, tc, ec))
	} else {
		mean, vr := k.mstepGaussian(t, st, c, eps, tc, ec)
		nm.RewardMean = append(nm.RewardMean, mean)
		nm.RewardVar = append(nm.RewardVar, vr)
	}
	normRows(tc, A*S, S, eps)
	normRows(ec, A*S, O, eps)
	nm.Trans = append(nm.Trans, tc)
	nm.Emit = append(nm.Emit, ec)
}
