package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/hostile"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestLargeSeedFiles: a seeds file of thousands of URLs is queued (in parts)
// instead of failing before any fetch with "Txn is too big", and a resume
// with the same file adds nothing twice.
func TestLargeSeedFiles(t *testing.T) {
	hs, err := hostile.Start(hostile.Options{Addr: "127.0.0.76:0", RobotsAddr: "127.0.0.77:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	for _, n := range []int{8000, 30000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var b strings.Builder
			for i := 0; i < n; i++ {
				fmt.Fprintf(&b, "%s/many-links/t/seed-%d\n", hs.URL, i)
			}
			seeds := filepath.Join(t.TempDir(), "seeds.txt")
			if err := os.WriteFile(seeds, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			data := filepath.Join(t.TempDir(), "data")
			for run1 := 0; run1 < 2; run1++ {
				args := []string{"crawl", "--data", data, "--seeds", seeds, "--delay", "0", "--quiet", "--max-pages", fmt.Sprint(2 * (run1 + 1))}
				if err := run(context.Background(), args, io.Discard, io.Discard); err != nil {
					t.Fatalf("crawl %d with %d seeds: %v", run1+1, n, err)
				}
			}
			db, err := storage.Open(data, storage.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			hosts, err := db.QueueHosts()
			if err != nil {
				t.Fatal(err)
			}
			queued := 0
			for _, h := range hosts {
				queued += h.Count
			}
			pages := 0
			db.ForEachPage(func(*storage.Page) error { pages++; return nil })
			if queued+pages != n {
				t.Errorf("%d seeds queued and %d recorded after two runs, want %d in all", queued, pages, n)
			}
		})
	}
}

// TestOverlongSeed: a seed longer than urls.max_length is a usage error that
// names it (shortened), not a storage error dumping a 70 KB key in hex.
func TestOverlongSeed(t *testing.T) {
	for _, n := range []int{3000, 70_000} {
		seed := "http://127.0.0.78:1/" + strings.Repeat("a", n)
		var stderr strings.Builder
		err := run(context.Background(), []string{"crawl", "--data", filepath.Join(t.TempDir(), "d"), "--quiet", seed}, io.Discard, &stderr)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "urls.max_length") || len(err.Error()) > 300 {
			t.Errorf("seed of %d bytes: %v (%T); want a short usage error naming urls.max_length", n, err, err)
		}
	}
}
