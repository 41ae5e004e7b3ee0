//go:build e2e

package redisstate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// The end of a lease at the commit is fenced by the epoch the item was
// popped under. Worker a pops a URL and stalls past its lease (after its
// request); worker b takes the partition (a new epoch: its acquire requeues
// the URL) and pops the URL again; a then commits its page. a's end of the
// lease must leave b's in-flight record: were it removed, b dying before its
// own commit would lose the URL (nothing requeues it). Each way a page's
// lease ends is tried: the Store's commit (the engine's: the commit script
// on one server, the split commit on a Cluster), Frontier.Commit (a Batch)
// and Frontier.Finish.
//
// No heartbeat runs, and the leases live a minute: each lease the scenario
// ends, the test deletes (under a 3 s TTL, a stall of 2 s between a
// worker's join and its pop made the pop stale: ErrLeaseStale).

// commitFenceWays are the ways worker a's page ends its lease.
var commitFenceWays = []struct {
	name string
	end  func(t *testing.T, st *Store, fr *Frontier, ids *IDs, it *frontier.Item)
}{
	{"store", func(t *testing.T, st *Store, fr *Frontier, _ *IDs, it *frontier.Item) {
		st.UseFrontier(fr)
		err := st.Update(context.Background(), func(tx crawl.Tx) error {
			if err := tx.PutPage(&storage.Page{ID: it.ID, URL: it.URL, Class: storage.ClassUnique}); err != nil {
				return err
			}
			return tx.DeleteQueue(it.Host, it.ID)
		})
		if err != nil {
			t.Fatal(err)
		}
		fr.Finish(it) // ended by the commit: no round trip
	}},
	{"batch", func(t *testing.T, _ *Store, fr *Frontier, ids *IDs, it *frontier.Item) {
		if _, err := fr.Commit(context.Background(), ids, it, nil); err != nil {
			t.Fatal(err)
		}
		fr.Finish(it)
	}},
	{"finish", func(t *testing.T, _ *Store, fr *Frontier, _ *IDs, it *frontier.Item) {
		fr.Finish(it)
	}},
}

// commitFence runs the scenario above on crawl c (st its Store, without a
// frontier): stale makes b take the partition before a's commit; without
// it a's lease ran out but nobody took the partition, and a's end of the
// lease removes its own record.
func commitFence(t *testing.T, c *Crawl, st *Store, name string, stale bool,
	end func(*testing.T, *Store, *Frontier, *IDs, *frontier.Item)) {
	ctx := context.Background()
	host := fmt.Sprintf("%s-%v.example", name, stale)
	if _, err := c.Enqueue(ctx, c.NewIDs(), items("http://"+host+"/1")); err != nil {
		t.Fatal(err)
	}
	p, rdb := c.PartitionOf(host), c.Client()
	inFlight := func() int64 {
		n, err := c.InFlight(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	ma, err := c.Join(ctx, "a", MemberOptions{TTL: time.Minute, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer ma.Abandon()
	fa := c.NewFrontier(ma, FrontierOptions{})
	it, err := fa.Next(ctx)
	if err != nil || it == nil || it.Host != host {
		t.Fatalf("a's pop: %v %v", it, err)
	}
	if err := rdb.Del(ctx, c.leaseKey(p)).Err(); err != nil { // a stalls: its lease runs out
		t.Fatal(err)
	}
	var mb *Member
	if stale {
		// b takes the partition (its acquire requeues the URL) and pops it.
		if mb, err = c.Join(ctx, "b", MemberOptions{TTL: time.Minute, Heartbeat: time.Hour}); err != nil {
			t.Fatal(err)
		}
		defer mb.Abandon()
		if _, _, ok, err := mb.Pop(ctx, host); !ok || err != nil {
			t.Fatalf("b's pop: %v %v", ok, err)
		}
	}
	end(t, st, fa, c.NewIDs(), it) // a resumes and commits its page
	if !stale {
		if n := inFlight(); n != 0 {
			t.Fatalf("a's lease ran out and nobody took it: %d in flight after a's commit, want its record removed", n)
		}
		if s := fa.FenceStats(); s.StaleEnds != 0 {
			t.Fatalf("fence stats %+v, want no stale end", s)
		}
		return
	}
	if n := inFlight(); n != 1 {
		t.Fatalf("%d in flight after a's late commit, want b's record left", n)
	}
	if s := fa.FenceStats(); s.StaleEnds != 1 {
		t.Fatalf("fence stats %+v, want 1 stale end", s)
	}
	// b dies before its commit: the partition's next holder requeues the URL.
	mb.Abandon()
	if err := rdb.Del(ctx, c.leaseKey(p)).Err(); err != nil {
		t.Fatal(err)
	}
	mc, err := c.Join(ctx, "c", MemberOptions{TTL: time.Minute, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Abandon()
	if _, raw, ok, err := mc.Pop(ctx, host); !ok || err != nil {
		t.Fatalf("the URL is lost: after b died, c's pop of %s: %v %v", host, ok, err)
	} else if got, _ := DecodeItem(raw, host); got.URL != it.URL {
		t.Fatalf("c popped %s, want %s", got.URL, it.URL)
	}
}

// TestCommitFence: the scenario on one redis-server, each way.
func TestCommitFence(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	for _, w := range commitFenceWays {
		for _, stale := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stale=%v", w.name, stale), func(t *testing.T) {
				c, st := storeOn(t, srv, fmt.Sprintf("cf-%s-%v", w.name, stale), nil)
				commitFence(t, c, st, w.name, stale, w.end)
			})
		}
	}
}

// TestCommitFenceCluster: the scenario on a Cluster of three masters (the
// Store's split commit, a Batch's second round trip).
func TestCommitFenceCluster(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	for _, w := range commitFenceWays {
		t.Run(w.name, func(t *testing.T) {
			c, st := clusterStore(t, "cf-"+w.name, nil)
			commitFence(t, c, st, w.name, true, w.end)
		})
	}
}
