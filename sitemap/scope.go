package sitemap

import (
	"net/url"
	"strings"
)

// The protocol's scope (sitemaps.org/protocol.html, "Sitemap file location"
// and "Sitemaps & Cross Submits"): a sitemap may list URLs of its own site
// under its own directory; a sitemap that a site's robots.txt names (wherever
// it is hosted) may list any URL of that site, because the robots.txt proves
// the site's consent. Both rules compare whole sites: scheme, host and port.

// Allowed reports whether loc may be listed by the sitemap at sitemapURL,
// which the robots.txt at robotsURL named (directly or through indexes).
func Allowed(robotsURL, sitemapURL, loc string) bool {
	l, err := url.Parse(loc)
	if err != nil {
		return false
	}
	if r, err := url.Parse(robotsURL); err == nil && sameSite(r, l) {
		return true
	}
	s, err := url.Parse(sitemapURL)
	if err != nil || !sameSite(s, l) {
		return false
	}
	dir := s.EscapedPath()
	dir = dir[:strings.LastIndexByte(dir, '/')+1]
	if dir == "" {
		dir = "/"
	}
	p := l.EscapedPath()
	if p == "" {
		p = "/"
	}
	return strings.HasPrefix(p, dir)
}

// AllowedChild reports whether the sitemap index at indexURL, which the
// robots.txt at robotsURL named, may list the sitemap child: "Sitemap index
// files may only specify Sitemaps that are found on the same site", the
// index's own or the robots.txt's.
func AllowedChild(robotsURL, indexURL, child string) bool {
	c, err := url.Parse(child)
	if err != nil {
		return false
	}
	for _, s := range []string{robotsURL, indexURL} {
		if u, err := url.Parse(s); err == nil && sameSite(u, c) {
			return true
		}
	}
	return false
}

// sameSite compares scheme, host and port (the default port of the scheme
// left out), ignoring case.
func sameSite(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) &&
		port(a) == port(b) && a.Hostname() != ""
}

func port(u *url.URL) string {
	p := u.Port()
	switch {
	case p == "" && strings.EqualFold(u.Scheme, "http"):
		return "80"
	case p == "" && strings.EqualFold(u.Scheme, "https"):
		return "443"
	}
	return p
}
