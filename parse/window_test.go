package parse

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestWindowKernels: the vector window (where the CPU runs it) and the
// portable one classify every byte value the same, at every offset.
func TestWindowKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := 0; trial < 2000; trial++ {
		b := make([]byte, 64+rng.IntN(64))
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		if trial < 4 { // every byte value, in order
			for i := range b {
				b[i] = byte(64*trial + i%64)
			}
		}
		s := string(b)
		i := rng.IntN(len(s) - 63)
		tok, up, hi := window(s, i)
		stok, sup, shi := windowSWAR(s, i)
		if tok != stok || up != sup || hi != shi {
			t.Fatalf("window(%q, %d) = %#x %#x %#x, portable %#x %#x %#x", s, i, tok, up, hi, stok, sup, shi)
		}
		for k := 0; k < 64; k++ {
			c := byteClass[s[i+k]]
			if (tok>>k&1 != 0) != (c == clsLower || c == clsUpper) ||
				(up>>k&1 != 0) != (c == clsUpper) || (hi>>k&1 != 0) != (c == clsNonASCII) {
				t.Fatalf("window(%q, %d): byte %d (%#x) misclassified", s, i, k, s[i+k])
			}
		}
	}
	// Past the end of text, bytes read as delimiters.
	tok, up, hi := window("Ab\xc3", 0)
	if tok != 3 || up != 1 || hi != 4 {
		t.Fatalf("short window = %#x %#x %#x, want 0x3 0x1 0x4", tok, up, hi)
	}
}

// TestTokenizeLongTexts: on long texts (many 64-byte windows: runs that
// cross windows, runs of 64 and more letters, non-ASCII at window edges,
// tens of thousands of tokens to lower-case, some ending within 8 bytes of
// the end of the text) Tokenize gives the plain restatement's tokens, and a
// limit stops it after exactly that many.
func TestTokenizeLongTexts(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	pieces := []string{"a", "Z", "q", "7", "X", "é", "É", "中", "\u0301", "ﬁ", "\xff", " ", ".", "-", "\n", "=", "ß"}
	weights := []int{30, 6, 30, 8, 4, 1, 1, 1, 1, 1, 1, 20, 4, 2, 2, 1, 1}
	pick := func(ascii bool) string {
		for {
			k := rng.IntN(len(pieces))
			if rng.IntN(30) < weights[k] && (!ascii || len(pieces[k]) == 1 && pieces[k][0] < 0x80) {
				return pieces[k]
			}
		}
	}
	for trial := 0; trial < 300; trial++ {
		var sb strings.Builder
		ascii := trial%3 == 0
		n := 1 + rng.IntN(3000)
		if trial%50 == 0 {
			n = 60000 // many thousands of tokens to lower-case
		}
		for sb.Len() < n {
			if rng.IntN(40) == 0 { // a long run of letters
				sb.WriteString(strings.Repeat("Ab", 20+rng.IntN(80)))
				continue
			}
			sb.WriteString(pick(ascii))
		}
		s := sb.String()
		got := Tokenize(nil, s)
		if want := tokenizeBytewise(s); !slices.Equal(got, want) {
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("trial %d (%d bytes): token %d = %q, restated %q", trial, len(s), i, got[i], want[i])
				}
			}
			t.Fatalf("trial %d (%d bytes): %d tokens, restated %d", trial, len(s), len(got), len(want))
		}
		if len(got) > 0 {
			k := 1 + rng.IntN(len(got))
			if lim := tokenize(nil, s, k); !slices.Equal(lim, got[:k]) {
				t.Fatalf("trial %d: limit %d gave %d tokens, not the first %d", trial, k, len(lim), k)
			}
		}
	}
}
