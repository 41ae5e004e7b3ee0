package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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

// origin is a test server on a loopback address of its own that logs what reached it.
type origin struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []*http.Request // requests received (their headers and RemoteAddr)
}

func newOrigin(tb testing.TB, ip string, tlsOn bool) *origin {
	tb.Helper()
	o := &origin{}
	o.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.got = append(o.got, r.Clone(context.Background()))
		o.mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nDisallow: /private\n")
			return
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>origin "+ip+"</body></html>")
	}))
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		tb.Skipf("cannot listen on %s: %v", ip, err)
	}
	o.srv.Listener = l
	if tlsOn {
		o.srv.StartTLS()
	} else {
		o.srv.Start()
	}
	tb.Cleanup(o.srv.Close)
	return o
}

func (o *origin) requests() []*http.Request {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*http.Request(nil), o.got...)
}

// proxyFetcher builds a fetcher whose transport trusts the TLS origins given.
func proxyFetcher(tb testing.TB, pc ProxyConfig, mod func(*Options), trust ...*origin) *Fetcher {
	tb.Helper()
	f := newTestFetcher(tb, func(o *Options) {
		o.Proxy = pc
		if mod != nil {
			mod(o)
		}
	})
	if len(trust) > 0 {
		pool := x509.NewCertPool()
		for _, o := range trust {
			pool.AddCert(o.srv.Certificate())
		}
		// httptest's certificate names example.com, 127.0.0.1 and ::1; the origins listen on
		// other loopback addresses.
		f.transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: pool, ServerName: "example.com"}
	}
	return f
}

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

func TestProxyDown(t *testing.T) {
	org := newOrigin(t, "127.0.0.2", false)
	down := &url.URL{Scheme: "http", Host: testproxy.ClosedPort(t)}
	f := proxyFetcher(t, ProxyConfig{HTTP: down}, nil)
	_, err := f.Fetch(context.Background(), org.srv.URL+"/")
	fe := wantClass(t, err, ClassProxy)
	if !strings.Contains(fe.Error(), down.Host) || !strings.Contains(fe.Error(), "refused") {
		t.Errorf("error %v: want the proxy's address and the refusal", err)
	}
	if Incurable(err) {
		t.Errorf("a proxy that is down must be retried")
	}
	if len(org.requests()) != 0 {
		t.Errorf("the request went around the proxy")
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

func TestProxySettings(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	e := env(map[string]string{"HTTP_PROXY": "proxy.example:3128", "https_proxy": "socks5://u:p@127.0.0.1:1080",
		"HTTPS_PROXY": "", "no_proxy": "internal.example"})
	c, err := ProxySettings("", e)
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.String() != "http://proxy.example:3128" || c.HTTPS.String() != "socks5://u:p@127.0.0.1:1080" || c.NoProxy != "internal.example" {
		t.Errorf("from the environment: %+v", c)
	}
	c, err = ProxySettings("https://cfg.example:8443", e)
	if err != nil || c.HTTP.String() != "https://cfg.example:8443" || c.HTTPS.String() != c.HTTP.String() || c.NoProxy != "internal.example" {
		t.Errorf("the option wins over HTTP(S)_PROXY, NO_PROXY stays: %+v %v", c, err)
	}
	if c, err := ProxySettings("direct", e); err != nil || c.enabled() {
		t.Errorf("direct: %+v %v", c, err)
	}
	for _, bad := range []string{"ftp://p.example", "http://", "http://p.example/path", "http://p.example:99999", "http://u:pa ss@p.example:bad"} {
		_, err := ProxySettings(bad, e)
		if err == nil {
			t.Errorf("%q accepted", bad)
		} else if strings.Contains(err.Error(), "pa ss") {
			t.Errorf("%q: the error shows the password: %v", bad, err)
		}
	}
	if _, err := ProxySettings("", env(map[string]string{"HTTPS_PROXY": "gopher://x"})); err == nil || !strings.Contains(err.Error(), "HTTPS_PROXY") {
		t.Errorf("a bad HTTPS_PROXY: %v", err)
	}
}

func TestNoProxyMatch(t *testing.T) {
	list := "example.com, .sub.test, *.wild.test, 10.0.0.0/8, 192.168.1.5, [::1], only.port:8080"
	for _, c := range []struct {
		url  string
		want bool
	}{
		{"http://example.com/", true},
		{"http://a.example.com/", true},
		{"http://notexample.com/", false},
		{"http://sub.test/", true},
		{"http://x.sub.test/", true},
		{"http://x.wild.test/", true},
		{"http://10.2.3.4/", true},
		{"http://11.2.3.4/", false},
		{"http://192.168.1.5:81/", true},
		{"http://[::1]:8080/", true},
		{"http://only.port:8080/", true},
		{"http://only.port/", false},
		{"http://127.0.0.1/", false}, // loopback is not exempt unless listed
		{"HTTP://EXAMPLE.COM./", true},
	} {
		u, _ := url.Parse(c.url)
		if got := noProxy(list, u); got != c.want {
			t.Errorf("%s: %v, want %v", c.url, got, c.want)
		}
	}
	u, _ := url.Parse("http://anything/")
	if !noProxy("*", u) || noProxy("", u) {
		t.Errorf("* must match everything and the empty list nothing")
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
