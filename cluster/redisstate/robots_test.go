//go:build e2e

package redisstate

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// robotsHosts starts n loopback servers (distinct hosts: distinct ports)
// serving a robots.txt, and a log of the robots.txt requests per host.
func robotsHosts(t *testing.T, n int) ([]*url.URL, func() map[string]int) {
	var mu sync.Mutex
	log := map[string]int{}
	var urls []*url.URL
	for i := 0; i < n; i++ {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				mu.Lock()
				log[r.Host]++
				mu.Unlock()
				w.Write([]byte("User-agent: *\nDisallow: /private/\n"))
				return
			}
			w.Write([]byte("page"))
		}))
		t.Cleanup(srv.Close)
		u, _ := url.Parse(srv.URL + "/page")
		urls = append(urls, u)
	}
	return urls, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range log {
			out[k] = v
		}
		return out
	}
}

// robotsOf is a worker process's robots.txt cache over the crawl's store.
func robotsOf(t *testing.T, c *Crawl, m *Member) *fetch.RobotsCache {
	f, err := fetch.New(fetch.DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return fetch.NewRobotsCache(f, fetch.RobotsOptions{TTL: time.Hour}, c.NewRobotsStore(m), nil)
}

// TestRobotsStoreOncePerHostAndLease: workers whose leases do not move
// fetch each host's robots.txt once (the servers' own log), however many
// times they ask and when a worker process starts afresh with the same
// leases (its in-memory cache gone: the entry comes from Redis); the rules
// are the fetched file's. When a worker leaves, the holder of its
// partitions (a new lease) fetches those hosts' robots.txt once more, and
// only those. The leases are held a minute (renewed every 200 ms, which
// paces the fair share and the takeover): a heartbeat descheduled past a
// TTL of 600 ms moved a lease, and its hosts' robots.txt was fetched again.
func TestRobotsStoreOncePerHostAndLease(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 8}, redistest.Options{NoPersistence: true})
	ctx := context.Background()
	o := MemberOptions{TTL: time.Minute, Heartbeat: 200 * time.Millisecond}
	a, err := c.Join(ctx, "a", o)
	if err != nil {
		t.Fatal(err)
	}
	cb := openOn(t, srv, Options{})
	b, err := cb.Join(ctx, "b", o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Leave(ctx)
	waitFor(t, hangBound, "a fair share", func() bool { return len(a.Owned()) == 4 && len(b.Owned()) == 4 })
	urls, requests := robotsHosts(t, 24)
	owner := func(u *url.URL) (*Crawl, *Member) {
		for _, l := range a.Owned() {
			if l.Partition == c.PartitionOf(u.Host) {
				return c, a
			}
		}
		return cb, b
	}
	caches := map[*Member]*fetch.RobotsCache{a: robotsOf(t, c, a), b: robotsOf(t, cb, b)}
	ask := func(round string) {
		for _, u := range urls {
			_, m := owner(u)
			r, _, err := caches[m].Get(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Allowed("horseshoe", "/page") || r.Allowed("horseshoe", "/private/x") {
				t.Fatalf("%s: %s: the rules are not the fetched file's", round, u.Host)
			}
		}
	}
	ask("first")
	ask("again")
	// Fresh processes on the same leases: their caches are empty.
	caches[a], caches[b] = robotsOf(t, c, a), robotsOf(t, cb, b)
	ask("fresh caches")
	got := requests()
	for _, u := range urls {
		if got[u.Host] != 1 {
			t.Fatalf("%s: %d robots.txt requests while leases did not move, want 1", u.Host, got[u.Host])
		}
	}
	var movedHosts []string
	for _, u := range urls {
		if _, m := owner(u); m == a {
			movedHosts = append(movedHosts, u.Host)
		}
	}
	a.Leave(ctx)
	waitFor(t, hangBound, "takeover", func() bool { return len(b.Owned()) == 8 })
	ask("after a left")
	got = requests()
	moved := map[string]bool{}
	for _, h := range movedHosts {
		moved[h] = true
	}
	for _, u := range urls {
		want := 1
		if moved[u.Host] {
			want = 2
		}
		if got[u.Host] != want {
			t.Fatalf("%s (moved %v): %d robots.txt requests, want %d", u.Host, moved[u.Host], got[u.Host], want)
		}
	}
	t.Logf("%d hosts: one robots.txt request each while leases held; the %d hosts of the partitions that moved: one more", len(urls), len(movedHosts))
}
