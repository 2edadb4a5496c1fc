//go:build !amd64

package estimate

// fmaLoop is nil off amd64: the benchmarks then report no arithmetic
// peak.
func fmaLoop() (loop func(int), flops float64) { return nil, 0 }
