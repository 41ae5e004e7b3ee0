package frontier

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/net/publicsuffix"
)

// ErrTrap is wrapped by every error CheckTrap returns; the more specific sentinels below
// wrap it too, so errors.Is(err, ErrTrap) holds for all of them.
var (
	ErrTrap            = errors.New("crawler trap")
	ErrTrapLength      = fmt.Errorf("%w: URL too long", ErrTrap)
	ErrTrapDepth       = fmt.Errorf("%w: path too deep", ErrTrap)
	ErrTrapRepetition  = fmt.Errorf("%w: repeated path segment", ErrTrap)
	ErrTrapQueryParams = fmt.Errorf("%w: too many query parameters", ErrTrap)
	// ErrScope reports invalid ScopeOptions or seeds given to NewScope.
	ErrScope = errors.New("invalid scope")
)

// TrapOptions bounds the shape of URLs the frontier accepts. A field <= 0 takes its
// default from DefaultTrapOptions.
type TrapOptions struct {
	MaxURLLength       int // default 2048 bytes
	MaxPathDepth       int // default 16 path segments
	MaxRepeatedSegment int // default 3: a path segment occurring more often is a trap (/a/b/a/b/a/b/a)
	MaxQueryParams     int // default 32 '&'-separated parameters
}

// DefaultTrapOptions returns the default trap limits.
func DefaultTrapOptions() TrapOptions {
	return TrapOptions{
		MaxURLLength:       2048,
		MaxPathDepth:       16,
		MaxRepeatedSegment: 3,
		MaxQueryParams:     32,
	}
}

// withDefaults replaces every non-positive limit by its default.
func (o TrapOptions) withDefaults() TrapOptions {
	d := DefaultTrapOptions()
	if o.MaxURLLength <= 0 {
		o.MaxURLLength = d.MaxURLLength
	}
	if o.MaxPathDepth <= 0 {
		o.MaxPathDepth = d.MaxPathDepth
	}
	if o.MaxRepeatedSegment <= 0 {
		o.MaxRepeatedSegment = d.MaxRepeatedSegment
	}
	if o.MaxQueryParams <= 0 {
		o.MaxQueryParams = d.MaxQueryParams
	}
	return o
}

// CheckTrap returns nil, or an error describing why the canonical URL looks like a crawler
// trap (it wraps ErrTrap and one of ErrTrapLength, ErrTrapDepth, ErrTrapRepetition,
// ErrTrapQueryParams). Path segments are counted between '/' separators; a trailing '/'
// does not add a segment, but empty segments from repeated slashes ("/a//b") do, both for
// depth and for repetition. CheckTrap does not allocate when the URL passes.
func CheckTrap(canonical string, o TrapOptions) error {
	o = o.withDefaults()
	if len(canonical) > o.MaxURLLength {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTrapLength, len(canonical), o.MaxURLLength)
	}
	path, query := scopePathQuery(canonical)

	depth := scopePathDepth(path)
	if depth > o.MaxPathDepth {
		return fmt.Errorf("%w: %d segments, limit %d", ErrTrapDepth, depth, o.MaxPathDepth)
	}
	if seg, n := scopeMostRepeated(path); n > o.MaxRepeatedSegment {
		return fmt.Errorf("%w: segment %q occurs %d times, limit %d", ErrTrapRepetition, seg, n, o.MaxRepeatedSegment)
	}
	if n := scopeQueryParams(query); n > o.MaxQueryParams {
		return fmt.Errorf("%w: %d parameters, limit %d", ErrTrapQueryParams, n, o.MaxQueryParams)
	}
	return nil
}

// scopePathQuery returns the path (starting with '/', or "") and the query (without '?')
// of a "scheme://authority/path?query#fragment" URL.
func scopePathQuery(u string) (path, query string) {
	rest := u
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
		j := strings.IndexAny(rest, "/?#")
		if j < 0 {
			return "", ""
		}
		rest = rest[j:]
	}
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		return rest[:i], rest[i+1:]
	}
	return rest, ""
}

// scopeNextSegment splits the first segment off path (which starts after a '/').
func scopeNextSegment(path string) (seg, rest string, more bool) {
	if i := strings.IndexByte(path, '/'); i >= 0 {
		return path[:i], path[i+1:], true
	}
	return path, "", false
}

// scopeSegments calls yield for every segment of path, ignoring one trailing empty segment.
func scopeSegments(path string, yield func(seg string) bool) {
	if !strings.HasPrefix(path, "/") {
		return
	}
	rest := path[1:]
	for rest != "" {
		seg, r, more := scopeNextSegment(rest)
		if !yield(seg) {
			return
		}
		rest = r
		if !more {
			return
		}
	}
}

func scopePathDepth(path string) int {
	n := 0
	scopeSegments(path, func(string) bool { n++; return true })
	return n
}

// scopeMostRepeated returns the segment of path that occurs most often and its count.
// The path is short (bounded by the depth check), so a quadratic scan beats a map: for
// each position it counts the occurrences from there on, which for a segment's first
// occurrence is its total.
func scopeMostRepeated(path string) (string, int) {
	if !strings.HasPrefix(path, "/") {
		return "", 0
	}
	best, bestN := "", 0
	for rest := path[1:]; rest != ""; {
		seg, r, more := scopeNextSegment(rest)
		n := 1
		for tail, tmore := r, more; tail != "" || tmore; {
			var other string
			other, tail, tmore = scopeNextSegment(tail)
			if tail == "" && !tmore && other == "" {
				break // trailing slash
			}
			if other == seg {
				n++
			}
			if !tmore {
				break
			}
		}
		if n > bestN {
			best, bestN = seg, n
		}
		if !more {
			break
		}
		rest = r
	}
	return best, bestN
}

// scopeQueryParams counts the non-empty '&'-separated parameters of query.
func scopeQueryParams(query string) int {
	n := 0
	for query != "" {
		i := strings.IndexByte(query, '&')
		if i < 0 {
			return n + 1
		}
		if i > 0 {
			n++
		}
		query = query[i+1:]
	}
	return n
}

// ScopeMode selects how a URL must relate to the seeds to be in scope.
type ScopeMode string

// Scope modes.
const (
	// ScopeHost (the default) admits URLs whose host name equals a seed's (any scheme or port).
	ScopeHost ScopeMode = "host"
	// ScopeDomain admits URLs whose registrable domain (eTLD+1, by the public suffix list)
	// equals a seed's; IP hosts must equal a seed's IP.
	ScopeDomain ScopeMode = "domain"
	// ScopePrefix admits URLs that start with a seed's directory prefix: the seed up to and
	// including the last '/' of its path (scheme, host and port must therefore match).
	ScopePrefix ScopeMode = "prefix"
	// ScopeAny admits every URL allowed by the Allow and Deny lists.
	ScopeAny ScopeMode = "any"
)

// ScopeOptions configures a Scope.
type ScopeOptions struct {
	Mode  ScopeMode // "" means ScopeHost
	Allow []string  // regexps (RE2 syntax, unanchored); if non-empty a URL must match at least one
	Deny  []string  // regexps; a URL matching any is out
}

// Scope decides whether canonical URLs belong to the crawl. Only Widen (seeds added while
// the crawl runs) changes it; it is safe for concurrent use.
type Scope struct {
	mode  ScopeMode
	allow []*regexp.Regexp
	deny  []*regexp.Regexp
	seeds atomic.Pointer[seedSet] // replaced whole by Widen
	widen sync.Mutex              // serializes Widen (InScope never waits)
}

// seedSet is what the seeds admit; it is never changed once published.
type seedSet struct {
	hosts    map[string]struct{} // ScopeHost: seed host names; ScopeDomain: registrable domains or IPs
	prefixes []string            // ScopePrefix
}

// NewScope compiles o for the given seeds (canonical URLs; they are canonicalized again,
// which is a no-op for canonical input). The error lists every bad regexp and seed.
func NewScope(o ScopeOptions, seeds []string) (*Scope, error) {
	s := &Scope{mode: o.Mode}
	if s.mode == "" {
		s.mode = ScopeHost
	}
	errs := o.problems()
	switch s.mode {
	case ScopeHost, ScopeDomain, ScopePrefix:
		if len(seeds) == 0 {
			errs = append(errs, fmt.Errorf("mode %q needs at least one seed", s.mode))
		}
	}
	s.allow = scopeCompile(o.Allow)
	s.deny = scopeCompile(o.Deny)
	set, serrs := s.withSeeds(&seedSet{hosts: map[string]struct{}{}}, seeds)
	errs = append(errs, serrs...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrScope, errors.Join(errs...))
	}
	s.seeds.Store(set)
	return s, nil
}

// withSeeds returns a copy of old that also admits what seeds do, and the
// seeds that are not URLs.
func (s *Scope) withSeeds(old *seedSet, seeds []string) (*seedSet, []error) {
	set := &seedSet{hosts: make(map[string]struct{}, len(old.hosts)+len(seeds)),
		prefixes: append([]string(nil), old.prefixes...)}
	for h := range old.hosts {
		set.hosts[h] = struct{}{}
	}
	var errs []error
	for i, seed := range seeds {
		c, err := Canonicalize(seed, nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("seed %d: %w", i, err))
			continue
		}
		switch s.mode {
		case ScopeHost:
			set.hosts[scopeHostname(c)] = struct{}{}
		case ScopeDomain:
			set.hosts[scopeDomain(scopeHostname(c))] = struct{}{}
		case ScopePrefix:
			set.prefixes = append(set.prefixes, scopePrefix(c))
		}
	}
	return set, errs
}

func scopeCompile(exprs []string) []*regexp.Regexp {
	res := make([]*regexp.Regexp, 0, len(exprs))
	for _, e := range exprs {
		if re, err := regexp.Compile(e); err == nil { // problems reports the others
			res = append(res, re)
		}
	}
	return res
}

// InScope reports whether canonical URL u is in scope: no Deny regexp matches it, it
// satisfies the mode (host: u's host name equals a seed's; domain: same registrable domain
// or IP; prefix: u starts with a seed's directory prefix; any: always), and, when Allow is
// non-empty, at least one Allow regexp matches it.
func (s *Scope) InScope(u string) bool {
	return !s.denied(u) && s.modeAdmits(u) && s.allowed(u)
}

// denied reports whether a Deny regexp matches u.
func (s *Scope) denied(u string) bool {
	for _, re := range s.deny {
		if re.MatchString(u) {
			return true
		}
	}
	return false
}

// allowed reports whether Allow is empty or one of its regexps matches u.
func (s *Scope) allowed(u string) bool {
	if len(s.allow) == 0 {
		return true
	}
	for _, re := range s.allow {
		if re.MatchString(u) {
			return true
		}
	}
	return false
}

func (s *Scope) modeAdmits(u string) bool {
	set := s.seeds.Load()
	switch s.mode {
	case ScopeAny:
		_, _, ok := canonSplitAuthority(u)
		return ok
	case ScopePrefix:
		for _, p := range set.prefixes {
			if strings.HasPrefix(u, p) {
				return true
			}
		}
		return false
	case ScopeDomain:
		h := scopeHostname(u)
		if h == "" {
			return false
		}
		_, ok := set.hosts[scopeDomain(h)]
		return ok
	default:
		h := scopeHostname(u)
		if h == "" {
			return false
		}
		_, ok := set.hosts[h]
		return ok
	}
}

// scopeHostname returns the lower-case host name of u without port or trailing dot
// ("" when u has no authority). IPv6 literals keep their brackets.
func scopeHostname(u string) string {
	_, authority, ok := canonSplitAuthority(u)
	if !ok {
		return ""
	}
	host, _ := canonSplitHostPort(authority)
	return canonLower(strings.TrimSuffix(host, "."))
}

// scopeDomain maps a host name to its registrable domain (eTLD+1). IP hosts map to
// themselves, as do hosts without one (localhost, a bare public suffix).
func scopeDomain(host string) string {
	// WHATWG parsing turns every host whose last label is a number into an IPv4
	// address, so a canonical host ending in a digit is an IP literal.
	if strings.HasPrefix(host, "[") || host[len(host)-1] >= '0' && host[len(host)-1] <= '9' {
		return host
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		return host
	}
	return d
}

// scopePrefix returns canonical seed c up to and including the last '/' of its path
// (a canonical URL always has a path starting with '/' and never a fragment).
func scopePrefix(c string) string {
	if i := strings.IndexByte(c, '?'); i >= 0 {
		c = c[:i]
	}
	return c[:strings.LastIndexByte(c, '/')+1]
}
