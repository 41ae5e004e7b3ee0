package parse

import (
	"net/url"
	"strings"
)

// HeaderCanonical returns the absolute URL of the first rel="canonical"
// target of HTTP Link header values (RFC 8288: `<uri>; rel="canonical"`,
// several links comma-separated, rel a space-separated list), resolved
// against base; "" when none, or when the target is not http(s).
func HeaderCanonical(values []string, base *url.URL) string {
	for _, v := range values {
		for v != "" {
			open := strings.IndexByte(v, '<')
			if open < 0 {
				break
			}
			end := strings.IndexByte(v[open:], '>')
			if end < 0 {
				break
			}
			target := v[open+1 : open+end]
			rest := v[open+end+1:]
			params := rest
			if next := strings.IndexByte(rest, '<'); next >= 0 {
				params, rest = rest[:next], rest[next:]
			} else {
				rest = ""
			}
			if relCanonical(params) {
				if u := absoluteHTTP(target, base); u != "" {
					return u
				}
			}
			v = rest
		}
	}
	return ""
}

// relCanonical reports whether a link's parameters (`; rel="a b"; x=y,`)
// name the canonical relation.
func relCanonical(params string) bool {
	for _, p := range strings.Split(params, ";") {
		name, val, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "rel") {
			continue
		}
		val = strings.Trim(strings.TrimSpace(strings.TrimRight(strings.TrimSpace(val), ",")), `"`)
		for _, r := range strings.Fields(val) {
			if strings.EqualFold(r, "canonical") {
				return true
			}
		}
	}
	return false
}

func absoluteHTTP(target string, base *url.URL) string {
	u, err := url.Parse(strings.TrimSpace(target))
	if err != nil {
		return ""
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return ""
	}
	u.Fragment = ""
	return u.String()
}
