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
	fast := 0
	for _, b := range testBases {
		base, err := Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20000; i++ {
			var sb strings.Builder
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
	for _, s := range []string{"a/b", "../x.html", "/p?q=1", "./.././a/..", "a:b/c", "x/./y/../", "?q", "#f", "a'b?c'd"} {
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
