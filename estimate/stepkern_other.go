//go:build !amd64

package estimate

// The vector kernels are for amd64 only; simd.AVX2 is false elsewhere,
// so these never run.

func matVecCols(x *float64, M *float64, y *float64, S int, nc int) {
	panic("matVecCols without amd64")
}

func addOuter(B *float64, x *float64, y *float64, S int, nc int) {
	panic("addOuter without amd64")
}
