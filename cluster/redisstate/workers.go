package redisstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The workers' registry: besides its heartbeat expiry in hs:{C}:workers,
// each worker keeps one field of hs:{C}:info, its WorkerInfo as JSON, written
// in the heartbeat's transaction (no extra round trip) and once more when it
// leaves. The field stays after the worker is gone: it names the worker's
// data dir, which the merged report and export need after the crawl, and its
// last counters. A record is bounded (about 1 KB, its data dir path apart:
// the partitions held are written as ranges cut at maxPartList bytes).

// WorkerInfo is what a worker publishes about itself.
type WorkerInfo struct {
	ID   string `json:"id"`
	Host string `json:"host"` // the machine's host name
	PID  int    `json:"pid"`  // the worker process's id on Host
	Dir  string `json:"dir"`  // its data dir, absolute, on Host
	// Started is when the worker joined, Heartbeat its last heartbeat and
	// Expires when that heartbeat runs out (Redis's clock, ms since the
	// epoch; Started is the worker's clock).
	Started   int64 `json:"started_ms"`
	Heartbeat int64 `json:"heartbeat_ms"`
	Expires   int64 `json:"expires_ms"`
	// Left is set when the worker left the crawl (its crawl ended or was
	// stopped): its counters are final.
	Left bool `json:"left,omitempty"`

	WorkerCounts

	// Partitions is how many partitions the worker holds, PartitionList
	// which ("0-3,9,12-15"; cut, ending in "...", past maxPartList bytes).
	Partitions    int    `json:"partitions"`
	PartitionList string `json:"partition_list"`
	// Queued counts the URLs queued in the partitions it holds (counted at
	// most every queueCountEvery); InFlight the items it popped and has
	// not finished.
	Queued   int64 `json:"queued"`
	InFlight int   `json:"in_flight"`

	// Paused says why Redis refuses the worker's writes (the reason of an
	// *UnavailableError) while its heartbeat still runs; "" when it does not.
	Paused string `json:"paused,omitempty"`

	// State is "live", "paused" (live, with Paused set), "left" or "dead"
	// (heartbeat expired without leaving), set by ReadWorkers; not stored.
	State string `json:"-"`
}

// WorkerCounts are a worker's own counters, as its engine counts them.
type WorkerCounts struct {
	Pages    int64            `json:"pages"`    // page records of its run that cost a request
	Requests int64            `json:"requests"` // HTTP requests, robots.txt included
	ByClass  map[string]int64 `json:"by_class"` // page records by class
	// Remote texts (Store.TextStats): candidate originals' texts asked of
	// other workers, answered, and fallen back to the sketch rule.
	TextsAsked    int64 `json:"texts_asked,omitempty"`
	TextsAnswered int64 `json:"texts_answered,omitempty"`
	TextsFellBack int64 `json:"texts_fell_back,omitempty"`
	// Lease checks before requests (Frontier.FenceStats): checked, and
	// the requests not sent (the lease gone, short of the margin, Redis
	// not answering); the ends of leases left to a partition's new holder.
	LeaseChecks    int64 `json:"lease_checks,omitempty"`
	LeaseGone      int64 `json:"lease_gone,omitempty"`
	LeaseShort     int64 `json:"lease_short,omitempty"`
	LeaseNoAnswer  int64 `json:"lease_no_answer,omitempty"`
	StaleLeaseEnds int64 `json:"stale_lease_ends,omitempty"`
}

// Worker states (WorkerInfo.State).
const (
	WorkerLive   = "live"
	WorkerPaused = "paused"
	WorkerLeft   = "left"
	WorkerDead   = "dead"
)

const (
	maxPartList     = 200
	queueCountEvery = 5 * time.Second
)

func (c *Crawl) infoKey() string { return "hs:{" + c.name + "}:info" }

// partList writes sorted partitions as ranges, cut at maxPartList bytes.
func partList(ps []int) string {
	var b strings.Builder
	for i := 0; i < len(ps); {
		j := i
		for j+1 < len(ps) && ps[j+1] == ps[j]+1 {
			j++
		}
		s := strconv.Itoa(ps[i])
		if j > i {
			s += "-" + strconv.Itoa(ps[j])
		}
		if b.Len() > 0 {
			s = "," + s
		}
		if b.Len()+len(s) > maxPartList {
			b.WriteString(",...")
			break
		}
		b.WriteString(s)
		i = j + 1
	}
	return b.String()
}

// info builds the worker's record for a heartbeat at Redis time ms.
func (m *Member) info(ms, ttl int64, left bool) WorkerInfo {
	var w WorkerInfo
	if m.o.Info != nil {
		w = m.o.Info()
	}
	w.ID, w.Heartbeat, w.Expires, w.Left = m.id, ms, ms+ttl, left
	m.mu.Lock()
	if !left {
		w.Paused = m.paused
	}
	m.mu.Unlock()
	leases := m.Owned()
	ps := make([]int, len(leases))
	for i, l := range leases {
		ps[i] = l.Partition
	}
	w.Partitions, w.PartitionList = len(ps), partList(ps)
	m.mu.Lock()
	if !left {
		w.Queued = m.queued
	}
	for _, n := range m.inflight {
		w.InFlight += n
	}
	m.mu.Unlock()
	return w
}

// countQueued refreshes the count of URLs queued in the partitions held, at
// most every queueCountEvery (one round trip: QueuedIn).
func (m *Member) countQueued(ctx context.Context) {
	m.mu.Lock()
	due := time.Since(m.queuedAt) >= queueCountEvery
	m.mu.Unlock()
	if !due || m.o.Info == nil {
		return
	}
	var ps []int
	for _, l := range m.Owned() {
		ps = append(ps, l.Partition)
	}
	n, err := m.c.QueuedIn(ctx, ps)
	if err != nil {
		return // counted again at the next heartbeat
	}
	m.mu.Lock()
	m.queued, m.queuedAt = n, time.Now()
	m.mu.Unlock()
}

// queuedScript counts a partition's queued items on the server: the length
// of each queue of its host set. KEYS: the host set. ARGV: the queue keys'
// prefix. Read only (it runs when Redis is over maxmemory too).
var queuedScript = redis.NewScript(`#!lua flags=no-writes
local n = 0
for _, h in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  n = n + redis.call('LLEN', ARGV[1] .. h)
end
return n
`)

// QueuedIn counts the items queued in partitions ps: one command a
// partition, in one pipeline (one round trip; a Cluster, one a node), not
// one a host: the partitions' counts (queueCountKey), kept by the scripts
// that push and pop in the same step as the queues; in a crawl of layout 1
// (without them) a script a partition that reads every host's queue length.
func (c *Crawl) QueuedIn(ctx context.Context, ps []int) (int64, error) {
	if len(ps) == 0 {
		return 0, nil
	}
	if c.queueCounts {
		return c.queueCountsIn(ctx, ps)
	}
	cmds, err := c.pipelined(ctx, "queued", func(p redis.Pipeliner) {
		for _, part := range ps {
			queuedScript.EvalSha(ctx, p, []string{c.hostsKey(part)}, c.partTag(part)+"q:")
		}
	})
	if err != nil {
		return 0, err
	}
	var n int64
	for _, cmd := range cmds {
		v, err := cmd.(*redis.Cmd).Int64()
		if err != nil {
			return 0, wrap("queued", err)
		}
		n += v
	}
	return n, nil
}

// queueCountsIn sums the counts of queued items of partitions ps (absent:
// nothing was ever queued there).
func (c *Crawl) queueCountsIn(ctx context.Context, ps []int) (int64, error) {
	cmds, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, part := range ps {
			p.Get(ctx, c.queueCountKey(part))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, wrap("queued", err)
	}
	var n int64
	for _, cmd := range cmds {
		v, err := cmd.(*redis.StringCmd).Int64()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return 0, wrap("queued", err)
		}
		n += v
	}
	return n, nil
}

// pausedBeatScript is the heartbeat of a worker whose writes Redis refuses
// over maxmemory (allow-oom): it only writes over what is there, taking no
// memory to speak of: the worker's expiry in the workers set (ZADD XX) and
// its record (its field replaced by one of about the same size, saying why
// it is paused). Nothing when the worker is no longer a member.
// KEYS: workers set, records. ARGV: worker, expiry ms, record.
// Returns the live workers, or 0.
var pausedBeatScript = redis.NewScript(`#!lua flags=allow-oom
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], 'XX', ARGV[2], ARGV[1])
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then redis.call('HSET', KEYS[2], ARGV[1], ARGV[3]) end
return redis.call('ZCARD', KEYS[1])
`)

// pausedBeat keeps the worker live while Redis refuses its writes for
// reason (the normal heartbeat was refused at Redis time ms): its record
// says it is paused and why, so the others see "paused", not "dead", and
// its leases stay (renewScript). When Redis cannot be written at all
// (connection lost, a read-only replica) this fails too: the worker's
// heartbeat expires and the others see it dead.
func (m *Member) pausedBeat(ctx context.Context, ms, ttl int64, reason string) error {
	m.mu.Lock()
	m.paused = reason
	m.mu.Unlock()
	w := m.info(ms, ttl, false)
	b, err := json.Marshal(w)
	if err != nil {
		return err
	}
	_, err = m.c.run(ctx, "paused heartbeat", pausedBeatScript, []string{m.c.workersKey(), m.c.infoKey()}, m.id, ms+ttl, b)
	return err
}

// publishCmd queues the HSET of the worker's record in pipe.
func (m *Member) publishCmd(ctx context.Context, pipe redis.Pipeliner, w WorkerInfo) {
	b, err := json.Marshal(w)
	if err != nil {
		return // a map of counters and strings: cannot fail
	}
	pipe.HSet(ctx, m.c.infoKey(), m.id, b)
}

// publish writes the worker's record now (one round trip): Join's first
// heartbeat registered it before it held any partition.
func (m *Member) publish(ctx context.Context) error {
	if m.o.Info == nil {
		return nil
	}
	m.mu.Lock()
	ms := m.beat
	m.mu.Unlock()
	pipe := m.c.rdb.Pipeline()
	m.publishCmd(ctx, pipe, m.info(ms, m.o.TTL.Milliseconds(), false))
	_, err := pipe.Exec(ctx)
	return wrap("publish worker", err)
}

// ReadWorkers returns the records of every worker that ever joined crawl
// name, by start time, with their State: live while their heartbeat has
// not expired (Redis's clock), left when they left, else dead. It opens
// nothing: a crawl unknown to rdb is an error.
func ReadWorkers(ctx context.Context, rdb redis.UniversalClient, name string) ([]WorkerInfo, error) {
	c := &Crawl{rdb: rdb, name: name}
	pipe := rdb.Pipeline()
	exists := pipe.Exists(ctx, c.metaKey())
	infos := pipe.HGetAll(ctx, c.infoKey())
	live := pipe.ZRangeWithScores(ctx, c.workersKey(), 0, -1)
	now := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrap("read workers", err)
	}
	if exists.Val() == 0 {
		return nil, fmt.Errorf("no crawl named %q in Redis", name)
	}
	ms := now.Val().UnixMilli()
	expiry := map[string]int64{}
	for _, z := range live.Val() {
		expiry[z.Member.(string)] = int64(z.Score)
	}
	out := make([]WorkerInfo, 0, len(infos.Val()))
	for id, raw := range infos.Val() {
		var w WorkerInfo
		if err := json.Unmarshal([]byte(raw), &w); err != nil {
			return nil, fmt.Errorf("redisstate: crawl %q: worker %q: bad record: %v", name, id, err)
		}
		switch exp, ok := expiry[id]; {
		case w.Left:
			w.State = WorkerLeft
		case ok && exp > ms && w.Paused != "":
			w.State = WorkerPaused
		case ok && exp > ms:
			w.State = WorkerLive
		default:
			w.State = WorkerDead
		}
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Started != out[j].Started {
			return out[i].Started < out[j].Started
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}
