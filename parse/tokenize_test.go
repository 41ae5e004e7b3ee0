package parse

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
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
	}
	for _, in := range inputs {
		got := Tokenize(nil, in)
		var ref tokenizer
		ref.slow(in)
		if !slices.Equal(got, ref.dst) {
			t.Errorf("Tokenize(%q) = %q, slow path gives %q", in, got, ref.dst)
		}
	}
}

// tokenizeBytewise is a plain restatement of Tokenize's ASCII fast path
// (strings.ToLower for the lower-casing, a slice per stretch for the slow
// path): the reference for FuzzTokenize.
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
			t.slow(text[rs:re])
			out = append(out, t.dst...)
			i = re
			continue
		}
		out = append(out, strings.ToLower(text[start:i]))
	}
	return out
}

// FuzzTokenize: Tokenize gives the tokens of the plain restatement, and on
// valid UTF-8 the tokens of the normalizing path alone.
func FuzzTokenize(f *testing.F) {
	for _, s := range []string{
		"Plain ASCII Text, with Punctuation!", "abcdefgh ABCDEFGH abcdefghijklmnopq",
		"ASCII then ünïcode THEN ascii", "x\u0301y z\u0338 A\u030a", "ﬁ ﬂ ﬃ Ⅻ ① ㎏ ｶﾀｶﾅ",
		"İstanbul ǅemal ß ẞ", "0123456789:;<=>?@[\\]^_`{|}~", "\xff\xfeABCDEFGHIJ\x80z",
		strings.Repeat("Wordy_words-and MORE words.", 9),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Tokenize(nil, s)
		if want := tokenizeBytewise(s); !slices.Equal(got, want) {
			t.Fatalf("Tokenize(%q) = %q, restated %q", s, got, want)
		}
		if !utf8.ValidString(s) {
			return
		}
		var ref tokenizer
		ref.slow(s)
		if !slices.Equal(got, ref.dst) {
			t.Fatalf("Tokenize(%q) = %q, slow path gives %q", s, got, ref.dst)
		}
	})
}
