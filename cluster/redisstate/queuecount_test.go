//go:build e2e

package redisstate

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// queuesInRedis reads every queue of crawl c from Redis itself (SCAN of the
// queue keys, LLEN each): the items queued, and the hosts with a non-empty
// queue that are missing from their partition's host set.
func queuesInRedis(t *testing.T, c *Crawl) (queued int64, missing []string) {
	t.Helper()
	ctx := context.Background()
	for p := 0; p < c.partitions; p++ {
		prefix := c.queuePrefix(p)
		keys, err := c.rdb.Keys(ctx, strings.ReplaceAll(prefix, "[", `\[`)+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			n, err := c.rdb.LLen(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			queued += n
			host := strings.TrimPrefix(k, prefix)
			if in, _ := c.rdb.SIsMember(ctx, c.hostsKey(p), host).Result(); n > 0 && !in {
				missing = append(missing, host)
			}
		}
	}
	return queued, missing
}

// The partitions' counts of queued items (queueCountKey) are the queues'
// lengths after every kind of push and pop: Enqueue, Push, a Store's commit
// (commitScript), Commit (a Batch), Pop, PutBack front and back, the
// requeue of a dead worker's items when its partitions are taken, and a
// Leave's. Frontier.Stats reads the counts, one GET a partition, and runs
// no command per host (no LLEN: without the counts it ran one a host).
// Every host with a queued item is in its partition's host set.
func TestQueueCountsExact(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	c := openOn(t, srv, Options{Partitions: 8, Capacity: 100_000})
	ctx := context.Background()
	check := func(step string) {
		t.Helper()
		got, err := c.QueuedAll(ctx)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		want, missing := queuesInRedis(t, c)
		if got != want {
			t.Fatalf("%s: the counts say %d queued, the queues hold %d", step, got, want)
		}
		if len(missing) > 0 {
			t.Fatalf("%s: hosts with queued items missing from their host sets: %v", step, missing)
		}
		t.Logf("%s: %d queued", step, got)
	}
	ids := c.NewIDs()
	var us []string
	for i := 0; i < 300; i++ {
		us = append(us, fmt.Sprintf("http://h%d.example/%d", i%40, i))
	}
	if _, err := c.Enqueue(ctx, ids, items(us...)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, ids, items(us[:50]...)); err != nil { // seen: nothing queued
		t.Fatal(err)
	}
	check("enqueue")
	b := c.NewBatch(ids)
	b.Push(frontier.Item{URL: "http://h1.example/again"})
	b.Push(frontier.Item{URL: "http://new.example/1"})
	if _, err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	check("push")

	// Leases held a minute: with 700 ms, a heartbeat descheduled past 2/3
	// of it refused a pop (stale), or past it requeued what a popped.
	a, err := c.Join(ctx, "a", MemberOptions{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	type popped struct {
		it  frontier.Item
		raw string
	}
	var ps []popped
	for h := 0; h < 10; h++ {
		for k := 0; k < 3; k++ {
			it, raw, ok, err := a.Pop(ctx, fmt.Sprintf("h%d.example", h))
			if err != nil || !ok {
				t.Fatalf("pop: %v %v", ok, err)
			}
			ps = append(ps, popped{it, raw})
		}
	}
	check("pop")
	for i, p := range ps[:4] {
		if ok, err := a.PutBack(ctx, &p.it, p.raw, i%2 == 0); !ok || err != nil {
			t.Fatalf("put back: %v %v", ok, err)
		}
	}
	check("put back")
	// A commit with links (a Batch), one with links through a Store.
	links := items("http://h2.example/l1", "http://h2.example/l2", "http://h3.example/l1", us[299])
	if _, err := c.Commit(ctx, a, ids, &ps[4].it, ps[4].raw, links); err != nil {
		t.Fatal(err)
	}
	check("commit (batch)")
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	queued := pageTx(t, mustStore(t, c, db, nil), 7, []string{"http://h4.example/s1", "http://h4.example/s2",
		"http://h5.example/s1", "http://fresh.example/s1", us[10]})
	if len(queued) != 4 {
		t.Fatalf("the store's commit queued %v, want the 4 new links", queued)
	}
	check("commit (store)")
	// a dies with items in flight (its leases expired by the test, as
	// their TTL would); b's acquire requeues them.
	a.Abandon()
	expireWorker(t, c, "a")
	c2 := openOn(t, srv, Options{})
	bm, err := c2.Join(ctx, "b", MemberOptions{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, hangBound, "b takes every partition", func() bool { return len(bm.Owned()) == 8 })
	for p := 0; p < 8; p++ {
		if n, _ := c.InFlight(ctx, p); n != 0 {
			t.Fatalf("partition %d: %d in flight after the takeover", p, n)
		}
	}
	check("requeue of a dead worker's items")
	it, _, ok, err := bm.Pop(ctx, "h0.example")
	if err != nil || !ok {
		t.Fatalf("pop: %+v %v %v", it, ok, err)
	}
	bm.Leave(ctx) // requeues it
	check("leave")

	// Stats reads the counts: no command a host.
	before := commandCalls(t, c, "llen")
	fr := c.NewFrontier(bm, FrontierOptions{Options: frontier.DefaultOptions()})
	fr.Stop()
	st := fr.Stats()
	after := commandCalls(t, c, "llen")
	want, _ := queuesInRedis(t, c)
	if st.Err != nil || int64(st.Queued) != want {
		t.Fatalf("Stats: queued %d, %v; want %d", st.Queued, st.Err, want)
	}
	if after != before {
		t.Errorf("Stats ran %d LLEN (one a host), want none", after-before)
	}
}

// commandCalls is INFO commandstats' calls of cmd (a script's included).
func commandCalls(t *testing.T, c *Crawl, cmd string) int64 {
	t.Helper()
	info, err := c.rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls="); ok {
			var n int64
			fmt.Sscan(strings.SplitN(rest, ",", 2)[0], &n)
			return n
		}
	}
	return 0
}

// A crawl created by a build of layout 1 (no counts) is still opened, and
// its queue counted host by host; an unknown layout is refused.
func TestQueueCountsLayout1(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	c := openOn(t, srv, Options{Partitions: 4, Capacity: 10_000})
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, c.NewIDs(), items("http://a.example/1", "http://a.example/2", "http://b.example/1")); err != nil {
		t.Fatal(err)
	}
	for p := 0; p < 4; p++ { // as a layout 1 crawl has them: none
		c.rdb.Del(ctx, c.queueCountKey(p))
	}
	c.rdb.HSet(ctx, c.metaKey(), "version", layoutVersion1)
	old := openOn(t, srv, Options{})
	if old.queueCounts {
		t.Fatal("a layout 1 crawl opened with counts")
	}
	if n, err := old.QueuedAll(ctx); n != 3 || err != nil {
		t.Fatalf("layout 1: %d queued, %v; want 3", n, err)
	}
	c.rdb.HSet(ctx, c.metaKey(), "version", "horseshoe-redis-9")
	if _, err := Open(ctx, srv.Client(t), "t", Options{}); err == nil || !strings.Contains(err.Error(), "horseshoe-redis-9") {
		t.Fatalf("an unknown layout: %v", err)
	}
}
