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

// plainPathQuery reports whether every character of path and query is plain.
func plainPathQuery(path, query string) bool {
	for i := 0; i < len(path); i++ {
		if !plain(path[i], false) {
			return false
		}
	}
	for i := 0; i < len(query); i++ {
		if !plain(query[i], true) {
			return false
		}
	}
	return true
}

// fastResolve resolves a plain relative reference (a path of plain characters, not starting with
// "//", with no ':' in its first segment, and an optional query of plain characters; any fragment
// dropped) against an http(s) base without credentials. ok is false for anything else.
func fastResolve(base *URL, ref string) (string, bool) {
	if i := strings.IndexByte(ref, '#'); i >= 0 {
		if i == 0 && plainFragment(ref[1:]) {
			// "#section": the base itself (its fragment replaced, then dropped).
			if s := base.Scheme(); s == "http" || s == "https" {
				return base.Href(true), true
			}
			return "", false
		}
		ref = ref[:i]
	}
	if origin, rest, ok := plainAbsolute(ref); ok {
		return resolvePlain(origin, rest)
	}
	path, query, hasQuery := strings.Cut(ref, "?")
	if path == "" || strings.HasPrefix(path, "//") {
		return "", false
	}
	firstSeg, _, _ := strings.Cut(path, "/")
	if strings.Contains(firstSeg, ":") || !plainPathQuery(path, query) {
		return "", false // a ':' in the first segment ("a:b") would be a scheme
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

// Parts are the components of a parsed http(s) URL that the crawler's canonical form is made
// of; *URL has them, and so does the split of a plain absolute URL (SplitPlain).
type Parts interface {
	Scheme() string
	Hostname() string
	Port() string
	Pathname() string
	Query() string
}

// plainParts is a plain absolute URL split into its parts.
type plainParts struct{ scheme, host, port, path, query string }

func (p plainParts) Scheme() string   { return p.scheme }
func (p plainParts) Hostname() string { return p.host }
func (p plainParts) Port() string     { return p.port }
func (p plainParts) Pathname() string { return p.path }
func (p plainParts) Query() string    { return p.query }

// SplitPlain returns the parts of raw as the parser would give them, when raw is a plain
// absolute http(s) URL (the form fastResolve resolves: a plain host and port, a path and
// query of plain characters, no fragment); ok is false for anything else, which goes to
// the parser. TestSplitPlainEqualsParser compares the two.
func SplitPlain(raw string) (Parts, bool) {
	if strings.IndexByte(raw, '#') >= 0 {
		return nil, false
	}
	origin, rest, ok := plainAbsolute(raw)
	if !ok {
		return nil, false
	}
	href, ok := resolvePlain(origin, rest)
	if !ok {
		return nil, false
	}
	scheme, after, _ := strings.Cut(href, "://")
	end := strings.IndexByte(after, '/')
	host, port, _ := strings.Cut(after[:end], ":")
	path, query, _ := strings.Cut(after[end:], "?")
	return plainParts{scheme, host, port, path, query}, true
}

// plainFragment reports whether a fragment holds only characters that the parser would
// neither strip nor change the meaning of (it is dropped anyway; whitespace and controls are
// stripped from the whole href first, so they go to the parser).
func plainFragment(f string) bool {
	for i := 0; i < len(f); i++ {
		if c := f[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// plainAbsolute splits an absolute http(s) href whose host is plain (lower-case letters,
// digits, '-' and '.', not ending in a number unless it is a canonical dotted quad) and whose
// port, if any, is not the scheme's default, into its origin ("http://h:81") and the rest of
// it (path and query).
func plainAbsolute(ref string) (origin, rest string, ok bool) {
	var scheme string
	switch {
	case strings.HasPrefix(ref, "http://"):
		scheme = "http"
	case strings.HasPrefix(ref, "https://"):
		scheme = "https"
	default:
		return "", "", false
	}
	after := ref[len(scheme)+3:]
	end := strings.IndexAny(after, "/?")
	if end < 0 {
		end = len(after)
	}
	hostport := after[:end]
	host, port, hasPort := strings.Cut(hostport, ":")
	if host == "" || !plainHost(host) {
		return "", "", false
	}
	if hasPort {
		if port == "" || len(port) > 5 || port[0] == '0' {
			return "", "", false
		}
		for i := 0; i < len(port); i++ {
			if port[i] < '0' || port[i] > '9' {
				return "", "", false
			}
		}
		if atoi(port) > 65535 {
			return "", "", false
		}
		if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
			return "", "", false
		}
	}
	rest = after[end:]
	if rest == "" || rest[0] == '?' {
		rest = "/" + rest
	}
	return scheme + "://" + hostport, rest, true
}

// plainHost reports whether host serializes as it is written: lower-case letters, digits, '-'
// and '.', no empty label, and if its last label is numeric, a dotted quad of decimal numbers
// 0-255 without leading zeros (anything else the parser reads as an IPv4 address of its own
// form, or refuses).
func plainHost(host string) bool {
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false // hyphens at a label's edge: IDNA rules the parser applies
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	last := labels[len(labels)-1]
	if '0' <= last[0] && last[0] <= '9' && strings.Trim(last, "0123456789") != "" && !strings.HasPrefix(last, "0x") {
		// A last label that starts with a digit but is not a number ("0-0"):
		// the parser's IPv4 reading decides it (it made http://0-0 into
		// http://0.0.0.0, found by FuzzResolveHref), so the parser takes it.
		return false
	}
	if strings.Trim(last, "0123456789") != "" && !strings.HasPrefix(last, "0x") {
		return !strings.HasPrefix(host, "xn--") && !strings.Contains(host, ".xn--")
	}
	if len(labels) != 4 {
		return false
	}
	for _, l := range labels {
		if strings.Trim(l, "0123456789") != "" || (len(l) > 1 && l[0] == '0') || len(l) > 3 {
			return false
		}
		if atoi(l) > 255 {
			return false
		}
	}
	return true
}

func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// resolvePlain finishes an absolute href split by plainAbsolute: its path and query must be
// plain, as in a relative reference.
func resolvePlain(origin, rest string) (string, bool) {
	path, query, hasQuery := strings.Cut(rest, "?")
	if !plainPathQuery(path, query) {
		return "", false
	}
	var b strings.Builder
	b.Grow(len(origin) + len(rest) + 1)
	b.WriteString(origin)
	writeDotless(&b, path)
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
