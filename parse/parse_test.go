package parse

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/internal/whatwgurl"
)

const testPage = "http://example.com/dir/page.html"

func mustParse(tb testing.TB, body, pageURL string, opts Options) *Document {
	tb.Helper()
	doc, err := Parse([]byte(body), mustURL(tb, pageURL), opts)
	if err != nil {
		tb.Fatalf("Parse: %v", err)
	}
	return doc
}

func linkURLs(links []Link) []string {
	out := make([]string, len(links))
	for i, l := range links {
		out[i] = l.URL
	}
	return out
}

func TestParseBase(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantBase string
		wantLink string
	}{
		{"no base", `<a href="x.html">x</a>`, testPage, "http://example.com/dir/x.html"},
		{"absolute base", `<base href="https://other.org/root/"><a href="x.html">x</a>`, "https://other.org/root/", "https://other.org/root/x.html"},
		{"relative base", `<base href="../up/"><a href="x.html">x</a>`, "http://example.com/up/", "http://example.com/up/x.html"},
		{"root-relative base", `<base href="/b/c"><a href="x.html">x</a>`, "http://example.com/b/c", "http://example.com/b/x.html"},
		{"scheme-relative base", `<base href="//cdn.example.net/s/"><a href="x">x</a>`, "http://cdn.example.net/s/", "http://cdn.example.net/s/x"},
		{"invalid base ignored", `<base href="http://[::1"><a href="x.html">x</a>`, testPage, "http://example.com/dir/x.html"},
		{"javascript base ignored", `<base href="javascript:alert(1)"><a href="x.html">x</a>`, testPage, "http://example.com/dir/x.html"},
		{"base without href ignored", `<base target="_top"><base href="/second/"><a href="x">x</a>`, "http://example.com/second/", "http://example.com/second/x"},
		{"first base wins", `<base href="/first/"><base href="/second/"><a href="x">x</a>`, "http://example.com/first/", "http://example.com/first/x"},
		{"base after the link still applies", `<a href="x">x</a><base href="/late/">`, "http://example.com/late/", "http://example.com/late/x"},
		{"base fragment dropped", `<base href="/b/#frag"><a href="x">x</a>`, "http://example.com/b/", "http://example.com/b/x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := mustParse(t, tc.body, testPage, Options{})
			if doc.BaseURL != tc.wantBase {
				t.Errorf("BaseURL = %q, want %q", doc.BaseURL, tc.wantBase)
			}
			if got := linkURLs(doc.Links); !slices.Equal(got, []string{tc.wantLink}) {
				t.Errorf("Links = %q, want [%q]", got, tc.wantLink)
			}
		})
	}
}

func TestParseLinks(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []Link
	}{
		{
			name: "fragment removed",
			body: `<a href="x.html#sec-2">x</a><a href="#top">top</a>`,
			want: []Link{
				{URL: "http://example.com/dir/x.html", Text: "x", Tag: "a"},
				{URL: testPage, Text: "top", Tag: "a"},
			},
		},
		{
			name: "rel nofollow, case and spacing",
			body: `<a href="/a" rel="NoFollow">a</a><a href="/b" rel=" noopener   nofollow ">b</a><a href="/c" rel="nofollowed">c</a>`,
			want: []Link{
				{URL: "http://example.com/a", Text: "a", Tag: "a", Rel: "nofollow", Nofollow: true},
				{URL: "http://example.com/b", Text: "b", Tag: "a", Rel: "noopener nofollow", Nofollow: true},
				{URL: "http://example.com/c", Text: "c", Tag: "a", Rel: "nofollowed"},
			},
		},
		{
			name: "non-http schemes skipped",
			body: `<a href="javascript:void(0)">j</a><a href="mailto:a@b.c">m</a><a href="tel:+1">t</a>` +
				`<a href="data:text/plain,x">d</a><a href="ftp://f.example/x">f</a><a href=" JAVASCRIPT:x">J</a><a href="HTTPS://Example.COM/P">ok</a>`,
			want: []Link{{URL: "https://example.com/P", Text: "ok", Tag: "a"}},
		},
		{
			name: "exact duplicates removed, first kept, empty text filled",
			body: `<a href="/x"><img src="i.png"></a><a href="/x">Named</a><a href="/x#frag">Other</a><iframe src="/x"></iframe>`,
			want: []Link{
				{URL: "http://example.com/x", Text: "Named", Tag: "a"},
				{URL: "http://example.com/x", Tag: "iframe"},
			},
		},
		{
			name: "link rel kinds",
			body: `<link rel="stylesheet" href="s.css"><link rel="alternate stylesheet" href="alt.css">` +
				`<link rel="icon" href="i.ico"><link rel="alternate icon" href="i2.ico"><link rel="preload" href="p.js">` +
				`<link rel="Alternate" hreflang="de" href="/de/"><link rel="next" href="p2"><link rel="prev" href="p0"><link rel="canonical" href="c">`,
			want: []Link{
				{URL: "http://example.com/de/", Tag: "link", Rel: "alternate"},
				{URL: "http://example.com/dir/p2", Tag: "link", Rel: "next"},
				{URL: "http://example.com/dir/p0", Tag: "link", Rel: "prev"},
			},
		},
		{
			name: "area, iframe, frame, anchors without href",
			body: `<map><area href="/area" alt="A"><area nohref></map><a name="n">no href</a><iframe src="/if"></iframe>`,
			want: []Link{
				{URL: "http://example.com/area", Tag: "area"},
				{URL: "http://example.com/if", Tag: "iframe"},
			},
		},
		{
			name: "frameset page",
			body: `<html><head><title>F</title></head><frameset><frame src="left.html"><frame src="right.html"></frameset></html>`,
			want: []Link{
				{URL: "http://example.com/dir/left.html", Tag: "frame"},
				{URL: "http://example.com/dir/right.html", Tag: "frame"},
			},
		},
		{
			name: "anchor text collapsed, entities decoded, nested markup",
			body: "<a href='/q?a=1&amp;b=2'>  Fish &amp;\n\t<b>Chips</b>&nbsp;<br>now </a>",
			want: []Link{{URL: "http://example.com/q?a=1&b=2", Text: "Fish & Chips now", Tag: "a"}},
		},
		{
			name: "hidden link kept with its text",
			body: `<div style="display:none"><a href="/menu">Menu</a></div>`,
			want: []Link{{URL: "http://example.com/menu", Text: "Menu", Tag: "a"}},
		},
		{
			name: "tabs and newlines inside href removed",
			body: "<a href=\"/pa\n\tth\">x</a><a href=\"http://[bad\">bad</a>",
			want: []Link{{URL: "http://example.com/path", Text: "x", Tag: "a"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := mustParse(t, tc.body, testPage, Options{})
			if !slices.Equal(doc.Links, tc.want) {
				t.Errorf("Links =\n%+v\nwant\n%+v", doc.Links, tc.want)
			}
		})
	}
}

func TestParseLinkTextLimit(t *testing.T) {
	long := strings.Repeat("é", 150) // 300 bytes
	doc := mustParse(t, `<a href="/x">`+long+`</a>`, testPage, Options{})
	got := doc.Links[0].Text
	if len(got) > MaxLinkText || len(got) < MaxLinkText-1 {
		t.Errorf("len(Text) = %d, want %d or %d", len(got), MaxLinkText-1, MaxLinkText)
	}
	if !strings.HasPrefix(long, got) {
		t.Errorf("Text is not a prefix of the anchor text (cut inside a character?): %q", got)
	}
}

func TestParseRobotsMeta(t *testing.T) {
	tests := []struct {
		name                   string
		head                   string
		bot                    string
		wantNoIndex, wantNoFol bool
	}{
		{"none", ``, "horseshoe", false, false},
		{"noindex", `<meta name="robots" content="noindex">`, "horseshoe", true, false},
		{"nofollow upper case", `<meta name="ROBOTS" content="NOFOLLOW">`, "horseshoe", false, true},
		{"both", `<meta name="robots" content="noindex, nofollow">`, "", true, true},
		{"none directive", `<meta name="robots" content="none">`, "", true, true},
		{"all", `<meta name="robots" content="all">`, "", false, false},
		{"bot meta", `<meta name="HorseShoe" content="noindex">`, "horseshoe", true, false},
		{"other bot meta ignored", `<meta name="googlebot" content="noindex">`, "horseshoe", false, false},
		{"bot meta without BotName ignored", `<meta name="horseshoe" content="noindex">`, "", false, false},
		{"two metas combine", `<meta name="robots" content="noindex"><meta name="horseshoe" content="nofollow">`, "horseshoe", true, true},
		{"agent prefix for us", `<meta name="robots" content="horseshoe: nofollow">`, "Horseshoe", false, true},
		{"agent prefix for another", `<meta name="robots" content="otherbot: noindex">`, "horseshoe", false, false},
		{"meta without content", `<meta name="robots">`, "horseshoe", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := mustParse(t, "<html><head>"+tc.head+"</head><body>x</body></html>", testPage, Options{BotName: tc.bot})
			if doc.NoIndex != tc.wantNoIndex || doc.NoFollow != tc.wantNoFol {
				t.Errorf("NoIndex, NoFollow = %v, %v; want %v, %v", doc.NoIndex, doc.NoFollow, tc.wantNoIndex, tc.wantNoFol)
			}
		})
	}
}

func TestParseHead(t *testing.T) {
	tests := []struct {
		name          string
		body          string
		title, lang   string
		canon, reload string
	}{
		{"title collapsed and decoded", "<title>\n  A &amp; B\t&lt;C&gt;  </title>", "A & B <C>", "", "", ""},
		{"first title wins", "<title>One</title><title>Two</title>", "One", "", "", ""},
		{"svg title is not the title", "<body><svg><title>icon</title></svg></body>", "", "", "", ""},
		{"lang lower-cased", `<html lang=" EN-GB "><title>t</title>`, "t", "en-gb", "", ""},
		{"canonical relative", `<link rel="canonical" href="/c#x">`, "", "", "http://example.com/c", ""},
		{"canonical case-insensitive rel, first wins", `<link rel="Canonical" href="a"><link rel="canonical" href="b">`, "", "", "http://example.com/dir/a", ""},
		{"canonical non-http ignored", `<link rel="canonical" href="javascript:x">`, "", "", "", ""},
		{"canonical uses base", `<base href="https://m.example/"><link rel="canonical" href="p">`, "", "", "https://m.example/p", ""},
		{"meta refresh", `<meta http-equiv="Refresh" content="0; url=/new">`, "", "", "", "http://example.com/new"},
		{"meta refresh quoted", `<meta http-equiv="refresh" content="5;URL='next.html'">`, "", "", "", "http://example.com/dir/next.html"},
		{"meta refresh without url", `<meta http-equiv="refresh" content="30">`, "", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := mustParse(t, tc.body, testPage, Options{})
			if doc.Title != tc.title || doc.Lang != tc.lang || doc.Canonical != tc.canon || doc.Refresh != tc.reload {
				t.Errorf("Title, Lang, Canonical, Refresh = %q, %q, %q, %q; want %q, %q, %q, %q",
					doc.Title, doc.Lang, doc.Canonical, doc.Refresh, tc.title, tc.lang, tc.canon, tc.reload)
			}
		})
	}
}

func TestParseText(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{"block elements separate words", "<p>foo</p><p>bar</p>", "foo bar"},
		{"inline elements do not", "<b>Ho</b>rse <i>a</i><span>b</span><a href=x>c</a>", "Horse abc"},
		{"br, li, td, headings", "a<br>b<ul><li>c</li><li>d</li></ul><table><tr><td>e</td><td>f</td></tr></table><h2>g</h2>h", "a b c d e f g h"},
		{"white space runs collapse", "  a \n\t b\u00a0\u00a0c\u3000d  ", "a b c d"},
		{"entities decoded", "Fish &amp; chips &lt;3 &eacute;t&#233; &#x263A; &copy;", "Fish & chips <3 été ☺ ©"},
		{"script, style, noscript, template dropped", "a<script>var x = 1;</script>b<style>p{}</style>c<noscript>ns</noscript>d<template>tpl</template>e", "abcde"},
		{"title and head excluded", "<html><head><title>T</title><meta name=x content=y></head><body>body</body></html>", "body"},
		{"comments excluded", "a<!-- hidden -->b", "ab"},
		{"hidden elements excluded", `a <div hidden>h1</div> <span style="display: none">h2</span> <p style="DISPLAY:NONE !important">h3</p> b`, "a b"},
		{"display other than none kept", `<span style="display:inline">x</span>`, "x"},
		{"image alt and input values excluded", `a<img alt="ALT">b <input type=hidden value=secret><input value=v> c`, "ab c"},
		{"iframe fallback excluded", "a<iframe src=/x>fallback</iframe>b", "a b"},
		{"pre collapsed", "<pre>  line 1\n   line 2\n</pre>", "line 1 line 2"},
		{"text after body end kept", "<body>a</body>b", "ab"},
		{"svg text kept", "<svg><text>t</text></svg>", "t"},
		{"textarea content kept", "<textarea>typed</textarea>", "typed"},
		{"empty document", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := mustParse(t, tc.body, testPage, Options{})
			if doc.Text != tc.want {
				t.Errorf("Text = %q, want %q", doc.Text, tc.want)
			}
		})
	}
}

func TestParseTokens(t *testing.T) {
	tests := []struct {
		name string
		body string
		opts Options
		want []string
	}{
		{"tokens of visible text", "<title>Skip</title><p>Hello, WORLD</p><p>naïve café</p>", Options{}, []string{"hello", "world", "naïve", "café"}},
		{"NFKC and folding from entities", "<p>&#xFB01;nal &#xFF11;&#xFF12; Stra&szlig;e</p>", Options{}, []string{"final", "12", "strasse"}},
		{"MaxTokens caps", "<p>a b c d e</p>", Options{MaxTokens: 3}, []string{"a", "b", "c"}},
		{
			// Each URL at the end of the word where its element starts: "xm"
			// is one word, so the image's URL follows it.
			"URL tokens in place",
			`<p>Text</p><a href="/x#f">x</a><img src="i.png"><img src="data:image/png;base64,AA"><a href="mailto:a@b">m</a>`,
			Options{URLTokens: true},
			[]string{"text", "http://example.com/x", "xm", "http://example.com/dir/i.png"},
		},
		{
			"URL tokens in place, mid-sentence and mid-word",
			`<p>see <a href="/a">the docs</a> or fo<a href="/b">o</a>bar, then <img src="/c.png"> stop</p>`,
			Options{URLTokens: true},
			[]string{"see", "http://example.com/a", "the", "docs", "or", "foobar", "http://example.com/b", "then", "http://example.com/c.png", "stop"},
		},
		{
			// A cut right after "\xf3ϔ" would change how it normalizes: the
			// URL moves on to the next safe delimiter.
			"URL tokens never cut an incomplete-looking sequence",
			"<p><a href=\"/a\">\xf3\xcf\x94</a> \xc2\xbd</p>",
			Options{URLTokens: true},
			[]string{"ϋ", "1", "2", "http://example.com/a"},
		},
		{"URL tokens count toward MaxTokens", `<p>one two</p><a href="/x">x</a>`, Options{URLTokens: true, MaxTokens: 3}, []string{"one", "two", "http://example.com/x"}},
		{"MaxTokens can stop before a URL", `<p>one two three</p><a href="/x">x</a>`, Options{URLTokens: true, MaxTokens: 3}, []string{"one", "two", "three"}},
		{"no URL tokens by default", `<a href="/x">x</a>`, Options{}, []string{"x"}},
		{"title tokens first", "<title>The  Title, Part 2</title><p>Body text</p>", Options{TitleTokens: true}, []string{"the", "title", "part", "2", "body", "text"}},
		{"title tokens from a title in the body", "<p>Body</p><title>Late</title>", Options{TitleTokens: true}, []string{"late", "body"}},
		{"only the first title", "<title>One</title><title>Two</title><p>x</p>", Options{TitleTokens: true}, []string{"one", "x"}},
		{"no title", "<p>Body</p>", Options{TitleTokens: true}, []string{"body"}},
		{"title of a page without text", "<title>Redirecting</title>", Options{TitleTokens: true}, []string{"redirecting"}},
		{
			"title tokens before the text and its URL tokens",
			`<title>T</title><p>see <a href="/a">it</a></p>`,
			Options{TitleTokens: true, URLTokens: true},
			[]string{"t", "see", "http://example.com/a", "it"},
		},
		{"title tokens count toward MaxTokens", "<title>a b c</title><p>d e</p>", Options{TitleTokens: true, MaxTokens: 4}, []string{"a", "b", "c", "d"}},
		{"MaxTokens can stop inside the title", `<title>a b c</title><p>d <a href="/x">e</a></p>`, Options{TitleTokens: true, URLTokens: true, MaxTokens: 2}, []string{"a", "b"}},
		{"no title tokens by default", "<title>Skip</title><p>x</p>", Options{}, []string{"x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := mustParse(t, tc.body, testPage, tc.opts)
			if !slices.Equal(doc.Tokens, tc.want) {
				t.Errorf("Tokens = %q, want %q", doc.Tokens, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	rel := &url.URL{Path: "/relative"}
	tests := []struct {
		name    string
		pageURL *url.URL
		opts    Options
		wantErr error
	}{
		{"nil URL", nil, Options{}, ErrNoPageURL},
		{"relative URL", rel, Options{}, ErrNoPageURL},
		{"negative MaxTokens", mustURL(t, testPage), Options{MaxTokens: -1}, nil},
		{"BotName with separator", mustURL(t, testPage), Options{BotName: "a,b"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := Parse([]byte("<p>x</p>"), tc.pageURL, tc.opts)
			if err == nil || doc != nil {
				t.Fatalf("Parse = %v, %v; want an error", doc, err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v does not wrap %v", err, tc.wantErr)
			}
		})
	}
}

// TestParseHostile feeds pathological documents: each must parse without error, keep its
// text and links, and finish quickly.
func TestParseHostile(t *testing.T) {
	if raceEnabled {
		t.Skip("the parser runs on one goroutine: nothing for the race detector to find, at ten times the time; the end-to-end tier runs it without")
	}
	const deep = 100_000
	tests := []struct {
		name      string
		body      string
		wantText  string // prefix of the expected text
		wantLinks int
	}{
		{"100k nested divs", strings.Repeat("<div>", deep) + "deep text <a href=/x>x</a>" + strings.Repeat("</div>", deep), "deep text x", 1},
		{"100k nested inline elements", strings.Repeat("<b><i>", deep/2) + "bold", "bold", 0},
		{"100k unclosed anchors", strings.Repeat("<a href=/x>y", deep), "yyyy", 1},
		{"100k nested tables", strings.Repeat("<table><tr><td>c", deep/4), "c c c", 0},
		{"100k nested lists", strings.Repeat("<ul><li>i", deep), "i i i", 0},
		{"5 MB single line", strings.Repeat("word, ", 5<<20/6), "word, word, ", 0},
		{"5 MB of tags", strings.Repeat("<p>", 5<<20/3), "", 0},
		{"1M comments between letters", strings.Repeat("a<!---->", 1<<20/8), "aaaa", 0},
		{"deep nesting then a link after", strings.Repeat("<span>", 600) + strings.Repeat("</span>", 600) + `<a href="/after">after</a>`, "after", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var doc *Document
			var err error
			cpu, wall := testtools.OwnCPU(func() { doc, err = Parse([]byte(tc.body), mustURL(t, testPage), Options{MaxTokens: 100_000}) })
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !strings.HasPrefix(doc.Text, tc.wantText) {
				t.Errorf("Text starts %q, want prefix %q", doc.Text[:min(len(doc.Text), 40)], tc.wantText)
			}
			if len(doc.Links) != tc.wantLinks {
				t.Errorf("len(Links) = %d, want %d", len(doc.Links), tc.wantLinks)
			}
			if len(doc.Tokens) > 100_000 {
				t.Errorf("len(Tokens) = %d exceeds MaxTokens", len(doc.Tokens))
			}
			t.Logf("%d bytes in %v of CPU, %v of wall time", len(tc.body), cpu, wall)
			// About a second of work is the budget (linear in the input, not
			// worse; a quadratic parse of these takes minutes). The bound is
			// on the parsing thread's own CPU time, which a loaded machine
			// does not stretch (wall time on a busy CI ran past 5 s); more
			// under -race, which slows this parse about fivefold. The wall
			// time is bounded only against a hang.
			limit := 5 * time.Second
			if raceEnabled {
				limit = 20 * time.Second
			}
			if cpu > limit {
				t.Errorf("took %v of CPU, limit %v", cpu, limit)
			}
			if wall > 10*limit {
				t.Errorf("took %v, more than %v: a hang", wall, 10*limit)
			}
		})
	}
}

func TestShallowTreeMatchesParserOnShallowInput(t *testing.T) {
	body := `<html lang=en><head><title>T</title><base href="/b/"></head><body>` +
		`<p>Hello <b>big</b> world</p><a href="x#y" rel=nofollow>Link</a><script>no</script>` +
		`<ul><li>one<li>two</ul><img src=i.png><br>end</body></html>`
	want := mustParse(t, body, testPage, Options{URLTokens: true})
	gq := goqueryFromShallow(body)
	page, err := whatwgurl.Parse(testPage)
	if err != nil {
		t.Fatal(err)
	}
	got := extract(gq, page, Options{URLTokens: true})
	if got.Text != want.Text || got.Title != want.Title || got.Lang != want.Lang || got.BaseURL != want.BaseURL ||
		!slices.Equal(got.Links, want.Links) || !slices.Equal(got.Tokens, want.Tokens) {
		t.Errorf("fallback tree gives\n%+v\nHTML5 parser gives\n%+v", got, want)
	}
}

// TestParseConcurrent runs Parse on the golden pages from several goroutines at once;
// with -race it checks that Parse shares no mutable state.
func TestParseConcurrent(t *testing.T) {
	bodies := make([][]byte, len(goldenPages))
	urls := make([]*url.URL, len(goldenPages))
	want := make([]*Document, len(goldenPages))
	for i, gp := range goldenPages {
		body, err := os.ReadFile(filepath.Join("testdata", gp.file))
		if err != nil {
			t.Fatal(err)
		}
		bodies[i] = body
		urls[i] = mustURL(t, gp.url)
		want[i] = mustParse(t, string(body), gp.url, gp.opts)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4*len(goldenPages))
	for range 4 {
		for i, gp := range goldenPages {
			wg.Add(1)
			go func() {
				defer wg.Done()
				doc, err := Parse(bodies[i], urls[i], gp.opts)
				if err != nil || doc.Text != want[i].Text || !slices.Equal(doc.Tokens, want[i].Tokens) || !slices.Equal(doc.Links, want[i].Links) {
					errs <- gp.file
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for file := range errs {
		t.Errorf("concurrent Parse of %s differs from the sequential result", file)
	}
}
