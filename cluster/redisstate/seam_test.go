package redisstate

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/storage"
	"github.com/horseshoe-crawler/horseshoe/storage/storetest"
)

var crawlNo atomic.Int64

// TestConformance runs the shared-state suite (storage/storetest) against
// the Redis Store, Index and Frontier on a real redis-server: each test a
// crawl of its own on one server, one worker with its own Badger data dir.
func TestConformance(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	storetest.Run(t, func(t *testing.T) storetest.Stores {
		ctx := context.Background()
		rdb := srv.Client(t)
		c, err := Open(ctx, rdb, fmt.Sprintf("conf%d", crawlNo.Add(1)), Options{Partitions: 4, Capacity: 10_000})
		if err != nil {
			t.Fatal(err)
		}
		db, err := storage.Open(t.TempDir(), storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		m, err := c.Join(ctx, "w1", MemberOptions{TTL: 900 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Leave(ctx) })
		fo := frontier.DefaultOptions()
		fo.Delay = 100 * time.Millisecond
		fr := c.NewFrontier(m, FrontierOptions{Options: fo})
		det, err := dedup.New(dedup.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		return storetest.Stores{Store: c.NewStore(db, c.NewIDs(), fr, nil), Index: c.NewIndex(det, DedupOptions{}), Frontier: fr}
	})
}
