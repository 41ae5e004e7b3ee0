package frontier

import (
	"context"
	"errors"
	"fmt"
	"sort"
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
