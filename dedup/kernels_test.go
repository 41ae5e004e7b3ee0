package dedup

import "testing"

// TestKernelSetsSign: a Detector made with the host's kernels signs every
// page exactly as one made with the portable code (all of Sign: token,
// stream and shingle fingerprints, min-hash, supershingles, simhash), on
// pages of 0 to 5,000 tokens of every length class.
func TestKernelSetsSign(t *testing.T) {
	t.Parallel()
	if hostKernels == portableKernels {
		t.Skip("only the portable kernels run here")
	}
	for _, preset := range []string{PresetAltaVista, PresetBing} {
		mod := func(o *Options) { o.Filter.Preset = preset }
		host, portable := newTestDetectorWith(t, hostKernels, mod), newTestDetectorWith(t, portableKernels, mod)
		for i, n := range []int{0, 1, 4, 5, 7, 8, 9, 63, 64, 65, 300, 2000, 5000} {
			toks := benchTokens(n, uint64(i+1))
			if a, b := host.Sign(toks), portable.Sign(toks); !sameSignature(a, b) {
				t.Fatalf("%s, %d tokens: host kernels %+v, portable %+v", preset, n, a, b)
			}
		}
	}
}
