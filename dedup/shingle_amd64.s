//go:build amd64 && !purego

#include "textflag.h"

// REDUCE leaves in the high word of each 128-bit lane of A the Rabin residue
// of the carry-less product held in that lane (clmulReduce): Q holds q and
// MU mu in every word. Uses Z10-Z15.
#define REDUCE(A, Q, MU) \
	VPSHUFD    $0x4e, A, Z10      \ // the lane's words swapped
	VPSHLDQ    $1, Z10, A, Z11    \ // high word: L = hi<<1 | lo>>63
	VPSLLQ     $1, A, Z12         \ // low word: H = lo<<1
	VPCLMULQDQ $0x00, MU, Z12, Z13 \ // H*mu
	VPSLLQ     $1, Z13, Z13       \
	VPXORQ     Z12, Z13, Z13      \ // low word: T = H ^ high half of H*mu
	VPCLMULQDQ $0x00, Q, Z13, Z14 \ // T*q
	VPSHUFD    $0x4e, Z14, Z15    \
	VPSHLDQ    $1, Z15, Z14, Z15  \ // high word: low half of T*q
	VPXORQ     Z11, Z15, A

// func shinglesAVX512(u *uint64, out *uint64, blocks int, pow *uint64, w int, k *[3]uint64)
//
// For each of the 8*blocks shingles i: out[i] = c0 ^ sum over j < w of
// u[i+j]*pow[j], modulo p (k holds q, mu and c0). Eight shingles per block:
// a 512-bit load of u[i+j..i+j+7] gives the even shingles' terms in the low
// words of its lanes and the odd shingles' in the high words.
TEXT ·shinglesAVX512(SB), NOSPLIT, $0-48
	MOVQ u+0(FP), SI
	MOVQ out+8(FP), DI
	MOVQ blocks+16(FP), CX
	MOVQ pow+24(FP), R8
	MOVQ w+32(FP), R9
	MOVQ k+40(FP), R10
	TESTQ CX, CX
	JZ done
	VPBROADCASTQ 0(R10), Z28
	VPBROADCASTQ 8(R10), Z29
	VPBROADCASTQ 16(R10), Z30

block:
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	XORQ AX, AX
	MOVQ SI, DX

term:
	VPBROADCASTQ (R8)(AX*8), Z2
	VMOVDQU64 (DX), Z3
	VPCLMULQDQ $0x00, Z2, Z3, Z4
	VPCLMULQDQ $0x01, Z2, Z3, Z5
	VPXORQ Z4, Z0, Z0
	VPXORQ Z5, Z1, Z1
	ADDQ $8, DX
	INCQ AX
	CMPQ AX, R9
	JLT term

	REDUCE(Z0, Z28, Z29)
	REDUCE(Z1, Z28, Z29)
	VPUNPCKHQDQ Z1, Z0, Z6
	VPXORQ Z30, Z6, Z6
	VMOVDQU64 Z6, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ block

done:
	VZEROUPPER
	RET

// func tokensAVX512(u *uint64, l *uint8, blocks int, k *[10]uint64)
//
// For each i < 8*blocks: u[i] = u[i] * k[l[i]] modulo p, with q = k[8] and
// mu = k[9]: a token's last (up to 8) bytes, with the fingerprint of the ones
// before them, moved up by that many bytes (k[l] = x^(8l), l = 0 for 8).
TEXT ·tokensAVX512(SB), NOSPLIT, $0-32
	MOVQ u+0(FP), SI
	MOVQ l+8(FP), DX
	MOVQ blocks+16(FP), CX
	MOVQ k+24(FP), R10
	TESTQ CX, CX
	JZ tdone
	VMOVDQU64 0(R10), Z20
	VPBROADCASTQ 64(R10), Z28
	VPBROADCASTQ 72(R10), Z29

tblock:
	VMOVDQU64 (SI), Z3
	VPMOVZXBQ (DX), Z4
	VPERMQ Z20, Z4, Z5
	VPCLMULQDQ $0x00, Z5, Z3, Z0
	VPCLMULQDQ $0x11, Z5, Z3, Z1
	REDUCE(Z0, Z28, Z29)
	REDUCE(Z1, Z28, Z29)
	VPUNPCKHQDQ Z1, Z0, Z6
	VMOVDQU64 Z6, (SI)
	ADDQ $64, SI
	ADDQ $8, DX
	DECQ CX
	JNZ tblock

tdone:
	VZEROUPPER
	RET

// func foldAVX512(p *byte, blocks int, k *[18]uint64) uint64
//
// The Rabin fingerprint (book order) of the 64*blocks bytes at p, read as
// words w_0, w_1, ...: sum of w_j * x^(64(m-j)) modulo p, m = 8*blocks (the
// caller folds the starting value into w_0). Eight words per step: the
// accumulator's lanes hold 128-bit pieces, each word pair (a, b) moved up by
// 512 bits as a*x^575 + b*x^511 (k[0:8]: a carry-less product of book-order
// words is the product divided by x, so each constant is one power short).
// At the end lane i is multiplied by x^(64(8-2i)) and x^(64(7-2i)) (k[8:16])
// and the sum reduced (q = k[16], mu = k[17]). blocks must be at least 1.
TEXT ·foldAVX512(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ k+16(FP), R10
	VMOVDQU64 0(R10), Z20
	VMOVDQU64 64(R10), Z21
	VPBROADCASTQ 128(R10), Z28
	VPBROADCASTQ 136(R10), Z29
	VMOVDQU64 (SI), Z0
	ADDQ $64, SI
	DECQ CX
	JZ ffinal

fblock:
	VMOVDQU64 (SI), Z1
	VPCLMULQDQ $0x00, Z20, Z0, Z2
	VPCLMULQDQ $0x11, Z20, Z0, Z3
	VPTERNLOGQ $0x96, Z2, Z3, Z1
	VMOVDQA64 Z1, Z0
	ADDQ $64, SI
	DECQ CX
	JNZ fblock

ffinal:
	VPCLMULQDQ $0x00, Z21, Z0, Z2
	VPCLMULQDQ $0x11, Z21, Z0, Z3
	VPXORQ Z2, Z3, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPXOR Y1, Y0, Y0 // VEX encoding: no AVX512VL needed
	VEXTRACTI128 $1, Y0, X1
	VPXOR X1, X0, X0
	REDUCE(Z0, Z28, Z29)
	VPEXTRQ $1, X0, AX
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET
