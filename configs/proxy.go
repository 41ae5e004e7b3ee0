package configs

import "net/url"

// ProxyURL is the fetch.proxy setting: the URL of the proxy for http and https requests
// (http, https, socks5 or socks5h, credentials allowed), "direct" for no proxy whatever the
// environment says, "" for the proxy of HTTP_PROXY and HTTPS_PROXY. fetch.ProxySettings checks
// it. Its password is never written out: the config stored with a crawl (and so the WARC's
// warcinfo record) shows it as "xxxxx".
type ProxyURL string

// MarshalYAML writes the URL without its password.
func (p ProxyURL) MarshalYAML() (any, error) { return p.Redacted(), nil }

// Redacted is the URL with its password replaced by "xxxxx"; a value that does not parse as a
// URL is replaced whole, as it may hold a password.
func (p ProxyURL) Redacted() string {
	if p == "" || p == "direct" {
		return string(p)
	}
	u, err := url.Parse(string(p))
	if err != nil {
		return "(not a URL, hidden)"
	}
	if u.User == nil && u.Opaque != "" {
		return "(not a URL, hidden)" // "user:pass@host:port" without a scheme parses as opaque
	}
	return u.Redacted()
}
