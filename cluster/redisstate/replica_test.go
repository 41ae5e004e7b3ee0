//go:build e2e

package redisstate

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// A worker's simhash replica follows the new-page stream while four workers
// add 2,000 pages: it gets every page once, in order, and the lag from the
// add (Redis's clock) to the replica is measured.
func TestSimhashReplicaLag(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Pages: 10_000}, redistest.Options{NoPersistence: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n, writers = 2000, 4
	got := map[uint64]uint64{}
	var lags []time.Duration
	var mu sync.Mutex
	followed := make(chan error, 1)
	started := make(chan struct{})
	// reading is closed at the follower's first XREAD, which comes after
	// it took "$" to mean the stream's last entry.
	reading := make(chan struct{})
	c.Client().AddHook(firstCmd{name: "xread", seen: reading, once: &sync.Once{}})
	go func() {
		close(started)
		followed <- c.FollowNewPages(ctx, "$", func(p NewPage) {
			mu.Lock()
			defer mu.Unlock()
			if _, dup := got[p.ID]; dup {
				t.Errorf("page %d twice", p.ID)
			}
			got[p.ID] = p.Simhash
			lags = append(lags, time.Since(p.Added))
			if len(got) == n {
				cancel()
			}
		})
	}()
	<-started
	<-reading // the follower has read "$" (it was a 50 ms sleep)
	want := map[uint64]uint64{}
	var wmu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		cw := openOn(t, srv, Options{})
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 5))
			for i := w; i < n; i += writers {
				pg := page(uint64(i+1), 100_000+i, 6)
				pg.Simhash = r.Uint64()
				if _, err := cw.CheckAndAdd(ctx, pg, nil, DedupOptions{}); err != nil {
					t.Error(err)
					return
				}
				wmu.Lock()
				want[pg.ID] = pg.Simhash
				wmu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	select {
	case err := <-followed:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("follow: %v", err)
		}
	case <-time.After(hangBound):
		t.Fatalf("the replica has %d of %d pages after %v", len(got), n, hangBound)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, sh := range want {
		if got[id] != sh {
			t.Fatalf("page %d: replica has simhash %x, want %x", id, got[id], sh)
		}
	}
	if mem, err := c.Client().MemoryUsage(context.Background(), c.streamKey(), 0).Result(); err == nil {
		t.Logf("the stream: %.1f B an entry (MEMORY USAGE over %d entries)", float64(mem)/n, n)
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	t.Logf("replica lag over %d pages: median %v, p99 %v, max %v (Redis's clock at the add to the replica's apply)",
		len(lags), lags[len(lags)/2], lags[len(lags)*99/100], lags[len(lags)-1])
}

// A replica that falls behind the stream's cap is told so (ErrReplicaGap) and
// rebuilds from the page records.
func TestSimhashReplicaGap(t *testing.T) {
	t.Parallel()
	_, c := open(t, Options{Pages: 10_000}, redistest.Options{NoPersistence: true})
	ctx := context.Background()
	const n = 1000
	for i := 0; i < n; i++ {
		pg := page(uint64(i+1), 200_000+i, 6)
		if _, err := c.CheckAndAdd(ctx, pg, nil, DedupOptions{StreamLen: 100}); err != nil {
			t.Fatal(err)
		}
	}
	err := c.FollowNewPages(ctx, "0", func(NewPage) { t.Fatal("an entry read past the gap") })
	if !errors.Is(err, ErrReplicaGap) {
		t.Fatalf("following from the start of a trimmed stream: %v", err)
	}
	seen := map[uint64]bool{}
	if err := c.ForEachIndexed(ctx, func(id, _ uint64) error { seen[id] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Fatalf("rebuild found %d pages, want %d", len(seen), n)
	}
}

// firstCmd closes seen when its client first sends a command named name.
type firstCmd struct {
	name string
	seen chan struct{}
	once *sync.Once
}

func (h firstCmd) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h firstCmd) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == h.name {
			h.once.Do(func() { close(h.seen) })
		}
		return next(ctx, cmd)
	}
}

func (h firstCmd) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
