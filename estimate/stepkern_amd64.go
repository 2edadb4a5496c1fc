package estimate

import "golang.org/x/sys/cpu"

// hasStepKernels is whether matVecCols and addOuter may run on this
// processor.
var hasStepKernels = cpu.X86.HasAVX2

// matVecCols and addOuter are in stepkern_amd64.s.
//
//go:noescape
func matVecCols(x *float64, M *float64, y *float64, S int, nc int)

//go:noescape
func addOuter(B *float64, x *float64, y *float64, S int, nc int)
