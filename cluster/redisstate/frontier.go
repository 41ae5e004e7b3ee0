package redisstate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// Frontier is one worker's frontier over the shared queues: it leases items
// from the partitions its Member holds, host by host, under the per-host clock
// (kept here: a host is in one partition, leased to one worker) and the
// per-IP clock (in Redis: an IP's hosts may be in several workers'
// partitions). It has the method set of the engine's frontier (Next,
// Release, Finish, Push, Assign, Hosts, Stats, GiveUps, Stop, SetCrawlDelay,
// SetPoliteKey, AwaitPoliteKey), so it can stand where *frontier.Frontier
// stands. Safe for concurrent use.
//
// Next returns ErrDone (frontier.ErrDone) when the whole crawl has nothing
// queued and nothing in flight, in any worker; while Redis refuses, Next
// waits and retries (Err says why).
type Frontier struct {
	c      *Crawl
	m      *Member
	o      frontier.Options
	hold   time.Duration
	logger *slog.Logger
	onNew  func(string)

	mu       sync.Mutex
	hosts    map[string]*fhost
	parts    map[int]*fpart
	leased   map[*frontier.Item]*fleased
	seq      map[string]uint64
	active   int
	leases   int
	stopped  bool
	giveUps  []frontier.GiveUp
	wake     chan struct{}
	lastErr  error
	emptyFor int       // consecutive idle checks that found the crawl empty
	doneAt   time.Time // the last of them
}

type fhost struct {
	crawlDelay time.Duration
	notBefore  time.Time
	lastResp   time.Duration
	failures   int
	politeKey  string
	pending    bool // AwaitPoliteKey: not leased until SetPoliteKey
	busy       bool
	dead       bool
}

type fpart struct {
	hosts   []string
	fetched time.Time
}

type fleased struct {
	raw string
	res *Reservation
}

// FrontierOptions configure a worker's frontier.
type FrontierOptions struct {
	frontier.Options               // Delay, AdaptiveFactor, MaxDelay, back-off, MaxFailures (budgets are not shared: unused)
	Hold             time.Duration // the longest a request holds its IP's clock (default 2 min)
	// OnNewHost is called once for each host this worker meets in its
	// partitions (queued by any worker), with the host held as by
	// AwaitPoliteKey: the engine looks its IP up and calls SetPoliteKey.
	// Nil: every host is its own politeness key.
	OnNewHost func(host string)
	Logger    *slog.Logger
}

// NewFrontier returns the frontier of worker m.
func (c *Crawl) NewFrontier(m *Member, o FrontierOptions) *Frontier {
	fo := o.Options.WithDefaults()
	if o.Hold <= 0 {
		o.Hold = 2 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Frontier{c: c, m: m, o: fo, hold: o.Hold, logger: o.Logger, onNew: o.OnNewHost,
		hosts: map[string]*fhost{}, parts: map[int]*fpart{}, leased: map[*frontier.Item]*fleased{},
		seq: map[string]uint64{}, wake: make(chan struct{}, 1)}
}

func (f *Frontier) host(h string) *fhost {
	s := f.hosts[h]
	if s == nil {
		s = &fhost{politeKey: h}
		f.hosts[h] = s
	}
	return s
}

func (f *Frontier) notify() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Err is the last error Redis gave Next (nil once it answers again).
func (f *Frontier) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastErr
}

// partitionHosts returns the hosts with queued items of the partitions held
// (and not being given up), each partition's list refreshed at most every
// 500 ms, all stale ones in one round trip.
func (f *Frontier) partitionHosts(ctx context.Context) ([]string, error) {
	now := time.Now()
	held := map[int]bool{}
	var stale []int
	f.m.mu.Lock()
	for p := range f.m.owned {
		if !f.m.draining[p] {
			held[p] = true
		}
	}
	f.m.mu.Unlock()
	f.mu.Lock()
	for part := range f.parts {
		if !held[part] {
			delete(f.parts, part)
		}
	}
	for p := range held {
		if fp := f.parts[p]; fp == nil || now.Sub(fp.fetched) > 500*time.Millisecond {
			stale = append(stale, p)
		}
	}
	f.mu.Unlock()
	if len(stale) > 0 {
		cmds, err := f.c.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for _, p := range stale {
				pipe.SMembers(ctx, f.c.hostsKey(p))
			}
			return nil
		})
		if err != nil {
			return nil, wrap("hosts", err)
		}
		f.mu.Lock()
		for i, p := range stale {
			hosts := cmds[i].(*redis.StringSliceCmd).Val()
			sort.Strings(hosts)
			f.parts[p] = &fpart{hosts: hosts, fetched: now}
		}
		f.mu.Unlock()
	}
	var out []string
	f.mu.Lock()
	for p := range held {
		if fp := f.parts[p]; fp != nil {
			out = append(out, fp.hosts...)
		}
	}
	f.mu.Unlock()
	// A random rotation: every host gets its turn.
	if n := len(out); n > 1 {
		k := rand.IntN(n)
		out = append(out[k:], out[:k]...)
	}
	return out, nil
}

// Next blocks until an item may be fetched and leases it, or returns
// frontier.ErrDone, or ctx's error.
func (f *Frontier) Next(ctx context.Context) (*frontier.Item, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f.mu.Lock()
		stopped := f.stopped
		f.mu.Unlock()
		if stopped {
			return nil, frontier.ErrDone
		}
		it, wait, err := f.tryLease(ctx)
		if err == nil && it == nil && wait < 0 {
			// Nothing queued in the partitions held: is the whole crawl
			// done? (2P commands: at most every 500 ms.)
			wait = 100 * time.Millisecond
			f.mu.Lock()
			check := time.Since(f.doneAt) >= 500*time.Millisecond
			if check {
				f.doneAt = time.Now()
			}
			f.mu.Unlock()
			var done bool
			if check {
				if done, err = f.crawlDone(ctx); err == nil && done {
					f.Stop() // every caller of Next is done, not only this one
					return nil, frontier.ErrDone
				}
			}
		}
		f.mu.Lock()
		f.lastErr = err
		f.mu.Unlock()
		if errors.Is(err, ErrUnavailable) {
			f.logger.Warn("shared state unavailable: waiting", "err", err)
			wait = 500 * time.Millisecond
		} else if err != nil {
			return nil, err
		}
		if it != nil {
			return it, nil
		}
		t := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-ctx.Done():
		case <-f.wake:
		case <-f.m.Changed():
		case <-t.C:
		}
		t.Stop()
	}
}

// tryLease leases an item of a ready host, or returns how long until one may
// be ready (-1: no host has anything queued). A host is claimed (busy) while
// it is tried, so that the worker's other goroutines do not try it too.
func (f *Frontier) tryLease(ctx context.Context) (*frontier.Item, time.Duration, error) {
	hosts, err := f.partitionHosts(ctx)
	if err != nil {
		return nil, 0, err
	}
	wait := time.Duration(-1)
	soon := func(d time.Duration) {
		if wait < 0 || d < wait {
			wait = d
		}
	}
	for _, h := range hosts {
		f.mu.Lock()
		hs, known := f.hosts[h]
		if !known {
			hs = f.host(h)
			if f.onNew != nil {
				hs.pending = true
				f.mu.Unlock()
				f.onNew(h)
				f.mu.Lock()
			}
		}
		now := time.Now()
		skip := hs.busy || hs.dead || hs.pending
		if skip && !hs.dead {
			soon(100 * time.Millisecond) // Release and SetPoliteKey notify
		}
		if !skip && hs.notBefore.After(now) {
			soon(hs.notBefore.Sub(now))
			skip = true
		}
		if !skip {
			hs.busy = true
		}
		key := hs.politeKey
		f.mu.Unlock()
		if skip {
			continue
		}
		it, lease, w, err := f.reservePop(ctx, key, h)
		if it != nil {
			return it, 0, nil
		}
		f.mu.Lock()
		hs.busy = false
		if w > 0 {
			hs.notBefore = laterOf(hs.notBefore, time.Now().Add(w))
		}
		f.mu.Unlock()
		if err != nil {
			return nil, 0, err
		}
		if w > 0 {
			soon(w)
		} else if !lease {
			f.forget(h) // its queue is empty, or the partition went
		}
	}
	return nil, wait, nil
}

// reservePop takes the IP's clock and pops the head of host's queue in one
// round trip (one pipeline: the two keys are in different slots). When the
// clock was not free the item goes back to the front of its queue (a second
// round trip, rare: the host's own clock here waits for the IP's gap) and
// wait says how long; a nil item with no wait means the queue was empty or
// the partition is not held.
func (f *Frontier) reservePop(ctx context.Context, key, host string) (it *frontier.Item, lease bool, wait time.Duration, err error) {
	c, m := f.c, f.m
	p := c.PartitionOf(host)
	m.mu.Lock()
	l, held := m.owned[p]
	if held && m.draining[p] {
		held = false
	}
	if held {
		m.inflight[p]++
	}
	m.mu.Unlock()
	if !held {
		return nil, false, 0, nil
	}
	token := m.id + " " + host
	cmds, err := c.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		ipReserveScript.EvalSha(ctx, pipe, []string{c.ipKey(key)}, max(f.hold.Milliseconds(), 1), token)
		popScript.EvalSha(ctx, pipe, []string{c.leaseKey(p), c.queueKey(p, host), c.hostsKey(p), c.inflightKey(p)}, l.token, host)
		return nil
	})
	if len(cmds) != 2 {
		m.doneLocal(p)
		return nil, false, 0, wrap("lease", err)
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		// A pipeline cut short (connection lost) may leave a command
		// without its reply or its error: it failed with the pipeline.
		for _, cmd := range cmds {
			if cmd.Err() == nil && cmd.(*redis.Cmd).Val() == nil {
				cmd.SetErr(err)
			}
		}
	}
	res, w, isHeld, rerr := reserveReply(cmds[0].(*redis.Cmd))
	raw, perr := cmds[1].(*redis.Cmd).Text()
	popped := perr == nil
	if errors.Is(perr, redis.Nil) {
		perr = nil
	}
	item, derr := frontier.Item{Host: host}, error(nil)
	if popped {
		item, derr = DecodeItem(raw, host)
	}
	// undo gives back what went through: the item to the front of its
	// queue, the IP's clock. What cannot be given back (Redis unavailable)
	// runs out: the lease's next holder requeues the item, the hold ends.
	undo := func() error {
		var err error
		if popped {
			_, err = m.PutBack(ctx, &item, raw, true)
		} else {
			m.doneLocal(p)
		}
		if res != nil {
			if rerr := c.ReleaseIP(ctx, &Reservation{ip: key, token: token}, 0); err == nil {
				err = rerr
			}
		}
		return err
	}
	switch {
	case isNoScript(rerr) || isNoScript(perr):
		undo()
		if err := loadScripts(ctx, c.rdb); err != nil {
			return nil, false, 0, wrap("lease", err)
		}
		return nil, true, time.Millisecond, nil // try again
	case perr != nil && strings.Contains(perr.Error(), "NOTOWNER"):
		undo()
		return nil, false, 0, nil
	case rerr != nil || perr != nil:
		undo()
		if rerr == nil {
			rerr = perr
		}
		return nil, false, 0, wrap("lease", rerr)
	case !popped:
		return nil, true, 0, undo()
	case res == nil:
		if isHeld {
			// Another request to the IP is in flight: its release is not
			// announced, so look again soon.
			w = min(w, max(f.o.Delay/4, 5*time.Millisecond))
		}
		return nil, true, max(w, time.Millisecond), undo()
	case derr != nil:
		undo()
		return nil, true, 0, derr
	}
	f.mu.Lock()
	pi := &item
	f.leased[pi] = &fleased{raw: raw, res: &Reservation{ip: key, token: token}}
	f.active++
	f.leases++
	f.mu.Unlock()
	return pi, true, 0, nil
}

// reserveReply reads ipReserveScript's reply.
func reserveReply(cmd *redis.Cmd) (r *Reservation, wait time.Duration, held bool, err error) {
	v, err := cmd.Slice()
	if err != nil {
		return nil, 0, false, err
	}
	if len(v) != 3 {
		return nil, 0, false, fmt.Errorf("redisstate: reserve ip: unexpected reply %v", v)
	}
	if v[0] == int64(1) {
		return &Reservation{}, 0, false, nil
	}
	ms, _ := v[1].(int64)
	return nil, time.Duration(ms) * time.Millisecond, v[2] == int64(1), nil
}

// forget drops h from its partition's cached host list (its queue is empty
// or the partition is gone).
func (f *Frontier) forget(h string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.parts[f.c.PartitionOf(h)]; p != nil {
		if i := sort.SearchStrings(p.hosts, h); i < len(p.hosts) && p.hosts[i] == h {
			p.hosts = append(p.hosts[:i:i], p.hosts[i+1:]...)
		}
	}
}

// crawlDone reports whether nothing is queued and nothing in flight in the
// whole crawl (one round trip over every partition), twice in a row, and
// nothing is leased here.
func (f *Frontier) crawlDone(ctx context.Context) (bool, error) {
	f.mu.Lock()
	active := f.active
	f.mu.Unlock()
	if active > 0 {
		return false, nil
	}
	c := f.c
	cmds, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < c.partitions; i++ {
			p.SCard(ctx, c.hostsKey(i))
			p.HLen(ctx, c.inflightKey(i))
		}
		return nil
	})
	if err != nil {
		return false, wrap("crawl done", err)
	}
	for _, cmd := range cmds {
		if cmd.(*redis.IntCmd).Val() > 0 {
			f.mu.Lock()
			f.emptyFor = 0
			f.mu.Unlock()
			return false, nil
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.emptyFor++
	return f.emptyFor >= 2, nil
}

// Release ends the request of a leased item: the IP's clock restarts with
// the gap the next request waits, the host's too; 429/503 and network
// failures back off (the item goes back to its queue: requeued), as does
// Outcome.Requeue. It follows frontier.Frontier.Release.
func (f *Frontier) Release(it *frontier.Item, o frontier.Outcome) (requeued bool) {
	ctx := context.Background()
	f.mu.Lock()
	hs := f.host(it.Host)
	l := f.leased[it]
	now := time.Now()
	gap := time.Duration(0)
	if o.Wait > 0 {
		hs.notBefore = laterOf(hs.notBefore, now.Add(o.Wait))
	}
	if o.Blocked {
		hs.failures++
		if hs.failures >= f.o.MaxFailures || o.GiveUp {
			f.giveUpLocked(it.Host, o.Reason, it)
		}
	}
	if o.Requested {
		hs.lastResp = o.ResponseTime
		gap = max(f.o.Delay, hs.crawlDelay)
		if f.o.AdaptiveFactor > 0 {
			if a := time.Duration(f.o.AdaptiveFactor * float64(o.ResponseTime)); a > gap {
				gap = min(a, f.o.MaxDelay)
			}
		}
		if o.Failed || o.Status == 429 || o.Status == 503 {
			hs.failures++
			back := backoff(f.o, hs.failures)
			if o.RetryAfter > back {
				back = min(o.RetryAfter, f.o.BackoffMax)
			}
			gap = max(gap, back)
			if hs.failures >= f.o.MaxFailures {
				f.giveUpLocked(it.Host, fmt.Sprintf("%d consecutive failures (last status %d)", hs.failures, o.Status), nil)
			} else if o.Status == 429 || o.Status == 503 {
				o.Requeue = true
			}
		} else if !o.Blocked {
			hs.failures = 0
		}
	}
	dead := hs.dead
	f.mu.Unlock()
	if l != nil {
		if err := f.c.ReleaseIP(ctx, l.res, gap); err != nil {
			f.logger.Warn("cannot release an IP's clock (it runs out after its hold)", "host", it.Host, "err", err)
		}
	}
	// The host's own clock starts after the IP's did (Redis's clock, one
	// round trip ago): its next try does not come before the IP is free.
	f.mu.Lock()
	if gap > 0 {
		hs.notBefore = laterOf(hs.notBefore, time.Now().Add(gap))
	}
	hs.busy = false
	f.mu.Unlock()
	if l == nil {
		f.notify()
		return false
	}
	if o.Requeue && !dead {
		it2 := *it
		if o.Requested && (o.Status == 429 || o.Status == 503 || o.Failed) {
			it2.Tries++
		}
		ok, err := f.m.PutBack(ctx, &it2, l.raw, true)
		if err != nil {
			// It stays in flight: the partition's next holder requeues it.
			f.logger.Warn("cannot requeue an item", "url", it.URL, "err", err)
		}
		f.mu.Lock()
		delete(f.leased, it)
		f.active--
		f.mu.Unlock()
		f.notify()
		return ok || err != nil
	}
	f.notify()
	return false
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func backoff(o frontier.Options, failures int) time.Duration {
	d := o.BackoffBase
	for i := 1; i < failures && d < o.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, o.BackoffMax)
	if half := d / 2; half > 0 {
		d = half + time.Duration(rand.Int64N(int64(half)+1))
	}
	return d
}

// giveUpLocked marks host given up here (its queue stays in Redis: a worker
// that takes the partition later tries it again).
func (f *Frontier) giveUpLocked(host, reason string, it *frontier.Item) {
	hs := f.host(host)
	if hs.dead {
		return
	}
	hs.dead = true
	g := frontier.GiveUp{Host: host, Reason: reason, Blocked: it != nil}
	if it != nil {
		g.Items = []frontier.Item{*it}
	}
	f.giveUps = append(f.giveUps, g)
	f.logger.Warn("giving up host", "host", host, "reason", reason)
}

// Finish ends a lease whose results are recorded: the item leaves the
// in-flight hash (a no-op when the commit did it, or when it was requeued).
func (f *Frontier) Finish(it *frontier.Item) {
	f.mu.Lock()
	l := f.leased[it]
	delete(f.leased, it)
	if l != nil {
		f.active--
	}
	f.mu.Unlock()
	if l != nil && l.raw != "" {
		if err := f.m.Done(context.Background(), it.Host, l.raw); err != nil {
			// It stays in flight: fetched again by the partition's next
			// holder (at least once).
			f.logger.Warn("cannot end a lease", "url", it.URL, "err", err)
		}
	}
	f.notify()
}

// Raw is the queue form of a leased item (for a commit that ends its lease
// with its links: Crawl.Commit).
func (f *Frontier) Raw(it *frontier.Item) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.leased[it]
	if l == nil {
		return "", false
	}
	return l.raw, true
}

// Commit records a leased item's outcome in the shared state: its links
// queued and its lease ended, in one round trip (Crawl.Commit); Finish then
// costs none.
func (f *Frontier) Commit(ctx context.Context, ids *IDs, it *frontier.Item, links []frontier.Item) ([]bool, error) {
	f.mu.Lock()
	l := f.leased[it]
	f.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("redisstate: commit of an item not leased here: %s", it.URL)
	}
	added, err := f.c.Commit(ctx, f.m, ids, it, l.raw, links)
	if err == nil {
		f.mu.Lock()
		l.raw = "" // ended
		f.mu.Unlock()
	}
	return added, err
}

// Push wakes Next: the items are in the shared queues already (Enqueue or
// Commit put them there).
func (f *Frontier) Push(items ...frontier.Item) {
	f.mu.Lock()
	for _, it := range items {
		if p := f.parts[f.c.PartitionOf(it.Host)]; p != nil {
			p.fetched = time.Time{} // refresh its hosts
		}
	}
	f.mu.Unlock()
	f.notify()
}

// Assign numbers host's queue entries (for the engine's queue log; the
// shared queues are lists and do not need it).
func (f *Frontier) Assign(host string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq[host]++
	return f.seq[host]
}

// Hosts returns the hosts this worker knows, sorted.
func (f *Frontier) Hosts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.hosts))
	for h := range f.hosts {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// Stats returns this worker's leases and the crawl's queued items (counted
// over every partition: two round trips).
func (f *Frontier) Stats() frontier.Stats {
	q, _ := f.c.QueuedAll(context.Background())
	f.mu.Lock()
	defer f.mu.Unlock()
	return frontier.Stats{Queued: int(q), Active: f.active, Leased: f.leases, Hosts: len(f.hosts)}
}

// QueuedAll counts the items queued in the whole crawl.
func (c *Crawl) QueuedAll(ctx context.Context) (int64, error) {
	cmds, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < c.partitions; i++ {
			p.SMembers(ctx, c.hostsKey(i))
		}
		return nil
	})
	if err != nil {
		return 0, wrap("queued", err)
	}
	lens, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, cmd := range cmds {
			for _, h := range cmd.(*redis.StringSliceCmd).Val() {
				p.LLen(ctx, c.queueKey(i, h))
			}
		}
		return nil
	})
	if err != nil {
		return 0, wrap("queued", err)
	}
	var n int64
	for _, cmd := range lens {
		n += cmd.(*redis.IntCmd).Val()
	}
	return n, nil
}

// GiveUps returns (and forgets) the hosts given up since the last call.
func (f *Frontier) GiveUps() []frontier.GiveUp {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.giveUps
	f.giveUps = nil
	return g
}

// Stop makes Next return ErrDone from now on.
func (f *Frontier) Stop() {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	f.notify()
}

// SetCrawlDelay records a host's robots.txt Crawl-delay (capped at MaxDelay).
func (f *Frontier) SetCrawlDelay(host string, d time.Duration) (capped bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d > f.o.MaxDelay {
		d, capped = f.o.MaxDelay, true
	}
	f.host(host).crawlDelay = d
	return capped
}

// SetPoliteKey makes host share the clock of key (its IP) with every host of
// that key, in any worker.
func (f *Frontier) SetPoliteKey(host, key string) {
	f.mu.Lock()
	hs := f.host(host)
	hs.politeKey, hs.pending = key, false
	f.mu.Unlock()
	f.notify()
}

// AwaitPoliteKey holds host until SetPoliteKey groups it.
func (f *Frontier) AwaitPoliteKey(host string) {
	f.mu.Lock()
	f.host(host).pending = true
	f.mu.Unlock()
}
