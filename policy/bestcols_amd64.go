package policy

// bestColsAVX2 and bestColsAVX512 are in bestcols_amd64.s; simd.AVX2 and
// simd.AVX512 say whether they may run.
//
//go:noescape
func bestColsAVX2(cols *float64, n int, coef *float64, off *int, m int, out *[8]float64)

//go:noescape
func bestColsAVX512(cols *float64, n int, coef *float64, off *int, m int, out *[16]float64)
