package parse

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// elem is an element as the collector sees it: its name, namespace ("" for HTML) and
// attributes.
type elem struct {
	atom atom.Atom
	data string
	ns   string
	attr []html.Attribute
}

// collector gathers everything Parse needs from a sequence of element starts, element
// ends and text nodes in document (tree) order. Both ways of reading a page feed it:
// walk, over the tree of the HTML5 parser, and the streaming pass of stream.go, which
// produces the same sequence straight from the tokens. It is the one place where the
// rules of what is text, a link, the title or a directive live.
type collector struct {
	bot string
	// volatile says that the strings handed in alias a buffer that changes (the
	// tokenizer's): what is kept is copied.
	volatile bool

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

	open      []bool   // one entry per open element: whether it is a block
	hiddenAt  int      // depth (len(open)) of the outermost element whose content is not visible; 0 if none
	rawAt     int      // depth of the outermost element whose content is not text at all (script, style); 0 if none
	anchorAt  int      // depth of the outermost open <a href>; 0 if none
	anchor    textSink // text of the outermost open <a href>
	anchorIdx int      // index in links of that <a>'s link
	titleAt   int      // depth of the first <title> while it is open; 0 otherwise
	titleBuf  []byte   // its text children
}

func newCollector(botName string, volatile bool) *collector {
	c := &collector{}
	c.reset(botName, volatile)
	return c
}

// reset empties c for a new page, keeping its buffers.
func (c *collector) reset(botName string, volatile bool) {
	clear(c.links)
	clear(c.urlRefs)
	*c = collector{
		bot:      strings.ToLower(strings.TrimSpace(botName)),
		volatile: volatile,
		text:     textSink{b: c.text.b[:0]},
		links:    c.links[:0],
		urlRefs:  c.urlRefs[:0],
		open:     c.open[:0],
		anchor:   textSink{b: c.anchor.b[:0], max: MaxLinkText + 4},
		titleBuf: c.titleBuf[:0],
	}
}

// keep returns s, copied if it aliases a changing buffer.
func (c *collector) keep(s string) string {
	if c.volatile {
		return strings.Clone(s)
	}
	return s
}

// walk visits the subtree of root in document order without recursion: it follows the
// FirstChild/NextSibling/Parent pointers, so neither a deep tree nor a wide one can
// exhaust the stack, and no auxiliary stack is needed.
func walk(c *collector, root *html.Node) {
	n := root
	for {
		if enter(c, n) && n.FirstChild != nil {
			n = n.FirstChild
			continue
		}
		for {
			if n.Type == html.ElementNode {
				c.end()
			}
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

// enter hands the start of n to c and reports whether its children should be visited.
func enter(c *collector, n *html.Node) bool {
	switch n.Type {
	case html.TextNode:
		c.addText(n.Data)
		return false
	case html.ElementNode:
		c.start(&elem{atom: n.DataAtom, data: n.Data, ns: n.Namespace, attr: n.Attr})
		return true
	case html.DocumentNode:
		return true
	default: // comments, doctypes
		return false
	}
}

// addText handles a text node: s is all of its text.
func (c *collector) addText(s string) {
	if c.titleAt != 0 && len(c.open) == c.titleAt {
		c.titleBuf = append(c.titleBuf, s...)
	}
	if c.rawAt != 0 {
		return
	}
	if c.hiddenAt == 0 {
		c.text.write(s)
	}
	if c.anchorAt != 0 {
		c.anchor.write(s)
	}
}

// start handles the start of element e.
func (c *collector) start(e *elem) {
	block := isBlock(e)
	if block {
		c.text.boundary()
		c.anchor.boundary()
	}
	c.open = append(c.open, block)
	depth := len(c.open)
	if c.hiddenAt == 0 && isHidden(e) {
		c.hiddenAt = depth
	}
	if c.rawAt == 0 && isRaw(e) {
		c.rawAt = depth
	}
	if e.ns != "" {
		return
	}
	switch e.atom {
	case atom.Html:
		if !c.langSeen {
			c.langSeen = true
			if v, ok := attr(e, "lang"); ok {
				c.lang = c.keep(strings.ToLower(strings.TrimSpace(v)))
			}
		}
	case atom.Title:
		if !c.titleSeen {
			c.titleSeen = true
			c.titleAt = depth
		}
	case atom.Base:
		if v, ok := attr(e, "href"); ok && c.baseHref == nil {
			v = c.keep(v)
			c.baseHref = &v
		}
	case atom.Meta:
		c.meta(e)
	case atom.A:
		if v, ok := attr(e, "href"); ok {
			v = c.keep(v)
			c.urlRefs = append(c.urlRefs, urlRef{v, len(c.text.b)})
			if c.anchorAt == 0 {
				c.anchorAt = depth
				c.anchorIdx = len(c.links)
			}
			c.addLink(e, v, "a")
		}
	case atom.Area:
		if v, ok := attr(e, "href"); ok {
			c.addLink(e, c.keep(v), "area")
		}
	case atom.Link:
		c.linkElement(e)
	case atom.Iframe, atom.Frame:
		if v, ok := attr(e, "src"); ok {
			c.addLink(e, c.keep(v), e.atom.String())
		}
	case atom.Img:
		if v, ok := attr(e, "src"); ok {
			c.urlRefs = append(c.urlRefs, urlRef{c.keep(v), len(c.text.b)})
		}
	}
}

// end handles the end of the innermost open element.
func (c *collector) end() {
	depth := len(c.open)
	if c.open[depth-1] {
		c.text.boundary()
		c.anchor.boundary()
	}
	c.open = c.open[:depth-1]
	if depth == c.hiddenAt {
		c.hiddenAt = 0
	}
	if depth == c.rawAt {
		c.rawAt = 0
	}
	if depth == c.titleAt {
		c.title = collapse(string(c.titleBuf))
		c.titleAt = 0
	}
	if depth == c.anchorAt {
		c.links[c.anchorIdx].text = truncateUTF8(c.anchor.String(), MaxLinkText)
		c.anchorAt = 0
		c.anchor.reset()
	}
}

// addLink records a raw link; its anchor text is filled in when an <a> ends.
func (c *collector) addLink(e *elem, href, tag string) {
	rel, _ := attr(e, "rel")
	c.links = append(c.links, rawLink{
		href: href,
		tag:  tag,
		rel:  strings.Join(strings.Fields(strings.ToLower(c.keep(rel))), " "),
	})
}

// linkElement handles <link>: rel=canonical sets the canonical URL; rel alternate, next
// or prev (without stylesheet or icon) is an outgoing link.
func (c *collector) linkElement(e *elem) {
	href, ok := attr(e, "href")
	if !ok {
		return
	}
	rel, _ := attr(e, "rel")
	rel = strings.ToLower(rel)
	if c.canonical == nil && hasToken(rel, "canonical") {
		href = c.keep(href)
		c.canonical = &href
	}
	if hasToken(rel, "stylesheet") || hasToken(rel, "icon") {
		return
	}
	if hasToken(rel, "alternate") || hasToken(rel, "next") || hasToken(rel, "prev") {
		c.addLink(e, c.keep(href), "link")
	}
}

// meta handles <meta name="robots">, <meta name=BotName> and the first
// <meta http-equiv=refresh> that names a URL.
func (c *collector) meta(e *elem) {
	if equiv, ok := attr(e, "http-equiv"); ok && c.refresh == nil && strings.EqualFold(strings.TrimSpace(equiv), "refresh") {
		content, _ := attr(e, "content")
		if target, ok := refreshURL(content); ok {
			target = c.keep(target)
			c.refresh = &target
		}
	}
	name, ok := attr(e, "name")
	if !ok {
		return
	}
	name = strings.ToLower(strings.TrimSpace(name))
	if name != "robots" && (c.bot == "" || name != c.bot) {
		return
	}
	content, _ := attr(e, "content")
	noindex, nofollow := RobotsDirectives(content, c.bot)
	c.noindex = c.noindex || noindex
	c.nofollow = c.nofollow || nofollow
}

// attr returns the value of the attribute key (lower case) of e.
func attr(e *elem, key string) (string, bool) {
	for _, a := range e.attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// isRaw reports whether the content of e is never text a reader sees, wherever it is.
func isRaw(e *elem) bool {
	switch e.data {
	case "script", "style", "template", "noscript", "noembed", "noframes", "iframe", "title":
		return true
	}
	return false
}

// isHidden reports whether e and its subtree are not rendered: the head, <datalist>, the
// raw-content elements, a hidden attribute, or an inline style with display:none.
func isHidden(e *elem) bool {
	if e.ns == "" {
		switch e.atom {
		case atom.Head, atom.Datalist:
			return true
		}
	}
	if isRaw(e) {
		return true
	}
	for _, a := range e.attr {
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

// isBlock reports whether e separates words: block-level and table elements, line
// breaks and form controls. Inline elements (b, span, a, ...) do not.
func isBlock(e *elem) bool {
	if e.ns != "" {
		return false
	}
	switch e.atom {
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
