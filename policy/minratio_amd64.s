#include "textflag.h"

// func minRatioAVX2(b *float64, bi *float64, n int) float64
//
// The least b[s]/bi[s] over s < n with bi[s] > 0 (n a positive multiple
// of 4), +Inf when there is none: each quotient correctly rounded, as
// the scalar loop of sawtoothWeight, so the least is the same.
TEXT ·minRatioAVX2(SB), NOSPLIT, $0-32
	MOVQ b+0(FP), SI
	MOVQ bi+8(FP), DI
	MOVQ n+16(FP), CX
	SHLQ $3, CX                 // n in bytes
	VBROADCASTSD posinf<>(SB), Y15
	VXORPD Y14, Y14, Y14
	VMOVAPD Y15, Y5             // the running least of each lane
	XORQ AX, AX

loop:
	VMOVUPD (DI)(AX*1), Y0      // bi[s..s+3]
	VMOVUPD (SI)(AX*1), Y1      // b[s..s+3]
	VDIVPD Y0, Y1, Y2           // b/bi
	VCMPPD $0x1e, Y14, Y0, Y3   // bi > 0
	VBLENDVPD Y3, Y2, Y15, Y4   // the quotient where bi > 0, else +Inf
	VMINPD Y4, Y5, Y5
	ADDQ $32, AX
	CMPQ AX, CX
	JLT loop

	VEXTRACTF128 $1, Y5, X6
	VMINPD X6, X5, X5
	VPERMILPD $1, X5, X6
	VMINPD X6, X5, X5
	MOVSD X5, ret+24(FP)
	VZEROUPPER
	RET

DATA posinf<>+0(SB)/8, $0x7ff0000000000000
GLOBL posinf<>(SB), RODATA|NOPTR, $8
