#include "textflag.h"

// func matVecCols(x *float64, M *float64, y *float64, S int, nc int)
//
// y[j] = Σ_{s<S} x[s]·M[s·S+j] for j < nc (nc a positive multiple of 4,
// at most S): each sum starts at +0 and adds the products in the order
// of s, every product and sum rounded on its own (no fused
// multiply–add), as the scalar loop does. Eight columns at a time
// while there are eight, then four.
TEXT ·matVecCols(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ M+8(FP), DX
	MOVQ y+16(FP), DI
	MOVQ S+24(FP), CX
	MOVQ nc+32(FP), R8
	MOVQ CX, R9
	SHLQ $3, R9 // row stride in bytes
	XORQ AX, AX // column j

next:
	MOVQ R8, R10
	SUBQ AX, R10
	CMPQ R10, $8
	JLT  four
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	LEAQ (DX)(AX*8), R11
	XORQ BX, BX

eight_s:
	VBROADCASTSD (SI)(BX*8), Y2
	VMULPD (R11), Y2, Y3
	VMULPD 32(R11), Y2, Y4
	VADDPD Y3, Y0, Y0
	VADDPD Y4, Y1, Y1
	ADDQ R9, R11
	INCQ BX
	CMPQ BX, CX
	JLT  eight_s
	VMOVUPD Y0, (DI)(AX*8)
	VMOVUPD Y1, 32(DI)(AX*8)
	ADDQ $8, AX
	JMP  next

four:
	CMPQ R10, $4
	JLT  done
	VXORPD Y0, Y0, Y0
	LEAQ (DX)(AX*8), R11
	XORQ BX, BX

four_s:
	VBROADCASTSD (SI)(BX*8), Y2
	VMULPD (R11), Y2, Y3
	VADDPD Y3, Y0, Y0
	ADDQ R9, R11
	INCQ BX
	CMPQ BX, CX
	JLT  four_s
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  next

done:
	VZEROUPPER
	RET

// func addOuter(B *float64, x *float64, y *float64, S int, nc int)
//
// B[s·S+j] += x[s]·y[j] for s < S and j < nc (nc a positive multiple of
// 4, at most S), the product rounded before the sum.
TEXT ·addOuter(SB), NOSPLIT, $0-40
	MOVQ B+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DX
	MOVQ S+24(FP), CX
	MOVQ nc+32(FP), R8
	MOVQ CX, R9
	SHLQ $3, R9
	XORQ BX, BX // row s

row:
	VBROADCASTSD (SI)(BX*8), Y2
	XORQ AX, AX

col:
	VMULPD (DX)(AX*8), Y2, Y3
	VADDPD (DI)(AX*8), Y3, Y3
	VMOVUPD Y3, (DI)(AX*8)
	ADDQ $4, AX
	CMPQ AX, R8
	JLT  col
	ADDQ R9, DI
	INCQ BX
	CMPQ BX, CX
	JLT  row
	VZEROUPPER
	RET
