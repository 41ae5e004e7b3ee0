package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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
	// A NO_PROXY prefix that does not parse is an error naming it: ignored, it would send the
	// hosts it was meant to exempt through the proxy.
	for _, bad := range []string{"127.0.0.0/33", "example.com, 10.0.0.0/x", "::1/129", "10.0.0/8"} {
		_, err := ProxySettings("", env(map[string]string{"HTTP_PROXY": "proxy.example:3128", "NO_PROXY": bad}))
		if err == nil || !strings.Contains(err.Error(), "NO_PROXY") || !strings.Contains(err.Error(), strings.TrimPrefix(bad, "example.com, ")) {
			t.Errorf("NO_PROXY %q: %v, want an error naming it", bad, err)
		}
	}
	if _, err := ProxySettings("", env(map[string]string{"NO_PROXY": "10.0.0.0/8, ::1/128, 192.168.1.1/32, example.com"})); err != nil {
		t.Errorf("valid NO_PROXY prefixes: %v", err)
	}
}

func TestNoProxyMatch(t *testing.T) {
	list := "example.com, .sub.test, *.wild.test, 10.0.0.0/8, 192.168.1.5, [::1], only.port:8080, .0.0.78, 0.79, *.0.80"
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
		// A name is a suffix of host names only, never of an IP literal's text.
		{"http://127.0.0.78/", false},
		{"http://127.0.0.79/", false},
		{"http://127.0.0.80/", false},
		{"http://[::ffff:127.0.0.78]/", false},
		{"http://10.0.0.78/", true}, // by 10.0.0.0/8
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
