package frontier

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// memStore is an in-memory Store for scheduler tests.
type memStore struct {
	mu sync.Mutex
	q  map[string][]Item
}

func newMemStore() *memStore { return &memStore{q: map[string][]Item{}} }

func (m *memStore) put(it Item) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.q[it.Host] = append(m.q[it.Host], it)
	sort.Slice(m.q[it.Host], func(i, j int) bool { return m.q[it.Host][i].Seq < m.q[it.Host][j].Seq })
}

func (m *memStore) del(it *Item) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.q[it.Host]
	for i := range q {
		if q[i].Seq == it.Seq {
			m.q[it.Host] = append(q[:i:i], q[i+1:]...)
			return
		}
	}
}

func (m *memStore) QueueHosts() ([]HostInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []HostInfo
	for h, q := range m.q {
		if len(q) > 0 {
			out = append(out, HostInfo{Host: h, Count: len(q), MinSeq: q[0].Seq, MaxSeq: q[len(q)-1].Seq})
		}
	}
	return out, nil
}

func (m *memStore) LoadQueue(host string, from uint64, n int) ([]Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Item
	for _, it := range m.q[host] {
		if it.Seq >= from && len(out) < n {
			out = append(out, it)
		}
	}
	return out, nil
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func enqueue(f *Frontier, s *memStore, host string, urls ...string) {
	for _, u := range urls {
		it := Item{URL: u, Host: host, Seq: f.Assign(host)}
		s.put(it)
		f.Push(it)
	}
}

func TestBreadthFirstAndFairAcrossHosts(t *testing.T) {
	s := newMemStore()
	f, err := New(Options{Delay: 0, HeadSize: 2}, s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	enqueue(f, s, "a", "a1", "a2", "a3", "a4", "a5")
	enqueue(f, s, "b", "b1", "b2")
	var got []string
	ctx := context.Background()
	for {
		it, err := f.Next(ctx)
		if errors.Is(err, ErrDone) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, it.URL)
		f.Release(it, Outcome{Requested: true})
		s.del(it)
		f.Finish(it)
	}
	want := fmt.Sprint([]string{"a1", "b1", "a2", "b2", "a3", "a4", "a5"})
	if fmt.Sprint(got) != want {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestPolitenessDelayPerHostAndSharedIP(t *testing.T) {
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
}

func TestCrawlDelayCappedAndBackoffOn429(t *testing.T) {
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
}

func TestGiveUpAfterFailures(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	s := newMemStore()
	f, _ := New(Options{Delay: 0, BackoffBase: time.Second, BackoffMax: time.Second, MaxFailures: 2}, s, c.now, nil)
	enqueue(f, s, "bad", "x1", "x2")
	for i := 0; i < 2; i++ {
		it, err := f.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		f.Release(it, Outcome{Requested: true, Status: 503})
		f.Finish(it)
		c.add(2 * time.Second)
	}
	if _, err := f.Next(context.Background()); !errors.Is(err, ErrDone) {
		t.Fatalf("host not given up: %v", err)
	}
	g := f.GiveUps()
	if len(g) != 1 || g[0].Host != "bad" {
		t.Fatalf("give-ups %+v", g)
	}
}

func TestBudgetsAndRestartFromStore(t *testing.T) {
	s := newMemStore()
	f, _ := New(Options{MaxPagesPerHost: 2}, s, nil, nil)
	enqueue(f, s, "a", "a1", "a2", "a3")
	n := 0
	for {
		it, err := f.Next(context.Background())
		if err != nil {
			break
		}
		n++
		f.Release(it, Outcome{Requested: true})
		s.del(it)
		f.Finish(it)
	}
	if n != 2 {
		t.Fatalf("per-host budget: leased %d, want 2", n)
	}
	// A new frontier over the same store sees the one URL left, and new
	// sequence numbers continue after the stored ones.
	f2, err := New(Options{HeadSize: 1}, s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := f2.Stats(); st.Queued != 1 {
		t.Fatalf("restart: queued %d, want 1", st.Queued)
	}
	if seq := f2.Assign("a"); seq <= 3 {
		t.Fatalf("restart: seq %d reuses a stored one", seq)
	}
	it, err := f2.Next(context.Background())
	if err != nil || it.URL != "a3" {
		t.Fatalf("restart: got %+v %v", it, err)
	}
}

func TestNoDoubleLeaseUnderConcurrency(t *testing.T) {
	s := newMemStore()
	f, _ := New(Options{HeadSize: 3}, s, nil, nil)
	for h := 0; h < 20; h++ {
		host := fmt.Sprintf("h%d", h)
		for i := 0; i < 10; i++ {
			enqueue(f, s, host, fmt.Sprintf("%s/%d", host, i))
		}
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	inflight := map[string]bool{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				it, err := f.Next(context.Background())
				if err != nil {
					return
				}
				mu.Lock()
				if seen[it.URL] {
					t.Errorf("%s leased twice", it.URL)
				}
				if inflight[it.Host] {
					t.Errorf("two leases in flight for %s", it.Host)
				}
				seen[it.URL], inflight[it.Host] = true, true
				mu.Unlock()
				time.Sleep(100 * time.Microsecond)
				mu.Lock()
				inflight[it.Host] = false
				mu.Unlock()
				f.Release(it, Outcome{Requested: true})
				s.del(it)
				f.Finish(it)
			}
		}()
	}
	wg.Wait()
	if len(seen) != 200 {
		t.Fatalf("leased %d, want 200", len(seen))
	}
}

func TestBlockedHostWaitsAndIsGivenUp(t *testing.T) {
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
}

// TestNextStopsOnCancelledContext: a cancelled context leases nothing, even
// when URLs are ready at once (the first Ctrl-C stops leasing; after the
// second, a requeued item must not be leased again and again).
func TestNextStopsOnCancelledContext(t *testing.T) {
	s := newMemStore()
	f, err := New(Options{Delay: 0}, s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	enqueue(f, s, "a", "a1", "a2")
	enqueue(f, s, "b", "b1")
	ctx, cancel := context.WithCancel(context.Background())
	it, err := f.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	// The item in flight is requeued by its cancelled request: ready again.
	f.Release(it, Outcome{Requeue: true})
	f.Finish(it)
	for i := 0; i < 3; i++ {
		if it, err := f.Next(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Next after cancel: item %v, err %v; want context.Canceled", it, err)
		}
	}
	if st := f.Stats(); st.Queued != 3 || st.Active != 0 {
		t.Errorf("after cancel: queued %d active %d, want 3 and 0", st.Queued, st.Active)
	}
}
