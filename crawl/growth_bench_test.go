package crawl_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// growthHosts is the number of hosts the synthetic URLs are spread over.
const growthHosts = 100

// linksPerPage is how many new URLs one committed page contributes.
const linksPerPage = 50

// enqueuePage does what the engine's commit does for one page's new links:
// canonicalize, check and mark seen, assign a queue sequence number and write
// the queue entry, all in one transaction, then push the items.
func enqueuePage(db *storage.DB, fr *frontier.Frontier, next *int, items []frontier.Item) ([]frontier.Item, error) {
	err := db.Update(func(tx *storage.Tx) error {
		items = items[:0]
		for range linksPerPage {
			n := *next
			*next++
			raw := fmt.Sprintf("http://h%03d.example/section/%d/page-%d.html?ref=%d#top", n%growthHosts, n/1000, n, n%7)
			cu, err := frontier.Canonicalize(raw, nil)
			if err != nil {
				return err
			}
			if _, seen, err := tx.SeenID(cu); err != nil || seen {
				return err
			}
			host := frontier.HostKey(cu)
			it := frontier.Item{ID: tx.NewID(), URL: cu, Depth: 3, Via: "http://h000.example/", Host: host, Seq: fr.Assign(host)}
			if err := tx.MarkSeen(cu, it.ID); err != nil {
				return err
			}
			if err := tx.PutQueue(it); err != nil {
				return err
			}
			items = append(items, it)
		}
		return nil
	})
	if err != nil {
		return items, err
	}
	fr.Push(items...)
	return items, nil
}

// leasePage leases linksPerPage items and records them done (queue entries
// deleted in one transaction), as the engine does for fetched pages.
func leasePage(ctx context.Context, db *storage.DB, fr *frontier.Frontier, leased []*frontier.Item) ([]*frontier.Item, error) {
	leased = leased[:0]
	for range linksPerPage {
		it, err := fr.Next(ctx)
		if err != nil {
			return leased, err
		}
		fr.Release(it, frontier.Outcome{Requested: true, Status: 200})
		leased = append(leased, it)
	}
	err := db.Update(func(tx *storage.Tx) error {
		for _, it := range leased {
			if err := tx.DeleteQueue(it.Host, it.Seq); err != nil {
				return err
			}
		}
		return nil
	})
	for _, it := range leased {
		fr.Finish(it)
	}
	return leased, err
}

func rssKB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	var kb int64
	for line := range strings.SplitSeq(string(b), "\n") {
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kb); err == nil {
			return kb
		}
	}
	return 0
}

// BenchmarkFrontierGrowth: the crawl's per-URL bookkeeping (canonicalize,
// seen check, queue write in Badger, frontier push; then lease, release,
// queue delete) when n URLs are already queued on a real Badger store in a
// temporary directory. One op is one page: 50 new URLs enqueued and 50 leased.
// 10 k, 100 k, 1 M and 3 M queued URLs over 100 hosts.
func BenchmarkFrontierGrowth(b *testing.B) {
	sizes := []int{10_000, 100_000, 1_000_000, 3_000_000}
	if f := flag.Lookup("test.benchtime"); f != nil && f.Value.String() == "1x" {
		sizes = sizes[:1] // make bench-smoke: keep it compiling and quick
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("queued=%s", growthLabel(n)), func(b *testing.B) {
			db, err := storage.Open(b.TempDir(), storage.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			fr, err := frontier.New(frontier.Options{MaxDelay: time.Second, BackoffBase: time.Second}, db, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			runtime.GC()
			var m0 runtime.MemStats
			runtime.ReadMemStats(&m0)
			next := 0
			var items []frontier.Item
			start := time.Now()
			for next < n {
				if items, err = enqueuePage(db, fr, &next, items); err != nil {
					b.Fatal(err)
				}
			}
			fill := time.Since(start)
			runtime.GC()
			var m1 runtime.MemStats
			runtime.ReadMemStats(&m1)
			var leased []*frontier.Item
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if items, err = enqueuePage(db, fr, &next, items); err != nil {
					b.Fatal(err)
				}
				if leased, err = leasePage(ctx, db, fr, leased); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if q := fr.Stats().Queued; q != n {
				b.Fatalf("queued %d, want %d", q, n)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(2*linksPerPage), "ns/url-op")
			b.ReportMetric(float64(fill.Nanoseconds())/float64(n), "fill-ns/url")
			b.ReportMetric(float64(m1.HeapAlloc-min(m0.HeapAlloc, m1.HeapAlloc))/float64(n), "heap-B/url")
			b.ReportMetric(float64(rssKB())/1024, "RSS-MB")
		})
	}
}

func growthLabel(n int) string {
	switch {
	case n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n%1_000 == 0:
		return fmt.Sprintf("%dk", n/1_000)
	default:
		return fmt.Sprint(n)
	}
}
