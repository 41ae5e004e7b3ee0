package frontier

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCheckTrap(t *testing.T) {
	segs := func(n int, trailing bool) string {
		var sb strings.Builder
		sb.WriteString("http://example.com")
		for i := range n {
			sb.WriteByte('/')
			sb.WriteString(string(rune('a' + i%26)))
			sb.WriteString(strings.Repeat("x", i/26))
		}
		if trailing {
			sb.WriteByte('/')
		}
		return sb.String()
	}
	params := func(n int) string {
		p := make([]string, n)
		for i := range p {
			p[i] = "p" + strings.Repeat("x", i) + "=1"
		}
		return "http://example.com/s?" + strings.Join(p, "&")
	}
	long := func(n int) string {
		const prefix = "http://example.com/"
		return prefix + strings.Repeat("a", n-len(prefix))
	}
	def := DefaultTrapOptions()
	tests := []struct {
		name string
		url  string
		o    TrapOptions
		want error // nil, or the specific sentinel
	}{
		{"plain", "http://example.com/a/b/c.html?x=1&y=2", def, nil},
		{"root", "http://example.com/", def, nil},
		{"length at limit", long(2048), def, nil},
		{"length over limit", long(2049), def, ErrTrapLength},
		{"depth at limit", segs(16, false), def, nil},
		{"depth at limit trailing slash", segs(16, true), def, nil},
		{"depth over limit", segs(17, false), def, ErrTrapDepth},
		{"repeated a/b", "http://example.com/a/b/a/b/a/b/a", def, ErrTrapRepetition},
		{"repeated three times ok", "http://example.com/a/b/a/b/a/b", def, nil},
		{"calendar loop", "http://example.com/cal/next/next/next/next", def, ErrTrapRepetition},
		{"repeated empty segments", "http://example.com/a/////b", def, ErrTrapRepetition},
		{"three empty segments ok", "http://example.com/a////b", def, nil},
		{"query not part of path", "http://example.com/p?a/a/a/a/a", def, nil},
		{"params at limit", params(32), def, nil},
		{"params over limit", params(33), def, ErrTrapQueryParams},
		{"empty params ignored", "http://example.com/?a=1&&&&b=2", TrapOptions{MaxQueryParams: 2}, nil},
		{"custom depth", "http://example.com/a/b/c", TrapOptions{MaxPathDepth: 2}, ErrTrapDepth},
		{"custom repeat", "http://example.com/a/x/a", TrapOptions{MaxRepeatedSegment: 1}, ErrTrapRepetition},
		{"custom length", "http://example.com/abcdef", TrapOptions{MaxURLLength: 20}, ErrTrapLength},
		{"zero options mean defaults", segs(17, false), TrapOptions{}, ErrTrapDepth},
		{"negative options mean defaults", segs(16, false), TrapOptions{MaxPathDepth: -1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckTrap(tt.url, tt.o)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CheckTrap(%q) = %v, want nil", tt.url, err)
				}
				return
			}
			if !errors.Is(err, tt.want) || !errors.Is(err, ErrTrap) {
				t.Fatalf("CheckTrap(%q) = %v, want %v (and ErrTrap)", tt.url, err, tt.want)
			}
		})
	}
}

func TestCheckTrapNoAllocs(t *testing.T) {
	const u = "http://example.com/a/b/c/d/e/f/g/h.html?x=1&y=2&z=3"
	o := DefaultTrapOptions()
	if n := testing.AllocsPerRun(100, func() {
		if CheckTrap(u, o) != nil {
			t.Fatal("unexpected trap")
		}
	}); n != 0 {
		t.Errorf("CheckTrap allocates %v times per passing URL, want 0", n)
	}
}

func TestScope(t *testing.T) {
	type check struct {
		url  string
		want bool
	}
	tests := []struct {
		name   string
		o      ScopeOptions
		seeds  []string
		checks []check
	}{
		{
			name:  "host",
			o:     ScopeOptions{Mode: ScopeHost},
			seeds: []string{"http://example.com/docs/", "https://Second.example/"},
			checks: []check{
				{"http://example.com/other", true},
				{"https://example.com/", true},
				{"http://example.com:8080/x", true},
				{"http://example.com./x", true},
				{"http://second.example/a", true},
				{"http://www.example.com/", false},
				{"http://example.com.evil.org/", false},
				{"http://evil.org/?u=http://example.com/", false},
				{"not a url", false},
			},
		},
		{
			name:  "default mode is host",
			o:     ScopeOptions{},
			seeds: []string{"http://example.com/"},
			checks: []check{
				{"http://example.com/x", true},
				{"http://sub.example.com/x", false},
			},
		},
		{
			name:  "domain",
			o:     ScopeOptions{Mode: ScopeDomain},
			seeds: []string{"http://www.example.co.uk/", "http://192.0.2.1/", "http://[2001:db8::1]/", "http://localhost:8080/"},
			checks: []check{
				{"http://blog.example.co.uk/a", true},
				{"https://example.co.uk/", true},
				{"http://a.b.example.co.uk/", true},
				{"http://other.co.uk/", false},
				{"http://co.uk/", false},
				{"http://192.0.2.1:8080/x", true},
				{"http://192.0.2.2/", false},
				{"http://[2001:db8::1]:81/", true},
				{"http://[2001:db8::2]/", false},
				{"http://localhost/", true},
				{"http://other.localhost/", false},
			},
		},
		{
			name:  "prefix",
			o:     ScopeOptions{Mode: ScopePrefix},
			seeds: []string{"http://example.com/docs/guide/index.html", "https://other.org/a?x=/b/c", "http://third.net"},
			checks: []check{
				{"http://example.com/docs/guide/", true},
				{"http://example.com/docs/guide/p2.html?x=1", true},
				{"http://example.com/docs/guide/sub/deep", true},
				{"http://example.com/docs/", false},
				{"http://example.com/docs/guidebook", false},
				{"https://example.com/docs/guide/x", false},
				{"https://other.org/a2", true},
				{"https://other.org/b/c", true},
				{"http://third.net/anything", true},
				{"http://third.net.evil/", false},
			},
		},
		{
			name:  "any",
			o:     ScopeOptions{Mode: ScopeAny},
			seeds: nil,
			checks: []check{
				{"http://anything.example/", true},
				{"https://[::1]:8443/x", true},
				{"garbage", false},
			},
		},
		{
			name: "host with allow and deny",
			o: ScopeOptions{
				Mode:  ScopeHost,
				Allow: []string{`\.html$`, `/$`},
				Deny:  []string{`/private/`, `[?&]sessionid=`},
			},
			seeds: []string{"http://example.com/"},
			checks: []check{
				{"http://example.com/", true},
				{"http://example.com/a/page.html", true},
				{"http://example.com/a/image.png", false},
				{"http://example.com/private/page.html", false},
				{"http://example.com/dir/?sessionid=1", false},
				{"http://other.com/page.html", false},
			},
		},
		{
			name: "any with deny only",
			o:    ScopeOptions{Mode: ScopeAny, Deny: []string{`^https?://[^/]*\.onion/`}},
			checks: []check{
				{"http://example.com/", true},
				{"http://abc.onion/x", false},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewScope(tt.o, tt.seeds)
			if err != nil {
				t.Fatalf("NewScope: %v", err)
			}
			for _, c := range tt.checks {
				if got := s.InScope(c.url); got != c.want {
					t.Errorf("InScope(%q) = %v, want %v", c.url, got, c.want)
				}
			}
		})
	}
}

func TestNewScopeErrors(t *testing.T) {
	tests := []struct {
		name     string
		o        ScopeOptions
		seeds    []string
		contains []string
		is       []error
	}{
		{
			name:     "every bad regexp listed",
			o:        ScopeOptions{Allow: []string{`ok`, `(unclosed`}, Deny: []string{`[z-a]`, `fine`, `*star`}},
			seeds:    []string{"http://example.com/"},
			contains: []string{`allow[1] "(unclosed"`, `deny[0] "[z-a]"`, `deny[2] "*star"`},
		},
		{
			name:     "unknown mode",
			o:        ScopeOptions{Mode: "subdomain"},
			seeds:    []string{"http://example.com/"},
			contains: []string{`unknown mode "subdomain"`},
		},
		{
			name:     "no seeds for host mode",
			o:        ScopeOptions{Mode: ScopeHost},
			contains: []string{"needs at least one seed"},
		},
		{
			name:     "bad seed",
			o:        ScopeOptions{Mode: ScopePrefix},
			seeds:    []string{"http://example.com/", "ftp://example.com/"},
			contains: []string{"seed 1"},
			is:       []error{ErrScheme},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewScope(tt.o, tt.seeds)
			if err == nil {
				t.Fatalf("NewScope succeeded (%+v), want error", s)
			}
			if !errors.Is(err, ErrScope) {
				t.Errorf("error %v does not wrap ErrScope", err)
			}
			for _, want := range tt.is {
				if !errors.Is(err, want) {
					t.Errorf("error %v does not wrap %v", err, want)
				}
			}
			for _, sub := range tt.contains {
				if !strings.Contains(err.Error(), sub) {
					t.Errorf("error %q does not mention %q", err, sub)
				}
			}
		})
	}
}

func BenchmarkCheckTrap(b *testing.B) {
	const u = "http://example.com/a/b/c/d/e/f/g/h.html?x=1&y=2&z=3"
	o := DefaultTrapOptions()
	b.SetBytes(int64(len(u)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if CheckTrap(u, o) != nil {
			b.Fatal("unexpected trap")
		}
	}
}

func BenchmarkInScope(b *testing.B) {
	for _, mode := range []ScopeMode{ScopeHost, ScopeDomain, ScopePrefix} {
		b.Run(string(mode), func(b *testing.B) {
			s, err := NewScope(ScopeOptions{Mode: mode, Deny: []string{`/private/`}}, []string{"http://www.example.co.uk/docs/"})
			if err != nil {
				b.Fatal(err)
			}
			const u = "http://www.example.co.uk/docs/guide/page.html?x=1"
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if !s.InScope(u) {
					b.Fatal("out of scope")
				}
			}
		})
	}
}

func ExampleScope_InScope() {
	s, err := NewScope(ScopeOptions{Mode: ScopePrefix, Deny: []string{`\.pdf$`}},
		[]string{"https://example.org/blog/2024/index.html"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, u := range []string{
		"https://example.org/blog/2024/post.html",
		"https://example.org/blog/2024/paper.pdf",
		"https://example.org/about",
	} {
		fmt.Println(s.InScope(u), CheckTrap(u, DefaultTrapOptions()) == nil)
	}
	// Output:
	// true true
	// false true
	// false true
}

// TestScopeWiden: seeds added while the crawl runs widen each mode as seeds
// given to NewScope do, while deny still applies; a bad seed changes nothing.
func TestScopeWiden(t *testing.T) {
	cases := []struct {
		mode     ScopeMode
		in, out  string
		addition string
	}{
		{ScopeHost, "http://b.example/x", "http://c.example/x", "http://b.example/"},
		{ScopeDomain, "http://www.b-site.org/x", "http://c-site.org/x", "http://b-site.org/"},
		{ScopePrefix, "http://a.example/docs/x", "http://a.example/other", "http://a.example/docs/index.html"},
	}
	for _, c := range cases {
		s, err := NewScope(ScopeOptions{Mode: c.mode, Deny: []string{`/private`}}, []string{"http://a.example/start/"})
		if err != nil {
			t.Fatal(err)
		}
		if s.InScope(c.in) {
			t.Fatalf("%s: %s in scope before Widen", c.mode, c.in)
		}
		if err := s.Widen([]string{"::bad"}); err == nil || s.InScope(c.in) {
			t.Fatalf("%s: bad seed: err %v, in scope %v", c.mode, err, s.InScope(c.in))
		}
		if err := s.Widen([]string{c.addition}); err != nil {
			t.Fatal(err)
		}
		if !s.InScope(c.in) || s.InScope(c.out) || !s.InScope("http://a.example/start/y") {
			t.Errorf("%s after Widen(%s): %s %v (want true), %s %v (want false), first seed %v",
				c.mode, c.addition, c.in, s.InScope(c.in), c.out, s.InScope(c.out), s.InScope("http://a.example/start/y"))
		}
		if s.InScope(c.in + "/private") {
			t.Errorf("%s: deny no longer applies after Widen", c.mode)
		}
	}
}

// TestScopeWidenRefusesExcluded: a seed the deny or allow list excludes is
// refused, and the scope keeps what it admitted.
func TestScopeWidenRefusesExcluded(t *testing.T) {
	s, err := NewScope(ScopeOptions{Allow: []string{`^http://[a-z.]+/`}, Deny: []string{`/private`}}, []string{"http://a.example/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range []string{"http://b.example/private/", "http://10.0.0.1:8080/"} {
		if err := s.Widen([]string{"http://c.example/", seed}); !errors.Is(err, ErrScope) {
			t.Errorf("Widen(%s): %v, want ErrScope", seed, err)
		}
	}
	if s.InScope("http://c.example/x") || !s.InScope("http://a.example/x") {
		t.Errorf("a refused Widen changed the scope")
	}
}
