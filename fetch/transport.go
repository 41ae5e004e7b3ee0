package fetch

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"
)

// NewTransport returns the transport New uses when Options.Transport is nil: o.Proxy, dial,
// TLS-handshake and response-header timeouts derived from o.Timeout, bounded idle pools, HTTP/2
// attempted, transparent decompression off (fetch decodes Content-Encoding itself, bounded), and,
// with o.DenyPrivate, every address checked against o.Policy after name resolution (through
// o.Resolver) and before connecting.
func NewTransport(o Options) *http.Transport {
	o = o.withDefaults()
	dialTimeout := min(o.Timeout, 10*time.Second)
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	pd := &policyDialer{resolver: o.Resolver, dial: d.DialContext}
	if o.DenyPrivate {
		pd.policy = &o.Policy
	}
	t := &http.Transport{
		DialContext:            pd.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    dialTimeout,
		ResponseHeaderTimeout:  o.Timeout,
		ExpectContinueTimeout:  time.Second,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
		DisableCompression:     true,
	}
	if o.Proxy.enabled() {
		pc := &proxyChooser{cfg: o.Proxy, policy: pd.policy, resolver: o.Resolver}
		t.Proxy = pc.proxy
		t.OnProxyConnectResponse = onConnectResponse
		for _, p := range []*url.URL{o.Proxy.HTTP, o.Proxy.HTTPS} {
			if p != nil {
				pd.proxies = append(pd.proxies, proxyAddr(p))
			}
		}
	}
	return t
}

var nonPublicPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
}

// IsPublicAddr reports whether a is a globally routable unicast address: not loopback, private
// (RFC 1918, fc00::/7), link-local (169.254.0.0/16 including the 169.254.169.254 metadata service,
// fe80::/10), unspecified, multicast, CGNAT, documentation or reserved. IPv4-mapped and NAT64
// (64:ff9b::/96) addresses are judged by the embedded IPv4 address.
func IsPublicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if a.Is6() && netip.MustParsePrefix("64:ff9b::/96").Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range nonPublicPrefixes {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// reqState is the per-Fetch state carried in the request context, so that colly's shared HTTP
// client, redirect handler and our transport wrapper can attribute everything to the right call.
type reqState struct {
	maxRedirects int
	noFollow     bool
	revisit      bool        // a redirect back to a URL of the chain is followed, within maxRedirects
	policy       *AddrPolicy // checked on the remote IP of injected transports; nil: not checked

	mu         sync.Mutex
	redirects  []string     // URLs that answered with a redirect, in order
	reqHeader  http.Header  // headers of the last request sent
	proto      string       // protocol of the last response
	remoteIP   string       // remote IP of the last connection used
	connected  bool         // a connection was had (GotConn) for the last request
	proxy      *url.URL     // the proxy of the last request; nil: direct
	body       *captureBody // body of the last response
	redirErr   error        // error raised by the redirect policy
	lastStatus int

	fence  Fence                   // asked before each request is written; nil: none
	stop   context.CancelCauseFunc // cancels the fetch when fence fails
	fenced error                   // fence's error: nothing was written

	// partial (FetchSitemap only) keeps what a body that ends early needs,
	// the headers and URL of the last response (under mu; nil until it
	// arrives), and reads the body, at most partialMax bytes, into the
	// capture alone (not also into colly's copy).
	partial       bool
	partialMax    int64
	partialHeader http.Header
	partialURL    *url.URL
}

type stateKey struct{}

func stateFrom(ctx context.Context) *reqState {
	st, _ := ctx.Value(stateKey{}).(*reqState)
	return st
}

func (st *reqState) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if info.Conn == nil {
				return
			}
			ip := ""
			if ap, err := netip.ParseAddrPort(info.Conn.RemoteAddr().String()); err == nil {
				ip = ap.Addr().Unmap().String()
			}
			st.mu.Lock()
			st.remoteIP = ip
			st.connected = true
			st.mu.Unlock()
		},
	}
}

// checkRedirect is installed as colly's redirect handler: it enforces the per-request limit,
// http/https only, and rejects loops unless the call follows them (revisit); it records the chain.
func checkRedirect(req *http.Request, via []*http.Request) error {
	st := stateFrom(req.Context())
	if st == nil {
		return nil
	}
	if st.noFollow {
		return http.ErrUseLastResponse
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.redirects = st.redirects[:0]
	dropValidators(req.Header) // they name the first URL's version, not the target's
	for _, v := range via {
		st.redirects = append(st.redirects, v.URL.String())
	}
	var err error
	switch {
	case req.URL.Scheme != "http" && req.URL.Scheme != "https":
		err = fmt.Errorf("redirect to %q: %w", req.URL.Redacted(), ErrScheme)
	case len(via) > st.maxRedirects:
		err = fmt.Errorf("after %d redirects: %w", st.maxRedirects, ErrTooManyRedirects)
	case st.revisit:
	default:
		target := req.URL.String()
		for _, v := range via {
			if v.URL.String() == target {
				err = fmt.Errorf("back to %q: %w", target, ErrRedirectLoop)
				break
			}
		}
	}
	st.redirErr = err
	return err
}

// recordingTransport wraps the real transport: it records what was sent and received, refuses
// private remote addresses seen through httptrace (for injected transports), decodes
// Content-Encoding with a streaming (hence bounded) decoder and tees the decoded body into the
// request state so that the raw bytes survive colly's charset conversion.
type recordingTransport struct {
	inner  http.RoundTripper
	traced bool // inner reports GotConn, where a fence is asked (tracesConn)
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	st := stateFrom(req.Context())
	if st != nil {
		st.mu.Lock()
		st.connected, st.proxy = false, nil
		st.partialHeader, st.partialURL = nil, nil
		st.mu.Unlock()
		if st.fence != nil && !t.traced {
			st.fenceAsk(req.Context(), st.fence, st.stop, func() {})
			st.mu.Lock()
			fenced := st.fenced
			st.mu.Unlock()
			if fenced != nil {
				return nil, fenced
			}
		}
	}
	resp, err := t.inner.RoundTrip(req)
	if st == nil {
		return resp, err
	}
	st.mu.Lock()
	proxy, connected := st.proxy, st.connected
	st.mu.Unlock()
	if err != nil {
		if proxy != nil {
			err = proxyFailure(proxy, connected, err)
		}
		return nil, err
	}
	if proxy != nil && resp.StatusCode == http.StatusProxyAuthRequired && req.URL.Scheme == "http" &&
		(proxy.Scheme == "http" || proxy.Scheme == "https") {
		resp.Body.Close()
		return nil, &ProxyError{Proxy: proxy.Redacted(), Err: fmt.Errorf("answered %q%s", resp.Status, authHint(resp.StatusCode))}
	}
	st.mu.Lock()
	st.reqHeader = req.Header.Clone()
	if req.Host != "" {
		st.reqHeader.Set("Host", req.Host)
	} else {
		st.reqHeader.Set("Host", req.URL.Host)
	}
	st.proto = resp.Proto
	st.lastStatus = resp.StatusCode
	remote := st.remoteIP
	st.mu.Unlock()

	if st.policy != nil && proxy == nil && remote != "" && !st.policy.hostAllowed(req.URL.Hostname()) {
		if a, perr := netip.ParseAddr(remote); perr == nil {
			if err := st.policy.CheckAddr(a); err != nil {
				resp.Body.Close()
				return nil, fmt.Errorf("connected to %w", err)
			}
		}
	}
	if err := decodeContentEncoding(resp); err != nil {
		resp.Body.Close()
		return nil, err
	}
	// Tell colly the body is already decoded: it would otherwise gunzip again (also for a
	// Content-Type containing "gzip", which must stay as received), without any bound.
	resp.Uncompressed = true
	capture := &captureBody{rc: resp.Body}
	if resp.ContentLength > 0 {
		capture.buf.Grow(int(min(resp.ContentLength, 1<<20)))
	}
	if st.partial && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		capture.drain = st.partialMax
		if resp.ContentLength > 0 { // bounded: the body read is
			capture.buf.Grow(int(min(resp.ContentLength, st.partialMax)))
		}
	}
	resp.Body = capture
	st.mu.Lock()
	st.body = capture
	if st.partial {
		st.partialHeader, st.partialURL = resp.Header, req.URL
	}
	st.mu.Unlock()
	return resp, nil
}

// decodeContentEncoding replaces resp.Body with a streaming decoder for gzip and deflate, and
// drops the Content-Encoding and Content-Length headers as net/http does for transparent gzip.
func decodeContentEncoding(resp *http.Response) error {
	enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	var rc io.ReadCloser
	switch enc {
	case "gzip", "x-gzip":
		rc = &lazyGzip{src: resp.Body}
	case "deflate":
		rc = &deflateBody{src: resp.Body}
	default:
		return nil
	}
	resp.Body = rc
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	return nil
}

// lazyGzip opens the gzip stream on first Read, so that a bad header surfaces as a read error.
type lazyGzip struct {
	src io.ReadCloser
	zr  *gzip.Reader
	err error
}

func (g *lazyGzip) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.zr == nil {
		zr, err := gzip.NewReader(g.src)
		if err != nil {
			g.err = fmt.Errorf("gzip: %w", err)
			return 0, g.err
		}
		g.zr = zr
	}
	return g.zr.Read(p)
}

func (g *lazyGzip) Close() error { return g.src.Close() }

// deflateBody decodes "deflate", which servers send either zlib-wrapped (RFC 9110) or raw.
type deflateBody struct {
	src io.ReadCloser
	r   io.Reader
}

func (d *deflateBody) Read(p []byte) (int, error) {
	if d.r == nil {
		var hdr [2]byte
		n, err := io.ReadFull(d.src, hdr[:])
		if err != nil && n == 0 {
			return 0, err
		}
		prefixed := io.MultiReader(bytes.NewReader(hdr[:n]), d.src)
		if n == 2 && hdr[0]&0x0f == 8 && (uint16(hdr[0])<<8|uint16(hdr[1]))%31 == 0 {
			zr, zerr := zlib.NewReader(prefixed)
			if zerr != nil {
				return 0, zerr
			}
			d.r = zr
		} else {
			d.r = flate.NewReader(prefixed)
		}
	}
	return d.r.Read(p)
}

func (d *deflateBody) Close() error { return d.src.Close() }

// captureBody keeps a copy of everything read through it. With drain > 0
// its first Read reads up to drain bytes into buf and returns none: buf is
// the only copy.
type captureBody struct {
	rc    io.ReadCloser
	buf   bytes.Buffer
	drain int64
}

func (c *captureBody) Read(p []byte) (int, error) {
	if c.drain > 0 {
		_, err := c.buf.ReadFrom(io.LimitReader(c.rc, c.drain))
		c.drain = -1
		if err == nil {
			err = io.EOF
		}
		return 0, err
	}
	if c.drain < 0 {
		return 0, io.EOF
	}
	n, err := c.rc.Read(p)
	c.buf.Write(p[:n])
	return n, err
}

func (c *captureBody) Close() error { return c.rc.Close() }
