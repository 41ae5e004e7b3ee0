package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
)

// Hostile page titles of the small web: a report must show them as text.
const (
	xssScript = `<script>alert(1)</script>`
	xssImg    = `<img src=x onerror=alert(2)>`
)

// smallWeb writes a one-host web with two duplicate pairs whose originals
// carry hostile titles, plus a few unique pages, and serves it. handler, if
// not nil, wraps the host's handler.
func smallWeb(t *testing.T, handler func(ip string, next http.Handler) http.Handler) (*loopweb.Web, string) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "127.0.0.2")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	esc := func(s string) string {
		return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
	}
	body := func(title, text string, links ...string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "<!DOCTYPE html><html><head><title>%s</title></head><body><h1>%s</h1><p>%s</p>", esc(title), esc(title), text)
		for _, l := range links {
			fmt.Fprintf(&b, `<a href="%s">%s</a> `, l, l)
		}
		return b.String() + "</body></html>"
	}
	words := func(seed string) string {
		var b strings.Builder
		for i := 0; i < 120; i++ {
			fmt.Fprintf(&b, "%s%d word%d ", seed, i, i*7%13)
		}
		return b.String()
	}
	files := map[string]string{
		"index.html": body(xssScript, words("home"), "copy.html", "other.html", "a.html", "b.html", "slow.html"),
		"copy.html":  body(xssScript, words("home"), "copy.html", "other.html", "a.html", "b.html", "slow.html"),
		"other.html": body(xssImg, words("other"), "other-copy.html"),
		"a.html":     body("Page A", words("alpha")),
		"b.html":     body("Page B", words("bravo")),
		"slow.html":  body("Slow page", words("slow")),
	}
	files["other-copy.html"] = files["other.html"]
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := loopweb.Start(root, loopweb.Options{Handler: handler})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, w.URL("127.0.0.2", "/")
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var serveURL = regexp.MustCompile(`on (http://127\.0\.0\.1:\d+/)`)

// waitURL waits until out shows the server's URL.
func waitURL(t *testing.T, out *syncBuffer, done <-chan error) string {
	t.Helper()
	return waitMatch(t, out, done, serveURL)
}

// waitMatch waits until out shows re's first group (a URL), for at most a
// minute and while the command runs.
func waitMatch(t *testing.T, out *syncBuffer, done <-chan error, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("command ended before serving: %v\n%s", err, out.String())
		case <-deadline:
			t.Fatalf("no match of %s in output:\n%s", re, out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// httpGet fetches u without keeping connections open.
func httpGet(t *testing.T, u string) (*http.Response, []byte) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s\n%s", u, resp.Status, b)
	}
	return resp, b
}

// scrape returns the samples of u's /metrics by name and labels:
// "name", or "name{k=v,...}" with the labels sorted.
func scrape(t *testing.T, u string) map[string]float64 {
	t.Helper()
	_, b := httpGet(t, u+"metrics")
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			slices.Sort(ls)
			key := name
			if len(ls) > 0 {
				key += "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func TestServeFinishedCrawl(t *testing.T) {
	_, seed := smallWeb(t, nil)
	data := filepath.Join(t.TempDir(), "data")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"crawl", "--data", data, "--delay", "0", "--quiet", seed}, &out, &errOut); err != nil {
		t.Fatalf("crawl: %v\n%s", err, errOut.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sout syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--data", data, "--addr", "127.0.0.1:0"}, &sout, io.Discard)
	}()
	base := waitURL(t, &sout, done)

	resp, body := httpGet(t, base)
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("/ Content-Type %q", ct)
	}
	if resp.Header.Get("Refresh") != "" {
		t.Error("a finished crawl's report asks the browser to reload")
	}
	html := string(body)
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(2)&gt;", "127.0.0.2:"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, bad := range []string{xssScript, xssImg} {
		if strings.Contains(html, bad) {
			t.Errorf("report contains %q unescaped", bad)
		}
	}
	_, js := httpGet(t, base+"report.json")
	if !bytes.Contains(js, []byte(`"exact_duplicate": 2`)) {
		t.Errorf("report.json: want 2 exact duplicates:\n%.400s", js)
	}
	m := scrape(t, base)
	want := map[string]float64{
		"horseshoe_pages_total{class=unique}":          5,
		"horseshoe_pages_total{class=exact_duplicate}": 2,
		"horseshoe_pages_total{class=error}":           0,
		"horseshoe_queue_size":                         0,
		"horseshoe_active_fetches":                     0,
		"horseshoe_crawl_running":                      0,
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	// 7 pages, robots.txt, and nothing else.
	if got := m["horseshoe_requests_total"]; got != 8 {
		t.Errorf("horseshoe_requests_total = %v, want 8", got)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop when its context ended")
	}
}

func TestServeUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no crawl", []string{"serve", "--data", t.TempDir()}, "holds no crawl"},
		{"extra argument", []string{"serve", "--data", t.TempDir(), "x"}, "unexpected argument"},
		{"no data dir", []string{"serve", "--data", ""}, "--data is required"},
		{"one of two data dirs holds no crawl", []string{"serve", "--data", t.TempDir(), "--data", t.TempDir()}, "holds no crawl"},
		{"crawl without redis", []string{"serve", "--crawl", "x"}, "--crawl needs --redis"},
		{"data dirs and redis", []string{"serve", "--data", t.TempDir(), "--redis", "redis://127.0.0.1:1/0", "--crawl", "x"}, "not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), tt.args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if code := exitCode(err, io.Discard); code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
		})
	}
}

// heldCrawl is a crawl of smallWeb serving its live report, with
// slow.html's response held until release.
type heldCrawl struct {
	base    string       // the live report's URL
	out     *syncBuffer  // what the crawl wrote, stdout and stderr
	done    <-chan error // the crawl's end
	release func()       // lets slow.html answer (again: no-op; at the test's end too)
}

// startHeldCrawl serves smallWeb with slow.html held and runs `crawler
// crawl` with args(seed) (serving on 127.0.0.1:0); it returns once the live
// report is up and slow.html requested: the crawl certainly runs.
func startHeldCrawl(t *testing.T, args func(seed string) []string) heldCrawl {
	t.Helper()
	hold := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(hold) }) }
	entered := make(chan struct{}, 1)
	_, seed := smallWeb(t, func(_ string, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow.html" {
				select {
				case entered <- struct{}{}:
				default: // a second request (a lease lost and the page requeued) is held too, not stuck here
				}
				<-hold
			}
			next.ServeHTTP(w, r)
		})
	})
	t.Cleanup(release) // before the web closes (cleanups run last first)
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(context.Background(), args(seed), out, out) }()
	base := waitURL(t, out, done)
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("crawl ended before slow.html: %v\n%s", err, out.String())
	case <-time.After(60 * time.Second):
		t.Fatal("slow.html never requested")
	}
	return heldCrawl{base: base, out: out, done: done, release: release}
}

// TestCrawlServeLive holds one page's response until the test has looked at
// the live report and metrics, so the crawl is certainly running.
func TestCrawlServeLive(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	c := startHeldCrawl(t, func(seed string) []string {
		return []string{"crawl", "--data", data, "--delay", "0", "--workers", "2", "--quiet", "--serve", "127.0.0.1:0", seed}
	})
	base, done, unblock := c.base, c.done, c.release
	// slow.html is requested as soon as the seed's links are queued, which
	// may be before the seed's page is committed: wait for the commit (the
	// seed counted and its title in the report), bounded only against a hang.
	var m map[string]float64
	var resp *http.Response
	var body []byte
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		m = scrape(t, base)
		resp, body = httpGet(t, base)
		if m["horseshoe_pages_total{class=unique}"] >= 1 && bytes.Contains(body, []byte("alert(1)")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the seed's page not committed within 60 s while slow.html is held: pages_total{class=unique} = %v, live report:\n%s",
				m["horseshoe_pages_total{class=unique}"], body)
		}
	}
	if m["horseshoe_crawl_running"] != 1 {
		t.Errorf("horseshoe_crawl_running = %v during the crawl", m["horseshoe_crawl_running"])
	}
	if m["horseshoe_active_fetches"] < 1 {
		t.Errorf("horseshoe_active_fetches = %v while slow.html is held", m["horseshoe_active_fetches"])
	}
	if m["horseshoe_requests_total"] < 2 {
		t.Errorf("horseshoe_requests_total = %v, want robots.txt and pages counted", m["horseshoe_requests_total"])
	}
	if resp.Header.Get("Refresh") == "" {
		t.Error("the live report does not ask the browser to reload")
	}
	if !bytes.Contains(body, []byte("&lt;script&gt;alert(1)&lt;/script&gt;")) {
		t.Error("live report lacks the escaped title of the first page")
	}
	unblock()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("crawl: %v\n%s", err, c.out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("crawl did not finish")
	}
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	if resp, err := hc.Get(base); err == nil {
		resp.Body.Close()
		t.Error("the live server still answers after the crawl")
	}
}

func TestCrawlServeAddressInUse(t *testing.T) {
	_, seed := smallWeb(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	data := filepath.Join(t.TempDir(), "first")
	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"crawl", "--data", data, "--delay", "0", "--quiet", seed}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var sout syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--data", data, "--addr", "127.0.0.1:0"}, &sout, io.Discard)
	}()
	base := waitURL(t, &sout, done)
	addr := strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/")
	err := run(ctx, []string{"crawl", "--data", filepath.Join(t.TempDir(), "second"), "--quiet", "--serve", addr, seed}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "cannot serve on "+addr) {
		t.Errorf("crawl --serve on a used address: %v", err)
	}
	if code := exitCode(err, io.Discard); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}
