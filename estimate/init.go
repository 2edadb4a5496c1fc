package estimate

import (
	"math"
	"math/rand/v2"
)

// Starting points of EM.
//
// The informed start clusters the steps of (a sample of) the episodes by a
// signature of the surrounding data — one-hot codes of o_{h−1}, o_h,
// o_{h+1}, o_{h+2} and of the rewards r_{h−1}, r_h, with weights falling
// with distance — using k-means++ and Lloyd iterations, reads each
// cluster as the latent state s_h, and estimates the parameters from the
// counts of these hard assignments (smoothed with one pseudo-count per
// cell). It is the classical "cluster then count" moment start: states
// that emit different observations or rewards, or lead to different next
// observations, land in different clusters, so EM starts near the
// right basin on tiger-like problems where random starts often collapse
// the hidden state.
//
// A signature has at most six non-zero entries whatever |O| is, so it is
// kept sparse (sigNonZero index–value pairs per step) and only the S
// centroids are dense: the start costs O(n·S·6 + S·D) per Lloyd iteration
// and O(n + S·D) memory for n sampled steps and D = 4|O| + 2|V| signature
// dimensions, never n·D.

// initSampleEpisodes bounds the episodes used by the informed start, so
// that it costs a small fraction of one EM iteration on large logs.
const initSampleEpisodes = 4000

// signature weights of o_{h−1}, o_h, o_{h+1}, o_{h+2}, r_{h−1}, r_h.
var sigWeights = [6]float64{0.5, 1, 0.7, 0.4, 0.5, 1}

// sigNonZero is the most non-zero entries of a signature: four
// observations and two rewards.
const sigNonZero = 6

func (c *coded) sigDim() int {
	if c.kind == RewardCategorical {
		return 4*c.O + 2*len(c.values)
	}
	return 4*c.O + 2
}

// signature writes the non-zero entries of the signature of step i of
// episode k into idx and val (length sigNonZero; unused slots get value
// 0, which adds nothing to any product).
func (c *coded) signature(k, i int, idx []int32, val []float64) {
	clear(idx)
	clear(val)
	w := &sigWriter{idx: idx, val: val}
	c.obsSignature(w, k, i)
	c.rewardSignature(w, k, i)
}

// sigWriter writes a sparse signature's entries in order.
type sigWriter struct {
	idx []int32
	val []float64
	n   int
}

// put writes the next entry: value v at coordinate j.
func (w *sigWriter) put(j int, v float64) {
	w.idx[w.n], w.val[w.n] = int32(j), v
	w.n++
}

// obsSignature writes the weighted observations of steps i-1 to i+2 of
// episode k (those inside the episode).
func (c *coded) obsSignature(w *sigWriter, k, i int) {
	H, O := c.H, c.O
	for j, off := range [4]int{-1, 0, 1, 2} {
		if i+off >= 0 && i+off < H {
			w.put(j*O+int(c.obs[k*H+i+off]), sigWeights[j])
		}
	}
}

// rewardSignature writes the weighted rewards of steps i-1 and i of
// episode k: their categories, or their standardised values when
// Gaussian (none when all rewards agree).
func (c *coded) rewardSignature(w *sigWriter, k, i int) {
	H, O := c.H, c.O
	sd := math.Sqrt(c.rewVar)
	for j, off := range [2]int{-1, 0} {
		if i+off < 0 {
			continue
		}
		wt := sigWeights[4+j]
		if c.kind == RewardCategorical {
			w.put(4*O+j*len(c.values)+int(c.rv[k*H+i+off]), wt)
		} else if sd > 0 {
			w.put(4*O+j, wt*(c.rew[k*H+i+off]-c.rewMean)/sd)
		}
	}
}

// sparseRows are n signatures of sigNonZero entries each.
type sparseRows struct {
	idx []int32
	val []float64
	sq  []float64 // squared norm of each row
}

func (r *sparseRows) row(p int) ([]int32, []float64) {
	return r.idx[p*sigNonZero : (p+1)*sigNonZero], r.val[p*sigNonZero : (p+1)*sigNonZero]
}

// sqDist is ‖x_p − c‖² = ‖x_p‖² − 2·x_p·c + ‖c‖² (cc = ‖c‖²), clamped at
// 0 against rounding.
func (r *sparseRows) sqDist(p int, c []float64, cc float64) float64 {
	idx, val := r.row(p)
	dot := 0.0
	for j, i := range idx {
		dot += val[j] * c[i]
	}
	return max(0, r.sq[p]-2*dot+cc)
}

// setRow writes row p densely into c (cleared first) and returns ‖c‖².
func (r *sparseRows) setRow(p int, c []float64) float64 {
	clear(c)
	idx, val := r.row(p)
	for j, i := range idx {
		c[i] += val[j]
	}
	return r.sq[p]
}

func sqNorm(c []float64) float64 {
	s := 0.0
	for _, x := range c {
		s += x * x
	}
	return s
}

// sampleEpisodes picks the episodes of the informed start.
func sampleEpisodes(c *coded, rng *rand.Rand) []int {
	eps := make([]int, 0, initSampleEpisodes)
	if c.K <= initSampleEpisodes {
		for k := 0; k < c.K; k++ {
			eps = append(eps, k)
		}
		return eps
	}
	return append(eps, rng.Perm(c.K)[:initSampleEpisodes]...)
}

// signatures builds the sparse signatures of every step of eps.
func signatures(c *coded, eps []int) *sparseRows {
	H := c.H
	n := len(eps) * H
	r := &sparseRows{idx: make([]int32, n*sigNonZero), val: make([]float64, n*sigNonZero), sq: make([]float64, n)}
	for e, k := range eps {
		for i := 0; i < H; i++ {
			p := e*H + i
			idx, val := r.row(p)
			c.signature(k, i, idx, val)
			r.sq[p] = sqNorm(val)
		}
	}
	return r
}

// kmeansPP seeds S dense centroids (S×D) by k-means++ and returns them
// with their squared norms.
func kmeansPP(X *sparseRows, n, S, D int, rng *rand.Rand) (cent, cc []float64) {
	cent, cc = make([]float64, S*D), make([]float64, S)
	cc[0] = X.setRow(rng.IntN(n), cent[:D])
	dist := make([]float64, n)
	for p := range dist {
		dist[p] = X.sqDist(p, cent[:D], cc[0])
	}
	for j := 1; j < S; j++ {
		p := drawSeed(rng, dist)
		cj := cent[j*D : (j+1)*D]
		cc[j] = X.setRow(p, cj)
		for q := range dist {
			dist[q] = min(dist[q], X.sqDist(q, cj, cc[j]))
		}
	}
	return cent, cc
}

// drawSeed draws k-means++'s next seed: a point with probability
// proportional to its squared distance dist to the nearest seed. It
// draws a uniform point first, which it keeps when every distance is 0.
func drawSeed(rng *rand.Rand, dist []float64) int {
	tot := sumOf(dist)
	p := rng.IntN(len(dist))
	if tot > 0 {
		p = pickAt(dist, rng.Float64()*tot, p)
	}
	return p
}

// pickAt is the first index q at which u minus the running sum of dist
// falls below 0, or p when it never does.
func pickAt(dist []float64, u float64, p int) int {
	for q, d := range dist {
		u -= d
		if u < 0 {
			return q
		}
	}
	return p
}

// informedStart builds the clustering start with S states.
func informedStart(c *coded, proto *Model, S int, seed uint64) *Model {
	rng := rand.New(rand.NewPCG(seed, 0x1a17))
	eps := sampleEpisodes(c, rng)
	D := c.sigDim()
	n := len(eps) * c.H
	X := signatures(c, eps)
	cent, cc := kmeansPP(X, n, S, D, rng)
	l := &lloyd{X: X, n: n, S: S, D: D, cent: cent, cc: cc, assign: make([]int, n), cnt: make([]float64, S), rng: rng}
	l.run()
	return fromAssignments(c, proto, S, eps, l.assign)
}

// run iterates Lloyd's algorithm, at most 30 times, until no point
// changes its centroid.
func (l *lloyd) run() {
	for iter := 0; iter < 30; iter++ {
		if !l.assignAll(iter == 0) {
			break
		}
		l.updateCentroids()
	}
}

// lloyd is the state of the Lloyd iterations of the informed start: the
// n signatures X, the S dense centroids cent (S×D) with their squared
// norms cc, the points' clusters assign and the clusters' sizes cnt.
type lloyd struct {
	X        *sparseRows
	n, S, D  int
	cent, cc []float64
	assign   []int
	cnt      []float64
	rng      *rand.Rand
}

// assignAll assigns every point to its nearest centroid (the first of
// equally near ones) and says whether an assignment changed (always on
// the first iteration).
func (l *lloyd) assignAll(first bool) bool {
	changed := false
	for p := 0; p < l.n; p++ {
		best, bd := 0, math.Inf(1)
		for j := 0; j < l.S; j++ {
			if d := l.X.sqDist(p, l.cent[j*l.D:(j+1)*l.D], l.cc[j]); d < bd {
				best, bd = j, d
			}
		}
		if l.assign[p] != best || first {
			changed = true
		}
		l.assign[p] = best
	}
	return changed
}

// updateCentroids sets every centroid to the mean of its points.
func (l *lloyd) updateCentroids() {
	D := l.D
	l.sumPoints()
	for j := 0; j < l.S; j++ {
		cj := l.cent[j*D : (j+1)*D]
		if l.cnt[j] == 0 {
			// An empty cluster takes a random point.
			l.cc[j] = l.X.setRow(l.rng.IntN(l.n), cj)
			continue
		}
		for i := range cj {
			cj[i] /= l.cnt[j]
		}
		l.cc[j] = sqNorm(cj)
	}
}

// sumPoints sets every centroid to the sum of its points and cnt to
// their numbers.
func (l *lloyd) sumPoints() {
	D := l.D
	clear(l.cent)
	clear(l.cnt)
	for p := 0; p < l.n; p++ {
		j := l.assign[p]
		l.cnt[j]++
		cj := l.cent[j*D : (j+1)*D]
		idx, val := l.X.row(p)
		for i, x := range val {
			cj[idx[i]] += x
		}
	}
}

// fromAssignments estimates a model from hard state paths: assign[e*H+i]
// is s_{i+1} of episode eps[e]. The unlogged s_{H+1} is taken equal to
// s_H, and the last step contributes only its transition.
func fromAssignments(c *coded, proto *Model, S int, eps []int, assign []int) *Model {
	const pseudo = 1 // one pseudo-count per cell keeps the start soft
	H := c.H
	m := shapeLike(proto)
	m.States = S
	nt := len(proto.Trans)
	allocParams(m, nt)
	ac := newAssignCounts(c, m, nt)
	for e, k := range eps {
		ac.addEpisode(k, assign[e*H:(e+1)*H])
	}
	normCounts(m, c, pseudo, ac.gc, ac.gs, ac.gss)
	m.Prepare()
	return m
}

// assignCounts accumulates fromAssignments' counts into the model m (nt
// step tables), and the Gaussian rewards' count, sum and sum of squares
// per cell into gc, gs and gss.
type assignCounts struct {
	c           *coded
	m           *Model
	nt          int
	gc, gs, gss [][]float64
}

// newAssignCounts returns zero counts into m, of nt step tables.
func newAssignCounts(c *coded, m *Model, nt int) *assignCounts {
	ac := &assignCounts{c: c, m: m, nt: nt}
	if c.kind == RewardGaussian {
		n := m.RewardCells()
		for t := 0; t < nt; t++ {
			ac.gc = append(ac.gc, make([]float64, n))
			ac.gs = append(ac.gs, make([]float64, n))
			ac.gss = append(ac.gss, make([]float64, n))
		}
	}
	return ac
}

// addEpisode adds the counts of episode k with the state path st.
func (ac *assignCounts) addEpisode(k int, st []int) {
	c, m := ac.c, ac.m
	O, H := c.O, c.H
	m.Init[st[0]]++
	m.Obs1[st[0]*O+int(c.obs[k*H])]++
	for i := 0; i < H; i++ {
		t := 0
		if ac.nt != 1 {
			t = i
		}
		s := st[i]
		s2 := s
		if i+1 < H {
			s2 = st[i+1]
		}
		ac.addStep(t, k*H+i, s, s2, i+1 == H)
	}
}

// addStep adds the counts of the logged step j (table t) from s to s2:
// its transition, and unless it is the last step its emission and
// reward.
func (ac *assignCounts) addStep(t, j, s, s2 int, last bool) {
	c, m := ac.c, ac.m
	S, O := m.States, c.O
	a := int(c.act[j])
	m.Trans[t][(a*S+s)*S+s2]++
	if last {
		return
	}
	o := int(c.obs[j+1])
	m.EmitOf(t, a)[s2*O+o]++
	ri := m.RewardIndex(s, a, s2, o)
	if c.kind == RewardCategorical {
		m.RewardProb[t][ri*len(c.values)+int(c.rv[j])]++
	} else {
		r := c.rew[j]
		ac.gc[t][ri]++
		ac.gs[t][ri] += r
		ac.gss[t][ri] += r * r
	}
}

// normCounts turns fromAssignments' counts in m into distributions with
// pseudo counts per cell, and its Gaussian reward sums (gc, gs, gss: the
// count, sum and sum of squares per cell) into means and variances
// shrunk towards the data's.
func normCounts(m *Model, c *coded, pseudo float64, gc, gs, gss [][]float64) {
	S, O, A, V, n := m.States, c.O, c.A, len(c.values), m.RewardCells()
	normRow(m.Init, pseudo)
	normRows(m.Obs1, S, O, pseudo)
	for t := range m.Trans {
		normRows(m.Trans[t], A*S, S, pseudo)
		normRows(m.Emit[t], m.EmitRows(), O, pseudo)
		if c.kind == RewardCategorical {
			normRows(m.RewardProb[t], n, V, pseudo)
			continue
		}
		for i := 0; i < n; i++ {
			w := gc[t][i] + pseudo
			mu := (gs[t][i] + pseudo*c.rewMean) / w
			v := (gss[t][i]+pseudo*(c.rewVar+c.rewMean*c.rewMean))/w - mu*mu
			m.RewardMean[t][i] = mu
			m.RewardVar[t][i] = max(v, c.varFloor())
		}
	}
}

// randomStart draws transitions and the initial distribution from the
// flat Dirichlet distribution and emissions (observations and rewards) as
// an even mix of the data's marginal frequencies and a flat Dirichlet
// draw, so that every start explains the marginals roughly.
func randomStart(c *coded, proto *Model, S int, seed uint64) *Model {
	m := shapeLike(proto)
	m.States = S
	r := &randomStarter{rng: rand.New(rand.NewPCG(seed, 0x4a4d)), c: c, m: m}
	r.marginals()
	r.firstStep()
	for t := 0; t < len(proto.Trans); t++ {
		r.addTable()
	}
	m.Prepare()
	return m
}

// randomStarter draws randomStart's model m from rng, with the data's
// marginal frequencies fo of the observations and fv of the categorical
// reward values.
type randomStarter struct {
	rng    *rand.Rand
	c      *coded
	m      *Model
	fo, fv []float64
}

// marginals sets fo and fv from the data, with one pseudo-count each.
func (r *randomStarter) marginals() {
	c := r.c
	r.fo = make([]float64, c.O)
	for _, o := range c.obs {
		r.fo[o]++
	}
	normRow(r.fo, 1)
	V := len(c.values)
	r.fv = make([]float64, V)
	for _, v := range c.rv {
		r.fv[v]++
	}
	if V > 0 {
		normRow(r.fv, 1)
	}
}

// mix sets p to the even mix of a flat Dirichlet draw and marg.
func (r *randomStarter) mix(p, marg []float64) {
	dirichlet1(r.rng, p)
	for i := range p {
		p[i] = 0.5*p[i] + 0.5*marg[i]
	}
}

// mixRows mixes each of the rows rows of |O| entries of E with the
// observations' marginal frequencies.
func (r *randomStarter) mixRows(E []float64, rows int) {
	O := r.c.O
	for row := 0; row < rows; row++ {
		r.mix(E[row*O:(row+1)*O], r.fo)
	}
}

// addTable draws one step table's transitions, emissions and rewards and
// appends them to m.
func (r *randomStarter) addTable() {
	T, E := r.drawTable()
	r.m.Trans = append(r.m.Trans, T)
	r.m.Emit = append(r.m.Emit, E)
	if r.c.kind == RewardCategorical {
		r.addCatRewards()
	} else {
		r.addGaussRewards()
	}
}

// firstStep draws the start's first step: a flat-Dirichlet Init and
// Obs1 rows mixed with the observation marginals.
func (r *randomStarter) firstStep() {
	m, S := r.m, r.m.States
	m.Init = make([]float64, S)
	dirichlet1(r.rng, m.Init)
	m.Obs1 = make([]float64, S*r.c.O)
	r.mixRows(m.Obs1, S)
}

// drawTable draws a step table's transitions T (flat-Dirichlet rows)
// and emissions E (rows mixed with the observation marginals).
func (r *randomStarter) drawTable() (T, E []float64) {
	c, m := r.c, r.m
	S, O, A := m.States, c.O, c.A
	T = make([]float64, A*S*S)
	E = make([]float64, m.EmitRows()*O)
	for row := 0; row < A*S; row++ {
		dirichlet1(r.rng, T[row*S:(row+1)*S])
		if !m.Compact {
			r.mix(E[row*O:(row+1)*O], r.fo)
		}
	}
	if m.Compact {
		r.mixRows(E, S)
	}
	return T, E
}

// addCatRewards appends a table of reward probabilities, each cell mixed
// with the values' marginal frequencies.
func (r *randomStarter) addCatRewards() {
	n, V := r.m.RewardCells(), len(r.c.values)
	R := make([]float64, n*V)
	for i := 0; i < n; i++ {
		r.mix(R[i*V:(i+1)*V], r.fv)
	}
	r.m.RewardProb = append(r.m.RewardProb, R)
}

// addGaussRewards appends a table of reward means drawn around the
// data's mean (half its standard deviation) and variances at the data's.
func (r *randomStarter) addGaussRewards() {
	c, n := r.c, r.m.RewardCells()
	sd := math.Sqrt(c.rewVar)
	mu, vr := make([]float64, n), make([]float64, n)
	for i := range mu {
		mu[i] = c.rewMean + 0.5*sd*r.rng.NormFloat64()
		vr[i] = max(c.rewVar, c.varFloor())
	}
	r.m.RewardMean = append(r.m.RewardMean, mu)
	r.m.RewardVar = append(r.m.RewardVar, vr)
}
