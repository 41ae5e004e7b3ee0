package storage_test

import (
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/storage"
	"github.com/horseshoe-crawler/horseshoe/storage/storetest"
)

// TestConformance runs the shared-state suite against Badger and the
// in-memory dedup index.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Stores {
		db, err := storage.Open(t.TempDir(), storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		det, err := dedup.New(dedup.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		fo := frontier.DefaultOptions()
		fo.Delay = 100 * time.Millisecond
		fr, err := frontier.New(fo, db, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return storetest.Stores{Store: crawl.BadgerStore(db), Queues: db, Index: crawl.LocalIndex(det), Frontier: fr}
	})
}
