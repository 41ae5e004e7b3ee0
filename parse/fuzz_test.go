package parse

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/horseshoe-crawler/horseshoe/internal/whatwgurl"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte(`<base href="../b/"><a href="x#y" rel=nofollow>L</a><p>Straße ﬁ</p>`), true)
	f.Add([]byte(`<meta name=robots content="horseshoe: none"><frameset><frame src="//h/x">`), false)
	f.Add([]byte(strings.Repeat("<div>", 600)+"deep"), true)
	f.Add([]byte("<a href=\"\x00http://[::1]:80/\">\xff\xfe</a>e\u0301\u0338"), true)
	if files, err := filepath.Glob(filepath.Join("testdata", "*.html")); err == nil {
		for _, file := range files {
			if body, err := os.ReadFile(file); err == nil && len(body) < 20<<10 {
				f.Add(body, false)
			}
		}
	}
	pageURL, err := url.Parse(testPage)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, urlTokens bool) {
		doc, err := Parse(body, pageURL, Options{BotName: "horseshoe", URLTokens: urlTokens, MaxTokens: 10_000})
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		if len(doc.Tokens) > 10_000 {
			t.Fatalf("len(Tokens) = %d exceeds MaxTokens", len(doc.Tokens))
		}
		for i, tok := range doc.Tokens {
			if tok == "" {
				t.Fatalf("token %d is empty", i)
			}
		}
		if text := Tokenize(nil, doc.Text); len(text) < 10_000 {
			// URL tokens (the only ones with "://") are put in place without
			// changing the text's tokens.
			var rest []string
			for _, tok := range doc.Tokens {
				if !strings.Contains(tok, "://") {
					rest = append(rest, tok)
				}
			}
			if len(doc.Tokens) < 10_000 && !slices.Equal(rest, text) {
				t.Fatalf("tokens without the URLs %q, want Tokenize(Text) %q", rest, text)
			}
		}
		if doc.Text != strings.TrimSpace(doc.Text) || strings.Contains(doc.Text, "  ") {
			t.Fatalf("Text not collapsed and trimmed: %q", doc.Text)
		}
		for _, l := range doc.Links {
			// A link is a WHATWG URL serialization: it parses again to itself.
			u, err := whatwgurl.Parse(l.URL)
			if err != nil {
				t.Fatalf("link %q does not parse: %v", l.URL, err)
			}
			if (u.Scheme() != "http" && u.Scheme() != "https") || u.Hostname() == "" {
				t.Fatalf("link %q is not absolute http(s)", l.URL)
			}
			if u.Href(false) != l.URL {
				t.Fatalf("link %q parses to %q", l.URL, u.Href(false))
			}
			if strings.Contains(l.URL, "#") {
				t.Fatalf("link %q keeps a fragment", l.URL)
			}
			if len(l.Text) > MaxLinkText || !utf8.ValidString(l.Text) && utf8.ValidString(string(body)) {
				t.Fatalf("bad link text %q", l.Text)
			}
		}
	})
}
