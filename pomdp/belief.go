package pomdp

// model is a checked POMDP with the tables the algorithms share.
type model struct {
	*POMDP
	nS, nA, nO int
	// er[a*S+s] = E[r | s, a] = Σ_{s',o} T(s'|s,a) O(o|s',a) R(a,s,s',o):
	// the expected immediate reward of a from state s.
	er []float64
	// tNZ[a][s] lists the next states with T(s'|s,a) > 0: published
	// models have sparse transitions, and filtering is the simulator's
	// inner loop.
	tNZ [][][]nz
}

type nz struct {
	i int
	p float64
}

func prepare(m *POMDP) (*model, error) {
	if err := m.Check(); err != nil {
		return nil, err
	}
	S, A, O := m.NumStates(), m.NumActions(), m.NumObs()
	mm := &model{POMDP: m, nS: S, nA: A, nO: O, er: make([]float64, A*S)}
	mm.stateRewards()
	mm.tNZ = make([][][]nz, A)
	for a := range A {
		mm.tNZ[a] = nonzeros(m.T[a])
	}
	return mm, nil
}

// stateRewards fills er with the expected immediate reward of every
// action and state.
func (mm *model) stateRewards() {
	for a := range mm.nA {
		for s := range mm.nS {
			mm.er[a*mm.nS+s] = mm.stateReward(a, s)
		}
	}
}

// stateReward is E[r | s, a] = Σ_{s',o} T(s'|s,a) O(o|s',a) R(a,s,s',o).
func (mm *model) stateReward(a, s int) float64 {
	m, S, O := mm.POMDP, mm.nS, mm.nO
	sum := 0.0
	for s2, t := range m.T[a][s] {
		if t == 0 {
			continue
		}
		sum += t * mm.obsReward(((a*S+s)*S+s2)*O, a, s2)
	}
	return sum
}

// obsReward is Σ_o O(o|s2,a) R(a,s,s2,o), the entries of R for (a, s, s2)
// starting at base.
func (mm *model) obsReward(base, a, s2 int) float64 {
	e := 0.0
	for o, q := range mm.O[a][s2] {
		e += q * mm.Reward[base+o]
	}
	return e
}

// nonzeros lists, for each state s, the next states s' with T[s][s'] > 0
// and their probabilities.
func nonzeros(T [][]float64) [][]nz {
	out := make([][]nz, len(T))
	for s, row := range T {
		for s2, t := range row {
			if t > 0 {
				out[s] = append(out[s], nz{s2, t})
			}
		}
	}
	return out
}

// expectedReward is E[r_h | belief, a_h = a].
func (mm *model) expectedReward(b []float64, a int) float64 {
	er := mm.er[a*mm.nS : (a+1)*mm.nS]
	r := 0.0
	for s, p := range b {
		r += p * er[s]
	}
	return r
}

// predict writes pred(s') = Σ_s b(s) T(s'|s,a).
func (mm *model) predict(b []float64, a int, pred []float64) {
	clear(pred)
	for s, p := range b {
		if p == 0 {
			continue
		}
		for _, e := range mm.tNZ[a][s] {
			pred[e.i] += p * e.p
		}
	}
}

// update writes the posterior over s' after observing o, given the
// predicted distribution pred, and returns P(o | history, a). When that
// probability is 0 the posterior is left undefined.
func (mm *model) update(pred []float64, a, o int, post []float64) float64 {
	po := 0.0
	for s2, p := range pred {
		v := p * mm.O[a][s2][o]
		post[s2] = v
		po += v
	}
	if po > 0 {
		divide(post, po)
	}
	return po
}

// divide divides every entry of xs by d.
func divide(xs []float64, d float64) {
	for i := range xs {
		xs[i] /= d
	}
}

// backup is the one-step expansion every exact recursion over histories
// makes: E[r|b,a] + Σ_o P(o|b,a)·next(o, b'), b' the belief after a and
// o, over the observations of positive probability; at the last step
// (last) it is E[r|b,a]. next must not keep b', whose memory is reused
// for the next o.
func (mm *model) backup(b []float64, a int, last bool, next func(o int, post []float64) float64) float64 {
	v := mm.expectedReward(b, a)
	if last {
		return v
	}
	return mm.addChildren(b, a, v, next)
}

// addChildren adds to v Σ_o P(o|b,a)·next(o, b') over the observations of
// positive probability, b' the belief after a and o, and returns it.
func (mm *model) addChildren(b []float64, a int, v float64, next func(o int, post []float64) float64) float64 {
	pred := make([]float64, mm.nS)
	post := make([]float64, mm.nS)
	mm.predict(b, a, pred)
	for o := range mm.nO {
		po := mm.update(pred, a, o, post)
		if po == 0 {
			continue
		}
		v += po * next(o, post)
	}
	return v
}

// Belief returns the true belief over the state at step len(obs) after the
// history o_1,a_1,…,o_h (obs[0] must be ObsInit; act has len(obs)−1
// entries), and whether the history has positive probability under the
// model for some policy taking those actions.
func (m *POMDP) Belief(obs, act []int) ([]float64, bool) {
	mm, err := prepare(m)
	if err != nil {
		return nil, false
	}
	return mm.belief(obs, act)
}

// belief is the true belief after the history obs, act (see
// POMDP.Belief), and whether the history has positive probability.
func (mm *model) belief(obs, act []int) ([]float64, bool) {
	if len(obs) == 0 || obs[0] != ObsInit || len(act) != len(obs)-1 {
		return nil, false
	}
	b := append([]float64(nil), mm.Start...)
	pred := make([]float64, mm.nS)
	for i, a := range act {
		if !mm.filter(b, pred, a, obs[i+1]) {
			return nil, false
		}
	}
	return b, true
}

// filter updates the belief b in place with the action a and the
// observation o (pred is a buffer); false when either is out of range or
// o has probability 0.
func (mm *model) filter(b, pred []float64, a, o int) bool {
	if a < 0 || a >= mm.nA || o < 0 || o >= mm.nO {
		return false
	}
	mm.predict(b, a, pred)
	return mm.update(pred, a, o, b) != 0
}
