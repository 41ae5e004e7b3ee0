//go:build e2e && unix

package redisstate

import (
	"context"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// BenchmarkCheckLease: the lease check before a request, one client, as a
// worker's frontier runs it: its latency (ns/op, a round trip on loopback),
// the client process's CPU and the server's per check.
func BenchmarkCheckLease(b *testing.B) {
	srv := redistest.Start(b, redistest.Options{NoPersistence: true})
	c := openOn(b, srv, Options{Partitions: 1, Capacity: 1000})
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, c.NewIDs(), items("https://www.a.example.com/")); err != nil {
		b.Fatal(err)
	}
	m, err := c.Join(ctx, "w", MemberOptions{TTL: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Leave(ctx)
	f := c.NewFrontier(m, FrontierOptions{})
	it, err := f.Next(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.CheckLease(ctx, it); err != nil { // loads the script
		b.Fatal(err)
	}
	cpu0, rcpu0 := testtools.ProcessCPU(), redisCPU(b, c)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := f.CheckLease(ctx, it); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric((testtools.ProcessCPU()-cpu0).Seconds()*1e6/float64(b.N), "client-cpu-µs/op")
	b.ReportMetric((redisCPU(b, c)-rcpu0)*1e6/float64(b.N), "redis-cpu-µs/op")
}
