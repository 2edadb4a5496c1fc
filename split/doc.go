// Package split deals the K logged episodes into H disjoint subsets
// D_0..D_{H-1} of (almost) equal size at random, as PSR-LCB requires
// (Algorithm 2, line 1 of the paper: the bonus at step h uses only the
// length-h prefixes of D_h, which keeps the covariance U_h independent of
// the other splits in the concentration argument).
//
// The split is a seeded shuffle (math/rand/v2 PCG) of the episode indexes
// 0..K-1 followed by a round-robin deal, so subset sizes differ by at most
// one. Since ingest sorts episodes by id, the same logs and seed give the
// same split whatever the file order, the number of files or the number of
// workers.
package split
