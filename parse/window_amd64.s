//go:build amd64 && !purego

#include "textflag.h"

DATA wconst<>+0(SB)/8, $0x2020202020202020 // case bit
DATA wconst<>+8(SB)/8, $0x6060606060606060 // 'a'-1
DATA wconst<>+16(SB)/8, $0x7b7b7b7b7b7b7b7b // 'z'+1
DATA wconst<>+24(SB)/8, $0x2f2f2f2f2f2f2f2f // '0'-1
DATA wconst<>+32(SB)/8, $0x3a3a3a3a3a3a3a3a // '9'+1
GLOBL wconst<>(SB), RODATA|NOPTR, $40

// func windowAVX2(p *byte) (tok, up, hi uint64)
//
// Classifies the 64 bytes at p, as window does: bit k of tok is set when p[k]
// is an ASCII letter or digit, of up when an upper-case ASCII letter, of hi
// when p[k] >= 0x80. Signed byte compares: bytes >= 0x80 are negative, so
// they fall below every ASCII bound and are never letters or digits.
TEXT ·windowAVX2(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	VPBROADCASTQ wconst<>+0(SB), Y8
	VPBROADCASTQ wconst<>+8(SB), Y9
	VPBROADCASTQ wconst<>+16(SB), Y10
	VPBROADCASTQ wconst<>+24(SB), Y11
	VPBROADCASTQ wconst<>+32(SB), Y12
	VPXOR Y13, Y13, Y13

	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1

	// letters: (x|0x20) in 'a'..'z'
	VPOR Y0, Y8, Y2
	VPOR Y1, Y8, Y3
	VPCMPGTB Y9, Y2, Y4  // z > 'a'-1
	VPCMPGTB Y9, Y3, Y5
	VPCMPGTB Y2, Y10, Y2 // 'z'+1 > z
	VPCMPGTB Y3, Y10, Y3
	VPAND Y4, Y2, Y2     // letter, low half
	VPAND Y5, Y3, Y3     // letter, high half

	// digits: x in '0'..'9'
	VPCMPGTB Y11, Y0, Y4
	VPCMPGTB Y11, Y1, Y5
	VPCMPGTB Y0, Y12, Y6
	VPCMPGTB Y1, Y12, Y7
	VPAND Y6, Y4, Y4
	VPAND Y7, Y5, Y5
	VPOR Y2, Y4, Y4 // token byte
	VPOR Y3, Y5, Y5

	// upper: letter with the case bit clear
	VPAND Y0, Y8, Y6
	VPAND Y1, Y8, Y7
	VPCMPEQB Y13, Y6, Y6
	VPCMPEQB Y13, Y7, Y7
	VPAND Y2, Y6, Y6
	VPAND Y3, Y7, Y7

	VPMOVMSKB Y4, AX
	VPMOVMSKB Y5, BX
	SHLQ $32, BX
	ORQ BX, AX
	MOVQ AX, tok+8(FP)

	VPMOVMSKB Y6, AX
	VPMOVMSKB Y7, BX
	SHLQ $32, BX
	ORQ BX, AX
	MOVQ AX, up+16(FP)

	VPMOVMSKB Y0, AX
	VPMOVMSKB Y1, BX
	SHLQ $32, BX
	ORQ BX, AX
	MOVQ AX, hi+24(FP)
	VZEROUPPER
	RET
