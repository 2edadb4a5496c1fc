package estimate

import (
	"math"
	"slices"
)

// EM for the Compact form (Model.Compact): emission E(o|s2) shared by all
// actions, reward given (s, a, s2). The step matrix factorises as
//
//	M_h(o, a, r)[s, s2] = T(s2|s,a)·R(r|s,a,s2) · E(o|s2),
//
// so the kernel keeps only the (a, r)-part (A·V·S² numbers, categorical
// rewards) and applies the emission as a diagonal per step. The expected
// counts of the emission are the posteriors γ_h(s) of the logged steps:
// each block keeps them per step (blockEpisodes·H·S numbers) and they are
// scattered into the dense S×|O| table when the blocks are added, in block
// order. An E-step therefore costs O(K·H·S²) and the M-step O(S·|O| +
// A·S²·V): nothing grows like |O|·|A| or |O|².

// compactKernel is the per-iteration product of the Compact parameters.
type compactKernel struct {
	// Categorical: TR[t][((a*V+v)*S+s)*S+s2] = T(s2|s,a)·R(v|s,a,s2) and
	// g[t][(a*V+v)*S+s] = Σ_s2 TR (the last step, s2 and o unlogged).
	TR, g [][]float64
	// Gaussian: mean, inverse variance and log normaliser per
	// RewardIndex.
	mu, iv, ln [][]float64
}

// compactStats are the Compact parts of stats.
type compactStats struct {
	// rc[t][((a*V+v)*S+s)*S+s2]: categorical posterior counts of the
	// step (s, a, s2) with reward value v (the transition counts are their
	// sums over v). Gaussian rewards use stats.cnt/sr/srr, indexed
	// (a*S+s)*S+s2. Both are laid out like the step matrices, so a step
	// adds to one contiguous S×S block.
	rc [][]float64
	// lastS[t][s2]: posterior mass of the unlogged s_{H+1}, whose
	// emission counts are expected counts under the current E.
	lastS [][]float64
	// Per block: gam[((ep−k0)*H+i)*S+s] = P(s_{i+1} = s | episode).
	gam    []float64
	k0, k1 int
	// In the total only: dense emission counts emit[t][s2*O+o] (o_1's
	// counts go to stats.init).
	emit [][]float64
}

// newCompactKernel sets k.cp, the Compact form's step products.
func newCompactKernel(k *kernel) {
	k.cp = &compactKernel{}
	for t := 0; t < k.nt; t++ {
		if k.kind == RewardCategorical {
			k.addCatTableCompact(t)
		} else {
			k.addGaussTableCompact(t)
		}
	}
}

// addCatTableCompact appends step table t's products T·R and their
// last-step row sums g to k.cp.
func (k *kernel) addCatTableCompact(t int) {
	m := k.m
	S, A, V := k.S, k.A, k.V
	T, R := m.Trans[t], m.RewardProb[t]
	TR := make([]float64, A*V*S*S)
	g := make([]float64, A*V*S)
	for a := 0; a < A; a++ {
		for v := 0; v < V; v++ {
			for s := 0; s < S; s++ {
				for s2 := 0; s2 < S; s2++ {
					x := T[(a*S+s)*S+s2] * R[m.RewardIndex(s, a, s2, 0)*V+v]
					TR[((a*V+v)*S+s)*S+s2] = x
					g[(a*V+v)*S+s] += x
				}
			}
		}
	}
	k.cp.TR = append(k.cp.TR, TR)
	k.cp.g = append(k.cp.g, g)
}

// addGaussTableCompact appends step table t's Gaussian reward means,
// inverse variances and log normalisers to k.cp.
func (k *kernel) addGaussTableCompact(t int) {
	mu, iv, ln := gaussTerms(k.m, t)
	k.cp.mu = append(k.cp.mu, mu)
	k.cp.iv = append(k.cp.iv, iv)
	k.cp.ln = append(k.cp.ln, ln)
}

// newCompactStats sets the Compact parts of st; dense says whether st
// is a total (dense emission counts) or a block (per-step posteriors).
func newCompactStats(k *kernel, st *stats, H int, dense bool) {
	S, O := k.S, k.O
	cs := &compactStats{}
	for t := 0; t < k.nt; t++ {
		cs.appendTable(k, st, dense)
	}
	if dense {
		st.init = make([]float64, O*S)
	} else {
		cs.gam = make([]float64, blockEpisodes*H*S)
	}
	st.cp = cs
}

// appendTable appends the Compact form's zero statistics of one step
// table: the reward sums (Gaussian ones into st), the last-step state
// sums and, when dense, the emission sums.
func (cs *compactStats) appendTable(k *kernel, st *stats, dense bool) {
	S, A, V, O := k.S, k.A, k.V, k.O
	n := S * A * S
	if k.kind == RewardCategorical {
		cs.rc = append(cs.rc, make([]float64, n*V))
	} else {
		st.appendGaussTable(n)
	}
	cs.lastS = append(cs.lastS, make([]float64, S))
	if dense {
		cs.emit = append(cs.emit, make([]float64, S*O))
	}
}

// stepMatrix writes into M the (a, r)-part of step i of an episode,
// M[s*S+s2] = T(s2|s,a)·R(r|s,a,s2), for table t, and returns it
// (categorical: a slice of the kernel, nothing written).
func (k *kernel) stepMatrix(t, a int, r float64, v uint8, M []float64) []float64 {
	S := k.S
	if k.kind == RewardCategorical {
		idx := (a*k.V + int(v)) * S * S
		return k.cp.TR[t][idx : idx+S*S]
	}
	T := k.m.Trans[t][a*S*S : (a+1)*S*S]
	mu, iv, ln := k.cp.mu[t], k.cp.iv[t], k.cp.ln[t]
	for s := 0; s < S; s++ {
		for s2 := 0; s2 < S; s2++ {
			ri := (s*k.A+a)*S + s2
			d := r - mu[ri]
			M[s*S+s2] = T[s*S+s2] * math.Exp(ln[ri]-0.5*d*d*iv[ri])
		}
	}
	return M[:S*S]
}

// block returns the S×S block of counts that the posterior of a step
// (a, reward r with value index v) at table t adds to: the categorical
// counts themselves, or for Gaussian rewards the scratch xi, to be
// flushed into cnt/sr/srr by flush.
func (st *stats) block(k *kernel, t, a int, v uint8, xi []float64) []float64 {
	SS := k.S * k.S
	if k.kind == RewardCategorical {
		i := (a*k.V + int(v)) * SS
		return st.cp.rc[t][i : i+SS]
	}
	clear(xi)
	return xi
}

// flush adds the Gaussian step posterior xi with reward r to the counts.
func (st *stats) flush(k *kernel, t, a int, r float64, xi []float64) {
	if k.kind == RewardCategorical {
		return
	}
	SS := k.S * k.S
	cnt, sr, srr := st.cnt[t][a*SS:(a+1)*SS], st.sr[t][a*SS:(a+1)*SS], st.srr[t][a*SS:(a+1)*SS]
	for i, x := range xi[:SS] {
		cnt[i] += x
		sr[i] += x * r
		srr[i] += x * r * r
	}
}

// estepCompact runs scaled forward–backward on episodes [k0, k1) of the
// Compact form (scaling as in estepCat) and adds their statistics to st.
func (k *kernel) estepCompact(c *coded, k0, k1 int, st *stats, w *work) {
	S, H := k.S, c.H
	cs := st.cp
	cs.k0, cs.k1 = k0, k1
	clear(cs.gam[:(k1-k0)*H*S])
	for ep := k0; ep < k1; ep++ {
		base := ep * H
		ll, ok := k.forwardCompact(c, base, w)
		if !ok {
			st.markImpossible()
			continue
		}
		st.ll += ll
		k.backwardCompact(c, base, st, w, cs.gam[(ep-k0)*H*S:(ep-k0+1)*H*S])
	}
}

// forwardCompact fills w.alpha (normalised forward vectors), w.scale and
// w.mstore (the step matrices) for the episode at base, and returns its
// log-likelihood; ok is false for an impossible episode.
func (k *kernel) forwardCompact(c *coded, base int, w *work) (float64, bool) {
	S, H := k.S, c.H
	SS := S * S
	obs, act := c.obs[base:base+H], c.act[base:base+H]
	alpha, scale := w.alpha, w.scale
	z := k.firstForward(alpha[:S], int(obs[0]))
	if !(z > 0) {
		return 0, false
	}
	scale[0] = z
	for i := 0; i < H; i++ {
		t := k.table(i + 1)
		M := k.stepMatrix(t, int(act[i]), k.reward(c, base+i), k.rvAt(c, base+i), w.mat(i, SS))
		cur := alpha[i*S : (i+1)*S]
		if i == H-1 {
			// The last reward: s_{H+1} and o_{H+1} unlogged, Σ_o E = 1.
			z = stepMass(cur, M)
		} else {
			z = k.forwardStepCompact(cur, alpha[(i+1)*S:(i+2)*S], M, t, int(obs[i+1]))
		}
		if !(z > 0) || math.IsInf(z, 0) {
			return 0, false
		}
		scale[i+1] = z
	}
	return sumLogs(scale[:H+1]), true
}

// stepMass is Σ_s cur(s)·Σ_s2 M[s,s2], summed row by row in that order.
func stepMass(cur, M []float64) float64 {
	S := len(cur)
	z := 0.0
	for s, as := range cur {
		row := M[s*S : (s+1)*S]
		for _, x := range row {
			z += as * x
		}
	}
	return z
}

// forwardStepCompact sets nxt = (cur·M)∘E(o|·) / z for the step matrix M
// of table t and the next observation o, and returns z (nxt is left
// unnormalised when z is not positive and finite).
func (k *kernel) forwardStepCompact(cur, nxt, M []float64, t, o int) float64 {
	S, O := k.S, k.O
	E := k.m.Emit[t]
	clear(nxt)
	for s, as := range cur {
		row := M[s*S : (s+1)*S]
		for s2 := range nxt {
			nxt[s2] += as * row[s2]
		}
	}
	z := 0.0
	for s2 := range nxt {
		nxt[s2] *= E[s2*O+o]
		z += nxt[s2]
	}
	if z > 0 && !math.IsInf(z, 0) {
		normalize(nxt, z)
	}
	return z
}

// backwardCompact runs the scaled backward pass of the episode at base
// after forwardCompact, adds the step counts to st and writes the
// posteriors of s_1..s_H into gam (H×S).
func (k *kernel) backwardCompact(c *coded, base int, st *stats, w *work, gam []float64) {
	S, H := k.S, c.H
	k.backwardLastCompact(c, base, st, w, gam)
	for i := H - 2; i >= 0; i-- {
		k.backwardStepCompact(c, base, i, st, w)
		cur := w.alpha[i*S : (i+1)*S]
		for s := range w.beta {
			gam[i*S+s] = cur[s] * w.beta[s]
		}
	}
}

// backwardLastCompact is the last step of backwardCompact:
// β̂_H(s) = Σ_s2 M_H[s,s2] / c_{H+1}. It adds the step's counts and the
// posterior of the unlogged s_{H+1} to st and writes the posterior of s_H
// into gam.
func (k *kernel) backwardLastCompact(c *coded, base int, st *stats, w *work, gam []float64) {
	S, H := k.S, c.H
	alpha, scale, beta := w.alpha, w.scale, w.beta
	tH := k.table(H)
	aL := int(c.act[base+H-1])
	M := k.storedStepMatrix(c, base, H-1, tH, aL, w)
	inv := 1 / scale[H]
	aH := alpha[(H-1)*S : H*S]
	rL, vL := k.reward(c, base+H-1), k.rvAt(c, base+H-1)
	lastS := st.cp.lastS[tH]
	B := st.block(k, tH, aL, vL, w.xi)
	for s := 0; s < S; s++ {
		sum := 0.0
		brow := B[s*S : (s+1)*S]
		for s2, x := range M[s*S : (s+1)*S] {
			p := aH[s] * x * inv
			brow[s2] += p
			lastS[s2] += p
			sum += x
		}
		beta[s] = sum * inv
	}
	st.flush(k, tH, aL, rL, w.xi)
	for s := range beta {
		gam[(H-1)*S+s] = aH[s] * beta[s]
	}
}

// backwardStepCompact is step i of backwardCompact: it sets w.beta from
// β̂_{i+2} to β̂_{i+1} and adds the step's counts to st.
func (k *kernel) backwardStepCompact(c *coded, base, i int, st *stats, w *work) {
	S, O := k.S, k.O
	alpha, beta, bp := w.alpha, w.beta, w.bp
	t := k.table(i + 1)
	a, o := int(c.act[base+i]), int(c.obs[base+i+1])
	M := k.storedStepMatrix(c, base, i, t, a, w)
	E := k.m.Emit[t]
	r, v := k.reward(c, base+i), k.rvAt(c, base+i)
	inv := 1 / w.scale[i+1]
	for s2 := range bp {
		bp[s2] = beta[s2] * E[s2*O+o] * inv
	}
	B := st.block(k, t, a, v, w.xi)
	backwardStepPosterior(alpha[i*S:(i+1)*S], bp, beta, M, B)
	st.flush(k, t, a, r, w.xi)
}

// backwardStepPosterior is the core of a Compact backward step: with
// bp = β̂_{h+1}∘E/c_{h+1} and cur = α̂_h it adds the step posterior
// cur(s)·M[s,s2]·bp(s2) to B and sets beta = M·bp.
func backwardStepPosterior(cur, bp, beta, M, B []float64) {
	S := len(cur)
	for s, as := range cur {
		row := M[s*S : (s+1)*S]
		brow := B[s*S : (s+1)*S]
		row, brow = row[:len(bp)], brow[:len(bp)]
		sum := 0.0
		for s2, b := range bp {
			mb := row[s2] * b
			brow[s2] += as * mb
			sum += mb
		}
		beta[s] = sum
	}
}

// storedStepMatrix is the (a, r)-part of step i (table t, action a) of
// the episode at base after forwardCompact: the kernel's for categorical
// rewards, the one stored in w for Gaussian rewards.
func (k *kernel) storedStepMatrix(c *coded, base, i, t, a int, w *work) []float64 {
	M := w.mat(i, k.S*k.S)
	if k.kind == RewardCategorical {
		M = k.stepMatrix(t, a, 0, k.rvAt(c, base+i), nil)
	}
	return M
}

func (k *kernel) reward(c *coded, i int) float64 {
	if k.kind == RewardCategorical {
		return 0
	}
	return c.rew[i]
}

func (k *kernel) rvAt(c *coded, i int) uint8 {
	if k.kind == RewardCategorical {
		return c.rv[i]
	}
	return 0
}

// addCompact adds block o's Compact counts into the total st, scattering
// its per-step posteriors into the dense emission counts.
func (st *stats) addCompact(k *kernel, c *coded, o *stats) {
	st.ll += o.ll
	st.zero += o.zero
	st.addGauss(o)
	for t := range st.cp.rc {
		addTo(st.cp.rc[t], o.cp.rc[t])
	}
	for t := range st.cp.lastS {
		addTo(st.cp.lastS[t], o.cp.lastS[t])
	}
	st.scatterPosteriors(k, c, o)
}

// scatterPosteriors adds block o's per-step posteriors, episode by
// episode, into the total's initial and dense emission counts.
func (st *stats) scatterPosteriors(k *kernel, c *coded, o *stats) {
	S, O, H := k.S, k.O, c.H
	for ep := o.cp.k0; ep < o.cp.k1; ep++ {
		g := o.cp.gam[(ep-o.cp.k0)*H*S : (ep-o.cp.k0+1)*H*S]
		o1 := int(c.obs[ep*H])
		addTo(st.init[o1*S:(o1+1)*S], g[:S])
		for i := 1; i < H; i++ {
			e := st.cp.emit[k.table(i)]
			o := int(c.obs[ep*H+i])
			for s, x := range g[i*S : (i+1)*S] {
				e[s*O+o] += x
			}
		}
	}
}

func addTo(d, s []float64) {
	s = s[:len(d)]
	for i := range d {
		d[i] += s[i]
	}
}

// mstepCompact is mstep for the Compact form.
func (k *kernel) mstepCompact(st *stats, c *coded, eps float64, nm *Model) {
	S, O, A := k.S, k.O, k.A
	for t := 0; t < k.nt; t++ {
		tc := make([]float64, A*S*S)
		ec := k.emitCountsCompact(st, t)
		if k.kind == RewardCategorical {
			nm.RewardProb = append(nm.RewardProb, k.catRewardsCompact(st, t, eps, tc))
		} else {
			mean, vr := k.gaussRewardsCompact(st, t, c, eps, tc)
			nm.RewardMean = append(nm.RewardMean, mean)
			nm.RewardVar = append(nm.RewardVar, vr)
		}
		normRows(tc, A*S, S, eps)
		normRows(ec, S, O, eps)
		nm.Trans = append(nm.Trans, tc)
		nm.Emit = append(nm.Emit, ec)
	}
}

// emitCountsCompact is table t's expected emission counts: the logged
// steps' and, under the current emission, the unlogged o_{H+1}'s.
func (k *kernel) emitCountsCompact(st *stats, t int) []float64 {
	O := k.O
	ec := slices.Clone(st.cp.emit[t])
	Eold := k.m.Emit[t]
	// Expected emission counts of the unlogged o_{H+1}.
	for s2, x := range st.cp.lastS[t] {
		for o := 0; o < O; o++ {
			ec[s2*O+o] += x * Eold[s2*O+o]
		}
	}
	return ec
}

// rewardIndexCompact maps the step layout (a*S+s)*S+s2 to RewardIndex
// (s*A+a)*S+s2.
func (k *kernel) rewardIndexCompact(a, s, s2 int) int { return (s*k.A+a)*k.S + s2 }

// catRewardsCompact is table t's categorical reward M-step; it adds the
// transition counts into tc.
func (k *kernel) catRewardsCompact(st *stats, t int, eps float64, tc []float64) []float64 {
	S, A, V := k.S, k.A, k.V
	n := S * A * S
	C := make([]float64, n*V)
	R := st.cp.rc[t]
	for a := 0; a < A; a++ {
		for v := 0; v < V; v++ {
			for s := 0; s < S; s++ {
				for s2 := 0; s2 < S; s2++ {
					x := R[((a*V+v)*S+s)*S+s2]
					C[k.rewardIndexCompact(a, s, s2)*V+v] = x
					tc[(a*S+s)*S+s2] += x
				}
			}
		}
	}
	normRows(C, n, V, eps)
	return C
}

// gaussRewardsCompact is table t's Gaussian reward M-step (means and
// variances); it sets the transition counts tc.
func (k *kernel) gaussRewardsCompact(st *stats, t int, c *coded, eps float64, tc []float64) (mean, vr []float64) {
	S, A := k.S, k.A
	n := S * A * S
	cnt, sr, srr := make([]float64, n), make([]float64, n), make([]float64, n)
	for a := 0; a < A; a++ {
		for s := 0; s < S; s++ {
			for s2 := 0; s2 < S; s2++ {
				j := (a*S+s)*S + s2
				ri := k.rewardIndexCompact(a, s, s2)
				cnt[ri], sr[ri], srr[ri] = st.cnt[t][j], st.sr[t][j], st.srr[t][j]
				tc[j] = st.cnt[t][j]
			}
		}
	}
	return gaussianMStep(cnt, sr, srr, c, eps)
}

// gaussianMStep returns the reward means and variances of the M-step from
// posterior counts, Σ ξ·r and Σ ξ·r² per cell, with eps pseudo-observations
// of the data's mean and variance and the variance floor.
func gaussianMStep(cnt, sr, srr []float64, c *coded, eps float64) (mean, vr []float64) {
	n := len(cnt)
	mean, vr = make([]float64, n), make([]float64, n)
	floor := c.varFloor()
	gm, gv := c.rewMean, c.rewVar
	for i, x := range cnt {
		mean[i], vr[i] = gaussCell(x, sr[i], srr[i], eps, gm, gv, floor)
	}
	return mean, vr
}

// gaussCell is the M-step's mean and variance of one reward cell from its
// posterior count x, Σ ξ·r = sr and Σ ξ·r² = srr, with eps
// pseudo-observations of the data's mean gm and variance gv; the variance
// is at least floor.
func gaussCell(x, sr, srr, eps, gm, gv, floor float64) (mu, v float64) {
	w := x + eps
	if w > 0 {
		mu = (sr + eps*gm) / w
		v = (srr+eps*(gm*gm+gv))/w - mu*mu
	} else {
		mu, v = gm, gv
	}
	if !(v >= floor) {
		v = floor
	}
	return mu, v
}

// mat is the stored step matrix i (n numbers each) of a Gaussian E-step,
// nil for categorical rewards.
func (w *work) mat(i, n int) []float64 {
	if w.mstore == nil {
		return nil
	}
	return w.mstore[i*n : (i+1)*n]
}
