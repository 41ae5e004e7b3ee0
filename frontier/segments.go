package frontier

import (
	"iter"
	"strings"
)

// Learned session segments (issue 27): a session id that is a whole path segment,
// "/(S(id))/page" (ASP.NET cookieless sessions, also "/(X(1)S(id))/page") or
// "/sess/3f9a.../page", with a fresh id on every response, is the same endless trap as
// a session parameter. ParamLearner learns it with the parameter rule (params.go: the
// same evidence, counter-evidence and decision, one function), the segment taking the
// place of the parameter. A rule's name is its position: the path up to the segment
// and "*/", e.g. "/*/" or "/sess/*/"; its hole is the path with that segment's value
// taken out, so its evidence is an exact duplicate whose URL equals an earlier page of
// the cluster but for that one segment.
//
// A segment is harder than a parameter: version directories ("/npm/v10.9.1/" and
// "/npm/v10.9.2/", "/docs/3.11/" and "/docs/3.12/") differ in one segment too, and two
// versions of a page are often exact duplicates. A rule learned there would map every
// version onto one and lose the rest. So a segment rule needs more than a parameter:
//
//   - Shape: only a segment followed by "/" (a directory, never the page itself) whose
//     value looks like a session id is a candidate: ASP.NET's cookieless form, one or
//     more "L(...)" groups in parentheses, or an opaque token as sessionTokenValue
//     reads it (16 to 128 letters and digits, with both). "3.11", "v10.9.1", "latest",
//     "en-us" or a slug are never candidates.
//   - Many values: at least SegMinValues (32) distinct values seen at the position, in
//     the URLs of fetched pages and in the links they offer.
//   - Many pages: SegMinPaths (3) distinct skeletons among the pairs (a parameter
//     needs 2), besides MinPairs pairs and no counter-evidence.
//
// Assumptions and what follows from them. (S) A server that keeps the session in the
// path mints a new id per visit; a crawler keeping no cookies is a new visitor on every
// request, so every page it fetches under such a segment links under a value not seen
// before. (C) A segment that selects content (a version, release, language, product
// line) takes its values from a set the site fixes; a page under it links to its own
// value's pages and perhaps to the same page under the others (a version switcher), so
// every value seen at the position, in fetched URLs and links alike, is one of the set's
// k values. Then:
//
//   - A content segment whose set has fewer than 32 values is never learned, whatever
//     its duplicates and the crawl's order: its position never shows 32 values. That is
//     where version directories live (a documentation site keeps a dozen or two
//     versions), and their names are rarely session-shaped anyway.
//   - A content segment with 32 or more session-shaped values (commit or build ids)
//     is guarded only as a parameter is: by three duplicate pairs on three pages before
//     any two of its values show different text. Such pages usually print their id
//     (breadcrumbs, titles), which makes them near duplicates, and near duplicates are
//     no evidence. This is the rule's residual risk.
//   - In the trap the rule costs requests, and a bounded number: under (S) the
//     position shows one more value per page committed, so the rule is decided when
//     SegMinValues pages have been committed (the evidence pairs come sooner on any
//     site of fewer real pages than that), and a site of fan-out f and R real pages
//     costs at most 1 + f x 32 fetches before its links are rewritten, plus R fetches
//     of the real pages under the rule's value.
//
// Once decided, Canonical sets the segment at the position to the rule's Value (the
// value in its first piece of evidence, one the server issued) rather than dropping it: a
// server that needs the segment ("/sess/<id>/page" without it is not found) still
// serves the canonical URL, and ASP.NET, given an expired id, redirects to a fresh one,
// which canonicalizes back to the URL requested and is fetched as written
// (crawl's redirectToSelf). In a shared crawl two workers that decide the same rule
// independently may keep different values; each value's pages are then fetched once.

// segPos counts the values seen at one segment position of one host.
type segPos struct {
	values map[uint64]struct{} // at most SegMinValues
}

// Bounds on the segment positions counted: a host with an opaque token in many
// prefixes must not grow the learner with each.
const (
	segMaxPerHost = 64
	segMaxTotal   = 1 << 16
)

// sessionSegment reports whether one path segment looks like a session id: ASP.NET's
// cookieless form or an opaque token.
func sessionSegment(seg string) bool {
	return aspNetCookieless(seg) || sessionTokenValue(seg)
}

// aspNetCookieless reports whether seg is ASP.NET's cookieless segment: "(" then one
// or more groups of an upper-case letter and a parenthesized value without
// parentheses, then ")": "(S(id))", "(X(1)S(id))", "(A(x)F(y))".
func aspNetCookieless(seg string) bool {
	if len(seg) < 5 || seg[0] != '(' || seg[len(seg)-1] != ')' {
		return false
	}
	s := seg[1 : len(seg)-1]
	for s != "" {
		if len(s) < 3 || s[0] < 'A' || s[0] > 'Z' || s[1] != '(' {
			return false
		}
		end := strings.IndexByte(s[2:], ')')
		if end < 0 || strings.IndexByte(s[2:2+end], '(') >= 0 {
			return false
		}
		s = s[2+end+1:]
	}
	return true
}

// sessionSegments yields, for each session-shaped segment of path followed by "/",
// the rule name of its position, the path before it (ending in "/"), its value and
// the path after the "/" that follows it.
func sessionSegments(path string) iter.Seq2[string, [3]string] {
	return func(yield func(string, [3]string) bool) {
		for start := 1; start < len(path); {
			if path[start-1] != '/' {
				return
			}
			end := strings.IndexByte(path[start:], '/')
			if end < 0 {
				return
			}
			end += start
			if seg := path[start:end]; sessionSegment(seg) {
				prefix := path[:start]
				if !yield(prefix+"*/", [3]string{prefix, seg, path[end+1:]}) {
					return
				}
			}
			start = end + 1
		}
	}
}

// countSegments adds the values of u's session-shaped segments to their positions;
// it returns a rule that is decided now that its position shows enough values.
// l.mu is held.
func (l *ParamLearner) countSegments(u string) *ParamRule {
	host, path, ok := segHostPath(u)
	if !ok {
		return nil
	}
	var decided *ParamRule
	for name, parts := range sessionSegments(path) {
		key := host + " " + name
		sp := l.segs[key]
		if sp == nil {
			if len(l.segs) >= segMaxTotal || l.segHost[host] >= segMaxPerHost {
				continue
			}
			sp = &segPos{values: map[uint64]struct{}{}}
			l.segs[key] = sp
			l.segHost[host]++
		}
		if len(sp.values) >= l.o.SegMinValues {
			continue
		}
		sp.values[l.hash('s', parts[1])] = struct{}{}
		if len(sp.values) == l.o.SegMinValues {
			if c := l.cands[key]; c != nil {
				if r := l.decide(c); r != nil {
					decided = r
				}
			}
		}
	}
	return decided
}

// segHostPath returns u's host key and path; ok is false for a URL without an authority.
func segHostPath(u string) (host, path string, ok bool) {
	_, authority, ok := canonSplitAuthority(u)
	if !ok {
		return "", "", false
	}
	rest := u[strings.Index(u, "://")+3+len(authority):]
	path, _, _ = strings.Cut(rest, "?")
	return HostKey(u), path, true
}

// setSegments sets the segments of path at the positions of host's decided segment
// rules (among names) to the rules' values. l.mu is held (read).
func (l *ParamLearner) setSegments(host string, names []string, path string) string {
	for _, name := range names {
		if !isSegment(name) {
			continue
		}
		c := l.cands[host+" "+name]
		if c == nil || c.rule.Value == "" {
			continue
		}
		prefix := name[:len(name)-2]
		if !strings.HasPrefix(path, prefix) {
			continue
		}
		end := strings.IndexByte(path[len(prefix):], '/')
		if end < 0 {
			continue
		}
		end += len(prefix)
		if seg := path[len(prefix):end]; seg != c.rule.Value && sessionSegment(seg) {
			path = prefix + c.rule.Value + path[end:]
		}
	}
	return path
}
