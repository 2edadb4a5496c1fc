package policy

import "golang.org/x/sys/cpu"

// hasBestCols is whether bestColsAVX2 may run on this processor.
var hasBestCols = cpu.X86.HasAVX2

// bestColsAVX2 is in bestcols_amd64.s.
//
//go:noescape
func bestColsAVX2(cols *float64, n int, coef *float64, off *int, m int, out *[8]float64)
