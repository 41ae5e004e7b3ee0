package frontier

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// FuzzCanonicalize checks that every accepted input yields an http(s) URL that is a fixed
// point of Canonicalize and parses back unchanged (WHATWG and net/url), and that rejected
// inputs fail with one of the package's sentinel errors.
func FuzzCanonicalize(f *testing.F) {
	seeds := []string{
		"HTTP://Example.COM:80/a/./b/../c#x",
		"http://h/a/..;jsessionid=1/b",
		"http://h/x/%2E.;JSESSIONID=z/y?sid=0123456789abcdef0",
		"http://h/a b",
		"http://example.com/%7e?%7e",
		"http://Bücher.example/ünï?q=ä#f",
		"http://example.com/?",
		"https://[0:0::1]:443/x/../y",
		"http://0x7f.1/%2e%2E/%2e/",
		"http://user:pw@example.com:8080/a%2fb",
		"http://example.com/100%?a=%zz&b=%4",
		`http:\\example.com\a|b^c[d]{e}`,
		"  http://exa\tmple.com/\n ",
		"//example.com/x",
		"../relative",
		"ftp://example.com/",
		"javascript:alert(1)",
		"http://a{b}.example/",
		"http://example.com/a/b/a/b/a/b/a",
		"http://xn--bcher-kva.example./",
		"http://example.com/%C3%BC%c3%bc",
		"http://example.com/?q='\"<>`",
		"http://example.com/a;jsessionid=1;JSESSIONID=2/b;x=1?PHPSESSID=3&&sid=0123456789abcdef&q",
		"http://example.com/?%6Asessionid=1&ASPSESSIONIDAB=2&",
	}
	for _, s := range seeds {
		f.Add(s, "")
		f.Add(s, "http://base.example/dir/page?x#y")
	}
	f.Fuzz(func(t *testing.T, raw, baseRaw string) {
		var base *url.URL
		if baseRaw != "" {
			b, err := url.Parse(baseRaw)
			if err != nil {
				return
			}
			base = b
		}
		got, err := Canonicalize(raw, base)
		if err != nil {
			if !errors.Is(err, ErrParse) && !errors.Is(err, ErrScheme) && !errors.Is(err, ErrHost) {
				t.Fatalf("Canonicalize(%q, %q): error %v wraps no sentinel", raw, baseRaw, err)
			}
			return
		}
		if !strings.HasPrefix(got, "http://") && !strings.HasPrefix(got, "https://") {
			t.Fatalf("Canonicalize(%q, %q) = %q: not http(s)", raw, baseRaw, got)
		}
		if strings.ContainsAny(got, "# \t\n") {
			t.Fatalf("Canonicalize(%q, %q) = %q: contains fragment or whitespace", raw, baseRaw, got)
		}
		canonCheckOutput(t, raw, got)
		if HostKey(got) == "" {
			t.Fatalf("HostKey(%q) is empty", got)
		}
		// A canonical URL is also a valid base for itself.
		nu, err := url.Parse(got)
		if err != nil {
			t.Fatalf("net/url parse %q: %v", got, err)
		}
		if again, err := Canonicalize("", nu); err != nil || again != got {
			t.Fatalf("Canonicalize(\"\", %q) = %q, %v", got, again, err)
		}
	})
}
