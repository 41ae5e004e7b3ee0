package crawl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/memnet"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// clockNoise is the slack allowed between the politeness the frontier
// enforces and the arrival times the servers measure.
const clockNoise = 5 * time.Millisecond

// robotsAgent is the product token the test crawls use.
const robotsAgent = "horseshoe"

// hit is one request as a test server saw it.
type hit struct {
	IP     string // address of the server that answered
	Host   string // Host header: the name the crawler used, with port
	Method string
	Path   string // request URI as received
	Status int
	Arrive time.Time // the handler was entered
	Done   time.Time // the handler returned (the response was written)
}

// hitLog collects the hits of every server of one test.
type hitLog struct {
	mu   sync.Mutex
	hits []hit
}

func (l *hitLog) add(h hit) {
	l.mu.Lock()
	l.hits = append(l.hits, h)
	l.mu.Unlock()
}

// all returns the hits sorted by arrival.
func (l *hitLog) all() []hit {
	l.mu.Lock()
	out := append([]hit(nil), l.hits...)
	l.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Arrive.Before(out[j].Arrive) })
	return out
}

// byHost returns the hits for one Host header value, in arrival order.
func (l *hitLog) byHost(host string) []hit {
	var out []hit
	for _, h := range l.all() {
		if h.Host == host {
			out = append(out, h)
		}
	}
	return out
}

// byIP returns the hits answered by the server on ip, in arrival order.
func (l *hitLog) byIP(ip string) []hit {
	var out []hit
	for _, h := range l.all() {
		if h.IP == ip {
			out = append(out, h)
		}
	}
	return out
}

// paths returns the request URIs of hits, in order.
func paths(hits []hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Path
	}
	return out
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach Flush and Hijack.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// page is one canned response.
type page struct {
	Status int         // 0 means 200
	Header http.Header // extra headers
	Body   string
}

// site serves canned pages; Dynamic, when set, answers first and may
// decline (ok false) to fall through to Pages. Count is the 1-based number of
// requests for the same path so far, so faults can be injected the first N
// times.
type site struct {
	Pages   map[string]page
	Dynamic func(path string, count int) (p page, ok bool)
	// Latency is slept in every handler so in-flight windows are wide enough
	// for an overlap to be seen.
	Latency time.Duration
}

func (s *site) handler() http.Handler {
	var mu sync.Mutex
	counts := map[string]int{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		counts[r.URL.RequestURI()]++
		n := counts[r.URL.RequestURI()]
		mu.Unlock()
		if s.Latency > 0 {
			time.Sleep(s.Latency)
		}
		var p page
		ok := false
		if s.Dynamic != nil {
			p, ok = s.Dynamic(r.URL.RequestURI(), n)
		}
		if !ok {
			p, ok = s.Pages[r.URL.RequestURI()]
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		for k, vs := range p.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		if w.Header().Get("Content-Type") == "" {
			if strings.HasSuffix(r.URL.Path, ".txt") {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			} else {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
			}
		}
		status := p.Status
		if status == 0 {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		fmt.Fprint(w, p.Body)
	})
}

// server is one loopback HTTP server. Several host names may point at it.
type server struct {
	IP   string
	Port string
}

// Base returns "http://name:port" for a host name served by s.
func (s server) Base(name string) string { return "http://" + net.JoinHostPort(name, s.Port) }

// HostPort returns "name:port", the Host header and frontier host key.
func (s server) HostPort(name string) string { return net.JoinHostPort(name, s.Port) }

// startServer serves h on ip (a free port), logging every request to log.
// The server is closed when the test ends.
func startServer(tb testing.TB, ip string, h http.Handler, log *hitLog) server {
	tb.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		tb.Skipf("cannot listen on %s (loopback aliases unavailable?): %v", ip, err)
	}
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: logged(ip, h, log)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			tb.Errorf("server %s: %v", ip, err)
		}
	}()
	tb.Cleanup(func() {
		srv.Close()
		<-done
	})
	return server{IP: ip, Port: port}
}

// startMemServer serves h on ip of the in-memory network n (a port of its
// own), logging every request to log. Inside a synctest bubble the times
// logged are the bubble's: exact.
func startMemServer(n *memnet.Network, ip string, h http.Handler, log *hitLog) server {
	return server{IP: ip, Port: n.Serve(ip, logged(ip, h, log))}
}

// logged wraps h to add every request it answers to log.
func logged(ip string, h http.Handler, log *hitLog) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrive := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		log.add(hit{IP: ip, Host: r.Host, Method: r.Method, Path: r.URL.RequestURI(),
			Status: sw.status, Arrive: arrive, Done: time.Now()})
	})
}

// htmlPage builds a small page whose text is unique to name (so that no two
// test pages are near-duplicates) with the given extra head markup and links.
func htmlPage(name, head string, links ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><html><head><title>%s</title>%s</head><body><h1>%s</h1><p>", name, head, name)
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "%s-word%d ", name, i)
	}
	b.WriteString("</p><ul>")
	for _, l := range links {
		if rel, href, ok := strings.Cut(l, "|"); ok {
			fmt.Fprintf(&b, "<li><a rel=%q href=%q>%s</a></li>", rel, href, href)
			continue
		}
		fmt.Fprintf(&b, "<li><a href=%q>%s</a></li>", l, l)
	}
	b.WriteString("</ul></body></html>")
	return b.String()
}

// crawlConfig is the subset of the configuration the politeness tests vary.
type crawlConfig struct {
	Restore        bool          // call Engine.Restore before seeding (loads the seen filter)
	Delay          time.Duration // politeness.delay
	MaxDelay       time.Duration // politeness.max_delay (cap for Crawl-delay)
	Workers        int
	RobotsRetry    time.Duration // politeness.robots_retry
	BackoffBase    time.Duration
	BackoffMax     time.Duration
	MaxFailures    int
	FollowNofollow bool
	ScopeAny       bool                  // follow links to any host (default: seed hosts only)
	Mirror         bool                  // skip duplicates' links and detect mirrors (the crawler's defaults)
	Timeout        time.Duration         // the whole crawl; the test fails when it is hit
	Policy         *fetch.AddrPolicy     // address policy (DenyPrivate); nil: any address
	Resolver       fetch.Resolver        // name lookups of the fetcher and the engine; nil: the system's
	NoSitemaps     bool                  // crawl.sitemaps: false
	MaxPages       int                   // crawl.max_pages (0: no limit)
	SitemapBytes   int64                 // crawl.sitemap_max_bytes (0: the default, 50 MB)
	Edit           func(*configs.Config) // further settings, applied last
	// Net is the in-memory network the crawl fetches from and resolves
	// names on (startMemServer); nil: the real one. runCrawl closes it.
	Net *memnet.Network
}

func (c crawlConfig) withDefaults() crawlConfig {
	if c.MaxDelay == 0 {
		c.MaxDelay = 30 * time.Second
	}
	if c.Workers == 0 {
		c.Workers = 4
	}
	if c.RobotsRetry == 0 {
		c.RobotsRetry = time.Minute
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = 100 * time.Millisecond
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = 5 * time.Second
	}
	if c.MaxFailures == 0 {
		c.MaxFailures = 10
	}
	if c.Timeout == 0 {
		// A hang bound: these crawls take a second or two alone, and many
		// times that under -race beside the end-to-end tier.
		c.Timeout = 3 * time.Minute
	}
	return c
}

// config is the crawler's configuration for c: the defaults, with what the
// politeness tests vary, no raw responses and the loopback servers' short
// timeout.
func (c crawlConfig) config() configs.Config {
	cfg := configs.Default()
	p := &cfg.Politeness
	p.Delay, p.MaxDelay, p.RobotsRetry = configs.Duration(c.Delay), configs.Duration(c.MaxDelay), configs.Duration(c.RobotsRetry)
	p.BackoffBase, p.BackoffMax, p.MaxFailures = configs.Duration(c.BackoffBase), configs.Duration(c.BackoffMax), c.MaxFailures
	cfg.Crawl.Workers, cfg.Crawl.MaxDepth, cfg.Crawl.FollowNofollow = c.Workers, 10, c.FollowNofollow
	cfg.Crawl.SkipDuplicateLinks, cfg.Mirror.Enabled = c.Mirror, c.Mirror
	cfg.Crawl.Sitemaps = !c.NoSitemaps
	cfg.Crawl.MaxPages = c.MaxPages
	if c.SitemapBytes > 0 {
		cfg.Crawl.SitemapMaxBytes = c.SitemapBytes
	}
	if c.ScopeAny {
		cfg.Crawl.Scope = "any"
	}
	cfg.Fetch.RobotsAgent, cfg.Fetch.Timeout = robotsAgent, configs.Duration(5*time.Second)
	cfg.Storage.KeepRaw = false
	if c.Edit != nil {
		c.Edit(&cfg)
	}
	return cfg
}

// crawlResult is what a finished test crawl left in its store.
type crawlResult struct {
	Mirrors  []report.Mirror          // the report's mirrors
	Notes    []report.HostNote        // the report's host notes
	Pages    map[string]*storage.Page // by canonical URL
	Skipped  map[string]*storage.Page // skip records (mirror_skipped without a page id), by URL
	Aliases  *report.Aliases          // the report's canonical hints
	Copies   *report.CopyPolicy       // the report's copy policy
	Subtrees []report.MissingSubtree  // the report's missing subtrees
	GiveUps  map[string]string        // host given up -> reason (frontier or stored evidence)
	Requests int64
	Elapsed  time.Duration
	Text     string                       // the text report
	Hints    map[string]crawl.SitemapHint // what sitemaps said, by canonical URL
	// The full scans of the run (storage.DB.FullScans) and its skip audits.
	PageScans, SkipScans int64
	AuditRounds          int
}

// page returns the stored record of rawURL (canonicalized), failing the test
// when there is none.
func (r crawlResult) page(tb testing.TB, rawURL string) *storage.Page {
	tb.Helper()
	cu, err := frontier.Canonicalize(rawURL, nil)
	if err != nil {
		tb.Fatalf("canonicalize %s: %v", rawURL, err)
	}
	p := r.Pages[cu]
	if p == nil {
		tb.Fatalf("no page recorded for %s", cu)
	}
	return p
}

// runCrawl crawls seeds to the end through the real engine, wired by
// crawl.Build as the crawler wires it, and returns what the store holds.
func runCrawl(tb testing.TB, cfg crawlConfig, seeds ...string) crawlResult {
	tb.Helper()
	cfg = cfg.withDefaults()
	db, err := storage.Open(tb.TempDir(), storage.Options{})
	if err != nil {
		tb.Fatalf("storage.Open: %v", err)
	}
	defer db.Close()

	canon := make([]string, 0, len(seeds))
	for _, s := range seeds {
		c, err := frontier.Canonicalize(s, nil)
		if err != nil {
			tb.Fatalf("seed %s: %v", s, err)
		}
		canon = append(canon, c)
	}

	env := crawl.Env{Seeds: canon, Policy: cfg.Policy, Resolver: cfg.Resolver}
	if cfg.Net != nil {
		defer cfg.Net.Close()
		env.Transport, env.Resolver = cfg.Net.Transport(), cfg.Net
	}
	c, err := crawl.Build(cfg.config(), db, env, nil)
	if err != nil {
		tb.Fatalf("crawl.Build: %v", err)
	}
	defer c.Close()
	eng, fr := c.Engine, c.Frontier
	if cfg.Restore {
		if err := eng.Restore(); err != nil {
			tb.Fatalf("Restore: %v", err)
		}
		if covered, err := crawl.SeenFilterLoaded(eng); err != nil || !covered {
			tb.Fatalf("seen filter not loaded: %v", err)
		}
	}
	if _, err := eng.Seed(canon); err != nil {
		tb.Fatalf("Seed: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	start := time.Now()
	ps0, ss0 := db.FullScans()
	if err := eng.Run(ctx, ctx); err != nil {
		tb.Fatalf("Run: %v", err)
	}
	ps, ss := db.FullScans()
	res := crawlResult{Pages: map[string]*storage.Page{}, GiveUps: map[string]string{},
		Requests: eng.Requests(), Elapsed: time.Since(start),
		PageScans: ps - ps0, SkipScans: ss - ss0, AuditRounds: crawl.AuditRounds(eng)}
	for _, g := range fr.GiveUps() {
		res.GiveUps[g.Host] = g.Reason
	}
	if err := db.ForEachEvidence("giveup", func(host string, v []byte) error {
		var g struct {
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal(v, &g); err != nil {
			return fmt.Errorf("giveup evidence of %s: %w", host, err)
		}
		res.GiveUps[host] = g.Reason
		return nil
	}); err != nil {
		tb.Fatalf("ForEachEvidence: %v", err)
	}
	if ctx.Err() != nil {
		tb.Errorf("crawl did not finish within %v (%d URLs still queued)", cfg.Timeout, fr.Stats().Queued)
	}
	if err := db.ForEachPage(func(p *storage.Page) error {
		res.Pages[p.URL] = p
		return nil
	}); err != nil {
		tb.Fatalf("ForEachPage: %v", err)
	}
	res.Skipped = map[string]*storage.Page{}
	if err := db.ForEachSkipped(func(p *storage.Page) error { res.Skipped[p.URL] = p; return nil }); err != nil {
		tb.Fatalf("ForEachSkipped: %v", err)
	}
	res.Hints = map[string]crawl.SitemapHint{}
	if err := crawl.SitemapHints(db, func(h crawl.SitemapHint) error { res.Hints[h.URL] = h; return nil }); err != nil {
		tb.Fatalf("SitemapHints: %v", err)
	}
	rd, err := crawl.ReportData(db, "", nil)
	if err != nil {
		tb.Fatalf("ReportData: %v", err)
	}
	res.Notes = rd.HostNotes
	res.Mirrors = rd.Mirrors
	res.Aliases = rd.Aliases
	res.Copies = rd.CopyPolicy
	res.Subtrees = rd.MissingSubtrees
	var text strings.Builder
	if err := report.WriteText(&text, rd); err != nil {
		tb.Fatalf("WriteText: %v", err)
	}
	res.Text = text.String()
	return res
}

// gapStats summarises one request sequence (one host, or one IP).
type gapStats struct {
	Requests  int
	MinArrive time.Duration // smallest gap between consecutive arrivals (-1 if < 2 requests)
	MinIdle   time.Duration // smallest gap from a completion to the next arrival (-1 if < 2)
	Overlaps  []string      // requests that arrived while the previous one was in flight
}

func measure(hits []hit) gapStats {
	s := gapStats{Requests: len(hits), MinArrive: -1, MinIdle: -1}
	for i := 1; i < len(hits); i++ {
		prev, cur := hits[i-1], hits[i]
		g := cur.Arrive.Sub(prev.Arrive)
		if s.MinArrive < 0 || g < s.MinArrive {
			s.MinArrive = g
		}
		idle := cur.Arrive.Sub(prev.Done)
		if s.MinIdle < 0 || idle < s.MinIdle {
			s.MinIdle = idle
		}
		if cur.Arrive.Before(prev.Done) {
			s.Overlaps = append(s.Overlaps, fmt.Sprintf("%s%s arrived %v before %s%s completed",
				cur.Host, cur.Path, prev.Done.Sub(cur.Arrive), prev.Host, prev.Path))
		}
	}
	return s
}

// assertSpaced fails the test when consecutive hits overlap or arrive less
// than want (minus clock noise) apart. what names the sequence.
func assertSpaced(tb testing.TB, what string, hits []hit, want time.Duration) gapStats {
	tb.Helper()
	s := measure(hits)
	for _, o := range s.Overlaps {
		tb.Errorf("%s: more than one request in flight: %s", what, o)
	}
	for i := 1; i < len(hits); i++ {
		if g := hits[i].Arrive.Sub(hits[i-1].Arrive); g < want-clockNoise {
			tb.Errorf("%s: %s%s arrived %v after %s%s, want >= %v",
				what, hits[i].Host, hits[i].Path, g.Round(time.Millisecond), hits[i-1].Host, hits[i-1].Path, want)
		}
	}
	return s
}

// openReport opens a crawl's data dir read-only (closed when the test ends)
// and returns its store and its report's data.
func openReport(tb testing.TB, dir string) (*storage.DB, *report.Data) {
	tb.Helper()
	db, err := storage.Open(dir, storage.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	rd, err := crawl.ReportData(db, "", nil)
	if err != nil {
		tb.Fatal(err)
	}
	return db, rd
}
