package dedup

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"sync"
)

// Separator is the byte that follows every token in the normalized stream:
// the stream of tokens t1..tn is the byte string "t1 t2 ... tn ".
const Separator = ' '

// Signature is everything the detector keeps of one page.
type Signature struct {
	Exact   uint64   // Rabin fingerprint (PolyText) of the whole normalized token stream
	Words   int      // number of tokens (= number of looped shingles)
	Sketch  []uint64 // min-hash samples (len Samples)
	Super   []uint64 // supershingles (len K); 16-bit values zero-extended for bing
	Simhash uint64   // 64-bit Charikar simhash over the shingles
	// Margins holds |W_j|/sqrt(n) of every simhash bit j in 1/32 units (capped at
	// 255): small margins are volatile bits, the order PSM flips them in.
	Margins [64]uint8
}

// signer computes signatures. It is immutable after newSigner.
type signer struct {
	w, samples int
	k, s, bits int
	tf         bool

	text, shingle, super *Rabin
	e0                   uint64    // PolyShingle Empty
	out                  *mulTable // multiplication by X^(w+1), X = x^64 (slides a token out)
	slideConst           uint64    // e0*X^(w+1) ^ e0*X^w

	pow []uint64   // pow[j] = X^(w-j) (PolyShingle): a shingle is e0*X^w + sum u[i+j]*pow[j]
	clk [3]uint64  // the vector shingle kernel's q, mu (barrettMu) and e0*X^w
	tk  [10]uint64 // the vector token kernel's x^(8l) (l = 1..7; x^64 at 0), q and mu (PolyText)
	fk  [18]uint64 // the vector stream kernel's constants (see foldAVX512)

	prefSeed, prefMul []uint64 // per 8-sample word: prefix hash (x ^ seed) * mul
	tailSeed          []uint64 // per sample: tie-break hash mix64(x ^ seed)

	pool sync.Pool // *signBuf

	kern *kernels // the inner loops: assembly where the CPU has it
}

type signBuf struct {
	tok    []uint64 // per-token fingerprints, looped: len n+w-1
	lens   []uint8  // per-token byte counts for the vector token kernel
	stream []byte   // the normalized stream, for the vector stream kernel
	xs     []uint64 // mixed shingle fingerprints, one per shingle
	uniq   []uint64 // distinct shingles
	table  []uint64 // open addressing set for uniq
}

func newSigner(o Options, k *kernels) *signer {
	f := o.Filter.Resolved()
	sg := &signer{
		kern: k,
		w:    o.ShingleWords, samples: o.Samples,
		k: f.K, s: f.S, bits: f.Bits,
		tf:      o.SimhashWeight == WeightTF,
		text:    NewRabin(PolyText),
		shingle: NewRabin(PolyShingle),
		super:   NewRabin(PolySuper),
	}
	sh := sg.shingle
	sg.e0 = sh.Empty()
	xw := sh.Pow(64 * uint64(sg.w))
	xw1 := sh.Pow(64 * uint64(sg.w+1))
	sg.out = newMulTable(sh, xw1)
	sg.slideConst = sh.Mul(sg.e0, xw1) ^ sh.Mul(sg.e0, xw)
	sg.pow = make([]uint64, sg.w)
	for j := range sg.pow {
		sg.pow[j] = sh.Pow(64 * uint64(sg.w-j))
	}
	sg.clk = [3]uint64{PolyShingle, barrettMu(PolyShingle), sh.Mul(sg.e0, xw)}
	for l := range 8 {
		sg.tk[l] = sg.text.Pow(8 * uint64(l))
	}
	sg.tk[0] = sg.text.Pow(64)
	sg.tk[8], sg.tk[9] = PolyText, barrettMu(PolyText)
	for i := range 4 {
		sg.fk[2*i], sg.fk[2*i+1] = sg.text.Pow(575), sg.text.Pow(511)
		sg.fk[8+2*i], sg.fk[9+2*i] = sg.text.Pow(64*uint64(8-2*i)), sg.text.Pow(64*uint64(7-2*i))
	}
	sg.fk[16], sg.fk[17] = PolyText, barrettMu(PolyText)

	// Fixed pseudo-random constants: a splitmix64 stream from a fixed seed.
	state := uint64(0x6a09e667f3bcc908)
	next := func() uint64 { state += 0x9e3779b97f4a7c15; return mix64(state) }
	words := (sg.samples + 7) / 8
	sg.prefSeed = make([]uint64, words)
	sg.prefMul = make([]uint64, words)
	for i := range words {
		sg.prefSeed[i] = next()
		sg.prefMul[i] = next() | 1
	}
	sg.tailSeed = make([]uint64, sg.samples)
	for i := range sg.tailSeed {
		sg.tailSeed[i] = next()
	}
	sg.pool.New = func() any { return new(signBuf) }
	return sg
}

// sign computes the signature of tokens.
func (sg *signer) sign(tokens []string) *Signature {
	sig := &Signature{Sketch: make([]uint64, sg.samples), Super: make([]uint64, sg.k)}
	n := len(tokens)
	sig.Words = n
	if n == 0 {
		sig.Exact = sg.text.Empty()
		return sig
	}
	b := sg.pool.Get().(*signBuf)
	defer sg.pool.Put(b)

	b.tok = grow(b.tok, n+sg.w-1)
	b.xs = grow(b.xs, n)
	b.lens = grow(b.lens, n)
	sig.Exact = sg.fingerprint(tokens, b.tok, b.xs, b.lens, &b.stream)
	for i, x := range b.xs {
		b.xs[i] = mix64(x)
	}
	b.uniq = b.distinct(b.xs)

	sg.minhash(b.uniq, sig.Sketch)
	sg.supershingles(sig.Sketch, sig.Super)
	if sg.tf {
		sig.Simhash = simhash(b.xs, &sig.Margins)
	} else {
		sig.Simhash = simhash(b.uniq, &sig.Margins)
	}
	return sig
}

// fingerprint computes the token fingerprints into u (looped: len(tokens)+w-1
// entries) and the shingle fingerprints into out (len(tokens)), and returns
// the fingerprint of the whole stream. It is tokens followed by shingles, in
// one pass where the page is long enough: the two Rabin chains (the stream's
// and the sliding shingle's) then overlap instead of running one after the
// other.
func (sg *signer) fingerprint(tokens []string, u, out []uint64, lens []uint8, stream *[]byte) uint64 {
	n, w := len(tokens), sg.w
	if sg.kern.vectorShingles() {
		// CPUs with the vector kernels: the token pass, then the shingles,
		// both mostly carry-less multiplications.
		exact := sg.tokensVec(tokens, u, lens, stream)
		for i := n; i < n+w-1; i++ {
			u[i] = u[(i-n)%n]
		}
		sg.shingles(u, out)
		return exact
	}
	if n < 2*w {
		exact := sg.tokens(tokens, u)
		for i := n; i < n+w-1; i++ {
			u[i] = u[(i-n)%n]
		}
		sg.shingles(u, out)
		return exact
	}
	// The first w tokens, and the first shingle.
	exact := sg.tokens(tokens[:w], u)
	sh := sg.shingle
	f := sg.e0
	for j := 0; j < w; j++ {
		f = sh.step8(f ^ u[j])
	}
	out[0] = f
	r := sg.text
	// The tables, used directly so that their eight-lookup steps inline.
	tt, st, mt := &r.by, &sh.by, sg.out
	for i := w; i < n; i++ {
		t := tokens[i]
		var fi uint64
		l := len(t) + 1
		if l <= 8 {
			// Token and stream both advance by l bytes (stepN, written out).
			wd := loadShort(t) | uint64(Separator)<<(8*len(t))
			s := 8 * uint(l)
			fi = wd>>s ^ tt.step8(wd<<(64-s))
			exact = exact>>s ^ tt.step8(exact<<(64-s)) ^ fi
		} else {
			fi = r.ExtendString(0, t)
			fi = r.stepN(fi^uint64(Separator), 1)
			for ; l >= 8; l -= 8 {
				exact = r.step8(exact)
			}
			if l > 0 {
				exact = r.stepN(exact, l)
			}
			exact ^= fi
		}
		u[i] = fi
		// Shingle i-w+1 slides token i in and token i-w out.
		f = st.step8(f^fi) ^ mt.mul(u[i-w]) ^ sg.slideConst
		out[i-w+1] = f
	}
	for i := n; i < n+w-1; i++ {
		u[i] = u[i-n]
	}
	for j := n - w + 1; j < n; j++ {
		f = sh.step8(f^u[j+w-1]) ^ sg.out.mul(u[j-1]) ^ sg.slideConst
		out[j] = f
	}
	return exact
}

// tokens fills u with the fingerprint (from 0, PolyText) of every token followed
// by the separator, and returns the fingerprint of the whole stream.
func (sg *signer) tokens(tokens []string, u []uint64) uint64 {
	r := sg.text
	exact := r.Empty()
	for i, t := range tokens {
		var f uint64
		s := t
		for len(s) >= 8 {
			w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
				uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
			f = r.step8(f ^ w)
			s = s[8:]
		}
		w := loadShort(s) | uint64(Separator)<<(8*len(s))
		f = r.stepN(f^w, len(s)+1)
		u[i] = f
		// exact = exact * x^(8*len) ^ f: Extend is linear in the state.
		l := len(t) + 1
		for l >= 8 {
			exact = r.step8(exact)
			l -= 8
		}
		if l > 0 {
			exact = r.stepN(exact, l)
		}
		exact ^= f
	}
	return exact
}

// tokensVec is tokens for the vector kernels: tokenWords copies the stream
// and takes each token's last word (with the separator), the table code the
// fingerprint of long tokens' whole 8-byte words, the token kernel moves each
// token's last word into place, eight tokens at a time, and the stream's
// fingerprint comes from the stream kernel over the copy. lens has room for a
// byte per token.
func (sg *signer) tokensVec(tokens []string, u []uint64, lens []uint8, stream *[]byte) uint64 {
	r := sg.text
	lens = lens[:len(tokens)]
	u = u[:len(tokens)]
	buf := (*stream)[:cap(*stream)]
	pos := 0
	for i := 0; i < len(tokens); {
		done, end := sg.kern.tokenWords(tokens[i:], u[i:], lens[i:], buf, pos)
		i, pos = i+done, end
		if i < len(tokens) {
			buf = slices.Grow(buf[:pos], max(len(buf), len(tokens[i])+9, 4096))
			buf = buf[:cap(buf)]
		}
	}
	*stream = buf
	for i, t := range tokens {
		if len(t) >= 8 {
			u[i] ^= r.ExtendString(0, t[:len(t)&^7]) // the whole words
		}
	}
	for i := sg.kern.tokens(sg, u, lens); i < len(u); i++ {
		u[i] = r.stepN(u[i], int(lens[i]-1)&7+1)
	}
	// The stream's fingerprint, Extend(Empty, stream): Empty folded into the
	// first word for the kernel.
	if pos < 64 {
		return r.Extend(r.Empty(), buf[:pos])
	}
	binary.LittleEndian.PutUint64(buf, binary.LittleEndian.Uint64(buf)^r.Empty())
	exact, done := sg.kern.fold(sg, buf[:pos])
	return r.Extend(exact, buf[done:pos])
}

// shingles writes into out the PolyShingle fingerprint of each window of w
// token fingerprints, u being looped (len(out)+w-1 entries). It slides, as in
// the book: S(i+1) = (S(i) ^ u(i+w))*X ^ (u(i) ^ e0)*X^(w+1) ^ e0*X^w.
func (sg *signer) shingles(u, out []uint64) {
	sh := sg.shingle
	i := 0
	if sg.kern.vectorShingles() {
		i = sg.kern.shingles(sg, u, out)
	}
	var f uint64
	if i > 0 {
		f = out[i-1]
	} else {
		f = sg.e0
		for j := 0; j < sg.w; j++ {
			f = sh.step8(f ^ u[j])
		}
		out[0] = f
		i = 1
	}
	for ; i < len(out); i++ {
		f = sh.step8(f^u[i+sg.w-1]) ^ sg.out.mul(u[i-1]) ^ sg.slideConst
		out[i] = f
	}
}

// distinct returns the distinct values of xs (which are mix64 outputs).
func (b *signBuf) distinct(xs []uint64) []uint64 {
	size := 16
	for size < 2*len(xs) {
		size <<= 1
	}
	b.table = grow(b.table, size)
	clear(b.table)
	shift := uint(64 - bits.TrailingZeros(uint(size)))
	mask := uint64(size - 1)
	out := b.uniq[:0]
	hasZero := false
	for _, x := range xs {
		if x == 0 {
			if !hasZero {
				hasZero = true
				out = append(out, 0)
			}
			continue
		}
		i := (x * 0x9e3779b97f4a7c15) >> shift
		for {
			v := b.table[i]
			if v == x {
				break
			}
			if v == 0 {
				b.table[i] = x
				out = append(out, x)
				break
			}
			i = (i + 1) & mask
		}
	}
	return out
}

const (
	laneHigh = 0x8080808080808080
	laneLow  = 0x7f7f7f7f7f7f7f7f
)

// minhash writes into out, for each of the len(out) min-wise orders, the
// feature that is smallest. Each order compares an 8-bit prefix first and a
// 64-bit one-to-one tail hash only on ties, AltaVista's scheme (book, 3.2):
// eight prefixes come from one multiplication and are compared at once, lane
// by lane, so a long page costs about one multiplication per eight samples per
// feature. Once every lane's minimum prefix is below 128, a cheaper test (does
// any byte of p fall below the largest minimum plus one?) rejects most
// features before the exact lane-by-lane comparison.
func (sg *signer) minhash(xs []uint64, out []uint64) {
	ns := len(out)
	for k := 0; k*8 < ns; k++ {
		seed, mul := sg.prefSeed[k], sg.prefMul[k]
		lanes := min(8, ns-8*k)
		valid := uint64(laneHigh)
		if lanes < 8 {
			valid &= (uint64(1) << (8 * lanes)) - 1
		}
		mins := ^uint64(0)
		var has, tailOK uint8
		var cand, tail [8]uint64
		// below is (T+1) in every byte, T the largest valid minimum; 0 while T >= 128.
		below := uint64(0)
		for _, x := range xs {
			p := (x ^ seed) * mul
			p ^= p >> 32
			if below != 0 && (p-below)&^p&laneHigh == 0 {
				continue // every byte of p exceeds every minimum
			}
			le := ((^p & mins) | (^(p ^ mins) & ((mins | laneHigh) - (p & laneLow)))) & valid
			if le == 0 {
				continue
			}
			changed := false
			for le != 0 {
				lane := uint(bits.TrailingZeros64(le)) >> 3
				le &= le - 1
				sh := lane * 8
				pb, mb := (p>>sh)&0xff, (mins>>sh)&0xff
				bit := uint8(1) << lane
				if has&bit == 0 || pb < mb {
					mins = mins&^(0xff<<sh) | pb<<sh
					cand[lane] = x
					has |= bit
					tailOK &^= bit
					changed = true
					continue
				}
				ts := sg.tailSeed[8*k+int(lane)]
				if tailOK&bit == 0 {
					tail[lane] = mix64(cand[lane] ^ ts)
					tailOK |= bit
				}
				if t := mix64(x ^ ts); t < tail[lane] {
					cand[lane], tail[lane] = x, t
				}
			}
			if changed {
				below = laneThreshold(mins, lanes)
			}
		}
		copy(out[8*k:8*k+lanes], cand[:lanes])
	}
}

// laneThreshold returns T+1 in every byte, T the largest of the first lanes
// bytes of mins, or 0 when T >= 128 (the byte-less-than test needs T+1 <= 128).
func laneThreshold(mins uint64, lanes int) uint64 {
	t := uint64(0)
	for i := range lanes {
		t = max(t, (mins>>(8*i))&0xff)
	}
	if t >= 128 {
		return 0
	}
	return (t + 1) * 0x0101010101010101
}

// supershingles fingerprints (PolySuper) each group of s consecutive samples,
// prefixed by the group number, keeping the configured number of bits.
func (sg *signer) supershingles(sketch, super []uint64) {
	r := sg.super
	for i := range super {
		f := r.ExtendWord(r.Empty(), uint64(i))
		for _, v := range sketch[i*sg.s : (i+1)*sg.s] {
			f = r.step8(f ^ v)
		}
		if sg.bits < 64 {
			f &= (uint64(1) << sg.bits) - 1
		}
		super[i] = f
	}
}

// spread[b] has byte lane j set to bit j of b.
var spread = func() (t [256]uint64) {
	for b := range t {
		for j := 0; j < 8; j++ {
			if b&(1<<j) != 0 {
				t[b] |= 1 << (8 * j)
			}
		}
	}
	return t
}()

// simhash is Charikar's simhash with unit weights over the hashed features xs:
// bit j is set when W_j = #(features with bit j) - #(without) >= 0. Counting
// uses one table lookup per feature byte into eight byte-wide counters.
func simhash(xs []uint64, margins *[64]uint8) uint64 {
	var cnt [64]int32
	for start := 0; start < len(xs); start += 255 {
		var acc [8]uint64
		for _, x := range xs[start:min(start+255, len(xs))] {
			acc[0] += spread[x&0xff]
			acc[1] += spread[(x>>8)&0xff]
			acc[2] += spread[(x>>16)&0xff]
			acc[3] += spread[(x>>24)&0xff]
			acc[4] += spread[(x>>32)&0xff]
			acc[5] += spread[(x>>40)&0xff]
			acc[6] += spread[(x>>48)&0xff]
			acc[7] += spread[x>>56]
		}
		for k, a := range acc {
			for lane := 0; lane < 8; lane++ {
				cnt[8*k+lane] += int32((a >> (8 * lane)) & 0xff)
			}
		}
	}
	n := int32(len(xs))
	scale := 32 / math.Sqrt(float64(max(n, 1)))
	var h uint64
	for j, c := range cnt {
		w := 2*c - n
		if w >= 0 {
			h |= 1 << j
		} else {
			w = -w
		}
		margins[j] = uint8(min(255, math.Round(float64(w)*scale)))
	}
	return h
}

// loadShort packs s (fewer than 8 bytes) little-endian into a word, with
// two overlapping loads instead of a loop over the bytes (the overlapping
// bytes are equal, so OR-ing the halves is exact).
func loadShort(s string) uint64 {
	switch n := len(s); {
	case n >= 4:
		lo := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
		t := s[n-4:]
		hi := uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24
		return lo | hi<<(8*(n-4))
	case n >= 2:
		lo := uint64(s[0]) | uint64(s[1])<<8
		hi := uint64(s[n-2]) | uint64(s[n-1])<<8
		return lo | hi<<(8*(n-2))
	case n == 1:
		return uint64(s[0])
	}
	return 0
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}
