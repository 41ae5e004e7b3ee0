//go:build e2e

package redisstate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// Operations per second against a local redis-server (no persistence): the
// ns/op of each is per URL or per page.

// BenchmarkEnqueue: URLs marked seen and queued, 100 per pipeline (a page's
// links), 4 clients.
func BenchmarkEnqueue(b *testing.B) {
	srv := redistest.Start(b, redistest.Options{NoPersistence: true})
	c := openOn(b, srv, Options{Capacity: 10_000_000})
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(2) // 2 x GOMAXPROCS clients
	cpu0 := redisCPU(b, c)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ids := c.NewIDs()
		its := make([]frontier.Item, 0, 100)
		flush := func() {
			if _, err := c.Enqueue(ctx, ids, its); err != nil {
				b.Error(err)
			}
			its = its[:0]
		}
		for pb.Next() {
			i := next.Add(1)
			its = append(its, frontier.Item{URL: fmt.Sprintf("https://www.site%d.example.com/section/article-%d.html", i%2000, i),
				Via: "https://www.site1.example.com/", Depth: 2})
			if len(its) == cap(its) {
				flush()
			}
		}
		flush()
	})
	b.StopTimer()
	b.ReportMetric((redisCPU(b, c)-cpu0)*1e6/float64(b.N), "redis-cpu-µs/op")
}

// BenchmarkCheckAndAdd: distinct pages added to the duplicate index (6 keys,
// need 2), one script call each, 4 clients.
func BenchmarkCheckAndAdd(b *testing.B) {
	srv := redistest.Start(b, redistest.Options{NoPersistence: true})
	c := openOn(b, srv, Options{Pages: 10_000_000})
	ctx := context.Background()
	var next atomic.Uint64
	b.SetParallelism(2)
	cpu0 := redisCPU(b, c)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(next.Add(1<<40), 1))
		for pb.Next() {
			pg := &IndexPage{ID: next.Add(1), Exact: r.Uint64(), Simhash: r.Uint64(), Need: 2}
			for k := 0; k < 6; k++ {
				pg.Keys = append(pg.Keys, r.Uint64())
			}
			for k := 0; k < recordSamples; k++ {
				pg.Sketch = append(pg.Sketch, r.Uint64())
			}
			if _, err := c.CheckAndAdd(ctx, pg, nil, DedupOptions{}); err != nil {
				b.Error(err)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric((redisCPU(b, c)-cpu0)*1e6/float64(b.N), "redis-cpu-µs/op")
}

// BenchmarkPage: one page's shared-state cycle as a worker runs it, one
// client: pop, IP reserve and release, check-and-add, commit with 20 links.
func BenchmarkPage(b *testing.B) {
	srv := redistest.Start(b, redistest.Options{NoPersistence: true})
	c := openOn(b, srv, Options{Partitions: 1, Capacity: 10_000_000})
	ctx := context.Background()
	ids := c.NewIDs()
	if _, err := c.Enqueue(ctx, ids, items("https://www.a.example.com/")); err != nil {
		b.Fatal(err)
	}
	m, err := c.Join(ctx, "w", MemberOptions{TTL: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Leave(ctx)
	r := rand.New(rand.NewPCG(1, 1))
	cpu0 := redisCPU(b, c)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it, raw, ok, err := m.Pop(ctx, "www.a.example.com")
		if err != nil || !ok {
			b.Fatalf("pop: %v %v", ok, err)
		}
		res, _, _, err := c.ReserveIP(ctx, "127.0.0.1", "w", time.Minute)
		if err != nil || res == nil {
			b.Fatalf("reserve: %v", err)
		}
		if err := c.ReleaseIP(ctx, res, 0); err != nil {
			b.Fatal(err)
		}
		pg := &IndexPage{ID: it.ID, Exact: r.Uint64(), Simhash: r.Uint64(), Need: 2}
		for k := 0; k < 6; k++ {
			pg.Keys = append(pg.Keys, r.Uint64())
		}
		for k := 0; k < recordSamples; k++ {
			pg.Sketch = append(pg.Sketch, r.Uint64())
		}
		if _, err := c.CheckAndAdd(ctx, pg, nil, DedupOptions{}); err != nil {
			b.Fatal(err)
		}
		links := make([]frontier.Item, 20)
		for j := range links {
			links[j] = frontier.Item{URL: fmt.Sprintf("https://www.a.example.com/%d/%d", i, j), Via: it.URL, Depth: 1}
		}
		if _, err := c.Commit(ctx, m, ids, &it, raw, links); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	// The server's CPU (user + sys) per page: how many pages per second
	// one Redis core serves, whatever the load on the clients.
	b.ReportMetric((redisCPU(b, c)-cpu0)*1e6/float64(b.N), "redis-cpu-µs/page")
}

// redisCPU is the server's used_cpu_user + used_cpu_sys, in seconds.
func redisCPU(b *testing.B, c *Crawl) float64 {
	info, err := c.Client().Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range splitLines(info) {
		var v float64
		if n, _ := fmt.Sscanf(line, "used_cpu_user:%f", &v); n == 1 {
			total += v
		}
		if n, _ := fmt.Sscanf(line, "used_cpu_sys:%f", &v); n == 1 {
			total += v
		}
	}
	return total
}

// BenchmarkPolitenessBound: 16 goroutines (the engine's 8 workers in each of
// 2 processes) crawl 40 hosts (one IP each) with a 100 ms delay and 1 ms
// fetches, 20 URLs a host: pages per second against the politeness limit
// (hosts / delay = 400 pages/s), over the requests' span. "redis": 2 workers'
// Frontiers over Redis; "local": one frontier.Frontier in memory, the same
// load on the same machine, as the reference.
func BenchmarkPolitenessBound(b *testing.B) {
	const hosts, perHost, delay = 40, 20, 100 * time.Millisecond
	fo := frontier.Options{Delay: delay}
	b.Run("redis", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			srv := redistest.Start(b, redistest.Options{NoPersistence: true})
			c := openOn(b, srv, Options{Partitions: 16, Capacity: 100_000})
			ctx := context.Background()
			var its []frontier.Item
			for h := 0; h < hosts; h++ {
				for j := 0; j < perHost; j++ {
					its = append(its, frontier.Item{URL: fmt.Sprintf("http://h%d.example/%d", h, j)})
				}
			}
			if _, err := c.Enqueue(ctx, c.NewIDs(), its); err != nil {
				b.Fatal(err)
			}
			var qs []politeQueues
			var members []*Member
			for w := 0; w < 2; w++ {
				m, err := openOn(b, srv, Options{}).Join(ctx, fmt.Sprintf("w%d", w), MemberOptions{})
				if err != nil {
					b.Fatal(err)
				}
				members = append(members, m)
				qs = append(qs, m.c.NewFrontier(m, FrontierOptions{Options: fo}))
			}
			// The steady state, not the join: the second worker's share first.
			deadline := time.Now().Add(10 * time.Second)
			for (len(members[0].Owned()) != 8 || len(members[1].Owned()) != 8) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			b.StartTimer()
			politeRun(b, qs, hosts*perHost, hosts, delay)
			b.StopTimer()
			for _, m := range members {
				m.Leave(ctx)
			}
			b.StartTimer()
		}
	})
	b.Run("local", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			st := &listStore{q: map[string][]frontier.Item{}}
			for h := 0; h < hosts; h++ {
				host := fmt.Sprintf("h%d.example", h)
				for j := 0; j < perHost; j++ {
					st.q[host] = append(st.q[host], frontier.Item{URL: fmt.Sprintf("http://%s/%d", host, j), Host: host, Seq: uint64(j + 1)})
				}
			}
			f, err := frontier.New(fo, st, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			politeRun(b, []politeQueues{f}, hosts*perHost, hosts, delay)
		}
	})
}

// politeQueues is what politeRun drives: either frontier.
type politeQueues interface {
	Next(ctx context.Context) (*frontier.Item, error)
	Release(it *frontier.Item, o frontier.Outcome) bool
	Finish(it *frontier.Item)
}

// politeRun runs 16 goroutines over qs (round robin) until they are done and
// reports the rate over the requests' span.
func politeRun(b *testing.B, qs []politeQueues, want, hosts int, delay time.Duration) {
	ctx := context.Background()
	var pages atomic.Int64
	var mu sync.Mutex
	var first, last time.Time
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		q := qs[g%len(qs)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				it, err := q.Next(ctx)
				if err != nil {
					return
				}
				t0 := time.Now()
				time.Sleep(time.Millisecond)
				q.Release(it, frontier.Outcome{Requested: true, Status: 200})
				q.Finish(it)
				pages.Add(1)
				mu.Lock()
				if first.IsZero() || t0.Before(first) {
					first = t0
				}
				if t0.After(last) {
					last = t0
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if pages.Load() != int64(want) {
		b.Fatalf("%d pages, want %d", pages.Load(), want)
	}
	// Each host's requests span (per host - 1) gaps: the limit is reached
	// when every host's gaps follow each other without a pause.
	rate := float64(want-hosts) / last.Sub(first).Seconds()
	b.ReportMetric(rate, "pages/s")
	b.ReportMetric(rate/(float64(hosts)/delay.Seconds()), "of-limit")
}

// listStore is a frontier.Store over fixed queues (Seq in order).
type listStore struct {
	mu sync.Mutex
	q  map[string][]frontier.Item
}

func (s *listStore) QueueHosts() ([]frontier.HostInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []frontier.HostInfo
	for h, q := range s.q {
		out = append(out, frontier.HostInfo{Host: h, Count: len(q), MinSeq: q[0].Seq, MaxSeq: q[len(q)-1].Seq})
	}
	return out, nil
}

func (s *listStore) LoadQueue(host string, from uint64, n int) ([]frontier.Item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []frontier.Item
	for _, it := range s.q[host] {
		if it.Seq >= from && len(out) < n {
			out = append(out, it)
		}
	}
	return out, nil
}

// BenchmarkCommitScript: Redis's CPU for a store's commit (commitScript)
// with 0, 1, 5 and 20 new links (each: its alias hint checked absent, its
// mark, its push with its host, its skip record deleted) besides the page's
// summary and the end of its lease, one client, the server flushed before
// each size. (Grouping a hash's checks into one HMGET and its writes into
// one HSET, tried in session 13, cost more: 15 against 12 µs with no
// links, 36 against 20 with one, 245 against 184 with 20, load 11.)
func BenchmarkCommitScript(b *testing.B) {
	srv := redistest.Start(b, redistest.Options{NoPersistence: true})
	c := openOn(b, srv, Options{Partitions: 16, Capacity: 10_000_000})
	ctx := context.Background()
	for _, links := range []int{0, 1, 5, 20} {
		b.Run(fmt.Sprintf("links=%d", links), func(b *testing.B) {
			c.rdb.FlushAll(ctx)
			cpu0 := redisCPU(b, c)
			for i := 0; i < b.N; i++ {
				t := &seamTx{over: map[hkey]*string{}}
				for j := 0; j < links; j++ {
					host := fmt.Sprintf("h%d.example", j%3)
					u := fmt.Sprintf("http://%s/%d/%d", host, i, j)
					key, field := c.seenSlot(host, u)
					p := c.PartitionOf(host)
					t.put('A', c.evidenceKey("alias"), u, "")
					t.put('N', key, field, "12345")
					t.put('R', c.queueKey(p, host), "", EncodeItem(&frontier.Item{ID: 12345, URL: u, Via: "http://h0.example/", Depth: 2}))
					t.put('S', c.hostsKey(p), "", host)
					t.put('D', c.skipKey(u), u, "")
				}
				t.put('H', c.recordKey(uint64(i)), fmt.Sprint(i), `{"id":1,"url":"http://127.20.0.84:35435/p/14.html","status":200,"class":"unique","words":300,"k":"abc"}`)
				t.put('E', c.inflightKey(1), "raw", "1")
				idx := map[string]int{}
				var keys []string
				var args []any
				for _, op := range t.ops {
					k, ok := idx[op.key]
					if !ok {
						keys = append(keys, op.key)
						k = len(keys)
						idx[op.key] = k
					}
					args = append(args, string(op.code), k, op.field, op.value)
				}
				if err := commitScript.Run(ctx, c.rdb, keys, args...).Err(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((redisCPU(b, c)-cpu0)*1e6/float64(b.N), "redis-cpu-µs/op")
		})
	}
}
