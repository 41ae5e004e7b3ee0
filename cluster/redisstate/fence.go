package redisstate

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// The fence before a request. The epoch fences a worker's pops and put-backs,
// and a worker pops only while its last renewal is fresh (forPop), but a
// worker that stalls between its pop and its request (GC, SIGSTOP, swap, a
// suspended machine) for longer than its lease has left sends a URL that the
// partition's next holder has requeued and sends too. CheckLease, asked right
// before the request, closes that window: the request goes only when the
// lease the item was popped under is still held, by Redis's own account, with
// at least FenceMargin left once the answer is back.
//
// Why ask Redis (one round trip) rather than trust the last renewal: the
// renewal's send time bounds the lease from below only while Redis keeps what
// it acknowledged and its clock and the worker's run at one rate. A lease
// lost to a failover onto a replica that had not seen the renewal, a restart
// that lost it (appendfsync everysec), an eviction (a volatile-* maxmemory
// policy evicts exactly the keys with a TTL) or an operator's DEL, or a
// worker's monotonic clock that stood still while Redis's ran (a suspended
// machine: Linux's CLOCK_MONOTONIC stops in suspend) all pass a local check
// and fail this one. The engine asks it before a page's fetch, and again
// (crawl/fence.go) once the request's connection is obtained when that took
// over a tenth of FenceMargin, and once robots.txt's connection is
// obtained: name lookup, connect and TLS are outside the window. What is
// left: a stall of 9/10 of the margin that begins between the connection
// handed over and the request's write(2) (docs/SCALE.md). No crawler can
// fence a third-party server.

// ErrFenced is CheckLease's error: the item's lease is not proven to last
// until its request is sent.
var ErrFenced = errors.New("redisstate: the lease of the item's partition is not proven to last")

// checkLeaseScript reads a lease for its holder without changing it.
// KEYS: lease. ARGV: token ("worker epoch"). Returns the ms it has left, or
// -1 when it is not token's (expired, or taken since with another epoch).
var checkLeaseScript = redis.NewScript(`#!lua flags=no-writes
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
return redis.call('PTTL', KEYS[1])
`)

// FenceMargin is the lease time a request must have left when it is sent: a
// third of the TTL, what the heartbeat's renewal (every TTL/3) always leaves.
func (m *Member) FenceMargin() time.Duration { return m.o.TTL / 3 }

// FenceMargin is the lease time a passed CheckLease proves left
// (crawl.LeaseChecker).
func (f *Frontier) FenceMargin() time.Duration { return f.m.FenceMargin() }

// FenceStats count the lease checks before requests (CheckLease): Checked,
// and of those the requests not sent because the lease was gone (Lost), had
// less than the margin left (Short), or could not be read from Redis within
// the TTL (Unchecked). StaleEnds counts the ends of leases (the commit's, or
// Finish) that left the item's in-flight record because its partition was
// taken again since the pop (Member.StaleEnds): a page committed late by a
// worker that stalled past its lease after its request.
type FenceStats struct {
	Checked, Lost, Short, Unchecked int64
	StaleEnds                       int64
}

type fenceStats struct{ checked, lost, short, unchecked atomic.Int64 }

// FenceStats returns the worker's lease check counters.
func (f *Frontier) FenceStats() FenceStats {
	s := &f.fence
	return FenceStats{Checked: s.checked.Load(), Lost: s.lost.Load(), Short: s.short.Load(), Unchecked: s.unchecked.Load(),
		StaleEnds: f.m.StaleEnds()}
}

// CheckLease is the fence before an item's request (crawl.LeaseChecker): nil when
// the lease it was popped under is still this worker's, with at least
// FenceMargin left, counted from when the check was sent; else an ErrFenced
// (the request must not be sent: Release it with Requeue, which puts it back
// only under that same lease; a lost lease's holder requeues it). One round
// trip; while Redis is unavailable it asks again every 100 ms, for at most
// the TTL.
func (f *Frontier) CheckLease(ctx context.Context, it *frontier.Item) error {
	f.mu.Lock()
	l := f.leased[it]
	f.mu.Unlock()
	if l == nil {
		return fmt.Errorf("%w: %s is not leased here", ErrFenced, it.URL)
	}
	f.fence.checked.Add(1)
	p, margin := f.c.PartitionOf(it.Host), f.m.FenceMargin()
	first := time.Now()
	for {
		sent := time.Now()
		v, err := f.c.run(ctx, "check lease", checkLeaseScript, []string{f.c.leaseKey(p)}, l.token)
		if err == nil {
			ms, _ := v.(int64)
			left := time.Duration(ms)*time.Millisecond - time.Since(sent)
			switch {
			case ms < 0:
				f.fence.lost.Add(1)
				return fmt.Errorf("%w: lease %q of partition %d is gone", ErrFenced, l.token, p)
			case left < margin:
				f.fence.short.Add(1)
				return fmt.Errorf("%w: lease %q of partition %d has %v left, less than %v", ErrFenced, l.token, p, left, margin)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ErrFenced, ctx.Err()) // stopping: not counted
		}
		if !errors.Is(err, ErrUnavailable) || time.Since(first) > f.m.o.TTL {
			f.fence.unchecked.Add(1)
			return fmt.Errorf("%w: %w", ErrFenced, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
