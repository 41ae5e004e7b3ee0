package parse

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// textSink accumulates text with every run of white space collapsed to one space and no
// leading or trailing space. Block boundaries become a pending space, so that
// "<p>foo</p><p>bar</p>" gives "foo bar" while "<b>Ho</b>rse" stays "Horse".
type textSink struct {
	b       []byte
	pending bool // a space is due before the next non-space character
	max     int  // stop accepting text once len(b) reaches max; 0 means no cap
}

// boundary records a word boundary (a block edge or white space).
func (s *textSink) boundary() {
	if len(s.b) > 0 {
		s.pending = true
	}
}

// full reports whether the sink has reached its cap.
func (s *textSink) full() bool {
	return s.max > 0 && len(s.b) >= s.max
}

// write appends str, collapsing white space (ASCII white space and Unicode spaces such as
// U+00A0) into single spaces.
func (s *textSink) write(str string) {
	i := 0
	for i < len(str) {
		if s.full() {
			return
		}
		c := str[i]
		if c < utf8.RuneSelf {
			if asciiSpace(c) {
				s.boundary()
				i++
				continue
			}
		} else if r, size := utf8.DecodeRuneInString(str[i:]); unicode.IsSpace(r) {
			s.boundary()
			i += size
			continue
		}
		// A run of non-space characters: find its end and copy it in one go.
		j := i + 1
		for j < len(str) {
			c := str[j]
			if c < utf8.RuneSelf {
				if asciiSpace(c) {
					break
				}
				j++
				continue
			}
			r, size := utf8.DecodeRuneInString(str[j:])
			if unicode.IsSpace(r) {
				break
			}
			j += size
		}
		if s.pending {
			s.b = append(s.b, ' ')
			s.pending = false
		}
		s.b = append(s.b, str[i:j]...)
		i = j
	}
}

// String returns the collected text (without any pending trailing space).
func (s *textSink) String() string {
	return string(s.b)
}

// reset empties the sink, keeping its buffer.
func (s *textSink) reset() {
	s.b = s.b[:0]
	s.pending = false
}

func asciiSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '\v':
		return true
	}
	return false
}

// collapse returns s with white space runs collapsed to one space and trimmed.
func collapse(s string) string {
	var t textSink
	t.write(s)
	return t.String()
}

// truncateUTF8 returns the longest prefix of s of at most n bytes that does not split a
// UTF-8 sequence, with trailing spaces removed.
func truncateUTF8(s string, n int) string {
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return strings.TrimRight(s, " ")
}
