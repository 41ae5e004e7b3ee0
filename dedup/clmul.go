package dedup

import (
	"math/big"
	"math/bits"
)

// Carry-less multiplication (PCLMULQDQ) of the book's Rabin fingerprints.
//
// In the book's bit order (bit i of a uint64 is the coefficient of x^(63-i)),
// the 128-bit carry-less product r of a and b has bit k the coefficient of
// x^(126-k). Shifted left by one place, its low word is the high half H of the
// product a*b = H*x^64 + L and its high word the low half L, each again in the
// book's order. H*x^64 mod p is found by Barrett's method with mu, the book-
// order form of floor(x^128/p) - x^64: T = H + floor(H*mu/x^64), and the
// remainder is the low half of T*q (p = x^64 + q). Two more products, no
// table and no loop: this is what the vector shingle kernel computes, and
// clmulReduce is its portable statement (tested against Rabin.Mul).

// barrettMu returns the book-order form of floor(x^128/p) - x^64 for
// p = x^64 + q.
func barrettMu(q uint64) uint64 {
	p := new(big.Int).SetUint64(bits.Reverse64(q)) // q in the usual order: bit i is x^i
	p.SetBit(p, 64, 1)
	rem := new(big.Int).Lsh(big.NewInt(1), 128)
	quo := new(big.Int)
	t := new(big.Int)
	for d := 128; d >= 64; d-- {
		if rem.Bit(d) == 1 {
			quo.SetBit(quo, d-64, 1)
			rem.Xor(rem, t.Lsh(p, uint(d-64)))
		}
	}
	quo.SetBit(quo, 64, 0)
	return bits.Reverse64(quo.Uint64())
}

// clmul is the 128-bit carry-less product of a and b (PCLMULQDQ), a bit at a
// time: the reference for the vector kernel, not a hot path.
func clmul(a, b uint64) (lo, hi uint64) {
	for i := 0; i < 64; i++ {
		if b>>i&1 != 0 {
			lo ^= a << i
			if i > 0 {
				hi ^= a >> (64 - i)
			}
		}
	}
	return lo, hi
}

// clmulReduce returns the Rabin residue (book order, modulo x^64 + q, mu =
// barrettMu(q)) of the polynomial whose carry-less product words are lo, hi
// (any XOR of clmul results of book-order operands).
func clmulReduce(lo, hi, q, mu uint64) uint64 {
	h := lo << 1
	l := hi<<1 | lo>>63
	r2, _ := clmul(h, mu)
	t := h ^ r2<<1
	r3lo, r3hi := clmul(t, q)
	return l ^ (r3hi<<1 | r3lo>>63)
}
