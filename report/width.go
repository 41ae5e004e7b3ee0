package report

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

const ellipsis = '…'

// wideRanges are the code point ranges that terminals draw two columns wide:
// the East Asian Wide and Fullwidth blocks of UAX #11 and the emoji that have
// emoji presentation by default. Where a block mixes wide and narrow
// characters the whole block is listed: overestimating a width only shortens
// a line, which keeps the TextWidth guarantee.
var wideRanges = [...][2]rune{
	{0x1100, 0x115F}, {0x231A, 0x231B}, {0x2329, 0x232A}, {0x23E9, 0x23F3},
	{0x25FD, 0x25FE}, {0x2614, 0x2615}, {0x2648, 0x2653}, {0x267F, 0x267F},
	{0x2693, 0x2693}, {0x26A1, 0x26A1}, {0x26AA, 0x26AB}, {0x26BD, 0x26BE},
	{0x26C4, 0x26C5}, {0x26CE, 0x26CE}, {0x26D4, 0x26D4}, {0x26EA, 0x26EA},
	{0x26F2, 0x26FD}, {0x2705, 0x2705}, {0x270A, 0x270B}, {0x2728, 0x2728},
	{0x274C, 0x274E}, {0x2753, 0x2757}, {0x2795, 0x2797}, {0x27B0, 0x27B0},
	{0x27BF, 0x27BF}, {0x2B1B, 0x2B1C}, {0x2B50, 0x2B50}, {0x2B55, 0x2B55},
	{0x2E80, 0x303E}, {0x3041, 0x33FF}, {0x3400, 0x4DBF}, {0x4E00, 0x9FFF},
	{0xA000, 0xA4CF}, {0xA960, 0xA97F}, {0xAC00, 0xD7A3}, {0xF900, 0xFAFF},
	{0xFE10, 0xFE19}, {0xFE30, 0xFE6F}, {0xFF00, 0xFF60}, {0xFFE0, 0xFFE6},
	{0x16FE0, 0x16FE4}, {0x17000, 0x18CFF}, {0x1B000, 0x1B2FF}, {0x1F004, 0x1F004},
	{0x1F0CF, 0x1F0CF}, {0x1F18E, 0x1F18E}, {0x1F191, 0x1F19A}, {0x1F200, 0x1F2FF},
	{0x1F300, 0x1F64F}, {0x1F680, 0x1F6FF}, {0x1F7E0, 0x1F7EB}, {0x1F90C, 0x1F9FF},
	{0x1FA70, 0x1FAFF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
}

// runeWidth is the number of terminal columns r occupies: 2 for East Asian
// wide and fullwidth characters and emoji, 1 otherwise (combining marks are
// counted as 1, an overestimate).
func runeWidth(r rune) int {
	if r < wideRanges[0][0] {
		return 1
	}
	i := sort.Search(len(wideRanges), func(i int) bool { return wideRanges[i][1] >= r })
	if i < len(wideRanges) && wideRanges[i][0] <= r {
		return 2
	}
	return 1
}

// displayWidth is the number of terminal columns s occupies.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// sanitize makes a string from the web safe to print on a terminal: control
// and format characters (escape sequences, bidi overrides, zero-width
// characters) and invalid UTF-8 become '?'.
func sanitize(s string) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if unsafeRune(r) {
			r = '?'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

// truncateMiddle sanitizes s and, when it is wider than maxWidth columns,
// replaces its middle with an ellipsis so that the result is at most maxWidth
// columns wide and keeps both the start and the end (a URL's host and its
// last path segment).
func truncateMiddle(s string, maxWidth int) string {
	s = sanitize(s)
	if displayWidth(s) <= maxWidth {
		return s
	}
	if maxWidth <= 0 {
		return ""
	}
	if maxWidth == 1 {
		return string(ellipsis)
	}
	budget := maxWidth - 1
	headBudget := (budget + 1) / 2
	tailBudget := budget - headBudget

	head, used := 0, 0
	for i, r := range s {
		w := runeWidth(r)
		if used+w > headBudget {
			head = i
			break
		}
		used += w
	}
	tailBudget += headBudget - used // give unused head columns to the tail
	tail, tused := len(s), 0
	for tail > head {
		r, size := utf8.DecodeLastRuneInString(s[:tail])
		w := runeWidth(r)
		if tused+w > tailBudget {
			break
		}
		tused += w
		tail -= size
	}
	return s[:head] + string(ellipsis) + s[tail:]
}

// pad sanitizes and truncates s to w columns and pads it with spaces to
// exactly w columns.
func pad(s string, w int) string {
	s = truncateMiddle(s, w)
	if n := displayWidth(s); n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}
