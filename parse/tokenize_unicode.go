package parse

import (
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Classes of the runes of the Basic Multilingual Plane, for slow (see buildRuneTable).
const (
	rcOther = iota // anything else: needs slowNormalize
	rcToken        // token rune that NFKC and case folding leave unchanged
	rcDelim        // delimiter, and so are all the runes it normalizes to
	rcMap          // rune that NFKC and case folding change into token runes only
)

// runeTable classifies the BMP runes for slow.
type runeTable struct {
	class [1 << 16]uint8
	// What the rcMap runes map to. The k-th of them (from 1, in increasing order) maps
	// to mapText[mapEnd[k-1]:mapEnd[k]]. mapBlock[r>>8] is 0 if no rune of the block of
	// 256 that holds r is rcMap, and otherwise 1 + the index in mapIndex of the k of
	// every rune of the block (0 for those not rcMap).
	mapBlock [256]uint16
	mapIndex [][256]uint16
	mapEnd   []uint32
	mapText  string
}

// mapping returns what r, an rcMap rune, maps to.
func (rt *runeTable) mapping(r rune) string {
	if r > 0xFFFF {
		return ""
	}
	b := rt.mapBlock[r>>8]
	if b == 0 {
		return ""
	}
	k := rt.mapIndex[b-1][r&0xFF]
	if k == 0 {
		return ""
	}
	return rt.mapText[rt.mapEnd[k-1]:rt.mapEnd[k]]
}

var (
	runeTableOnce sync.Once
	runeTab       *runeTable
)

// runeClasses returns the rune table, built on first use (a normalization property
// look-up per BMP rune, and transforms for the few thousand that NFKC or case folding
// change: about 4 ms, see BenchmarkBuildRuneTable) and read-only afterwards.
func runeClasses() *runeTable {
	runeTableOnce.Do(func() { runeTab = buildRuneTable() })
	return runeTab
}

// buildRuneTable classifies each BMP rune r by asking the norm and cases packages (never
// by hand-listed ranges), so the table follows the Unicode version they implement. Every
// class but rcOther requires r, and each rune of NFKC of r, to be a normalization starter
// that never composes with what precedes it (BoundaryBefore, combining class 0, also for
// the first rune of its decomposition). Then, with m the case folding of NFKC of r:
//
//   - rcToken: m is r and r is a token rune (r may have a canonical decomposition, like
//     é, as long as it recomposes to itself);
//   - rcMap: m is not r, and m is made of token runes only (É to é, Ж to ж, A to a, ß to
//     ss, ﬁ to fi, Ａ to a, １ and ① to 1, ǅ to dž);
//   - rcDelim: m is not empty, and m and NFKC of r are made of non-token runes only;
//   - rcOther: everything else (combining characters, Hangul vowel and final jamo, ½
//     to "1⁄2"), and the surrogates (never valid UTF-8).
//
// So NFKC of a string made only of rcToken, rcMap and rcDelim runes is the NFKC of its
// runes joined (each starts a normalization segment, and what each normalizes to cannot
// compose with what precedes it), case folding goes rune by rune, and its tokens are its
// maximal runs of rcToken and rcMap runes, each rune replaced by its m.
// TestRuneTableMatchesNormalization checks this for every classified rune.
func buildRuneTable() *runeTable {
	rt := &runeTable{mapEnd: []uint32{0}}
	b := new(tableBuilder)
	b.fold = cases.Fold()
	b.tokenBits()
	b.foldBits()
	var text []byte
	var src [utf8.UTFMax]byte
	for r := rune(0); r < 1<<16; r++ {
		if !utf8.ValidRune(r) {
			continue // surrogate
		}
		cls, m := b.classify(r, src[:utf8.EncodeRune(src[:], r)])
		rt.class[r] = cls
		if cls == rcMap {
			blk := r >> 8
			if rt.mapBlock[blk] == 0 {
				rt.mapIndex = append(rt.mapIndex, [256]uint16{})
				rt.mapBlock[blk] = uint16(len(rt.mapIndex))
			}
			text = append(text, m...)
			rt.mapEnd = append(rt.mapEnd, uint32(len(text)))
			rt.mapIndex[rt.mapBlock[blk]-1][r&0xFF] = uint16(len(rt.mapEnd) - 1)
		}
	}
	rt.mapText = string(text)
	return rt
}

// tableBuilder holds the scratch space of buildRuneTable.
type tableBuilder struct {
	fold         cases.Caser
	it           norm.Iter
	token, folds [1 << 16 / 64]uint64 // isTokenRune(r); case folding changes r
	nfkc, folded [256]byte
	block        [3 * 256]byte
}

func hasBit(bits *[1 << 16 / 64]uint64, r rune) bool { return bits[r/64]&(1<<(r%64)) != 0 }

// tokenBits sets b.token from the tables unicode.IsLetter, IsMark and IsDigit consult (a
// rune at a time, isTokenRune would take a binary search each); TestRuneTableTokenBits
// checks that they agree.
func (b *tableBuilder) tokenBits() {
	for _, tab := range []*unicode.RangeTable{unicode.Letter, unicode.Mark, unicode.Digit} {
		for _, rg := range tab.R16 {
			for r := rune(rg.Lo); r <= rune(rg.Hi); r += rune(rg.Stride) {
				b.token[r/64] |= 1 << (r % 64)
			}
		}
	}
}

// foldBits sets b.folds: case folding, like Span, goes rune by rune, so Span over blocks
// of 256 runes finds the ones it changes with far fewer calls than one per rune.
func (b *tableBuilder) foldBits() {
	for lo := rune(0); lo < 1<<16; lo += 256 {
		buf := b.block[:0]
		for r := lo; r < lo+256; r++ {
			if utf8.ValidRune(r) {
				buf = utf8.AppendRune(buf, r)
			}
		}
		for len(buf) > 0 {
			b.fold.Reset()
			n, err := b.fold.Span(buf, true)
			if err == nil || n >= len(buf) {
				break
			}
			r, size := utf8.DecodeRune(buf[n:])
			b.folds[r/64] |= 1 << (r % 64)
			buf = buf[n+size:]
		}
	}
}

// classify returns the class of r, whose UTF-8 encoding is in, and for rcMap what it maps
// to (valid until the next call). The cheap checks (property look-ups) come first; only
// the runes that NFKC or folding change are transformed.
func (b *tableBuilder) classify(r rune, in []byte) (uint8, []byte) {
	p := norm.NFKC.Properties(in)
	if !startsSegmentProps(p) {
		return rcOther, nil
	}
	// A starter that does not combine backward and has no decomposition is its own
	// NFKC; one with a decomposition (é, ǘ, 가) is if it recomposes to itself, which
	// QuickSpan tells for a lone starter.
	if !hasBit(&b.folds, r) && (p.Decomposition() == nil || norm.NFKC.QuickSpan(in) == len(in)) {
		if hasBit(&b.token, r) {
			return rcToken, nil
		}
		return rcDelim, nil
	}
	nfkc := b.nfkc[:0]
	for b.it.Init(norm.NFKC, in); !b.it.Done(); {
		nfkc = append(nfkc, b.it.Next()...)
	}
	b.fold.Reset()
	nd, ns, err := b.fold.Transform(b.folded[:], nfkc, true)
	m := b.folded[:nd]
	if err != nil || ns != len(nfkc) || nd == 0 || !validStarters(nfkc) {
		return rcOther, nil
	}
	switch {
	case allRunes(m, isTokenRune):
		return rcMap, m
	case allRunes(m, isNotTokenRune) && allRunes(nfkc, isNotTokenRune):
		return rcDelim, nil
	}
	return rcOther, nil
}

func isNotTokenRune(r rune) bool { return !isTokenRune(r) }

// allRunes reports whether b is valid UTF-8 whose runes all satisfy f.
func allRunes(b []byte, f func(rune) bool) bool {
	for len(b) > 0 {
		q, n := utf8.DecodeRune(b)
		if q == utf8.RuneError && n == 1 || !f(q) {
			return false
		}
		b = b[n:]
	}
	return true
}

// validStarters reports whether b is valid UTF-8 whose runes all start a normalization
// segment.
func validStarters(b []byte) bool {
	for len(b) > 0 {
		q, n := utf8.DecodeRune(b)
		if q == utf8.RuneError && n == 1 || !startsSegment(b[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}

// startsSegment reports whether the character in b is a normalization starter (combining
// class 0, also for the first rune of its decomposition) that cannot combine with
// anything before it.
func startsSegment(b []byte) bool {
	return startsSegmentProps(norm.NFKC.Properties(b))
}

func startsSegmentProps(p norm.Properties) bool {
	return p.BoundaryBefore() && p.CCC() == 0 && p.LeadCCC() == 0
}

// slow appends the tokens of s, a stretch of text around non-ASCII characters: exactly
// the tokens of slowNormalize(s), but without normalizing what needs no normalization.
//
// Runes of the classes rcToken, rcMap and rcDelim (see buildRuneTable) are tokenized
// directly: a token of rcToken runes only is appended as a substring of s, one with rcMap
// runes is written to a buffer with each rcMap rune replaced by what it maps to. Any
// other character (one that could compose with what precedes it or normalize to both
// token and non-token runes, invalid UTF-8, a rune outside the BMP) sends a piece of s to
// slowNormalize: from the last stable delimiter (rcDelim) before it, or the start of s,
// up to the first stable delimiter after which a stable word follows, or the end of s.
//
// Cutting s there gives the same tokens as normalizing s whole: a stable delimiter starts
// a normalization segment (nothing before it composes with it, it has combining class 0),
// so NFKC of s is NFKC of the pieces joined; case folding goes rune by rune; and the
// piece that starts at the delimiter starts with non-token runes after normalization, so
// no token spans the cut. Invalid UTF-8 is inert for NFKC and folding and decodes the
// same on either side of a cut, since the delimiter's first byte is not a continuation
// byte.
//
// The token limit is honored as in slowNormalize: a token is only appended once the
// delimiter after it is seen, and nothing is appended once t.full().
func (t *tokenizer) slow(s string) {
	t.slowCount(s, nil)
}

// slowCount is slow that also counts, if pieces is not nil, the pieces of s it
// normalizes (for tests).
func (t *tokenizer) slowCount(s string, pieces *int) {
	rt := runeClasses()
	tab := &rt.class
	n := len(s)
	start := -1    // start of the pending token, if any
	maps := false  // the pending token has an rcMap rune
	cut := 0       // start of the last stable delimiter, or of s: where a piece may start
	var buf []byte // tokens with rcMap runes, mapped; append-only
	for i := 0; i < n; {
		k := i
		c := s[i]
		cls := uint8(rcOther)
		switch {
		case c < utf8.RuneSelf:
			cls = tab[c]
			i++
		case c < 0xE0: // two bytes: U+0080..U+07FF
			if c >= 0xC2 && i+1 < n && s[i+1]&0xC0 == 0x80 {
				cls = tab[uint16(c&0x1F)<<6|uint16(s[i+1]&0x3F)]
				i += 2
			}
		case c < 0xF0: // three bytes: U+0800..U+FFFF
			if i+2 < n && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 {
				// An overlong form decodes below U+0800, surrogates are rcOther.
				if r := uint16(c&0x0F)<<12 | uint16(s[i+1]&0x3F)<<6 | uint16(s[i+2]&0x3F); r >= 0x800 {
					cls = tab[r]
					i += 3
				}
			}
		}
		switch cls {
		case rcToken:
			if start < 0 {
				start = k
			}
		case rcMap:
			if start < 0 {
				start = k
			}
			maps = true
		case rcDelim:
			cut = k
			if start >= 0 {
				if t.full() {
					return
				}
				tok := s[start:k]
				if maps {
					tok, buf = rt.mapToken(buf, tok)
					maps = false
				}
				t.dst = append(t.dst, tok)
				start = -1
			}
		default:
			end := normalizeEnd(tab, s, k)
			if pieces != nil {
				*pieces++
			}
			t.slowNormalize(s[cut:end])
			if t.full() {
				return
			}
			start, maps, cut, i = -1, false, end, end
		}
	}
	if start >= 0 && !t.full() {
		tok := s[start:]
		if maps {
			tok, _ = rt.mapToken(buf, tok)
		}
		t.dst = append(t.dst, tok)
	}
}

// mapToken appends to buf tok, a token of rcToken and rcMap runes, with every rcMap rune
// replaced by what it maps to, and returns it with the extended buffer. Bytes are only
// ever appended past len(buf), never rewritten, so the tokens returned before stay valid
// even if append moves buf.
func (rt *runeTable) mapToken(buf []byte, tok string) (string, []byte) {
	if buf == nil {
		buf = make([]byte, 0, max(2*len(tok), 64))
	}
	off := len(buf)
	from := 0 // start of the bytes of tok not yet copied
	for i := 0; i < len(tok); {
		// tok is valid UTF-8 of the BMP: slowCount decoded it.
		k := i
		var r rune
		switch c := tok[i]; {
		case c < utf8.RuneSelf:
			r = rune(c)
			i++
		case c < 0xE0:
			r = rune(c&0x1F)<<6 | rune(tok[i+1]&0x3F)
			i += 2
		default:
			r = rune(c&0x0F)<<12 | rune(tok[i+1]&0x3F)<<6 | rune(tok[i+2]&0x3F)
			i += 3
		}
		if rt.class[uint16(r)] == rcMap {
			buf = append(buf, tok[from:k]...)
			buf = append(buf, rt.mapping(r)...)
			from = i
		}
	}
	buf = append(buf, tok[from:]...)
	b := buf[off:len(buf):len(buf)]
	// The bytes of b are written here once and never modified again.
	return unsafe.String(unsafe.SliceData(b), len(b)), buf
}

// normalizeEnd returns the end of the piece of s to normalize that holds the character
// at i, which needs normalization: the start of the first stable delimiter after which a
// stable word (rcToken and rcMap runes, up to a stable delimiter or the end of s)
// follows, or len(s). Words that need normalization and are separated by delimiters only
// are so normalized together, in one call.
func normalizeEnd(tab *[1 << 16]uint8, s string, i int) int {
	n := len(s)
	_, w := classAt(tab, s, i)
	i += w        // past the character that needs normalization, whatever classAt says
	cand := -1    // start of the first stable delimiter since the last other character
	word := false // a stable token rune follows cand
	for i < n {
		cls, w := classAt(tab, s, i)
		switch cls {
		case rcDelim:
			if cand < 0 {
				cand = i
			} else if word {
				if safeCut(s, cand) {
					return cand
				}
				cand, word = i, false
			}
		case rcToken, rcMap:
			word = cand >= 0
		default:
			cand, word = -1, false
		}
		i += w
	}
	if word && safeCut(s, cand) {
		return cand
	}
	return n
}

// safeCut reports whether s may end at p for normalization. At the end of its
// input x/text/norm takes a lead byte with too few bytes after it for an
// incomplete character and passes it through with the bytes that follow,
// where with more input it would decode those bytes (an invalid byte, then
// the characters after it): "\xf3ϔ" normalizes to itself, "\xf3ϔ." to
// "\xf3Ϋ.". Only a four-byte lead three bytes before p can hide a whole
// character that way (a two-byte one); a shorter gap hides at most one byte,
// which is ASCII (unchanged by NFKC) or inert. Such a cut is refused.
func safeCut(s string, p int) bool {
	return p < 3 || s[p-3] < 0xF0 || s[p-3] > 0xF7
}

// classAt returns the class of the character at s[i] and its length in bytes (1 for
// a byte that does not start valid UTF-8 of the BMP: such a byte is rcOther).
func classAt(tab *[1 << 16]uint8, s string, i int) (cls uint8, w int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return tab[c], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	if w == 1 || r > 0xFFFF {
		return rcOther, 1
	}
	return tab[r], w
}
