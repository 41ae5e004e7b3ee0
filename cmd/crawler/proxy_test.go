//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testproxy"
)

// proxyOrigin is a small site of linked pages on its own loopback address that logs every
// request it gets: when, what, and the Via header a proxy adds.
type proxyOrigin struct {
	url string
	mu  sync.Mutex
	log []originHit
}

type originHit struct {
	at   time.Time
	path string
	via  string
}

func startProxyOrigin(t *testing.T, ip string, pages int) *proxyOrigin {
	t.Helper()
	o := &proxyOrigin{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.log = append(o.log, originHit{time.Now(), r.URL.Path, r.Header.Get("Via")})
		o.mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nAllow: /\n")
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><head><title>%s %s</title></head><body><p>Page %s of the site at %s, with words of its own: %s.</p>",
			ip, r.URL.Path, r.URL.Path, ip, strings.Repeat(ip+r.URL.Path+" ", 5))
		for i := range pages {
			fmt.Fprintf(w, `<a href="/p%d">page %d</a> `, i, i)
		}
		fmt.Fprint(w, "</body></html>")
	})
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	o.url = "http://" + ln.Addr().String() + "/"
	return o
}

func (o *proxyOrigin) hits() []originHit {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]originHit(nil), o.log...)
}

// TestCrawlThroughProxy: a crawl of two sites with HTTP_PROXY set goes through a real tinyproxy
// (every request, robots.txt included, reaches the sites with tinyproxy's Via header), and
// politeness keeps one clock per site, not one for the proxy that all requests share: each
// site's requests are the delay apart, and the two sites are crawled side by side. With
// fetch.proxy naming a proxy that is down, the option wins over HTTP_PROXY, every page is
// recorded with the proxy's failure as its cause, and the crawl ends by itself.
func TestCrawlThroughProxy(t *testing.T) {
	px := testproxy.Tinyproxy(t, testproxy.TinyOptions{User: "crawler", Password: "s3cret"})
	a := startProxyOrigin(t, "127.0.0.51", 5)
	b := startProxyOrigin(t, "127.0.0.52", 5)
	t.Setenv("HTTP_PROXY", px.URL.String())
	t.Setenv("NO_PROXY", "")

	const delay = 400 * time.Millisecond
	data := filepath.Join(t.TempDir(), "data")
	var so, se bytes.Buffer
	args := []string{"crawl", "--data", data, "--delay", delay.String(), "--quiet", a.url, b.url}
	if err := run(context.Background(), args, &so, &se); err != nil {
		t.Fatalf("crawl: %v\n%s", err, se.String())
	}
	for _, o := range []*proxyOrigin{a, b} {
		hits := o.hits()
		if len(hits) != 7 { // robots.txt, /, /p0 .. /p4
			t.Errorf("%s: %d requests, want 7: %+v", o.url, len(hits), hits)
		}
		for i, h := range hits {
			if !strings.Contains(h.via, "tinyproxy") {
				t.Errorf("%s%s reached the site without the proxy (Via %q)", o.url, h.path, h.via)
			}
			if i > 0 {
				if gap := h.at.Sub(hits[i-1].at); gap < delay-150*time.Millisecond {
					t.Errorf("%s: %s %v after the previous request, want the delay %v (less the proxy's jitter)", o.url, h.path, gap, delay)
				}
			}
		}
	}
	// One clock per site: b's requests fall between a's first and last, as they would not if
	// the proxy's address were the politeness key.
	ha, hb := a.hits(), b.hits()
	if len(ha) > 1 && len(hb) > 1 {
		inside := 0
		for _, h := range hb {
			if h.at.After(ha[0].at) && h.at.Before(ha[len(ha)-1].at) {
				inside++
			}
		}
		if inside < len(hb)/2 {
			t.Errorf("only %d of %d requests to %s fell within the crawl of %s: the sites waited for one clock", inside, len(hb), b.url, a.url)
		}
	}
	if !px.WaitLog(t, "GET "+a.url+"robots.txt") {
		t.Errorf("tinyproxy did not log the robots.txt request")
	}

	// fetch.proxy wins over HTTP_PROXY: a proxy that is down is every request's failure.
	down := "http://crawler:s3cret@" + testproxy.ClosedPort(t)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	cfg := fmt.Sprintf("fetch:\n  proxy: %q\npoliteness:\n  robots_retry: 200ms\n  backoff_base: 100ms\n  max_failures: 2\n", down)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	data2 := filepath.Join(t.TempDir(), "data")
	before := len(a.hits())
	start := time.Now()
	if err := run(context.Background(), []string{"crawl", "--data", data2, "--config", cfgPath, "--delay", "0", "--quiet", a.url}, &so, &se); err != nil {
		t.Fatalf("crawl through a proxy that is down must end normally: %v\n%s", err, se.String())
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("crawl through a proxy that is down took %v", d)
	}
	if n := len(a.hits()); n != before {
		t.Errorf("the site got %d requests with the proxy down", n-before)
	}
	so.Reset()
	if err := run(context.Background(), []string{"report", "--data", data2, "--format", "json"}, &so, &se); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Pages []struct{ URL, Class, Error string } `json:"pages"`
	}
	if err := json.Unmarshal(so.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Pages) == 0 {
		t.Fatalf("no page recorded")
	}
	for _, p := range rep.Pages {
		if !strings.Contains(p.Error, "proxy") || strings.Contains(p.Error, "s3cret") {
			t.Errorf("%s: %s %q: want the proxy's failure as the cause, without its password", p.URL, p.Class, p.Error)
		}
	}
	if stored, err := os.ReadFile(filepath.Join(data2, "MANIFEST")); err == nil && bytes.Contains(stored, []byte("s3cret")) {
		t.Errorf("the store holds the proxy password")
	}
}
