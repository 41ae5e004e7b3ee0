package parse

import "github.com/PuerkitoBio/goquery"

// goqueryFromShallow builds a document with the fallback tree builder, for tests.
func goqueryFromShallow(body string) *goquery.Document {
	return goquery.NewDocumentFromNode(shallowTree([]byte(body), maxFallbackDepth))
}
