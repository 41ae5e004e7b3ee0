package frontier

import "strings"

// Session parameters that Canonicalize removes from every URL (issue 16). Names are
// compared case-insensitively: servers spell them JSESSIONID, PHPSESSID, ASPSESSIONIDQSCQRDTA.
//
//   - query parameters jsessionid, phpsessid, aspsessionid* (ASP appends a random
//     suffix to the name), cfid and cftoken (ColdFusion), sessionid and session_id,
//     whatever their values;
//   - the query parameter sid only when its value looks like a session token (see
//     sessionTokenValue): sid also abbreviates "site id", "story id" or "section id",
//     and "?sid=3" may well select a page, so a short or purely numeric sid is kept;
//   - the path parameter ";jsessionid=..." (Java servlet URL rewriting), in any segment.
//
// Parameters outside this list are left alone here; a session parameter with another
// name is learned per host from exact duplicates (ParamLearner).
var sessionQueryNames = []string{"jsessionid", "phpsessid", "cfid", "cftoken", "sessionid", "session_id"}

// sessionQueryName reports whether a query parameter name is always a session id.
func sessionQueryName(name string) bool {
	for _, n := range sessionQueryNames {
		if strings.EqualFold(name, n) {
			return true
		}
	}
	const asp = "aspsessionid"
	return len(name) >= len(asp) && strings.EqualFold(name[:len(asp)], asp)
}

// sessionTokenValue reports whether a sid value looks like a session token rather
// than an identifier someone chose: 16 to 128 ASCII letters and digits with at least
// one of each (hex digests, base-36 or base-62 random strings). Numeric values
// ("sid=20231104123456789") and words ("sid=sports") are kept, whatever their length:
// stripping a meaningful sid would lose every page it selects, while keeping a
// session sid only costs the requests until the learned rule (ParamLearner) takes over.
func sessionTokenValue(v string) bool {
	if len(v) < 16 || len(v) > 128 {
		return false
	}
	digit, letter := false, false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case '0' <= c && c <= '9':
			digit = true
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			letter = true
		default:
			return false
		}
	}
	return digit && letter
}

// sessionQueryParam reports whether one "name=value" query piece is a session parameter.
func sessionQueryParam(piece string) bool {
	name, value, _ := strings.Cut(piece, "=")
	if sessionQueryName(name) {
		return true
	}
	return strings.EqualFold(name, "sid") && sessionTokenValue(value)
}

// stripQuery removes the pieces of a '&'-separated query for which drop returns true.
// A query without such pieces is returned unchanged (empty pieces and all), so the
// result is a fixed point: removing pieces never forms a new one.
func stripQuery(query string, drop func(piece string) bool) string {
	if query == "" {
		return query
	}
	n := 0
	for piece := range strings.SplitSeq(query, "&") {
		if drop(piece) {
			n++
		}
	}
	if n == 0 {
		return query
	}
	var sb strings.Builder
	sb.Grow(len(query))
	first := true
	for piece := range strings.SplitSeq(query, "&") {
		if drop(piece) {
			continue
		}
		if !first {
			sb.WriteByte('&')
		}
		first = false
		sb.WriteString(piece)
	}
	return sb.String()
}

// stripPathParams removes the ";name=value" path parameters (up to the next ';' or
// '/') for whose name drop returns true, in every segment of path.
func stripPathParams(path string, drop func(name string) bool) string {
	if strings.IndexByte(path, ';') < 0 {
		return path
	}
	var sb strings.Builder
	changed := false
	for i := 0; i < len(path); {
		if path[i] != ';' {
			j := strings.IndexAny(path[i:], ";")
			if j < 0 {
				j = len(path) - i
			}
			sb.WriteString(path[i : i+j])
			i += j
			continue
		}
		end := i + 1
		for end < len(path) && path[end] != ';' && path[end] != '/' {
			end++
		}
		name, _, _ := strings.Cut(path[i+1:end], "=")
		if drop(name) {
			changed = true
		} else {
			sb.WriteString(path[i:end])
		}
		i = end
	}
	if !changed {
		return path
	}
	return sb.String()
}

// stripSession removes the session parameters of the list above from a normalized
// path and query.
func stripSession(path, query string) (string, string) {
	path = stripPathParams(path, func(name string) bool { return strings.EqualFold(name, "jsessionid") })
	return path, stripQuery(query, sessionQueryParam)
}
