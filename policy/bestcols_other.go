//go:build !amd64

package policy

// hasBestCols is false: the vector kernel is for amd64 only.
const hasBestCols = false

func bestColsAVX2(cols *float64, n int, coef *float64, off *int, m int, out *[8]float64) {
	panic("bestColsAVX2 without amd64")
}

// useBestCols512 is false: the vector kernels are for amd64 only.
var useBestCols512 = false

func bestColsAVX512(cols *float64, n int, coef *float64, off *int, m int, out *[16]float64) {
	panic("bestColsAVX512 without amd64")
}
