package frontier

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// canonCheckOutput asserts the properties every Canonicalize result must have: idempotence,
// an http(s) prefix, and an exact round trip through both WHATWG and net/url parsing.
func canonCheckOutput(tb testing.TB, in, got string) {
	tb.Helper()
	if !strings.HasPrefix(got, "http://") && !strings.HasPrefix(got, "https://") {
		tb.Errorf("Canonicalize(%q) = %q: want http:// or https:// prefix", in, got)
	}
	again, err := Canonicalize(got, nil)
	if err != nil {
		tb.Errorf("Canonicalize(Canonicalize(%q) = %q): %v", in, got, err)
	} else if again != got {
		tb.Errorf("not idempotent: Canonicalize(%q) = %q, then %q", in, got, again)
	}
	w, err := whatwgParse(got, "")
	if err != nil {
		tb.Errorf("WHATWG parse of canonical %q: %v", got, err)
	} else if href := w.Href(false); href != got {
		tb.Errorf("WHATWG href of canonical %q = %q", got, href)
	}
	nu, err := url.Parse(got)
	if err != nil {
		tb.Errorf("net/url parse of canonical %q: %v", got, err)
	} else if s := nu.String(); s != got {
		tb.Errorf("net/url round trip of canonical %q = %q", got, s)
	}
}

func TestCanonicalize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"brief example", "HTTP://Example.COM:80/a/./b/../c#x", "http://example.com/a/c"},
		{"tilde decoded", "http://example.com/%7efoo/%7E", "http://example.com/~foo/~"},
		{"unreserved decoded", "http://example.com/%41%62%2d%2E%5f%30", "http://example.com/Ab-._0"},
		{"space encoded", "http://h/a b", "http://h/a%20b"},
		{"IDN host", "http://Bücher.example/", "http://xn--bcher-kva.example/"},
		{"IDN host fullwidth", "http://ｅｘａｍｐｌｅ.com/", "http://example.com/"},
		{"empty query", "http://example.com/?", "http://example.com/"},
		{"empty query and fragment", "http://example.com/x?#", "http://example.com/x"},
		{"empty fragment", "http://example.com/#", "http://example.com/"},
		{"empty path", "http://example.com", "http://example.com/"},
		{"https default port", "https://example.com:443", "https://example.com/"},
		{"non-default port kept", "https://example.com:8443/x", "https://example.com:8443/x"},
		{"http on 443 keeps port", "http://example.com:443/", "http://example.com:443/"},
		{"port leading zeros", "http://example.com:00080/", "http://example.com/"},
		{"reserved escapes upper-cased", "http://example.com/a%2fb%3a", "http://example.com/a%2Fb%3A"},
		{"query order kept", "http://example.com/p?b=2&a=1&b=1", "http://example.com/p?b=2&a=1&b=1"},
		{"query unreserved decoded", "http://example.com/?q=%7e%2d&r=%2f", "http://example.com/?q=~-&r=%2F"},
		{"query space", "http://example.com/?a b", "http://example.com/?a%20b"},
		{"query quote", "http://example.com/?q='x'", "http://example.com/?q=%27x%27"},
		{"query slash and question", "http://example.com/?u=/a?b", "http://example.com/?u=/a?b"},
		{"lone percent path", "http://example.com/100%", "http://example.com/100%25"},
		{"bad escape query", "http://example.com/?a=%zz", "http://example.com/?a=%25zz"},
		{"user info removed", "http://user:pw@Example.com/x", "http://example.com/x"},
		{"ipv4 shorthand", "http://0x7f.1/", "http://127.0.0.1/"},
		{"ipv6", "http://[0:0::1]:8080/", "http://[::1]:8080/"},
		{"RFC3986 forbidden in path", "http://example.com/a|b^c[d]{e}`", "http://example.com/a%7Cb%5Ec%5Bd%5D%7Be%7D%60"},
		{"non-ASCII path", "http://example.com/ünï", "http://example.com/%C3%BCn%C3%AF"},
		{"whitespace stripped", " \thttp://exa\nmple.com/a\tb \n", "http://example.com/ab"},
		{"encoded dot segments", "http://example.com/a/%2e%2E/b/%2e/c", "http://example.com/b/c"},
		{"dots above root", "http://example.com/../../a", "http://example.com/a"},
		{"encoded dot not a segment", "http://example.com/a%2e/b", "http://example.com/a./b"},
		{"trailing dot host kept", "http://EXAMPLE.com./", "http://example.com./"},
		{"backslashes", `http:\\example.com\a\b`, "http://example.com/a/b"},
		{"fragment with query chars", "http://example.com/p?a=1#f?x=y", "http://example.com/p?a=1"},
		{"underscore host", "http://my_host.example/", "http://my_host.example/"},
		{"sub-delims kept", "http://example.com/a;b=c,d!$&'()*+:@", "http://example.com/a;b=c,d!$&'()*+:@"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonicalize(tt.in, nil)
			if err != nil {
				t.Fatalf("Canonicalize(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("Canonicalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
			canonCheckOutput(t, tt.in, got)
		})
	}
}

func TestCanonicalizeBase(t *testing.T) {
	base, err := url.Parse("http://Example.com/dir/page.html?x=1#top")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in, want string
		wantErr  error
	}{
		{in: "../x", want: "http://example.com/x"},
		{in: "sub/y.html", want: "http://example.com/dir/sub/y.html"},
		{in: "?q", want: "http://example.com/dir/page.html?q"},
		{in: "#frag", want: "http://example.com/dir/page.html?x=1"},
		{in: "", want: "http://example.com/dir/page.html?x=1"},
		{in: "//Other.org/p", want: "http://other.org/p"},
		{in: "https://a.example/b", want: "https://a.example/b"},
		{in: "/%7euser/", want: "http://example.com/~user/"},
		{in: "mailto:a@example.com", wantErr: ErrScheme},
		{in: "javascript:void(0)", wantErr: ErrScheme},
		{in: "http://exa mple.com/", wantErr: ErrParse},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Canonicalize(tt.in, base)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Canonicalize(%q, base) = %q, %v; want error %v", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Canonicalize(%q, base): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("Canonicalize(%q, base) = %q, want %q", tt.in, got, tt.want)
			}
			canonCheckOutput(t, tt.in, got)
		})
	}
}

func TestCanonicalizeErrors(t *testing.T) {
	tests := []struct {
		in      string
		wantErr error
	}{
		{"ftp://example.com/f", ErrScheme},
		{"mailto:a@example.com", ErrScheme},
		{"javascript:alert(1)", ErrScheme},
		{"data:text/plain,hi", ErrScheme},
		{"file:///etc/passwd", ErrScheme},
		{"ws://example.com/", ErrScheme},
		{"", ErrParse},
		{"/relative/without/base", ErrParse},
		{"http://", ErrParse},
		{"http://exa mple.com/", ErrParse},
		{"http://[::1/", ErrParse},
		{"http://example.com:99999/", ErrParse},
		{"http://a{b}.example/", ErrHost},
		{"http://a!b.example/", ErrHost},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Canonicalize(tt.in, nil)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Canonicalize(%q) = %q, %v; want error %v", tt.in, got, err, tt.wantErr)
			}
			if got != "" {
				t.Errorf("Canonicalize(%q) returned %q with error", tt.in, got)
			}
		})
	}
}

func TestCanonicalizeBadBase(t *testing.T) {
	base := &url.URL{Scheme: "http", Host: "exa mple.com", Path: "/"}
	if _, err := Canonicalize("x", base); !errors.Is(err, ErrParse) {
		t.Fatalf("Canonicalize with unparsable base: err = %v, want ErrParse", err)
	}
}

func TestHostKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://example.com/a", "example.com"},
		{"https://example.com:8443/a?b", "example.com:8443"},
		{"http://Example.COM:80/", "example.com"},
		{"https://example.com:443", "example.com"},
		{"http://example.com:443/", "example.com:443"},
		{"http://user@example.com:81/", "example.com:81"},
		{"http://[::1]:8080/x", "[::1]:8080"},
		{"http://[::1]/x", "[::1]"},
		{"http://127.0.0.1?x", "127.0.0.1"},
		{"not a url", ""},
		{"http:///path", ""},
	}
	for _, tt := range tests {
		if got := HostKey(tt.in); got != tt.want {
			t.Errorf("HostKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// whatwgCase is one object of the web-platform-tests urltestdata.json file.
type whatwgCase struct {
	Input    string  `json:"input"`
	Base     *string `json:"base"`
	Href     string  `json:"href"`
	Protocol string  `json:"protocol"`
	Failure  bool    `json:"failure"`
}

// whatwgSkipped lists the http(s) cases of the test data that whatwgParse (nlnwa/whatwg-url
// v0.6.2, spec snapshot of May 2023) does not follow, keyed by input, with the reason.
var whatwgSkipped = map[string]string{
	"http://a.b.c.xn--pokxncvks":  "newer spec (UTS #46 rev. 31 IDNA): invalid-punycode-decoding label accepted; x/net/idna rejects it",
	"http://10.0.0.xn--pokxncvks": "newer spec (UTS #46 rev. 31 IDNA): invalid-punycode-decoding label accepted; x/net/idna rejects it",
	"http://a.b.c.XN--pokxncvks":  "newer spec (UTS #46 rev. 31 IDNA): invalid-punycode-decoding label accepted; x/net/idna rejects it",
	"http://a.b.c.Xn--pokxncvks":  "newer spec (UTS #46 rev. 31 IDNA): invalid-punycode-decoding label accepted; x/net/idna rejects it",
	"http://10.0.0.XN--pokxncvks": "newer spec (UTS #46 rev. 31 IDNA): invalid-punycode-decoding label accepted; x/net/idna rejects it",
	"http://10.0.0.xN--pokxncvks": "newer spec (UTS #46 rev. 31 IDNA): invalid-punycode-decoding label accepted; x/net/idna rejects it",
	"https://xn--/":               "newer spec (UTS #46 rev. 31 IDNA): empty punycode label \"xn--\" accepted; x/net/idna rejects it",
}

var whatwgSchemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]*:`)

// whatwgHTTPish reports whether a case would produce an http(s) URL if it parsed: its
// input names http or https, or it has no scheme and its base is http(s).
func whatwgHTTPish(c whatwgCase) bool {
	isHTTP := func(s string) bool {
		s = strings.ToLower(strings.Trim(s, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\v\f\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f "))
		s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
		return strings.HasPrefix(s, "http:") || strings.HasPrefix(s, "https:")
	}
	in := strings.Trim(c.Input, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\v\f\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ")
	if whatwgSchemeRE.MatchString(strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(in)) {
		return isHTTP(in)
	}
	return c.Base != nil && isHTTP(*c.Base)
}

func TestWHATWG(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "whatwg", "urltestdata.json"))
	if err != nil {
		t.Fatal(err)
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(data, &entries); err != nil {
		t.Fatalf("decode urltestdata.json: %v", err)
	}
	var passed, skipped, rejected, rejectedHTTP, otherScheme, hostRefused int
	seenSkip := make(map[string]bool)
	for i, raw := range entries {
		var c whatwgCase
		if json.Unmarshal(raw, &c) != nil {
			continue // a comment string
		}
		baseHref := ""
		if c.Base != nil {
			baseHref = *c.Base
		}
		u, err := whatwgParse(c.Input, baseHref)
		switch {
		case c.Failure:
			if err == nil {
				t.Errorf("case %d: %q (base %q) must fail, parsed as %q", i, c.Input, baseHref, u.Href(false))
				continue
			}
			if !errors.Is(err, ErrParse) {
				t.Errorf("case %d: %q: error %v does not wrap ErrParse", i, c.Input, err)
			}
			rejected++
			if whatwgHTTPish(c) {
				rejectedHTTP++
			}
		case c.Protocol == "http:" || c.Protocol == "https:":
			if reason, ok := whatwgSkipped[c.Input]; ok {
				seenSkip[c.Input] = true
				skipped++
				t.Logf("case %d skipped: %q: %s", i, c.Input, reason)
				continue
			}
			if err != nil {
				t.Errorf("case %d: %q (base %q): %v; want %q", i, c.Input, baseHref, err, c.Href)
				continue
			}
			if got := u.Href(false); got != c.Href {
				t.Errorf("case %d: %q (base %q): href %q, want %q", i, c.Input, baseHref, got, c.Href)
				continue
			}
			passed++
			// The crawler steps on top must keep the result canonical, or refuse the host.
			got, err := canonicalizeParsed(u, c.Input)
			if errors.Is(err, ErrHost) {
				hostRefused++
				continue
			}
			if err != nil {
				t.Errorf("case %d: canonicalize %q: %v", i, c.Href, err)
				continue
			}
			canonCheckOutput(t, c.Href, got)
		default:
			if err == nil {
				if _, cerr := canonicalizeParsed(u, c.Input); !errors.Is(cerr, ErrScheme) {
					t.Errorf("case %d: %q (%s) canonicalize error = %v, want ErrScheme", i, c.Input, c.Protocol, cerr)
				}
				otherScheme++
			}
		}
	}
	for in := range whatwgSkipped {
		if !seenSkip[in] {
			t.Errorf("skip list entry %q matches no http(s) case", in)
		}
	}
	if passed < 230 || rejected < 260 {
		t.Errorf("too few cases ran: %d passed, %d rejected", passed, rejected)
	}
	t.Logf("WHATWG: http(s) success cases: %d passed (%d then refused by Canonicalize with ErrHost), %d skipped; "+
		"failure cases rejected: %d (%d http-ish); other-scheme cases refused with ErrScheme: %d",
		passed, hostRefused, skipped, rejected, rejectedHTTP, otherScheme)
}

func BenchmarkCanonicalize(b *testing.B) {
	inputs := []string{
		"HTTP://Example.COM:80/a/./b/../c#x",
		"https://www.example.org/search?q=near+duplicate&page=2",
		"http://bücher.example/%7euser/index.html",
		"http://example.com/a b/c%2fd?x=%zz",
	}
	var n int64
	for _, in := range inputs {
		n += int64(len(in))
	}
	b.SetBytes(n / int64(len(inputs)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Canonicalize(inputs[i%len(inputs)], nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCanonicalizeWithBase(b *testing.B) {
	base, err := url.Parse("https://www.example.org/dir/page.html")
	if err != nil {
		b.Fatal(err)
	}
	const in = "../other/./page.html?x=1#frag"
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Canonicalize(in, base); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHostKey(b *testing.B) {
	const in = "https://www.example.org:8443/dir/page.html?x=1"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if HostKey(in) == "" {
			b.Fatal("empty key")
		}
	}
}

// TestCanonicalizeConcurrent runs the shared WHATWG parser from several goroutines; under
// -race it proves Canonicalize keeps no mutable shared state.
func TestCanonicalizeConcurrent(t *testing.T) {
	base, err := url.Parse("http://example.com/dir/")
	if err != nil {
		t.Fatal(err)
	}
	inputs := []string{"a/../b", "HTTP://Bücher.example:80/%7e", "?q=1#f", "//other.org"}
	want := make([]string, len(inputs))
	for i, in := range inputs {
		if want[i], err = Canonicalize(in, base); err != nil {
			t.Fatal(err)
		}
	}
	const workers = 4
	errc := make(chan error, workers)
	for range workers {
		go func() {
			for n := range 200 {
				i := n % len(inputs)
				got, err := Canonicalize(inputs[i], base)
				if err == nil && got != want[i] {
					err = errors.New("got " + got + ", want " + want[i])
				}
				if err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for range workers {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
}

func ExampleCanonicalize() {
	base, _ := url.Parse("http://example.com/docs/index.html")
	for _, href := range []string{"HTTP://Example.COM:80/a/./b/../c#x", "../%7euser/a b?", "mailto:x@example.com"} {
		c, err := Canonicalize(href, base)
		if err != nil {
			fmt.Println("error:", errors.Is(err, ErrScheme))
			continue
		}
		fmt.Println(c, HostKey(c))
	}
	// Output:
	// http://example.com/a/c example.com
	// http://example.com/~user/a%20b example.com
	// error: true
}

// Host names beyond DNS limits are not fetchable (and their punycode labels
// need not parse again, which broke idempotence: found by FuzzCanonicalize).
func TestCanonicalizeDNSLimits(t *testing.T) {
	l63 := strings.Repeat("a", 63)
	if _, err := Canonicalize("http://"+l63+".example/", nil); err != nil {
		t.Errorf("63-byte label refused: %v", err)
	}
	if _, err := Canonicalize("http://"+l63+"a.example/", nil); err == nil {
		t.Error("64-byte label accepted")
	}
	long := strings.Repeat(l63+".", 4) // 256 bytes
	if _, err := Canonicalize("http://"+long+"com/", nil); err == nil {
		t.Error("name over 253 bytes accepted")
	}
	if _, err := Canonicalize("http://Bü"+strings.Repeat("n", 80)+".example/", nil); err == nil {
		t.Error("IDNA label whose punycode exceeds 63 bytes accepted")
	}
}
