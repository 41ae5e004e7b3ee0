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

// func tokenWordsAsm(toks *string, n int, u *uint64, lens *uint8, buf *byte, bufLen, pos int) (done, end int)
//
// For tokens toks[0..n): copies each token and a separator to buf[pos:] (the
// normalized stream), one 8-byte store per word, and sets u[i] to the token's
// last (len%8 bytes, with the separator) word and lens[i] to (len%8+1)&7. The
// last word is read with one 8-byte load: from its start when that cannot
// cross a 4 KiB page (the bytes past the token are masked off), else ending at
// the token's last byte (shifted down): never outside the pages the token is
// on. Stops before a token for which buf has not len+9 bytes left; returns
// how many tokens it did and the new pos.
TEXT ·tokenWordsAsm(SB), NOSPLIT, $0-72
	MOVQ toks+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ u+16(FP), DI
	MOVQ lens+24(FP), R8
	MOVQ buf+32(FP), R9
	MOVQ bufLen+40(FP), R10
	MOVQ pos+48(FP), R11
	XORQ BX, BX

wloop:
	CMPQ BX, CX
	JGE wdone
	MOVQ (SI), DX  // token bytes
	MOVQ 8(SI), AX // token length
	LEAQ 9(R11)(AX*1), R12
	CMPQ R12, R10
	JGT wdone
	MOVQ AX, R13
	SHRQ $3, R13
	JZ wshort

wchunk:
	MOVQ (DX), R12
	MOVQ R12, (R9)(R11*1)
	ADDQ $8, DX
	ADDQ $8, R11
	DECQ R13
	JNZ wchunk

wshort:
	ANDQ $7, AX // r = len % 8
	XORQ R12, R12
	TESTQ AX, AX
	JZ wword
	MOVQ DX, R13
	ANDQ $4095, R13
	CMPQ R13, $4088
	JHI wnearend
	MOVQ (DX), R12
	SHLQ $3, AX
	BZHIQ AX, R12, R12
	JMP wword

wnearend:
	MOVQ -8(DX)(AX*1), R12
	SHLQ $3, AX
	MOVQ $64, R13
	SUBQ AX, R13
	SHRXQ R13, R12, R12

wword: // AX = 8r, R12 = the r bytes
	MOVQ $0x20, R13
	SHLXQ AX, R13, R13
	ORQ R13, R12
	MOVQ R12, (R9)(R11*1)
	MOVQ R12, (DI)(BX*8)
	SHRQ $3, AX
	LEAQ 1(R11)(AX*1), R11
	LEAQ 1(AX), R13
	ANDQ $7, R13
	MOVB R13, (R8)(BX*1)
	ADDQ $16, SI
	INCQ BX
	JMP wloop

wdone:
	MOVQ BX, done+56(FP)
	MOVQ R11, end+64(FP)
	RET
