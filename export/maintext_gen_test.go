package export

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// hostilePages generates pages built to cost an HTML parser and Readability
// as much as possible within the extractor's limits, and a few beyond them.
func hostilePages() map[string][]byte {
	const words = "lorem ipsum dolor sit amet, consectetur adipiscing elit; "
	under := MainTextMaxBytes - 1024
	pages := map[string]string{
		// One long article: every paragraph a candidate.
		"paragraphs": "<html><body><article>" + fill("<p>"+words+words+"</p>", under-100) + "</article></body></html>",
		// As many elements as allowed, each with a little text.
		"elements": "<body>" + strings.Repeat("<div><p>"+words+"</p></div>", MainTextMaxElements/2-10),
		// Nested to just under the depth limit, with many paragraphs at
		// the bottom: every candidate has the longest ancestor chain.
		"deep": "<body>" + strings.Repeat("<div>", MainTextMaxDepth-10) + strings.Repeat("<p>"+words+"</p>", 40_000),
		// Deep chains side by side.
		"deep-many": "<body>" + strings.Repeat(strings.Repeat("<div>", 400)+"<p>"+words+"</p>"+strings.Repeat("</div>", 400), 20),
		// Formatting elements left open: the parser reconstructs them at
		// every block (the adoption agency and the active formatting list).
		"unclosed-formatting": "<body>" + fill("<a href=x><b><i><font><p>"+words, under),
		// Distinct formatting elements left open, then many paragraphs:
		// the parser would reopen all of them in each paragraph.
		"reopened-formatting": "<body><p>" + numbered("<b id=%d>", 400) + strings.Repeat("<p>x", 20_000),
		// Nested to just under the depth limit with as much text as the
		// work limit allows below it.
		"deep-at-work-limit": "<body>" + strings.Repeat("<div>", MainTextMaxDepth-10) +
			fill("<p>"+words+"</p>", MainTextMaxWork/(MainTextMaxDepth-8)*9/10),
		// Table misnesting: text foster-parented out of tables.
		"tables": "<body>" + fill("<table><tr><td><table>"+words+"<tr>", under),
		// Unterminated markup: a comment, a tag, an attribute value.
		"open-comment":   "<body><p>" + words + "<!--" + fill(words, under),
		"open-attribute": "<body><p>" + words + "</p><p " + `title="` + fill(words, under),
		// Many attributes on one element.
		"attributes": "<body><div " + fill(`a="b" `, under) + ">" + words,
		// Binary noise.
		"noise": string(noise(under)),
		// Over the limits.
		"too-many-bytes":    "<body><p>" + fill(words, MainTextMaxBytes) + words,
		"too-many-elements": "<body>" + strings.Repeat("<i></i>", MainTextMaxElements+1),
		"too-deep":          "<body>" + strings.Repeat("<div>", MainTextMaxDepth+10) + words,
	}
	out := make(map[string][]byte, len(pages))
	for k, v := range pages {
		out[k] = []byte(v)
	}
	return out
}

// numbered repeats format with 0, 1, ... n-1.
func numbered(format string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, format, i)
	}
	return b.String()
}

// fill repeats unit up to limit bytes.
func fill(unit string, limit int) string {
	return strings.Repeat(unit, limit/len(unit))
}

// noise returns n bytes of seeded random bytes, with tag characters more
// frequent than chance so that the tokenizer sees many broken tags.
func noise(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		switch r.IntN(8) {
		case 0:
			b[i] = '<'
		case 1:
			b[i] = '>'
		default:
			b[i] = byte(r.IntN(256))
		}
	}
	return b
}
