package dedup

import (
	"math/rand/v2"
	"testing"
)

// slowExtend is the book's "slow, but obviously correct" bit-at-a-time Extend.
func slowExtend(q, f uint64, s []byte) uint64 {
	mulX := func(a uint64) uint64 {
		if a&1 == 1 {
			return (a >> 1) ^ q
		}
		return a >> 1
	}
	for _, c := range s {
		f ^= uint64(c)
		for range 8 {
			f = mulX(f)
		}
	}
	return f
}

func TestPolynomialsArePrimitive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		q    uint64
		want bool
	}{
		{"text", PolyText, true},
		{"shingle", PolyShingle, true},
		{"super", PolySuper, true},
		{"no constant term", PolyText &^ polyOne, false},
		{"x^64+1 (reducible)", polyOne, false},
		{"x^64+x^63+1 not primitive", polyOne | 1, false},
	} {
		if got := IsPrimitive(tc.q); got != tc.want {
			t.Errorf("%s: IsPrimitive(%#x) = %v, want %v", tc.name, tc.q, got, tc.want)
		}
	}
	if PolyText == PolyShingle || PolyShingle == PolySuper || PolyText == PolySuper {
		t.Fatal("fingerprints of fingerprints must use different polynomials")
	}
}

func TestRabinKnownValues(t *testing.T) {
	t.Parallel()
	r := NewRabin(PolyText)
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"", PolyText},
		{"a", 0xfe8491df60affe7c},
		{"a rose is a rose is a rose ", 0x01acb2adc63a5ccf},
		{"The quick brown fox jumps over the lazy dog", 0xee8c491c6ece8ebd},
	} {
		slow := slowExtend(PolyText, PolyText, []byte(tc.in))
		if got := r.HashString(tc.in); got != slow || got != tc.want {
			t.Errorf("Hash(%q) = %#x, slow reference %#x, pinned %#x", tc.in, got, slow, tc.want)
		}
		if got := r.Hash([]byte(tc.in)); got != slow {
			t.Errorf("Hash([]byte %q) = %#x, want %#x", tc.in, got, slow)
		}
	}
	// x^64 mod p is q: the byte 0x80 (x^56) extended by 8 zero bits, from 0.
	if got := r.ExtendByte(0, 0x80); got != PolyText {
		t.Errorf("0x80 * x^8 = %#x, want q = %#x", got, PolyText)
	}
}

func TestRabinMatchesSlowReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, q := range []uint64{PolyText, PolyShingle, PolySuper} {
		r := NewRabin(q)
		for n := 0; n < 70; n++ {
			s := make([]byte, n)
			for i := range s {
				s[i] = byte(rng.Uint32())
			}
			f := rng.Uint64()
			want := slowExtend(q, f, s)
			if got := r.Extend(f, s); got != want {
				t.Fatalf("q=%#x len %d: Extend = %#x, want %#x", q, n, got, want)
			}
			if got := r.ExtendString(f, string(s)); got != want {
				t.Fatalf("q=%#x len %d: ExtendString = %#x, want %#x", q, n, got, want)
			}
		}
		var buf [8]byte
		u := rng.Uint64()
		for i := range buf {
			buf[i] = byte(u >> (8 * i))
		}
		if got, want := r.ExtendWord(5, u), slowExtend(q, 5, buf[:]); got != want {
			t.Errorf("ExtendWord = %#x, want %#x", got, want)
		}
	}
}

func TestRabinLinearity(t *testing.T) {
	t.Parallel()
	r := NewRabin(PolyText)
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 1; n < 40; n++ {
		a, b := make([]byte, n), make([]byte, n)
		for i := range a {
			a[i], b[i] = byte(rng.Uint32()), byte(rng.Uint32())
		}
		x := make([]byte, n)
		for i := range x {
			x[i] = a[i] ^ b[i]
		}
		// Extend from 0 is linear; Hash adds the leading 1, which cancels in pairs.
		if r.Extend(0, x) != r.Extend(0, a)^r.Extend(0, b) {
			t.Fatalf("len %d: f(a^b) != f(a)^f(b)", n)
		}
		if r.Hash(x) != r.Hash(a)^r.Hash(b)^r.Hash(make([]byte, n)) {
			t.Fatalf("len %d: hash(a^b) != hash(a)^hash(b)^hash(0^n)", n)
		}
	}
}

func TestRabinMul(t *testing.T) {
	t.Parallel()
	r := NewRabin(PolyShingle)
	x := polyOne >> 1
	for _, e := range []uint64{0, 1, 63, 64, 65, 200, 1 << 40} {
		// x^e by repeated squaring equals x^e by shifting bits.
		want := polyOne
		if e < 64 {
			want = polyOne >> e
		} else {
			want = r.Mul(r.Pow(e-64), r.Pow(64))
		}
		if got := r.Pow(e); got != want {
			t.Errorf("Pow(%d) = %#x, want %#x", e, got, want)
		}
	}
	if r.Mul(x, r.Pow(63)) != r.Pow(64) || r.Pow(64) != PolyShingle {
		t.Error("x * x^63 should be x^64 = q")
	}
	// mulTable multiplies like Mul.
	c := r.Pow(64 * 6)
	mt := newMulTable(r, c)
	rng := rand.New(rand.NewPCG(5, 6))
	for range 100 {
		v := rng.Uint64()
		if mt.mul(v) != r.Mul(v, c) {
			t.Fatal("mulTable disagrees with Mul")
		}
	}
}
