package hostile

// The horrors of issue #16 that lie in what a page directs the crawler to
// read: a UTF-16 charset in the Content-Type header, and hrefs that only a
// browser's URL parser reads right. (A huge robots.txt Crawl-delay needs a
// host of its own: crawl/politeness_test.go covers it.)

import (
	"html"
	"io"
	"net/http"
	"strings"
	"unicode/utf16"
)

// UTF16Title is the <title> of /utf16be-header, whose links are UTF16Links.
const UTF16Title = "UTF-16BE: Ünïcödé – 統一碼 𝄞"

// UTF16Links are the paths /utf16be-header links to.
var UTF16Links = []string{"/utf16be/eins", "/utf16be/zwei"}

// OddHref is one href of /odd-hrefs and what a browser requests for it.
type OddHref struct {
	Href string // as written in the page
	URL  string // path and query of the WHATWG URL parser's result (the page is at /odd-hrefs)
	Path string // the request's decoded path, as the handler counts it (Hits, Paths)
}

// OddHrefs are the hrefs of /odd-hrefs. net/url drops the first three and
// resolves the backslashes to %5C; browsers request what URL says.
var OddHrefs = []OddHref{
	{"/odd/%%%", "/odd/%%%", "/odd/%%%"},
	{"/odd/a%zz", "/odd/a%zz", "/odd/a%zz"},
	{"/odd/ok%", "/odd/ok%", "/odd/ok%"},
	{`/odd/back\slash`, "/odd/back/slash", "/odd/back/slash"},
	{`\odd\root`, "/odd/root", "/odd/root"},
	{"/odd/ta\tb\n", "/odd/tab", "/odd/tab"},
	{"  /odd/spaced  ", "/odd/spaced", "/odd/spaced"},
	{"odd/../odd/./dots", "/odd/dots", "/odd/dots"},
	{"/odd/ünï", "/odd/%C3%BCn%C3%AF", "/odd/ünï"},
	{"/odd/query?a=%&b=%zz", "/odd/query?a=%&b=%zz", "/odd/query"},
}

// utf16BEPage serves a page in UTF-16BE without a BOM, labelled in the header.
func utf16BEPage(w http.ResponseWriter) {
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><title>" + html.EscapeString(UTF16Title) + "</title></head><body>")
	b.WriteString("<p>Dieser Text ist UTF-16BE, wie der Content-Type sagt.</p><ul>")
	for _, l := range UTF16Links {
		b.WriteString(`<li><a href="` + l + `">` + l + "</a></li>")
	}
	b.WriteString("</ul></body></html>\n")
	units := utf16.Encode([]rune(b.String()))
	out := make([]byte, 0, 2*len(units))
	for _, u := range units {
		out = append(out, byte(u>>8), byte(u))
	}
	w.Header().Set("Content-Type", "text/html; charset=UTF-16BE")
	w.Write(out)
}

// oddHrefs serves a page linking OddHrefs.
func oddHrefs(w http.ResponseWriter) {
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><title>Odd hrefs</title></head><body><ul>")
	for _, o := range OddHrefs {
		b.WriteString(`<li><a href="` + html.EscapeString(o.Href) + `">` + html.EscapeString(o.URL) + "</a></li>")
	}
	b.WriteString("</ul></body></html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, b.String())
}

// directiveTarget serves the pages the directive horrors link to, each with
// its own text.
func directiveTarget(w http.ResponseWriter, r *http.Request) {
	p := html.EscapeString(r.URL.RequestURI())
	page(w, "text/html; charset=utf-8", "Target "+p,
		"this page at "+p+" was reached through a link that only a careful reader of "+
			"the standards follows; its words differ from every other page: "+p)
}
