//go:build e2e

package redisstate

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// TestCheckLeaseFence: the lease check before a request passes under a held
// lease with time to spare (also after Redis lost its scripts), and fails
// when the lease has less than the margin left (the release then puts the
// item back: the lease is still the worker's), and when the lease the item
// was popped under ran out, even though the same worker holds the partition
// again under a new epoch (whose acquire requeued the item, popped again
// since): the release of the stale item then leaves the new pop in flight.
func TestCheckLeaseFence(t *testing.T) {
	t.Parallel()
	_, c := open(t, Options{Partitions: 2, Capacity: 1000}, redistest.Options{})
	ctx := context.Background()
	const host = "a.example"
	if _, err := c.Enqueue(ctx, c.NewIDs(), items("http://a.example/1")); err != nil {
		t.Fatal(err)
	}
	const ttl = 3 * time.Second
	m, err := c.Join(ctx, "w", MemberOptions{TTL: ttl, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Leave(ctx)
	f := c.NewFrontier(m, FrontierOptions{})
	p, rdb := c.PartitionOf(host), c.Client()
	counts := func() (queued, inFlight int64) {
		q, _ := c.Queued(ctx, p)
		n, _ := c.InFlight(ctx, p)
		return q, n
	}

	it, err := f.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.CheckLease(ctx, it); err != nil {
		t.Fatalf("a fresh lease: %v", err)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.CheckLease(ctx, it); err != nil {
		t.Fatalf("after Redis lost its scripts: %v", err)
	}

	// Less than the margin left (a heartbeat late by more than TTL/3).
	if err := rdb.PExpire(ctx, c.leaseKey(p), m.FenceMargin()-200*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.CheckLease(ctx, it); !errors.Is(err, ErrFenced) {
		t.Fatalf("a lease with less than the margin left: %v, want ErrFenced", err)
	}
	if f.Release(it, frontier.Outcome{Requeue: true}); true {
		if q, n := counts(); q != 1 || n != 0 {
			t.Fatalf("released under its own lease: %d queued, %d in flight; want it queued", q, n)
		}
	}
	if err := m.round(ctx); err != nil { // the late heartbeat renews it
		t.Fatal(err)
	}

	// The lease runs out (the worker stalled): its heartbeat takes the
	// partition again under a new epoch, which requeues the item, and pops
	// it again.
	stale, err := f.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	epochOf := func() int64 {
		for _, l := range m.Owned() {
			if l.Partition == p {
				return l.Epoch
			}
		}
		return 0
	}
	epoch := epochOf()
	if err := rdb.Del(ctx, c.leaseKey(p)).Err(); err != nil { // as its expiry would
		t.Fatal(err)
	}
	if err := m.round(ctx); err != nil {
		t.Fatal(err)
	}
	if e := epochOf(); e == 0 || e == epoch {
		t.Fatalf("partition %d after the expiry: epoch %d (was %d), want it again under a new epoch", p, e, epoch)
	}
	if _, _, ok, err := m.Pop(ctx, host); !ok || err != nil {
		t.Fatalf("pop under the new lease: %v %v", ok, err)
	}
	if err := f.CheckLease(ctx, stale); !errors.Is(err, ErrFenced) {
		t.Fatalf("an item popped under a lease that ran out: %v, want ErrFenced", err)
	}
	f.Release(stale, frontier.Outcome{Requeue: true})
	if q, n := counts(); q != 0 || n != 1 {
		t.Fatalf("after the stale item's release: %d queued, %d in flight; want it in flight under the new pop only", q, n)
	}
	st := f.FenceStats()
	if st.Checked != 4 || st.Short != 1 || st.Lost != 1 || st.Unchecked != 0 {
		t.Fatalf("fence stats %+v, want 4 checked, 1 short, 1 lost", st)
	}
}

// TestCheckLeaseRedisUnavailable: while Redis is down the check asks again;
// a server back within the TTL answers it (the lease held, with time left:
// the request goes), one down for longer than the TTL fails it (not sent,
// counted unanswered). The answer is asserted to follow the restart (an
// order), and the give-up to come after the TTL (a lower bound): a lease of
// a minute for the first, so that a slow restart on a loaded machine stays
// within it, and one of 6 s for the second, bounded only against a hang.
func TestCheckLeaseRedisUnavailable(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	ctx := context.Background()
	// leased joins crawl name with the TTL and leases its one item.
	leased := func(name string, ttl time.Duration) (*Frontier, *frontier.Item) {
		c, err := Open(ctx, srv.Client(t), name, Options{Partitions: 2, Capacity: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Enqueue(ctx, c.NewIDs(), items("http://a.example/1")); err != nil {
			t.Fatal(err)
		}
		m, err := c.Join(ctx, "w", MemberOptions{TTL: ttl, Heartbeat: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Abandon)
		f := c.NewFrontier(m, FrontierOptions{})
		it, err := f.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return f, it
	}
	long, longIt := leased("long", time.Minute)
	const ttl = 6 * time.Second
	short, shortIt := leased("short", ttl)

	srv.Stop()
	var resuming atomic.Bool
	back := make(chan struct{})
	go func() {
		time.Sleep(300 * time.Millisecond)
		resuming.Store(true)
		srv.Resume()
		close(back)
	}()
	if err := long.CheckLease(ctx, longIt); err != nil {
		t.Fatalf("Redis back within the TTL: %v", err)
	}
	if !resuming.Load() {
		t.Fatal("the lease check answered while Redis was down")
	}
	<-back
	if st := long.FenceStats(); st.Checked != 1 || st.Unchecked+st.Lost+st.Short != 0 {
		t.Errorf("fence stats %+v, want 1 checked, passed", st)
	}

	srv.Stop()
	defer srv.Resume()
	cctx, cancel := context.WithTimeout(ctx, ttl+hangBound)
	defer cancel()
	start := time.Now()
	if err := short.CheckLease(cctx, shortIt); !errors.Is(err, ErrFenced) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Redis down: %v, want ErrFenced and ErrUnavailable", err)
	}
	if d := time.Since(start); d < ttl {
		t.Errorf("gave up after %v, before the TTL (%v)", d, ttl)
	}
	if st := short.FenceStats(); st.Checked != 1 || st.Unchecked != 1 || st.Lost+st.Short != 0 {
		t.Errorf("fence stats %+v, want 1 checked, unanswered", st)
	}
}
