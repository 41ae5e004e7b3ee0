package fetch

import (
	"bytes"
	"errors"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/temoto/robotstxt"
)

// DefaultRobotsMaxSize is the number of robots.txt bytes parsed (RFC 9309 section 2.5: at least 500 KiB).
const DefaultRobotsMaxSize = 500 << 10

// MaxCrawlDelay is the longest Crawl-delay Robots.CrawlDelay reports: the largest whole number of
// seconds a time.Duration holds (about 292 years). A larger value, "inf" included, saturates here;
// the frontier then caps it at politeness.max_delay, with a note in the report.
const MaxCrawlDelay = time.Duration(maxCrawlDelaySeconds) * time.Second

const maxCrawlDelaySeconds = math.MaxInt64 / int64(time.Second) // 9223372036

// maxRobotsLineLen is the longest robots.txt line Google's reference parser keeps (kMaxLineLen-1);
// bytes after it on the same line are dropped.
const maxRobotsLineLen = 2083*8 - 1

// Robots holds the parsed robots.txt rules of one host. It is immutable and safe for concurrent use.
//
// Matching follows RFC 9309 and Google's reference implementation (github.com/google/robotstxt):
// the group whose user-agent token equals the product token (case-insensitively) applies, all groups
// naming that token are merged, and the "*" groups apply only when no group names the token. Within
// the group the longest matching pattern wins; on a tie allow wins. Patterns support "*" and a
// trailing "$"; non-ASCII bytes in patterns are percent-encoded and existing %xx escapes upper-cased.
//
// github.com/temoto/robotstxt parses the canonical form of the file's Crawl-delay records. It is not used for allow/disallow matching, because its rules are not exported and its
// matcher differs from RFC 9309 (wildcard patterns are not anchored at the path start, ties between
// allow and disallow go to the first rule listed, wildcard rules are ranked by regexp length, and
// user-agent groups are chosen by prefix, so "horse" would govern "horseshoe").
type Robots struct {
	status      int
	unavailable bool
	cause       string // why it is unavailable (robotsfail.go)
	incurable   bool   // unavailable for a reason retrying cannot cure soon
	allowAll    bool
	agents      map[string]*ruleSet // lower-case product token -> merged groups
	global      *ruleSet            // merged "*" groups; nil when there is none
	sitemaps    []string
	tm          *robotstxt.RobotsData // temoto's parse of the canonical text; nil when not needed
}

type ruleSet struct {
	rules     []rule
	key       string // group key in the canonical text handed to temoto ("*" or the token)
	delayText string // the Crawl-delay that counts (the first valid one of the groups), as written
}

type ruleKind uint8

const (
	kindPrefix   ruleKind = iota // no wildcard: plain prefix test
	kindExact                    // trailing "$", no "*": equality test
	kindWildcard                 // contains "*"
)

type rule struct {
	pattern  string   // escaped pattern as written (its length is the match priority)
	allow    bool     //
	kind     ruleKind //
	segments []string // for kindWildcard: pattern split on "*" (without a trailing "$")
	anchored bool     // for kindWildcard: pattern ends with "$"
}

// ParseRobots interprets a robots.txt response with RFC 9309 status semantics: 2xx parses at most
// DefaultRobotsMaxSize bytes of body; 4xx (including 404) allows everything; 429 and 5xx disallow
// everything (Unavailable reports true). 429 is treated like 5xx, as Google does, because it means
// "come back later", not "there are no rules". Any other status (1xx, a 3xx that was not followed,
// 0) allows everything, as RFC 9309 treats an unavailable file.
func ParseRobots(status int, body []byte) *Robots {
	return parseRobots(status, body, DefaultRobotsMaxSize)
}

func parseRobots(status int, body []byte, maxSize int) *Robots {
	switch {
	case status >= 200 && status < 300:
		r := parseRobotsBody(limitRobotsBody(body, maxSize))
		r.status = status
		return r
	case status == 429 || (status >= 500 && status < 600):
		return &Robots{status: status, unavailable: true}
	default:
		return &Robots{status: status, allowAll: true}
	}
}

// limitRobotsBody cuts body to at most maxSize bytes, ending at the last complete line so that a
// rule is never cut in half.
func limitRobotsBody(body []byte, maxSize int) []byte {
	if maxSize <= 0 || len(body) <= maxSize {
		return body
	}
	body = body[:maxSize]
	if i := bytes.LastIndexAny(body, "\r\n"); i >= 0 {
		return body[:i+1]
	}
	return body
}

// Unavailable reports whether the robots.txt could not be retrieved (5xx, 429, network error), in
// which case RFC 9309 requires assuming complete disallow.
func (r *Robots) Unavailable() bool { return r.unavailable }

// Status is the HTTP status the rules were built from (0 for a network error).
func (r *Robots) Status() int { return r.status }

// Sitemaps lists the Sitemap URLs declared in the file, in order.
func (r *Robots) Sitemaps() []string {
	if len(r.sitemaps) == 0 {
		return nil
	}
	out := make([]string, len(r.sitemaps))
	copy(out, r.sitemaps)
	return out
}

// selectGroup returns the rules governing agent, or nil when no group applies.
func (r *Robots) selectGroup(agent string) *ruleSet {
	if rs, ok := r.agents[strings.ToLower(agent)]; ok {
		return rs
	}
	return r.global
}

// CrawlDelay returns the Crawl-delay of the group governing agent (fractional seconds allowed; at
// most MaxCrawlDelay, which larger values saturate to; see parseCrawlDelay).
func (r *Robots) CrawlDelay(agent string) (time.Duration, bool) {
	if r.tm == nil {
		return 0, false
	}
	rs := r.selectGroup(agent)
	if rs == nil {
		return 0, false
	}
	// FindGroup picks the longest group key that prefixes its argument; passing the exact key of the
	// group chosen above makes it return that group.
	g := r.tm.FindGroup(rs.key)
	if g == nil || g.CrawlDelay <= 0 {
		return 0, false
	}
	return g.CrawlDelay, true
}

// CrawlDelayText returns the Crawl-delay that CrawlDelay reads for agent as the file wrote it
// ("1e24", "inf"), "" when there is none: a value beyond MaxCrawlDelay is reported as given, not as
// the duration it saturates to.
func (r *Robots) CrawlDelayText(agent string) string {
	if _, ok := r.CrawlDelay(agent); !ok {
		return ""
	}
	return r.selectGroup(agent).delayText
}

// Allowed reports whether agent may fetch pathAndQuery (the path, params and query of the URL,
// as sent on the wire: use PathAndQuery or RobotsPath to build it). An empty path means "/".
func (r *Robots) Allowed(agent, pathAndQuery string) bool {
	if r.unavailable {
		return false
	}
	if r.allowAll {
		return true
	}
	rs := r.selectGroup(agent)
	if rs == nil {
		return true
	}
	p := pathAndQuery
	if p == "" {
		p = "/"
	} else if p[0] != '/' {
		p = "/" + p
	}
	bestAllow, bestDisallow := -1, -1
	for i := range rs.rules {
		ru := &rs.rules[i]
		n := len(ru.pattern)
		if ru.allow {
			if n <= bestAllow || !ru.matches(p) {
				continue
			}
			bestAllow = n
		} else {
			if n <= bestDisallow || !ru.matches(p) {
				continue
			}
			bestDisallow = n
		}
	}
	return bestDisallow <= bestAllow
}

// AllowedURL is Allowed for the path and query of u.
func (r *Robots) AllowedURL(agent string, u *url.URL) bool {
	return r.Allowed(agent, RobotsPath(u))
}

func (ru *rule) matches(p string) bool {
	switch ru.kind {
	case kindPrefix:
		return strings.HasPrefix(p, ru.pattern)
	case kindExact:
		return p == ru.pattern[:len(ru.pattern)-1]
	}
	segs := ru.segments
	// The first segment precedes the first "*" and must match at the start.
	if !strings.HasPrefix(p, segs[0]) {
		return false
	}
	pos := len(segs[0])
	last := len(segs) - 1
	for i := 1; i < last; i++ {
		j := strings.Index(p[pos:], segs[i])
		if j < 0 {
			return false
		}
		pos += j + len(segs[i])
	}
	if ru.anchored {
		// The last segment must end the path, after everything matched so far.
		return len(p)-len(segs[last]) >= pos && strings.HasSuffix(p, segs[last])
	}
	return strings.Contains(p[pos:], segs[last])
}

func newRule(pattern string, allow bool) rule {
	ru := rule{pattern: pattern, allow: allow}
	body := pattern
	anchored := strings.HasSuffix(body, "$")
	if anchored {
		body = body[:len(body)-1]
	}
	switch {
	case !strings.Contains(body, "*") && anchored:
		ru.kind = kindExact
	case !strings.Contains(body, "*"):
		ru.kind = kindPrefix
	default:
		ru.kind = kindWildcard
		ru.anchored = anchored
		ru.segments = strings.Split(body, "*")
	}
	return ru
}

// PathAndQuery extracts path, params and query from a URL string without re-encoding, as Google's
// reference matcher does (GetPathParamsQuery): the fragment is dropped, "/" is returned when there is
// no path, and a leading "/" is added when the result would start with "?" or ";".
func PathAndQuery(rawURL string) string {
	searchStart := 0
	if strings.HasPrefix(rawURL, "//") {
		searchStart = 2
	}
	earlyPath := indexAnyFrom(rawURL, "/?;", searchStart)
	protocolEnd := indexFrom(rawURL, "://", searchStart)
	if earlyPath >= 0 && (protocolEnd < 0 || earlyPath < protocolEnd) {
		protocolEnd = -1
	}
	if protocolEnd < 0 {
		protocolEnd = searchStart
	} else {
		protocolEnd += 3
	}
	pathStart := indexAnyFrom(rawURL, "/?;", protocolEnd)
	if pathStart < 0 {
		return "/"
	}
	hashPos := indexFrom(rawURL, "#", searchStart)
	if hashPos >= 0 && hashPos < pathStart {
		return "/"
	}
	pathEnd := len(rawURL)
	if hashPos >= 0 {
		pathEnd = hashPos
	}
	if rawURL[pathStart] != '/' {
		return "/" + rawURL[pathStart:pathEnd]
	}
	return rawURL[pathStart:pathEnd]
}

// RobotsPath returns the path and query of u as sent on the wire (escaped path, raw query), the form
// Robots.Allowed expects.
func RobotsPath(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	} else if p[0] != '/' {
		p = "/" + p
	}
	if u.RawQuery != "" || u.ForceQuery {
		p += "?" + u.RawQuery
	}
	return p
}

func indexFrom(s, sub string, from int) int {
	if from > len(s) {
		return -1
	}
	i := strings.Index(s[from:], sub)
	if i < 0 {
		return -1
	}
	return from + i
}

func indexAnyFrom(s, chars string, from int) int {
	if from > len(s) {
		return -1
	}
	i := strings.IndexAny(s[from:], chars)
	if i < 0 {
		return -1
	}
	return from + i
}

// firstDelay keeps g's Crawl-delay text when rs has none yet: the first valid one counts, as in
// parseCanonical.
func (rs *ruleSet) firstDelay(g *parsedGroup) {
	if rs.delayText == "" {
		rs.delayText = g.delayText
	}
}

// parsedGroup is one group of the file in source order.
type parsedGroup struct {
	tokens     []string // lower-case product tokens
	global     bool     // the group names "*"
	rules      []rule
	crawlDelay string // first valid Crawl-delay value in seconds, saturated at MaxCrawlDelay
	delayText  string // the same value as written ("1e24")
}

// parseRobotsBody parses a 2xx robots.txt body.
func parseRobotsBody(body []byte) *Robots {
	r := &Robots{agents: make(map[string]*ruleSet)}
	var (
		groups    []*parsedGroup
		cur       *parsedGroup
		separator bool // a rule was seen since the last user-agent line: the next one starts a group
	)
	forEachRobotsLine(body, func(key robotsKey, value string) {
		switch key {
		case keyUserAgent:
			if cur == nil || separator {
				cur = &parsedGroup{}
				groups = append(groups, cur)
				separator = false
			}
			if isGlobalAgent(value) {
				cur.global = true
			} else if tok := extractAgentToken(value); tok != "" {
				cur.tokens = append(cur.tokens, strings.ToLower(tok))
			}
		case keyAllow, keyDisallow:
			if cur == nil {
				return // rules before the first user-agent line are ignored
			}
			separator = true
			if value == "" {
				return // an empty pattern matches with priority 0, which never decides anything
			}
			allow := key == keyAllow
			pattern := escapeRobotsPattern(value)
			if c := pattern[0]; c != '/' && c != '*' && c != '$' {
				pattern = "/" + pattern
			}
			cur.rules = append(cur.rules, newRule(pattern, allow))
			if allow {
				// Google: allowing ".../index.htm(l)" also allows the directory itself.
				// (A pattern starting with '*' or '$' may have no '/'.)
				if slash := strings.LastIndexByte(pattern, '/'); slash >= 0 && strings.HasPrefix(pattern[slash:], "/index.htm") {
					cur.rules = append(cur.rules, newRule(pattern[:slash+1]+"$", true))
				}
			}
		case keyCrawlDelay:
			if cur == nil || cur.crawlDelay != "" {
				return
			}
			if d, ok := parseCrawlDelay(value); ok {
				cur.crawlDelay = strconv.FormatFloat(d, 'f', -1, 64)
				cur.delayText = value
			}
		case keySitemap:
			if value != "" {
				r.sitemaps = append(r.sitemaps, value)
			}
		}
	})
	for _, g := range groups {
		if g.global {
			if r.global == nil {
				r.global = &ruleSet{key: "*"}
			}
			r.global.rules = append(r.global.rules, g.rules...)
			r.global.firstDelay(g)
		}
		for _, tok := range g.tokens {
			rs, ok := r.agents[tok]
			if !ok {
				rs = &ruleSet{key: tok}
				r.agents[tok] = rs
			}
			rs.rules = append(rs.rules, g.rules...)
			rs.firstDelay(g)
		}
	}
	r.tm = parseCanonical(groups)
	return r
}

// parseCrawlDelay reads a Crawl-delay value in seconds. RFC 9309 does not define the record (2.2.4
// leaves other records to the crawler); common practice (Bing, Yandex, temoto/robotstxt) reads it as
// a non-negative decimal number of seconds, fractions allowed. A value that is not one (garbage such
// as "soon" or "5s", a hexadecimal float, NaN, a negative number) is ignored like any line that does
// not parse (RFC 9309 2.2: crawlers use the parseable rules), so a later valid value of the group
// counts. A huge value is a request to come rarely, never a reason to ignore it: anything above what a
// time.Duration holds (1e12, 1e400, "inf") saturates at MaxCrawlDelay, and the frontier caps every
// delay at max_delay. Zero and values below a nanosecond mean no delay.
func parseCrawlDelay(v string) (float64, bool) {
	if strings.ContainsAny(v, "xX_") {
		return 0, false // ParseFloat's hexadecimal floats and digit separators are not decimal numbers
	}
	d, err := strconv.ParseFloat(v, 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange): // ErrRange: ±Inf (too large) or 0 (too small)
		return 0, false
	case math.IsNaN(d) || d < 0:
		return 0, false
	case d > float64(maxCrawlDelaySeconds):
		return float64(maxCrawlDelaySeconds), true
	}
	return d, true
}

// parseCanonical renders one canonical group per user-agent key ("*" or a token) carrying the
// Crawl-delay of the merged view (the first one given; 0 when none) and lets temoto parse it. Every
// key is rendered so that temoto's prefix-based FindGroup, asked for an exact key, returns that key's
// group rather than a shorter key that happens to prefix it.
func parseCanonical(groups []*parsedGroup) *robotstxt.RobotsData {
	delays := make(map[string]string)
	var order []string
	anyDelay := false
	add := func(key, d string) {
		prev, seen := delays[key]
		if !seen {
			order = append(order, key)
		}
		if prev == "" && d != "" {
			delays[key] = d
			anyDelay = true
		} else if !seen {
			delays[key] = ""
		}
	}
	for _, g := range groups {
		if g.global {
			add("*", g.crawlDelay)
		}
		for _, tok := range g.tokens {
			add(tok, g.crawlDelay)
		}
	}
	if !anyDelay {
		return nil
	}
	var b strings.Builder
	for _, key := range order {
		d := delays[key]
		if d == "" {
			d = "0"
		}
		b.WriteString("User-agent: ")
		b.WriteString(key)
		b.WriteString("\nCrawl-delay: ")
		b.WriteString(d)
		b.WriteString("\n\n")
	}
	tm, err := robotstxt.FromString(b.String())
	if err != nil {
		// Unreachable for the canonical text built above (validated values only); without temoto's
		// view the file simply has no Crawl-delay.
		return nil
	}
	return tm
}

func isGlobalAgent(v string) bool {
	return len(v) >= 1 && v[0] == '*' && (len(v) == 1 || v[1] == ' ' || v[1] == '\t')
}

// extractAgentToken returns the product token at the start of a user-agent value: [a-zA-Z_-]+.
func extractAgentToken(v string) string {
	i := 0
	for i < len(v) {
		c := v[i]
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_' {
			i++
			continue
		}
		break
	}
	return v[:i]
}

// escapeRobotsPattern percent-encodes bytes >= 0x80 and upper-cases the hex digits of existing
// %xx escapes, as Google's MaybeEscapePattern does.
func escapeRobotsPattern(p string) string {
	need := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]) {
			if isLowerHex(p[i+1]) || isLowerHex(p[i+2]) {
				need = true
			}
			i += 2
		} else if c >= 0x80 {
			need = true
		}
	}
	if !need {
		return p
	}
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(p) + 8)
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]):
			b.WriteByte('%')
			b.WriteByte(upperHex(p[i+1]))
			b.WriteByte(upperHex(p[i+2]))
			i += 2
		case c >= 0x80:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isLowerHex(c byte) bool { return c >= 'a' && c <= 'f' }

func upperHex(c byte) byte {
	if isLowerHex(c) {
		return c - 'a' + 'A'
	}
	return c
}

type robotsKey uint8

const (
	keyUnknown robotsKey = iota
	keyUserAgent
	keyAllow
	keyDisallow
	keySitemap
	keyCrawlDelay
)

// forEachRobotsLine splits body into key/value records the way Google's reference parser does: a
// leading UTF-8 BOM is skipped; lines end at \n, \r or \r\n; lines are cut at maxRobotsLineLen bytes;
// "#" starts a comment; key and value are separated by ":" or, when there is no colon, by
// whitespace followed by a single value token; keys are case-insensitive and common typos accepted.
func forEachRobotsLine(body []byte, fn func(key robotsKey, value string)) {
	body = bytes.TrimPrefix(body, []byte("\xEF\xBB\xBF"))
	for len(body) > 0 {
		end := bytes.IndexAny(body, "\r\n")
		var line []byte
		if end < 0 {
			line, body = body, nil
		} else {
			line = body[:end]
			if body[end] == '\r' && end+1 < len(body) && body[end+1] == '\n' {
				end++
			}
			body = body[end+1:]
		}
		if len(line) > maxRobotsLineLen {
			line = line[:maxRobotsLineLen]
		}
		key, value, ok := splitRobotsLine(line)
		if !ok {
			continue
		}
		if k := classifyRobotsKey(key); k != keyUnknown {
			fn(k, value)
		}
	}
}

func splitRobotsLine(line []byte) (key, value string, ok bool) {
	if i := bytes.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return "", "", false
	}
	sep := bytes.IndexByte(line, ':')
	if sep < 0 {
		sep = bytes.IndexAny(line, " \t")
		if sep < 0 {
			return "", "", false
		}
		val := bytes.TrimLeft(line[sep:], " \t")
		if len(val) == 0 || bytes.ContainsAny(val, " \t") {
			return "", "", false // no value, or more than one value
		}
	}
	k := bytes.TrimSpace(line[:sep])
	if len(k) == 0 {
		return "", "", false
	}
	return string(k), string(bytes.TrimSpace(line[sep+1:])), true
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func classifyRobotsKey(k string) robotsKey {
	switch {
	case hasPrefixFold(k, "user-agent"), hasPrefixFold(k, "useragent"), hasPrefixFold(k, "user agent"):
		return keyUserAgent
	case hasPrefixFold(k, "allow"):
		return keyAllow
	case hasPrefixFold(k, "disallow"), hasPrefixFold(k, "dissallow"), hasPrefixFold(k, "dissalow"),
		hasPrefixFold(k, "disalow"), hasPrefixFold(k, "diasllow"), hasPrefixFold(k, "disallaw"):
		return keyDisallow
	case hasPrefixFold(k, "sitemap"), hasPrefixFold(k, "site-map"):
		return keySitemap
	case strings.EqualFold(k, "crawl-delay"), strings.EqualFold(k, "crawldelay"):
		return keyCrawlDelay
	}
	return keyUnknown
}
