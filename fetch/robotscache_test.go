//go:build go1.25

package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/memnet"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type memStore struct {
	mu      sync.Mutex
	m       map[string]RobotsEntry
	loadErr error
	saves   int
}

func newMemStore() *memStore { return &memStore{m: make(map[string]RobotsEntry)} }

func (s *memStore) LoadRobots(host string) (RobotsEntry, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loadErr != nil {
		return RobotsEntry{}, false, s.loadErr
	}
	e, ok := s.m[host]
	return e, ok, nil
}

func (s *memStore) SaveRobots(host string, e RobotsEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[host] = e
	s.saves++
	return nil
}

// robotsServer serves /robots.txt through a swappable handler and counts requests to it.
type robotsServer struct {
	url  *url.URL
	hits atomic.Int32
	mu   sync.Mutex
	h    http.HandlerFunc
}

func newRobotsServer(tb testing.TB, h http.HandlerFunc) *robotsServer {
	tb.Helper()
	rs := &robotsServer{h: h}
	srv := newServer(tb, rs.handler())
	u, err := url.Parse(srv.URL + "/some/page")
	if err != nil {
		tb.Fatal(err)
	}
	rs.url = u
	return rs
}

// newMemRobotsServer is newRobotsServer on the in-memory network n, for a
// test in a synctest bubble (newMemFetcher fetches from it).
func newMemRobotsServer(n *memnet.Network, h http.HandlerFunc) *robotsServer {
	rs := &robotsServer{h: h}
	rs.url = &url.URL{Scheme: "http", Host: "127.0.0.1:" + n.Serve("127.0.0.1", rs.handler()), Path: "/some/page"}
	return rs
}

// newMemFetcher is newTestFetcher over the in-memory network n, closed
// (with n) when the test ends.
func newMemFetcher(tb testing.TB, n *memnet.Network, mod func(*Options)) *Fetcher {
	tb.Helper()
	tb.Cleanup(n.Close)
	return newTestFetcher(tb, func(o *Options) {
		o.Transport, o.Resolver = n.Transport(), n
		if mod != nil {
			mod(o)
		}
	})
}

func (rs *robotsServer) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			rs.hits.Add(1)
		}
		rs.mu.Lock()
		h := rs.h
		rs.mu.Unlock()
		h(w, r)
	})
}

func (rs *robotsServer) set(h http.HandlerFunc) {
	rs.mu.Lock()
	rs.h = h
	rs.mu.Unlock()
}

func serveRobots(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

const testRobots = "User-agent: *\nDisallow: /private\nCrawl-delay: 1.5\n"

func TestRobotsCacheStatuses(t *testing.T) {
	bigBody := "User-agent: *\nDisallow: /early\n" + strings.Repeat("# filler line of a large robots.txt file\n", (DefaultRobotsMaxSize/41)+10) + "Disallow: /late\n"
	redirector := func(hops int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			if n < hops {
				http.Redirect(w, r, "/robots.txt?n="+strconv.Itoa(n+1), http.StatusMovedPermanently)
				return
			}
			io.WriteString(w, testRobots)
		}
	}
	// looper redirects /robots.txt to via, and via back to /robots.txt, until the request
	// after the hops-th redirect, which gets the rules. via "/robots.txt" is a self-redirect.
	looper := func(via string, hops int32) http.HandlerFunc {
		var n atomic.Int32
		return func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) > hops {
				io.WriteString(w, testRobots)
				return
			}
			to := via
			if r.URL.Path == via {
				to = "/robots.txt"
			}
			http.Redirect(w, r, to, http.StatusFound)
		}
	}
	tests := []struct {
		name        string
		handler     http.HandlerFunc
		unavailable bool
		private     bool // Allowed(/private)
		early, late bool // Allowed(/early), Allowed(/late)
	}{
		{"200 rules", serveRobots(200, testRobots), false, false, true, true},
		{"404 allows all", serveRobots(404, "not found"), false, true, true, true},
		{"403 allows all", serveRobots(403, "forbidden"), false, true, true, true},
		{"503 disallows all", serveRobots(503, testRobots), true, false, false, false},
		{"500 disallows all", serveRobots(500, ""), true, false, false, false},
		{"429 disallows all", serveRobots(429, ""), true, false, false, false},
		{"5 redirects followed", redirector(5), false, false, true, true},
		{"6 redirects: treated as unavailable file", redirector(6), false, true, true, true},
		{"self-redirect followed 5 times", looper("/robots.txt", 5), false, false, true, true},
		{"loop through another URL followed 5 hops", looper("/elsewhere", 5), false, false, true, true},
		{"loop of 6 hops: treated as unavailable file", looper("/elsewhere", 6), false, true, true, true},
		{"body over 500 KiB parsed up to the limit", serveRobots(200, bigBody), false, true, false, true},
		{"timeout disallows all", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, true, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// In a bubble, the 300ms timeout is the bubble's: only the
			// handler that never answers meets it, however loaded the
			// machine.
			synctest.Test(t, func(t *testing.T) {
				n := memnet.New()
				rs := newMemRobotsServer(n, tt.handler)
				f := newMemFetcher(t, n, func(o *Options) { o.Timeout = 300 * time.Millisecond })
				c := NewRobotsCache(f, RobotsOptions{}, nil, newFakeClock().Now)
				r, fetched, err := c.Get(context.Background(), rs.url)
				if err != nil || !fetched {
					t.Fatalf("Get: fetched %v err %v", fetched, err)
				}
				if r.Unavailable() != tt.unavailable {
					t.Errorf("Unavailable = %v, want %v", r.Unavailable(), tt.unavailable)
				}
				for _, chk := range []struct {
					path string
					want bool
				}{{"/private", tt.private}, {"/early", tt.early}, {"/late", tt.late}} {
					if got := r.Allowed("horseshoe", chk.path); got != chk.want {
						t.Errorf("Allowed(%s) = %v, want %v", chk.path, got, chk.want)
					}
				}
				hits := rs.hits.Load()
				if _, fetched, _ := c.Get(context.Background(), rs.url); fetched || rs.hits.Load() != hits {
					t.Errorf("second Get fetched again (fetched %v, hits %d -> %d)", fetched, hits, rs.hits.Load())
				}
			})
		})
	}
}

func TestRobotsCacheRetryAndTTL(t *testing.T) {
	rs := newRobotsServer(t, serveRobots(503, ""))
	f := newTestFetcher(t, nil)
	clock := newFakeClock()
	c := NewRobotsCache(f, RobotsOptions{TTL: time.Hour, RetryInterval: time.Minute}, nil, clock.Now)
	ctx := context.Background()

	steps := []struct {
		name        string
		advance     time.Duration
		handler     http.HandlerFunc
		wantFetched bool
		wantPrivate bool
		wantPublic  bool
	}{
		{"503: disallow all", 0, nil, true, false, false},
		{"within retry interval: cached", 30 * time.Second, serveRobots(200, testRobots), false, false, false},
		{"after retry interval: recovered", 31 * time.Second, nil, true, false, true},
		{"within TTL: cached", 59 * time.Minute, serveRobots(404, ""), false, false, true},
		{"after TTL: refetched", 2 * time.Minute, nil, true, true, true},
	}
	for _, s := range steps {
		clock.Advance(s.advance)
		if s.handler != nil {
			rs.set(s.handler)
		}
		r, fetched, err := c.Get(ctx, rs.url)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if fetched != s.wantFetched || r.Allowed("horseshoe", "/private") != s.wantPrivate || r.Allowed("horseshoe", "/public") != s.wantPublic {
			t.Errorf("%s: fetched %v private %v public %v", s.name, fetched, r.Allowed("horseshoe", "/private"), r.Allowed("horseshoe", "/public"))
		}
	}
	if d, ok := ParseRobots(200, []byte(testRobots)).CrawlDelay("horseshoe"); !ok || d != 1500*time.Millisecond {
		t.Errorf("CrawlDelay = %v %v", d, ok)
	}
}

// TestRobotsCacheSingleFlight: Gets of one host while its robots.txt is
// being fetched wait for that fetch: one request, one Get told it fetched.
// In a bubble, synctest.Wait holds the gate until every Get is waiting.
func TestRobotsCacheSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		n := memnet.New()
		rs := newMemRobotsServer(n, func(w http.ResponseWriter, r *http.Request) {
			<-gate
			io.WriteString(w, testRobots)
		})
		f := newMemFetcher(t, n, func(o *Options) { o.Timeout = 5 * time.Second })
		c := NewRobotsCache(f, RobotsOptions{}, nil, nil)
		const getters = 20
		var wg sync.WaitGroup
		var fetchedCount atomic.Int32
		errs := make(chan error, getters)
		for range getters {
			wg.Go(func() {
				r, fetched, err := c.Get(context.Background(), rs.url)
				if err != nil {
					errs <- err
					return
				}
				if fetched {
					fetchedCount.Add(1)
				}
				if r.Allowed("horseshoe", "/private") {
					errs <- errors.New("rules not applied")
				}
			})
		}
		synctest.Wait() // every Get waits: the leader in the handler, the others behind it
		if h := rs.hits.Load(); h != 1 {
			t.Errorf("%d requests while %d Gets wait, want 1", h, getters)
		}
		close(gate)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if rs.hits.Load() != 1 || fetchedCount.Load() != 1 {
			t.Errorf("hits %d, fetched reported %d times; want 1 and 1", rs.hits.Load(), fetchedCount.Load())
		}
	})
}

// TestRobotsCacheLeaderCanceled: when the Get that fetches is canceled, a
// Get waiting behind it fetches in its place.
func TestRobotsCacheLeaderCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		n := memnet.New()
		rs := newMemRobotsServer(n, func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				<-r.Context().Done() // first request: hang until the leader gives up
				return
			}
			io.WriteString(w, testRobots)
		})
		f := newMemFetcher(t, n, func(o *Options) { o.Timeout = 5 * time.Second })
		c := NewRobotsCache(f, RobotsOptions{}, nil, nil)

		leaderCtx, cancel := context.WithCancel(context.Background())
		leaderDone := make(chan error, 1)
		go func() {
			_, _, err := c.Get(leaderCtx, rs.url)
			leaderDone <- err
		}()
		synctest.Wait() // the leader's request is in the handler
		waiterDone := make(chan error, 1)
		go func() {
			r, fetched, err := c.Get(context.Background(), rs.url)
			if err == nil && (!fetched || r.Allowed("horseshoe", "/private")) {
				err = fmt.Errorf("waiter: fetched %v, rules applied %v", fetched, !r.Allowed("horseshoe", "/private"))
			}
			waiterDone <- err
		}()
		synctest.Wait() // the waiter waits behind the leader
		if got := calls.Load(); got != 1 {
			t.Fatalf("%d requests before the cancel, want 1 (the leader's)", got)
		}
		cancel()
		if err := <-leaderDone; !errors.Is(err, context.Canceled) {
			t.Errorf("leader err = %v, want context.Canceled", err)
		}
		if err := <-waiterDone; err != nil {
			t.Error(err)
		}
		if got := calls.Load(); got != 2 {
			t.Errorf("%d requests, want 2 (the canceled leader's, the waiter's)", got)
		}
	})
}

func TestRobotsCacheStore(t *testing.T) {
	rs := newRobotsServer(t, serveRobots(200, testRobots))
	f := newTestFetcher(t, nil)
	clock := newFakeClock()
	store := newMemStore()
	ctx := context.Background()

	c1 := NewRobotsCache(f, RobotsOptions{TTL: time.Hour}, store, clock.Now)
	if _, fetched, err := c1.Get(ctx, rs.url); err != nil || !fetched {
		t.Fatalf("first Get: fetched %v err %v", fetched, err)
	}
	e, ok := store.m[RobotsKey(rs.url)]
	if !ok || e.Status != 200 || string(e.Body) != testRobots || !e.FetchedAt.Equal(clock.Now()) || e.Err != "" {
		t.Fatalf("stored entry %+v (found %v)", e, ok)
	}

	// A new cache (a restart) reuses the stored entry while it is fresh.
	clock.Advance(30 * time.Minute)
	c2 := NewRobotsCache(f, RobotsOptions{TTL: time.Hour}, store, clock.Now)
	r, fetched, err := c2.Get(ctx, rs.url)
	if err != nil || fetched || rs.hits.Load() != 1 || r.Allowed("horseshoe", "/private") {
		t.Fatalf("restart: fetched %v err %v hits %d", fetched, err, rs.hits.Load())
	}
	// Once stale, it is fetched again.
	clock.Advance(31 * time.Minute)
	c3 := NewRobotsCache(f, RobotsOptions{TTL: time.Hour}, store, clock.Now)
	if _, fetched, _ := c3.Get(ctx, rs.url); !fetched || rs.hits.Load() != 2 {
		t.Fatalf("stale store entry not refetched: fetched %v hits %d", fetched, rs.hits.Load())
	}
	// A failing store does not prevent fetching.
	store.loadErr = errors.New("disk on fire")
	c4 := NewRobotsCache(f, RobotsOptions{}, store, clock.Now)
	if r, fetched, err := c4.Get(ctx, rs.url); err != nil || !fetched || r.Allowed("horseshoe", "/private") {
		t.Fatalf("failing store: fetched %v err %v", fetched, err)
	}
}

func TestRobotsFromEntry(t *testing.T) {
	tests := []struct {
		name        string
		e           RobotsEntry
		unavailable bool
		private     bool
	}{
		{"network error", RobotsEntry{Err: "connect: refused"}, true, false},
		{"200", RobotsEntry{Status: 200, Body: []byte(testRobots)}, false, false},
		{"404", RobotsEntry{Status: 404}, false, true},
		{"503", RobotsEntry{Status: 503}, true, false},
		{"redirect limit", RobotsEntry{Status: 301, Err: "redirect: too many redirects"}, false, true},
	}
	for _, tt := range tests {
		r := RobotsFromEntry(tt.e, 0)
		if r.Unavailable() != tt.unavailable || r.Allowed("horseshoe", "/private") != tt.private {
			t.Errorf("%s: unavailable %v private %v", tt.name, r.Unavailable(), r.Allowed("horseshoe", "/private"))
		}
	}
}

func TestRobotsCacheNetworkErrorAndCancel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	f := newTestFetcher(t, nil)
	store := newMemStore()
	c := NewRobotsCache(f, RobotsOptions{}, store, newFakeClock().Now)
	u, _ := url.Parse("http://" + addr + "/x")
	r, fetched, err := c.Get(context.Background(), u)
	if err != nil || !fetched || !r.Unavailable() || r.Allowed("horseshoe", "/x") {
		t.Fatalf("refused: fetched %v err %v unavailable %v", fetched, err, r.Unavailable())
	}
	if e := store.m[RobotsKey(u)]; e.Status != 0 || !strings.Contains(e.Err, "connect") {
		t.Errorf("stored %+v", e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	u2, _ := url.Parse("http://other.invalid/")
	if _, _, err := c.Get(ctx, u2); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled Get err = %v", err)
	}
}

func TestRobotsKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://Example.COM/a", "http://example.com"},
		{"http://example.com:80/a", "http://example.com"},
		{"https://example.com:443/", "https://example.com"},
		{"http://example.com:8080/", "http://example.com:8080"},
		{"https://example.com:80/", "https://example.com:80"},
		{"HTTP://[::1]:80/", "http://[::1]"},
		{"http://[::1]:8080/", "http://[::1]:8080"},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := RobotsKey(u); got != tt.want {
			t.Errorf("RobotsKey(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
