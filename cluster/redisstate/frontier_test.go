//go:build e2e

package redisstate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// request is one simulated fetch: which URL, on which IP, when.
type request struct {
	url, ip    string
	start, end time.Time
	worker     int
}

// crawlWorkers runs workers frontiers over crawl "t" until the crawl is done:
// each leases, "fetches" for fetch (recording the request), releases,
// finishes. A worker with stopAfter > 0 dies after that many leases, its last
// item leased and never released (kill -9 in the middle of a fetch); the
// test then expires its leases and heartbeat (expireWorker: what their TTL
// does, at once). Leases are held a minute, renewed every 300 ms (which
// paces the fair share): a heartbeat descheduled past a TTL of 900 ms let
// the partition's next holder fetch an item in flight again.
// fetched, when set, is called with the number of requests recorded so far
// after each one. A request holds its IP's clock up to 10 minutes, past the
// test's hang bound: a dead worker's hold must end with its heartbeat
// (endDeadHold), not when the hold runs out.
func crawlWorkers(t *testing.T, srv *redistest.Server, workers int, delay, fetch time.Duration, ipOf func(string) string, stopAfter map[int]int, fetched func(int)) []request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var reqs []request
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		c := openOn(t, srv, Options{})
		id := fmt.Sprintf("w%d", w)
		m, err := c.Join(ctx, id, MemberOptions{TTL: time.Minute, Heartbeat: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var f *Frontier
		f = c.NewFrontier(m, FrontierOptions{Options: frontier.Options{Delay: delay, MaxFailures: 10},
			Hold: 10 * time.Minute, OnNewHost: func(h string) { f.SetPoliteKey(h, ipOf(h)) }})
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
				if stopAfter[w] > 0 && n >= stopAfter[w] {
					m.Abandon() // killed holding it
					expireWorker(t, c, id)
					return
				}
				r := request{url: it.URL, ip: ipOf(it.Host), start: time.Now(), worker: w}
				time.Sleep(fetch)
				r.end = time.Now()
				mu.Lock()
				reqs = append(reqs, r)
				if fetched != nil {
					fetched(len(reqs))
				}
				mu.Unlock()
				f.Release(it, frontier.Outcome{Requested: true, Status: 200})
				f.Finish(it)
			}
		}(w)
	}
	wg.Wait()
	return reqs
}

// Three workers crawl 120 URLs on 48 hosts over 4 IPs: every URL is fetched
// exactly once, by any worker; no two requests to one IP overlap or come
// closer than the delay, whichever workers sent them; every worker takes part.
// Every partition holds hosts: a worker's share is partitions, and with
// empty ones (12 hosts filled 9 of 16) a worker could hold only empty ones
// and rightly take no part (2 runs in 15 under load).
func TestFrontierWorkersShareCrawl(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 16, Capacity: 10_000}, redistest.Options{})
	ctx := context.Background()
	var urls []string
	parts := map[int]bool{}
	for i := 0; i < 120; i++ {
		urls = append(urls, fmt.Sprintf("http://h%d.example/%d", i%48, i))
		parts[c.PartitionOf(fmt.Sprintf("h%d.example", i%48))] = true
	}
	if len(parts) != 16 {
		t.Fatalf("the hosts fill %d of the 16 partitions", len(parts))
	}
	if _, err := c.Enqueue(ctx, c.NewIDs(), items(urls...)); err != nil {
		t.Fatal(err)
	}
	ipOf := func(h string) string { return fmt.Sprintf("ip:10.0.0.%d", len(h)%2+2*(int(h[1])%2)) }
	const delay = 20 * time.Millisecond
	reqs := crawlWorkers(t, srv, 3, delay, 2*time.Millisecond, ipOf, nil, nil)
	checkCrawl(t, reqs, urls, delay)
	byWorker := map[int]int{}
	for _, r := range reqs {
		byWorker[r.worker]++
	}
	if len(byWorker) != 3 {
		t.Errorf("requests by worker: %v, want all 3 to take part", byWorker)
	}
	t.Logf("requests by worker: %v", byWorker)
}

// checkCrawl asserts each URL was requested once and the politeness of every
// IP's requests.
func checkCrawl(t *testing.T, reqs []request, urls []string, delay time.Duration) {
	t.Helper()
	count := map[string]int{}
	byIP := map[string][]request{}
	for _, r := range reqs {
		count[r.url]++
		byIP[r.ip] = append(byIP[r.ip], r)
	}
	for _, u := range urls {
		if count[u] != 1 {
			t.Errorf("%s requested %d times", u, count[u])
		}
	}
	if len(count) != len(urls) {
		t.Errorf("%d URLs requested, want %d", len(count), len(urls))
	}
	// The clock is Redis's and the times here the test's: allow 2 ms.
	for ip, rs := range byIP {
		sort.Slice(rs, func(i, j int) bool { return rs[i].start.Before(rs[j].start) })
		for i := 1; i < len(rs); i++ {
			if gap := rs[i].start.Sub(rs[i-1].end); gap < delay-2*time.Millisecond {
				t.Errorf("%s: %s (worker %d) %v after %s (worker %d) ended, delay %v",
					ip, rs[i].url, rs[i].worker, gap, rs[i-1].url, rs[i-1].worker, delay)
			}
		}
	}
}

// A worker dies holding a lease in the middle of a fetch: the others finish
// the crawl; every URL is fetched, the one it held once more at most.
func TestFrontierWorkerDiesMidFetch(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 8, Capacity: 10_000}, redistest.Options{})
	ctx := context.Background()
	var urls []string
	for i := 0; i < 60; i++ {
		urls = append(urls, fmt.Sprintf("http://h%d.example/%d", i%6, i))
	}
	if _, err := c.Enqueue(ctx, c.NewIDs(), items(urls...)); err != nil {
		t.Fatal(err)
	}
	if q, err := c.QueuedAll(ctx); err != nil || q != int64(len(urls)) {
		t.Fatalf("queued at the start: %d %v, want %d", q, err, len(urls))
	}
	ipOf := func(h string) string { return "ip:" + h }
	reqs := crawlWorkers(t, srv, 3, 10*time.Millisecond, time.Millisecond, ipOf, map[int]int{0: 5}, nil)
	checkCrawl(t, reqs, urls, 10*time.Millisecond)
	if q, err := c.QueuedAll(ctx); err != nil || q != 0 {
		t.Fatalf("queued at the end: %d %v", q, err)
	}
}

// Redis stops for 1.5 s in the middle of a crawl and comes back with its
// append-only file, the leases and heartbeats run out (the test expires
// them as it stops Redis: what a TTL shorter than the outage does, without
// a TTL of 900 ms that a descheduled heartbeat also outlasted, each time
// letting an item in flight be fetched again): the workers wait (Next says
// why through Err), take the partitions again and finish the crawl; every
// URL is fetched, and at most the items in flight when the leases ran out
// twice. The stop comes after the 10th request, not after a sleep: a loaded
// machine made the crawl finish before a timed stop, or start after it.
func TestFrontierRedisRestart(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 8, Capacity: 10_000}, redistest.Options{})
	ctx := context.Background()
	var urls []string
	for i := 0; i < 80; i++ {
		urls = append(urls, fmt.Sprintf("http://h%d.example/%d", i%8, i))
	}
	if _, err := c.Enqueue(ctx, c.NewIDs(), items(urls...)); err != nil {
		t.Fatal(err)
	}
	done := make(chan []request)
	tenth := make(chan struct{})
	go func() {
		done <- crawlWorkers(t, srv, 2, 5*time.Millisecond, 5*time.Millisecond, func(h string) string { return "ip:" + h }, nil,
			func(n int) {
				if n == 10 {
					close(tenth)
				}
			})
	}()
	select {
	case <-tenth:
	case reqs := <-done:
		t.Fatalf("the crawl ended after %d requests, before its 10th", len(reqs))
	}
	expireWorker(t, c, "w0")
	expireWorker(t, c, "w1")
	srv.Stop()
	stopped := time.Now()
	time.Sleep(1500 * time.Millisecond)
	resumed := time.Now() // before the restart: no pop can precede it, however late Resume returns
	srv.Resume()
	reqs := <-done
	before, after := 0, 0
	for _, r := range reqs {
		if r.end.Before(stopped) {
			before++
		}
		if r.start.After(resumed) {
			after++
		}
	}
	if before == 0 || after == 0 {
		t.Fatalf("%d requests before the stop, %d after the restart: the stop was not in the middle", before, after)
	}
	count := map[string]int{}
	twice := 0
	for _, r := range reqs {
		count[r.url]++
		if count[r.url] == 2 {
			twice++
		}
	}
	for _, u := range urls {
		if count[u] == 0 {
			t.Errorf("%s never fetched", u)
		}
		if count[u] > 2 {
			t.Errorf("%s fetched %d times", u, count[u])
		}
	}
	if twice > 2 { // two workers: at most one item in flight each
		t.Errorf("%d URLs fetched twice, at most 2 were in flight", twice)
	}
	t.Logf("%d requests for %d URLs (%d twice); %d before the stop, %d after the restart", len(reqs), len(urls), twice, before, after)
}

// cmdCount counts the commands a client sends, and its round trips.
type cmdCount struct {
	mu          sync.Mutex
	cmds, trips int
}

func (h *cmdCount) add(n int) {
	h.mu.Lock()
	h.cmds += n
	h.trips++
	h.mu.Unlock()
}
func (h *cmdCount) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *cmdCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.add(1); return next(ctx, cmd) }
}
func (h *cmdCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.add(len(cmds)); return next(ctx, cmds) }
}

// The crawl's queue is counted with one command a partition in one round
// trip, however many hosts are queued (the progress line, /metrics and
// the end of a crawl ask for it; it was one LLEN a host), at most once
// every queuedMaxAge while the frontier runs; a Redis that does not answer
// makes Frontier.Stats say so within its bound, not report an empty queue
// (which ended a crawl as complete).
func TestFrontierStatsQueued(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	ctx := context.Background()
	rdb, err := Connect(ctx, srv.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	h := &cmdCount{}
	rdb.AddHook(h)
	const parts, hosts, urls = 8, 600, 3000
	c, err := Open(ctx, rdb, "stats", Options{Partitions: parts, Capacity: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	var us []string
	for i := 0; i < urls; i++ {
		us = append(us, fmt.Sprintf("http://h%d.example/%d", i%hosts, i))
	}
	if _, err := c.Enqueue(ctx, c.NewIDs(), items(us...)); err != nil {
		t.Fatal(err)
	}
	m, err := c.Join(ctx, "w", MemberOptions{TTL: time.Minute}) // no heartbeat during the count
	if err != nil {
		t.Fatal(err)
	}
	defer m.Leave(ctx)
	fr := c.NewFrontier(m, FrontierOptions{Options: frontier.DefaultOptions()})
	// The count's age on a clock of the test's: on the wall clock a loaded
	// machine outlasted queuedMaxAge between the count and the next calls.
	clock := time.Unix(1_000_000, 0)
	fr.queued.now = func() time.Time { return clock }
	h.mu.Lock()
	h.cmds, h.trips = 0, 0
	h.mu.Unlock()
	st := fr.Stats()
	h.mu.Lock()
	cmds, trips := h.cmds, h.trips
	h.mu.Unlock()
	t.Logf("%d queued over %d hosts counted with %d commands in %d round trips", st.Queued, hosts, cmds, trips)
	if st.Err != nil || st.Queued != urls {
		t.Fatalf("queued %d, %v; want %d", st.Queued, st.Err, urls)
	}
	if cmds > parts || trips != 1 {
		t.Errorf("%d commands in %d round trips for %d partitions of %d hosts", cmds, trips, parts, hosts)
	}
	// While the frontier runs a count is reused for a while (the progress
	// line asks twice a second); once stopped (the end of a run decides
	// on it) the count is new.
	if _, err := c.Enqueue(ctx, c.NewIDs(), items("http://late.example/1", "http://late.example/2")); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.cmds, h.trips = 0, 0
	h.mu.Unlock()
	for range 10 {
		if st := fr.Stats(); st.Queued != urls {
			t.Fatalf("queued %d within %v of the count, want its %d", st.Queued, queuedMaxAge, urls)
		}
	}
	h.mu.Lock()
	trips = h.trips
	h.mu.Unlock()
	if trips != 0 {
		t.Errorf("10 Stats within %v: %d round trips", queuedMaxAge, trips)
	}
	clock = clock.Add(queuedMaxAge - time.Millisecond)
	if st := fr.Stats(); st.Queued != urls {
		t.Fatalf("queued %d %v after the count, want its %d", st.Queued, queuedMaxAge-time.Millisecond, urls)
	}
	clock = clock.Add(time.Millisecond)
	if st := fr.Stats(); st.Queued != urls+2 || st.Err != nil {
		t.Fatalf("queued %d, %v %v after the count; want a new count, %d", st.Queued, st.Err, queuedMaxAge, urls+2)
	}
	fr.Stop()
	if st := fr.Stats(); st.Queued != urls+2 || st.Err != nil {
		t.Fatalf("stopped: queued %d, %v; want %d", st.Queued, st.Err, urls+2)
	}
	// A frozen Redis: Stats gives up by its own deadline (statsTimeout)
	// and says why. The wait is bounded only against a hang: a loaded
	// machine outlasted statsTimeout+1s.
	srv.Freeze()
	defer srv.Thaw()
	start := time.Now()
	got := make(chan frontier.Stats, 1)
	go func() { got <- fr.Stats() }()
	select {
	case st = <-got:
	case <-time.After(statsTimeout + time.Minute):
		t.Fatalf("Redis stopped: Stats did not return within %v", statsTimeout+time.Minute)
	}
	took := time.Since(start)
	t.Logf("Redis stopped: %+v after %v", st, took)
	if !errors.Is(st.Err, context.DeadlineExceeded) || took < statsTimeout {
		t.Fatalf("Redis stopped: Stats %+v after %v, want its deadline (%v)", st, took, statsTimeout)
	}
}

// A request's hold of its IP's clock lasts while its worker's heartbeat
// does: another worker leaves a live worker's hold alone however old it is,
// and ends a gone worker's (killed: its heartbeat ran out) with the
// politeness gap, as its release would have; a hold released or taken again
// since it was read is left alone.
func TestGoneWorkersIPHoldEnds(t *testing.T) {
	t.Parallel()
	srv, c1 := open(t, Options{Partitions: 2, Capacity: 1000}, redistest.Options{})
	c2 := openOn(t, srv, Options{})
	ctx := context.Background()
	m1, err := c1.Join(ctx, "w1", MemberOptions{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := c2.Join(ctx, "w2", MemberOptions{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Abandon()
	const delay = 40 * time.Millisecond
	f2 := c2.NewFrontier(m2, FrontierOptions{Options: frontier.Options{Delay: delay}})
	if r, _, _, err := c1.ReserveIP(ctx, "10.0.0.1", "w1 a.example 1", 10*time.Minute); r == nil || err != nil {
		t.Fatalf("w1's reservation: %v %v", r, err)
	}
	v, err := c2.run(ctx, "reserve ip", ipReserveScript, []string{c2.ipKey("10.0.0.1")}, 60_000, "w2 b.example 1")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := parseReserve(v)
	if err != nil || rep.reserved || rep.held == nil || rep.held.worker != "w1" || rep.held.host != "a.example" {
		t.Fatalf("w2's reservation of the held IP: %+v %v, want held by w1 for a.example", rep, err)
	}
	old := *rep.held
	old.age = time.Hour // as old as any request: only the heartbeat decides
	if _, ended := f2.endDeadHold(ctx, "10.0.0.1", &old); ended {
		t.Fatal("the hold of a live worker was ended")
	}
	m1.Abandon()
	expireWorker(t, c1, "w1") // killed: its heartbeat ran out
	f2.holdChecked = map[string]time.Time{}
	stale := old
	stale.value = strings.Replace(old.value, " H ", " H 1", 1) // not the value now held
	if _, ended := f2.endDeadHold(ctx, "10.0.0.1", &stale); ended {
		t.Fatal("a hold whose value changed since it was read was ended")
	}
	f2.holdChecked = map[string]time.Time{}
	gap, ended := f2.endDeadHold(ctx, "10.0.0.1", &old)
	if !ended || gap != delay {
		t.Fatalf("the hold of a gone worker: ended %v, gap %v; want ended with the gap %v", ended, gap, delay)
	}
	now, _ := c2.rdb.Get(ctx, c2.ipKey("10.0.0.1")).Result()
	if !strings.Contains(now, " G w1 a.example 1") {
		t.Fatalf("the IP's clock after the hold ended: %q, want a gap under w1's token", now)
	}
	if f2.HoldsEnded() != 1 {
		t.Errorf("HoldsEnded %d, want 1", f2.HoldsEnded())
	}
	// w1's late release (it was alive after all) still ends its request.
	if err := c1.ReleaseIP(ctx, &Reservation{ip: "10.0.0.1", token: "w1 a.example 1"}, 0); err != nil {
		t.Fatal(err)
	}
	if n, _ := c2.rdb.Exists(ctx, c2.ipKey("10.0.0.1")).Result(); n != 0 {
		t.Errorf("w1's release after the end of its hold left the IP's clock %q", now)
	}
}
