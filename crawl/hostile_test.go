package crawl_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/hostile"
	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// testCrawl is the outcome of one engine run.
type testCrawl struct {
	pages    map[string]*storage.Page // by URL
	giveUps  []string                 // hosts given up (the engine's "giveup" evidence)
	requests int64
	elapsed  time.Duration
	peakHeap uint64 // highest HeapAlloc sampled during the crawl
}

// runEngine crawls seeds into dataDir as the crawler does (crawl.Build,
// Restore, Seed, Run), private networks allowed. It fails the test if the
// crawl does not finish within limit.
func runEngine(tb testing.TB, cfg configs.Config, dataDir string, seeds []string, limit time.Duration) *testCrawl {
	tb.Helper()
	if err := crawl.Validate(cfg); err != nil {
		tb.Fatalf("config: %v", err)
	}
	logger := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	db, err := storage.Open(dataDir, storage.Options{SyncWrites: cfg.Storage.SyncWrites, Logger: logger})
	if err != nil {
		tb.Fatal(err)
	}
	defer func() {
		if err := db.Close(); err != nil {
			tb.Errorf("close store: %v", err)
		}
	}()
	if err := db.PutSeeds(seeds); err != nil {
		tb.Fatal(err)
	}
	noDNS := &fakeResolver{Names: map[string][]string{"localhost": {"127.0.0.1"}}} // no lookup leaves the machine
	c, err := crawl.Build(cfg, db, crawl.Env{Seeds: seeds, Resolver: noDNS}, logger)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	eng, fr := c.Engine, c.Frontier
	if err := eng.Restore(); err != nil {
		tb.Fatal(err)
	}
	if _, err := eng.Seed(seeds); err != nil {
		tb.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sampled := make(chan uint64, 1)
	go func() {
		var peak uint64
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-ctx.Done():
				sampled <- peak
				return
			case <-t.C:
			}
		}
	}()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx, ctx) }()
	select {
	case err = <-done:
	case <-time.After(limit):
		cancel()
		<-done
		tb.Fatalf("crawl did not finish within %s (queued %d, active %d)", limit, fr.Stats().Queued, fr.Stats().Active)
	}
	out := &testCrawl{elapsed: time.Since(start), requests: eng.Requests()}
	cancel()
	out.peakHeap = <-sampled
	if err != nil {
		tb.Fatalf("Run: %v", err)
	}
	if err := db.ForEachEvidence("giveup", func(host string, _ []byte) error {
		out.giveUps = append(out.giveUps, host)
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	out.pages = map[string]*storage.Page{}
	if err := db.ForEachPage(func(p *storage.Page) error {
		out.pages[p.URL] = p
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return out
}

// normalWeb writes a small well-behaved site for host ip and returns its
// root directory and the paths of its pages.
func normalWeb(tb testing.TB, ip string) (string, []string) {
	tb.Helper()
	root := tb.TempDir()
	topics := []string{"apples", "bridges", "comets", "dolphins", "engines", "forests"}
	var index strings.Builder
	index.WriteString("<!doctype html><html><head><title>Normal host</title></head><body><h1>A small ordinary site</h1><ul>")
	paths := []string{"/"}
	for i, t := range topics {
		p := fmt.Sprintf("/%s/index.html", t)
		paths = append(paths, p)
		fmt.Fprintf(&index, `<li><a href="%s">%s</a></li>`, p, t)
		next := topics[(i+1)%len(topics)]
		body := fmt.Sprintf(`<!doctype html><html><head><title>About %[1]s</title></head><body>
<h1>All about %[1]s</h1><p>This page number %[2]d tells the story of %[1]s in %[3]s, which has nothing in common
with any other page of this site: %[1]s were first described by observer %[2]d, and %[1]s remain a topic
of study for the curious reader who follows the link to <a href="/%[4]s/index.html">%[4]s</a>.</p></body></html>`,
			t, i*7919, strings.Repeat(t[:3]+" ", i+3), next)
		writeFile(tb, filepath.Join(root, ip, t, "index.html"), body)
	}
	index.WriteString("</ul></body></html>")
	writeFile(tb, filepath.Join(root, ip, "index.html"), index.String())
	return root, paths
}

func writeFile(tb testing.TB, name, body string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// expect says how a horror must be recorded: with one of classes and, for
// the error class, one of errorClasses.
type expect struct {
	path         string
	classes      []storage.Class
	errorClasses []string
	status       int // 0: any
}

func TestHostileServers(t *testing.T) {
	if testing.Short() {
		t.Skip("hostile crawl takes ~20 s")
	}
	const normalIP = "127.0.0.71"
	root, normalPaths := normalWeb(t, normalIP)
	web, err := loopweb.Start(root, loopweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	hs, err := hostile.Start(hostile.Options{Addr: "127.0.0.72:0", RobotsAddr: "127.0.0.73:0", DripInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()

	cfg := configs.Default()
	cfg.Crawl.Workers = 8
	cfg.Crawl.MaxDepth = 8
	cfg.Politeness.Delay = 0
	cfg.Politeness.BackoffBase = configs.Duration(100 * time.Millisecond)
	cfg.Politeness.BackoffMax = configs.Duration(time.Second)
	cfg.Politeness.RobotsRetry = configs.Duration(100 * time.Millisecond)
	cfg.Politeness.MaxFailures = 5
	cfg.Fetch.Timeout = configs.Duration(2 * time.Second)
	cfg.Fetch.MaxBodySize = 1 << 20
	seeds := []string{hs.URL + "/", hs.RobotsURL + "/", hs.UnresolvableURL, web.URL(normalIP, "/")}

	const limit = 60 * time.Second
	c := runEngine(t, cfg, filepath.Join(t.TempDir(), "data"), seeds, limit)
	t.Logf("hostile crawl: %d records, %d requests, %s, peak heap %d MiB, give-ups %v",
		len(c.pages), c.requests, c.elapsed.Round(time.Millisecond), c.peakHeap>>20, c.giveUps)
	urls := slices.Sorted(func(yield func(string) bool) {
		for u := range c.pages {
			if !yield(u) {
				return
			}
		}
	})
	for _, u := range urls {
		p := c.pages[u]
		t.Logf("  %-55s %3d %-17s %-9s %.120s", strings.TrimPrefix(u, hs.URL), p.Status, p.Class, p.ErrorClass, p.Error)
	}

	// Every record has a known class, and every error an error class.
	for _, p := range c.pages {
		if !slices.Contains(storage.Classes, p.Class) {
			t.Errorf("%s: unknown class %q", p.URL, p.Class)
		}
		if p.Class == storage.ClassError && p.ErrorClass == "" {
			t.Errorf("%s: error without an error class: %s", p.URL, p.Error)
		}
		if !strings.HasPrefix(p.URL, "http://") && !strings.HasPrefix(p.URL, "https://") {
			t.Errorf("record for a non-http URL %q", p.URL)
		}
	}

	html := []storage.Class{storage.ClassUnique, storage.ClassExact, storage.ClassNear}
	sane := append(slices.Clone(html), storage.ClassNotHTML, storage.ClassError)
	redirect := []storage.Class{storage.ClassNotHTML}
	errClass := []storage.Class{storage.ClassError}
	want := []expect{
		{"/slow-drip", errClass, []string{fetch.ClassTimeout}, 0},
		{"/endless", errClass, []string{fetch.ClassTooLarge, fetch.ClassTimeout}, 0},
		{"/huge-length-hang", errClass, []string{fetch.ClassTimeout}, 0},
		{"/huge-length-close", errClass, []string{fetch.ClassReset}, 0},
		{"/gzip-bomb", errClass, []string{fetch.ClassTooLarge}, 0},
		{"/redirect-loop/a", redirect, nil, 302},
		{"/redirect-loop/b", redirect, nil, 301},
		{"/redirect-self", redirect, nil, 302},
		{"/chain/1", redirect, nil, 302},
		{"/redirect-forever/1", redirect, nil, 302},
		{"/redirect-ftp", redirect, nil, 302},
		{"/redirect-file", redirect, nil, 302},
		{"/redirect-data", redirect, nil, 302},
		{"/redirect-javascript", redirect, nil, 302},
		{"/bad-utf8", html, nil, 200},
		{"/lying-charset", html, nil, 200},
		{"/lying-meta", html, nil, 200},
		{"/bogus-charset", html, nil, 200},
		{"/binary-as-html", sane, []string{"parse"}, 200},
		{"/one-line", errClass, []string{fetch.ClassTooLarge}, 200},
		{"/deep-dom", html, nil, 200},
		{"/calendar/2024/06", html, nil, 200},
		{"/burst-5xx", html, nil, 200},
		{"/always-500", errClass, []string{"http"}, 500},
		{"/reset", errClass, []string{fetch.ClassReset}, 0},
		{"/reset-mid-body", errClass, []string{fetch.ClassReset}, 0},
		{"/empty", sane, nil, 200},
		{"/utf16be-header", html, nil, 200},
		{"/odd-hrefs", html, nil, 200},
		{"/many-hosts", html, nil, 200},
	}
	// Address horrors redirect off the host (out of scope here; see
	// TestAddressPolicyCrawl for where they lead).
	for _, h := range hostile.Horrors() {
		if strings.HasPrefix(h.Name, "redirect-") && !slices.ContainsFunc(want, func(w expect) bool { return w.path == h.Path }) {
			want = append(want, expect{h.Path, redirect, nil, 302})
		}
	}
	covered := map[string]bool{}
	for _, w := range want {
		covered[w.path] = true
		p, ok := c.pages[hs.URL+w.path]
		if !ok {
			t.Errorf("%s: no record", w.path)
			continue
		}
		if !slices.Contains(w.classes, p.Class) {
			t.Errorf("%s: class %s (%s: %s), want one of %v", w.path, p.Class, p.ErrorClass, p.Error, w.classes)
		}
		if p.Class == storage.ClassError && w.errorClasses != nil && !slices.Contains(w.errorClasses, p.ErrorClass) {
			t.Errorf("%s: error class %q (%s), want one of %v", w.path, p.ErrorClass, p.Error, w.errorClasses)
		}
		if w.status != 0 && p.Status != w.status {
			t.Errorf("%s: status %d, want %d", w.path, p.Status, w.status)
		}
	}
	for _, h := range hostile.Horrors() {
		if !covered[h.Path] {
			t.Errorf("horror %s has no expectation in this test", h.Path)
		}
	}

	// A UTF-16BE page labelled in the header: its title and links are read.
	if p := c.pages[hs.URL+"/utf16be-header"]; p != nil && p.Title != hostile.UTF16Title {
		t.Errorf("/utf16be-header: title %q, want %q", p.Title, hostile.UTF16Title)
	}
	for _, l := range hostile.UTF16Links {
		if n := hs.Handler().Hits(l); n != 1 {
			t.Errorf("%s, linked from /utf16be-header, requested %d times, want 1", l, n)
		}
	}
	// Odd hrefs are followed where a browser goes (WHATWG URL), and nowhere else.
	for _, o := range hostile.OddHrefs {
		cu, err := frontier.Canonicalize(hs.URL+o.URL, nil)
		if err != nil {
			t.Errorf("href %q: %v", o.Href, err)
			continue
		}
		if p, ok := c.pages[cu]; !ok || p.Status != 200 {
			t.Errorf("href %q: no 200 record for %s: %+v", o.Href, cu, p)
		}
		if n := hs.Handler().Paths()[o.Path]; n != 1 {
			t.Errorf("href %q: %s requested %d times, want 1", o.Href, o.Path, n)
		}
	}
	for path := range hs.Handler().Paths() {
		if strings.Contains(path, `\`) || strings.Contains(path, "%5C") || strings.ContainsAny(path, "\t\n") {
			t.Errorf("requested %q: an href read as net/url reads it, not as a browser does", path)
		}
	}

	// Other hosts: the one behind a hanging robots.txt and the one that
	// does not resolve are retried, given up after max_failures, and their
	// seeds recorded with an error class; the normal host is complete.
	for _, u := range []string{hs.RobotsURL + "/", hs.UnresolvableURL} {
		p, ok := c.pages[u]
		if !ok || (p.Class != storage.ClassError && p.Class != storage.ClassRobotsDisallowed) || p.ErrorClass == "" || p.Status != 0 {
			t.Errorf("%s: %+v, want an unfetched error or robots_disallowed record with an error class", u, p)
		}
	}
	if n := hs.RobotsHits("/"); n != 0 {
		t.Errorf("page behind a hanging robots.txt requested %d times", n)
	}
	if n := hs.RobotsHits("/robots.txt"); n < 1 || n > cfg.Politeness.MaxFailures {
		t.Errorf("hanging robots.txt requested %d times, want 1 to max_failures (%d)", n, cfg.Politeness.MaxFailures)
	}
	for _, path := range normalPaths {
		u := web.URL(normalIP, path)
		if p, ok := c.pages[u]; !ok || p.Status != 200 || p.Class != storage.ClassUnique {
			t.Errorf("normal host %s: %+v, want a unique page", path, p)
		}
	}

	// Nothing that is not http(s) was requested: no record of a redirect
	// target with another scheme, and redirect loops stop at the seen-set.
	// net/http's Transport resends a GET once when a reused connection
	// dies before any response byte, so /reset may see two requests.
	for path, n := range hs.Handler().Paths() {
		if n > 1 && path != "/burst-5xx" && !(path == "/reset" && n == 2) {
			t.Errorf("%s requested %d times", path, n)
		}
	}
	if n := hs.Handler().Hits("/burst-5xx"); n != 4 {
		t.Errorf("/burst-5xx requested %d times, want 3 bursts of 503 and one success", n)
	}

	// Traps: the calendar stops at max_depth, redirect chains at
	// fetch.max_redirects (the first request and max_redirects hops; both
	// chains are longer than that).
	if n, bound := hs.Handler().Hits("/calendar/"), 2*cfg.Crawl.MaxDepth; n > bound {
		t.Errorf("calendar trap: %d requests, want at most %d (2 x max_depth)", n, bound)
	}
	for _, prefix := range []string{"/chain/", "/redirect-forever/"} {
		if n := hs.Handler().Hits(prefix); n != cfg.Fetch.MaxRedirects+1 {
			t.Errorf("redirect chain %s: %d requests, want max_redirects+1 = %d", prefix, n, cfg.Fetch.MaxRedirects+1)
		}
		last := fmt.Sprintf("%s%s%d", hs.URL, prefix, cfg.Fetch.MaxRedirects+1)
		if p := c.pages[last]; p == nil || p.ErrorClass != fetch.ClassRedirect {
			t.Errorf("redirect chain %s: the hop past max_redirects (%s) is recorded as %+v, want error class %q", prefix, last, p, fetch.ClassRedirect)
		}
	}

	// Time and memory stay bounded.
	if c.elapsed > 45*time.Second {
		t.Errorf("crawl took %s", c.elapsed)
	}
	const heapBound = 300 << 20
	if c.peakHeap > heapBound {
		t.Errorf("peak heap %d MiB, want < %d MiB", c.peakHeap>>20, heapBound>>20)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > heapBound {
		t.Errorf("heap after the crawl %d MiB, want < %d MiB", ms.HeapAlloc>>20, heapBound>>20)
	}
	for _, g := range c.giveUps {
		if strings.HasSuffix(hs.URL, "/"+g) || strings.HasSuffix(web.BaseURL(normalIP), "/"+g) {
			t.Errorf("gave up host %s: its hostile pages must not cost the whole host", g)
		}
	}
}
