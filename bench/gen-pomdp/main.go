// Command gen-pomdp writes a random POMDP in Cassandra's format, for
// benchmarks that need logs of a given size from a model with a known
// number of states.
//
//	go run ./bench/gen-pomdp -states 8 -obs 8 -actions 4 -seed 1 > bench.pomdp
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
)

func main() {
	S := flag.Int("states", 8, "states")
	O := flag.Int("obs", 8, "observations")
	A := flag.Int("actions", 4, "actions")
	seed := flag.Uint64("seed", 1, "seed")
	flag.Parse()
	rng := rand.New(rand.NewPCG(*seed, 0))
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintf(w, "# random POMDP: %d states, %d observations, %d actions, seed %d\n", *S, *O, *A, *seed)
	fmt.Fprintf(w, "discount: 1.0\nvalues: reward\nstates: %d\nactions: %d\nobservations: %d\nstart: uniform\n", *S, *A, *O)
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
	for a := 0; a < *A; a++ {
		fmt.Fprintf(w, "T: %d\n", a)
		for s := 0; s < *S; s++ {
			for _, x := range row(*S) {
				fmt.Fprintf(w, "%.17g ", x)
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "O: %d\n", a)
		for s := 0; s < *S; s++ {
			for _, x := range row(*O) {
				fmt.Fprintf(w, "%.17g ", x)
			}
			fmt.Fprintln(w)
		}
	}
	for a := 0; a < *A; a++ {
		for s := 0; s < *S; s++ {
			fmt.Fprintf(w, "R: %d : %d : * : * %d\n", a, s, rng.IntN(3))
		}
	}
}
