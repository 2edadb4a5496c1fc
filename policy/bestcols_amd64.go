package policy

import "golang.org/x/sys/cpu"

// hasBestCols is whether bestColsAVX2 may run on this processor.
var hasBestCols = cpu.X86.HasAVX2

// bestColsAVX2 is in bestcols_amd64.s.
//
//go:noescape
func bestColsAVX2(cols *float64, n int, coef *float64, off *int, m int, out *[8]float64)

// useBestCols512 is whether bestCols takes bestColsAVX512: on processors
// with AVX-512 (a variable, so that tests can compare both kernels).
var useBestCols512 = cpu.X86.HasAVX512F

// bestColsAVX512 is in bestcols_amd64.s.
//
//go:noescape
func bestColsAVX512(cols *float64, n int, coef *float64, off *int, m int, out *[16]float64)
