//go:build e2e

package redisstate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// lease is one lease a test worker took, and what it came to.
type lease struct {
	url, host string
	worker    int
	requeued  bool // went back to its queue (no page)
	killed    bool // held when its worker was killed
	drained   bool // a URL of a host given up, recorded without a request (frontier.Item.GivenUp)
	blocked   bool // with drained: the give-up said robots.txt was unavailable
}

// workerRun configures runWorkers.
type workerRun struct {
	fo      frontier.Options
	outcome func(it *frontier.Item) frontier.Outcome // the fetch's result (default: a 200)
	killAt  map[int]int                              // worker -> lease at which it dies holding it (kill -9; expireWorker then ends its leases)
	leave   func(w, n int, l lease) bool             // after its n-th lease l, worker w leaves (its partitions move)
	giveUp  func(w int, g frontier.GiveUp)           // the hosts a worker's frontier gave up
	name    string                                   // worker id prefix (default "w")
}

// runWorkers runs workers frontiers over srv's crawl "t" until each is done
// (or killed, or left) and returns every lease taken.
func runWorkers(t *testing.T, srv *redistest.Server, workers int, r workerRun) []lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if r.outcome == nil {
		r.outcome = func(*frontier.Item) frontier.Outcome { return frontier.Outcome{Requested: true, Status: 200} }
	}
	if r.name == "" {
		r.name = "w"
	}
	var mu sync.Mutex
	var out []lease
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		c := openOn(t, srv, Options{})
		// Leases only a hang outlasts (a 600 ms TTL ran out when a
		// heartbeat was descheduled: the partition's next holder fetched
		// its item again); a killed worker's are expired by the test, its
		// heartbeat goes on at the pace a short TTL had.
		id := fmt.Sprintf("%s%d", r.name, w)
		m, err := c.Join(ctx, id, MemberOptions{TTL: time.Minute, Heartbeat: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		f := c.NewFrontier(m, FrontierOptions{Options: r.fo, Hold: 5 * time.Second})
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			n := 0
			for {
				it, err := f.Next(ctx)
				if errors.Is(err, frontier.ErrDone) {
					m.Leave(ctx)
					return
				}
				if err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
				n++
				l := lease{url: it.URL, host: it.Host, worker: w}
				if r.killAt[w] > 0 && n >= r.killAt[w] {
					l.killed = true
					mu.Lock()
					out = append(out, l)
					mu.Unlock()
					m.Abandon()
					expireWorker(t, c, id) // its leases run out: the others take its partitions
					return
				}
				o := frontier.Outcome{} // recorded, not requested
				if it.GivenUp == nil {
					o = r.outcome(it)
				} else {
					l.drained, l.blocked = true, it.GivenUp.Blocked
				}
				l.requeued = f.Release(it, o)
				if !l.requeued {
					f.Finish(it)
				}
				mu.Lock()
				out = append(out, l)
				for _, g := range f.GiveUps() {
					if r.giveUp != nil {
						r.giveUp(w, g)
					}
				}
				mu.Unlock()
				if r.leave != nil && r.leave(w, n, l) {
					m.Leave(ctx)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	return out
}

func pagesOf(ls []lease) (pages int, byHost map[string]int) {
	byHost = map[string]int{}
	for _, l := range ls {
		if !l.requeued && !l.killed {
			pages++
			byHost[l.host]++
		}
	}
	return pages, byHost
}

// Three workers with crawl.max_pages 50 over 300 queued URLs: exactly 50
// leases become pages in total, though each host's first lease goes back to
// its queue (robots.txt first: its page is given back) and one worker is
// killed holding a lease (the next holder of its partition gives it back).
// A worker that joins afterwards, and one started with the same budget on a
// resumed crawl, lease nothing.
func TestPageBudgetCrawlWide(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 16, Capacity: 10_000}, redistest.Options{})
	ctx := context.Background()
	var urls []string
	for i := 0; i < 300; i++ {
		urls = append(urls, fmt.Sprintf("http://h%d.example/%d", i%30, i))
	}
	if _, err := c.Enqueue(ctx, c.NewIDs(), items(urls...)); err != nil {
		t.Fatal(err)
	}
	const budget = 50
	var mu sync.Mutex
	first := map[string]bool{}
	robotsFirst := func(it *frontier.Item) frontier.Outcome {
		mu.Lock()
		defer mu.Unlock()
		if !first[it.Host] {
			first[it.Host] = true
			return frontier.Outcome{Requested: true, Requeue: true}
		}
		return frontier.Outcome{Requested: true, Status: 200}
	}
	fo := frontier.Options{Delay: time.Millisecond, MaxPages: budget}
	ls := runWorkers(t, srv, 3, workerRun{fo: fo, outcome: robotsFirst, killAt: map[int]int{0: 3}})
	pages, _ := pagesOf(ls)
	requeued, killed := 0, 0
	for _, l := range ls {
		if l.requeued {
			requeued++
		}
		if l.killed {
			killed++
		}
	}
	if pages != budget {
		t.Errorf("%d pages in total, want the budget, %d (%d leases, %d requeued, %d killed)", pages, budget, len(ls), requeued, killed)
	}
	if requeued == 0 || killed != 1 {
		t.Fatalf("%d leases requeued, %d killed: the test does not test the refunds", requeued, killed)
	}
	if n, err := c.PagesSpent(ctx); err != nil || n != budget {
		t.Errorf("spent %d (%v), want %d", n, err, budget)
	}
	// A worker joining the spent crawl.
	if more := runWorkers(t, srv, 1, workerRun{fo: fo, name: "late"}); len(more) != 0 {
		t.Errorf("a worker that joined the spent crawl took %d leases", len(more))
	}
	t.Logf("%d leases: %d pages, %d requeued (given back), %d killed holding one", len(ls), pages, requeued, killed)
}

// max_pages_per_host 3 over 12 hosts of 10 URLs, two workers, one of which
// leaves midway (its partitions move): every host gets exactly 3 pages, and
// the crawl ends with the rest still queued.
func TestHostBudgetCrawlWide(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 8, Capacity: 10_000}, redistest.Options{})
	ctx := context.Background()
	var urls []string
	for i := 0; i < 120; i++ {
		urls = append(urls, fmt.Sprintf("http://h%d.example/%d", i%12, i))
	}
	if _, err := c.Enqueue(ctx, c.NewIDs(), items(urls...)); err != nil {
		t.Fatal(err)
	}
	fo := frontier.Options{Delay: time.Millisecond, MaxPagesPerHost: 3}
	ls := runWorkers(t, srv, 2, workerRun{fo: fo, leave: func(w, n int, _ lease) bool { return w == 0 && n == 8 }})
	pages, byHost := pagesOf(ls)
	for i := 0; i < 12; i++ {
		if h := fmt.Sprintf("h%d.example", i); byHost[h] != 3 {
			t.Errorf("%s: %d pages, want 3", h, byHost[h])
		}
	}
	if n, err := c.HostPagesSpent(ctx, "h0.example"); err != nil || n != 3 {
		t.Errorf("h0.example spent %d (%v), want 3", n, err)
	}
	// The spent hosts left the host set; their queues stay, and are
	// counted queued (as the embedded frontier counts them).
	if q, err := c.QueuedAll(ctx); err != nil || q != 120-36 {
		t.Errorf("queued in hosts with budget spent: %d (%v), want %d", q, err, 120-36)
	}
	for p := 0; p < 8; p++ {
		if n, err := c.rdb.SCard(ctx, c.hostsKey(p)).Result(); err != nil || n != 0 {
			t.Errorf("partition %d: %d hosts left in its host set (%v), want none", p, n, err)
		}
	}
	t.Logf("%d leases, %d pages", len(ls), pages)
}
