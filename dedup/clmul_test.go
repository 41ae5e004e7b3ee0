package dedup

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestClmulReduce: the carry-less product reduced by Barrett's method equals
// the book's bit-at-a-time multiplication, for each of the three polynomials.
func TestClmulReduce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, q := range []uint64{PolyText, PolyShingle, PolySuper} {
		r := NewRabin(q)
		mu := barrettMu(q)
		for i := 0; i < 2000; i++ {
			a, b := rng.Uint64(), rng.Uint64()
			if i < 64 {
				a = uint64(1) << i
			}
			lo, hi := clmul(a, b)
			if got, want := clmulReduce(lo, hi, q, mu), r.Mul(a, b); got != want {
				t.Fatalf("q %#x: %#x * %#x = %#x, want %#x", q, a, b, got, want)
			}
		}
		// A sum of products reduces to the sum of the residues.
		a1, b1, a2, b2 := rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64()
		lo1, hi1 := clmul(a1, b1)
		lo2, hi2 := clmul(a2, b2)
		if got, want := clmulReduce(lo1^lo2, hi1^hi2, q, mu), r.Mul(a1, b1)^r.Mul(a2, b2); got != want {
			t.Fatalf("q %#x: sum of products %#x, want %#x", q, got, want)
		}
	}
}

// TestShinglesVectorEqualsTable: the vector shingle kernel (where the CPU has
// it) gives the table code's shingles, for every block and tail split.
func TestShinglesVectorEqualsTable(t *testing.T) {
	t.Parallel()
	if !hostKernels.vectorShingles() {
		t.Skip("no 512-bit carry-less multiplication on this CPU")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, w := range []int{1, 2, 5, 7, 14} {
		mod := func(o *Options) { o.ShingleWords = w }
		d, table := newTestDetector(t, mod), newTestDetectorWith(t, portableKernels, mod)
		for _, n := range []int{7, 8, 9, 15, 16, 63, 64, 65, 1000} {
			u := make([]uint64, n+w-1)
			for i := range u {
				u[i] = rng.Uint64()
			}
			got := make([]uint64, n)
			want := make([]uint64, n)
			d.sg.shingles(u, got)
			table.sg.shingles(u, want)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("w=%d n=%d shingle %d: vector %#x, table %#x", w, n, i, got[i], want[i])
				}
			}
		}
	}
}

// TestExactVectorEqualsTable: the stream's fingerprint from the vector
// kernels equals the table code's, and the Rabin fingerprint of the joined
// stream, for streams around every multiple of the 64-byte block and tokens
// of every length class (the 8-byte words of long tokens included).
func TestExactVectorEqualsTable(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	d := newTestDetector(t, nil)
	text := NewRabin(PolyText)
	letters := "abcdefghijklmnopqrstuvwxyz0123456789"
	for trial := 0; trial < 400; trial++ {
		n := 1 + rng.IntN(300)
		tokens := make([]string, n)
		total := 0
		for i := range tokens {
			l := 1 + rng.IntN(6)
			if rng.IntN(5) == 0 {
				l = 1 + rng.IntN(40)
			}
			b := make([]byte, l)
			for k := range b {
				b[k] = letters[rng.IntN(len(letters))]
			}
			tokens[i] = string(b)
			total += l + 1
		}
		u := make([]uint64, n+d.sg.w-1)
		out := make([]uint64, n)
		var stream []byte
		got := d.sg.fingerprint(tokens, u, out, make([]uint8, n), &stream)
		want := text.HashString(strings.Join(tokens, " ") + " ")
		if got != want {
			t.Fatalf("%d tokens, %d bytes: exact %#x, want %#x", n, total, got, want)
		}
		u2 := make([]uint64, n+d.sg.w-1)
		if tab := d.sg.tokens(tokens, u2); tab != want {
			t.Fatalf("table exact %#x, want %#x", tab, want)
		}
		for i := 0; i < n; i++ {
			if u[i] != u2[i] {
				t.Fatalf("%d tokens: token %d (%q) fingerprint %#x, table %#x", n, i, tokens[i], u[i], u2[i])
			}
		}
	}
}
