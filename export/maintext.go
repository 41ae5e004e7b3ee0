package export

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"

	readability "codeberg.org/readeck/go-readability/v2"
	"golang.org/x/net/html"
)

// The main text of a page is what Firefox's Reader View shows: the article
// that Mozilla's Readability finds, with navigation, headers, footers and
// sidebars left out. It is extracted by go-readability (readeck's Go port of
// Readability.js 0.6.0), at export time from the stored raw response: the
// crawl is not slowed by it, and crawls made before it existed get it too.
//
// Readability's work grows with the page's size and more than linearly with
// its depth (every candidate's score climbs its ancestors, and up to five
// passes re-scan the page), so a hostile page is refused before it is
// scored, by limits that no ordinary page comes near:
const (
	// MainTextMaxBytes bounds the HTML given to the extractor. A page
	// above it gets no main text. The parsed tree of 4 MiB of HTML takes
	// about ten times that in memory, for each page being extracted.
	MainTextMaxBytes = 4 << 20
	// MainTextMaxElements bounds the number of elements in the parsed page
	// (Readability's own maxElemsToParse option, off by default).
	MainTextMaxElements = 100_000
	// MainTextMaxAttributes bounds the number of attributes: the parser
	// keeps each as three strings, and a page of nothing but attributes
	// costs some fifty times its size in memory.
	MainTextMaxAttributes = 200_000
	// MainTextMaxDepth bounds the nesting of elements: 512 is the depth
	// beyond which Chromium's HTML parser stops nesting elements, and the
	// depth at which golang.org/x/net/html stops parsing.
	MainTextMaxDepth = 512
	// MainTextMaxWork bounds the sum over the page's nodes of their size
	// (an element's 1 plus its attributes' bytes, a text's bytes) times
	// their depth. Readability measures the text under every element it
	// weighs, so its work grows with each text's bytes times the number of
	// elements above it, not with the page's bytes alone: 4 MiB of text
	// under 500 nested elements takes minutes. 100 Mi units is a 4 MiB page
	// whose text sits 25 elements deep on average, about a second.
	MainTextMaxWork = 100 << 20
)

// ErrMainTextTooLarge marks a page refused by the limits above.
var ErrMainTextTooLarge = errors.New("page too large for main-text extraction")

// errExtractorPanic marks a panic of the extractor, recovered.
var errExtractorPanic = errors.New("main text: extractor failed")

// MainText returns the main text of an HTML page given as UTF-8: the text
// of the article Readability finds, as a browser would render it to plain
// text (blocks on their own lines). It is "" with a nil error when the page
// has no article (Readability finds nothing), and "" with an error when the
// page exceeds the limits (ErrMainTextTooLarge) or the extractor fails.
// pageURL may be "".
func MainText(page []byte, pageURL string) (text string, err error) {
	if len(page) > MainTextMaxBytes {
		return "", fmt.Errorf("%w: %d bytes of HTML, the limit is %d", ErrMainTextTooLarge, len(page), MainTextMaxBytes)
	}
	if err := checkTokens(page); err != nil {
		return "", err
	}
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		if strings.Contains(err.Error(), "open stack of elements exceeds") {
			// x/net/html's own bound, the same as MainTextMaxDepth: a limit, not a failure.
			return "", fmt.Errorf("%w: elements nested more than %d deep", ErrMainTextTooLarge, MainTextMaxDepth)
		}
		return "", fmt.Errorf("main text: %w", err)
	}
	if err := checkTree(doc); err != nil {
		return "", err
	}
	var u *url.URL
	if pageURL != "" {
		u, _ = url.Parse(pageURL) // a URL only resolves the article's links, not needed for its text
	}
	defer func() { // an extractor bug costs this page its main text, not the export
		if r := recover(); r != nil {
			text, err = "", fmt.Errorf("%w: %v", errExtractorPanic, r)
		}
	}()
	p := readability.NewParser()
	art, err := p.ParseAndMutate(doc, u)
	if err != nil {
		return "", fmt.Errorf("main text: %w", err)
	}
	if art.Node == nil {
		return "", nil
	}
	var b bytes.Buffer
	if err := art.RenderText(&b); err != nil {
		return "", fmt.Errorf("main text: %w", err)
	}
	return b.String(), nil
}

// formatting are the elements of the HTML parser's list of active
// formatting elements (WHATWG HTML 13.2.4.3).
var formatting = map[string]bool{"a": true, "b": true, "big": true, "code": true, "em": true, "font": true, "i": true,
	"nobr": true, "s": true, "small": true, "strike": true, "strong": true, "tt": true, "u": true}

// checkTokens refuses a page with more than MainTextMaxAttributes
// attributes, or on which the HTML parser could create more than
// MainTextMaxElements elements of its own. The parser reopens
// the formatting elements (<b>, <font>, <a> ...) left open at every later
// text and start tag once their block closed, so a few kilobytes of
// distinct unclosed <b id=N> followed by many paragraphs build millions
// of elements (84 KB made 8 million in 12 s). The bound is the sum over
// the page's tokens of the formatting elements open at that token, counting
// at most three alike, as the parser's "Noah's Ark" clause keeps; it is
// read with the tokenizer alone, in linear time, and is zero on a page
// that closes what it opens.
func checkTokens(page []byte) error {
	open := map[string]int{} // tag and attributes -> times open, up to 3
	var order []string       // open formatting elements' keys, oldest first
	reopened, attributes := 0, 0
	var key strings.Builder
	z := html.NewTokenizer(bytes.NewReader(page))
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return nil
		case html.TextToken, html.StartTagToken, html.SelfClosingTagToken:
			reopened += len(order)
			if reopened > MainTextMaxElements {
				return fmt.Errorf("%w: formatting elements left open would be reopened more than %d times", ErrMainTextTooLarge, MainTextMaxElements)
			}
		}
		if tt != html.StartTagToken && tt != html.EndTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, hasAttr := z.TagName()
		isFormatting := formatting[string(name)]
		key.Reset()
		key.Write(name)
		for hasAttr {
			var k, v []byte
			k, v, hasAttr = z.TagAttr()
			if attributes++; attributes > MainTextMaxAttributes {
				return fmt.Errorf("%w: more than %d attributes", ErrMainTextTooLarge, MainTextMaxAttributes)
			}
			if isFormatting {
				fmt.Fprintf(&key, " %s=%q", k, v)
			}
		}
		switch {
		case !isFormatting:
		case tt == html.EndTagToken:
			for i := len(order) - 1; i >= 0; i-- {
				if k := order[i]; k == string(name) || strings.HasPrefix(k, string(name)+" ") {
					open[k]--
					order = append(order[:i], order[i+1:]...)
					break
				}
			}
		case tt == html.StartTagToken && open[key.String()] < 3:
			open[key.String()]++
			order = append(order, key.String())
		}
	}
}

// checkTree refuses a parsed page with more than MainTextMaxElements
// elements, nested deeper than MainTextMaxDepth or above MainTextMaxWork.
// It walks the tree without recursion, so a deep tree costs no stack.
func checkTree(doc *html.Node) error {
	elements, depth, work := 0, 0, 0
	for n := doc; n != nil; {
		switch n.Type {
		case html.ElementNode:
			elements++
			if elements > MainTextMaxElements {
				return fmt.Errorf("%w: more than %d elements", ErrMainTextTooLarge, MainTextMaxElements)
			}
			size := 1
			for _, a := range n.Attr {
				size += len(a.Key) + len(a.Val)
			}
			work += size * depth
		case html.TextNode:
			work += len(n.Data) * depth
		}
		if work > MainTextMaxWork {
			return fmt.Errorf("%w: its text is nested too deep for its size (more than %d byte-levels)", ErrMainTextTooLarge, MainTextMaxWork)
		}
		// Next node in document order, tracking the depth.
		if n.FirstChild != nil {
			n = n.FirstChild
			depth++
			if depth > MainTextMaxDepth {
				return fmt.Errorf("%w: elements nested more than %d deep", ErrMainTextTooLarge, MainTextMaxDepth)
			}
			continue
		}
		for n != nil && n.NextSibling == nil {
			n = n.Parent
			depth--
		}
		if n != nil {
			n = n.NextSibling
		}
	}
	return nil
}
