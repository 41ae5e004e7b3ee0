package parse

import (
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLinksResolvedAsBrowsersDo: hrefs are resolved by the WHATWG URL parser,
// as a browser resolves them, not by net/url, which dropped "/%%%", "/a%zz" and
// "/ok%" and turned "/back\slash" into "/back%5Cslash". Percent signs in every
// position, backslashes, tabs and newlines inside the href, spaces around it,
// non-ASCII paths and hosts (IDNA), scheme-relative, query-only, fragment-only
// and dot-segment references.
func TestLinksResolvedAsBrowsersDo(t *testing.T) {
	const page = "http://example.com/dir/page.html?x=1"
	tests := []struct {
		href string
		want string // "" when there is no link
	}{
		// Percent signs.
		{"/%%%", "http://example.com/%%%"},
		{"/a%zz", "http://example.com/a%zz"},
		{"/ok%", "http://example.com/ok%"},
		{"%", "http://example.com/dir/%"},
		{"/%2", "http://example.com/%2"},
		{"/%2g", "http://example.com/%2g"},
		{"/%25", "http://example.com/%25"},
		{"/%41%62", "http://example.com/%41%62"},
		{"/%e2%82%ac", "http://example.com/%e2%82%ac"},
		{"/p?q=%", "http://example.com/p?q=%"},
		{"/p?q=%zz&r=100%", "http://example.com/p?q=%zz&r=100%"},
		{"/p?%%%", "http://example.com/p?%%%"},
		{"/p#%%", "http://example.com/p"},
		{"http://example.com/a%zz/b", "http://example.com/a%zz/b"},
		{"http://ex%41mple.com/", "http://example.com/"},
		{"http://ex%ample.com/", ""}, // a '%' that does not decode is forbidden in a host
		// Backslashes are slashes in special URLs.
		{"/back\\slash", "http://example.com/back/slash"},
		{"\\root", "http://example.com/root"},
		{"sub\\file", "http://example.com/dir/sub/file"},
		{"\\\\other.example\\x", "http://other.example/x"},
		{"http:\\\\other.example\\y", "http://other.example/y"},
		{"/q?a\\b", "http://example.com/q?a\\b"}, // not in the query
		// Tabs and newlines inside, spaces and controls around.
		{"/ta\tb", "http://example.com/tab"},
		{"/new\nline", "http://example.com/newline"},
		{"/cr\r\nlf", "http://example.com/crlf"},
		{"ht\ttp://other.example/", "http://other.example/"},
		{"  /spaced  ", "http://example.com/spaced"},
		{"\f/ff\f", "http://example.com/ff"},
		{"/in side", "http://example.com/in%20side"},
		{"/q?in side", "http://example.com/q?in%20side"},
		{"/\"quotes\"<>`{}", "http://example.com/%22quotes%22%3C%3E%60%7B%7D"},
		{"/q?'single'", "http://example.com/q?%27single%27"},
		// Non-ASCII paths and hosts.
		{"/ünï/€", "http://example.com/%C3%BCn%C3%AF/%E2%82%AC"},
		{"/q?ü=€", "http://example.com/q?%C3%BC=%E2%82%AC"},
		{"http://bücher.example/", "http://xn--bcher-kva.example/"},
		{"http://BÜCHER.example/Ü", "http://xn--bcher-kva.example/%C3%9C"},
		{"//例え.テスト/パス", "http://xn--r8jz45g.xn--zckzah/%E3%83%91%E3%82%B9"},
		{"http://ｅｘａｍｐｌｅ.com/", "http://example.com/"}, // full-width letters map to ASCII
		{"http://a..b/", "http://a..b/"},
		// Scheme-relative, query, fragment, dot segments.
		{"//other.example", "http://other.example/"},
		{"//other.example:80/x", "http://other.example/x"},
		{"//other.example:8080/x", "http://other.example:8080/x"},
		{"///triple", "http://triple/"},
		{"?q", "http://example.com/dir/page.html?q"},
		{"?", "http://example.com/dir/page.html?"},
		{"#frag", "http://example.com/dir/page.html?x=1"},
		{"#", "http://example.com/dir/page.html?x=1"},
		{"", "http://example.com/dir/page.html?x=1"},
		{"..", "http://example.com/"},
		{"../..", "http://example.com/"},
		{"../../../up", "http://example.com/up"},
		{"./a/./b/../c", "http://example.com/dir/a/c"},
		{"/a/%2e%2E/b", "http://example.com/b"},
		{"/a/.%2e/b", "http://example.com/b"},
		{"/a/..\\b", "http://example.com/b"},
		{"HTTP://EXAMPLE.com:0080/X", "http://example.com/X"},
		{"https://example.com:443/", "https://example.com/"},
		{"http://0x7f.1/", "http://127.0.0.1/"},
		{"http://[::1]:8080/", "http://[::1]:8080/"},
		{"http://user:pw@example.com/", "http://user:pw@example.com/"},
		// Not links.
		{"http://[bad", ""},
		{"http://exa mple.com/", ""},
		{"http:///", ""},
		{"https://", ""},
		{"javascript:alert(1)", ""},
		{"mailto:a@example.com", ""},
		{"ftp://example.com/", ""},
		{"data:text/html,x", ""},
	}
	for _, tt := range tests {
		body := `<a href="` + html.EscapeString(tt.href) + `">x</a>`
		doc := mustParse(t, body, page, Options{})
		got := linkURLs(doc.Links)
		var want []string
		if tt.want != "" {
			want = []string{tt.want}
		}
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("href %q: links %q, want %q", tt.href, got, want)
		}
		// Other places that hold URLs resolve the same way.
		doc = mustParse(t, `<link rel="canonical" href="`+html.EscapeString(tt.href)+`"><meta http-equiv="refresh" content="0; url=`+html.EscapeString(tt.href)+`">`, page, Options{})
		if tt.href != "" && (doc.Canonical != tt.want || doc.Refresh != strings.TrimSpace(tt.want)) {
			t.Errorf("href %q: canonical %q, refresh %q; want %q", tt.href, doc.Canonical, doc.Refresh, tt.want)
		}
	}
}

// whatwgCase is one object of the web-platform-tests URL test data.
type whatwgCase struct {
	Input    string  `json:"input"`
	Base     *string `json:"base"`
	Href     string  `json:"href"`
	Protocol string  `json:"protocol"`
	Failure  bool    `json:"failure"`
}

// TestLinksMatchWHATWGTestData puts every input of the web-platform-tests URL
// data (the copy frontier/ tests its canonicalizer with) in an <a href> under a
// <base href> of the case's base, and requires the link to be the expected
// href without its fragment for http(s) results, and no link otherwise.
func TestLinksMatchWHATWGTestData(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "frontier", "testdata", "whatwg", "urltestdata.json"))
	if err != nil {
		t.Fatal(err)
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(data, &entries); err != nil {
		t.Fatal(err)
	}
	isHTTP := func(s string) bool { return strings.HasPrefix(s, "http:") || strings.HasPrefix(s, "https:") }
	checked := 0
	for i, raw := range entries {
		var c whatwgCase
		if json.Unmarshal(raw, &c) != nil || c.Base == nil || !isHTTP(*c.Base) {
			continue // a comment, or a case without an http(s) base to put in <base href>
		}
		if strings.ContainsAny(c.Input, "\x00") || strings.Contains(strings.ToLower(c.Input), "xn--pokxncvks") || strings.Contains(c.Input, "xn--/") {
			// The HTML parser turns NUL into U+FFFD; the IDNA cases follow a newer
			// spec than x/net/idna (see frontier's whatwgSkipped).
			continue
		}
		body := `<base href="` + html.EscapeString(*c.Base) + `"><a href="` + html.EscapeString(c.Input) + `">x</a>`
		doc := mustParse(t, body, "http://page.invalid/", Options{})
		if doc.BaseURL == "http://page.invalid/" {
			continue // the base itself does not parse
		}
		var want []string
		if !c.Failure && (c.Protocol == "http:" || c.Protocol == "https:") {
			href, _, _ := strings.Cut(c.Href, "#")
			want = []string{href}
		}
		if got := linkURLs(doc.Links); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("case %d: href %q, base %q: links %q, want %q", i, c.Input, *c.Base, got, want)
		}
		checked++
	}
	if checked < 150 {
		t.Errorf("only %d cases checked", checked)
	}
	t.Logf("%d cases checked", checked)
}
