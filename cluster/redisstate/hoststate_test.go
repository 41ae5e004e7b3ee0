//go:build e2e

package redisstate

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// A host that fails every request (connection refused), crawled by two
// workers; the worker that first holds it leaves after its second failure,
// and the other takes its partition over: the host gets max_failures
// requests in total (the count goes on where the first worker stopped), is
// given up once (one worker reports it), and no worker requests it again.
// The rest of its queue is drained: every other URL of it is leased once to
// be recorded without a request, and Redis holds none of them afterwards
// (no queue, no host set entry, nothing in flight). The other hosts are
// crawled to the end.
func TestHostGiveUpCrawlWide(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 8, Capacity: 10_000}, redistest.Options{})
	ctx := context.Background()
	var urls []string
	for i := 0; i < 20; i++ {
		urls = append(urls, fmt.Sprintf("http://bad.example/%d", i))
	}
	for i := 0; i < 60; i++ {
		urls = append(urls, fmt.Sprintf("http://h%d.example/%d", i%6, i))
	}
	if _, err := c.Enqueue(ctx, c.NewIDs(), items(urls...)); err != nil {
		t.Fatal(err)
	}
	const maxFailures = 4
	fo := frontier.Options{Delay: time.Millisecond, MaxFailures: maxFailures,
		BackoffBase: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond}
	outcome := func(it *frontier.Item) frontier.Outcome {
		if it.Host == "bad.example" {
			return frontier.Outcome{Requested: true, Failed: true}
		}
		return frontier.Outcome{Requested: true, Status: 200}
	}
	var mu sync.Mutex
	var giveUps []string
	badBy := map[int]int{}
	r := workerRun{fo: fo, outcome: outcome,
		giveUp: func(w int, g frontier.GiveUp) {
			giveUps = append(giveUps, fmt.Sprintf("%s by w%d: %s", g.Host, w, g.Reason))
		},
		leave: func(w, _ int, l lease) bool {
			mu.Lock()
			defer mu.Unlock()
			if l.host != "bad.example" {
				return false
			}
			badBy[w]++
			return len(badBy) == 1 && badBy[w] == 2 // the first holder leaves after 2 failures
		}}
	ls := runWorkers(t, srv, 2, r)
	bad, byWorker := 0, map[int]int{}
	pages, _ := pagesOf(ls)
	recorded := map[string]int{}
	for _, l := range ls {
		if l.host == "bad.example" && !l.drained {
			bad++
			byWorker[l.worker]++
		}
		if l.host == "bad.example" && !l.requeued {
			recorded[l.url]++
			if l.drained && l.blocked {
				t.Errorf("%s drained as blocked by robots.txt; it failed its requests", l.url)
			}
		}
	}
	for _, u := range urls[:20] {
		if recorded[u] != 1 {
			t.Errorf("%s ended %d times (drained or requested), want once", u, recorded[u])
		}
	}
	checkDrained(t, c, "bad.example")
	if bad != maxFailures {
		t.Errorf("bad.example got %d requests (by worker %v), want max_failures = %d", bad, byWorker, maxFailures)
	}
	if len(byWorker) != 2 {
		t.Errorf("bad.example requested by workers %v: its partition did not move", byWorker)
	}
	if len(giveUps) != 1 {
		t.Errorf("give-ups reported: %q, want bad.example once", giveUps)
	}
	if _, dead, err := c.HostFailures(ctx, "bad.example"); err != nil || !dead {
		t.Errorf("bad.example not given up in Redis (%v)", err)
	}
	if good := pages - len(recorded); good != 60 {
		t.Errorf("%d pages of the good hosts, want 60", good)
	}
	t.Logf("bad.example: %d requests by worker %v; %q", bad, byWorker, giveUps)
}

// checkDrained: Redis holds no URL of host in any queue or in flight, and
// no host set names it.
func checkDrained(t *testing.T, c *Crawl, host string) {
	t.Helper()
	ctx := context.Background()
	rdb := c.Client()
	p := c.PartitionOf(host)
	if n, err := rdb.Exists(ctx, c.queueKey(p, host)).Result(); err != nil || n != 0 {
		t.Errorf("the queue of %s is still in Redis (%v)", host, err)
	}
	if ok, err := rdb.SIsMember(ctx, c.hostsKey(p), host).Result(); err != nil || ok {
		t.Errorf("the host set still names %s (%v)", host, err)
	}
	left, err := rdb.HVals(ctx, c.inflightKey(p)).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range left {
		if h == host {
			t.Errorf("a URL of %s is still in flight", host)
		}
	}
}
