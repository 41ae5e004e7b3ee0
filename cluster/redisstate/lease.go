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
func (c *Crawl) inflightKey(p int) string { return c.partTag(p) + "f" }
func (c *Crawl) queuePrefix(p int) string { return c.partTag(p) + "q:" }

// Lease is a partition held by a worker.
type Lease struct {
	Partition int
	Epoch     int64
	token     string
}

// MemberOptions configure a worker's membership.
type MemberOptions struct {
	TTL       time.Duration // lease and heartbeat lifetime (default 3s)
	Heartbeat time.Duration // renewal interval (default TTL/3)
	// OnLost is called (from the heartbeat) when a lease was found lost.
	OnLost func(Lease)
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

	cancel context.CancelFunc
	done   chan struct{}
	err    error // last heartbeat error (Redis unavailable)
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
	live, err := m.register(ctx, ttl)
	if err != nil {
		return err
	}
	share := (c.partitions + live - 1) / live
	if err := m.renew(ctx, ttl); err != nil {
		return err
	}
	if err := m.shed(ctx, share); err != nil {
		return err
	}
	return m.take(ctx, share, ttl)
}

// register records the heartbeat and counts the live workers (one round
// trip): workers whose heartbeat expired are dropped from the set.
func (m *Member) register(ctx context.Context, ttl int64) (int, error) {
	c := m.c
	now, err := c.rdb.Time(ctx).Result()
	if err != nil {
		return 0, wrap("heartbeat", err)
	}
	ms := now.UnixMilli()
	pipe := c.rdb.TxPipeline()
	pipe.ZAdd(ctx, c.workersKey(), redis.Z{Score: float64(ms + ttl), Member: m.id})
	pipe.ZRemRangeByScore(ctx, c.workersKey(), "-inf", strconv.FormatInt(ms, 10))
	n := pipe.ZCard(ctx, c.workersKey())
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, wrap("heartbeat", err)
	}
	return int(max(n.Val(), 1)), nil
}

func (m *Member) renew(ctx context.Context, ttl int64) error {
	leases := m.Owned()
	if len(leases) == 0 {
		return nil
	}
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
	_, err := c.run(ctx, "release lease", releaseScript,
		[]string{c.leaseKey(l.Partition), c.inflightKey(l.Partition), c.hostsKey(l.Partition)},
		l.token, c.queuePrefix(l.Partition))
	if err != nil {
		return err
	}
	m.mu.Lock()
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
	res, err := c.pipelined(ctx, "acquire leases", func(p redis.Pipeliner) {
		for _, part := range free {
			acquireScript.EvalSha(ctx, p, []string{c.leaseKey(part), c.epochKey(part), c.inflightKey(part), c.hostsKey(part),
				c.robotsKey(part)},
				m.id, ttl, c.queuePrefix(part))
		}
	})
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	got := false
	for i, cmd := range res {
		v, err := cmd.(*redis.Cmd).Int64Slice()
		if err != nil || len(v) != 2 || v[0] == 0 {
			continue
		}
		part := free[i]
		m.owned[part] = Lease{Partition: part, Epoch: v[0], token: m.id + " " + strconv.FormatInt(v[0], 10)}
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
	if err := m.c.rdb.ZRem(ctx, m.c.workersKey(), m.id).Err(); err != nil && first == nil {
		first = wrap("leave", err)
	}
	return first
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
	m.mu.Lock()
	l, held := m.owned[p]
	if held && m.draining[p] {
		held = false
	}
	if held {
		m.inflight[p]++ // counted before the pop: shed must not release under it
	}
	m.mu.Unlock()
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

func (m *Member) doneLocal(p int) {
	m.mu.Lock()
	if m.inflight[p] > 0 {
		m.inflight[p]--
	}
	m.mu.Unlock()
}

// Done ends the lease of a popped item (raw as Pop returned it): its results
// are recorded. One round trip; DoneCmd puts it in a pipeline instead.
func (m *Member) Done(ctx context.Context, host, raw string) error {
	err := m.c.rdb.HDel(ctx, m.c.inflightKey(m.c.PartitionOf(host)), raw).Err()
	if err != nil {
		return wrap("done", err)
	}
	m.doneLocal(m.c.PartitionOf(host))
	return nil
}

// DoneCmd queues Done's write in pipe; call Finished after pipe ran.
func (m *Member) DoneCmd(ctx context.Context, pipe redis.Pipeliner, host, raw string) {
	pipe.HDel(ctx, m.c.inflightKey(m.c.PartitionOf(host)), raw)
}

// Finished is Done's local part after DoneCmd's pipeline ran.
func (m *Member) Finished(host string) { m.doneLocal(m.c.PartitionOf(host)) }

// PutBack returns a popped item to its host's queue, at the front (robots.txt
// was fetched first) or the back (a back-off), as it (tries counted). It
// reports false when the lease was lost (the new holder requeued the item).
func (m *Member) PutBack(ctx context.Context, it *frontier.Item, raw string, front bool) (bool, error) {
	c := m.c
	p := c.PartitionOf(it.Host)
	m.mu.Lock()
	l := m.owned[p]
	m.mu.Unlock()
	where := "back"
	if front {
		where = "front"
	}
	v, err := c.run(ctx, "put back", putBackScript,
		[]string{c.leaseKey(p), c.queueKey(p, it.Host), c.hostsKey(p), c.inflightKey(p)},
		l.token, it.Host, raw, EncodeItem(it), where)
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
