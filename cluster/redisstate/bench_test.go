package redisstate

import (
	"context"
	"fmt"
	"math/rand/v2"
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
