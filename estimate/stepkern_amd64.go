package estimate

// matVecCols and addOuter are in stepkern_amd64.s; simd.AVX2 says
// whether they may run.
//
//go:noescape
func matVecCols(x *float64, M *float64, y *float64, S int, nc int)

//go:noescape
func addOuter(B *float64, x *float64, y *float64, S int, nc int)
