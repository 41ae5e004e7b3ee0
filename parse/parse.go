// Package parse turns fetched HTML into the values the crawler needs: the outgoing links,
// the robots directives, the title, the canonical URL, the visible text and its normalized
// token stream (the input of near-duplicate detection).
//
// The package is pure: bytes in, values out. It does no I/O and keeps no state between
// calls, so Parse and Tokenize are safe for concurrent use.
package parse

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/PuerkitoBio/goquery"

	"github.com/horseshoe-crawler/horseshoe/internal/whatwgurl"
)

// MaxLinkText is the maximum length in bytes of Link.Text.
const MaxLinkText = 200

// Options controls Parse. The zero value is ready to use.
type Options struct {
	// URLTokens puts the URLs of a[href] and img[src] (resolved, absolute http or https)
	// into Tokens as tokens in place, as AltaVista did (seed 000): each at the first ASCII
	// delimiter at or after where its element starts (the end of the word, in text that
	// separates words with spaces; in CJK text, the end of the stretch). The text's own
	// tokens are unchanged. Default false.
	URLTokens bool
	// TitleTokens puts the words of <title> at the start of Tokens, before the visible
	// text, as AltaVista did (seed 000, section 3: "the title words which begin web
	// pages"): the title counts as the first words of the page, and looped shingles
	// join its last words to the first words of the text and the text's last words
	// to the title. The text's own tokens (and the URL tokens) are unchanged.
	// Default false; docs/TITLE_TOKENS.md has the measurement behind it.
	TitleTokens bool
	// BotName is the crawler's robots token (e.g. "horseshoe"); <meta name="horseshoe" content=...>
	// directives apply in addition to <meta name="robots">. Matching is case-insensitive.
	BotName string
	// MaxTokens caps len(Tokens) (0 = unlimited) so a hostile 5 MB page stays bounded.
	MaxTokens int
}

// Validate reports whether the options are usable.
func (o Options) Validate() error {
	var errs []error
	if o.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("parse: MaxTokens must not be negative, got %d", o.MaxTokens))
	}
	if strings.ContainsAny(o.BotName, " \t\r\n,:") {
		errs = append(errs, fmt.Errorf("parse: BotName %q must be a single robots token", o.BotName))
	}
	return errors.Join(errs...)
}

// Link is one outgoing link of a page.
type Link struct {
	URL      string // absolute, resolved as a browser does (WHATWG URL) against <base href> (if valid) or the page URL; fragment removed
	Text     string // anchor text, whitespace collapsed, at most 200 bytes ("" for non-<a>)
	Tag      string // element name: "a", "area", "link", "iframe", "frame"
	Rel      string // rel attribute, lower-cased
	Nofollow bool   // rel contains the token "nofollow"
}

// Document is what Parse extracts from one page.
type Document struct {
	Title     string // <title>, whitespace collapsed
	Lang      string // <html lang>, lower-cased, "" if absent
	BaseURL   string // effective base URL used for resolution
	Canonical string // absolute URL of <link rel=canonical>, "" if none
	Refresh   string // absolute http(s) target of <meta http-equiv=refresh content="N; url=...">, "" if none
	NoIndex   bool   // meta robots noindex / none
	NoFollow  bool   // meta robots nofollow / none
	// Links are in document order, exact duplicates (same URL and Tag) removed, only http
	// and https kept; from a[href], area[href], link[href] with rel alternate/next/prev
	// (not stylesheet/icon), iframe[src] and frame[src].
	Links []Link
	// Text is the visible text (script, style, noscript, template, head and hidden
	// elements dropped), runs of white space collapsed to one space, trimmed.
	Text string
	// Tokens is the normalized token stream of Text (see Tokenize), after the tokens of
	// Title if Options.TitleTokens is set, with the URL tokens in place if
	// Options.URLTokens is set, at most Options.MaxTokens in all.
	Tokens []string
}

// ErrNoPageURL is returned by Parse when the page URL is missing or not absolute.
var ErrNoPageURL = errors.New("parse: page URL must be absolute")

// Parse parses an HTML document (already UTF-8) fetched from pageURL.
//
// A document nested deeper than the HTML parser accepts (512 open elements) is not an
// error: it is re-read by a tolerant tokenizer-based tree builder that caps the depth,
// so hostile pages still yield their links and text.
func Parse(body []byte, pageURL *url.URL, opts Options) (*Document, error) {
	if pageURL == nil || !pageURL.IsAbs() || pageURL.Host == "" {
		return nil, fmt.Errorf("%w: got %v", ErrNoPageURL, pageURL)
	}
	page, err := whatwgurl.Parse(pageURL.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %v: %w", ErrNoPageURL, pageURL, err)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if doc, ok := parseStream(body, page, opts); ok {
		return doc, nil
	}
	return parseTree(body, page, opts), nil
}

// parseStream reads body in one streaming pass over its tokens (stream.go). It
// reports false, having done nothing, for a page whose tree the pass cannot follow.
func parseStream(body []byte, page *whatwgurl.URL, opts Options) (*Document, bool) {
	s, ok := streamCollect(body, opts.BotName)
	if !ok {
		return nil, false
	}
	doc := s.c.document(page, opts)
	s.release()
	return doc, true
}

// parseTree reads body with the HTML5 parser's tree and a walk over it.
func parseTree(body []byte, page *whatwgurl.URL, opts Options) *Document {
	gq, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		// The only failure of the HTML5 parser on in-memory input is its nesting limit.
		gq = goquery.NewDocumentFromNode(shallowTree(body, maxFallbackDepth))
	}
	return extract(gq, page, opts)
}

// extract walks the parsed tree once and assembles the Document.
func extract(gq *goquery.Document, pageURL *whatwgurl.URL, opts Options) *Document {
	c := newCollector(opts.BotName, false)
	for _, root := range gq.Nodes {
		walk(c, root)
	}
	return c.document(pageURL, opts)
}

// document assembles the Document from what c collected.
func (c *collector) document(pageURL *whatwgurl.URL, opts Options) *Document {
	base := pageURL
	if c.baseHref != nil {
		// A <base href> that does not parse or is not http(s) is ignored.
		if b, ok := resolveURL(pageURL, *c.baseHref); ok {
			base = b
		}
	}
	doc := &Document{
		Title:    c.title,
		Lang:     c.lang,
		BaseURL:  base.Href(true),
		NoIndex:  c.noindex,
		NoFollow: c.nofollow,
		Text:     c.text.String(),
	}
	if c.canonical != nil {
		if u, ok := resolve(base, *c.canonical); ok {
			doc.Canonical = u
		}
	}
	if c.refresh != nil {
		if u, ok := resolve(base, *c.refresh); ok {
			doc.Refresh = u
		}
	}
	doc.Links = resolveLinks(base, c.links)
	var toks []string
	if opts.TitleTokens {
		toks = tokenize(nil, doc.Title, opts.MaxTokens)
	}
	if opts.URLTokens {
		doc.Tokens = tokensWithURLs(toks, doc.Text, base, c.urlRefs, opts.MaxTokens)
	} else {
		doc.Tokens = tokenize(toks, doc.Text, opts.MaxTokens)
	}
	return doc
}

// urlRef is the value of an a[href] or img[src] and where its element starts
// in the visible text.
type urlRef struct {
	ref string
	at  int
}

// tokensWithURLs appends to toks the tokens of text with each URL of refs (resolved;
// refs that do not resolve to http or https are left out) in place, as
// AltaVista indexed them: at the end of the word where its element starts.
// The text is cut only at ASCII delimiters, where tokenizing the pieces gives
// the tokens of the whole (no normalization segment spans one), and never just
// after an incomplete-looking UTF-8 sequence (safeCut), so the text tokens are
// those of Tokenize(text) whatever the URLs. At most limit tokens
// in all (0: no limit).
func tokensWithURLs(toks []string, text string, base *whatwgurl.URL, refs []urlRef, limit int) []string {
	prev := 0
	for _, r := range refs {
		u, ok := resolve(base, r.ref)
		if !ok {
			continue
		}
		cut := max(r.at, prev)
		for cut < len(text) && (byteClass[text[cut]] != clsDelim || !safeCut(text, cut)) {
			cut++
		}
		toks = tokenize(toks, text[prev:cut], limit)
		prev = cut
		if limit > 0 && len(toks) >= limit {
			return toks
		}
		toks = append(toks, u)
	}
	return tokenize(toks, text[prev:], limit)
}

// rawLink is a link as found in the tree, before resolution.
type rawLink struct {
	href string
	tag  string
	rel  string
	text string
}

// resolveLinks resolves, filters and de-duplicates the raw links, keeping document order.
// When a URL and tag repeat, the first occurrence is kept; if it has no anchor text, it
// takes the text of the first duplicate that has some.
func resolveLinks(base *whatwgurl.URL, raw []rawLink) []Link {
	type key struct{ url, tag string }
	seen := make(map[key]int, len(raw))
	links := make([]Link, 0, len(raw))
	for _, r := range raw {
		u, ok := resolve(base, r.href)
		if !ok {
			continue
		}
		k := key{u, r.tag}
		if i, dup := seen[k]; dup {
			if links[i].Text == "" {
				links[i].Text = r.text
			}
			continue
		}
		seen[k] = len(links)
		links = append(links, Link{
			URL:      u,
			Text:     r.text,
			Tag:      r.tag,
			Rel:      r.rel,
			Nofollow: hasToken(r.rel, "nofollow"),
		})
	}
	return links
}

// refreshURL extracts the URL of a meta refresh content value such as
// "0; url=https://example.com/" or "5,URL='/next'". It reports false if there is none.
func refreshURL(content string) (string, bool) {
	s := strings.TrimLeft(content, " \t\n\r\f")
	s = strings.TrimLeft(s, "0123456789.")
	s = strings.TrimLeft(s, " \t\n\r\f")
	if s == "" || (s[0] != ';' && s[0] != ',') {
		return "", false
	}
	s = strings.TrimLeft(s[1:], " \t\n\r\f")
	if len(s) >= 3 && strings.EqualFold(s[:3], "url") {
		rest := strings.TrimLeft(s[3:], " \t\n\r\f")
		if strings.HasPrefix(rest, "=") {
			s = strings.TrimLeft(rest[1:], " \t\n\r\f")
		}
	}
	if s != "" && (s[0] == '\'' || s[0] == '"') {
		q := s[0]
		s = s[1:]
		if i := strings.IndexByte(s, q); i >= 0 {
			s = s[:i]
		}
	}
	s = strings.TrimSpace(s)
	return s, s != ""
}

// hasToken reports whether the space-separated list s contains tok (s already lower case).
func hasToken(s, tok string) bool {
	for f := range strings.FieldsSeq(s) {
		if f == tok {
			return true
		}
	}
	return false
}

// resolveURL resolves ref against base with the WHATWG URL parser, as a browser does (leading and
// trailing C0 controls and spaces stripped, tabs and newlines removed, backslashes read as slashes,
// '%' kept where it starts no escape, IDNA hosts converted to punycode), and returns the result if
// it is an http or https URL with a host.
func resolveURL(base *whatwgurl.URL, ref string) (*whatwgurl.URL, bool) {
	u, err := whatwgurl.Resolve(base, ref)
	if err != nil {
		return nil, false // unparseable: "http://[bad", a space in a host, ...
	}
	if s := u.Scheme(); (s != "http" && s != "https") || u.Hostname() == "" {
		return nil, false // javascript:, mailto:, data:, tel:, ftp: ...
	}
	return u, true
}

// resolve returns the absolute form of ref against base, without its
// fragment, if it is an http(s) URL (whatwgurl.ResolveHref: plain relative
// paths directly, the rest through the parser).
func resolve(base *whatwgurl.URL, ref string) (string, bool) {
	s, err := whatwgurl.ResolveHref(base, ref)
	if err != nil || !(strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")) {
		return "", false // unparseable, or javascript:, mailto:, data:, tel:, ftp: ...
	}
	return s, true
}
