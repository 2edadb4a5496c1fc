// Command gen-pomdp writes a random POMDP in Cassandra's format, for
// benchmarks that need logs of a given size from a model with a known
// number of states.
//
//	go run ./bench/gen-pomdp -states 8 -obs 8 -actions 4 -seed 1 > bench.pomdp
//
// With -family it writes a problem of the stress study's families
// (internal/genpomdp: maze, aliased, dense), with sparse rewards tied to the
// next state, observation aliasing, noisy or deterministic moves and a start
// belief; -draw N takes the N-th problem the study draws for the family
// (sizes and difficulty chosen from the seed), otherwise the flags fix them:
//
//	go run ./bench/gen-pomdp -family maze -width 6 -length 6 -slip 0.1 -seed 3 > maze.pomdp
//	go run ./bench/gen-pomdp -family aliased -states 20 -obs 6 -actions 4 -noise 0.05 > a.pomdp
//	go run ./bench/gen-pomdp -family dense -draw 12 -seed 1 > d.pomdp
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/psrlcb/psrlcb/internal/genpomdp"
)

func main() {
	S := flag.Int("states", 8, "states")
	O := flag.Int("obs", 8, "observations")
	A := flag.Int("actions", 4, "actions")
	seed := flag.Uint64("seed", 1, "seed")
	family := flag.String("family", "", "problem family: maze, aliased or dense (empty: the plain random model)")
	width := flag.Int("width", 6, "maze width (cells)")
	length := flag.Int("length", 6, "maze length (cells)")
	slip := flag.Float64("slip", 0, "probability that a move goes astray")
	noise := flag.Float64("noise", 0, "probability that the observation is uniform")
	rewards := flag.Int("rewards", 0, "states paying ±1 on entry (0: a third of the states)")
	starts := flag.Int("starts", 1, "states of the start belief's support")
	draw := flag.Int("draw", -1, "take the study's N-th problem of the family for this seed (ignores the size flags)")
	small := flag.Bool("small", false, "with -draw: the reduced study's sizes")
	flag.Parse()
	if *family != "" {
		writeFamily(genpomdp.Spec{Family: *family, States: *S, Actions: *A, Obs: *O, Width: *width, Length: *length,
			Slip: *slip, ObsNoise: *noise, RewardStates: *rewards, StartStates: *starts, Seed: *seed}, *draw, *small)
		return
	}
	writeRandom(*S, *O, *A, *seed)
}

// writeFamily prints the problem of the spec sp or, with draw ≥ 0, the
// study's draw-th problem of sp's family for sp's seed (small: the reduced
// study's sizes); an error exits with status 2.
func writeFamily(sp genpomdp.Spec, draw int, small bool) {
	var err error
	if draw >= 0 {
		sp, err = genpomdp.Draw(sp.Family, small, sp.Seed, draw)
	}
	var p *genpomdp.Problem
	if err == nil {
		p, err = genpomdp.Generate(sp)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen-pomdp:", err)
		os.Exit(2)
	}
	fmt.Print(p.Text)
}

// writeRandom prints the plain random model: S states, O observations, A
// actions, peaked random transition and observation rows, and rewards
// 0, 1 or 2 per (action, state).
func writeRandom(S, O, A int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0))
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintf(w, "# random POMDP: %d states, %d observations, %d actions, seed %d\n", S, O, A, seed)
	fmt.Fprintf(w, "discount: 1.0\nvalues: reward\nstates: %d\nactions: %d\nobservations: %d\nstart: uniform\n", S, A, O)
	row := func(n int) []float64 {
		// Dirichlet(0.5)-like rows: peaked enough for the model to matter.
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
	writeDynamics(w, S, O, A, row)
	writeRewards(w, rng, S, A)
}

// writeDynamics writes each action's transition and observation matrices,
// their rows drawn by row.
func writeDynamics(w *bufio.Writer, S, O, A int, row func(int) []float64) {
	for a := 0; a < A; a++ {
		fmt.Fprintf(w, "T: %d\n", a)
		writeRows(w, S, S, row)
		fmt.Fprintf(w, "O: %d\n", a)
		writeRows(w, S, O, row)
	}
}

// writeRewards writes the reward of each action and state, drawn from
// {0, 1, 2}.
func writeRewards(w *bufio.Writer, rng *rand.Rand, S, A int) {
	for a := 0; a < A; a++ {
		for s := 0; s < S; s++ {
			fmt.Fprintf(w, "R: %d : %d : * : * %d\n", a, s, rng.IntN(3))
		}
	}
}

// writeRows writes a matrix of rows random rows of n probabilities, each
// drawn by row.
func writeRows(w *bufio.Writer, rows, n int, row func(int) []float64) {
	for s := 0; s < rows; s++ {
		for _, x := range row(n) {
			fmt.Fprintf(w, "%.17g ", x)
		}
		fmt.Fprintln(w)
	}
}
