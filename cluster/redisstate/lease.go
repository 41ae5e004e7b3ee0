package redisstate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// Partitions and leases. A host's partition is the xxhash of its key modulo
// the crawl's partition count. A worker may pop from a partition's queues only
// while it holds the partition's lease: a key with a TTL holding "worker
// epoch", taken with a new epoch when it is free (acquireScript), renewed by
// the worker's heartbeat, and given up when the worker holds more than its
// share. Every pop and put-back checks the lease in the same script, so a
// worker that lost its lease (it stalled past the TTL) cannot take items of
// the partition's new holder. What a worker pops goes to the partition's
// in-flight hash in the same step; the next holder puts it back in the
// queues when it takes the lease, so a worker killed mid-fetch loses nothing
// (the item is fetched again: at least once).

// ErrNotOwner means the worker no longer holds the partition's lease.
var ErrNotOwner = errors.New("redisstate: partition lease lost")

func (c *Crawl) leaseKey(p int) string    { return c.partTag(p) + "lease" }
func (c *Crawl) epochKey(p int) string    { return c.partTag(p) + "epoch" }
func (c *Crawl) inflightKey(p int) string { return c.partTag(p) + "f" } // commitScript derives epochKey from it
func (c *Crawl) queuePrefix(p int) string { return c.partTag(p) + "q:" }

// Lease is a partition held by a worker.
type Lease struct {
	Partition int
	Epoch     int64
	token     string
	sure      time.Time // the lease holds at least until sure + TTL: the last acquire or renew was sent after it
}

// MemberOptions configure a worker's membership.
type MemberOptions struct {
	TTL       time.Duration // lease and heartbeat lifetime (default 3s)
	Heartbeat time.Duration // renewal interval (default TTL/3)
	// OnLost is called (from the heartbeat) when a lease was found lost.
	OnLost func(Lease)
	// Info, when set, gives the worker's record (host, pid, data dir, start
	// time, counters), published on every heartbeat with its partitions
	// and queue (workers.go).
	Info func() WorkerInfo
}

// Member is one worker of the crawl: it heartbeats, holds a fair share of the
// partitions (ceil(P / live workers)) and gives up the rest.
type Member struct {
	c  *Crawl
	id string
	o  MemberOptions

	mu       sync.Mutex
	owned    map[int]Lease
	inflight map[int]int // items popped and not yet done, per partition
	draining map[int]bool
	changed  chan struct{}
	requeued int64 // items requeued from in flight when taking or giving up partitions (takeRequeued)

	staleEnds atomic.Int64 // ends of leases that left the in-flight record: the partition was taken since the pop

	cancel context.CancelFunc
	done   chan struct{}
	err    error // last heartbeat error (Redis unavailable)

	queued   int64       // URLs queued in the partitions held (countQueued)
	queuedAt time.Time   // when counted
	beat     int64       // Redis time of the last heartbeat, ms
	final    *WorkerInfo // the record Leave published
	paused   string      // why Redis refused the last heartbeat, when pausedBeat stood in for it
	lost     error       // the first loss of the crawl's state found (lost.go): a *LostError
}

// Lost is the first loss of the crawl's shared state the worker found (a
// *LostError), nil while it found none.
func (m *Member) Lost() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lost
}

// setLost records err, a *LostError (nil: nothing), as Lost.
func (m *Member) setLost(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lostLocked(err)
}

func (m *Member) lostLocked(err error) {
	if err != nil && m.lost == nil {
		m.lost = err
		m.notifyLocked() // Next waits on Changed
	}
}

// Join makes worker id a member of the crawl and starts its heartbeat, which
// runs until ctx ends or Leave. The first round runs before Join returns.
func (c *Crawl) Join(ctx context.Context, id string, o MemberOptions) (*Member, error) {
	if id == "" || strings.ContainsAny(id, " ") {
		return nil, fmt.Errorf("redisstate: invalid worker id %q", id)
	}
	if o.TTL <= 0 {
		o.TTL = 3 * time.Second
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = o.TTL / 3
	}
	m := &Member{c: c, id: id, o: o, owned: map[int]Lease{}, inflight: map[int]int{},
		draining: map[int]bool{}, changed: make(chan struct{}), done: make(chan struct{})}
	if err := m.round(ctx); err != nil {
		return nil, err
	}
	// The record with the partitions just taken; on an error the next
	// heartbeat writes it (it is what the worker shows, not what it holds).
	_ = m.publish(ctx)
	hctx, cancel := context.WithCancel(ctx)
	m.cancel = cancel
	go m.loop(hctx)
	return m, nil
}

// ID is the worker's id.
func (m *Member) ID() string { return m.id }

// Owned returns the leases held (draining ones too), by partition.
func (m *Member) Owned() []Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Lease, 0, len(m.owned))
	for _, l := range m.owned {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out
}

// Changed is closed when the set of leases changes.
func (m *Member) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// Err is the last heartbeat's error: an *UnavailableError while Redis refuses.
func (m *Member) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

func (m *Member) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *Member) loop(ctx context.Context) {
	defer close(m.done)
	t := time.NewTicker(m.o.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := m.round(ctx)
		m.mu.Lock()
		m.err = err
		m.mu.Unlock()
	}
}

// round is one heartbeat: register, renew the leases, give up those above
// the share (once nothing of theirs is in flight), take free ones up to it.
func (m *Member) round(ctx context.Context) error {
	c := m.c
	ttl := m.o.TTL.Milliseconds()
	// Renew first: the leases' lifetime does not wait on the other steps.
	if err := m.renew(ctx, ttl); err != nil {
		return err
	}
	live, err := m.register(ctx, ttl)
	if err != nil {
		return err
	}
	share := (c.partitions + live - 1) / live
	if err := m.shed(ctx, share); err != nil {
		return err
	}
	if err := m.take(ctx, share, ttl); err != nil {
		return err
	}
	m.countQueued(ctx) // published by the next heartbeat
	return nil
}

// register records the heartbeat and the worker's record and counts the
// live workers (one round trip): workers whose heartbeat expired are dropped
// from the set.
func (m *Member) register(ctx context.Context, ttl int64) (int, error) {
	c := m.c
	now, err := c.rdb.Time(ctx).Result()
	if err != nil {
		return 0, wrap("heartbeat", err)
	}
	ms := now.UnixMilli()
	m.mu.Lock()
	m.paused = "" // until Redis refuses this heartbeat
	m.mu.Unlock()
	pipe := c.rdb.TxPipeline()
	pipe.ZAdd(ctx, c.workersKey(), redis.Z{Score: float64(ms + ttl), Member: m.id})
	pipe.ZRemRangeByScore(ctx, c.workersKey(), "-inf", strconv.FormatInt(ms, 10))
	n := pipe.ZCard(ctx, c.workersKey())
	if m.o.Info != nil {
		m.publishCmd(ctx, pipe, m.info(ms, ttl, false))
	}
	gen := pipe.HGet(ctx, c.metaKey(), "gen") // the crawl's own: its state was not lost (lost.go); last, so that its nil is not the first error
	m.mu.Lock()
	m.beat = ms
	m.mu.Unlock()
	if cmds, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		if cerr := firstErr(cmds); cerr != nil && unavailableReason(cerr) != "" {
			err = cerr // a command refused (OOM ...) aborted the transaction (EXECABORT)
		}
		err = wrap("heartbeat", err)
		var ue *UnavailableError
		if errors.As(err, &ue) {
			if perr := m.pausedBeat(ctx, ms, ttl, ue.Reason); perr != nil {
				m.mu.Lock()
				m.paused = ""
				m.mu.Unlock()
			}
		}
		return 0, err // the round stops here: no partitions given up or taken
	}
	if err := c.checkGen(gen); err != nil {
		m.setLost(err)
		return 0, err
	}
	return int(max(n.Val(), 1)), nil
}

func (m *Member) renew(ctx context.Context, ttl int64) error {
	leases := m.Owned()
	if len(leases) == 0 {
		return nil
	}
	sent := time.Now()
	cmds, err := m.c.pipelined(ctx, "renew leases", func(p redis.Pipeliner) {
		for _, l := range leases {
			renewScript.EvalSha(ctx, p, []string{m.c.leaseKey(l.Partition)}, l.token, ttl)
		}
	})
	if err != nil {
		return err
	}
	m.mu.Lock()
	var lost []Lease
	for i, cmd := range cmds {
		if v, _ := cmd.(*redis.Cmd).Int64(); v == 0 {
			lost = append(lost, leases[i])
			delete(m.inflight, leases[i].Partition) // requeued by the next holder
			delete(m.owned, leases[i].Partition)
			delete(m.draining, leases[i].Partition)
		} else if l, ok := m.owned[leases[i].Partition]; ok && l.Epoch == leases[i].Epoch {
			l.sure = sent
			m.owned[l.Partition] = l
		}
	}
	if len(lost) > 0 {
		m.notifyLocked()
	}
	m.mu.Unlock()
	if m.o.OnLost != nil {
		for _, l := range lost {
			m.o.OnLost(l)
		}
	}
	return nil
}

// shed marks partitions above the share as draining (no more pops) and
// releases the draining ones with nothing in flight.
func (m *Member) shed(ctx context.Context, share int) error {
	m.mu.Lock()
	extra := len(m.owned) - share
	extra -= len(m.draining)
	if extra > 0 {
		ps := make([]int, 0, len(m.owned))
		for p := range m.owned {
			if !m.draining[p] {
				ps = append(ps, p)
			}
		}
		sort.Ints(ps)
		// Give up the partitions with the least in flight first.
		sort.SliceStable(ps, func(i, j int) bool { return m.inflight[ps[i]] < m.inflight[ps[j]] })
		for _, p := range ps[:min(extra, len(ps))] {
			m.draining[p] = true
		}
	} else if extra < 0 {
		// Workers left: keep draining ones again.
		for p := range m.draining {
			if extra == 0 {
				break
			}
			delete(m.draining, p)
			extra++
		}
	}
	var release []Lease
	for p := range m.draining {
		if m.inflight[p] == 0 {
			release = append(release, m.owned[p])
		}
	}
	m.mu.Unlock()
	for _, l := range release {
		if err := m.release(ctx, l); err != nil {
			return err
		}
	}
	return nil
}

func (m *Member) release(ctx context.Context, l Lease) error {
	c := m.c
	v, err := c.run(ctx, "release lease", releaseScript,
		[]string{c.leaseKey(l.Partition), c.inflightKey(l.Partition), c.hostsKey(l.Partition), c.hostBudgetKey(l.Partition)},
		l.token, c.queuePrefix(l.Partition))
	if err != nil {
		return err
	}
	m.mu.Lock()
	if n, _ := v.(int64); n > 0 {
		m.requeued += n
	}
	delete(m.owned, l.Partition)
	delete(m.draining, l.Partition)
	m.notifyLocked()
	m.mu.Unlock()
	return nil
}

// take acquires free partitions up to the share: one round trip to find the
// free ones, one to take them.
func (m *Member) take(ctx context.Context, share int, ttl int64) error {
	c := m.c
	m.mu.Lock()
	need := share - len(m.owned)
	m.mu.Unlock()
	if need <= 0 {
		return nil
	}
	cmds, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < c.partitions; i++ {
			p.Exists(ctx, c.leaseKey(i))
		}
		return nil
	})
	if err != nil {
		return wrap("find free partitions", err)
	}
	var free []int
	for i, cmd := range cmds {
		if cmd.(*redis.IntCmd).Val() == 0 {
			free = append(free, i)
		}
	}
	// A random pick, so that workers joining at once do not all race for
	// the same partitions.
	rand.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	free = free[:min(need, len(free))]
	if len(free) == 0 {
		return nil
	}
	sent := time.Now()
	res, err := c.pipelined(ctx, "acquire leases", func(p redis.Pipeliner) {
		for _, part := range free {
			acquireScript.EvalSha(ctx, p, []string{c.leaseKey(part), c.epochKey(part), c.inflightKey(part), c.hostsKey(part),
				c.robotsKey(part), c.hostBudgetKey(part), c.genKey(part)},
				m.id, ttl, c.queuePrefix(part), c.gen)
		}
	})
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	got := false
	for i, cmd := range res {
		if r, _ := cmd.(*redis.Cmd).Slice(); len(r) == 3 && r[0] == int64(-1) {
			marker, _ := r[2].(string)
			m.lostLocked(c.markerLost(free[i], marker))
			continue
		}
		v, err := cmd.(*redis.Cmd).Int64Slice()
		if err != nil || len(v) != 2 || v[0] == 0 {
			continue
		}
		part := free[i]
		m.requeued += v[1]
		m.owned[part] = Lease{Partition: part, Epoch: v[0], token: m.id + " " + strconv.FormatInt(v[0], 10), sure: sent}
		got = true
	}
	if got {
		m.notifyLocked()
	}
	return nil
}

// Leave stops the heartbeat and gives every lease up (what is in flight goes
// back to the queues) and the membership.
func (m *Member) Leave(ctx context.Context) error {
	m.cancel()
	<-m.done
	var first error
	for _, l := range m.Owned() {
		if err := m.release(ctx, l); err != nil && first == nil {
			first = err
		}
	}
	pipe := m.c.rdb.TxPipeline()
	if m.o.Info != nil {
		ms := time.Now().UnixMilli()
		if now, err := m.c.rdb.Time(ctx).Result(); err == nil {
			ms = now.UnixMilli()
		}
		w := m.info(ms, 0, true)
		w.State = WorkerLeft
		m.mu.Lock()
		m.final = &w
		m.mu.Unlock()
		m.publishCmd(ctx, pipe, w)
	}
	pipe.ZRem(ctx, m.c.workersKey(), m.id)
	if _, err := pipe.Exec(ctx); err != nil && first == nil {
		first = wrap("leave", err)
	}
	return first
}

// Final is the record Leave published (with MemberOptions.Info): the
// worker's final counters, State "left"; false before Leave.
func (m *Member) Final() (WorkerInfo, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.final == nil {
		return WorkerInfo{}, false
	}
	return *m.final, true
}

// Abandon stops the heartbeat without giving anything up: what a killed
// worker leaves (its leases expire after the TTL). For tests and shutdowns
// that cannot reach Redis.
func (m *Member) Abandon() {
	m.cancel()
	<-m.done
}

// Hosts returns the hosts of partition p that have queued items.
func (m *Member) Hosts(ctx context.Context, p int) ([]string, error) {
	h, err := m.c.rdb.SMembers(ctx, m.c.hostsKey(p)).Result()
	return h, wrap("hosts", err)
}

// Pop leases the next item of host (in partition p, which the worker must
// hold and not be giving up). ok is false when host's queue is empty.
func (m *Member) Pop(ctx context.Context, host string) (it frontier.Item, raw string, ok bool, err error) {
	c := m.c
	p := c.PartitionOf(host)
	l, held, stale := m.forPop(p)
	if stale {
		return it, "", false, ErrLeaseStale
	}
	if !held {
		return it, "", false, ErrNotOwner
	}
	v, err := c.run(ctx, "pop", popScript,
		[]string{c.leaseKey(p), c.queueKey(p, host), c.hostsKey(p), c.inflightKey(p)}, l.token, host)
	if errors.Is(err, redis.Nil) {
		err, v = nil, nil
	}
	if err != nil || v == nil {
		m.doneLocal(p)
		if err != nil && strings.Contains(err.Error(), "NOTOWNER") {
			return it, "", false, ErrNotOwner
		}
		return it, "", false, err
	}
	raw = v.(string)
	it, err = DecodeItem(raw, host)
	if err != nil {
		return it, raw, false, err
	}
	return it, raw, true, nil
}

// ErrLeaseStale means the partition's lease was not renewed for 2/3 of its
// TTL (the heartbeat is late: the worker is stalled, or Redis slow to
// answer): no pops until it is renewed, so that a request is not sent under
// a lease that may run out before it ends (the partition's next holder would
// send it again). The lease may still be renewed.
// It is an ErrNotOwner: the worker cannot be sure it still holds the lease.
var ErrLeaseStale = fmt.Errorf("%w (not renewed lately)", ErrNotOwner)

// forPop counts a pop from partition p in flight when the worker holds p,
// is not giving it up, and renewed its lease less than 2/3 of the TTL ago
// (stale when it holds p but did not: nothing counted).
func (m *Member) forPop(p int) (l Lease, held, stale bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, held = m.owned[p]
	if !held || m.draining[p] {
		return l, false, false
	}
	if time.Since(l.sure) > 2*m.o.TTL/3 {
		return l, false, true
	}
	m.inflight[p]++ // counted before the pop: shed must not release under it
	return l, true, false
}

// takeRequeued returns (and resets) the number of items the worker put back
// in the queues from in flight when it took or gave up partitions: leases
// whose pages go back to the crawl's budget (budget.go).
func (m *Member) takeRequeued() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.requeued
	m.requeued = 0
	return n
}

func (m *Member) doneLocal(p int) {
	m.mu.Lock()
	if m.inflight[p] > 0 {
		m.inflight[p]--
	}
	m.mu.Unlock()
}

// Done ends the lease of a popped item (raw as Pop returned it): its results
// are recorded. It removes the item's in-flight record under the lease the
// worker holds on the item's partition now (doneScript: left, and counted,
// when the partition was taken again since). One round trip.
func (m *Member) Done(ctx context.Context, host, raw string) error {
	return m.doneUnder(ctx, m.epochOf(m.c.PartitionOf(host)), host, raw)
}

// doneUnder is Done under the lease epoch the item was popped under.
func (m *Member) doneUnder(ctx context.Context, epoch int64, host, raw string) error {
	p := m.c.PartitionOf(host)
	v, err := m.c.run(ctx, "done", doneScript, []string{m.c.inflightKey(p), m.c.epochKey(p)}, raw, epoch)
	if err != nil {
		return err
	}
	if v == int64(-1) {
		m.staleEnds.Add(1)
	}
	m.doneLocal(p)
	return nil
}

// epochOf is the epoch of the lease the worker holds on partition p (0: none).
func (m *Member) epochOf(p int) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owned[p].Epoch
}

// StaleEnds counts the ends of leases (commits, Done) that left the item's
// in-flight record: its partition was taken again since the pop.
func (m *Member) StaleEnds() int64 { return m.staleEnds.Load() }

// Finished is Done's local part after DoneCmd's pipeline ran.
func (m *Member) Finished(host string) { m.doneLocal(m.c.PartitionOf(host)) }

// PutBack returns a popped item to its host's queue, at the front (robots.txt
// was fetched first) or the back (a back-off), as it (tries counted). It
// reports false when the lease was lost (the new holder requeued the item).
func (m *Member) PutBack(ctx context.Context, it *frontier.Item, raw string, front bool) (bool, error) {
	m.mu.Lock()
	l := m.owned[m.c.PartitionOf(it.Host)]
	m.mu.Unlock()
	return m.putBackUnder(ctx, l.token, it, raw, front)
}

// putBackUnder is PutBack under the lease token the item was popped under:
// not under a later lease of the same worker (taken after the first ran out,
// whose acquire requeued the item: it may be in flight again, popped anew).
func (m *Member) putBackUnder(ctx context.Context, token string, it *frontier.Item, raw string, front bool) (bool, error) {
	return m.putBackAs(ctx, token, it.Host, raw, EncodeItem(it), front)
}

// putBackAs is putBackUnder with the item to queue as it is to be queued
// (an item that does not decode goes back as it was).
func (m *Member) putBackAs(ctx context.Context, token, host, raw, queued string, front bool) (bool, error) {
	c := m.c
	p := c.PartitionOf(host)
	where := "back"
	if front {
		where = "front"
	}
	v, err := c.run(ctx, "put back", putBackScript,
		[]string{c.leaseKey(p), c.queueKey(p, host), c.hostsKey(p), c.inflightKey(p), c.hostBudgetKey(p)},
		token, host, raw, queued, where)
	if err != nil {
		return false, err
	}
	m.doneLocal(p)
	return v == int64(1), nil
}

// Queued counts the items queued in partition p (one round trip per host
// batch; for tests and the report).
func (c *Crawl) Queued(ctx context.Context, p int) (int64, error) {
	hosts, err := c.rdb.SMembers(ctx, c.hostsKey(p)).Result()
	if err != nil {
		return 0, wrap("queued", err)
	}
	cmds, err := c.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for _, h := range hosts {
			pipe.LLen(ctx, c.queueKey(p, h))
		}
		return nil
	})
	if err != nil {
		return 0, wrap("queued", err)
	}
	var n int64
	for _, cmd := range cmds {
		n += cmd.(*redis.IntCmd).Val()
	}
	return n, nil
}

// InFlight counts the items in flight in partition p.
func (c *Crawl) InFlight(ctx context.Context, p int) (int64, error) {
	n, err := c.rdb.HLen(ctx, c.inflightKey(p)).Result()
	return n, wrap("in flight", err)
}
