package live_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/internal/live"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// BenchmarkMetricsScrape measures one /metrics scrape of a running crawl.
func BenchmarkMetricsScrape(b *testing.B) {
	snap := func() (crawl.Stats, error) {
		return crawl.Stats{ByClass: map[string]int64{"unique": 1000, "exact_duplicate": 300}, Requests: 1400,
			Queued: 5000, Active: 8, Hosts: 40, Running: true}, nil
	}
	h := newHandler(b, testStore(b), live.Options{Snapshot: snap})
	n := get(b, h, "GET", "/metrics").Body.Len()
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if rec := get(b, h, "GET", "/metrics"); rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}

// BenchmarkHTMLReport measures rendering the live HTML report of a store of
// 2,000 pages from scratch (no cache), as a reload after CacheFor does.
func BenchmarkHTMLReport(b *testing.B) {
	db, err := storage.Open(b.TempDir(), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	err = db.Update(func(tx *storage.Tx) error {
		for i := range 2000 {
			p := &storage.Page{ID: tx.NewID(), URL: fmt.Sprintf("http://h%d.test/p%d", i%20, i), Host: fmt.Sprintf("h%d.test", i%20),
				Status: 200, Class: storage.ClassUnique, Title: fmt.Sprintf("Page %d", i), FetchedAt: t0.Add(time.Duration(i) * time.Second)}
			if i%4 == 0 {
				p.Class, p.DuplicateOf, p.Similarity, p.Method = storage.ClassNear, fmt.Sprintf("http://h0.test/p%d", i%100), 0.9, "supershingle"
			}
			if err := tx.PutPage(p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	h := newHandler(b, db, live.Options{CacheFor: -1})
	n := get(b, h, "GET", "/").Body.Len()
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if rec := get(b, h, "GET", "/"); rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}
