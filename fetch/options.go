// Package fetch retrieves web pages over HTTP(S) and interprets robots.txt.
//
// Fetching goes through a gocolly/colly v2 Collector (one shared HTTP backend, a per-call clone of
// the collector carrying the call's context and callbacks, so concurrent Fetch calls never mix
// results). Around colly, fetch bounds every request (whole-request timeout, body cap applied after
// Content-Encoding decoding so gzip bombs stay bounded, redirect limit, http/https only), records
// what WARC writers need (request headers as sent, protocol, remote IP, redirect chain) and converts
// HTML bodies to UTF-8 while keeping the raw bytes.
//
// Robots handling is split in two: ParseRobots and Robots are pure (status and bytes in, decisions
// out) and follow RFC 9309 and Google's reference matcher; RobotsCache is the thin I/O layer that
// fetches /robots.txt once per scheme+host, caches it and persists it through a RobotsStore.
package fetch

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Defaults applied by DefaultOptions.
const (
	DefaultUserAgent    = "Horseshoe/0.1 (+https://github.com/horseshoe-crawler/horseshoe)"
	DefaultRobotsAgent  = "horseshoe"
	DefaultTimeout      = 30 * time.Second
	DefaultMaxBodySize  = 10 << 20
	DefaultMaxRedirects = 10
)

// Options configures a Fetcher.
type Options struct {
	UserAgent   string        // sent as User-Agent; default DefaultUserAgent
	RobotsAgent string        // product token matched against robots.txt user-agent lines; default "horseshoe"
	Timeout     time.Duration // whole request including body (also bounds slow-drip servers); default 30s
	// MaxBodySize caps the body read, counted after Content-Encoding decoding (gzip bombs are
	// bounded). A larger body yields Result.Truncated, the first MaxBodySize bytes in the Result, and
	// an *Error of class "too_large" returned together with that Result. Default 10 MiB.
	MaxBodySize  int64
	MaxRedirects int // redirects followed; loops and longer chains give an *Error "redirect"; default 10
	// NoFollowRedirects returns a 3xx response as the Result instead of following it. A crawler
	// that queues the Location as a link of its own (as Heritrix does) uses it, so every URL passes
	// its seen-set, scope and politeness once and no URL is requested twice.
	NoFollowRedirects bool
	// DenyPrivate checks every address against Policy, after name resolution and before connecting
	// (so a name resolving to a refused address is caught, DNS rebinding included): refused are
	// private, link-local and cloud metadata addresses except those Policy allows. A refusal is an
	// *Error of class "private" (errors.Is ErrPrivateAddress).
	DenyPrivate bool
	Policy      AddrPolicy // what DenyPrivate lets through besides public addresses
	// Resolver resolves host names for the built-in transport; default net.DefaultResolver.
	Resolver Resolver
	// Proxy routes requests (robots.txt included) through proxies; the zero value connects
	// directly. See ProxyConfig and ProxySettings. Not used with an injected Transport.
	Proxy ProxyConfig
	// Transport replaces the built-in transport (see NewTransport). With DenyPrivate, an injected
	// transport cannot be checked at dial time; fetch then still refuses the response when the
	// connection's remote IP (seen through httptrace) is private, but the request has been sent.
	Transport http.RoundTripper
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{
		UserAgent:    DefaultUserAgent,
		RobotsAgent:  DefaultRobotsAgent,
		Timeout:      DefaultTimeout,
		MaxBodySize:  DefaultMaxBodySize,
		MaxRedirects: DefaultMaxRedirects,
	}
}

// withDefaults fills zero fields with the defaults.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.UserAgent == "" {
		o.UserAgent = d.UserAgent
	}
	if o.RobotsAgent == "" {
		o.RobotsAgent = d.RobotsAgent
	}
	if o.Timeout == 0 {
		o.Timeout = d.Timeout
	}
	if o.MaxBodySize == 0 {
		o.MaxBodySize = d.MaxBodySize
	}
	if o.MaxRedirects == 0 {
		o.MaxRedirects = d.MaxRedirects
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	return o
}

// maxBodyLimit keeps MaxBodySize+1 representable as colly's int body limit.
const maxBodyLimit = 1 << 40

// Validate reports every invalid field at once. Zero values are valid (New fills in defaults).
func (o Options) Validate() error {
	var errs []error
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %v: must not be negative", o.Timeout))
	}
	if o.MaxBodySize < 0 || o.MaxBodySize > maxBodyLimit {
		errs = append(errs, fmt.Errorf("max body size %d: must be in [0, %d]", o.MaxBodySize, int64(maxBodyLimit)))
	}
	if o.MaxRedirects < 0 {
		errs = append(errs, fmt.Errorf("max redirects %d: must not be negative", o.MaxRedirects))
	}
	for _, c := range o.UserAgent {
		if c < 0x20 || c == 0x7f {
			errs = append(errs, fmt.Errorf("user agent %q: control characters not allowed", o.UserAgent))
			break
		}
	}
	for _, c := range o.RobotsAgent {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_') {
			errs = append(errs, fmt.Errorf("robots agent %q: must be a product token [a-zA-Z_-]+ (RFC 9309)", o.RobotsAgent))
			break
		}
	}
	for _, p := range o.Policy.Allow {
		if !p.IsValid() {
			errs = append(errs, fmt.Errorf("policy: allowed prefix %v is not valid", p))
		}
	}
	for _, p := range []*url.URL{o.Proxy.HTTP, o.Proxy.HTTPS} {
		if p == nil {
			continue
		}
		if _, err := ParseProxyURL(p.String()); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fetch options: %w", err)
	}
	return nil
}
