package parse

import (
	"bytes"

	"golang.org/x/net/html"
)

// maxFallbackDepth caps the depth of the tree built by shallowTree. It is below the HTML5
// parser's own limit of 512 open elements.
const maxFallbackDepth = 256

// shallowTree builds a node tree from body with a simple stack discipline instead of the
// full HTML5 tree-construction algorithm, for documents the HTML5 parser rejects because
// they nest too deeply. Elements opened beyond maxDepth are kept (so their boundaries and
// attributes still count) but do not become parents: their content goes to the deepest
// open element. An end tag closes the nearest open element of the same name, if any.
// Every step is bounded by maxDepth, so the whole build is linear in len(body).
func shallowTree(body []byte, maxDepth int) *html.Node {
	z := html.NewTokenizer(bytes.NewReader(body))
	doc := &html.Node{Type: html.DocumentNode}
	stack := make([]*html.Node, 1, 64)
	stack[0] = doc
	for {
		tt := z.Next()
		top := stack[len(stack)-1]
		switch tt {
		case html.ErrorToken:
			return doc
		case html.TextToken:
			// Adjacent text nodes are not merged: the walker treats them as one run.
			top.AppendChild(&html.Node{Type: html.TextNode, Data: string(z.Text())})
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			n := &html.Node{Type: html.ElementNode, Data: tok.Data, DataAtom: tok.DataAtom, Attr: tok.Attr}
			top.AppendChild(n)
			if tt == html.StartTagToken && !isVoid(tok.Data) && len(stack) <= maxDepth {
				stack = append(stack, n)
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			for i := len(stack) - 1; i > 0; i-- {
				if stack[i].Data == string(name) {
					stack = stack[:i]
					break
				}
			}
		}
	}
}

// isVoid reports whether an element never has content.
func isVoid(name string) bool {
	switch name {
	case "area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link",
		"meta", "param", "source", "track", "wbr":
		return true
	}
	return false
}
