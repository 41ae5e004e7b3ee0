package variantweb

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// parseHTML parses a page; nil when the HTML parser refuses it (nesting deeper than 512).
func parseHTML(body []byte) *html.Node {
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return nil
	}
	return doc
}

// find returns the first element below n (n included) for which pred holds, depth first.
func find(n *html.Node, pred func(*html.Node) bool) *html.Node {
	if n.Type == html.ElementNode && pred(n) {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, pred); f != nil {
			return f
		}
	}
	return nil
}

// findAll returns every element below n for which pred holds, in document order.
func findAll(n *html.Node, pred func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && pred(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func isTag(a atom.Atom) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.DataAtom == a && n.Namespace == "" }
}

// body returns the document's body (the parser always makes one).
func body(doc *html.Node) *html.Node {
	if b := find(doc, isTag(atom.Body)); b != nil {
		return b
	}
	return doc
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key && a.Namespace == "" {
			return a.Val
		}
	}
	return ""
}

func setAttr(n *html.Node, key, val string) {
	for i, a := range n.Attr {
		if a.Key == key && a.Namespace == "" {
			n.Attr[i].Val = val
			return
		}
	}
	n.Attr = append(n.Attr, html.Attribute{Key: key, Val: val})
}

// templateWords mark the class or id of a site's template: navigation, header, footer.
var templateWords = []string{"nav", "menu", "sidebar", "header", "footer", "breadcrumb", "topbar"}

// isTemplate reports whether element n is part of the site's template rather than the
// page's content.
func isTemplate(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Nav, atom.Header, atom.Footer, atom.Aside:
		return true
	}
	for _, v := range []string{strings.ToLower(attr(n, "class")), strings.ToLower(attr(n, "id"))} {
		for _, w := range templateWords {
			if strings.Contains(v, w) {
				return true
			}
		}
	}
	return false
}

// invisible are the elements whose text parse.Parse does not read.
func invisible(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Head, atom.Script, atom.Style, atom.Template, atom.Noscript, atom.Noembed,
		atom.Noframes, atom.Iframe, atom.Title, atom.Datalist, atom.Textarea:
		return true
	}
	return attr(n, "hidden") != "" || strings.Contains(strings.ReplaceAll(strings.ToLower(attr(n, "style")), " ", ""), "display:none")
}

// textNodes returns the visible text nodes below n holding a non-space character,
// leaving out subtrees whose root element satisfies skip (nil: none).
func textNodes(n *html.Node, skip func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			if strings.TrimSpace(n.Data) != "" {
				out = append(out, n)
			}
			return
		case html.ElementNode:
			if invisible(n) || (skip != nil && skip(n)) {
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func elem(a atom.Atom, attrs ...string) *html.Node {
	n := &html.Node{Type: html.ElementNode, DataAtom: a, Data: a.String()}
	for i := 0; i+1 < len(attrs); i += 2 {
		n.Attr = append(n.Attr, html.Attribute{Key: attrs[i], Val: attrs[i+1]})
	}
	return n
}

func text(s string) *html.Node { return &html.Node{Type: html.TextNode, Data: s} }

// withText returns n with a text child s.
func withText(n *html.Node, s string) *html.Node {
	n.AppendChild(text(s))
	return n
}

// link returns <a href=href>s</a>.
func link(href, s string) *html.Node { return withText(elem(atom.A, "href", href), s) }

// unwrap replaces n by its children.
func unwrap(n *html.Node) {
	p := n.Parent
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		n.RemoveChild(c)
		p.InsertBefore(c, n)
		c = next
	}
	p.RemoveChild(n)
}

// prepend inserts c as the first child of n.
func prepend(n, c *html.Node) { n.InsertBefore(c, n.FirstChild) }

// setTitle replaces the text of the document's <title>.
func setTitle(doc *html.Node, s string) {
	t := find(doc, isTag(atom.Title))
	if t == nil {
		return
	}
	for t.FirstChild != nil {
		t.RemoveChild(t.FirstChild)
	}
	t.AppendChild(text(s))
}

// mapWords rewrites every maximal run of ASCII letters in s through f.
func mapWords(s string, f func(string) string) string {
	var b strings.Builder
	start := -1
	for i := 0; i <= len(s); i++ {
		letter := i < len(s) && (s[i]|0x20) >= 'a' && (s[i]|0x20) <= 'z'
		switch {
		case letter && start < 0:
			start = i
		case !letter && start >= 0:
			b.WriteString(f(s[start:i]))
			start = -1
		}
		if !letter && i < len(s) {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
