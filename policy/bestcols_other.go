//go:build !amd64

package policy

// The vector kernels are for amd64 only; simd.AVX2 and simd.AVX512 are
// false elsewhere, so these never run.

func bestColsAVX2(cols *float64, n int, coef *float64, off *int, m int, out *[8]float64) {
	panic("bestColsAVX2 without amd64")
}

func bestColsAVX512(cols *float64, n int, coef *float64, off *int, m int, out *[16]float64) {
	panic("bestColsAVX512 without amd64")
}

func minRatioAVX2(b *float64, bi *float64, n int) float64 {
	panic("minRatioAVX2 without amd64")
}
