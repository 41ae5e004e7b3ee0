//go:build go1.25

// testing/synctest (Go 1.25) runs these tests on a fake clock; go.mod allows
// Go 1.24, where they are left out.

package frontier

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The politeness clocks under testing/synctest: inside a bubble time.Now and
// the frontier's timers run on a fake clock that moves only when every
// goroutine of the bubble is blocked, so the times a lease is granted are
// exact (no wall-clock slack) and the tests take no real time.

// lease is one granted lease: the item's URL and the bubble's time since
// the start.
type lease struct {
	url string
	at  time.Duration
}

// leaseTimes are the leases granted to each host, in order.
func leaseTimes(got []lease, host func(url string) string) map[string][]time.Duration {
	by := map[string][]time.Duration{}
	for _, l := range got {
		by[host(l.url)] = append(by[host(l.url)], l.at)
	}
	return by
}

// leaseAll runs workers that lease, hold each item for hold (the request),
// release it with the outcome out(item) gives, and finish it, until the
// frontier is done; it returns the leases in the order they were granted.
func leaseAll(t *testing.T, f *Frontier, s *memStore, workers int, hold time.Duration, out func(*Item) Outcome) []lease {
	t.Helper()
	start := time.Now()
	var mu sync.Mutex
	var got []lease
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				it, err := f.Next(context.Background())
				if errors.Is(err, ErrDone) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got = append(got, lease{it.Host + "/" + it.URL, time.Since(start)})
				mu.Unlock()
				time.Sleep(hold)
				o := out(it)
				if !f.Release(it, o) {
					s.del(it)
				}
				f.Finish(it)
			}
		})
	}
	wg.Wait()
	return got
}

func ok200(*Item) Outcome { return Outcome{Requested: true, Status: 200} }

func checkLeases(t *testing.T, got []lease, want []lease) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("leases %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("lease %d: %v, want %v (all: %v)", i, got[i], want[i], got)
		}
	}
}

// TestPoliteHostDelayExact: one host's requests start exactly Delay after the
// previous one ended (the clock restarts at Release), however many workers
// wait for it.
func TestPoliteHostDelayExact(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newMemStore()
		f, err := New(Options{Delay: 2 * time.Second}, s, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		enqueue(f, s, "a", "a1", "a2", "a3", "a4")
		got := leaseAll(t, f, s, 3, 300*time.Millisecond, ok200)
		gap := 2300 * time.Millisecond // a request (300 ms) and the delay
		checkLeases(t, got, []lease{{"a/a1", 0}, {"a/a2", gap}, {"a/a3", 2 * gap}, {"a/a4", 3 * gap}})
	})
}

// TestPoliteSharedIPExact: two hosts on one IP share its clock (their
// requests never overlap and are Delay apart, in turn), while a host on
// another IP keeps its own clock and is served alongside.
func TestPoliteSharedIPExact(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newMemStore()
		f, err := New(Options{Delay: time.Second}, s, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		enqueue(f, s, "a", "a1", "a2")
		enqueue(f, s, "b", "b1", "b2")
		enqueue(f, s, "c", "c1", "c2", "c3")
		f.SetPoliteKey("a", "10.0.0.1")
		f.SetPoliteKey("b", "10.0.0.1")
		f.SetPoliteKey("c", "10.0.0.2")
		got := leaseAll(t, f, s, 4, 500*time.Millisecond, ok200)
		at := map[string]time.Duration{}
		for _, l := range got {
			at[l.url] = l.at
		}
		// a and b alternate on 10.0.0.1, 1.5 s apart (request + delay);
		// c runs on its own clock at the same pace from 0.
		want := map[string]time.Duration{
			"a/a1": 0, "b/b1": 1500 * time.Millisecond, "a/a2": 3 * time.Second, "b/b2": 4500 * time.Millisecond,
			"c/c1": 0, "c/c2": 1500 * time.Millisecond, "c/c3": 3 * time.Second,
		}
		if len(at) != len(want) {
			t.Fatalf("leases %v, want %v", got, want)
		}
		for u, w := range want {
			if at[u] != w {
				t.Errorf("%s leased at %v, want %v (all: %v)", u, at[u], w, got)
			}
		}
	})
}

// TestPoliteCrawlDelayExact: a Crawl-delay longer than Delay sets the gap,
// and one above MaxDelay is capped to it exactly.
func TestPoliteCrawlDelayExact(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		crawlDelay time.Duration
		gap        time.Duration
		capped     bool
	}{
		{"shorter than delay", 500 * time.Millisecond, time.Second, false},
		{"longer", 3 * time.Second, 3 * time.Second, false},
		{"capped", time.Hour, 10 * time.Second, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				s := newMemStore()
				f, err := New(Options{Delay: time.Second, MaxDelay: 10 * time.Second}, s, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if capped := f.SetCrawlDelay("a", tt.crawlDelay); capped != tt.capped {
					t.Errorf("SetCrawlDelay(%v) capped = %v, want %v", tt.crawlDelay, capped, tt.capped)
				}
				enqueue(f, s, "a", "a1", "a2", "a3")
				got := leaseAll(t, f, s, 2, 0, ok200)
				checkLeases(t, got, []lease{{"a/a1", 0}, {"a/a2", tt.gap}, {"a/a3", 2 * tt.gap}})
			})
		})
	}
}

// TestPoliteBackoffDoublesToCap: each 503 in a row doubles the back-off from
// BackoffBase up to BackoffMax, with jitter on its upper half: the retry
// after failure i comes after d/2 .. d, d = min(base*2^(i-1), max), and never
// before Delay. A success resets it.
func TestPoliteBackoffDoublesToCap(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const (
			base    = 4 * time.Second
			maxBack = 30 * time.Second
			fails   = 6
		)
		s := newMemStore()
		f, err := New(Options{Delay: time.Second, BackoffBase: base, BackoffMax: maxBack, MaxFailures: 100}, s, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Many hosts, so the jitter is seen to span each step's range;
		// each host fails fails times in a row, succeeds, fails once more.
		const hosts = 40
		for h := range hosts {
			enqueue(f, s, string(rune('A'+h)), "x", "y")
		}
		tries := map[string]int{}
		var mu sync.Mutex
		got := leaseAll(t, f, s, 8, 0, func(it *Item) Outcome {
			mu.Lock()
			defer mu.Unlock()
			tries[it.Host]++
			if n := tries[it.Host]; n <= fails || n == fails+2 {
				return Outcome{Requested: true, Status: 503}
			}
			return Outcome{Requested: true, Status: 200}
		})
		if len(got) != hosts*(fails+3) {
			t.Fatalf("%d leases, want %d", len(got), hosts*(fails+3))
		}
		// Each host's leases: x failing fails times, x again (200), y
		// failing once, y again (200).
		byHost := leaseTimes(got, func(u string) string { return u[:1] })
		for step := 1; step <= fails; step++ {
			d := min(base<<(step-1), maxBack)
			lo, hi := time.Duration(1<<62), time.Duration(0)
			for h, at := range byHost {
				gap := at[step] - at[step-1]
				if gap < d/2 || gap > d {
					t.Fatalf("host %s: retry %d after %v, want %v .. %v", h, step, gap, d/2, d)
				}
				lo, hi = min(lo, gap), max(hi, gap)
			}
			// The jitter spreads the retries over the range.
			if lo > 3*d/4 || hi < 3*d/4 {
				t.Errorf("retry %d: gaps %v .. %v over %d hosts, all on one side of %v", step, lo, hi, hosts, 3*d/4)
			}
		}
		for h, at := range byHost {
			if gap := at[fails+1] - at[fails]; gap != time.Second {
				t.Errorf("host %s: after a success the next request came %v later, want the delay (1s)", h, gap)
			}
			// The success reset the count: the next failure backs off
			// from the base again.
			if gap := at[fails+2] - at[fails+1]; gap < base/2 || gap > base {
				t.Errorf("host %s: retry after a failure that followed a success came %v later, want %v .. %v", h, gap, base/2, base)
			}
		}
	})
}

// TestPoliteRetryAfterExact: a 429's Retry-After longer than the back-off
// holds the host exactly that long, capped at BackoffMax; the item is
// retried first, its Tries counted; after a success the delay applies again.
func TestPoliteRetryAfterExact(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newMemStore()
		f, err := New(Options{Delay: time.Second, BackoffBase: 2 * time.Second, BackoffMax: time.Minute}, s, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		enqueue(f, s, "a", "a1", "a2")
		tries := map[string]int{}
		outcomes := []Outcome{
			{Requested: true, Status: 429, RetryAfter: 20 * time.Second}, // honoured
			{Requested: true, Status: 429, RetryAfter: time.Hour},        // capped at BackoffMax
			{Requested: true, Status: 503, RetryAfter: 90 * time.Second}, // 503 too, capped
			{Requested: true, Status: 200},
			{Requested: true, Status: 200},
		}
		n := 0
		got := leaseAll(t, f, s, 2, 0, func(it *Item) Outcome {
			tries[it.URL] = it.Tries
			n++
			return outcomes[n-1]
		})
		checkLeases(t, got, []lease{
			{"a/a1", 0}, {"a/a1", 20 * time.Second}, {"a/a1", 80 * time.Second}, {"a/a1", 140 * time.Second},
			{"a/a2", 141 * time.Second},
		})
		if tries["a1"] != 3 || tries["a2"] != 0 {
			t.Errorf("tries %v, want a1 retried 3 times, a2 none", tries)
		}
	})
}

// The scheduler tests below assert that nothing is leased before a clock
// allows it by waiting on a context deadline: in the bubble that wait is
// exact and takes no real time (they waited 30-50 ms of wall time before).

func TestPolitenessDelayPerHostAndSharedIP(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := &clock{t: time.Unix(1000, 0)}
		s := newMemStore()
		f, _ := New(Options{Delay: time.Second}, s, c.now, nil)
		enqueue(f, s, "a", "a1", "a2")
		enqueue(f, s, "b", "b1")
		f.SetPoliteKey("a", "ip1")
		f.SetPoliteKey("b", "ip1")
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		it, err := f.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// While it is leased, the other host of the same IP must not be served.
		if _, err := f.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("second lease on a busy IP: %v", err)
		}
		f.Release(it, Outcome{Requested: true})
		s.del(it)
		f.Finish(it)
		ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel2()
		if _, err := f.Next(ctx2); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("lease before the delay passed: %v", err)
		}
		c.add(time.Second)
		it2, err := f.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if it2.Host == it.Host && it2.URL == it.URL {
			t.Fatal("same item leased twice")
		}
	})
}

func TestCrawlDelayCappedAndBackoffOn429(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := &clock{t: time.Unix(1000, 0)}
		s := newMemStore()
		f, _ := New(Options{Delay: time.Second, MaxDelay: 10 * time.Second, BackoffBase: 4 * time.Second, BackoffMax: time.Minute, MaxFailures: 3}, s, c.now, nil)
		if !f.SetCrawlDelay("a", time.Hour) {
			t.Error("a Crawl-delay of 1h should be capped")
		}
		enqueue(f, s, "a", "a1", "a2")
		it, _ := f.Next(context.Background())
		// 429 with Retry-After 20s: the item is requeued and the host waits 20s.
		f.Release(it, Outcome{Requested: true, Status: 429, RetryAfter: 20 * time.Second})
		f.Finish(it)
		c.add(19 * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		if _, err := f.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("leased during Retry-After: %v", err)
		}
		c.add(2 * time.Second)
		it2, err := f.Next(context.Background())
		if err != nil || it2.URL != "a1" || it2.Tries != 1 {
			t.Fatalf("after Retry-After got %+v, %v; want a1 again with Tries=1", it2, err)
		}
		// Crawl-delay (capped to 10s) applies after a success.
		f.Release(it2, Outcome{Requested: true, Status: 200})
		s.del(it2)
		f.Finish(it2)
		c.add(9 * time.Second)
		ctx3, cancel3 := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel3()
		if _, err := f.Next(ctx3); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("leased before capped Crawl-delay: %v", err)
		}
	})
}

func TestBlockedHostWaitsAndIsGivenUp(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := &clock{t: time.Unix(1000, 0)}
		s := newMemStore()
		f, _ := New(Options{Delay: 0, MaxFailures: 3}, s, c.now, nil)
		enqueue(f, s, "h", "h1")
		for i := 1; i <= 3; i++ {
			it, err := f.Next(context.Background())
			if err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
			requeued := f.Release(it, Outcome{Requested: i == 1, Requeue: true, Wait: time.Minute, Blocked: true})
			f.Finish(it)
			if i < 3 {
				if !requeued {
					t.Fatalf("round %d: blocked item not requeued", i)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
				if _, err := f.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("round %d: leased before the wait passed: %v", i, err)
				}
				cancel()
				c.add(time.Minute)
			} else if requeued {
				t.Fatal("host not given up after max failures")
			}
		}
		if g := f.GiveUps(); len(g) != 1 || !strings.Contains(g[0].Reason, "robots.txt unavailable") {
			t.Fatalf("give-ups %+v", g)
		}
		if _, err := f.Next(context.Background()); !errors.Is(err, ErrDone) {
			t.Fatalf("after give-up: %v", err)
		}
	})
}
