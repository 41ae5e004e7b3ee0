//go:build amd64 && !purego

package dedup

import "golang.org/x/sys/cpu"

// vectorKernels are the carry-less multiplication kernels of shingle_amd64.s.
var vectorKernels = &kernels{
	name:       "amd64-vpclmulqdq",
	tokenWords: tokenWords,
	tokens:     (*signer).tokensFast,
	fold:       (*signer).foldFast,
	shingles:   (*signer).shinglesFast,
}

// cpuKernels returns vectorKernels where the CPU has 512-bit carry-less
// multiplication, the concatenating shift (VBMI2) and BMI2 (the token word
// loader), else portableKernels.
func cpuKernels() *kernels {
	x := cpu.X86
	if x.HasAVX512F && x.HasAVX512VPCLMULQDQ && x.HasAVX512VBMI2 && x.HasBMI2 {
		return vectorKernels
	}
	return portableKernels
}
