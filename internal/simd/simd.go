// Package simd says which vector kernels psrlcb's hot loops may use on
// this processor: the AVX2 and AVX-512 assembly of packages policy and
// estimate (docs/speed.md). Each kernel adds the same products in the
// same order as the Go loop it stands for, so the outputs are the same
// byte for byte with or without them; the environment variable
// PSRLCB_PORTABLE=1 turns them off (to check that, or on a processor whose
// features are misreported).
package simd

import (
	"os"

	"golang.org/x/sys/cpu"
)

// AVX2 is whether the AVX2 kernels run: on amd64 processors with AVX2,
// unless PSRLCB_PORTABLE is set. Tests may set it to compare the paths.
var AVX2 = cpu.X86.HasAVX2 && os.Getenv("PSRLCB_PORTABLE") == ""

// AVX512 is whether the AVX-512 forms run where there are any: with AVX2
// on, on processors with AVX-512F.
var AVX512 = AVX2 && cpu.X86.HasAVX512F
