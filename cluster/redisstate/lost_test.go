//go:build e2e

package redisstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// lostCrawl is crawl "t" of 48 URLs on 8 hosts, on a server without
// persistence, and one worker that fetched 5 of them.
type lostCrawl struct {
	srv  *redistest.Server
	c    *Crawl
	m    *Member
	f    *Frontier
	urls []string
}

func newLostCrawl(t *testing.T) *lostCrawl {
	t.Helper()
	ctx := context.Background()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	c := openOn(t, srv, Options{Partitions: 8, Capacity: 10_000})
	var urls []string
	for i := 0; i < 48; i++ {
		urls = append(urls, fmt.Sprintf("http://h%d.example/%d", i%8, i))
	}
	if _, err := c.Enqueue(ctx, c.NewIDs(), items(urls...)); err != nil {
		t.Fatal(err)
	}
	lc := &lostCrawl{srv: srv, c: c, urls: urls}
	lc.m, lc.f = lc.join(t, c, "w0")
	if n, err := fetchN(ctx, lc.f, 5); n != 5 || err != nil {
		t.Fatalf("before any loss: %d fetched, %v", n, err)
	}
	return lc
}

// join makes worker id of c, with its frontier. Leases are held a minute,
// renewed every 200 ms (a loss is found by state, not by a lease's expiry).
func (lc *lostCrawl) join(t *testing.T, c *Crawl, id string) (*Member, *Frontier) {
	t.Helper()
	m, err := c.Join(context.Background(), id, MemberOptions{TTL: time.Minute, Heartbeat: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Leave(context.Background()) })
	return m, c.NewFrontier(m, FrontierOptions{Options: frontier.Options{MaxFailures: 10}, Hold: 5 * time.Second})
}

// fetchN leases, "fetches" and finishes up to n items (n < 0: until Next
// returns an error), and returns how many it fetched and Next's error.
func fetchN(ctx context.Context, f *Frontier, n int) (int, error) {
	got := 0
	for n < 0 || got < n {
		it, err := f.Next(ctx)
		if err != nil {
			return got, err
		}
		got++
		f.Release(it, frontier.Outcome{Requested: true, Status: 200})
		f.Finish(it)
	}
	return got, nil
}

// fullest is the host with the most items queued, and its queue's key.
func (lc *lostCrawl) fullest(t *testing.T) (host, key string) {
	t.Helper()
	var most int64 = -1
	for i := 0; i < 8; i++ {
		h := fmt.Sprintf("h%d.example", i)
		k := lc.c.queueKey(lc.c.PartitionOf(h), h)
		if n := lc.c.rdb.LLen(context.Background(), k).Val(); n > most {
			most, host, key = n, h, k
		}
	}
	if most < 2 {
		t.Fatalf("no host has 2 items queued (%d): the loss would not be mid-crawl", most)
	}
	return host, key
}

// TestLostStateIsNotDone: a shared crawl whose state in Redis is lost or
// damaged mid-crawl ends its worker's Next with a *LostError naming what
// was lost, never with frontier.ErrDone (which the engine takes for a
// finished crawl: "crawl finished ... 0 queued left", exit 0, complete).
// Each form of loss: a restart without persistence, FLUSHALL, the crawl
// made again by a new worker after the restart, the keys of one partition
// gone (a Cluster node restarted without persistence), the meta hash
// deleted, a queue or a host set overwritten with a string, a queue deleted,
// a partition's count of queued items deleted. Before the generation and the checks,
// each of them ended the crawl as finished, or (a queue of the wrong type)
// ended the worker goroutines silently.
func TestLostStateIsNotDone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// damage damages the state and returns what the error must name.
		damage func(t *testing.T, lc *lostCrawl) string
	}{
		{"restart without persistence", func(t *testing.T, lc *lostCrawl) string {
			lc.srv.Restart()
			return "hs:{t"
		}},
		{"flushall", func(t *testing.T, lc *lostCrawl) string {
			lc.c.rdb.FlushAll(context.Background())
			return "hs:{t"
		}},
		{"restart, then the crawl made again", func(t *testing.T, lc *lostCrawl) string {
			lc.srv.Restart()
			// A new worker makes the crawl again on the empty server (as
			// Open does, without its refusal: this worker's heartbeat may
			// have written its record there already).
			ctx := context.Background()
			again := &Crawl{rdb: lc.c.rdb, name: "t", partitions: lc.c.partitions, gen: newGen()}
			if err := lc.c.rdb.HSet(ctx, again.metaKey(), "version", layoutVersion, "gen", again.gen).Err(); err != nil {
				t.Fatal(err)
			}
			if err := again.markPartitions(ctx); err != nil {
				t.Fatal(err)
			}
			return "hs:{t" // its meta hash gone, or another generation, whichever this worker reads first
		}},
		{"one partition's keys gone", func(t *testing.T, lc *lostCrawl) string {
			ctx := context.Background()
			host, _ := lc.fullest(t)
			p := lc.c.PartitionOf(host)
			keys, err := lc.c.rdb.Keys(ctx, lc.c.partTag(p)+"*").Result()
			if err != nil || len(keys) == 0 {
				t.Fatalf("keys of partition %d: %v, %v", p, keys, err)
			}
			lc.c.rdb.Del(ctx, keys...)
			return lc.c.genKey(p)
		}},
		{"meta deleted", func(t *testing.T, lc *lostCrawl) string {
			lc.c.rdb.Del(context.Background(), lc.c.metaKey())
			return lc.c.metaKey()
		}},
		{"queue overwritten with a string", func(t *testing.T, lc *lostCrawl) string {
			_, key := lc.fullest(t)
			lc.c.rdb.Set(context.Background(), key, "x", 0)
			return key + ", a key of partition"
		}},
		{"host set overwritten with a string", func(t *testing.T, lc *lostCrawl) string {
			host, _ := lc.fullest(t)
			key := lc.c.hostsKey(lc.c.PartitionOf(host))
			lc.c.rdb.Set(context.Background(), key, "x", 0)
			return key + ", a key of partition"
		}},
		{"queue deleted", func(t *testing.T, lc *lostCrawl) string {
			host, key := lc.fullest(t)
			lc.c.rdb.Del(context.Background(), key)
			return lc.c.queueCountKey(lc.c.PartitionOf(host))
		}},
		{"count deleted", func(t *testing.T, lc *lostCrawl) string {
			host, _ := lc.fullest(t)
			key := lc.c.queueCountKey(lc.c.PartitionOf(host))
			lc.c.rdb.Del(context.Background(), key)
			return key
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lc := newLostCrawl(t)
			want := tc.damage(t, lc)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only a hang reaches it
			defer cancel()
			n, err := fetchN(ctx, lc.f, -1)
			if !errors.Is(err, ErrLost) {
				t.Fatalf("after the loss %d more fetched and Next returned %v; want a lost-state error", n, err)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not name %q: %v", want, err)
			}
			if !errors.Is(lc.m.Lost(), ErrLost) {
				t.Errorf("the worker's Lost is %v", lc.m.Lost())
			}
			if _, err := lc.f.Next(ctx); !errors.Is(err, ErrLost) {
				t.Errorf("Next after the loss: %v, want the loss again", err)
			}
			t.Logf("%d more fetched; %v", n, err)
		})
	}
}

// TestLostMetaRefusesOpen: a worker that opens a crawl whose meta hash is
// gone while the crawl's other keys remain is refused with an error naming
// them, instead of making a fresh layout over what is left of the old one.
func TestLostMetaRefusesOpen(t *testing.T) {
	t.Parallel()
	lc := newLostCrawl(t)
	ctx := context.Background()
	lc.c.rdb.Del(ctx, lc.c.metaKey())
	_, err := Open(ctx, lc.srv.Client(t), "t", Options{})
	if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), lc.c.metaKey()) {
		t.Fatalf("open after the meta hash was deleted: %v, want a lost-state error naming it", err)
	}
	if n := lc.c.rdb.Exists(ctx, lc.c.metaKey()).Val(); n != 0 {
		t.Errorf("the refused open wrote the meta hash")
	}
}

// TestGarbageQueueItemReported: an item at the head of a host's queue that
// does not decode stops the worker with an error naming the queue and how
// to remove it; the item stays where it was, nothing else is lost, and once
// it is removed a worker finishes the crawl: every URL fetched. Before, the
// error ended the engine's worker goroutines as a finished crawl.
func TestGarbageQueueItemReported(t *testing.T) {
	t.Parallel()
	lc := newLostCrawl(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only a hang reaches it
	defer cancel()
	_, key := lc.fullest(t)
	lc.c.rdb.LPush(ctx, key, "garbage")
	n, err := fetchN(ctx, lc.f, -1)
	var le *LostError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "LPOP") {
		t.Fatalf("after a garbage item %d fetched, Next: %v; want a lost-state error naming %s and how to remove it", n, err, key)
	}
	if head := lc.c.rdb.LIndex(ctx, key, 0).Val(); head != "garbage" {
		t.Fatalf("the garbage item is not at the head of its queue any more (%q)", head)
	}
	lc.m.Leave(ctx)
	lc.c.rdb.LPop(ctx, key) // as the error says
	_, f := lc.join(t, lc.c, "w1")
	m, err := fetchN(ctx, f, -1)
	if !errors.Is(err, frontier.ErrDone) {
		t.Fatalf("after the item was removed: %v", err)
	}
	if total := 5 + n + m; total != len(lc.urls) {
		t.Errorf("%d URLs fetched in all, want %d (5 before, %d until the garbage, %d after)", total, len(lc.urls), n, m)
	}
}

// TestStoreCommitOnLostState: a page's commit into a crawl whose state was
// lost (FLUSHALL) is refused with a *LostError before it writes anything
// (its partitions' markers are checked first), instead of writing its links
// into the empty server as a new crawl's first queue.
func TestStoreCommitOnLostState(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	c, s := storeOn(t, srv, "lc", nil)
	pageTx(t, s, 1, linksOf("before", 3))
	ctx := context.Background()
	c.rdb.FlushAll(ctx)
	err := s.Update(ctx, func(tx crawl.Tx) error {
		for _, u := range linksOf("after", 3) {
			lid, fresh, err := tx.CheckAndMark(u, tx.NewID)
			if err != nil {
				return err
			}
			if fresh {
				if err := tx.PutQueue(frontier.Item{ID: lid, URL: u}); err != nil {
					return err
				}
			}
		}
		return tx.PutPage(&storage.Page{ID: 2, URL: "http://p.test/2", Class: storage.ClassUnique})
	})
	if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "marker") {
		t.Fatalf("a commit after FLUSHALL: %v, want a lost-state error naming a partition's marker", err)
	}
	if keys := c.rdb.Keys(ctx, "hs:{lc*").Val(); len(keys) != 0 {
		t.Errorf("the refused commit wrote %v", keys)
	}
}

// TestDataDirOfLostCrawlRefused: a worker's data dir is not used for the
// crawl made again after its state in Redis was lost (all its workers
// stopped, Redis restarted without persistence, the crawl opened anew: a
// new generation, page ids from 0 again); the same dir is used again under
// the generation it was crawled under, and a new dir under the new one. A
// crawl of another name refuses the dir (issue 27: it was reused silently).
func TestDataDirOfLostCrawlRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	c := openOn(t, srv, Options{Partitions: 4, Capacity: 1000})
	dir := t.TempDir()
	newStore := func(c *Crawl, dir string) error {
		db, err := storage.Open(dir, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		_, err = c.NewStore(db, c.NewIDs(), nil, nil)
		return err
	}
	if err := newStore(c, dir); err != nil {
		t.Fatal(err)
	}
	if err := newStore(openOn(t, srv, Options{}), dir); err != nil {
		t.Fatalf("the dir again under the same generation: %v", err)
	}
	srv.Restart()
	again, err := Open(ctx, srv.Client(t), "t", Options{Partitions: 4, Capacity: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if err := newStore(again, dir); !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "generation") {
		t.Fatalf("the dir under the crawl made again: %v, want a lost-state error naming the generations", err)
	}
	if err := newStore(again, t.TempDir()); err != nil {
		t.Fatalf("a new dir under the crawl made again: %v", err)
	}
	other, err := Open(ctx, srv.Client(t), "other", Options{Partitions: 4, Capacity: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if err := newStore(other, dir); err == nil || !strings.Contains(err.Error(), `shared crawl "t", not of crawl "other"`) {
		t.Fatalf("crawl t's dir under crawl other: %v, want an error naming both crawls", err)
	}
}
