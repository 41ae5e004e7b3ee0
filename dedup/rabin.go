package dedup

import "encoding/binary"

// Rabin fingerprints over GF(2), following Manasse's chapter 3.3.
//
// A polynomial of degree < 64 is held in a uint64 with the x^63 coefficient in
// the lowest bit and the x^0 coefficient in the highest bit, as in the book, so
// that a byte XORed into the low end of the state sits at the high-degree end.
// A modulus p = x^64 + q is represented by q alone. The fingerprint of a string
// is the residue of "1 followed by the bits of the string followed by 64 zeros",
// that is Extend(Empty, s) with Empty = x^64 mod p = q.

// Primitive degree-64 polynomials (x^64 + q), found by the random search of
// chapter 3.3 and checked by IsPrimitive in the tests. Each use gets its own
// polynomial: the book warns not to fingerprint fingerprints with the same one.
const (
	// PolyText fingerprints token bytes and the whole normalized stream.
	PolyText uint64 = 0x9fea7dfc79d452d9
	// PolyShingle fingerprints the sequence of w token fingerprints of a shingle.
	PolyShingle uint64 = 0xddc9da3f286d18b1
	// PolySuper fingerprints a group of min-hash samples (a supershingle).
	PolySuper uint64 = 0xda5832bb47bcf19e
)

const polyOne = uint64(1) << 63 // the polynomial 1

// Rabin is a table-driven 64-bit Rabin fingerprinter for one polynomial.
// It is immutable after NewRabin and safe for concurrent use.
type Rabin struct {
	q  uint64
	by byteTable // by[a][n] = n * x^(8a+8) mod p, n in the low byte
}

// NewRabin builds the byte tables for the polynomial x^64 + q.
func NewRabin(q uint64) *Rabin {
	r := &Rabin{q: q}
	f := q // x^64 mod p: the byte 0x80 (x^56) shifted by 8 places
	for a := range r.by {
		for i := 0x80; i != 0; i >>= 1 {
			r.by[a][i] = f
			f = r.MulX(f)
		}
		for i := 2; i < 256; i <<= 1 {
			for j := 1; j < i; j++ {
				r.by[a][i^j] = r.by[a][i] ^ r.by[a][j]
			}
		}
	}
	return r
}

// Empty is the fingerprint of the empty string (x^64 mod p).
func (r *Rabin) Empty() uint64 { return r.q }

// MulX multiplies a by x modulo p.
func (r *Rabin) MulX(a uint64) uint64 {
	return (a >> 1) ^ (r.q & -(a & 1))
}

// Mul multiplies a and b modulo p (bit at a time; for set-up, not hot paths).
func (r *Rabin) Mul(a, b uint64) uint64 {
	var res uint64
	for b != 0 {
		if b&polyOne != 0 {
			res ^= a
		}
		a = r.MulX(a)
		b <<= 1
	}
	return res
}

// Pow returns x^e modulo p.
func (r *Rabin) Pow(e uint64) uint64 {
	res := polyOne
	a := polyOne >> 1 // x
	for e != 0 {
		if e&1 != 0 {
			res = r.Mul(res, a)
		}
		a = r.Mul(a, a)
		e >>= 1
	}
	return res
}

// factors of 2^64-1, from the book.
var primeFactors2to64m1 = [...]uint64{3, 5, 17, 257, 641, 65537, 6700417}

// IsPrimitive reports whether x^64 + q is primitive: the order of x is 2^64-1.
func IsPrimitive(q uint64) bool {
	if q&polyOne == 0 { // no constant term: divisible by x
		return false
	}
	r := &Rabin{q: q}
	if r.Pow(^uint64(0)) != polyOne {
		return false
	}
	for _, f := range primeFactors2to64m1 {
		if r.Pow(^uint64(0)/f) == polyOne {
			return false
		}
	}
	return true
}

// Hash returns the fingerprint of s.
func (r *Rabin) Hash(s []byte) uint64 { return r.Extend(r.q, s) }

// HashString returns the fingerprint of s.
func (r *Rabin) HashString(s string) uint64 { return r.ExtendString(r.q, s) }

// Extend continues fingerprint f with the bytes of s, eight bytes per step.
func (r *Rabin) Extend(f uint64, s []byte) uint64 {
	for len(s) >= 8 {
		f = r.step8(f ^ binary.LittleEndian.Uint64(s))
		s = s[8:]
	}
	if len(s) > 0 {
		var w uint64
		for i, c := range s {
			w |= uint64(c) << (8 * i)
		}
		f = r.stepN(f^w, len(s))
	}
	return f
}

// ExtendString is Extend for a string, without copying it.
func (r *Rabin) ExtendString(f uint64, s string) uint64 {
	for len(s) >= 8 {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		f = r.step8(f ^ w)
		s = s[8:]
	}
	if len(s) > 0 {
		var w uint64
		for i := 0; i < len(s); i++ {
			w |= uint64(s[i]) << (8 * i)
		}
		f = r.stepN(f^w, len(s))
	}
	return f
}

// ExtendWord continues f with the 8 bytes of u (a fingerprint of fingerprints).
func (r *Rabin) ExtendWord(f, u uint64) uint64 { return r.step8(f ^ u) }

// ExtendByte continues f with one byte.
func (r *Rabin) ExtendByte(f uint64, c byte) uint64 {
	f ^= uint64(c)
	return (f >> 8) ^ r.by[0][f&0xff]
}

// step8 multiplies f by x^64 (eight bytes shifted out), eight independent lookups.
// (Written so that it stays within the compiler's inlining budget: a call
// per step cost a fifth of Sign.)
func (r *Rabin) step8(f uint64) uint64 { return r.by.step8(f) }

// byteTable is Rabin's lookup table: by[a][n] = n * x^(8a+8) mod p.
type byteTable [8][256]uint64

func (t *byteTable) step8(f uint64) uint64 {
	return t[7][uint8(f)] ^ t[6][uint8(f>>8)] ^ t[5][uint8(f>>16)] ^ t[4][uint8(f>>24)] ^
		t[3][uint8(f>>32)] ^ t[2][uint8(f>>40)] ^ t[1][uint8(f>>48)] ^ t[0][f>>56]
}

// stepN multiplies f by x^(8n) for 1 <= n <= 8: the n low bytes shifted to
// the top go through step8 (the zero bytes below them look up zeros), so the
// cost is eight independent lookups and no branch on n.
func (r *Rabin) stepN(f uint64, n int) uint64 {
	s := 8 * uint(n&15)
	return f>>s ^ r.step8(f<<(64-s))
}

// mulTable multiplies by a fixed constant with eight lookups.
type mulTable [8][256]uint64

// newMulTable builds the table for multiplication by c modulo r's polynomial.
func newMulTable(r *Rabin, c uint64) *mulTable {
	t := new(mulTable)
	for k := range t {
		for b := 0; b < 8; b++ {
			t[k][1<<b] = r.Mul(uint64(1)<<(8*k+b), c)
		}
		for i := 2; i < 256; i <<= 1 {
			for j := 1; j < i; j++ {
				t[k][i^j] = t[k][i] ^ t[k][j]
			}
		}
	}
	return t
}

func (t *mulTable) mul(v uint64) uint64 {
	return t[0][uint8(v)] ^ t[1][uint8(v>>8)] ^ t[2][uint8(v>>16)] ^ t[3][uint8(v>>24)] ^
		t[4][uint8(v>>32)] ^ t[5][uint8(v>>40)] ^ t[6][uint8(v>>48)] ^ t[7][v>>56]
}
