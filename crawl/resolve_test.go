//go:build go1.25

package crawl_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/parse"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// fakeResolver answers from Names; other names do not exist (NXDOMAIN). Block,
// when set, is called first and may hold the lookup (it must return when ctx
// ends). It counts lookups in flight and their peak. No lookup leaves the
// machine.
type fakeResolver struct {
	Names map[string][]string
	Block func(ctx context.Context, host string) error

	inflight, peak, calls atomic.Int64
}

func (r *fakeResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	n := r.inflight.Add(1)
	defer r.inflight.Add(-1)
	r.calls.Add(1)
	for {
		p := r.peak.Load()
		if n <= p || r.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if r.Block != nil {
		if err := r.Block(ctx, host); err != nil {
			return nil, &net.DNSError{Err: err.Error(), Name: host, IsTimeout: true}
		}
	}
	addrs, ok := r.Names[strings.ToLower(host)]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]net.IPAddr, len(addrs))
	for i, a := range addrs {
		out[i] = net.IPAddr{IP: net.ParseIP(a)}
	}
	return out, nil
}

// manyHostsFetcher serves a seed page linking n host names and answers every
// other URL with a DNS error, without sockets.
type manyHostsFetcher struct {
	seed string
	n    int
	hits atomic.Int64
}

func manyHostName(i int) string { return fmt.Sprintf("h%04d.horseshoe-nowhere.invalid", i) }

func (f *manyHostsFetcher) Fetch(ctx context.Context, rawURL string) (*fetch.Result, error) {
	f.hits.Add(1)
	if rawURL != f.seed {
		return nil, &fetch.Error{URL: rawURL, Class: fetch.ClassDNS, Err: &net.DNSError{Err: "no such host", IsNotFound: true}}
	}
	var links []string
	for i := range f.n {
		links = append(links, "http://"+manyHostName(i)+"/")
	}
	body := []byte(htmlPage("many hosts", "", links...))
	return &fetch.Result{URL: rawURL, FinalURL: rawURL, Status: 200, Header: http.Header{"Content-Type": {"text/html"}},
		RawBody: body, Body: body, ContentType: "text/html", IsHTML: true, FetchedAt: time.Now()}, nil
}

// lookupEngine builds an engine over a fake fetcher (no robots.txt) whose
// seed links n host names, with scope any.
func lookupEngine(tb testing.TB, n, maxLookups int, timeout time.Duration, res crawl.Resolver) (*crawl.Engine, *manyHostsFetcher, *frontier.Frontier) {
	tb.Helper()
	db, err := storage.Open(tb.TempDir(), storage.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	seed := "http://127.0.0.86/"
	f := &manyHostsFetcher{seed: seed, n: n}
	fr, err := frontier.New(frontier.Options{MaxFailures: 3, BackoffBase: 10 * time.Millisecond, BackoffMax: 10 * time.Millisecond}, db, nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	scope, err := frontier.NewScope(frontier.ScopeOptions{Mode: frontier.ScopeAny}, []string{seed})
	if err != nil {
		tb.Fatal(err)
	}
	det, err := dedup.New(dedup.DefaultOptions())
	if err != nil {
		tb.Fatal(err)
	}
	eng := crawl.New(crawl.Options{
		Workers: 8, MaxDepth: 3, Scope: scope, Trap: frontier.DefaultTrapOptions(),
		Parse:    parse.Options{BotName: robotsAgent, MaxTokens: 1 << 20},
		Resolver: res, MaxLookups: maxLookups, LookupTimeout: timeout,
	}, db, fr, f, nil, det, nil)
	if _, err := eng.Seed([]string{seed}); err != nil {
		tb.Fatal(err)
	}
	return eng, f, fr
}

// TestLookupsBoundedAndCancellable: a page linking 3,000 host names starts at
// most MaxLookups lookups at a time (it started 3,000 goroutines, one lookup
// each), and cancelling the crawl ends the blocked lookups at once (they ran
// on context.Background() with a 5 s timeout: Ctrl-C took 15 s). In a
// synctest bubble: synctest.Wait lets every lookup that can start start, and
// "at once" is no virtual time at all.
func TestLookupsBoundedAndCancellable(t *testing.T) {
	for _, bound := range []int{1, 7, 16} {
		t.Run(fmt.Sprint(bound), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				res := &fakeResolver{Block: func(ctx context.Context, _ string) error {
					<-ctx.Done()
					return ctx.Err()
				}}
				eng, _, _ := lookupEngine(t, 3000, bound, time.Hour, res)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan error, 1)
				go func() { done <- eng.Run(ctx, ctx) }()
				synctest.Wait() // the crawl is idle: every lookup that may start has started and blocks
				if got := res.peak.Load(); got > int64(bound) || res.inflight.Load() != int64(bound) {
					t.Errorf("peak %d, in flight %d concurrent lookups, want at most and exactly %d", got, res.inflight.Load(), bound)
				}
				start := time.Now()
				cancel()
				// A lookup the cancel does not end blocks until its hour-long
				// timeout: the bubble's clock shows it.
				if err := <-done; err != nil {
					t.Fatalf("Run: %v", err)
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("Run returned %v after the cancel, want at once, with lookups blocked", d)
				}
				if res.inflight.Load() != 0 {
					t.Errorf("%d lookups still in flight after Run returned", res.inflight.Load())
				}
			})
		})
	}
}

// TestLookupsFailingOrStuckDoNotHoldHosts: hosts whose lookup fails, or hangs
// past the lookup timeout, get a clock of their own and are crawled (here:
// recorded with the fetcher's DNS error); the crawl ends, in a synctest
// bubble where the lookup timeout is virtual.
func TestLookupsFailingOrStuckDoNotHoldHosts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 500
		res := &fakeResolver{Block: func(ctx context.Context, host string) error {
			var i int
			if _, err := fmt.Sscanf(host, "h%04d.", &i); err == nil && i%50 == 0 {
				<-ctx.Done() // stuck until the lookup timeout
				return ctx.Err()
			}
			return nil
		}}
		eng, f, fr := lookupEngine(t, n, 8, 50*time.Millisecond, res)
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		if err := eng.Run(ctx, ctx); err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatalf("crawl did not finish: %d queued", fr.Stats().Queued)
		}
		if got := f.hits.Load(); got < n+1 {
			t.Errorf("%d requests, want every one of the %d hosts tried after its lookup failed", got, n)
		}
		if p := res.peak.Load(); p > 8 {
			t.Errorf("peak %d concurrent lookups, want <= 8", p)
		}
	})
}

// TestLookupsBoundedCrawlWide: every lookup of a crawl Build wires shares one
// bound, DefaultMaxLookups in flight at once: the politeness lookups and the
// fetcher's (a dial by name for each robots.txt and page). The politeness
// pool alone kept to 16 while each worker's dial looked up on its own: about
// 65 sockets to port 53 at once. Real loopback servers, one IP per host name,
// with lookups answered by a resolver that holds each a moment.
func TestLookupsBoundedCrawlWide(t *testing.T) {
	const hosts = 48
	names := map[string][]string{}
	var links []string
	var log hitLog
	for i := range hosts {
		ip := fmt.Sprintf("127.0.1.%d", i+1)
		s := startServer(t, ip, (&site{Pages: map[string]page{
			"/robots.txt": {Body: "User-agent: *\nAllow: /\n"},
			"/":           {Body: htmlPage(fmt.Sprintf("host%d", i), "")},
		}}).handler(), &log)
		name := fmt.Sprintf("h%02d.lookups.test", i)
		names[name] = []string{ip}
		links = append(links, s.Base(name)+"/")
	}
	seed := startServer(t, "127.0.0.87", (&site{Pages: map[string]page{
		"/robots.txt": {Body: "User-agent: *\nAllow: /\n"},
		"/":           {Body: htmlPage("lookup seed", "", links...)},
	}}).handler(), &log)
	res := &fakeResolver{Names: names, Block: func(ctx context.Context, _ string) error {
		select {
		case <-time.After(5 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	r := runCrawl(t, crawlConfig{Workers: 64, ScopeAny: true, Resolver: res, Timeout: time.Minute}, seed.Base("127.0.0.87")+"/")
	if p := res.peak.Load(); p > crawl.DefaultMaxLookups {
		t.Errorf("%d lookups in flight at once, want at most %d", p, crawl.DefaultMaxLookups)
	}
	for _, l := range links {
		if p := r.Pages[l]; p == nil || p.Status != 200 {
			t.Errorf("%s: %+v, want fetched", l, p)
		}
	}
	t.Logf("%d lookups, peak %d in flight", res.calls.Load(), res.peak.Load())
}
