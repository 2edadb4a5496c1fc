package split

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Split shuffles the episode indexes 0..numEpisodes-1 with a PCG generator
// seeded by seed and deals them into horizon subsets; subset h is D_h.
// Indexes within a subset are sorted ascending. Sizes differ by at most
// one: the first numEpisodes mod horizon subsets get the extra episode.
//
// It returns an error when horizon < 1 or numEpisodes < 0.
func Split(numEpisodes, horizon int, seed uint64) ([][]int, error) {
	if horizon < 1 {
		return nil, fmt.Errorf("split: horizon %d < 1", horizon)
	}
	if numEpisodes < 0 {
		return nil, fmt.Errorf("split: %d episodes", numEpisodes)
	}
	return deal(Permutation(numEpisodes, seed), horizon), nil
}

// deal deals the permuted episodes perm in turn into horizon subsets and
// sorts each subset.
func deal(perm []int, horizon int) [][]int {
	out := make([][]int, horizon)
	for h := range out {
		out[h] = make([]int, 0, len(perm)/horizon+1)
	}
	for i, k := range perm {
		out[i%horizon] = append(out[i%horizon], k)
	}
	for _, s := range out {
		slices.Sort(s)
	}
	return out
}

// Permutation is the seeded shuffle of 0..n-1 behind Split. The second PCG
// word is a fixed constant so that one user seed names one stream.
func Permutation(n int, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	rng.Shuffle(n, func(i, j int) { p[i], p[j] = p[j], p[i] })
	return p
}

// Of returns, for each episode, the index h of the subset D_h holding it.
func Of(subsets [][]int, numEpisodes int) []int {
	out := make([]int, numEpisodes)
	for h, s := range subsets {
		for _, k := range s {
			out[k] = h
		}
	}
	return out
}
