package whatwgurl

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// slow is ResolveHref without its fast path: the parser's answer.
func slow(base *URL, ref string) (string, bool) {
	u, err := Resolve(base, ref)
	if err != nil {
		return "", false
	}
	return u.Href(true), true
}

var testBases = []string{
	"http://h/", "http://h/a/b/c.html", "https://h.example:8443/docs/15/", "http://h/a/b/",
	"http://h/x?q=1#f", "http://127.0.0.2:8080/d%20e/f.html", "http://h/a/..b/c", "https://h/;p/x",
	"http://user@h/smth", "http://user:pass@h:21/a/",
}

// TestResolveHrefEqualsParser: the fast path gives the parser's answer on
// many random references made of the characters it takes and those it must
// refuse (percent, backslash, spaces, tabs, colons, quotes, non-ASCII, dots).
func TestResolveHrefEqualsParser(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 19))
	alphabet := []string{"a", "b", "Z", "0", ".", "..", "/", "//", "?", "#", "=", "&", ":", "'", "%", "%2e", "%zz",
		"\\", " ", "\t", "\n", "@", ";", "~", "-", "_", "é", "(", "*", "+", ",", "$", "!", "\"", "<", "`", "{"}
	// Absolute references: plain hosts, numeric and odd ones, ports.
	starts := []string{"", "", "", "#", "http://", "https://", "HTTP://", "http://h", "http://127.0.0.2", "http://127.1",
		"http://0x7f.1", "http://256.1.1.1", "http://a.b-c.d", "http://xn--bcher-kva.example", "http://h:80", "http://h:8080",
		"https://h:443", "http://h:0", "http://h:99999", "http://EXAMPLE.com", "http://01.2.3.4", "http://h.1", "http://u@h"}
	fast := 0
	for _, b := range testBases {
		base, err := Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20000; i++ {
			var sb strings.Builder
			sb.WriteString(starts[rng.IntN(len(starts))])
			for n := rng.IntN(8); n >= 0; n-- {
				sb.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			ref := sb.String()
			want, wantOK := slow(base, ref)
			if got, ok := fastResolve(base, ref); ok {
				fast++
				if !wantOK || got != want {
					t.Fatalf("base %q ref %q: fast path %q, parser %q (%v)", b, ref, got, want, wantOK)
				}
			}
			got, err := ResolveHref(base, ref)
			if (err == nil) != wantOK || got != want {
				t.Fatalf("base %q ref %q: ResolveHref %q (%v), parser %q", b, ref, got, err, want)
			}
		}
	}
	if fast < 10000 {
		t.Errorf("the fast path took only %d references: the test proves little", fast)
	}
}

func FuzzResolveHref(f *testing.F) {
	for _, s := range []string{"a/b", "../x.html", "/p?q=1", "./.././a/..", "a:b/c", "x/./y/../", "?q", "#f", "a'b?c'd",
		"http://h/a/../b?x", "https://h:8443", "http://127.0.0.2:8080/x", "http://h.0x1/", "#a b", "http://0-0", "http://h.1a", "http://a.9-x/p"} {
		f.Add(s)
	}
	bases := make([]*URL, 0, len(testBases))
	for _, b := range testBases {
		u, err := Parse(b)
		if err != nil {
			f.Fatal(err)
		}
		bases = append(bases, u)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		for _, base := range bases {
			if got, ok := fastResolve(base, ref); ok {
				if want, wantOK := slow(base, ref); !wantOK || got != want {
					t.Fatalf("base %q ref %q: fast path %q, parser %q (%v)", base.Href(false), ref, got, want, wantOK)
				}
			}
		}
	})
}

func BenchmarkResolveHref(b *testing.B) {
	base, _ := Parse("http://h.example/docs/15/sql-select.html")
	refs := []string{"sql-insert.html", "../14/index.html", "/docs/15/", "functions.html#f", "a/b/c.html?x=1"}
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			for _, r := range refs {
				ResolveHref(base, r)
			}
		}
	})
	b.Run("parser", func(b *testing.B) {
		for b.Loop() {
			for _, r := range refs {
				slow(base, r)
			}
		}
	})
}

// TestSplitPlainEqualsParser: the parts SplitPlain gives a plain absolute URL
// are the parser's, on many random URLs (plain and not).
func TestSplitPlainEqualsParser(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 37))
	starts := []string{"http://h", "https://h", "http://127.0.0.2", "http://127.1", "http://a.b-c.d", "http://h:8080",
		"http://h:80", "https://h:443", "HTTP://h", "http://EXAMPLE.com", "http://u@h", "http://h.0x1", "http://xn--bcher-kva.example"}
	alphabet := []string{"/", "/", "a", "b", ".", "..", "?", "=", "&", "'", "%", "#", ":", "@", ";", "~", " ", "\\", "é", "Z"}
	split := 0
	for i := 0; i < 400000; i++ {
		var sb strings.Builder
		sb.WriteString(starts[rng.IntN(len(starts))])
		for n := rng.IntN(8); n >= 0; n-- {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		raw := sb.String()
		p, ok := SplitPlain(raw)
		if !ok {
			continue
		}
		split++
		u, err := Parse(raw)
		if err != nil {
			t.Fatalf("%q: split, but the parser refuses it: %v", raw, err)
		}
		got := [5]string{p.Scheme(), p.Hostname(), p.Port(), p.Pathname(), p.Query()}
		want := [5]string{u.Scheme(), u.Hostname(), u.Port(), u.Pathname(), u.Query()}
		if got != want {
			t.Fatalf("%q: SplitPlain %q, parser %q", raw, got, want)
		}
	}
	if split < 10000 {
		t.Errorf("only %d URLs split: the test proves little", split)
	}
}
