package frontier

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/horseshoe-crawler/horseshoe/internal/whatwgurl"
)

// Sentinel errors returned (wrapped) by Canonicalize. Callers branch on them with errors.Is.
var (
	// ErrScheme reports a URL whose scheme is not http or https.
	ErrScheme = errors.New("unsupported URL scheme")
	// ErrParse reports a URL (or base URL) that the WHATWG URL parser rejects.
	ErrParse = errors.New("invalid URL")
	// ErrHost reports a host that parses under WHATWG rules but cannot name a fetchable
	// server (characters outside letters, digits, '-', '.', '_' or an IP literal).
	ErrHost = errors.New("unfetchable URL host")
)

// Canonicalize parses raw (resolved against base if base != nil) with WHATWG URL semantics
// and returns the canonical form used for the seen-set and for fetching:
//   - scheme and host lower-cased, IDNA hosts converted to punycode, IPv4 shorthand
//     (0x7f.1) expanded, default port removed (:80 for http, :443 for https);
//   - user info and fragment removed;
//   - dot segments resolved, empty path turned into "/";
//   - percent-encoding normalized in path and query: hex upper-cased, escapes of unreserved
//     characters (ALPHA, DIGIT, '-', '.', '_', '~') decoded, every character RFC 3986 does
//     not allow raw (space, '"', '<', '>', '^', '`', '{', '|', '}', '[', ']', a '%' that
//     does not start an escape, non-ASCII) percent-encoded;
//   - query kept as is (parameter order preserved) except that an empty "?" is removed;
//   - well-known session parameters removed (session.go): jsessionid, phpsessid,
//     aspsessionid*, cfid, cftoken, sessionid, session_id, a sid whose value looks like a
//     session token, and the ";jsessionid=" path parameter.
//
// Only http and https are accepted: other schemes return an error wrapping ErrScheme.
// The result is idempotent (Canonicalize(Canonicalize(u)) == Canonicalize(u)) and
// round-trips through net/url: url.Parse(c).String() == c.
func Canonicalize(raw string, base *url.URL) (string, error) {
	baseHref := ""
	if base != nil {
		baseHref = base.String()
	}
	if baseHref == "" {
		// Most URLs the crawl canonicalizes are links parse/ already
		// resolved: plain absolute URLs whose parts need no parser.
		if p, ok := whatwgurl.SplitPlain(raw); ok {
			return canonicalizeParsed(p, raw)
		}
	}
	u, err := whatwgParse(raw, baseHref)
	if err != nil {
		return "", err
	}
	return canonicalizeParsed(u, raw)
}

// whatwgParse is the first, purely standard step of Canonicalize: the WHATWG basic URL
// parser (internal/whatwgurl, the one parse/ resolves links with) applied to raw, resolved against baseHref when that is not empty. Its Href is
// what the web-platform-tests URL data expects.
func whatwgParse(raw, baseHref string) (*whatwgurl.URL, error) {
	if baseHref == "" {
		u, err := whatwgurl.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("parse %q: %w: %w", raw, ErrParse, err)
		}
		return u, nil
	}
	b, err := whatwgurl.Parse(baseHref)
	if err != nil {
		return nil, fmt.Errorf("parse base %q: %w: %w", baseHref, ErrParse, err)
	}
	u, err := whatwgurl.Resolve(b, raw)
	if err != nil {
		return nil, fmt.Errorf("parse %q against %q: %w: %w", raw, baseHref, ErrParse, err)
	}
	return u, nil
}

// canonicalizeParsed applies the crawler-specific steps on top of the WHATWG result.
func canonicalizeParsed(u whatwgurl.Parts, raw string) (string, error) {
	scheme := u.Scheme()
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("canonicalize %q: scheme %q: %w", raw, scheme, ErrScheme)
	}
	host := u.Hostname()
	if !canonFetchableHost(host) {
		return "", fmt.Errorf("canonicalize %q: host %q: %w", raw, host, ErrHost)
	}
	path := u.Pathname()
	query := u.Query()

	var sb strings.Builder
	sb.Grow(len(scheme) + 3 + len(host) + 6 + len(path) + len(query) + 16)
	sb.WriteString(scheme)
	sb.WriteString("://")
	sb.WriteString(host)
	// The WHATWG parser already drops the scheme's default port.
	if port := u.Port(); port != "" {
		sb.WriteByte(':')
		sb.WriteString(port)
	}
	// Session parameters are matched on the normalized forms, so that an escaped
	// name ("%6Asessionid") is caught on the first pass, not on the second.
	path, query = stripSession(canonPercent(path, false), canonPercent(query, true))
	if path == "" {
		path = "/"
	}
	sb.WriteString(path)
	if query != "" {
		sb.WriteByte('?')
		sb.WriteString(query)
	}
	if hasDotSegment(path) {
		// A stripped path parameter left a dot segment ("/a/..;jsessionid=1/b"
		// is "/a/../b" without it): resolve it as the server will, once more
		// through the parser (the second pass strips nothing).
		return resolveDots(sb.String(), raw)
	}
	return sb.String(), nil
}

// resolveDots canonicalizes u, a canonical URL but for dot segments, again.
func resolveDots(u, raw string) (string, error) {
	p, err := whatwgParse(u, "")
	if err != nil {
		return "", err
	}
	return canonicalizeParsed(p, raw)
}

// hasDotSegment reports whether path has a segment that URL parsing resolves
// away: ".", "..", or a percent-encoded form of them.
func hasDotSegment(path string) bool {
	for seg := range strings.SplitSeq(path, "/") {
		switch strings.ToLower(seg) {
		case ".", "..", "%2e", ".%2e", "%2e.", "%2e%2e":
			return true
		}
	}
	return false
}

// canonPercent returns s with normalized percent-encoding (canonWritePercent).
func canonPercent(s string, inQuery bool) string {
	if s == "" {
		return s
	}
	var sb strings.Builder
	sb.Grow(len(s))
	canonWritePercent(&sb, s, inQuery)
	return sb.String()
}

// canonFetchableHost reports whether host (already WHATWG-parsed, so lower-case ASCII)
// can name a server: an IPv6 literal, or letters, digits, '-', '.' and '_' only.
func canonFetchableHost(host string) bool {
	if host == "" {
		return false
	}
	if host[0] == '[' {
		return host[len(host)-1] == ']'
	}
	// DNS limits (RFC 1035): labels of at most 63 bytes, names of at most 253
	// (plus a root dot). A longer name can never be resolved, and its
	// punycode labels need not survive a second parse.
	if len(strings.TrimSuffix(host, ".")) > 253 {
		return false
	}
	label := 0
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case c == '.':
			label = 0
			continue
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return false
		}
		if label++; label > 63 {
			return false
		}
	}
	return true
}

// canonUnreserved reports whether c is an RFC 3986 unreserved character.
func canonUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// canonAllowedRaw reports whether c may appear unescaped in a path (or, with inQuery, a
// query) of an RFC 3986 URI: unreserved, sub-delims, ':', '@', '/' and, in a query, '?'.
func canonAllowedRaw(c byte, inQuery bool) bool {
	if canonUnreserved(c) {
		return true
	}
	switch c {
	case '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '@', '/':
		return true
	case '?':
		return inQuery
	}
	return false
}

func canonIsHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func canonUnhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

const canonHexDigits = "0123456789ABCDEF"

// canonWritePercent writes s with normalized percent-encoding: valid escapes of unreserved
// characters are decoded, other valid escapes get upper-case hex, and every byte that RFC
// 3986 does not allow raw (including a '%' that does not start a valid escape) is escaped.
func canonWritePercent(sb *strings.Builder, s string, inQuery bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) && canonIsHex(s[i+1]) && canonIsHex(s[i+2]) {
			d := canonUnhex(s[i+1])<<4 | canonUnhex(s[i+2])
			if canonUnreserved(d) {
				sb.WriteByte(d)
			} else {
				sb.WriteByte('%')
				sb.WriteByte(canonHexDigits[d>>4])
				sb.WriteByte(canonHexDigits[d&15])
			}
			i += 2
			continue
		}
		if canonAllowedRaw(c, inQuery) {
			sb.WriteByte(c)
			continue
		}
		sb.WriteByte('%')
		sb.WriteByte(canonHexDigits[c>>4])
		sb.WriteByte(canonHexDigits[c&15])
	}
}

// HostKey returns the politeness key of a canonical URL: lower-case host[:port], the port
// kept only when it is not the scheme's default. It returns "" when canonical has no
// "scheme://" authority.
func HostKey(canonical string) string {
	scheme, authority, ok := canonSplitAuthority(canonical)
	if !ok {
		return ""
	}
	host, port := canonSplitHostPort(authority)
	if port == "" || canonDefaultPort(scheme, port) {
		return canonLower(host)
	}
	if canonLower(authority) == authority {
		return authority // already "host:port" in lower case: no allocation
	}
	return canonLower(host) + ":" + port
}

// canonSplitAuthority returns the lower-cased scheme and the authority (without user
// info) of a "scheme://authority/..." URL.
func canonSplitAuthority(s string) (scheme, authority string, ok bool) {
	i := strings.Index(s, "://")
	if i <= 0 {
		return "", "", false
	}
	scheme = canonLower(s[:i])
	rest := s[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	if j := strings.LastIndexByte(rest, '@'); j >= 0 {
		rest = rest[j+1:]
	}
	if rest == "" {
		return "", "", false
	}
	return scheme, rest, true
}

// canonSplitHostPort splits an authority into host (IPv6 literals keep their brackets)
// and port ("" when absent).
func canonSplitHostPort(authority string) (host, port string) {
	if strings.HasPrefix(authority, "[") {
		end := strings.IndexByte(authority, ']')
		if end < 0 {
			return authority, ""
		}
		host, rest := authority[:end+1], authority[end+1:]
		if strings.HasPrefix(rest, ":") {
			return host, rest[1:]
		}
		return host, ""
	}
	if i := strings.LastIndexByte(authority, ':'); i >= 0 {
		return authority[:i], authority[i+1:]
	}
	return authority, ""
}

func canonDefaultPort(scheme, port string) bool {
	return scheme == "http" && port == "80" || scheme == "https" && port == "443"
}

// canonLower lower-cases ASCII letters, returning s itself when it has none in upper case.
func canonLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}
