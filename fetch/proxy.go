package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// ProxyConfig routes requests through proxies. The zero value connects directly.
//
// A proxy is an http, https, socks5 or socks5h URL, with credentials in its user info when the
// proxy wants them (Basic for http and https proxies, username/password for SOCKS5). socks5 and
// socks5h both let the proxy resolve the origin's name.
//
// With Options.DenyPrivate, the origin's name is resolved (with Options.Resolver) and every
// address it resolves to is checked against the policy before the request is handed to the
// proxy: a name with any refused address is refused, as the proxy may connect to any of them.
// The proxy itself is connected to whatever its address: it is named by the user.
type ProxyConfig struct {
	HTTP  *url.URL // proxy for http URLs; nil: direct
	HTTPS *url.URL // proxy for https URLs; nil: direct
	// NoProxy lists the hosts reached directly, in the syntax of the NO_PROXY variable: a comma-
	// separated list of host names (each also matching its subdomains; a leading "." or "*." is
	// dropped; a name never matches an IP address), IP addresses, CIDR prefixes (one that does
	// not parse is an error of ProxySettings), any of them with ":port" to match that port only,
	// or "*" for every host. Loopback is not exempt unless listed (as with curl and wget; Go's
	// own default exempts it).
	NoProxy string
}

// ErrProxy marks a failure of the proxy itself: it could not be reached, refused our
// credentials (407), refused the CONNECT tunnel, or its SOCKS handshake failed. The *Error
// then has class "proxy".
var ErrProxy = errors.New("proxy failure")

// ProxyError is a failure of the proxy named (credentials removed). It unwraps to ErrProxy and
// to its cause.
type ProxyError struct {
	Proxy string // the proxy URL, credentials removed
	Err   error
}

func (e *ProxyError) Error() string { return "through proxy " + e.Proxy + ": " + e.Err.Error() }

func (e *ProxyError) Unwrap() []error { return []error{ErrProxy, e.Err} }

// ProxySettings returns the proxy configuration of option (the fetch.proxy setting) and the
// environment read through getenv (os.Getenv):
//   - option "": HTTP_PROXY for http URLs, HTTPS_PROXY for https URLs (upper case first, then
//     lower case, as Go reads them), NO_PROXY for the exceptions;
//   - option "direct": no proxy, whatever the environment says;
//   - any other option: that proxy for http and https URLs, overriding HTTP_PROXY and
//     HTTPS_PROXY; NO_PROXY still applies (as with curl's --proxy).
//
// A proxy given without a scheme ("proxy.example:3128") is an http proxy.
func ProxySettings(option string, getenv func(string) string) (ProxyConfig, error) {
	env := func(names ...string) string {
		for _, n := range names {
			if v := strings.TrimSpace(getenv(n)); v != "" {
				return v
			}
		}
		return ""
	}
	var c ProxyConfig
	option = strings.TrimSpace(option)
	if option == "direct" {
		return c, nil
	}
	c.NoProxy = env("NO_PROXY", "no_proxy")
	if err := checkNoProxy(c.NoProxy); err != nil {
		return c, fmt.Errorf("NO_PROXY: %w", err)
	}
	httpP, httpsP := option, option
	what := "fetch.proxy"
	if option == "" {
		httpP, httpsP = env("HTTP_PROXY", "http_proxy"), env("HTTPS_PROXY", "https_proxy")
		what = "HTTP_PROXY"
	}
	var err error
	if c.HTTP, err = ParseProxyURL(httpP); err != nil {
		return c, fmt.Errorf("%s: %w", what, err)
	}
	if option == "" {
		what = "HTTPS_PROXY"
	}
	if c.HTTPS, err = ParseProxyURL(httpsP); err != nil {
		return c, fmt.Errorf("%s: %w", what, err)
	}
	return c, nil
}

// ParseProxyURL parses a proxy URL ("" gives nil): scheme http (the default when none is
// given), https, socks5 or socks5h, a host, an optional port and user info, no path.
func ParseProxyURL(s string) (*url.URL, error) {
	if s == "" {
		return nil, nil
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which may hold a password
		}
		return nil, fmt.Errorf("proxy URL: %w", err)
	}
	switch u.Scheme {
	case "http", "https", "socks5", "socks5h":
	default:
		return nil, fmt.Errorf("proxy %s: scheme %q is not http, https, socks5 or socks5h", u.Redacted(), u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("proxy %s: no host", u.Redacted())
	}
	if p := u.Port(); p != "" {
		if _, err := netip.ParseAddrPort("0.0.0.0:" + p); err != nil {
			return nil, fmt.Errorf("proxy %s: port %q", u.Redacted(), p)
		}
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("proxy %s: a proxy URL has no path, query or fragment", u.Redacted())
	}
	u.Path = ""
	return u, nil
}

// enabled reports whether any request may go through a proxy.
func (c *ProxyConfig) enabled() bool { return c.HTTP != nil || c.HTTPS != nil }

// For returns the proxy that carries a request for u, nil for a direct connection.
func (c *ProxyConfig) For(u *url.URL) *url.URL {
	var p *url.URL
	switch u.Scheme {
	case "http":
		p = c.HTTP
	case "https":
		p = c.HTTPS
	}
	if p == nil || noProxy(c.NoProxy, u) {
		return nil
	}
	return p
}

// checkNoProxy reports the entries of list (NO_PROXY syntax) that look like a CIDR prefix (they
// hold a '/') but do not parse as one, such as "127.0.0.0/33": noProxy would match nothing with
// them, and a host the user meant to reach directly would go through the proxy.
func checkNoProxy(list string) error {
	var errs []error
	for e := range strings.SplitSeq(list, ",") {
		e = strings.TrimSpace(e)
		if !strings.Contains(e, "/") {
			continue
		}
		if _, err := netip.ParsePrefix(e); err != nil {
			errs = append(errs, fmt.Errorf("%q is not a CIDR prefix (address/bits): %w", e, err))
		}
	}
	return errors.Join(errs...)
}

// noProxy reports whether list (NO_PROXY syntax, see ProxyConfig.NoProxy) names u's host.
func noProxy(list string, u *url.URL) bool {
	host := normalHost(u.Hostname())
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	addr, addrErr := netip.ParseAddr(host)
	for e := range strings.SplitSeq(list, ",") {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		if e == "*" {
			return true
		}
		if pr, err := netip.ParsePrefix(e); err == nil {
			if addrErr == nil && pr.Contains(normalAddr(addr)) {
				return true
			}
			continue
		}
		ehost, eport := e, ""
		if h, p, err := net.SplitHostPort(e); err == nil {
			ehost, eport = h, p
		}
		if eport != "" && eport != port {
			continue
		}
		ehost = normalHost(ehost)
		if a, err := netip.ParseAddr(ehost); err == nil {
			if addrErr == nil && normalAddr(a) == normalAddr(addr) {
				return true
			}
			continue
		}
		if addrErr == nil {
			continue // a host name or domain suffix never matches an IP literal ("0.0.78" and 127.0.0.78)
		}
		ehost = strings.TrimPrefix(strings.TrimPrefix(ehost, "*"), ".")
		if ehost != "" && (host == ehost || strings.HasSuffix(host, "."+ehost)) {
			return true
		}
	}
	return false
}

// proxyAddr is the host:port a proxy URL is connected to (the default ports of net/http).
func proxyAddr(p *url.URL) string {
	port := p.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443", "socks5": "1080", "socks5h": "1080"}[p.Scheme]
	}
	return net.JoinHostPort(p.Hostname(), port)
}

// proxyChooser is the Proxy function of the built-in transport: it picks the proxy, checks the
// origin's addresses against the policy before the request is handed to the proxy, and notes the
// proxy in the request state.
type proxyChooser struct {
	cfg      ProxyConfig
	policy   *AddrPolicy // nil: no check
	resolver Resolver
}

func (c *proxyChooser) proxy(req *http.Request) (*url.URL, error) {
	p := c.cfg.For(req.URL)
	if p == nil {
		return nil, nil
	}
	if c.policy != nil {
		if err := c.checkOrigin(req.Context(), req.URL.Hostname()); err != nil {
			return nil, err
		}
	}
	if st := stateFrom(req.Context()); st != nil {
		st.mu.Lock()
		st.proxy = p
		st.mu.Unlock()
	}
	return p, nil
}

// checkOrigin resolves host and refuses it when the policy refuses any of its addresses: the
// proxy connects to an address of its own choosing.
func (c *proxyChooser) checkOrigin(ctx context.Context, host string) error {
	refuse := func(err error) error {
		return fmt.Errorf("refused by the address policy before asking the proxy: %w", err)
	}
	if c.policy.hostAllowed(host) {
		return nil
	}
	if err := c.policy.CheckHost(host); err != nil {
		return refuse(err)
	}
	if _, err := netip.ParseAddr(normalHost(host)); err == nil {
		return nil // a literal CheckHost allowed
	}
	addrs, err := c.resolver.LookupIPAddr(ctx, host)
	if err != nil {
		return err
	}
	if len(addrs) == 0 {
		return &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	for _, ia := range addrs {
		a, ok := netip.AddrFromSlice(ia.IP)
		if !ok {
			continue
		}
		if err := c.policy.CheckAddr(a.Unmap()); err != nil {
			if pe, ok := err.(*PolicyError); ok {
				pe.Host = host
			}
			return refuse(err)
		}
	}
	return nil
}

// onConnectResponse makes a refused CONNECT a *ProxyError that says what the proxy answered.
func onConnectResponse(_ context.Context, p *url.URL, req *http.Request, resp *http.Response) error {
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	return &ProxyError{Proxy: p.Redacted(), Err: fmt.Errorf("CONNECT %s answered %q%s", req.Host, resp.Status, authHint(resp.StatusCode))}
}

func authHint(status int) string {
	if status == http.StatusProxyAuthRequired || status == http.StatusUnauthorized {
		return ": the proxy wants credentials (the proxy URL gives none, or not the right ones)"
	}
	return ""
}

// proxyFailure makes err a *ProxyError when it is the proxy's failure: a request that went to a
// proxy and failed before a connection to the origin was had (reaching the proxy, its SOCKS
// handshake or CONNECT tunnel), except a TLS failure of the origin itself.
func proxyFailure(p *url.URL, connected bool, err error) error {
	var pe *ProxyError
	if errors.As(err, &pe) {
		return err
	}
	var oe *net.OpError
	stage := errors.As(err, &oe) && (oe.Op == "proxyconnect" || strings.HasPrefix(oe.Op, "socks"))
	if !stage && (connected || isTLSError(err) || errors.Is(err, context.Canceled)) {
		return err
	}
	return &ProxyError{Proxy: p.Redacted(), Err: err}
}
