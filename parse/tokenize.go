package parse

import (
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
	limit int    // stop once len(dst) reaches limit; 0 means no limit
	buf   []byte // lower-cased ASCII tokens, append-only
	fold  cases.Caser
	init  bool // fold is initialized
}

// tokenize is Tokenize with an optional cap on len(dst) (limit 0 means no cap).
func tokenize(dst []string, text string, limit int) []string {
	t := tokenizer{dst: dst, limit: limit}
	t.run(text)
	return t.dst
}

// full reports whether the token limit has been reached.
func (t *tokenizer) full() bool {
	return t.limit > 0 && len(t.dst) >= t.limit
}

func (t *tokenizer) run(text string) {
	n := len(text)
	i := 0
	for i < n {
		if t.full() {
			return
		}
		c := byteClass[text[i]]
		if c == clsDelim {
			i++
			continue
		}
		start := i
		upper := false
		for i < n {
			c = byteClass[text[i]]
			if c == clsDelim || c == clsNonASCII {
				break
			}
			if c == clsUpper {
				upper = true
			}
			i++
		}
		if i < n && c == clsNonASCII {
			// The run touches a non-ASCII character: normalize the whole stretch
			// from the run start (or the delimiter before it, which could compose
			// with a following combining mark) up to the next safe boundary.
			rs := start
			if rs == i && rs > 0 && byteClass[text[rs-1]] == clsDelim {
				rs--
			}
			re := slowEnd(text, i)
			t.slow(text[rs:re])
			i = re
			continue
		}
		if !upper {
			t.dst = append(t.dst, text[start:i])
			continue
		}
		if t.buf == nil {
			t.buf = make([]byte, 0, upperRunBytes(text[start:]))
		}
		t.dst = append(t.dst, t.lower(text[start:i]))
	}
}

// upperRunBytes returns the total length of the maximal ASCII letter-or-digit runs of s
// that contain an upper-case letter: the room needed to lower-case them. Sizing the
// buffer exactly keeps garbage (and so GC work) proportional to what is lower-cased.
func upperRunBytes(s string) int {
	total, start, upper := 0, 0, false
	for i := 0; i < len(s); i++ {
		switch byteClass[s[i]] {
		case clsUpper:
			upper = true
		case clsLower:
		default:
			if upper {
				total += i - start
				upper = false
			}
			start = i + 1
		}
	}
	if upper {
		total += len(s) - start
	}
	return total
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

// lower returns s lower-cased, stored in the shared backing buffer. The buffer is
// allocated once with room for every token that needs lower-casing (see upperRunBytes).
// Bytes are only ever appended past len(t.buf), never rewritten, so earlier tokens stay
// valid even if append had to move the buffer.
func (t *tokenizer) lower(s string) string {
	off := len(t.buf)
	t.buf = append(t.buf, s...)
	b := t.buf[off:len(t.buf):len(t.buf)]
	for k, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[k] = c + ('a' - 'A')
		}
	}
	// The bytes of b are written exactly once, above, and never modified again.
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// slow normalizes s (NFKC, then full case folding) and appends its tokens.
func (t *tokenizer) slow(s string) {
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
