package estimate

import "golang.org/x/sys/cpu"

// fmaLoopAVX2 and fmaLoopAVX512 are in fmapeak_amd64.s, for the
// benchmarks' measure of the arithmetic peak (fmaPeak).
//
//go:noescape
func fmaLoopAVX2(n int)

//go:noescape
func fmaLoopAVX512(n int)

// fmaLoop is the widest FMA loop the processor has and its operations
// per iteration; nil when it has none.
func fmaLoop() (loop func(int), flops float64) {
	switch {
	case cpu.X86.HasAVX512F:
		return fmaLoopAVX512, 160
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return fmaLoopAVX2, 80
	}
	return nil, 0
}
