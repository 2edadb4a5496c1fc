// Package genpomdp generates random POMDPs in Cassandra's .POMDP format from
// a seed, with controllable size and difficulty, for the stress study
// (bench/stress) and the benchmark generator (bench/gen-pomdp).
//
// Every family shares the structure of logged decision problems where a
// learned model loses value: observations alias several hidden states,
// rewards are sparse and tied to the next state (r_h = R(s_{h+1}): ±1 on
// entering a few states, 0 elsewhere), moves are deterministic or noisy,
// and the start belief is uniform over a few states. The families:
//
//	maze     a grid of W×L cells with random inner walls (a spanning tree
//	         plus a few extra openings); actions N, E, S, W, stay; the
//	         observation is the cell's wall pattern (up to 16 symbols,
//	         renumbered densely), so many cells look alike; a move slips to
//	         a random neighbouring direction with probability Slip.
//	aliased  S states with sparse random moves: action a from s goes to one
//	         successor with probability 1−Slip and to one other state
//	         otherwise; each state shows its own label, one of O < S
//	         symbols (several states per symbol).
//	dense    the older benchmark generator's structure: Dirichlet-like
//	         transition and emission rows (every cell positive) with the
//	         same sparse next-state rewards.
//
// In every family the observation is replaced by a uniform symbol with
// probability ObsNoise. Generate is deterministic in the Spec.
package genpomdp

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Spec fixes one generated problem.
type Spec struct {
	Family  string // "maze", "aliased" or "dense"
	States  int    // maze: ignored (Width·Length)
	Width   int    // maze only
	Length  int    // maze only
	Actions int    // maze: ignored (5)
	Obs     int    // maze: ignored (wall patterns)
	// Slip is the probability that a move goes astray; 0 is deterministic.
	Slip float64
	// ObsNoise is the probability that the observation is uniform.
	ObsNoise float64
	// RewardStates is the number of states paying ±1 on entry (at least
	// one pays +1); 0 means max(1, S/3).
	RewardStates int
	// StartStates is the size of the start belief's support (uniform);
	// 0 means 1.
	StartStates int
	Seed        uint64
}

// Problem is a generated POMDP: its Cassandra text and the sizes it has.
type Problem struct {
	Spec                 Spec
	States, Actions, Obs int
	Text                 string
}

// gen holds the tables while a problem is built.
type gen struct {
	S, A, O int
	T       [][][]float64 // T[a][s][s2]
	E       [][]float64   // E[s2][o], the same for every action
	start   []float64
	rew     []float64 // reward on entering s2
	names   []string  // action names
	rng     *rand.Rand
}

// Generate builds the problem of spec.
func Generate(spec Spec) (*Problem, error) {
	rng := rand.New(rand.NewPCG(spec.Seed, 0x9e3779b97f4a7c15))
	g, err := build(spec, rng)
	if err != nil {
		return nil, err
	}
	if !(spec.Slip >= 0 && spec.Slip < 1) || !(spec.ObsNoise >= 0 && spec.ObsNoise < 1) {
		return nil, fmt.Errorf("genpomdp: slip %v and observation noise %v must lie in [0,1)", spec.Slip, spec.ObsNoise)
	}
	g.noise(spec.ObsNoise)
	g.rewards(spec.RewardStates)
	g.startBelief(spec.StartStates)
	return &Problem{Spec: spec, States: g.S, Actions: g.A, Obs: g.O, Text: g.cassandra(spec)}, nil
}

// build draws the moves and observations of spec's family.
func build(spec Spec, rng *rand.Rand) (*gen, error) {
	switch spec.Family {
	case "maze":
		return maze(spec, rng)
	case "aliased":
		return aliased(spec, rng)
	case "dense":
		return dense(spec, rng)
	}
	return nil, fmt.Errorf("genpomdp: unknown family %q (maze, aliased, dense)", spec.Family)
}

func checkSize(what string, n, lo, hi int) error {
	if n < lo || n > hi {
		return fmt.Errorf("genpomdp: %s %d is not in [%d, %d]", what, n, lo, hi)
	}
	return nil
}

// maze directions: N, E, S, W, stay.
var mazeMoves = [5][2]int{{0, -1}, {1, 0}, {0, 1}, {-1, 0}, {0, 0}}

func maze(spec Spec, rng *rand.Rand) (*gen, error) {
	W, L := spec.Width, spec.Length
	if err := checkSize("maze width·length", W*L, 4, 60); err != nil {
		return nil, err
	}
	if W < 2 || L < 2 {
		return nil, fmt.Errorf("genpomdp: maze %d×%d needs both sides ≥ 2", W, L)
	}
	S := W * L
	m := &mazeGrid{W: W, L: L, open: mazeOpenings(W, L, rng)}
	pat, code := m.wallPatterns()
	g := &gen{S: S, A: 5, O: len(code), rng: rng, names: []string{"N", "E", "S", "W", "stay"}}
	g.transitions(func(a, s int) []float64 { return m.moveRow(s, a, spec.Slip) })
	g.E = make([][]float64, S)
	for s := range S {
		g.E[s] = make([]float64, g.O)
		g.E[s][code[pat[s]]] = 1
	}
	return g, nil
}

// mazeGrid is a maze of W×L cells (cell s at x = s%W, y = s/W) and, per
// cell, which of N, E, S, W is open.
type mazeGrid struct {
	W, L int
	open [][4]bool
}

// wallPatterns returns each cell's wall pattern (bit d set: direction d
// blocked), the cell's observation, and the dense code of each pattern in
// order of first appearance.
func (m *mazeGrid) wallPatterns() (pat []int, code map[int]int) {
	pat = make([]int, len(m.open))
	code = map[int]int{}
	for s := range pat {
		for d := range 4 {
			if !m.open[s][d] {
				pat[s] |= 1 << d
			}
		}
		if _, ok := code[pat[s]]; !ok {
			code[pat[s]] = len(code)
		}
	}
	return pat, code
}

// dest is the cell a move in direction d (4: stay) leads to from s: the
// neighbour through an open side, s itself otherwise.
func (m *mazeGrid) dest(s, d int) int {
	if d == 4 || !m.open[s][d] {
		return s
	}
	x, y := s%m.W+mazeMoves[d][0], s/m.W+mazeMoves[d][1]
	return y*m.W + x
}

// moveRow is the distribution of the cell after action a from s: the
// intended move with probability 1−slip, else a slip.
func (m *mazeGrid) moveRow(s, a int, slip float64) []float64 {
	row := make([]float64, len(m.open))
	row[m.dest(s, a)] += 1 - slip
	if a == 4 {
		row[s] += slip
	} else { // slip to one of the two perpendicular directions
		row[m.dest(s, (a+1)%4)] += slip / 2
		row[m.dest(s, (a+3)%4)] += slip / 2
	}
	return row
}

// nb is the neighbour of cell s in direction d, if it lies in the grid.
func (m *mazeGrid) nb(s, d int) (int, bool) {
	x, y := s%m.W+mazeMoves[d][0], s/m.W+mazeMoves[d][1]
	if x < 0 || x >= m.W || y < 0 || y >= m.L {
		return 0, false
	}
	return y*m.W + x, true
}

// link opens the wall between cell s and its neighbour in direction d.
func (m *mazeGrid) link(s, d int) {
	t, _ := m.nb(s, d)
	m.open[s][d], m.open[t][(d+2)%4] = true, true
}

// mazeOpenings returns, per cell, which of N, E, S, W is open: a random
// spanning tree of the grid (randomised depth-first search) plus about a
// fifth of the remaining inner walls removed, so that the maze has loops.
func mazeOpenings(W, L int, rng *rand.Rand) [][4]bool {
	m := &mazeGrid{W: W, L: L, open: make([][4]bool, W*L)}
	m.spanningTree(rng)
	for s := range m.open {
		for d := 1; d <= 2; d++ { // E and S: each inner wall once
			if _, ok := m.nb(s, d); ok && !m.open[s][d] && rng.Float64() < 0.2 {
				m.link(s, d)
			}
		}
	}
	return m.open
}

// spanningTree opens the walls of a random spanning tree of the grid, by
// randomised depth-first search from a random cell.
func (m *mazeGrid) spanningTree(rng *rand.Rand) {
	S := len(m.open)
	seen := make([]bool, S)
	stack := []int{rng.IntN(S)}
	seen[stack[0]] = true
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		var cand []int
		for d := range 4 {
			if t, ok := m.nb(s, d); ok && !seen[t] {
				cand = append(cand, d)
			}
		}
		if len(cand) == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		d := cand[rng.IntN(len(cand))]
		t, _ := m.nb(s, d)
		m.link(s, d)
		seen[t] = true
		stack = append(stack, t)
	}
}

func aliased(spec Spec, rng *rand.Rand) (*gen, error) {
	S, A, O := spec.States, spec.Actions, spec.Obs
	if err := checkSizes(S, A, O); err != nil {
		return nil, err
	}
	g := &gen{S: S, A: A, O: O, rng: rng}
	g.transitions(func(a, s int) []float64 {
		row := make([]float64, S)
		row[rng.IntN(S)] += 1 - spec.Slip
		row[rng.IntN(S)] += spec.Slip
		return row
	})
	g.labels()
	return g, nil
}

// labels gives each state one of the O symbols as its observation: every
// symbol is used once, the rest drawn at random, so that S > O states
// share O symbols.
func (g *gen) labels() {
	label := g.rng.Perm(g.S)
	g.E = make([][]float64, g.S)
	for s := range g.S {
		g.E[s] = make([]float64, g.O)
		l := label[s]
		if l >= g.O {
			l = g.rng.IntN(g.O)
		}
		g.E[s][l] = 1
	}
}

func dense(spec Spec, rng *rand.Rand) (*gen, error) {
	S, A, O := spec.States, spec.Actions, spec.Obs
	if err := checkSizes(S, A, O); err != nil {
		return nil, err
	}
	g := &gen{S: S, A: A, O: O, rng: rng}
	g.transitions(func(a, s int) []float64 { return peaked(S, rng) })
	g.E = make([][]float64, S)
	for s := range S {
		g.E[s] = peaked(O, rng)
	}
	return g, nil
}

// transitions sets T[a][s] to row(a, s) for every action a and state s,
// in that order.
func (g *gen) transitions(row func(a, s int) []float64) {
	g.T = make([][][]float64, g.A)
	for a := range g.A {
		g.T[a] = make([][]float64, g.S)
		for s := range g.S {
			g.T[a][s] = row(a, s)
		}
	}
}

func checkSizes(S, A, O int) error {
	if err := checkSize("states", S, 2, 60); err != nil {
		return err
	}
	if err := checkSize("actions", A, 2, 10); err != nil {
		return err
	}
	return checkSize("observations", O, 2, 30)
}

// peaked is a random distribution whose cube-of-uniform weights make a few
// cells dominant (close to a Dirichlet(1/3) row).
func peaked(n int, rng *rand.Rand) []float64 {
	p := make([]float64, n)
	sum := 0.0
	for i := range p {
		x := rng.Float64()
		p[i] = x * x * x
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// noise mixes every emission row with the uniform distribution.
func (g *gen) noise(eps float64) {
	for _, row := range g.E {
		for o := range row {
			row[o] = (1-eps)*row[o] + eps/float64(g.O)
		}
	}
}

// rewards picks n states paying ±1 on entry, at least one of them +1.
func (g *gen) rewards(n int) {
	if n <= 0 {
		n = max(1, g.S/3)
	}
	n = min(n, g.S)
	g.rew = make([]float64, g.S)
	for i, s := range g.rng.Perm(g.S)[:n] {
		if i == 0 || g.rng.IntN(2) == 0 {
			g.rew[s] = 1
		} else {
			g.rew[s] = -1
		}
	}
}

func (g *gen) startBelief(n int) {
	n = min(max(n, 1), g.S)
	g.start = make([]float64, g.S)
	for _, s := range g.rng.Perm(g.S)[:n] {
		g.start[s] = 1 / float64(n)
	}
}

// cassandra writes the tables in Cassandra's format.
func (g *gen) cassandra(spec Spec) string {
	var b bytes.Buffer
	g.writeHeader(&b, spec)
	for a := range g.A {
		fmt.Fprintf(&b, "T: %d\n", a)
		for _, row := range g.T[a] {
			fmt.Fprintln(&b, joinFloats(row))
		}
		fmt.Fprintf(&b, "O: %d\n", a)
		for _, row := range g.E {
			fmt.Fprintln(&b, joinFloats(row))
		}
	}
	for s2, r := range g.rew {
		if r != 0 {
			fmt.Fprintf(&b, "R: * : * : %d : * %g\n", s2, r)
		}
	}
	return b.String()
}

// writeHeader writes the comment line naming the spec and the preamble:
// discount, values, states, actions, observations and start belief.
func (g *gen) writeHeader(b *bytes.Buffer, spec Spec) {
	fmt.Fprintf(b, "# generated POMDP: family %s, %d states, %d actions, %d observations, slip %g, observation noise %g, seed %d\n",
		spec.Family, g.S, g.A, g.O, spec.Slip, spec.ObsNoise, spec.Seed)
	fmt.Fprintf(b, "discount: 1.0\nvalues: reward\nstates: %d\n", g.S)
	if g.names != nil {
		fmt.Fprintf(b, "actions: %s\n", strings.Join(g.names, " "))
	} else {
		fmt.Fprintf(b, "actions: %d\n", g.A)
	}
	fmt.Fprintf(b, "observations: %d\nstart: %s\n", g.O, joinFloats(g.start))
}

func joinFloats(p []float64) string {
	s := make([]string, len(p))
	for i, x := range p {
		s[i] = fmt.Sprintf("%.17g", x)
	}
	return strings.Join(s, " ")
}
