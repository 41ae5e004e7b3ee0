package crawl_test

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/internal/hostile"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// closedPort returns host:port on ip where nothing listens.
func closedPort(tb testing.TB, ip string) string {
	tb.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		tb.Skipf("cannot listen on %s: %v", ip, err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// untrustedTLS serves h over TLS on ip with a certificate the crawler does
// not trust.
func untrustedTLS(tb testing.TB, ip string, h http.Handler) string {
	tb.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		tb.Skipf("cannot listen on %s: %v", ip, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	tb.Cleanup(srv.Close)
	return srv.URL
}

func loopbackPolicy(ips ...string) *fetch.AddrPolicy {
	p := &fetch.AddrPolicy{}
	for _, ip := range ips {
		a := netip.MustParseAddr(ip)
		p.Allow = append(p.Allow, netip.PrefixFrom(a, 32))
	}
	return p
}

// TestRobotsFailureCauseAndGiveUp: a host whose robots.txt fails for a reason
// retrying cannot cure (connection refused, untrusted certificate, an address
// refused by policy, a name that does not exist) is given up at its first
// failure, with the default robots_retry of a minute, and the cause is in the
// give-up reason, in the records of its URLs and in the text report. It took
// nine minutes (10 retries a minute apart) and said only "robots.txt
// unavailable 10 times in a row".
func TestRobotsFailureCauseAndGiveUp(t *testing.T) {
	var log hitLog
	good := startServer(t, "127.0.0.85", (&site{Pages: map[string]page{
		"/": {Body: htmlPage("good", "")},
	}}).handler(), &log)
	refused := closedPort(t, "127.0.0.81")
	tlsURL := untrustedTLS(t, "127.0.0.82", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "User-agent: *\nAllow: /\n")
	}))
	// A name that resolved to the seed's address when the crawl started and
	// to a private address now (DNS rebinding).
	rebind := hostile.RebindHost + ":" + good.Port
	res := &fakeResolver{Names: map[string][]string{hostile.RebindHost: {"10.0.0.1"}}}
	cases := []struct {
		seed  string
		cause []string
	}{
		{"http://" + refused + "/", []string{"robots.txt unavailable", "connect: ", "connection refused"}},
		{tlsURL + "/", []string{"robots.txt unavailable", "tls", "x509: certificate"}},
		{"http://" + rebind + "/", []string{"robots.txt unavailable", "private", "address policy", "10.0.0.1, a private address"}},
		{"http://gone.horseshoe-nowhere.invalid/", []string{"robots.txt unavailable", "dns: ", "no such host"}},
	}
	seeds := []string{good.Base("127.0.0.85") + "/"}
	for _, c := range cases {
		seeds = append(seeds, c.seed)
	}
	r := runCrawl(t, crawlConfig{Workers: 4, RobotsRetry: time.Minute, MaxFailures: 10, Timeout: 50 * time.Second,
		Policy: loopbackPolicy("127.0.0.81", "127.0.0.82", "127.0.0.85"), Resolver: res}, seeds...)
	if r.Elapsed > 45*time.Second { // a wait for robots_retry (1 minute) would pass 60 s; a loaded machine stays far below
		t.Errorf("crawl took %v, want seconds", r.Elapsed)
	}
	for _, c := range cases {
		p := r.page(t, c.seed)
		host := p.Host
		reason := r.GiveUps[host]
		for _, want := range c.cause {
			if !strings.Contains(reason, want) {
				t.Errorf("%s: give-up reason %q lacks %q", c.seed, reason, want)
			}
			if !strings.Contains(p.Error, want) {
				t.Errorf("%s: record error %q lacks %q", c.seed, p.Error, want)
			}
		}
		if p.Class != storage.ClassRobotsDisallowed || p.ErrorClass != "gave_up" || p.Status != 0 {
			t.Errorf("%s: class %s error class %s status %d, want robots_disallowed, gave_up, 0", c.seed, p.Class, p.ErrorClass, p.Status)
		}
		// The report's host notes keep the end of the reason, where the
		// cause is, when they shorten it.
		if tail := c.cause[len(c.cause)-1]; !strings.Contains(r.Text, "robots.txt unavailable, not retried: ") || !strings.Contains(r.Text, tail) {
			t.Errorf("text report lacks the give-up of %s or its cause %q:\n%s", host, tail, r.Text)
		}
	}
	if p := r.page(t, seeds[0]); p.Class != storage.ClassUnique {
		t.Errorf("good host: %+v", p)
	}
	if n := len(log.byHost(rebind)); n != 0 {
		t.Errorf("the host behind a refused address was requested %d times", n)
	}
}

// TestRobotsTransientFailureRetried: a 503 or a reset keeps the retry
// schedule (max_failures tries, robots_retry apart), and the reason names the
// last cause.
func TestRobotsTransientFailureRetried(t *testing.T) {
	var log hitLog
	unavailable := startServer(t, "127.0.0.87", (&site{Dynamic: func(path string, _ int) (page, bool) {
		if path == "/robots.txt" {
			return page{Status: 503, Body: "down"}, true
		}
		return page{Body: htmlPage("never", "")}, true
	}}).handler(), &log)
	const tries = 4
	seed := unavailable.Base("127.0.0.87") + "/"
	r := runCrawl(t, crawlConfig{RobotsRetry: 50 * time.Millisecond, MaxFailures: tries}, seed)
	if n := len(log.byHost(unavailable.HostPort("127.0.0.87"))); n != tries {
		t.Errorf("robots.txt requested %d times, want max_failures = %d", n, tries)
	}
	p := r.page(t, seed)
	for _, want := range []string{"4 times in a row", "HTTP 503"} {
		if !strings.Contains(p.Error, want) || !strings.Contains(r.GiveUps[p.Host], want) {
			t.Errorf("record %q, reason %q: want %q in both", p.Error, r.GiveUps[p.Host], want)
		}
	}
}

// TestAddressPolicyCrawl crawls the hostile server's address horrors with
// scope any and the crawler's policy for a loopback seed (its own address and
// nothing else): every redirect target (cloud metadata addresses and names,
// link-local, private, a foreign loopback address, a name resolving to a
// private address) is recorded as refused by the address policy, class error
// with error class private, without a request. They were queued and tried
// when every seed was local, because the check was then switched off.
func TestAddressPolicyCrawl(t *testing.T) {
	hs, err := hostile.Start(hostile.Options{Addr: "127.0.0.76:0", RobotsAddr: "127.0.0.77:0"})
	if err != nil {
		t.Skip(err)
	}
	defer hs.Close()
	var seeds []string
	redirects := map[string]string{}
	for _, h := range hostile.Horrors() {
		if strings.HasPrefix(h.Name, "redirect-") && (strings.Contains(h.What, "metadata") || strings.Contains(h.What, "10.0.0.1") ||
			strings.Contains(h.What, "fd00::1") || strings.Contains(h.What, "fe80") || strings.Contains(h.What, "127.0.0.254")) {
			seeds = append(seeds, hs.URL+h.Path)
			redirects[hs.URL+h.Path] = h.What
		}
	}
	if len(seeds) < 9 {
		t.Fatalf("only %d address redirects found: %v", len(seeds), seeds)
	}
	policy := &fetch.AddrPolicy{}
	if added := policy.AllowSeeds(context.Background(), nil, []string{strings.TrimPrefix(hs.URL, "http://")}); len(added) != 1 {
		t.Fatalf("AllowSeeds added %v, want the seed's address", added)
	}
	res := &fakeResolver{Names: map[string][]string{hostile.RebindHost: {"10.0.0.1"}}}
	r := runCrawl(t, crawlConfig{ScopeAny: true, RobotsRetry: time.Minute, Policy: policy, Resolver: res}, seeds...)
	if r.Elapsed > 45*time.Second { // a wait for robots_retry (1 minute) would pass 60 s; a loaded machine stays far below
		t.Errorf("crawl took %v", r.Elapsed)
	}
	targets := 0
	for _, p := range r.Pages {
		if _, ok := redirects[p.URL]; ok {
			if p.Status != 302 {
				t.Errorf("%s: status %d, want 302", p.URL, p.Status)
			}
			continue
		}
		targets++
		refused := p.Class == storage.ClassError && p.ErrorClass == fetch.ClassPrivate ||
			p.Class == storage.ClassRobotsDisallowed && strings.Contains(p.Error, "private")
		if !refused || !strings.Contains(p.Error, "address policy") || p.Status != 0 {
			t.Errorf("%s: class %s, error class %s, %q: want refused by the address policy", p.URL, p.Class, p.ErrorClass, p.Error)
		}
	}
	if targets != len(seeds) {
		t.Errorf("%d redirect targets recorded, want %d", targets, len(seeds))
	}
	if res.calls.Load() > 2 {
		t.Errorf("%d lookups, want only the rebinding name looked up (for politeness, and to connect)", res.calls.Load())
	}
}
