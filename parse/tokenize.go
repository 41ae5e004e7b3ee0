package parse

import (
	"encoding/binary"
	"math/bits"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Byte classes for the ASCII fast path of Tokenize.
const (
	clsDelim    = iota // ASCII byte that is not a letter or digit
	clsLower           // a-z, 0-9: copied as is
	clsUpper           // A-Z: needs lower-casing
	clsNonASCII        // first or continuation byte of a multi-byte UTF-8 sequence
)

// byteClass is a read-only lookup table, computed once; it holds no mutable state.
var byteClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c >= 0x80:
			t[c] = clsNonASCII
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			t[c] = clsLower
		case c >= 'A' && c <= 'Z':
			t[c] = clsUpper
		default:
			t[c] = clsDelim
		}
	}
	return t
}()

// Tokenize appends to dst the normalized tokens of text and returns the extended slice.
//
// Normalization is Unicode NFKC followed by full case folding, so "Straße" and "STRASSE"
// both give "strasse" and the ligature "ﬁ" gives "fi". Every maximal run of characters
// that are not letters, marks or decimal digits is one delimiter; empty tokens are never
// produced.
//
// ASCII text takes a fast path: tokens that are already lower case are substrings of
// text, and the others are lower-cased into a single backing buffer allocated at most
// once per call. Non-ASCII stretches already in NFKC, case-folded form (lower-case
// accented words, CJK) are also kept as substrings of text without allocating. Only the stretches of text around non-ASCII characters go through
// normalization, so mostly-ASCII text stays fast.
func Tokenize(dst []string, text string) []string {
	return tokenize(dst, text, 0)
}

// tokenizer holds the per-call state of tokenize; it lives on the caller's stack.
type tokenizer struct {
	dst   []string
	limit int // stop once len(dst) reaches limit; 0 means no limit
	fold  cases.Caser
	init  bool // fold is initialized

	// Tokens to lower-case (see upper): their indices in dst.
	uppers     *[]int
	upperBytes int
}

// upperPool recycles the tokenizers' lists of tokens to lower-case.
var upperPool = sync.Pool{New: func() any { return new([]int) }}

// tokenize is Tokenize with an optional cap on len(dst) (limit 0 means no cap).
func tokenize(dst []string, text string, limit int) []string {
	t := tokenizer{dst: dst, limit: limit}
	t.run(text)
	t.finish(text)
	return t.dst
}

// full reports whether the token limit has been reached.
func (t *tokenizer) full() bool {
	return t.limit > 0 && len(t.dst) >= t.limit
}

func (t *tokenizer) run(text string) {
	n := len(text)
	limit := t.limit
	if limit <= 0 {
		limit = int(^uint(0) >> 1)
	}
	i := 0
	for i < n {
		// Classify the 64 bytes from i at once and take the runs of letters
		// and digits from the masks: a bit at the first and one at the last
		// byte of every run, consumed lowest first, so that no step waits on
		// the one before (no per-byte branch, no chain through the run ends).
		tok, up, hi := window(text, i)
		starts := tok &^ (tok << 1)
		ends := tok &^ (tok >> 1)
		h := 65 // the first non-ASCII byte of the window, if any (past every run end if none)
		if hi != 0 {
			h = bits.TrailingZeros64(hi)
		}
		for starts != 0 {
			if len(t.dst) >= limit {
				return
			}
			s := bits.TrailingZeros64(starts)
			e := bits.TrailingZeros64(ends) + 1
			if e >= h {
				if e == h {
					// The run touches a non-ASCII character: normalize the
					// whole stretch from the run start.
					i = t.slowFrom(text, i+s, i+h)
					goto reload
				}
				break // the run starts after the non-ASCII byte
			}
			if e == 64 {
				if s == 0 {
					// A run of 64 or more letters and digits: byte at a time.
					i = t.step(text, i)
				} else {
					i += s // the run may go on: restart the window at it
				}
				goto reload
			}
			if up == 0 || up&(^uint64(0)<<s)&(1<<e-1) == 0 {
				t.dst = append(t.dst, text[i+s:i+e])
			} else {
				t.upper(text, i+s, e-s)
			}
			starts &= starts - 1
			ends &= ends - 1
		}
		if hi != 0 {
			if len(t.dst) >= limit {
				return
			}
			// A non-ASCII character starts a run: normalize from it (or the
			// delimiter before it, which could compose with a following
			// combining mark) up to the next safe boundary.
			rs := i + h
			if rs > 0 && byteClass[text[rs-1]] == clsDelim {
				rs--
			}
			i = t.slowFrom(text, rs, i+h)
			continue
		}
		i += 64
	reload:
	}
}

// slowFrom normalizes the stretch of text that starts at rs and touches the
// non-ASCII byte at j, up to the next safe boundary, and returns that boundary.
func (t *tokenizer) slowFrom(text string, rs, j int) int {
	re := slowEnd(text, j)
	t.slow(text[rs:re])
	return re
}

// step takes the run of ASCII letters and digits that starts at i a byte at a
// time (the path for runs longer than a window; run calls it only at a run's
// start) and returns where it ended.
func (t *tokenizer) step(text string, i int) int {
	start := i
	upper := false
	for ; i < len(text); i++ {
		c := byteClass[text[i]]
		if c == clsDelim {
			break
		}
		if c == clsNonASCII {
			return t.slowFrom(text, start, i)
		}
		upper = upper || c == clsUpper
	}
	if !upper {
		t.dst = append(t.dst, text[start:i])
	} else {
		t.upper(text, start, i-start)
	}
	return i
}

// SWAR constants: a byte in every lane.
const (
	lanes01 = 0x0101010101010101
	lanes7f = 0x7f7f7f7f7f7f7f7f
	lanes80 = 0x8080808080808080
	lanes20 = 0x2020202020202020
	// gather moves bit 8k (k = 0..7) to bit 56+k.
	gather = 0x0102040810204080
)

// windowSWAR is the portable window: eight bytes per word, each class found
// with the lane arithmetic below and gathered to one bit per byte.
func windowSWAR(text string, i int) (tok, up, hi uint64) {
	var pad [64]byte
	p := text[i:]
	if len(p) < 64 {
		copy(pad[:], p)
		p = unsafe.String(&pad[0], 64)
	}
	for k := 0; k < 64; k += 8 {
		x := uint64(p[k]) | uint64(p[k+1])<<8 | uint64(p[k+2])<<16 | uint64(p[k+3])<<24 |
			uint64(p[k+4])<<32 | uint64(p[k+5])<<40 | uint64(p[k+6])<<48 | uint64(p[k+7])<<56
		h := x & lanes80
		y := x & lanes7f
		// y + (0x80-c) has the lane's top bit set exactly when y >= c (y < 0x80).
		z := y | lanes20 // upper-case letters to lower case (and some punctuation)
		letter := (z + (0x80-'a')*lanes01) &^ (z + (0x80-'z'-1)*lanes01)
		digit := (y + (0x80-'0')*lanes01) &^ (y + (0x80-'9'-1)*lanes01)
		tk := (letter | digit) & lanes80 &^ h
		u := tk & letter &^ (y << 2) // bit 5 (0x20) clear: upper case
		tok |= ((tk >> 7) * gather >> 56) << k
		up |= (((u & lanes80) >> 7) * gather >> 56) << k
		hi |= ((h >> 7) * gather >> 56) << k
	}
	return tok, up, hi
}

// slowEnd returns the end of the stretch that starts with the non-ASCII byte at i: the
// first ASCII delimiter that is followed by an ASCII byte or by the end of text. Every
// ASCII character starts a new normalization segment (none composes with what precedes
// it), so cutting there keeps NFKC of the pieces equal to NFKC of the whole.
func slowEnd(text string, i int) int {
	n := len(text)
	for j := i; j < n; j++ {
		if byteClass[text[j]] != clsDelim {
			continue
		}
		if j+1 == n || text[j+1] < utf8.RuneSelf {
			return j
		}
	}
	return n
}

// upper appends the token text[o:o+n], a run of ASCII letters and digits
// with an upper-case letter, to be lower-cased by finish: all of them are
// written at the end into one buffer of exactly their size, so that the
// garbage stays proportional to what is lower-cased and nothing scans ahead
// to size it.
func (t *tokenizer) upper(text string, o, n int) {
	if t.uppers == nil {
		t.uppers = upperPool.Get().(*[]int)
		*t.uppers = (*t.uppers)[:0]
	}
	*t.uppers = append(*t.uppers, len(t.dst))
	t.upperBytes += n
	t.dst = append(t.dst, text[o:o+n])
}

// finish lower-cases the tokens upper appended, into one new buffer. They
// hold only ASCII letters and digits, so setting the case bit (0x20) of
// every byte lower-cases them (digits have it already), eight bytes at a
// time from text. A word written may run up to 7 bytes past its token, into
// room that only later tokens (or the 8 spare bytes at the end) use: tokens
// are written in order.
func (t *tokenizer) finish(text string) {
	if t.uppers == nil {
		return
	}
	buf := make([]byte, t.upperBytes+8)
	off := 0
	base := uintptr(unsafe.Pointer(unsafe.StringData(text)))
	for _, k := range *t.uppers {
		// dst[k] is still text[o:o+n], as upper appended it.
		o := int(uintptr(unsafe.Pointer(unsafe.StringData(t.dst[k]))) - base)
		n := len(t.dst[k])
		j := 0
		for ; j < n && o+j+8 <= len(text); j += 8 {
			q := text[o+j : o+j+8]
			w := uint64(q[0]) | uint64(q[1])<<8 | uint64(q[2])<<16 | uint64(q[3])<<24 |
				uint64(q[4])<<32 | uint64(q[5])<<40 | uint64(q[6])<<48 | uint64(q[7])<<56
			binary.LittleEndian.PutUint64(buf[off+j:], w|lanes20)
		}
		for ; j < n; j++ {
			buf[off+j] = text[o+j] | 0x20
		}
		b := buf[off : off+n : off+n]
		// The bytes of b are final once later tokens are written past them.
		t.dst[k] = unsafe.String(unsafe.SliceData(b), n)
		off += n
	}
	upperPool.Put(t.uppers)
	t.uppers = nil
}

// slowNormalize normalizes s (NFKC, then full case folding) and appends its tokens. It is
// the reference for slow (tokenize_unicode.go), which calls it for every stretch that
// needs normalization.
func (t *tokenizer) slowNormalize(s string) {
	if !t.init {
		t.fold = cases.Fold()
		t.init = true
	}
	// Most non-ASCII text (lower-case words in NFKC form, CJK) is unchanged by both
	// transforms: check that without allocating and keep substrings of the input.
	if norm.NFKC.QuickSpanString(s) != len(s) {
		s = t.fold.String(norm.NFKC.String(s))
	} else if t.fold.Reset(); spanAll(t.fold, s) {
		// s is already normalized and folded.
	} else {
		s = t.fold.String(s)
	}
	start := -1
	for k, r := range s {
		if isTokenRune(r) {
			if start < 0 {
				start = k
			}
			continue
		}
		if start >= 0 {
			if t.full() {
				return
			}
			t.dst = append(t.dst, s[start:k])
			start = -1
		}
	}
	if start >= 0 && !t.full() {
		t.dst = append(t.dst, s[start:])
	}
}

// spanAll reports whether the case folder leaves s unchanged. The byte view of s is only
// read by Span, never written.
func spanAll(fold cases.Caser, s string) bool {
	if s == "" {
		return true
	}
	n, err := fold.Span(unsafe.Slice(unsafe.StringData(s), len(s)), true)
	return err == nil && n == len(s)
}

// isTokenRune reports whether r belongs inside a token: a letter, a mark or a decimal digit.
func isTokenRune(r rune) bool {
	if r < utf8.RuneSelf {
		return byteClass[r] != clsDelim
	}
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r)
}
