package policy

// minRatioAVX2 is in minratio_amd64.s; simd.AVX2 says whether it may run.
//
//go:noescape
func minRatioAVX2(b *float64, bi *float64, n int) float64
