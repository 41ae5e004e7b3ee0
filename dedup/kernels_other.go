//go:build !amd64 || purego

package dedup

func cpuKernels() *kernels { return portableKernels }
