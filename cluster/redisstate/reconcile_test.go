//go:build e2e

package redisstate

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// lostReplyCrawl is crawl "t" on srv through a client that gives up on a
// reply after 200 ms (go-redis's own retries left as Connect leaves them:
// a command that timed out is sent again, up to 3 times), a worker holding
// every partition for a minute (its lease never moves to another holder in
// the test) and its frontier (no delay: the IP's clock is free between
// requests).
func lostReplyCrawl(t *testing.T, srv *redistest.Server) (*Crawl, *Member, *Frontier) {
	t.Helper()
	ctx := context.Background()
	rdb, err := Connect(ctx, srv.URL()+"?read_timeout=200ms&write_timeout=200ms", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	if _, err := EnsureServerConfig(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	c, err := Open(ctx, rdb, "t", Options{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Join(ctx, "w1", MemberOptions{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Abandon)
	return c, m, c.NewFrontier(m, FrontierOptions{Options: frontier.Options{MaxFailures: 10}})
}

// lostState is what Redis holds of host's partition: the in-flight hash,
// the value of the IP's clock (the host is its own politeness key) and the
// lease.
func lostState(t *testing.T, rdb redis.UniversalClient, c *Crawl, host string) (inflight map[string]string, ip, lease string) {
	t.Helper()
	ctx := context.Background()
	p := c.PartitionOf(host)
	inflight, err := rdb.HGetAll(ctx, c.inflightKey(p)).Result()
	if err != nil {
		t.Fatal(err)
	}
	ip, _ = rdb.Get(ctx, c.ipKey(host)).Result()
	lease, _ = rdb.Get(ctx, c.leaseKey(p)).Result()
	return inflight, ip, lease
}

// TestLostPopReplyReconciled: a pop whose reply is lost (Redis stalled past
// the client's read timeout; SIGSTOP here) and that Redis executes when it
// resumes leaves its item in the partition's in-flight hash under the
// worker's own live lease and the IP's clock held (for the 2 min hold) by
// the worker's token, while the worker believes nothing happened. Nobody
// else requeues the item (the lease does not move) and a one-worker crawl
// would wait for it forever (in flight is never empty). The worker
// reconciles once Redis answers: the crawl then finishes at once, every URL
// leased exactly once after the stall, nothing left in flight or held.
func TestLostPopReplyReconciled(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	c, _, f := lostReplyCrawl(t, srv)
	ctx := context.Background()
	const host = "a.example"
	urls := []string{"http://a.example/1", "http://a.example/2", "http://a.example/3"}
	if _, err := c.Enqueue(ctx, c.NewIDs(), items(urls...)); err != nil {
		t.Fatal(err)
	}
	// One page before the stall: the frontier knows the host and its
	// partition's hosts (cached 500 ms), so its next try is the pop itself.
	it, err := f.Next(ctx)
	if err != nil || it.URL != urls[0] {
		t.Fatalf("first Next: %v %v", it, err)
	}
	f.Release(it, frontier.Outcome{Requested: true, Status: 200})
	f.Finish(it)

	srv.Freeze()
	// Long enough for the pop to be sent even when the host list's
	// refresh comes first (and times out: Next waits 500 ms and pops
	// from the list it has).
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	it, err = f.Next(sctx)
	cancel()
	srv.Thaw()
	if !errors.Is(err, context.DeadlineExceeded) || it != nil {
		t.Fatalf("Next with Redis stopped: %v %v, want the deadline", it, err)
	}
	if e := f.Err(); !errors.Is(e, ErrUnavailable) {
		t.Fatalf("Next with Redis stopped says %v, want unavailable", e)
	}
	// Redis runs the pops it was sent while stopped (go-redis sent each
	// up to 4 times) once it resumes.
	rdb := srv.Client(t)
	var inflight map[string]string
	var ip, lease string
	for deadline := time.Now().Add(hangBound); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if inflight, ip, lease = lostState(t, rdb, c, host); len(inflight) > 0 {
			break
		}
	}
	if len(inflight) == 0 || !regexp.MustCompile(` H [0-9]+ w1 `+regexp.QuoteMeta(host)+` `).MatchString(ip) || !strings.HasPrefix(lease, "w1 ") {
		t.Fatalf("after the stall: in flight %q, IP clock %q, lease %q: want items in flight, the IP held by w1, the lease w1's",
			inflight, ip, lease)
	}
	if s := f.Stats(); s.Active != 0 {
		t.Fatalf("the worker leases %d items, want none (it saw no pop)", s.Active)
	}
	t.Logf("after the stall: %d items in flight, IP clock %q, lease %q", len(inflight), ip, lease)

	// The rest of the crawl: each URL leased once, then done.
	got := map[string]int{}
	dctx, cancel := context.WithTimeout(ctx, hangBound) // a hang: a crawl that waits for its lost pop waits forever
	defer cancel()
	start := time.Now()
	for {
		it, err := f.Next(dctx)
		if errors.Is(err, frontier.ErrDone) {
			break
		}
		if err != nil {
			inflight, ip, lease = lostState(t, rdb, c, host)
			t.Fatalf("the crawl did not finish after Redis came back (%v): leased %v; in flight %q, IP clock %q, lease %q",
				err, got, inflight, ip, lease)
		}
		got[it.URL]++
		f.Release(it, frontier.Outcome{Requested: true, Status: 200})
		f.Finish(it)
	}
	t.Logf("finished %v after the stall, leased %v", time.Since(start), got)
	if len(got) != 2 || got[urls[1]] != 1 || got[urls[2]] != 1 {
		t.Errorf("leased after the stall: %v, want %s and %s once each", got, urls[1], urls[2])
	}
	if inflight, ip, _ = lostState(t, rdb, c, host); len(inflight) != 0 || strings.Contains(ip, " H ") {
		t.Errorf("at the end: in flight %q, IP clock %q", inflight, ip)
	}
}

// TestLostPutBackAndEndRedone: a put-back (Release with Requeue) and an end
// of a lease (Finish) sent while Redis is down leave their items in flight
// under the worker's own lease, the IP's clock of the released request held:
// a one-worker crawl would never be done. Once Redis is back the worker runs
// them again: the requeued item is leased once more, the finished one not,
// and the crawl finishes.
func TestLostPutBackAndEndRedone(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	c, _, f := lostReplyCrawl(t, srv)
	ctx := context.Background()
	urls := []string{"http://a.example/1", "http://b.example/1"}
	if _, err := c.Enqueue(ctx, c.NewIDs(), items(urls...)); err != nil {
		t.Fatal(err)
	}
	leased := map[string]*frontier.Item{}
	for len(leased) < 2 {
		it, err := f.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		leased[it.URL] = it
	}
	srv.Stop()
	if f.Release(leased[urls[0]], frontier.Outcome{Requeue: true}) != true {
		t.Error("Release with Requeue and Redis down: not requeued")
	}
	f.Release(leased[urls[1]], frontier.Outcome{Requested: true, Status: 200})
	f.Finish(leased[urls[1]])
	srv.Resume()
	rdb := srv.Client(t)
	for _, u := range urls {
		host := leased[u].Host
		if inflight, _, _ := lostState(t, rdb, c, host); len(inflight) != 1 {
			t.Fatalf("after Redis came back: %s's partition has in flight %q, want its item", host, inflight)
		}
	}
	got := map[string]int{}
	dctx, cancel := context.WithTimeout(ctx, hangBound) // a hang: a crawl that waits for its lost pop waits forever
	defer cancel()
	for {
		it, err := f.Next(dctx)
		if errors.Is(err, frontier.ErrDone) {
			break
		}
		if err != nil {
			t.Fatalf("the crawl did not finish after Redis came back (%v): leased %v", err, got)
		}
		got[it.URL]++
		if it.Tries != 0 {
			t.Errorf("%s leased again with %d tries, want 0 (Requeue without a request)", it.URL, it.Tries)
		}
		f.Release(it, frontier.Outcome{Requested: true, Status: 200})
		f.Finish(it)
	}
	if len(got) != 1 || got[urls[0]] != 1 {
		t.Errorf("leased after Redis came back: %v, want %s once", got, urls[0])
	}
	for _, u := range urls {
		host := leased[u].Host
		if inflight, ip, _ := lostState(t, rdb, c, host); len(inflight) != 0 || strings.Contains(ip, " H ") {
			t.Errorf("at the end: %s's in flight %q, IP clock %q", host, inflight, ip)
		}
	}
	if s := f.Reconciled(); s.Redone != 2 || s.IPs != 2 {
		t.Errorf("reconciled: %+v, want 2 redone, 2 IP clocks released", s)
	}
}

// TestLateOrphanRequeuedWhenIdle: a pop of this worker's that Redis runs
// after every sweep (a command the network delayed; run here from another
// client with the worker's lease token) leaves an item in flight that no
// lease holds. The worker finds it when it has nothing left to lease (its
// check for the end of the crawl) and requeues it: the crawl finishes with
// every URL leased once.
func TestLateOrphanRequeuedWhenIdle(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	c, m, f := lostReplyCrawl(t, srv)
	ctx := context.Background()
	const host = "a.example"
	urls := []string{"http://a.example/1", "http://a.example/2"}
	if _, err := c.Enqueue(ctx, c.NewIDs(), items(urls...)); err != nil {
		t.Fatal(err)
	}
	p := c.PartitionOf(host)
	var token string
	for _, l := range m.Owned() {
		if l.Partition == p {
			token = l.token
		}
	}
	rdb := srv.Client(t)
	late := popScript.Run(ctx, rdb, []string{c.leaseKey(p), c.queueKey(p, host), c.hostsKey(p), c.inflightKey(p)}, token, host)
	if raw, err := late.Text(); err != nil || raw == "" {
		t.Fatalf("the late pop: %q %v", raw, err)
	}
	got := map[string]int{}
	dctx, cancel := context.WithTimeout(ctx, hangBound) // a hang: a crawl that waits for its lost pop waits forever
	defer cancel()
	for {
		it, err := f.Next(dctx)
		if errors.Is(err, frontier.ErrDone) {
			break
		}
		if err != nil {
			inflight, _, _ := lostState(t, rdb, c, host)
			t.Fatalf("the crawl did not finish (%v): leased %v, in flight %q", err, got, inflight)
		}
		got[it.URL]++
		f.Release(it, frontier.Outcome{Requested: true, Status: 200})
		f.Finish(it)
	}
	if len(got) != 2 || got[urls[0]] != 1 || got[urls[1]] != 1 {
		t.Errorf("leased: %v, want each URL once", got)
	}
	if s := f.Reconciled(); s.Requeued != 1 || s.Uncertain != 0 {
		t.Errorf("reconciled: %+v, want 1 requeued, no uncertain outcome", s)
	}
}

// TestUncertainOutcome: only an error that is not Redis's reply leaves open
// whether a command ran.
func TestUncertainOutcome(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	ctx := context.Background()
	rdb := srv.Client(t)
	replyErr := rdb.Do(ctx, "NOSUCHCOMMAND").Err()
	nilErr := rdb.Get(ctx, "absent").Err()
	slow := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 100 * time.Millisecond, MaxRetries: -1})
	defer slow.Close()
	srv.Freeze()
	timeoutErr := slow.Ping(ctx).Err()
	srv.Thaw()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"redis.Nil", nilErr, false},
		{"an error reply", replyErr, false},
		{"an error reply, wrapped", wrap("op", replyErr), false},
		{"a timeout", timeoutErr, true},
		{"a timeout, wrapped", wrap("op", timeoutErr), true},
		{"a context ended", rdb.Ping(cctx).Err(), true},
	} {
		if c.err == nil && c.name != "nil" {
			t.Fatalf("%s: no error to classify", c.name)
		}
		if got := uncertain(c.err); got != c.want {
			t.Errorf("uncertain(%s: %v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
