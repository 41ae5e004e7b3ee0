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
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

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
	gq, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		// The only failure of the HTML5 parser on in-memory input is its nesting limit.
		gq = goquery.NewDocumentFromNode(shallowTree(body, maxFallbackDepth))
	}
	return extract(gq, page, opts), nil
}

// extract walks the parsed tree once and assembles the Document.
func extract(gq *goquery.Document, pageURL *whatwgurl.URL, opts Options) *Document {
	w := walker{bot: strings.ToLower(strings.TrimSpace(opts.BotName))}
	w.anchor.max = MaxLinkText + 4
	for _, root := range gq.Nodes {
		w.walk(root)
	}

	base := pageURL
	if w.baseHref != nil {
		// A <base href> that does not parse or is not http(s) is ignored.
		if b, ok := resolveURL(pageURL, *w.baseHref); ok {
			base = b
		}
	}
	doc := &Document{
		Title:    w.title,
		Lang:     w.lang,
		BaseURL:  base.Href(true),
		NoIndex:  w.noindex,
		NoFollow: w.nofollow,
		Text:     w.text.String(),
	}
	if w.canonical != nil {
		if u, ok := resolve(base, *w.canonical); ok {
			doc.Canonical = u
		}
	}
	if w.refresh != nil {
		if u, ok := resolve(base, *w.refresh); ok {
			doc.Refresh = u
		}
	}
	doc.Links = resolveLinks(base, w.links)
	var toks []string
	if opts.TitleTokens {
		toks = tokenize(nil, doc.Title, opts.MaxTokens)
	}
	if opts.URLTokens {
		doc.Tokens = tokensWithURLs(toks, doc.Text, base, w.urlRefs, opts.MaxTokens)
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

// walker collects everything Parse needs in a single pass over the tree.
type walker struct {
	bot string

	title     string
	titleSeen bool
	lang      string
	langSeen  bool
	baseHref  *string
	canonical *string
	refresh   *string
	noindex   bool
	nofollow  bool

	text    textSink  // visible text
	links   []rawLink // in document order
	urlRefs []urlRef  // a[href] and img[src] values, for URL tokens

	hidden    *html.Node // outermost element whose content is not visible, if any
	raw       *html.Node // outermost element whose content is not text at all (script, style), if any
	anchor    textSink   // text of the current outermost <a>
	anchorTop *html.Node // the outermost open <a>, if any
	anchorIdx int        // index in links of anchorTop's link, or -1
}

// walk visits the subtree of root in document order without recursion: it follows the
// FirstChild/NextSibling/Parent pointers, so neither a deep tree nor a wide one can
// exhaust the stack, and no auxiliary stack is needed.
func (w *walker) walk(root *html.Node) {
	n := root
	for {
		if w.enter(n) && n.FirstChild != nil {
			n = n.FirstChild
			continue
		}
		for {
			w.leave(n)
			if n == root {
				return
			}
			if n.NextSibling != nil {
				n = n.NextSibling
				break
			}
			n = n.Parent
		}
	}
}

// enter handles the start of n and reports whether its children should be visited.
func (w *walker) enter(n *html.Node) bool {
	switch n.Type {
	case html.TextNode:
		if w.raw != nil {
			return false
		}
		if w.hidden == nil {
			w.text.write(n.Data)
		}
		if w.anchorTop != nil {
			w.anchor.write(n.Data)
		}
		return false
	case html.ElementNode:
		w.element(n)
		return true
	case html.DocumentNode:
		return true
	default: // comments, doctypes
		return false
	}
}

// leave handles the end of n.
func (w *walker) leave(n *html.Node) {
	if n.Type != html.ElementNode {
		return
	}
	if isBlock(n) {
		w.text.boundary()
		w.anchor.boundary()
	}
	if n == w.hidden {
		w.hidden = nil
	}
	if n == w.raw {
		w.raw = nil
	}
	if n == w.anchorTop {
		if w.anchorIdx >= 0 {
			w.links[w.anchorIdx].text = truncateUTF8(w.anchor.String(), MaxLinkText)
		}
		w.anchorTop = nil
		w.anchor.reset()
	}
}

// element handles the start tag of n.
func (w *walker) element(n *html.Node) {
	if isBlock(n) {
		w.text.boundary()
		w.anchor.boundary()
	}
	if w.hidden == nil && isHidden(n) {
		w.hidden = n
	}
	if w.raw == nil && isRaw(n) {
		w.raw = n
	}
	if n.Namespace != "" {
		return
	}
	switch n.DataAtom {
	case atom.Html:
		if !w.langSeen {
			w.langSeen = true
			if v, ok := attr(n, "lang"); ok {
				w.lang = strings.ToLower(strings.TrimSpace(v))
			}
		}
	case atom.Title:
		if !w.titleSeen {
			w.titleSeen = true
			w.title = collapse(childText(n))
		}
	case atom.Base:
		if v, ok := attr(n, "href"); ok && w.baseHref == nil {
			w.baseHref = &v
		}
	case atom.Meta:
		w.meta(n)
	case atom.A:
		if v, ok := attr(n, "href"); ok {
			w.urlRefs = append(w.urlRefs, urlRef{v, len(w.text.b)})
			if w.anchorTop == nil {
				w.anchorTop = n
				w.anchorIdx = len(w.links)
			}
			w.addLink(n, v, "a")
		}
	case atom.Area:
		if v, ok := attr(n, "href"); ok {
			w.addLink(n, v, "area")
		}
	case atom.Link:
		w.linkElement(n)
	case atom.Iframe, atom.Frame:
		if v, ok := attr(n, "src"); ok {
			w.addLink(n, v, n.Data)
		}
	case atom.Img:
		if v, ok := attr(n, "src"); ok {
			w.urlRefs = append(w.urlRefs, urlRef{v, len(w.text.b)})
		}
	}
}

// addLink records a raw link; its anchor text is filled in when an <a> ends.
func (w *walker) addLink(n *html.Node, href, tag string) {
	rel, _ := attr(n, "rel")
	w.links = append(w.links, rawLink{
		href: href,
		tag:  tag,
		rel:  strings.Join(strings.Fields(strings.ToLower(rel)), " "),
	})
}

// linkElement handles <link>: rel=canonical sets the canonical URL; rel alternate, next
// or prev (without stylesheet or icon) is an outgoing link.
func (w *walker) linkElement(n *html.Node) {
	href, ok := attr(n, "href")
	if !ok {
		return
	}
	rel, _ := attr(n, "rel")
	rel = strings.ToLower(rel)
	if w.canonical == nil && hasToken(rel, "canonical") {
		w.canonical = &href
	}
	if hasToken(rel, "stylesheet") || hasToken(rel, "icon") {
		return
	}
	if hasToken(rel, "alternate") || hasToken(rel, "next") || hasToken(rel, "prev") {
		w.addLink(n, href, "link")
	}
}

// meta handles <meta name="robots">, <meta name=BotName> and the first
// <meta http-equiv=refresh> that names a URL.
func (w *walker) meta(n *html.Node) {
	if equiv, ok := attr(n, "http-equiv"); ok && w.refresh == nil && strings.EqualFold(strings.TrimSpace(equiv), "refresh") {
		content, _ := attr(n, "content")
		if target, ok := refreshURL(content); ok {
			w.refresh = &target
		}
	}
	name, ok := attr(n, "name")
	if !ok {
		return
	}
	name = strings.ToLower(strings.TrimSpace(name))
	if name != "robots" && (w.bot == "" || name != w.bot) {
		return
	}
	content, _ := attr(n, "content")
	noindex, nofollow := RobotsDirectives(content, w.bot)
	w.noindex = w.noindex || noindex
	w.nofollow = w.nofollow || nofollow
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

// attr returns the value of the attribute key (lower case) of n.
func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// childText concatenates the text children of n (the content of a <title>).
func childText(n *html.Node) string {
	if c := n.FirstChild; c != nil && c.NextSibling == nil && c.Type == html.TextNode {
		return c.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
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

// isRaw reports whether the content of n is never text a reader sees, wherever it is.
func isRaw(n *html.Node) bool {
	switch n.Data {
	case "script", "style", "template", "noscript", "noembed", "noframes", "iframe", "title":
		return true
	}
	return false
}

// isHidden reports whether n and its subtree are not rendered: the head, <datalist>, the
// raw-content elements, a hidden attribute, or an inline style with display:none.
func isHidden(n *html.Node) bool {
	if n.Namespace == "" {
		switch n.DataAtom {
		case atom.Head, atom.Datalist:
			return true
		}
	}
	if isRaw(n) {
		return true
	}
	for _, a := range n.Attr {
		switch a.Key {
		case "hidden":
			return true
		case "style":
			if displayNone(a.Val) {
				return true
			}
		}
	}
	return false
}

// displayNone reports whether an inline style declares display:none.
func displayNone(style string) bool {
	for decl := range strings.SplitSeq(style, ";") {
		prop, val, ok := strings.Cut(decl, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(prop), "display") {
			continue
		}
		val = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(val), "!important"))
		if strings.EqualFold(val, "none") {
			return true
		}
	}
	return false
}

// isBlock reports whether n separates words: block-level and table elements, line
// breaks and form controls. Inline elements (b, span, a, ...) do not.
func isBlock(n *html.Node) bool {
	if n.Namespace != "" {
		return false
	}
	switch n.DataAtom {
	case atom.Address, atom.Article, atom.Aside, atom.Blockquote, atom.Body, atom.Br,
		atom.Button, atom.Caption, atom.Center, atom.Dd, atom.Details, atom.Dialog,
		atom.Dir, atom.Div, atom.Dl, atom.Dt, atom.Fieldset, atom.Figcaption, atom.Figure,
		atom.Footer, atom.Form, atom.Frame, atom.Frameset, atom.H1, atom.H2, atom.H3,
		atom.H4, atom.H5, atom.H6, atom.Header, atom.Hgroup, atom.Hr, atom.Html,
		atom.Iframe, atom.Input, atom.Legend, atom.Li, atom.Listing, atom.Main,
		atom.Menu, atom.Nav, atom.Ol, atom.Optgroup, atom.Option, atom.P, atom.Plaintext,
		atom.Pre, atom.Section, atom.Select, atom.Summary, atom.Table, atom.Tbody,
		atom.Td, atom.Textarea, atom.Tfoot, atom.Th, atom.Thead, atom.Tr, atom.Ul,
		atom.Xmp, atom.Video, atom.Audio, atom.Canvas, atom.Object, atom.Embed, atom.Svg:
		return true
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
