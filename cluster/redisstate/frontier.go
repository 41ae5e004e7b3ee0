package redisstate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	queued queuedCount // Stats's count of the crawl's queue, reused a while

	mu       sync.Mutex
	hosts    map[string]*fhost
	parts    map[int]*fpart
	all      []string          // the hosts of parts, in partition order (partitionHosts); never changed in place
	allStale bool              // parts changed since all was built
	pushSeq  uint64            // Pushes so far
	pushedAt map[string]uint64 // a host's last Push (pushSeq then)
	held     []bool            // heldParts: the partitions held, by number; never changed in place
	heldList []int             // the same as a list
	heldCh   <-chan struct{}   // the Member's Changed when they were read
	heldAt   time.Time         // and when
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
	spentAt  time.Time // when a pop last found the crawl's page budget spent (budget.go)
	fence    fenceStats
	unsure   unsure         // what Redis was sent and did not confirm (reconcile.go)
	ending   map[string]int // leases being ended by Finish (token NUL raw): not orphans
	ipSeq    atomic.Uint64  // IP reservations made: each has a token of its own
	releases []*ipRelease   // IP releases kept for the next round trip (release.go)

	holdChecked map[string]time.Time // when endDeadHold last asked about an IP's hold
	holdsEnded  atomic.Int64         // holds of gone workers ended (endDeadHold)
}

type fhost struct {
	crawlDelay time.Duration
	notBefore  time.Time
	lastResp   time.Duration
	failures   int
	politeKey  string
	pending    bool // AwaitPoliteKey: not leased until SetPoliteKey
	busy       bool
	popping    bool // a pop is under way (busy too): its item may be in flight before it is leased here
	dead       bool
}

type fpart struct {
	hosts   []string
	fetched time.Time
}

type fleased struct {
	raw        string
	res        *Reservation
	reservedAt time.Time // when res was taken
	token      string    // the lease it was popped under (CheckLease, put back, the end of the lease)
	kept       bool      // its commit was not applied: Finish leaves it in flight (keepRaw)
}

// epoch is the epoch of the lease the item was popped under (its token is
// "worker epoch"; a worker id has no space): the end of its lease (commit,
// Finish) is fenced by it.
func (l *fleased) epoch() int64 {
	e, _ := strconv.ParseInt(l.token[strings.LastIndexByte(l.token, ' ')+1:], 10, 64)
	return e
}

// FrontierOptions configure a worker's frontier.
type FrontierOptions struct {
	frontier.Options               // Delay, AdaptiveFactor, MaxDelay, back-off, MaxFailures, the page budgets (crawl-wide: budget.go)
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
		hosts: map[string]*fhost{}, parts: map[int]*fpart{}, pushedAt: map[string]uint64{}, leased: map[*frontier.Item]*fleased{},
		seq: map[string]uint64{}, wake: make(chan struct{}, 1), holdChecked: map[string]time.Time{}}
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
// 500 ms, all stale ones in one round trip, and where to start in it (a
// random rotation: every host gets its turn). Between refreshes a partition's
// list gains the hosts this worker queues (Push) and loses those found empty
// (forget). The list is the one cached in f.all, rebuilt only when a
// partition's list changed or a partition came or went, not on every call
// (with 1,000 hosts the rebuild was a tenth of a worker's CPU); the caller
// must not change it.
func (f *Frontier) partitionHosts(ctx context.Context) (hosts []string, start int, err error) {
	now := time.Now()
	held, heldList := f.heldParts(now)
	var stale []int
	f.mu.Lock()
	for part := range f.parts {
		if !held[part] {
			delete(f.parts, part)
			f.allStale = true
		}
	}
	for _, p := range heldList {
		fp := f.parts[p]
		if fp == nil || now.Sub(fp.fetched) > 500*time.Millisecond {
			stale = append(stale, p)
			// Claimed: the other goroutines use the list as it is
			// until this refresh is in.
			if fp == nil {
				f.parts[p] = &fpart{fetched: now}
			} else {
				fp.fetched = now
			}
		}
	}
	seq := f.pushSeq
	f.mu.Unlock()
	if len(stale) > 0 {
		cmds, err := f.c.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for _, p := range stale {
				pipe.SMembers(ctx, f.c.hostsKey(p))
			}
			return nil
		})
		if err != nil {
			for i, cmd := range cmds {
				if wrongTypeErr(cmd.Err()) {
					return nil, 0, f.lostHere(f.c.wrongType(ctx, stale[i], f.c.hostsKey(stale[i]), "set"))
				}
			}
			return nil, 0, wrap("hosts", err)
		}
		f.mu.Lock()
		for i, p := range stale {
			f.setPartHosts(p, cmds[i].(*redis.StringSliceCmd).Val(), seq, now)
		}
		f.mu.Unlock()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.allStale {
		f.all = f.all[:0:0] // a new array: lists handed out stay as they were
		parts := make([]int, 0, len(f.parts))
		for p := range f.parts {
			parts = append(parts, p)
		}
		sort.Ints(parts)
		for _, p := range parts {
			f.all = append(f.all, f.parts[p].hosts...)
		}
		f.allStale = false
	}
	if n := len(f.all); n > 1 {
		start = rand.IntN(n)
	}
	return f.all, start, nil
}

// heldParts returns the partitions held and not being given up, as a set
// and a list: read from the Member at most every 100 ms unless its leases
// changed (this runs on every Next; a partition that began draining
// meanwhile is found so by the pop, and its hosts forgotten).
func (f *Frontier) heldParts(now time.Time) ([]bool, []int) {
	changed := f.m.Changed()
	f.mu.Lock()
	if f.heldCh == changed && now.Sub(f.heldAt) < 100*time.Millisecond {
		defer f.mu.Unlock()
		return f.held, f.heldList
	}
	f.mu.Unlock()
	held := make([]bool, f.c.partitions)
	var list []int
	f.m.mu.Lock()
	for p := range f.m.owned {
		if !f.m.draining[p] {
			held[p] = true
			list = append(list, p)
		}
	}
	f.m.mu.Unlock()
	f.mu.Lock()
	f.held, f.heldList, f.heldCh, f.heldAt = held, list, changed, now
	f.mu.Unlock()
	return held, list
}

// setPartHosts caches hosts (SMEMBERS of partition p's host set, sent when
// the Push count was seq) as p's list, keeping the hosts pushed since: their
// items were queued after the read. Called with f.mu held.
func (f *Frontier) setPartHosts(p int, hosts []string, seq uint64, now time.Time) {
	sort.Strings(hosts)
	old := f.parts[p]
	if old != nil {
		n := len(hosts)
		for _, h := range old.hosts {
			if _, found := slices.BinarySearch(hosts[:n], h); !found && f.pushedAt[h] > seq {
				hosts = append(hosts, h)
			}
		}
		if len(hosts) > n {
			sort.Strings(hosts)
		}
	}
	if old == nil || !slices.Equal(old.hosts, hosts) {
		f.allStale = true
	}
	f.parts[p] = &fpart{hosts: hosts, fetched: now}
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
		if err := f.m.Lost(); err != nil {
			return nil, err // found by the heartbeat, a pop or the check below (lost.go)
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
			if wrongTypeErr(err) && !errors.Is(err, ErrLost) {
				err = f.lostHere(f.c.lost("a key of the crawl holds another type than its own (%v): it was overwritten and what it held is lost", err))
			}
			return nil, err
		}
		if it != nil {
			return it, nil
		}
		if err == nil && f.releasesKept() {
			// No pop took them: their hosts (busy until then) may be ready.
			f.sendReleases(ctx)
			continue
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
	f.refundRequeued(ctx)
	if f.reconcileDue() {
		if err := f.reconcile(ctx); errors.Is(err, ErrUnavailable) {
			return nil, 0, err // Next waits and says why
		} else if err != nil {
			f.logger.Warn("cannot reconcile after lost Redis replies (tried again in 500 ms)", "err", err)
		}
	}
	if f.budgetSpent() {
		return nil, -1, nil // until a page is given back, or the crawl is done
	}
	hosts, start, err := f.partitionHosts(ctx)
	if err != nil {
		return nil, 0, err
	}
	wait := time.Duration(-1)
	soon := func(d time.Duration) {
		if wait < 0 || d < wait {
			wait = d
		}
	}
	for i := range hosts {
		h := hosts[(start+i)%len(hosts)]
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
		if hs.dead && !hs.busy {
			hs.busy, hs.popping = true, true
			since := f.pushSeq
			f.mu.Unlock()
			it, err := f.drainPop(ctx, h)
			if it != nil {
				return it, 0, nil
			}
			f.mu.Lock()
			hs.busy, hs.popping = false, false
			f.mu.Unlock()
			if err != nil {
				return nil, 0, err
			}
			f.forget(h, since) // drained, or the partition went
			continue
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
			hs.busy, hs.popping = true, true
		}
		key, since := hs.politeKey, f.pushSeq
		f.mu.Unlock()
		if skip {
			continue
		}
		it, lease, w, err := f.reservePop(ctx, key, h)
		if it != nil {
			return it, 0, nil
		}
		f.mu.Lock()
		hs.busy, hs.popping = false, false
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
			f.forget(h, since) // its queue is empty, or the partition went
		}
	}
	return nil, wait, nil
}

// staleWait is how long a host waits for its partition's late renewal.
const staleWait = 50 * time.Millisecond

// reservePop takes the IP's clock and pops the head of host's queue in one
// round trip (one pipeline: the two keys are in different slots). When the
// clock was not free the item goes back to the front of its queue (a second
// round trip, rare: the host's own clock here waits for the IP's gap) and
// wait says how long; a nil item with no wait means the queue was empty or
// the partition is not held.
func (f *Frontier) reservePop(ctx context.Context, key, host string) (it *frontier.Item, lease bool, wait time.Duration, err error) {
	c, m := f.c, f.m
	p := c.PartitionOf(host)
	l, held, stale := m.forPop(p)
	if stale {
		return nil, true, staleWait, nil // the host stays; tried again once renewed
	}
	if !held {
		return nil, false, 0, nil
	}
	token := m.id + " " + host + " " + strconv.FormatUint(f.ipSeq.Add(1), 36) // this reservation's alone (reconcile.go)
	budget := f.o.MaxPages > 0
	rs := f.takeReleases() // the releases kept ride in front (release.go)
	var rcmds []*redis.Cmd
	cmds, err := c.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		rcmds = f.queueReleases(ctx, pipe, rs)
		ipReserveScript.EvalSha(ctx, pipe, []string{c.ipKey(key)}, max(f.hold.Milliseconds(), 1), token)
		if budget {
			budgetScript.EvalSha(ctx, pipe, []string{c.budgetKey()}, f.o.MaxPages)
		}
		popScript.EvalSha(ctx, pipe, []string{c.leaseKey(p), c.queueKey(p, host), c.hostsKey(p), c.inflightKey(p),
			c.hostBudgetKey(p), c.hostFailKey(p)}, l.token, host, max(f.o.MaxPagesPerHost, 0), "1")
		return nil
	})
	f.releasesSent(ctx, rs, rcmds, err)
	cmds = cmds[min(len(rs), len(cmds)):]
	if want := 2 + btoi(budget); len(cmds) != want {
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
	rep, rerr := reserveReplyOf(cmds[0].(*redis.Cmd))
	var res *Reservation
	if rerr == nil && rep.reserved {
		res = &Reservation{}
	}
	w := rep.wait
	if uncertain(rerr) {
		f.lostIP(&Reservation{ip: key, token: token}, 0) // no request went under it
	}
	reserved, berr := true, error(nil)
	if budget {
		var b int64
		b, berr = cmds[1].(*redis.Cmd).Int64()
		reserved = berr == nil && b == 1
	}
	raw, failures, perr := popReply(cmds[len(cmds)-1].(*redis.Cmd))
	if uncertain(perr) {
		f.lostPop(p)
	}
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
			queued := raw // an item that does not decode goes back as it was
			if derr == nil {
				queued = EncodeItem(&item)
			}
			if _, err = m.putBackAs(ctx, l.token, host, raw, queued, true); err != nil {
				f.lostBack(l.token, &item, raw, true, true, false) // refunded below
			}
		} else {
			m.doneLocal(p)
		}
		if res != nil {
			r := &Reservation{ip: key, token: token}
			if rerr := c.ReleaseIP(ctx, r, 0); rerr != nil {
				f.lostIP(r, 0)
				if err == nil {
					err = rerr
				}
			}
		}
		if budget && reserved {
			f.refund(ctx, 1)
		}
		return err
	}
	switch {
	case isNoScript(rerr) || isNoScript(perr) || isNoScript(berr):
		undo()
		if err := loadScripts(ctx, c.rdb); err != nil {
			return nil, false, 0, wrap("lease", err)
		}
		return nil, true, time.Millisecond, nil // try again
	case perr != nil && strings.HasPrefix(perr.Error(), "DEAD"):
		undo()
		f.mu.Lock()
		f.host(host).dead = true // given up by another worker
		f.mu.Unlock()
		return nil, false, 0, nil
	case perr != nil && (strings.Contains(perr.Error(), "NOTOWNER") || strings.Contains(perr.Error(), "SPENT")):
		undo()
		return nil, false, 0, nil
	case wrongTypeErr(perr):
		undo()
		return nil, false, 0, f.lostHere(c.wrongType(ctx, p, c.queueKey(p, host), "list", c.hostsKey(p), "set", c.inflightKey(p), "hash",
			c.hostBudgetKey(p), "hash", c.hostFailKey(p), "hash"))
	case rerr != nil || perr != nil || berr != nil:
		undo()
		return nil, false, 0, wrap("lease", errors.Join(rerr, perr, berr))
	case !reserved:
		f.mu.Lock()
		f.spentAt = time.Now()
		f.mu.Unlock()
		return nil, true, 0, undo()
	case !popped:
		return nil, false, 0, undo() // the queue is empty: the host is forgotten
	case res == nil:
		if rep.held != nil {
			// Another request to the IP is in flight: its release is not
			// announced, so look again soon; its worker may be gone.
			w = min(w, max(f.o.Delay/4, 5*time.Millisecond))
			if gap, ok := f.endDeadHold(ctx, key, rep.held); ok {
				w = max(gap, time.Millisecond)
			}
		}
		return nil, true, max(w, time.Millisecond), undo()
	case derr != nil:
		undo() // at the head of its queue again: nothing lost
		err := c.badItem(host, c.queueKey(p, host), raw, derr)
		m.setLost(err)
		return nil, true, 0, err
	}
	f.mu.Lock()
	f.host(host).failures = failures // counted crawl-wide (hoststate.go)
	f.host(host).popping = false
	pi := &item
	f.leased[pi] = &fleased{raw: raw, res: &Reservation{ip: key, token: token}, reservedAt: time.Now(), token: l.token}
	f.active++
	f.leases++
	f.mu.Unlock()
	return pi, true, 0, nil
}

// drainPop leases the head of the queue of host, given up crawl-wide, to be
// recorded without a request (frontier.Item.GivenUp): no politeness clock,
// no page budget. A nil item means the queue is empty, the partition is not
// held, or Redis does not say the host was given up (this worker counted
// it given up alone, Redis being unreachable: its URLs stay queued).
func (f *Frontier) drainPop(ctx context.Context, host string) (*frontier.Item, error) {
	c, m := f.c, f.m
	p := c.PartitionOf(host)
	l, held, stale := m.forPop(p)
	if !held || stale {
		return nil, nil
	}
	v, err := c.run(ctx, "drain", popScript, []string{c.leaseKey(p), c.queueKey(p, host), c.hostsKey(p), c.inflightKey(p),
		c.hostBudgetKey(p), c.hostFailKey(p)}, l.token, host, 0, "1", "drain")
	if errors.Is(err, redis.Nil) {
		err, v = nil, nil // the queue is empty
	}
	r, ok := v.([]any)
	if err != nil || !ok || len(r) != 2 {
		m.doneLocal(p)
		if err != nil && (strings.Contains(err.Error(), "NOTOWNER") || strings.Contains(err.Error(), "ALIVE")) {
			err = nil
		}
		return nil, err
	}
	raw, _ := r[0].(string)
	hv, _ := r[1].(string)
	it, err := DecodeItem(raw, host)
	if err != nil {
		if _, perr := m.putBackAs(ctx, l.token, host, raw, raw, true); perr != nil {
			m.doneLocal(p) // in flight until the partition's next holder requeues it
		}
		err = c.badItem(host, c.queueKey(p, host), raw, err)
		m.setLost(err)
		return nil, err
	}
	g := givenUp(host, hv)
	it.GivenUp = &g
	f.mu.Lock()
	f.leased[&it] = &fleased{raw: raw, token: l.token}
	f.active++
	f.host(host).popping = false
	f.mu.Unlock()
	return &it, nil
}

// reserveReply reads ipReserveScript's reply.
func reserveReplyOf(cmd *redis.Cmd) (reserveReply, error) {
	v, err := cmd.Result()
	if err != nil {
		return reserveReply{}, err
	}
	return parseReserve(v)
}

// heldCheckEvery is how old a hold must be before Next asks whether its
// worker is alive, and how often it asks again about one IP.
const heldCheckEvery = time.Second

// endDeadHold ends the hold of key's IP clock when the worker holding it is
// gone (its heartbeat ran out: killed, or stopped before its release went
// out). The IP then waits the politeness gap from now, as after a release,
// not the rest of the hold (2 minutes by default). The worker's heartbeat is
// the lease of its hold: a worker stalled past it may lose the hold, as it
// loses its partitions. A live worker's long request costs a round trip per
// IP and heldCheckEvery. It returns the gap when the hold was ended.
func (f *Frontier) endDeadHold(ctx context.Context, key string, h *ipHold) (time.Duration, bool) {
	if h.worker == "" || h.worker == f.m.id || h.age < heldCheckEvery {
		return 0, false
	}
	now := time.Now()
	f.mu.Lock()
	if at, ok := f.holdChecked[key]; ok && now.Sub(at) < heldCheckEvery {
		f.mu.Unlock()
		return 0, false
	}
	if len(f.holdChecked) >= 1024 {
		for k, at := range f.holdChecked {
			if now.Sub(at) >= heldCheckEvery {
				delete(f.holdChecked, k)
			}
		}
	}
	f.holdChecked[key] = now
	gap := f.o.Delay
	if hs := f.hosts[h.host]; hs != nil {
		gap = max(gap, hs.crawlDelay)
	}
	f.mu.Unlock()
	alive, err := f.c.workerAlive(ctx, h.worker)
	if err != nil || alive {
		return 0, false
	}
	ended, err := f.c.endHold(ctx, key, h, gap)
	if err != nil || !ended {
		return 0, false
	}
	f.holdsEnded.Add(1)
	f.logger.Info("ended the IP hold of a worker that is gone", "worker", h.worker, "host", h.host, "held", h.age.Round(time.Millisecond))
	return gap, true
}

// HoldsEnded is the number of IP holds of gone workers this worker ended.
func (f *Frontier) HoldsEnded() int64 { return f.holdsEnded.Load() }

// popReply reads popScript's reply {item, failures} (redis.Nil: empty).
func popReply(cmd *redis.Cmd) (raw string, failures int, err error) {
	v, err := cmd.Slice()
	if err != nil {
		return "", 0, err
	}
	if len(v) != 2 {
		return "", 0, fmt.Errorf("redisstate: pop: unexpected reply %v", v)
	}
	raw, _ = v[0].(string)
	n, _ := v[1].(int64)
	return raw, int(n), nil
}

// forget drops h from its partition's cached host list (its queue is empty
// or the partition is gone), unless h was pushed since the try that found
// it so began (the Push count was since then): its queue may hold an item
// again.
func (f *Frontier) forget(h string, since uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pushedAt[h] > since {
		return
	}
	if p := f.parts[f.c.PartitionOf(h)]; p != nil {
		if i := sort.SearchStrings(p.hosts, h); i < len(p.hosts) && p.hosts[i] == h {
			p.hosts = append(p.hosts[:i:i], p.hosts[i+1:]...)
			f.allStale = true
		}
	}
}

// crawlDone reports whether nothing is queued and nothing in flight in the
// whole crawl (one round trip over every partition: a script each), twice
// in a row, and nothing is leased here. Empty must not be lost (lost.go):
// the meta hash and every partition's marker must hold the crawl's
// generation, and a partition's count of queued items must be 0 when its
// queues are empty (a *LostError otherwise).
func (f *Frontier) crawlDone(ctx context.Context) (bool, error) {
	f.mu.Lock()
	active := f.active
	f.mu.Unlock()
	if active > 0 {
		return false, nil
	}
	c := f.c
	var spent, gen *redis.StringCmd
	cmds, err := c.pipelined(ctx, "crawl done", func(p redis.Pipeliner) {
		gen = p.HGet(ctx, c.metaKey(), "gen")
		for i := 0; i < c.partitions; i++ {
			partStateScript.EvalSha(ctx, p, []string{c.hostsKey(i), c.inflightKey(i), c.genKey(i), c.queueCountKey(i)})
		}
		if f.o.MaxPages > 0 {
			spent = p.Get(ctx, c.budgetKey())
		}
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	// With the crawl's budget spent, what is queued stays queued: the
	// crawl is done when nothing is in flight (no page can be given back).
	budgetSpent := false
	if spent != nil {
		n, _ := spent.Int64()
		budgetSpent = n >= int64(f.o.MaxPages)
	}
	if err := c.checkGen(gen); err != nil {
		f.m.setLost(err)
		return false, err
	}
	cmds = cmds[1:]
	held, _ := f.heldParts(time.Now())
	busy, orphans := false, []int(nil)
	var counted []int // partitions whose count says items are queued
	counts := make([]int64, c.partitions)
	for i := 0; i < c.partitions; i++ {
		v, err := cmds[i].(*redis.Cmd).Slice()
		if wrongTypeErr(err) {
			return false, f.lostHere(c.wrongType(ctx, i, c.hostsKey(i), "set", c.inflightKey(i), "hash",
				c.genKey(i), "string", c.queueCountKey(i), "string"))
		}
		if err != nil || len(v) != 4 {
			return false, wrap("crawl done", fmt.Errorf("partition %d: reply %v: %w", i, v, err))
		}
		hosts, _ := v[0].(int64)
		inflight, _ := v[1].(int64)
		marker, _ := v[2].(string)
		counts[i], _ = v[3].(int64)
		if err := c.markerLost(i, marker); err != nil {
			f.m.setLost(err)
			return false, err
		}
		if counts[i] != 0 && c.queueCounts {
			counted = append(counted, i)
		}
		if hosts > 0 && !budgetSpent || inflight > 0 {
			busy = true
		}
		if inflight > 0 && i < len(held) && held[i] {
			// In flight in a partition held here, with nothing
			// leased here: a pop whose reply was lost (reconcile.go).
			orphans = append(orphans, i)
		}
	}
	if !busy && !budgetSpent && f.o.MaxPagesPerHost <= 0 && len(counted) > 0 {
		// Nothing queued, by the host sets, while a count says otherwise
		// (with host budgets, a spent host leaves its host set with its
		// queue: the counts then include those).
		p := counted[0]
		n := counts[p]
		err := c.lost("partition %d's count of queued items (%s) is %d while no host of it has a queue (%s): its queues or its count were deleted or overwritten (partitions that disagree: %d)",
			p, c.queueCountKey(p), n, c.hostsKey(p), len(counted))
		f.m.setLost(err)
		return false, err
	}
	if len(orphans) > 0 {
		f.orphansSuspected(orphans)
	}
	if busy {
		f.mu.Lock()
		f.emptyFor = 0
		f.mu.Unlock()
		return false, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.emptyFor++
	return f.emptyFor >= 2, nil
}

// lostHere records err, a *LostError, as the worker's loss, and returns it.
func (f *Frontier) lostHere(err error) error {
	f.m.setLost(err)
	return err
}

// partStateScript reads what crawlDone needs of one partition, at one
// instant (a count read apart from its host set could see a push the host
// set did not). KEYS: host set, in-flight hash, marker, count of queued
// items. Returns {hosts with a queue, items in flight, the marker ("" when
// none), items queued by the count}.
var partStateScript = redis.NewScript(`#!lua flags=no-writes
return {redis.call('SCARD', KEYS[1]), redis.call('HLEN', KEYS[2]), redis.call('GET', KEYS[3]) or '',
  tonumber(redis.call('GET', KEYS[4]) or '0')}
`)

// Release ends the request of a leased item: the IP's clock restarts with
// the gap the next request waits, the host's too; 429/503 and network
// failures back off (the item goes back to its queue: requeued), as does
// Outcome.Requeue. It follows frontier.Frontier.Release. The IP's release
// rides in the worker's next round trip (release.go), except a requeued
// item's.
func (f *Frontier) Release(it *frontier.Item, o frontier.Outcome) (requeued bool) {
	ctx := context.Background()
	fl := f.countFailure(ctx, it.Host, o)
	f.mu.Lock()
	hs := f.host(it.Host)
	l := f.leased[it]
	now := time.Now()
	gap := time.Duration(0)
	if o.Wait > 0 {
		hs.notBefore = laterOf(hs.notBefore, now.Add(o.Wait))
	}
	switch {
	case fl != nil:
		hs.failures = fl.failures
		hs.dead = hs.dead || (fl.dead && !fl.gaveUp) // given up by another worker: reported there
	case o.Requested:
		hs.failures = 0
	}
	if o.Blocked && fl.gaveUp {
		f.giveUpLocked(it.Host, fl.reason, it)
	}
	if o.Requested {
		hs.lastResp = o.ResponseTime
		gap = f.o.Gap(hs.crawlDelay, o.ResponseTime)
		if o.BacksOff() {
			gap = max(gap, f.o.Backoff(hs.failures, o.RetryAfter))
			if fl != nil && fl.gaveUp {
				f.giveUpLocked(it.Host, fl.reason, nil)
			} else if o.Status == 429 || o.Status == 503 {
				o.Requeue = true
			}
		}
	}
	dead := hs.dead
	f.mu.Unlock()
	if l != nil && l.res != nil && !o.Requeue && f.keepRelease(it, l, gap, now) {
		return false // sent in the next round trip; the host stays busy until then (release.go)
	}
	if l != nil && l.res != nil {
		if err := f.c.ReleaseIP(ctx, l.res, gap); err != nil {
			f.lostIP(l.res, gap) // released when Redis answers again, at the latest when the hold runs out
			f.logger.Warn("cannot release an IP's clock (released when Redis answers again)", "host", it.Host, "err", err)
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
		if o.BacksOff() {
			it2.Tries++
		}
		ok, err := f.m.putBackUnder(ctx, l.token, &it2, l.raw, true)
		if err != nil {
			// It stays in flight until Redis answers again (reconcile.go),
			// or the partition's next holder requeues it.
			f.lostBack(l.token, &it2, l.raw, true, true, true)
			f.logger.Warn("cannot requeue an item (requeued when Redis answers again)", "url", it.URL, "err", err)
		}
		if ok {
			f.refund(ctx, 1) // its page goes back to the budget (a lost lease's holder gives it back)
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

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// giveUpLocked marks host given up here (what its queue holds is drained:
// drainPop).
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
	if f.releasePending(it) {
		f.sendReleases(context.Background()) // no round trip took it
	}
	f.mu.Lock()
	l := f.leased[it]
	delete(f.leased, it)
	if l != nil {
		f.active--
		if l.kept {
			l.raw = "" // in flight until the lease moves (its page was not recorded in Redis)
		}
	}
	ending := f.endingLocked(l)
	f.mu.Unlock()
	defer f.ended(ending)
	if l != nil && l.raw != "" {
		if err := f.m.doneUnder(context.Background(), l.epoch(), it.Host, l.raw); err != nil {
			// It stays in flight until Redis answers again (reconcile.go)
			// or, if this worker loses the lease first, is fetched again by
			// the partition's next holder (at least once).
			f.lostEnd(it.Host, l.raw, l.epoch())
			f.logger.Warn("cannot end a lease (ended when Redis answers again)", "url", it.URL, "err", err)
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
	added, err := f.c.commitUnder(ctx, f.m, ids, it, l.epoch(), l.raw, links)
	if err == nil {
		f.mu.Lock()
		l.raw = "" // ended
		f.mu.Unlock()
	}
	return added, err
}

// Push wakes Next: the items are in the shared queues already (Enqueue or
// Commit put them there). Their hosts join their partitions' cached lists
// (those this worker holds) without a round trip: the host sets in Redis
// have them, as a refresh would find.
func (f *Frontier) Push(items ...frontier.Item) {
	f.mu.Lock()
	f.pushSeq++
	for _, it := range items {
		h := it.Host
		if h == "" {
			h = frontier.HostKey(it.URL)
		}
		f.pushedAt[h] = f.pushSeq
		if fp := f.parts[f.c.PartitionOf(h)]; fp != nil {
			if i, found := slices.BinarySearch(fp.hosts, h); !found {
				fp.hosts = slices.Insert(fp.hosts[:len(fp.hosts):len(fp.hosts)], i, h)
				f.allStale = true
			}
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

// statsTimeout bounds Stats's read of the queued count.
const statsTimeout = 2 * time.Second

// queuedMaxAge is how long Stats reuses a count of the crawl's queue while
// the frontier runs.
const queuedMaxAge = 2 * time.Second

// queuedCount is the last count of the crawl's queue. Counting costs Redis
// a command per queued host (one round trip a call, the work on the
// server), and the progress line asks twice a second, every scrape and
// status request once: while the frontier runs, a count is reused for
// queuedMaxAge, and callers at once wait for one count.
type queuedCount struct {
	mu sync.Mutex
	n  int64
	at time.Time
	// err: why the last count failed
	err error
	// now is the clock that ages a count (nil: time.Now; a test's clock)
	now func() time.Time
}

// Stats returns this worker's leases and the crawl's queued items (counted
// over every partition; a count under queuedMaxAge old while the frontier
// runs, a new one once it stopped: the end of a run decides on it); Err
// says why Queued is unknown.
func (f *Frontier) Stats() frontier.Stats {
	f.mu.Lock()
	stopped := f.stopped
	f.mu.Unlock()
	qc := &f.queued
	qc.mu.Lock()
	now := time.Now
	if qc.now != nil {
		now = qc.now
	}
	if stopped || qc.at.IsZero() || now().Sub(qc.at) >= queuedMaxAge {
		ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
		qc.n, qc.err = f.c.QueuedAll(ctx)
		qc.at = now()
		cancel()
	}
	q, err := qc.n, qc.err
	qc.mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	return frontier.Stats{Queued: int(q), Active: f.active, Leased: f.leases, Hosts: len(f.hosts), Err: err}
}

// QueuedAll counts the items queued in the whole crawl.
func (c *Crawl) QueuedAll(ctx context.Context) (int64, error) {
	all := make([]int, c.partitions)
	for i := range all {
		all[i] = i
	}
	return c.QueuedIn(ctx, all)
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

// Reopen undoes a Stop: Next leases again. The engine calls it when it
// queued more after the crawl looked done (its skip audit, crawl/skipaudit.go).
func (f *Frontier) Reopen() {
	f.mu.Lock()
	f.stopped = false
	f.mu.Unlock()
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
