package sitemap

import (
	"net/url"
	"strings"
)

// The protocol's scope (sitemaps.org/protocol.html, "Sitemap file location"
// and "Sitemaps & Cross Submits"): a sitemap may list URLs of its own site
// (scheme, host and port) under its own directory; a sitemap that a host's
// robots.txt names (wherever it is hosted) may list any URL of that host,
// because the robots.txt proves the host's consent. The host is taken with
// either scheme on their default ports: a site that moved from http to
// https often still names https sitemaps in a robots.txt fetched over http.

// Allowed reports whether loc may be listed by the sitemap at sitemapURL,
// which the robots.txt at robotsURL named (directly or through indexes).
func Allowed(robotsURL, sitemapURL, loc string) bool {
	l, err := url.Parse(loc)
	if err != nil {
		return false
	}
	if r, err := url.Parse(robotsURL); err == nil && sameHost(r, l) {
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
	if r, err := url.Parse(robotsURL); err == nil && sameHost(r, c) {
		return true
	}
	i, err := url.Parse(indexURL)
	return err == nil && sameSite(i, c)
}

// sameSite compares scheme, host and port (the default port of the scheme
// left out), ignoring case.
func sameSite(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) &&
		port(a) == port(b) && a.Hostname() != ""
}

// sameHost compares host names, and ports unless both are their scheme's
// default (http://h and https://h are one host).
func sameHost(a, b *url.URL) bool {
	return strings.EqualFold(a.Hostname(), b.Hostname()) && a.Hostname() != "" &&
		(port(a) == port(b) || a.Port() == "" && b.Port() == "")
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
