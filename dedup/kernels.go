package dedup

// kernels is a set of the signer's inner loops that have an assembly
// version: the Rabin fingerprints by carry-less multiplication
// (shingle_amd64.s), all four or none (nil: the portable table code runs).
// The set is chosen once: hostKernels, picked at init from the CPU's features
// (portableKernels with -tags purego, off amd64, or on a CPU without the
// instructions), is what New gives its Detector, and a signer keeps the set
// it was made with. Tests compare two sets by making one signer with each,
// not by switching a global, so they can run in parallel.
//
// Only kernels whose gain shows where a user sees it stay: these make
// normalizing and shingling real text about twice as fast and take about 2%
// off a crawl's CPU (BENCHMARKS.md, "Assembly that pays"). The min-hash, PSM
// and supershingle probe kernels were deleted: their gain did not show in a
// crawl's profile.
type kernels struct {
	name string

	tokenWords func(tokens []string, u []uint64, lens []uint8, buf []byte, pos int) (done, end int)
	tokens     func(sg *signer, u []uint64, l []uint8) int
	fold       func(sg *signer, stream []byte) (uint64, int)
	shingles   func(sg *signer, u, out []uint64) int
}

// portableKernels is the Go code alone.
var portableKernels = &kernels{name: "portable"}

// hostKernels is the set this CPU runs, chosen once.
var hostKernels = cpuKernels()

// vectorShingles reports whether k holds the carry-less multiplication kernels.
func (k *kernels) vectorShingles() bool { return k.shingles != nil }
