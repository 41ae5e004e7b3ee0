package dedup

// kernels is one set of the inner loops that have an assembly version. A nil
// field means the portable Go code runs. The set is chosen once: hostKernels,
// picked at init from the CPU's features (portableKernels with -tags purego
// or off amd64), is what New and NewPSM give their Detector and index, and an
// object keeps the set it was made with. Tests compare two sets by making one
// object with each, not by switching a global, so they can run in parallel.
type kernels struct {
	name string

	// Rabin fingerprints by carry-less multiplication (shingle_amd64.s):
	// all four, or none.
	tokenWords func(tokens []string, u []uint64, lens []uint8, buf []byte, pos int) (done, end int)
	tokens     func(sg *signer, u []uint64, l []uint8) int
	fold       func(sg *signer, stream []byte) (uint64, int)
	shingles   func(sg *signer, u, out []uint64) int

	// minhash computes the sketch, reporting false when it cannot (too many
	// samples): minhash_amd64.s.
	minhash func(sg *signer, xs, out []uint64) bool
}

// portableKernels is the Go code alone.
var portableKernels = &kernels{name: "portable"}

// hostKernels is the set this CPU runs, chosen once.
var hostKernels = cpuKernels()

// vectorShingles reports whether k holds the carry-less multiplication kernels.
func (k *kernels) vectorShingles() bool { return k.shingles != nil }
