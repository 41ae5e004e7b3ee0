// Package whatwgurl is the crawler's one WHATWG URL parser (github.com/nlnwa/whatwg-url with the
// standard's default options). parse/ resolves links with it and frontier/ canonicalizes with it, so
// a link is read the way a browser reads it ("/back\slash" is "/back/slash", "/a%zz" is kept, tabs
// and newlines inside an href are dropped) and read the same way at both steps.
//
// The package is pure: strings in, URLs out. The parser holds only immutable configuration and is
// safe for concurrent use.
package whatwgurl

import (
	"strings"

	wurl "github.com/nlnwa/whatwg-url/url"
)

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

// ResolveHref resolves ref against base, as Resolve does, and returns the result serialized
// without its fragment. Most hrefs of a page are plain relative paths ("../sql.html",
// "/docs/a?x=1"): those are resolved directly (fastResolve), about four times faster than the
// parser, with the same result (TestResolveHrefEqualsParser and FuzzResolveHref compare them);
// every other href goes through the parser.
func ResolveHref(base *URL, ref string) (string, error) {
	if s, ok := fastResolve(base, ref); ok {
		return s, nil
	}
	u, err := Resolve(base, ref)
	if err != nil {
		return "", err
	}
	return u.Href(true), nil
}

// plain reports whether c needs no percent-encoding, stripping or special handling in a path
// (inQuery: in a query, where WHATWG also encodes ' for special schemes, and '?' is a plain
// character).
func plain(c byte, inQuery bool) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '.', '_', '~', '!', '$', '&', '(', ')', '*', '+', ',', ';', '=', ':', '@', '/':
		return true
	case '\'':
		return !inQuery
	case '?':
		return inQuery
	}
	return false
}

// fastResolve resolves a plain relative reference (a path of plain characters, not starting with
// "//", with no ':' in its first segment, and an optional query of plain characters; any fragment
// dropped) against an http(s) base without credentials. ok is false for anything else.
func fastResolve(base *URL, ref string) (string, bool) {
	if i := strings.IndexByte(ref, '#'); i >= 0 {
		ref = ref[:i]
	}
	path, query, hasQuery := strings.Cut(ref, "?")
	if path == "" || strings.HasPrefix(path, "//") {
		return "", false
	}
	firstSlash := strings.IndexByte(path, '/')
	for i := 0; i < len(path); i++ {
		c := path[i]
		if !plain(c, false) || (c == ':' && (firstSlash < 0 || i < firstSlash)) {
			return "", false
		}
	}
	for i := 0; i < len(query); i++ {
		if !plain(query[i], true) {
			return "", false
		}
	}
	scheme := base.Scheme()
	if (scheme != "http" && scheme != "https") || base.Hostname() == "" || base.Username() != "" || base.Password() != "" {
		return "", false // a base with credentials keeps them: the parser serializes it
	}
	basePath := base.Pathname()
	if !strings.HasPrefix(basePath, "/") {
		return "", false
	}
	full := path
	if path[0] != '/' {
		full = basePath[:strings.LastIndexByte(basePath, '/')+1] + path
	}
	var b strings.Builder
	b.Grow(len(scheme) + 3 + len(base.Host()) + len(full) + 1 + len(query))
	b.WriteString(scheme)
	b.WriteString("://")
	b.WriteString(base.Host())
	writeDotless(&b, full)
	if hasQuery {
		b.WriteByte('?')
		b.WriteString(query)
	}
	return b.String(), true
}

// writeDotless writes path (absolute) with its "." and ".." segments resolved as the WHATWG path
// state resolves them: ".." removes the segment before it (never the root), and a path that ends
// in a dot segment ends in "/".
func writeDotless(b *strings.Builder, path string) {
	segs := strings.Split(path[1:], "/")
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		case ".":
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	for _, s := range out {
		b.WriteByte('/')
		b.WriteString(s)
	}
	if len(out) == 0 {
		b.WriteByte('/')
	}
}
