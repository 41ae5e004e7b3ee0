// Package whatwgurl is the crawler's one WHATWG URL parser (github.com/nlnwa/whatwg-url with the
// standard's default options). parse/ resolves links with it and frontier/ canonicalizes with it, so
// a link is read the way a browser reads it ("/back\slash" is "/back/slash", "/a%zz" is kept, tabs
// and newlines inside an href are dropped) and read the same way at both steps.
//
// The package is pure: strings in, URLs out. The parser holds only immutable configuration and is
// safe for concurrent use.
package whatwgurl

import wurl "github.com/nlnwa/whatwg-url/url"

// URL is a parsed URL. Href(true) is its serialization without the fragment.
type URL = wurl.Url

var parser = wurl.NewParser()

// Parse parses an absolute URL string (the WHATWG basic URL parser without a base).
func Parse(raw string) (*URL, error) {
	return parser.Parse(raw)
}

// Resolve parses ref against base, as a browser resolves an href against the document's base URL.
// Leading and trailing C0 controls and spaces and every tab and newline are removed from ref first.
func Resolve(base *URL, ref string) (*URL, error) {
	return parser.BasicParser(ref, base, nil, wurl.NoState)
}
