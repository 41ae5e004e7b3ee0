//go:build amd64 && !purego

#include "textflag.h"

// func tagScanAVX512(tags *uint16, lo, hi *uint32, q *uint16, n int, out *uint32)
//
// For each of the n buckets tags[lo[i]:hi[i]] (its first 32 entries), out[i]
// gets bit j set when entry j matches query tag q[i]: (e^q)>>1 < e&-e, which
// is tagMatch. Masked loads never touch memory past the bucket.
TEXT ·tagScanAVX512(SB), NOSPLIT, $0-48
	MOVQ tags+0(FP), SI
	MOVQ lo+8(FP), R8
	MOVQ hi+16(FP), R9
	MOVQ q+24(FP), R10
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), DI
	TESTQ CX, CX
	JZ done
	VPXORQ Z30, Z30, Z30

loop:
	MOVL (R8), AX
	MOVL (R9), BX
	SUBL AX, BX
	MOVL $32, DX
	CMPL BX, DX
	CMOVLHI DX, BX // at most 32 entries (BZHI reads only the index's low byte)
	MOVL $-1, DX
	BZHIL BX, DX, DX
	KMOVD DX, K1
	LEAQ (SI)(AX*2), R11
	VMOVDQU16.Z (R11), K1, Z0
	MOVWLZX (R10), DX
	VPBROADCASTW DX, Z1
	VPXORQ Z1, Z0, Z2
	VPSRLW $1, Z2, Z2
	VPSUBW Z0, Z30, Z3
	VPANDQ Z0, Z3, Z3
	VPCMPUW $1, Z3, Z2, K1, K2
	KMOVD K2, DX
	MOVL DX, (DI)
	ADDQ $4, R8
	ADDQ $4, R9
	ADDQ $2, R10
	ADDQ $4, DI
	DECQ CX
	JNZ loop
	VZEROUPPER

done:
	RET
