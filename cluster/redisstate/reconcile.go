package redisstate

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// Lost replies. A command sent to a Redis that stalls (a fork, a slow
// script, a network stall, SIGSTOP) is still run when Redis resumes, though
// the client timed out, closed the connection and reported an error (and
// go-redis may have sent it again, up to MaxRetries times, each run too). So
// an error that is not Redis's own reply (a timeout, a connection lost) is
// an uncertain outcome: the command may have run, later, or not at all.
// Left alone, a pop that ran for nothing leaves its item in the partition's
// in-flight hash under the worker's own live lease (nobody requeues it
// until the lease moves, and a crawl is not done while anything is in
// flight) and the IP's clock held by the worker for the hold (2 min); a
// put-back or an end of a lease that did not run leaves the item in flight
// the same way.
//
// The frontier notes each uncertain outcome (what it cannot tell) and
// reconciles once Redis answers again, from Next, before its next pop:
//   - the put-backs and ends of leases it could not confirm run again (both
//     scripts do nothing the second time);
//   - the IP reservations it could not confirm are released with their own
//     token (every reservation has a token of its own: the worker, the host
//     and a sequence number), so a release never touches another
//     reservation;
//   - the in-flight entries of the partitions it holds that it has not
//     leased (no local lease of that item under the partition's current
//     lease, and no pop of the host under way) go back to the front of
//     their queues (putBackScript: only under the lease they were popped
//     under, only while still in flight).
//
// A command delayed in the network may arrive after that: the frontier
// reconciles again 5 s, 30 s and 2 min after the last uncertain outcome, and when
// it finds the crawl otherwise done but items in flight in a partition it
// holds with nothing leased here. Nothing of this costs a round trip while
// no outcome is uncertain.

// sweepsAfter are the delays of the sweeps after the first: the commands a
// stalled Redis runs late are usually run before it answers again, those
// the network delays a little later.
// The last comes after the longest hold a late reservation may have taken
// (FrontierOptions.Hold's default).
var sweepsAfter = []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute}

// unsure is what the frontier could not confirm (guarded by Frontier.mu).
type unsure struct {
	ends    map[pendingEnd]bool  // value: counted in Member.inflight
	backs   map[pendingBack]bool // value: counted in Member.inflight
	ips     map[pendingIP]bool   // until the last sweep
	parts   map[int]bool         // partitions whose in-flight hash may hold orphans
	due     time.Time            // the next sweep (zero: none)
	next    int                  // sweepsAfter[next] comes after it
	gen     int                  // uncertain outcomes so far
	running bool                 // a sweep is under way
	stats   ReconcileStats       // what the sweeps did
}

type pendingEnd struct {
	host, raw string
	epoch     int64
}

type pendingBack struct {
	token, host, raw, item string
	front                  bool
	refund                 bool // its page goes back to the crawl's budget when it runs
}

type pendingIP struct {
	ip, token string
	gap       time.Duration
}

// ReconcileStats counts what the frontier did after uncertain outcomes.
type ReconcileStats struct {
	Uncertain int64 // outcomes that could not be told (timeouts, connections lost)
	Sweeps    int64 // reconciliations run
	Requeued  int64 // in-flight items leased here by nobody, put back in their queues
	Redone    int64 // put-backs and ends of leases run again that had not run
	IPs       int64 // IP clocks released that a lost reservation held
}

// Reconciled returns what the frontier did after uncertain outcomes.
func (f *Frontier) Reconciled() ReconcileStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unsure.stats
}

// uncertain reports whether err leaves open whether the command ran: an
// error that is not Redis's reply (a timeout, a connection lost, a context
// ended while waiting for the reply).
func uncertain(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	var re redis.Error
	return !errors.As(err, &re)
}

// unsureLocked schedules a sweep now (and the later ones). Called with
// f.mu held.
func (f *Frontier) unsureLocked() {
	u := &f.unsure
	u.stats.Uncertain++
	u.gen++
	u.due, u.next = time.Now(), 0
}

// lostPop notes a pop of partition p whose reply was lost.
func (f *Frontier) lostPop(p int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unsure.parts == nil {
		f.unsure.parts = map[int]bool{}
	}
	f.unsure.parts[p] = true
	f.unsureLocked()
}

// lostIP notes a reservation (or its release, gap after it) whose outcome
// is not known.
func (f *Frontier) lostIP(r *Reservation, gap time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unsure.ips == nil {
		f.unsure.ips = map[pendingIP]bool{}
	}
	f.unsure.ips[pendingIP{r.ip, r.token, gap}] = true
	f.unsureLocked()
}

// lostBack notes a put-back that did not run or whose outcome is not known
// (counted: the Member counts the item in flight until it runs).
func (f *Frontier) lostBack(token string, it *frontier.Item, raw string, front, counted, refund bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unsure.backs == nil {
		f.unsure.backs = map[pendingBack]bool{}
	}
	f.unsure.backs[pendingBack{token, it.Host, raw, EncodeItem(it), front, refund}] = counted
	f.unsureLocked()
}

// lostEnd notes an end of a lease that did not run or whose outcome is not
// known (the Member counts the item in flight until it runs).
func (f *Frontier) lostEnd(host, raw string, epoch int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unsure.ends == nil {
		f.unsure.ends = map[pendingEnd]bool{}
	}
	f.unsure.ends[pendingEnd{host, raw, epoch}] = true
	f.unsureLocked()
}

// orphansSuspected notes that partitions held here have items in flight
// while nothing is leased here (crawlDone): they are looked at now.
func (f *Frontier) orphansSuspected(parts []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unsure.parts == nil {
		f.unsure.parts = map[int]bool{}
	}
	for _, p := range parts {
		f.unsure.parts[p] = true
	}
	if f.unsure.due.IsZero() {
		f.unsure.next = len(sweepsAfter) // no sweeps after this one for it
	}
	f.unsure.due = time.Now()
}

// endingLocked notes that Finish is ending l's lease (the item is no
// longer leased here, and still in flight in Redis until its end runs: not
// an orphan). Called with f.mu held; ended undoes it.
func (f *Frontier) endingLocked(l *fleased) string {
	if l == nil || l.raw == "" {
		return ""
	}
	if f.ending == nil {
		f.ending = map[string]int{}
	}
	k := l.token + "\x00" + l.raw
	f.ending[k]++
	return k
}

func (f *Frontier) ended(k string) {
	if k == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ending[k]--; f.ending[k] <= 0 {
		delete(f.ending, k)
	}
}

// reconcileDue starts a sweep when one is due and none is under way.
func (f *Frontier) reconcileDue() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	u := &f.unsure
	if u.due.IsZero() || u.running || time.Now().Before(u.due) {
		return false
	}
	u.running = true
	return true
}

// reconcile is one sweep (above): one round trip to run again what did not
// run, release the IP clocks and read the in-flight hashes of the suspected
// partitions held, one more to requeue what no local lease holds. An error
// (Redis unavailable) leaves everything to the next sweep, 500 ms later.
func (f *Frontier) reconcile(ctx context.Context) (err error) {
	c, m := f.c, f.m
	f.mu.Lock()
	u := &f.unsure
	ends := make([]pendingEnd, 0, len(u.ends))
	for e := range u.ends {
		ends = append(ends, e)
	}
	backs := make([]pendingBack, 0, len(u.backs))
	for b := range u.backs {
		backs = append(backs, b)
	}
	ips := make([]pendingIP, 0, len(u.ips))
	for r := range u.ips {
		ips = append(ips, r)
	}
	var parts []int
	for p := range u.parts {
		parts = append(parts, p)
	}
	gen := u.gen
	f.mu.Unlock()
	tokens := map[int]string{}
	for _, l := range m.Owned() {
		tokens[l.Partition] = l.token
	}
	defer func() {
		f.mu.Lock()
		u.running = false
		if err != nil {
			u.due = time.Now().Add(500 * time.Millisecond)
		}
		f.mu.Unlock()
	}()
	cmds, err := c.pipelined(ctx, "reconcile", func(pipe redis.Pipeliner) {
		for _, e := range ends {
			p := c.PartitionOf(e.host)
			doneScript.EvalSha(ctx, pipe, []string{c.inflightKey(p), c.epochKey(p)}, e.raw, e.epoch)
		}
		for _, b := range backs {
			p := c.PartitionOf(b.host)
			putBackScript.EvalSha(ctx, pipe, []string{c.leaseKey(p), c.queueKey(p, b.host), c.hostsKey(p), c.inflightKey(p), c.hostBudgetKey(p)},
				b.token, b.host, b.raw, b.item, where(b.front))
		}
		for _, r := range ips {
			ipReleaseScript.EvalSha(ctx, pipe, []string{c.ipKey(r.ip)}, r.gap.Milliseconds(), r.token)
		}
		for _, p := range parts {
			pipe.HGetAll(ctx, c.inflightKey(p))
		}
	})
	if err != nil {
		return err
	}
	var stats ReconcileStats
	var counted []int // items the Member counts in flight that are not any more
	f.mu.Lock()
	for i, e := range ends {
		v, _ := cmds[i].(*redis.Cmd).Int64()
		switch v {
		case -1:
			m.staleEnds.Add(1)
		case 1:
			stats.Redone++
		}
		counted = append(counted, c.PartitionOf(e.host))
		delete(u.ends, e)
	}
	var refund int64
	for i, b := range backs {
		v, _ := cmds[len(ends)+i].(*redis.Cmd).Int64()
		if v == 1 {
			stats.Redone++
			if b.refund {
				refund++
			}
		}
		if u.backs[b] {
			counted = append(counted, c.PartitionOf(b.host))
		}
		delete(u.backs, b)
	}
	for i := range ips {
		if v, _ := cmds[len(ends)+len(backs)+i].(*redis.Cmd).Int64(); v == 1 {
			stats.IPs++
		}
	}
	// What no local lease holds: each in-flight entry of a partition held
	// (under the lease it was read under), of a host not being popped now,
	// that is not leased here under that lease.
	leased := map[string]bool{}
	for _, l := range f.leased {
		leased[l.token+"\x00"+l.raw] = true
	}
	for k := range f.ending {
		leased[k] = true
	}
	type orphan struct {
		p              int
		token, host, r string
	}
	var orphans []orphan
	for i, p := range parts {
		delete(u.parts, p)
		tok, held := tokens[p]
		if !held {
			continue // requeued by its next holder
		}
		all := cmds[len(ends)+len(backs)+len(ips)+i].(*redis.MapStringStringCmd).Val()
		for raw, host := range all {
			if hs := f.hosts[host]; leased[tok+"\x00"+raw] || (hs != nil && hs.popping) {
				continue
			}
			orphans = append(orphans, orphan{p, tok, host, raw})
		}
	}
	u.stats.Sweeps++
	u.stats.Redone += stats.Redone
	u.stats.IPs += stats.IPs
	f.mu.Unlock()
	for _, p := range counted {
		m.doneLocal(p)
	}
	f.refund(ctx, refund)
	if len(orphans) > 0 {
		cmds, err := c.pipelined(ctx, "reconcile", func(pipe redis.Pipeliner) {
			for _, o := range orphans {
				putBackScript.EvalSha(ctx, pipe, []string{c.leaseKey(o.p), c.queueKey(o.p, o.host), c.hostsKey(o.p), c.inflightKey(o.p), c.hostBudgetKey(o.p)},
					o.token, o.host, o.r, o.r, "front")
			}
		})
		if err != nil {
			// Looked at again at the next sweep.
			f.mu.Lock()
			for _, o := range orphans {
				u.parts[o.p] = true
			}
			f.mu.Unlock()
			return err
		}
		for _, cmd := range cmds {
			if v, _ := cmd.(*redis.Cmd).Int64(); v == 1 {
				stats.Requeued++
			}
		}
	}
	f.mu.Lock()
	u.stats.Requeued += stats.Requeued
	switch {
	case u.gen != gen:
		// New uncertain outcomes meanwhile: their sweep is due now.
	case u.next < len(sweepsAfter):
		u.due = time.Now().Add(sweepsAfter[u.next])
		u.next++
	case len(u.ends)+len(u.backs)+len(u.parts) > 0:
		u.due = time.Now()
	default:
		u.due = time.Time{}
		u.ips = nil // released or run out: nothing more comes of them
	}
	f.mu.Unlock()
	if stats != (ReconcileStats{}) {
		f.logger.Info("reconciled after lost Redis replies", "requeued", stats.Requeued, "redone", stats.Redone, "ip_clocks_released", stats.IPs)
	}
	f.notify()
	return nil
}

func where(front bool) string {
	if front {
		return "front"
	}
	return "back"
}
