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

// func prefetch2(a, b uintptr)
TEXT ·prefetch2(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	PREFETCHT0 (AX)
	PREFETCHT0 (BX)
	RET

// func prefetch(addr uintptr)
TEXT ·prefetch(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ addr+0(FP), AX
	PREFETCHT0 (AX)
	RET

// func locateAVX512(hds *uint32, n int, off *uint32, dhead *int32, dmask uint32, vals *uint64, lo, hi *uint32, cur *int32, delta *dentry)
//
// For each header hds[i]: lo[i], hi[i] = off[hd], off[hd+1] (the bucket in
// vals), cur[i] = dhead[hd&dmask] (the delta chain); prefetches the bucket's
// first and last line (vals[lo-1] if the bucket is empty: prefetch never
// faults) and the chain's first entry. Scalar code; it only needs the same
// CPU as the rest of the file.
TEXT ·locateAVX512(SB), NOSPLIT, $0-80
	MOVQ hds+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ off+16(FP), R8
	MOVQ dhead+24(FP), R9
	MOVL dmask+32(FP), R10
	MOVQ vals+40(FP), R11
	MOVQ lo+48(FP), DI
	MOVQ hi+56(FP), DX
	MOVQ cur+64(FP), R12
	MOVQ delta+72(FP), R15
	XORQ BX, BX
	TESTQ CX, CX
	JLE locdone

locloop:
	MOVL (SI)(BX*4), AX
	MOVL (R8)(AX*4), R13
	MOVL R13, (DI)(BX*4)
	PREFETCHT0 (R11)(R13*8)
	MOVL 4(R8)(AX*4), R13
	MOVL R13, (DX)(BX*4)
	PREFETCHT0 -8(R11)(R13*8)
	ANDL R10, AX
	MOVLQSX (R9)(AX*4), AX
	MOVL AX, (R12)(BX*4)
	SHLQ $4, AX // 16-byte entries
	PREFETCHT0 (R15)(AX*1)
	INCQ BX
	CMPQ BX, CX
	JLT locloop

locdone:
	RET

// func bucketMasksAVX512(vals *uint64, lo, hi *uint32, n int, fp uint64, k int, out *uint8)
//
// out[i] = the entries j < min(hi[i]-lo[i], 8) of bucket i (vals[lo[i]:hi[i]])
// within Hamming distance k of fp, as bit j: one masked load (masked-off
// lanes never fault), xor, population count and compare per bucket, with no
// branch on the bucket's length.
TEXT ·bucketMasksAVX512(SB), NOSPLIT, $0-56
	MOVQ vals+0(FP), R11
	MOVQ lo+8(FP), SI
	MOVQ hi+16(FP), DX
	MOVQ n+24(FP), R12
	TESTQ R12, R12
	JLE maskdone
	VPBROADCASTQ fp+32(FP), Z1
	VPBROADCASTQ k+40(FP), Z2 // k >= 0: compared unsigned
	MOVQ out+48(FP), DI
	MOVL $8, R9
	XORQ BX, BX

maskloop:
	MOVL (SI)(BX*4), AX
	MOVL (DX)(BX*4), CX
	SUBL AX, CX
	CMPL CX, R9
	CMOVLHI R9, CX    // unsigned: min(len, 8) for any length
	NEGL CX
	ADDL $8, CX       // 8 - min(len, 8)
	MOVL $0xff, R10
	SHRL CX, R10      // the low min(len, 8) bits
	KMOVB R10, K1
	VMOVDQU64.Z (R11)(AX*8), K1, Z0
	VPXORQ Z1, Z0, Z0
	VPOPCNTQ Z0, Z0
	VPCMPUQ $2, Z2, Z0, K1, K2
	KMOVB K2, R10
	MOVB R10, (DI)(BX*1)
	INCQ BX
	CMPQ BX, R12
	JLT maskloop
	VZEROUPPER

maskdone:
	RET
