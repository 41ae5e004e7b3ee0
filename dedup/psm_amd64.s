//go:build amd64 && !purego

#include "textflag.h"

// func rankAVX512(keys *[32]uint16, n int, rank *[32]uint8)
//
// rank[i] = the number of the 32 keys smaller than keys[i], for i < n: one
// broadcast, compare and population count per key (keys are distinct; lanes
// past n hold a key above every real one).
TEXT ·rankAVX512(SB), NOSPLIT, $0-24
	MOVQ keys+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ rank+16(FP), DI
	TESTQ CX, CX
	JLE done
	VMOVDQU16 (SI), Z0

loop:
	VPBROADCASTW (SI), Z1
	VPCMPUW $1, Z1, Z0, K1 // K1 = keys < keys[i]
	KMOVD K1, AX
	POPCNTL AX, AX
	MOVB AX, (DI)
	ADDQ $2, SI
	INCQ DI
	DECQ CX
	JNZ loop
	VZEROUPPER

done:
	RET

// func prefetch(addr uintptr)
TEXT ·prefetch(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ addr+0(FP), AX
	PREFETCHT0 (AX)
	RET
