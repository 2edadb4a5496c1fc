//go:build !amd64

package estimate

// hasStepKernels is false: the vector kernels are for amd64 only.
const hasStepKernels = false

func matVecCols(x *float64, M *float64, y *float64, S int, nc int) {
	panic("matVecCols without amd64")
}

func addOuter(B *float64, x *float64, y *float64, S int, nc int) {
	panic("addOuter without amd64")
}
