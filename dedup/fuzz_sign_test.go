package dedup

import (
	"slices"
	"strings"
	"testing"
)

// FuzzSign checks that Sign never panics on any token stream, that Words is
// the number of tokens, that equal inputs give equal signatures (also from a
// second detector and after a binary round trip), and that a page is fully
// similar to itself.
func FuzzSign(f *testing.F) {
	f.Add("the quick brown fox jumps over the lazy dog", false)
	f.Add("a", false)
	f.Add("", false)
	f.Add("one two three four five", true)
	f.Add(strings.Repeat("same ", 300), false)
	f.Add("Straße ﬁ \xff\xfe 日本語 e\u0301", false)
	f.Add("a\x00b c\td\ne", true)
	// Two detectors per weighting that see different histories (the first
	// signs every input twice, the second once): a signature that depended
	// on what a detector signed before would differ between them.
	var dets [2][2]*Detector
	for i, weight := range []string{WeightUniform, WeightTF} {
		o := DefaultOptions()
		o.SimhashWeight = weight
		for j := range dets[i] {
			d, err := New(o)
			if err != nil {
				f.Fatal(err)
			}
			dets[i][j] = d
		}
	}
	// The portable code, to compare the host's kernels with.
	table := newSigner(DefaultOptions(), portableKernels)
	f.Fuzz(func(t *testing.T, text string, useTF bool) {
		pair := dets[0]
		if useTF {
			pair = dets[1]
		}
		det, fresh := pair[0], pair[1]
		tokens := strings.Fields(text)
		sig := det.Sign(tokens)
		if sig == nil {
			t.Fatal("Sign returned nil")
		}
		if sig.Words != len(tokens) {
			t.Fatalf("Words = %d, want %d", sig.Words, len(tokens))
		}
		if again := det.Sign(slices.Clone(tokens)); !sameSignature(sig, again) {
			t.Fatalf("two signatures of the same tokens differ:\n%+v\n%+v", sig, again)
		}
		if other := fresh.Sign(tokens); !sameSignature(sig, other) {
			t.Fatalf("a second detector signs differently")
		}
		b, err := sig.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var back Signature
		if err := back.UnmarshalBinary(b); err != nil {
			t.Fatalf("UnmarshalBinary of MarshalBinary: %v", err)
		}
		if !sameSignature(sig, &back) {
			t.Fatalf("binary round trip changed the signature:\n%+v\n%+v", sig, &back)
		}
		if n := len(tokens); n > 0 {
			// The fingerprints Sign computes (the host's kernels where the
			// CPU has them, else the one-pass table code) equal the table
			// code's tokens-then-shingles.
			sg := det.sg
			u, xs := make([]uint64, n+sg.w-1), make([]uint64, n)
			exact := sg.fingerprint(tokens, u, xs, make([]uint8, len(tokens)), new([]byte))
			u1, xs1 := make([]uint64, n+sg.w-1), make([]uint64, n)
			exact1 := table.fingerprint(tokens, u1, xs1, make([]uint8, len(tokens)), new([]byte))
			u2, xs2 := make([]uint64, n+sg.w-1), make([]uint64, n)
			exact2 := table.tokens(tokens, u2)
			for i := n; i < n+sg.w-1; i++ {
				u2[i] = u2[(i-n)%n]
			}
			table.shingles(u2, xs2)
			if exact != exact2 || !slices.Equal(xs, xs2) || !slices.Equal(u, u2) {
				t.Fatalf("fingerprints differ from the table code's tokens+shingles")
			}
			if exact1 != exact2 || !slices.Equal(xs1, xs2) || !slices.Equal(u1, u2) {
				t.Fatalf("one-pass table fingerprints differ from tokens+shingles")
			}
			if len(sig.Sketch) != det.Options().Samples {
				t.Fatalf("%d samples, want %d", len(sig.Sketch), det.Options().Samples)
			}
			if s := Similarity(sig, sig); s != 1 {
				t.Fatalf("Similarity(sig, sig) = %v, want 1", s)
			}
		}
	})
}

func sameSignature(a, b *Signature) bool {
	return a.Exact == b.Exact && a.Words == b.Words && a.Simhash == b.Simhash && a.Margins == b.Margins &&
		slices.Equal(a.Sketch, b.Sketch) && slices.Equal(a.Super, b.Super)
}
