//go:build amd64 && !purego

package dedup

import "golang.org/x/sys/cpu"

// cpuKernels returns the kernels this CPU has the instructions for.
func cpuKernels() *kernels {
	x := cpu.X86
	k := &kernels{name: "amd64"}
	// 512-bit carry-less multiplication, the concatenating shift (VBMI2),
	// and BMI2 for the token word loader.
	if x.HasAVX512F && x.HasAVX512VPCLMULQDQ && x.HasAVX512VBMI2 && x.HasBMI2 {
		k.tokenWords, k.tokens, k.fold, k.shingles = tokenWords, (*signer).tokensFast, (*signer).foldFast, (*signer).shinglesFast
	}
	// 64-bit multiplies (DQ) and byte compares (BW) on 512-bit vectors.
	avx512 := x.HasAVX512F && x.HasAVX512BW && x.HasAVX512DQ
	if avx512 {
		k.minhash = (*signer).minhashFast
	}
	if k.shingles == nil && k.minhash == nil {
		return portableKernels
	}
	return k
}
