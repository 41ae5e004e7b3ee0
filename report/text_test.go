package report

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostileData has everything that could break the layout: very long URLs
// and hosts, wide characters, terminal escapes and huge numbers.
func hostileData(tb testing.TB) *Data {
	tb.Helper()
	d := sampleData(tb)
	long := "https://" + strings.Repeat("sub.", 40) + "example.com/" + strings.Repeat("路径/", 60) + "?q=" +
		strings.Repeat("x", 200)
	d.Pages = append(d.Pages,
		Page{URL: long, Host: strings.Repeat("h", 150) + ".test", Status: 200, Class: ClassNearDuplicate,
			DuplicateOf: long + "#orig", Similarity: 0.9, Method: strings.Repeat("m", 40)},
		Page{URL: "http://esc.test/\x1b]0;pwned\x07\x1b[2J", Host: "esc.test\x1b[31m", Status: 200,
			Class: strings.Repeat("weird_class_", 5), DuplicateOf: "http://esc.test/\u202eevil", Similarity: 0.8},
	)
	d.Stats.Requests = 1<<62 - 1
	d.Stats.ByClass[strings.Repeat("custom", 30)] = 1 << 40
	d.Filter = strings.Repeat("filter ", 40)
	d.Mirrors = append(d.Mirrors, Mirror{Host: strings.Repeat("m", 90) + ".test", Prefix: "/" + strings.Repeat("p/", 50),
		MirrorOf: "orig.test", OriginalPrefix: "/" + strings.Repeat("路/", 50), PathsCompared: 1 << 40,
		PathsMatched: 1 << 40, Score: 1, RequestsSaved: 1 << 40})
	return d
}

func TestWriteTextWidth(t *testing.T) {
	tests := []struct {
		name string
		d    *Data
	}{
		{"sample", sampleData(t)},
		{"empty", &Data{}},
		{"hostile", hostileData(t)},
		{"big", bigData(t, 2000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteText(&buf, tt.d); err != nil {
				t.Fatal(err)
			}
			if !utf8.Valid(buf.Bytes()) {
				t.Error("output is not valid UTF-8")
			}
			for i, line := range strings.Split(buf.String(), "\n") {
				if w := displayWidth(line); w > TextWidth {
					t.Errorf("line %d is %d columns wide:\n%s", i+1, w, line)
				}
				if strings.HasSuffix(line, " ") {
					t.Errorf("line %d has trailing spaces: %q", i+1, line)
				}
				if n := utf8.RuneCountInString(line); n > TextWidth {
					t.Errorf("line %d has %d runes", i+1, n)
				}
				for _, r := range line {
					if unsafeRune(r) {
						t.Errorf("line %d contains control or format character %U: %q", i+1, r, line)
					}
				}
			}
		})
	}
}

func TestWriteTextContent(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteText(&buf, sampleData(t)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	wantLines := []string{
		"  complete   yes (frontier exhausted)",
		"  filter     altavista 6x14 r=2",
		"  duplicates 7 (2 exact, 5 near); 1 mirror-skipped, saving 53 requests",
		"  near_duplicate               5   31.2%  ########################################",
		"  HOST                                     FETCHED  UNIQUE   EXACT    NEAR  MIRROR   OTHER    DUP%",
		"  www.example.com                                8       3       1       2       0       3   50.0%",
		"  TOTAL                                         13       4       2       5       1       4   66.7%",
		"TOP DUPLICATE CLUSTERS (4 of 4)",
		"   1. 3 duplicates of http://www.example.com/a",
		"      near_duplicate  0.970 supershingle http://mirror.example.org/docs/a",
		"   4. 1 duplicate of http://www.example.com/",
		"  mirror.example.org/docs/                        -> www.example.com/",
		"      score 0.950   paths matched 19 of 20   requests saved 41",
		"      score 1.000   paths matched 8 of 8   requests saved 12",
		"  shop.example.net          /*/: set to (S(kx3wq0ab4c5d2e1f0a9b8c7d)), 40 duplicate pairs on 5 URLs",
	}
	lines := strings.Split(out, "\n")
	for _, w := range wantLines {
		found := false
		for _, l := range lines {
			if l == w {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("missing line %q in:\n%s", w, out)
		}
	}
	// The 10.0.0.9 row comes before 10.0.0.10 (numeric-aware order).
	if i, j := strings.Index(out, "  10.0.0.9:8080"), strings.Index(out, "  10.0.0.10:8080"); i < 0 || j < i {
		t.Errorf("hosts not in numeric order: 10.0.0.9 at %d, 10.0.0.10 at %d", i, j)
	}
	// The long URL keeps its host and its last segment around an ellipsis.
	if !strings.Contains(out, "http://evil.test/very-long-pa…") || !strings.Contains(out, "…ry-long-path-segment/end.html") {
		t.Errorf("long URL not shortened in the middle:\n%s", out)
	}
}

func TestWriteTextTopTenClusters(t *testing.T) {
	d := bigData(t, 3000)
	var buf bytes.Buffer
	if err := WriteText(&buf, d); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "TOP DUPLICATE CLUSTERS (10 of ") {
		t.Errorf("heading does not say 10 of n clusters")
	}
	if strings.Contains(out, "  11. ") {
		t.Error("more than 10 clusters listed")
	}
	if !strings.Contains(out, "… and ") {
		t.Error("large clusters do not say how many members are not listed")
	}
}

func TestTruncateMiddle(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijkl", 10, "abcde…ijkl"},
		{"abcdefghijkl", 1, "…"},
		{"abcdefghijkl", 0, ""},
		{"abcdefghijkl", 2, "a…"},
		{"日本語のテキスト", 7, "日…スト"}, // wide runes: 2 columns each; the head's spare column goes to the tail
		{"a\x1b[31mb", 20, "a?[31mb"},
		{"bidi\u202eoverride", 20, "bidi?override"},
	}
	for _, tt := range tests {
		got := truncateMiddle(tt.in, tt.max)
		if got != tt.want {
			t.Errorf("truncateMiddle(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
		if w := displayWidth(got); w > max(tt.max, 0) {
			t.Errorf("truncateMiddle(%q, %d) is %d columns", tt.in, tt.max, w)
		}
	}
}

func TestDisplayWidth(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"…", 1},
		{"日本", 4},
		{"한국", 4},
		{"ＡＢ", 4}, // fullwidth
		{"😀", 2},
		{"é", 1},
	}
	for _, tt := range tests {
		if got := displayWidth(tt.in); got != tt.want {
			t.Errorf("displayWidth(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func FuzzTruncateMiddle(f *testing.F) {
	for _, s := range []string{"", "abc", "http://example.com/a/very/long/path", "日本語のテキスト", "a\x1bb", "\xff\xfe"} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, s string, maxWidth int) {
		maxWidth = maxWidth % 200
		got := truncateMiddle(s, maxWidth)
		if w := displayWidth(got); w > max(maxWidth, 0) {
			t.Fatalf("truncateMiddle(%q, %d) = %q, %d columns", s, maxWidth, got, w)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("truncateMiddle(%q, %d) = %q, invalid UTF-8", s, maxWidth, got)
		}
		clean := sanitize(s)
		if displayWidth(clean) <= maxWidth {
			if got != clean {
				t.Fatalf("truncateMiddle(%q, %d) = %q, want it unchanged", s, maxWidth, got)
			}
			return
		}
		if maxWidth >= 2 {
			head, tail, ok := strings.Cut(got, "…")
			if !ok || !strings.HasPrefix(clean, head) || !strings.HasSuffix(clean, tail) {
				t.Fatalf("truncateMiddle(%q, %d) = %q: not a head and tail of the input", s, maxWidth, got)
			}
		}
	})
}
