#include "textflag.h"

// func bestColsAVX2(cols *float64, n int, coef *float64, off *int, m int, out *[8]float64)
//
// For k = 0..n−1 (n a positive multiple of 16) the value
// v_k = (…((coef[0]·C_0[k]) + coef[1]·C_1[k]) + …) + coef[m−1]·C_{m−1}[k],
// C_j the column at byte offset off[j] from cols, each product and sum
// rounded on its own (no fused multiply–add), in that order. out[0:4]
// gets the largest v_k of each lane k mod 4 and out[4:8] the first k
// (as a float64) reaching it: a value replaces the lane's only when it
// is strictly larger, so ties keep the earlier k.
TEXT ·bestColsAVX2(SB), NOSPLIT, $0-48
	MOVQ cols+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ coef+16(FP), R8
	MOVQ off+24(FP), R9
	MOVQ m+32(FP), R10
	MOVQ out+40(FP), DI

	SHLQ $3, CX                 // n in bytes
	VMOVUPD idx0123<>(SB), Y4   // lane indices k..k+3
	VBROADCASTSD four<>(SB), Y5
	VBROADCASTSD neginf<>(SB), Y12
	VXORPD Y13, Y13, Y13
	XORQ AX, AX                 // byte offset of k

block:
	// j = 0: the products set the values.
	VBROADCASTSD (R8), Y8
	MOVQ (R9), DX
	ADDQ SI, DX
	ADDQ AX, DX
	VMULPD (DX), Y8, Y0
	VMULPD 32(DX), Y8, Y1
	VMULPD 64(DX), Y8, Y2
	VMULPD 96(DX), Y8, Y3
	MOVQ $1, BX

coord:
	CMPQ BX, R10
	JGE merge
	VBROADCASTSD (R8)(BX*8), Y8
	MOVQ (R9)(BX*8), DX
	ADDQ SI, DX
	ADDQ AX, DX
	VMULPD (DX), Y8, Y6
	VMULPD 32(DX), Y8, Y7
	VMULPD 64(DX), Y8, Y9
	VMULPD 96(DX), Y8, Y10
	VADDPD Y6, Y0, Y0
	VADDPD Y7, Y1, Y1
	VADDPD Y9, Y2, Y2
	VADDPD Y10, Y3, Y3
	INCQ BX
	JMP coord

merge:
	// In order of k, so each lane keeps its first largest value.
	VCMPPD $0x1e, Y12, Y0, Y6   // Y0 > best (ordered, quiet)
	VBLENDVPD Y6, Y0, Y12, Y12
	VBLENDVPD Y6, Y4, Y13, Y13
	VADDPD Y5, Y4, Y4
	VCMPPD $0x1e, Y12, Y1, Y6
	VBLENDVPD Y6, Y1, Y12, Y12
	VBLENDVPD Y6, Y4, Y13, Y13
	VADDPD Y5, Y4, Y4
	VCMPPD $0x1e, Y12, Y2, Y6
	VBLENDVPD Y6, Y2, Y12, Y12
	VBLENDVPD Y6, Y4, Y13, Y13
	VADDPD Y5, Y4, Y4
	VCMPPD $0x1e, Y12, Y3, Y6
	VBLENDVPD Y6, Y3, Y12, Y12
	VBLENDVPD Y6, Y4, Y13, Y13
	VADDPD Y5, Y4, Y4

	ADDQ $128, AX
	CMPQ AX, CX
	JLT block

	VMOVUPD Y12, (DI)
	VMOVUPD Y13, 32(DI)
	VZEROUPPER
	RET

DATA idx0123<>+0(SB)/8, $0.0
DATA idx0123<>+8(SB)/8, $1.0
DATA idx0123<>+16(SB)/8, $2.0
DATA idx0123<>+24(SB)/8, $3.0
GLOBL idx0123<>(SB), RODATA|NOPTR, $32

DATA four<>+0(SB)/8, $4.0
GLOBL four<>(SB), RODATA|NOPTR, $8

DATA neginf<>+0(SB)/8, $0xfff0000000000000
GLOBL neginf<>(SB), RODATA|NOPTR, $8

// func bestColsAVX512(cols *float64, n int, coef *float64, off *int, m int, out *[16]float64)
//
// bestColsAVX2 with eight vectors to a register: out[0:8] gets the
// largest value of each lane k mod 8 and out[8:16] the first k reaching
// it. n is a positive multiple of 16.
TEXT ·bestColsAVX512(SB), NOSPLIT, $0-48
	MOVQ cols+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ coef+16(FP), R8
	MOVQ off+24(FP), R9
	MOVQ m+32(FP), R10
	MOVQ out+40(FP), DI

	SHLQ $3, CX
	VMOVUPD idx07<>(SB), Z4
	VBROADCASTSD eight<>(SB), Z5
	VBROADCASTSD neginf<>(SB), Z12
	VPXORQ Z13, Z13, Z13
	XORQ AX, AX

block512:
	VBROADCASTSD (R8), Z8
	MOVQ (R9), DX
	ADDQ SI, DX
	ADDQ AX, DX
	VMULPD (DX), Z8, Z0
	VMULPD 64(DX), Z8, Z1
	MOVQ $1, BX

coord512:
	CMPQ BX, R10
	JGE merge512
	VBROADCASTSD (R8)(BX*8), Z8
	MOVQ (R9)(BX*8), DX
	ADDQ SI, DX
	ADDQ AX, DX
	VMULPD (DX), Z8, Z6
	VMULPD 64(DX), Z8, Z7
	VADDPD Z6, Z0, Z0
	VADDPD Z7, Z1, Z1
	INCQ BX
	JMP coord512

merge512:
	VCMPPD $0x1e, Z12, Z0, K1
	VMOVAPD Z0, K1, Z12
	VMOVAPD Z4, K1, Z13
	VADDPD Z5, Z4, Z4
	VCMPPD $0x1e, Z12, Z1, K1
	VMOVAPD Z1, K1, Z12
	VMOVAPD Z4, K1, Z13
	VADDPD Z5, Z4, Z4

	ADDQ $128, AX
	CMPQ AX, CX
	JLT block512

	VMOVUPD Z12, (DI)
	VMOVUPD Z13, 64(DI)
	VZEROUPPER
	RET

DATA idx07<>+0(SB)/8, $0.0
DATA idx07<>+8(SB)/8, $1.0
DATA idx07<>+16(SB)/8, $2.0
DATA idx07<>+24(SB)/8, $3.0
DATA idx07<>+32(SB)/8, $4.0
DATA idx07<>+40(SB)/8, $5.0
DATA idx07<>+48(SB)/8, $6.0
DATA idx07<>+56(SB)/8, $7.0
GLOBL idx07<>(SB), RODATA|NOPTR, $64

DATA eight<>+0(SB)/8, $8.0
GLOBL eight<>(SB), RODATA|NOPTR, $8
