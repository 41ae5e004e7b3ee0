//go:build e2e

package fetch

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/testproxy"
)

func TestProxyHTTPThroughTinyproxy(t *testing.T) {
	px := testproxy.Tinyproxy(t, testproxy.TinyOptions{User: "crawler", Password: "s3cret"})
	org := newOrigin(t, "127.0.0.2", false)
	f := proxyFetcher(t, ProxyConfig{HTTP: px.URL}, nil)

	res, err := f.Fetch(context.Background(), org.srv.URL+"/page")
	if err != nil {
		t.Fatalf("Fetch: %v\nproxy log:\n%s", err, px.Log(t))
	}
	if res.Status != 200 || !strings.Contains(string(res.Body), "origin 127.0.0.2") {
		t.Fatalf("status %d body %q", res.Status, res.Body)
	}
	// tinyproxy accepted the request only with the credentials (BasicAuth), logged it, and added
	// its Via header to what reached the origin.
	if !px.WaitLog(t, "GET "+org.srv.URL+"/page") {
		t.Errorf("tinyproxy did not log the request:\n%s", px.Log(t))
	}
	reqs := org.requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Header.Get("Via"), "tinyproxy") {
		t.Fatalf("origin got %d requests, Via %q: not through tinyproxy", len(reqs), reqs[0].Header.Get("Via"))
	}
	if strings.Contains(res.Proxy, "s3cret") || !strings.Contains(res.Proxy, px.URL.Host) {
		t.Errorf("Result.Proxy = %q: want the proxy without its password", res.Proxy)
	}
	if res.RemoteIP != "" {
		t.Errorf("RemoteIP = %q through a proxy: the address connected to is the proxy's, not the origin's", res.RemoteIP)
	}
	if v := res.RequestHeader.Get("Proxy-Authorization"); v != "" {
		t.Errorf("the recorded request header holds the proxy credentials: %q", v)
	}

	// robots.txt goes through the proxy too.
	rc := NewRobotsCache(f, RobotsOptions{}, nil, nil)
	ru, _ := url.Parse(org.srv.URL + "/x")
	rules, fetched, err := rc.Get(context.Background(), ru)
	if err != nil || !fetched {
		t.Fatalf("robots: fetched %v, %v", fetched, err)
	}
	if rules.Allowed("horseshoe", "/private/a") {
		t.Errorf("robots.txt rules not applied")
	}
	reqs = org.requests()
	if last := reqs[len(reqs)-1]; last.URL.Path != "/robots.txt" || !strings.Contains(last.Header.Get("Via"), "tinyproxy") {
		t.Errorf("robots.txt request %s, Via %q: not through the proxy", last.URL.Path, last.Header.Get("Via"))
	}
}

func TestProxyCredentialsRefused(t *testing.T) {
	px := testproxy.Tinyproxy(t, testproxy.TinyOptions{User: "crawler", Password: "s3cret"})
	plain := newOrigin(t, "127.0.0.2", false)
	secure := newOrigin(t, "127.0.0.3", true)
	for _, user := range []*url.Userinfo{nil, url.UserPassword("crawler", "n0tright")} {
		p := *px.URL
		p.User = user
		f := proxyFetcher(t, ProxyConfig{HTTP: &p, HTTPS: &p}, nil, secure)
		for _, org := range []*origin{plain, secure} {
			res, err := f.Fetch(context.Background(), org.srv.URL+"/")
			if user != nil && org == plain {
				// tinyproxy 1.11 answers wrong credentials with 401 and WWW-Authenticate, not
				// 407: over plain http that is a response like any other server's (README).
				if err != nil || res.Status != 401 || res.Header.Get("Server") == "" {
					t.Errorf("plain http, wrong credentials: %v, %+v", err, res)
				}
				continue
			}
			if err == nil {
				t.Fatalf("%s with %v: fetched without the proxy's consent", org.srv.URL, user)
			}
			fe := wantClass(t, err, ClassProxy)
			if !errors.Is(err, ErrProxy) || !strings.Contains(fe.Error(), "40") || !strings.Contains(fe.Error(), "credentials") {
				t.Errorf("%s with %v: %v: want a proxy error naming the refusal", org.srv.URL, user, err)
			}
			if strings.Contains(fe.Error(), "n0tright") {
				t.Errorf("the error shows the password: %v", err)
			}
			if Incurable(err) {
				t.Errorf("a proxy failure must be retried, not given up at once")
			}
		}
	}
	if n := len(plain.requests()) + len(secure.requests()); n != 0 {
		t.Errorf("origins got %d requests without the proxy's consent", n)
	}
}

func TestProxyConnectTunnel(t *testing.T) {
	px := testproxy.Tinyproxy(t, testproxy.TinyOptions{User: "crawler", Password: "s3cret"})
	org := newOrigin(t, "127.0.0.3", true)
	f := proxyFetcher(t, ProxyConfig{HTTPS: px.URL}, nil, org)
	res, err := f.Fetch(context.Background(), org.srv.URL+"/secure")
	if err != nil {
		t.Fatalf("Fetch: %v\nproxy log:\n%s", err, px.Log(t))
	}
	if res.Status != 200 || res.Proxy == "" {
		t.Fatalf("status %d, proxy %q", res.Status, res.Proxy)
	}
	if !px.WaitLog(t, "CONNECT "+org.srv.Listener.Addr().String()) {
		t.Errorf("tinyproxy did not log the CONNECT:\n%s", px.Log(t))
	}

	// An untrusted origin certificate through the tunnel is the origin's TLS failure, not the proxy's.
	g := proxyFetcher(t, ProxyConfig{HTTPS: px.URL}, nil)
	_, err = g.Fetch(context.Background(), org.srv.URL+"/secure")
	wantClass(t, err, ClassTLS)
}

func TestProxyConnectRefused(t *testing.T) {
	px := testproxy.Tinyproxy(t, testproxy.TinyOptions{ConnectPorts: []int{443}})
	org := newOrigin(t, "127.0.0.3", true)
	f := proxyFetcher(t, ProxyConfig{HTTPS: px.URL}, nil, org)
	_, err := f.Fetch(context.Background(), org.srv.URL+"/")
	fe := wantClass(t, err, ClassProxy)
	if !strings.Contains(fe.Error(), "CONNECT "+org.srv.Listener.Addr().String()+" answered") {
		t.Errorf("error %v: want the refused CONNECT and the proxy's answer", err)
	}
	if len(org.requests()) != 0 {
		t.Errorf("the origin was reached")
	}
}

func TestNoProxyBypass(t *testing.T) {
	px := testproxy.Tinyproxy(t, testproxy.TinyOptions{})
	via := newOrigin(t, "127.0.0.2", false)
	direct := newOrigin(t, "127.0.0.3", false)
	f := proxyFetcher(t, ProxyConfig{HTTP: px.URL, NoProxy: "example.org, 127.0.0.3"}, nil)
	for _, org := range []*origin{via, direct} {
		res, err := f.Fetch(context.Background(), org.srv.URL+"/")
		if err != nil || res.Status != 200 {
			t.Fatalf("%s: %v", org.srv.URL, err)
		}
	}
	if got := via.requests()[0].Header.Get("Via"); !strings.Contains(got, "tinyproxy") {
		t.Errorf("127.0.0.2 is not in NO_PROXY but was reached directly (Via %q)", got)
	}
	if got := direct.requests()[0].Header.Get("Via"); got != "" {
		t.Errorf("127.0.0.3 is in NO_PROXY but was reached through the proxy (Via %q)", got)
	}
	px.WaitLog(t, "GET "+via.srv.URL)
	if strings.Contains(px.Log(t), direct.srv.URL) {
		t.Errorf("tinyproxy logged the NO_PROXY host")
	}
}

// fixedResolver answers every name with the same addresses.
type fixedResolver []string

func (r fixedResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	var out []net.IPAddr
	for _, a := range r {
		out = append(out, net.IPAddr{IP: net.ParseIP(a)})
	}
	return out, nil
}

func TestProxyAddressPolicy(t *testing.T) {
	px := testproxy.Tinyproxy(t, testproxy.TinyOptions{})
	allowed := newOrigin(t, "127.0.0.2", false)
	refused := newOrigin(t, "127.0.0.4", false)
	local := newOrigin(t, "127.0.0.1", false)
	_, localPort, _ := net.SplitHostPort(local.srv.Listener.Addr().String())
	policy := func(res Resolver) func(*Options) {
		return func(o *Options) {
			o.DenyPrivate = true
			o.Policy = AddrPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32"), netip.MustParsePrefix("127.0.0.1/32")}}
			o.Resolver = res
		}
	}
	f := proxyFetcher(t, ProxyConfig{HTTP: px.URL}, policy(fixedResolver{"127.0.0.1"}))
	if _, err := f.Fetch(context.Background(), allowed.srv.URL+"/"); err != nil {
		t.Fatalf("allowed origin through the proxy (the proxy itself is on loopback): %v", err)
	}
	_, err := f.Fetch(context.Background(), refused.srv.URL+"/")
	fe := wantClass(t, err, ClassPrivate)
	if !strings.Contains(fe.Error(), "before asking the proxy") {
		t.Errorf("error %v: want the refusal before the proxy", err)
	}
	// A name is resolved and checked by the crawler before the proxy sees it: the proxy (which
	// resolves localhost itself) is reached for a name whose addresses are all allowed, and not
	// for one with any refused address.
	if _, err := f.Fetch(context.Background(), "http://localhost:"+localPort+"/"); err != nil {
		t.Fatalf("localhost resolving to an allowed address: %v", err)
	}
	g := proxyFetcher(t, ProxyConfig{HTTP: px.URL}, policy(fixedResolver{"127.0.0.1", "127.0.0.4"}))
	_, err = g.Fetch(context.Background(), "http://localhost:"+localPort+"/again")
	fe = wantClass(t, err, ClassPrivate)
	if !strings.Contains(fe.Error(), "localhost resolves to 127.0.0.4") {
		t.Errorf("error %v: want the refused address of the name", err)
	}
	_, err = g.Fetch(context.Background(), "http://169.254.169.254/latest/meta-data/")
	wantClass(t, err, ClassPrivate)

	px.WaitLog(t, "GET http://localhost:"+localPort+"/ ")
	log := px.Log(t)
	for _, s := range []string{refused.srv.URL, "/again", "169.254.169.254"} {
		if strings.Contains(log, s) {
			t.Errorf("the proxy was asked for %s, which the policy refuses:\n%s", s, log)
		}
	}
	if len(refused.requests()) != 0 || len(local.requests()) != 1 {
		t.Errorf("refused origin got %d requests, localhost %d (want 0, 1)", len(refused.requests()), len(local.requests()))
	}
}

func TestProxySOCKS5(t *testing.T) {
	px := testproxy.Microsocks(t, "crawler", "s3cret", "127.0.0.9")
	plain := newOrigin(t, "127.0.0.2", false)
	secure := newOrigin(t, "127.0.0.3", true)
	f := proxyFetcher(t, ProxyConfig{HTTP: px.URL, HTTPS: px.URL}, nil, secure)
	for _, org := range []*origin{plain, secure} {
		res, err := f.Fetch(context.Background(), org.srv.URL+"/")
		if err != nil || res.Status != 200 {
			t.Fatalf("%s through socks5: %v\n%s", org.srv.URL, err, px.Log(t))
		}
		// microsocks binds its outgoing connections to 127.0.0.9: the origin saw the proxy.
		if ra := org.requests()[0].RemoteAddr; !strings.HasPrefix(ra, "127.0.0.9:") {
			t.Errorf("%s: request came from %s, not through microsocks", org.srv.URL, ra)
		}
	}
	bad := *px.URL
	bad.User = url.UserPassword("crawler", "n0tright")
	g := proxyFetcher(t, ProxyConfig{HTTP: &bad}, nil)
	_, err := g.Fetch(context.Background(), plain.srv.URL+"/again")
	fe := wantClass(t, err, ClassProxy)
	if strings.Contains(fe.Error(), "n0tright") {
		t.Errorf("the error shows the password: %v", err)
	}
	if n := len(plain.requests()); n != 1 {
		t.Errorf("origin got %d requests, want 1 (the refused one never arrives)", n)
	}
}

// tlsFront puts TLS (httptest's certificate, valid for example.com) in front of a proxy: an
// https:// proxy URL for it reaches the proxy through TLS.
func tlsFront(tb testing.TB, backend string) *url.URL {
	tb.Helper()
	cert := httptest.NewTLSServer(http.NotFoundHandler())
	cfg := cert.TLS.Clone()
	cert.Close()
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	tb.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				b, err := net.Dial("tcp", backend)
				if err != nil {
					return
				}
				defer b.Close()
				go func() { io.Copy(b, c); b.(*net.TCPConn).CloseWrite() }()
				io.Copy(c, b)
			}()
		}
	}()
	return &url.URL{Scheme: "https", Host: l.Addr().String()}
}

func TestProxyHTTPSProxy(t *testing.T) {
	px := testproxy.Tinyproxy(t, testproxy.TinyOptions{User: "crawler", Password: "s3cret"})
	front := tlsFront(t, px.URL.Host)
	front.User = px.URL.User
	plain := newOrigin(t, "127.0.0.2", false)
	secure := newOrigin(t, "127.0.0.3", true)
	f := proxyFetcher(t, ProxyConfig{HTTP: front, HTTPS: front}, nil, secure)
	for _, org := range []*origin{plain, secure} {
		res, err := f.Fetch(context.Background(), org.srv.URL+"/")
		if err != nil || res.Status != 200 || !strings.HasPrefix(res.Proxy, "https://") {
			t.Fatalf("%s through an https proxy: %v %+v\n%s", org.srv.URL, err, res, px.Log(t))
		}
	}
	if via := plain.requests()[0].Header.Get("Via"); !strings.Contains(via, "tinyproxy") {
		t.Errorf("plain request not through tinyproxy (Via %q)", via)
	}
	if !px.WaitLog(t, "CONNECT "+secure.srv.Listener.Addr().String()) {
		t.Errorf("tinyproxy did not log the CONNECT")
	}
	// The proxy's certificate is checked: a fetcher that does not trust it fails with a proxy error.
	g := newTestFetcher(t, func(o *Options) { o.Proxy = ProxyConfig{HTTP: front} })
	_, err := g.Fetch(context.Background(), plain.srv.URL+"/again")
	fe := wantClass(t, err, ClassProxy)
	if !strings.Contains(fe.Error(), "certificate") {
		t.Errorf("error %v: want the proxy's certificate named", err)
	}
}
