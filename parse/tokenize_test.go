package parse

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", nil},
		{"only delimiters", " \t\n.,;:!?()[]{}<>-_/\\'\"", nil},
		{"simple", "now is the time", []string{"now", "is", "the", "time"}},
		{"lower-cased", "Now IS tHe TIME", []string{"now", "is", "the", "time"}},
		{"punctuation and white space runs are one delimiter", "a,  b;;--c\n\n\td...e", []string{"a", "b", "c", "d", "e"}},
		{"underscore and hyphen split", "snake_case kebab-case", []string{"snake", "case", "kebab", "case"}},
		{"digits kept", "HTTP/1.1 404 x86_64", []string{"http", "1", "1", "404", "x86", "64"}},
		{"leading and trailing delimiters", "  ...hello!!  ", []string{"hello"}},
		{"non-ASCII letters inside tokens", "naïve café", []string{"naïve", "café"}},
		{"accented capitals", "ÉCOLE Ça", []string{"école", "ça"}},
		{"full case folding", "Straße STRASSE strasse", []string{"strasse", "strasse", "strasse"}},
		{"greek final sigma folds", "ΟΔΟΣ οδος", []string{"οδοσ", "οδοσ"}},
		{"NFKC ligature", "ﬁnancial ﬂow", []string{"financial", "flow"}},
		{"NFKC fullwidth letters and digits", "ＡＢＣ　１２３", []string{"abc", "123"}},
		{"NFKC superscript digit", "x² m³", []string{"x2", "m3"}},
		{"NFKC fraction splits at fraction slash", "½", []string{"1", "2"}},
		{"combining mark composes", "e\u0301te\u0301", []string{"été"}},
		{"decomposed and composed agree", "cafe\u0301 café", []string{"café", "café"}},
		{"combining mark after ASCII run", "Cafe\u0301s", []string{"cafés"}},
		{"not-equal composition stays a delimiter", "a=\u0338b", []string{"a", "b"}},
		{"kelvin sign folds to k", "\u212A", []string{"k"}},
		{"unicode punctuation delimits", "“quoted”—dash…end", []string{"quoted", "dash", "end"}},
		{"no-break and ideographic space delimit", "a\u00a0b\u3000c", []string{"a", "b", "c"}},
		{"symbols delimit", "1+1=2 ©2024 €5", []string{"1", "1", "2", "2024", "5"}},
		{"CJK run is one token", "中文文本，日本語", []string{"中文文本", "日本語"}},
		{"mixed scripts", "Hello Мир 世界 مرحبا", []string{"hello", "мир", "世界", "مرحبا"}},
		{"invalid UTF-8 delimits", "ab\xffcd", []string{"ab", "cd"}},
		{"ASCII after non-ASCII segment", "über Alles UND mehr", []string{"über", "alles", "und", "mehr"}},
		{"emoji delimits", "go😀lang", []string{"go", "lang"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Tokenize(nil, tc.in)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Tokenize(%q) = %q, want %q", tc.in, got, tc.want)
			}
			for _, tok := range got {
				if tok == "" {
					t.Errorf("Tokenize(%q) produced an empty token", tc.in)
				}
			}
		})
	}
}

func TestTokenizeAppends(t *testing.T) {
	dst := []string{"keep"}
	got := Tokenize(dst, "More Words")
	if want := []string{"keep", "more", "words"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestTokenizeTokensStable checks that lower-cased tokens sharing the backing buffer
// are not overwritten by later ones.
func TestTokenizeTokensStable(t *testing.T) {
	in := strings.Repeat("ALPHA Beta gamma DELTA ", 50)
	got := Tokenize(nil, in)
	want := []string{"alpha", "beta", "gamma", "delta"}
	if len(got) != 200 {
		t.Fatalf("got %d tokens, want 200", len(got))
	}
	for i, tok := range got {
		if tok != want[i%4] {
			t.Fatalf("token %d = %q, want %q", i, tok, want[i%4])
		}
	}
}

func TestTokenizeLimit(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  []string
	}{
		{"a b c d", 2, []string{"a", "b"}},
		{"a b c d", 0, []string{"a", "b", "c", "d"}},
		{"A B C D", 3, []string{"a", "b", "c"}},
		{"é è ê ë", 2, []string{"é", "è"}},
		{"a b", 5, []string{"a", "b"}},
	}
	for _, tc := range tests {
		if got := tokenize(nil, tc.in, tc.limit); !slices.Equal(got, tc.want) {
			t.Errorf("tokenize(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
	}
}

// TestTokenizeASCIIAllocs asserts the ASCII fast path: no allocation when the text is
// already lower case, and only the one backing buffer when it must be lower-cased.
func TestTokenizeASCIIAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops items at random, so the pooled list allocates")
	}
	tests := []struct {
		name string
		text string
		max  float64
	}{
		{"lower case", strings.Repeat("the quick brown fox jumps over the lazy dog, 42 times. ", 40), 0},
		{"mixed case", strings.Repeat("The Quick Brown Fox jumps over the LAZY dog, 42 times. ", 40), 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]string, 0, 1024)
			allocs := testing.AllocsPerRun(100, func() {
				dst = Tokenize(dst[:0], tc.text)
			})
			if allocs > tc.max {
				t.Errorf("Tokenize allocated %v times per run, want at most %v", allocs, tc.max)
			}
			if len(dst) != 40*11 {
				t.Errorf("got %d tokens, want %d", len(dst), 40*11)
			}
		})
	}
}

// TestTokenizeSegmentation checks that the ASCII fast path and the normalizing path agree:
// tokenizing any text must equal tokenizing its NFKC-folded form entirely on the slow path.
func TestTokenizeSegmentation(t *testing.T) {
	inputs := []string{
		"Plain ASCII Text, with Punctuation!",
		"ASCII then ünïcode THEN ascii",
		"x\u0301y z\u0338 <\u0338 =\u0338= A\u030a",
		"ﬁ ﬂ ﬃ Ⅻ ① ㎏ ｶﾀｶﾅ",
		"İstanbul ǅemal ß ẞ",
		"中文文本，日本語。（括弧）「引用」 한국어 텍스트",
		"Привет, мир! Москва — столица России. ПРИВЕТ",
		"中文=\u0338文 中文，\u0301文 가\u11a8 ＡＢＣ１２３",
	}
	for _, in := range inputs {
		got := Tokenize(nil, in)
		var ref tokenizer
		ref.slowNormalize(in)
		if !slices.Equal(got, ref.dst) {
			t.Errorf("Tokenize(%q) = %q, normalizing path gives %q", in, got, ref.dst)
		}
	}
}

// tokenizeBytewise is a plain restatement of Tokenize's ASCII fast path
// (strings.ToLower for the lower-casing, the normalizing path slowNormalize for
// every stretch that touches a non-ASCII byte, never the table-driven slow):
// the reference for FuzzTokenize.
func tokenizeBytewise(text string) []string {
	var out []string
	n := len(text)
	for i := 0; i < n; {
		c := byteClass[text[i]]
		if c == clsDelim {
			i++
			continue
		}
		start := i
		for i < n {
			if c = byteClass[text[i]]; c == clsDelim || c == clsNonASCII {
				break
			}
			i++
		}
		if i < n && c == clsNonASCII {
			rs := start
			if rs == i && rs > 0 && byteClass[text[rs-1]] == clsDelim {
				rs--
			}
			re := slowEnd(text, i)
			t := tokenizer{}
			t.slowNormalize(text[rs:re])
			out = append(out, t.dst...)
			i = re
			continue
		}
		out = append(out, strings.ToLower(text[start:i]))
	}
	return out
}

// FuzzTokenize: Tokenize gives the tokens of the plain restatement, and on
// valid UTF-8 the tokens of the normalizing path alone; with a token limit it
// gives a prefix of them.
func FuzzTokenize(f *testing.F) {
	for _, s := range []string{
		"Plain ASCII Text, with Punctuation!", "abcdefgh ABCDEFGH abcdefghijklmnopq",
		"ASCII then ünïcode THEN ascii", "x\u0301y z\u0338 A\u030a", "ﬁ ﬂ ﬃ Ⅻ ① ㎏ ｶﾀｶﾅ",
		"İstanbul ǅemal ß ẞ", "0123456789:;<=>?@[\\]^_`{|}~", "\xff\xfeABCDEFGHIJ\x80z",
		strings.Repeat("Wordy_words-and MORE words.", 9),
		"Flink 用户 开发计划 社区 & 项目信息，如何参与贡献（审核）。中文=\u0338文 한국어 가\u11a8",
		"Привет, мир! Москва — столица России; ПРИВЕТ Ёлка ёлка Straße ﬁ ＡＢＣ　１２３",
		"ｶﾞｷﾞ ㄱㅏ 가\u11a8 中文\xe4\xb8，中文 ①② ½ ǅ Ⓐ — ΟΔΟΣ İ \xc1\xa1",
		// A lead byte whose sequence a cut would end early (from a review).
		"\xf3ϔ ⑨", "\xf3ϔ.é", "\xf3ǅ ⑨", "\xf3² ⑨", "\xe4ϔ ⑨", "\xdf ⑨",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Tokenize(nil, s)
		if want := tokenizeBytewise(s); !slices.Equal(got, want) {
			t.Fatalf("Tokenize(%q) = %q, restated %q", s, got, want)
		}
		if limit := len(s)%5 + 1; len(got) > limit {
			if lim := tokenize(nil, s, limit); !slices.Equal(lim, got[:limit]) {
				t.Fatalf("tokenize(%q, %d) = %q, want %q", s, limit, lim, got[:limit])
			}
		}
		if !utf8.ValidString(s) {
			return
		}
		var ref tokenizer
		ref.slowNormalize(s)
		if !slices.Equal(got, ref.dst) {
			t.Fatalf("Tokenize(%q) = %q, normalizing path gives %q", s, got, ref.dst)
		}
	})
}

// TestRuneTableExamples spot-checks the rune table of slow.
func TestRuneTableExamples(t *testing.T) {
	rt := runeClasses()
	tests := []struct {
		r      rune
		want   uint8
		mapped string
	}{
		{'a', rcToken, ""}, {'7', rcToken, ""}, {'A', rcMap, "a"}, {' ', rcDelim, ""}, {'=', rcDelim, ""},
		{'é', rcToken, ""}, {'É', rcMap, "é"}, {'ß', rcMap, "ss"}, {'ж', rcToken, ""}, {'Ж', rcMap, "ж"},
		{'Σ', rcMap, "σ"}, {'ς', rcMap, "σ"}, {'İ', rcMap, "i\u0307"},
		{'ﬁ', rcMap, "fi"}, {'\u212a', rcMap, "k"}, {'Ａ', rcMap, "a"}, {'１', rcMap, "1"}, {'²', rcMap, "2"},
		{'①', rcMap, "1"}, {'ǅ', rcMap, "dž"}, {'㎏', rcMap, "kg"}, {'ｶ', rcMap, "カ"},
		{'\u24b6', rcMap, "a"}, // circled A: a symbol whose NFKC is a letter
		{'中', rcToken, ""}, {'語', rcToken, ""}, {'가', rcToken, ""}, {'ا', rcToken, ""},
		{'，', rcDelim, ""},      // fullwidth comma: NFKC gives ","
		{'\u3000', rcDelim, ""}, // ideographic space: NFKC gives " "
		{'。', rcDelim, ""}, {'“', rcDelim, ""}, {'—', rcDelim, ""}, {'\u00a0', rcDelim, ""}, {'\ufffd', rcDelim, ""},
		{'\u0301', rcOther, ""}, // combining mark: composes with what precedes it
		{'\u0338', rcOther, ""},
		{'\u11a8', rcOther, ""}, // Hangul final consonant: composes with a syllable before it
		{'\u00a8', rcOther, ""}, // diaeresis: NFKC gives a space and a combining mark
		{'\uff9e', rcOther, ""}, // halfwidth voiced sound mark: NFKC gives a combining mark
		{'ㅏ', rcOther, ""},      // Hangul compatibility vowel: NFKC gives a vowel jamo, which composes
		{'½', rcOther, ""},      // NFKC gives digits and a fraction slash
		{'⑴', rcOther, ""},      // NFKC gives "(1)"
		{0xD800, rcOther, ""},   // surrogate
	}
	for _, tc := range tests {
		if got := rt.class[tc.r]; got != tc.want {
			t.Errorf("class of %U %q = %d, want %d", tc.r, tc.r, got, tc.want)
		}
		if got := rt.mapping(tc.r); got != tc.mapped {
			t.Errorf("%U %q maps to %q, want %q", tc.r, tc.r, got, tc.mapped)
		}
	}
	// ASCII agrees with byteClass, the table of the ASCII fast path, and upper-case
	// letters map to lower case.
	for c := 0; c < utf8.RuneSelf; c++ {
		want := map[uint8]uint8{clsDelim: rcDelim, clsLower: rcToken, clsUpper: rcMap}[byteClass[c]]
		if rt.class[c] != want {
			t.Errorf("class of %q = %d, want %d", rune(c), rt.class[c], want)
		}
		if want == rcMap && rt.mapping(rune(c)) != string(rune(c|0x20)) {
			t.Errorf("%q maps to %q", rune(c), rt.mapping(rune(c)))
		}
	}
}

// stableRunes returns every BMP rune that slow may tokenize without normalizing.
func stableRunes() []rune {
	rt := runeClasses()
	var rs []rune
	for r, c := range rt.class {
		if c != rcOther {
			rs = append(rs, rune(r))
		}
	}
	return rs
}

// TestRuneTableMatchesNormalization makes the rune table a tested fact: for every BMP
// rune not classed rcOther, its class's definition holds when checked with the plain
// string transforms, and in a few contexts slow tokenizes without normalizing exactly
// where expected and gives the tokens of the normalizing path slowNormalize.
func TestRuneTableMatchesNormalization(t *testing.T) {
	rt := runeClasses()
	fold := cases.Fold()
	stable := 0
	starts := func(s string) bool {
		for _, q := range s {
			if p := norm.NFKC.PropertiesString(string(q)); !p.BoundaryBefore() || p.CCC() != 0 || p.LeadCCC() != 0 {
				return false
			}
		}
		return true
	}
	notToken := func(q rune) bool { return !isTokenRune(q) }
	step := 1
	if raceEnabled {
		step = 7 // single-goroutine logic: the race detector only slows it down
	}
	for k, r := range stableRunes() {
		stable++
		if k%step != 0 {
			continue
		}
		s := string(r)
		n := norm.NFKC.String(s)
		m := fold.String(n)
		if !starts(s) || !starts(n) {
			t.Fatalf("%U is classed %d, but it or its NFKC %q composes with what precedes it", r, rt.class[r], n)
		}
		switch rt.class[r] {
		case rcToken:
			if !isTokenRune(r) || m != s {
				t.Fatalf("%U is classed rcToken, but NFKC gives %q and folding that %q", r, n, m)
			}
		case rcMap:
			if m == s || m != rt.mapping(r) || m == "" || strings.ContainsFunc(m, notToken) {
				t.Fatalf("%U is classed rcMap (to %q), but NFKC gives %q and folding that %q", r, rt.mapping(r), n, m)
			}
		case rcDelim:
			if m == "" || strings.ContainsFunc(n+m, isTokenRune) {
				t.Fatalf("%U is classed rcDelim, but NFKC gives %q and folding that %q", r, n, m)
			}
		}
		for _, c := range []struct {
			text string
			fast bool // slow must not normalize
		}{
			{s, true},
			{"a" + s + "b", true},
			{"e\u0301" + s, false},
			{s + "\u0301", false},
			{"=" + s, true},
			{s + "=", true},
			{s + s, true},
			{"中" + s + "É", true},
			{"가" + s + "\u11a8", false},
		} {
			var got, want tokenizer
			normalized := 0
			got.slowCount(c.text, &normalized)
			if fast := normalized == 0; fast != c.fast {
				t.Fatalf("slow(%q) normalized %d pieces, want fast path %v", c.text, normalized, c.fast)
			}
			want.slowNormalize(c.text)
			if !slices.Equal(got.dst, want.dst) {
				t.Fatalf("slow(%q) = %q, slowNormalize gives %q", c.text, got.dst, want.dst)
			}
		}
	}
	if stable < 50_000 {
		t.Errorf("only %d BMP runes are classed stable", stable)
	}
}

// TestSlowRandom: random strings of stable runes, with now and then a rune that needs
// normalization or a byte of invalid UTF-8, give the tokens of slowNormalize, also under
// a token limit.
func TestSlowRandom(t *testing.T) {
	stable := stableRunes()
	others := []string{"\u0301", "\u0338", "\u11a8", "\u1161", "ㅏ", "\uff9e", "½", "⑴", "😀", "\U00010000"}
	// Invalid UTF-8: lone and truncated sequences, a surrogate, overlong forms (of "/",
	// "a" and U+07FF "߿").
	invalid := []string{"\xff", "\x80", "\xe4", "\xc3", "\xe4\xb8", "\xf0\x9f\x98", "\xed\xa0\x80",
		"\xe0\x80\xaf", "\xc1\xa1", "\xe0\x81\xa1", "\xe0\x9f\xbf", "\xf0\x80\x81\xa1"}
	delims := []string{" ", ",", "=", "<", "，", "\u3000", "—", "\u00a0"}
	// A small alphabet of characters that interact under normalization (compositions
	// with what precedes them, Hangul syllables and jamo, delimiters that compose,
	// letters that fold).
	tricky := []string{"=", "<", "\u0338", "e", "E", "\u0301", "가", "\u11a8", "\u1161", "ᄀ", "，", " ", "Ж", "ж",
		"中", "ß", "ﬁ", "\u00a8", "\u309b", "か", "\u3099", "\xe4", "\xb8", "é", "É", "İ", "\u0307", "Σ",
		"\u0bc6", "\u0bbe", "\u0f71", "\u0f72", "ㄱ", "ㅏ", "ㄳ", "ｶ", "\uff9e", "①", "½", "Ａ", "\u212a"}
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	iters := 100_000
	if raceEnabled {
		iters = 10_000
	}
	for iter := 0; iter < iters; iter++ {
		b.Reset()
		n := rng.IntN(16)
		for range n {
			if iter%2 == 1 {
				b.WriteString(tricky[rng.IntN(len(tricky))])
				continue
			}
			switch k := rng.IntN(40); {
			case k < 3:
				b.WriteString(others[rng.IntN(len(others))])
			case k == 3:
				b.WriteString(invalid[rng.IntN(len(invalid))])
			case k < 14:
				b.WriteString(delims[rng.IntN(len(delims))])
			default:
				b.WriteRune(stable[rng.IntN(len(stable))])
			}
		}
		s := b.String()
		for _, limit := range []int{0, 1, 2, 3} {
			got := tokenizer{limit: limit}
			got.slow(s)
			want := tokenizer{limit: limit}
			want.slowNormalize(s)
			if !slices.Equal(got.dst, want.dst) {
				t.Fatalf("slow(%q) with limit %d = %q, slowNormalize gives %q", s, limit, got.dst, want.dst)
			}
		}
	}
}

// TestSlowMappedTokensStable: mapped (case-folded) tokens sharing slow's buffer are not
// overwritten by later ones when the buffer grows.
func TestSlowMappedTokensStable(t *testing.T) {
	in := strings.Repeat("Жук ÉTÉ İLK Straße, ", 300)
	var got, want tokenizer
	pieces := 0
	got.slowCount(in, &pieces)
	want.slowNormalize(in)
	if pieces != 0 || !slices.Equal(got.dst, want.dst) {
		t.Fatalf("slow normalized %d pieces and gave %q..., slowNormalize gives %q...", pieces, got.dst[:8], want.dst[:8])
	}
}

// TestTokenizeStableAllocs: text in NFKC, case-folded form (lower-case Cyrillic, CJK
// with full-width punctuation) is tokenized without allocating, and capitalized words
// only take the few allocations of the growing buffer of mapped tokens (one buffer per
// stretch of text that slow gets: here, the whole text is one).
func TestTokenizeStableAllocs(t *testing.T) {
	tests := []struct {
		text string
		max  float64
	}{
		{strings.Repeat("москва — столица россии; 北京是中国的首都，（上海）。 ", 40), 0},
		{strings.Repeat("Москва — столица России，Βόρεια Ελλάδα。", 40), 8},
	}
	for _, tc := range tests {
		dst := make([]string, 0, 1024)
		allocs := testing.AllocsPerRun(100, func() {
			dst = Tokenize(dst[:0], tc.text)
		})
		if allocs > tc.max {
			t.Errorf("Tokenize(%.30q...) allocated %v times per run, want at most %v", tc.text, allocs, tc.max)
		}
		if want := []string{"москва", "столица", "россии"}; !slices.Equal(dst[:3], want) {
			t.Errorf("tokens %q, want %q", dst[:3], want)
		}
	}
}

// TestSlowPieces: slow normalizes only the words that need it (with the stable delimiter
// before them), and words that need it with only delimiters between them in one piece.
func TestSlowPieces(t *testing.T) {
	tests := []struct {
		in     string
		pieces int
	}{
		{"москва — столица россии, 北京，上海。", 0},
		{"Москва — столица России. Город стоит", 0}, // capitals only fold
		{"ПРИВЕТ ǅemal ＶＳＥＭ ﬁ ½ ①", 1},              // " ½"
		{"=\u0338 中文 a\u0301", 2},
		{"Straße ﬁnancial ＦＵＬＬ naïve café, Привет мир, 中文文本", 0},
		{"ｶﾞｷﾞ ｶ ㄱㅏ ㄱ", 2},            // "ｶﾞｷﾞ", " ㄱㅏ"
		{"中文\xff中文 中文\xe4\xb8，中文", 1}, // no stable word between
		{"日本語 😀 日本語", 1},
		// Invalid UTF-8 just before a cut: normalized alone, it ends the piece.
		{"中文\xe4\xb8，中文 中文", 1},
		{"a\xc3，b \xe4，x 中\xf0\x9f，中", 3},
		{"中\xc1\xa1中 中文 中\xe0\x81\xa1中 中\xed\x9f\xbf中", 2}, // overlong "a" twice; U+D7FF
	}
	for _, tc := range tests {
		var got, want tokenizer
		pieces := 0
		got.slowCount(tc.in, &pieces)
		want.slowNormalize(tc.in)
		if !slices.Equal(got.dst, want.dst) {
			t.Errorf("slow(%q) = %q, slowNormalize gives %q", tc.in, got.dst, want.dst)
		}
		if pieces != tc.pieces {
			t.Errorf("slow(%q) normalized %d pieces, want %d", tc.in, pieces, tc.pieces)
		}
	}
}

// TestRuneTableTokenBits: the shortcuts buildRuneTable takes to save time agree with
// isTokenRune and with case folding a rune at a time, for every BMP rune.
func TestRuneTableTokenBits(t *testing.T) {
	b := new(tableBuilder)
	b.fold = cases.Fold()
	b.tokenBits()
	b.foldBits()
	fold := cases.Fold()
	for r := rune(0); r < 1<<16; r++ {
		if got, want := hasBit(&b.token, r), isTokenRune(r); got != want {
			t.Errorf("token bit of %U = %v, isTokenRune gives %v", r, got, want)
		}
		if !utf8.ValidRune(r) {
			continue
		}
		if got, want := hasBit(&b.folds, r), fold.String(string(r)) != string(r); got != want {
			t.Errorf("folding bit of %U = %v, folding it alone changes it: %v", r, got, want)
		}
	}
}
