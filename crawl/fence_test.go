package crawl

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// leasedFrontier is a fake frontier whose lease checks answer from a
// script: check(n) is the answer to the n-th check (1-based).
type leasedFrontier struct {
	*fakeFrontier
	margin time.Duration
	check  func(n int64) error
	checks atomic.Int64
}

func (f *leasedFrontier) CheckLease(ctx context.Context, it *frontier.Item) error {
	return f.check(f.checks.Add(1))
}

func (f *leasedFrontier) FenceMargin() time.Duration { return f.margin }

var errGone = errors.New("lease gone")

// TestLeaseFenceRule: a fence asks at its first check; a passed check
// stands for a tenth of the margin (no round trip), past it the next check
// asks again; a failed check does not stand.
func TestLeaseFenceRule(t *testing.T) {
	if got := recheckAfter(time.Second); got != 100*time.Millisecond {
		t.Errorf("recheckAfter(1s) = %v, want 100ms", got)
	}
	fail := false
	lc := &leasedFrontier{margin: time.Second, check: func(int64) error {
		if fail {
			return errGone
		}
		return nil
	}}
	clock := time.Unix(1000, 0)
	f := &leaseFence{lc: lc, fresh: recheckAfter(lc.margin), now: func() time.Time { return clock }}
	ctx := context.Background()
	steps := []struct {
		advance time.Duration
		fail    bool
		asked   int64 // checks sent so far
		err     bool
	}{
		{0, false, 1, false},                     // the first check asks
		{50 * time.Millisecond, false, 1, false}, // fresh: stands
		{50 * time.Millisecond, false, 1, false}, // 100 ms: still stands
		{time.Millisecond, false, 2, false},      // 101 ms: asks again, passes
		{100 * time.Millisecond, true, 2, false}, // fresh from the re-check: stands even though Redis would say no
		{time.Millisecond, true, 3, true},        // stale: asks, fails
		{0, true, 4, true},                       // a failed check does not stand
		{0, false, 5, false},
	}
	for i, s := range steps {
		clock = clock.Add(s.advance)
		fail = s.fail
		err := f.check(ctx)
		if (err != nil) != s.err || lc.checks.Load() != s.asked {
			t.Errorf("step %d: err %v, %d checks asked; want err %v, %d", i, err, lc.checks.Load(), s.err, s.asked)
		}
	}
}

// fenceEngine is an engine over the fakes with a real fetcher and
// robots.txt cache, whose frontier's lease checks answer from check.
func fenceEngine(t *testing.T, check func(n int64) error, mod func(*fetch.Options)) (*Engine, *leasedFrontier) {
	t.Helper()
	det, err := dedup.New(dedup.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	fo := fetch.DefaultOptions()
	fo.Timeout = 10 * time.Second
	fo.NoFollowRedirects = true
	if mod != nil {
		mod(&fo)
	}
	f, err := fetch.New(fo, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	fr := &leasedFrontier{fakeFrontier: newFakeFrontier(), margin: time.Second, check: check}
	robots := fetch.NewRobotsCache(f, fetch.RobotsOptions{}, nil, nil)
	o := Options{MaxDepth: 10, ObeyRobots: true, RobotsAgent: "horseshoe"}
	return NewShared(o, fakeDB{newFakeStore()}, fr, f, robots, det, LocalIndex(det), nil), fr
}

// countingServer serves robots.txt and pages, counting requests by path.
func countingServer(t *testing.T) (*httptest.Server, func(path string) int64) {
	t.Helper()
	var mu sync.Mutex
	n := map[string]int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			w.Write([]byte("User-agent: *\nDisallow: /private\n"))
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><head><title>t</title></head><body><p>words and more words</p></body></html>"))
	}))
	t.Cleanup(srv.Close)
	return srv, func(p string) int64 { mu.Lock(); defer mu.Unlock(); return n[p] }
}

func leasedItem(raw string) *frontier.Item {
	return &frontier.Item{ID: 1, URL: raw, Host: frontier.HostKey(raw), Depth: 1, Seq: 1}
}

// TestRobotsLeaseChecked: robots.txt is requested only under a lease the
// check proves: a failed check sends nothing, caches nothing and releases
// the item as not requested (Requeue); once it passes robots.txt is
// requested once, and the cached rules cost no further check.
func TestRobotsLeaseChecked(t *testing.T) {
	srv, requests := countingServer(t)
	var fail atomic.Bool
	fail.Store(true)
	e, fr := fenceEngine(t, func(int64) error {
		if fail.Load() {
			return errGone
		}
		return nil
	}, nil)
	it := leasedItem(srv.URL + "/a")
	a := e.attempt(context.Background(), it)
	if !a.release.Requeue || a.release.Requested || a.fetched || requests("/robots.txt") != 0 || requests("/a") != 0 {
		t.Fatalf("lease gone: release %+v, fetched %v, robots.txt requested %d times, /a %d; want Requeue, nothing sent",
			a.release, a.fetched, requests("/robots.txt"), requests("/a"))
	}
	if n := fr.checks.Load(); n != 1 {
		t.Errorf("%d checks, want 1 (robots.txt's)", n)
	}
	fail.Store(false)
	a = e.attempt(context.Background(), it)
	if !a.release.Requeue || !a.release.Requested || requests("/robots.txt") != 1 {
		t.Fatalf("lease held: release %+v, robots.txt requested %d times; want it requested once and the URL requeued behind the politeness clock",
			a.release, requests("/robots.txt"))
	}
	checksBefore := fr.checks.Load()
	a = e.attempt(context.Background(), it)
	if !a.fetched || a.err != nil || requests("/a") != 1 || requests("/robots.txt") != 1 {
		t.Fatalf("the page: fetched %v, err %v, /a %d, robots.txt %d", a.fetched, a.err, requests("/a"), requests("/robots.txt"))
	}
	// The page: one check before its fetch; its connection (kept alive
	// from robots.txt's) came at once, so no second.
	if n := fr.checks.Load() - checksBefore; n != 1 {
		t.Errorf("the page cost %d lease checks, want 1", n)
	}
}

// slowDial resolves every name to 127.0.0.1 after delay.
type slowDial struct{ delay time.Duration }

func (r slowDial) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	time.Sleep(r.delay)
	return []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}}, nil
}

// TestPageLeaseRecheckedAfterSlowConnection: a page whose connection took
// longer than a tenth of the margin (a slow name lookup here) is checked
// again once it has it: the lease lost meanwhile stops the request, nothing
// sent, the item released as not requested.
func TestPageLeaseRecheckedAfterSlowConnection(t *testing.T) {
	srv, requests := countingServer(t)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, lost := range []bool{true, false} {
		e, fr := fenceEngine(t, func(n int64) error {
			if lost && n > 1 {
				return errGone // lost during the connection
			}
			return nil
		}, func(o *fetch.Options) { o.Resolver = slowDial{delay: 150 * time.Millisecond} })
		e.o.ObeyRobots = false
		target := "http://slow.test:" + port + "/p"
		before := requests("/p")
		a := e.attempt(context.Background(), leasedItem(target))
		sent := requests("/p") - before
		if n := fr.checks.Load(); n != 2 {
			t.Errorf("lost %v: %d checks, want 2 (before the fetch, after the slow connection)", lost, n)
		}
		if lost && (sent != 0 || a.fetched || !a.release.Requeue || a.release.Requested) {
			t.Errorf("lease lost during the connection: %d requests sent, fetched %v, release %+v; want none, Requeue", sent, a.fetched, a.release)
		}
		if !lost && (sent != 1 || !a.fetched || a.err != nil) {
			t.Errorf("lease held: %d requests, err %v", sent, a.err)
		}
	}
}
