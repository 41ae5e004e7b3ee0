//go:build e2e

package redisstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// TestWorkerRegistry: workers publish their records on their heartbeat;
// ReadWorkers shows every worker with its counters, partitions and queue,
// live ones as live, one that left as left with its last counters, and one
// that stopped heartbeating (killed) as dead once its heartbeat expired.
func TestWorkerRegistry(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 16, Capacity: 1000}, redistest.Options{})
	ctx := context.Background()
	var urls []string
	for i := range 30 {
		urls = append(urls, fmt.Sprintf("http://h%d.example/p%d", i%7, i))
	}
	if _, err := c.Enqueue(ctx, c.NewIDs(), items(urls...)); err != nil {
		t.Fatal(err)
	}
	var pagesA atomic.Int64
	pagesA.Store(5)
	info := func(dir string, pages *atomic.Int64) func() WorkerInfo {
		return func() WorkerInfo {
			return WorkerInfo{Host: "m1", PID: 42, Dir: dir, Started: 1000,
				WorkerCounts: WorkerCounts{Pages: pages.Load(), Requests: pages.Load() + 1, ByClass: map[string]int64{"unique": pages.Load()}}}
		}
	}
	o := MemberOptions{TTL: 600 * time.Millisecond, Info: info("/data/a", &pagesA)}
	a, err := c.Join(ctx, "a", o)
	if err != nil {
		t.Fatal(err)
	}
	// The states below that need a heartbeat not yet expired (live) are
	// polled: a heartbeat goroutine descheduled longer than the TTL (a
	// loaded machine) leaves a live worker shown dead until its next one.
	var ws []WorkerInfo
	read := func(ok func() bool) string {
		var err error
		if ws, err = ReadWorkers(ctx, c.Client(), "t"); err != nil {
			return err.Error()
		}
		if !ok() {
			return fmt.Sprintf("%+v", ws)
		}
		return ""
	}
	waitUntil(t, "a joined alone", func() string {
		return read(func() bool {
			return len(ws) == 1 && ws[0].ID == "a" && ws[0].State == WorkerLive && ws[0].Dir == "/data/a" && ws[0].Pages == 5 &&
				ws[0].Requests == 6 && ws[0].ByClass["unique"] == 5 && ws[0].Partitions == 16 && ws[0].PartitionList == "0-15" && ws[0].Queued == 30
		})
	})
	var pagesB atomic.Int64
	ob := o
	ob.Info = info("/data/b", &pagesB)
	b, err := openOn(t, srv, Options{}).Join(ctx, "b", ob)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, hangBound, "fair share", func() bool { return len(a.Owned()) == 8 && len(b.Owned()) == 8 })
	pagesA.Store(9)
	pagesB.Store(3)
	// The next heartbeats publish the new counters (polled: a loaded
	// machine ran fewer than two heartbeats in 2/3 of the TTL).
	waitUntil(t, "two live workers with the new counters", func() string {
		return read(func() bool {
			return len(ws) == 2 && ws[0].Pages == 9 && ws[1].Pages == 3 && ws[0].Partitions+ws[1].Partitions == 16 &&
				ws[0].State == WorkerLive && ws[1].State == WorkerLive && ws[1].Heartbeat > ws[1].Started
		})
	})
	// a is killed (no more heartbeats); b leaves after counting 4 pages.
	a.Abandon()
	pagesB.Store(4)
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	// Past the TTL of a's last heartbeat (the wall clock only lets it
	// expire: a longer stall changes nothing).
	time.Sleep(o.TTL + 100*time.Millisecond)
	ws, err = ReadWorkers(ctx, c.Client(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || ws[0].ID != "a" || ws[0].State != WorkerDead || ws[0].Pages != 9 ||
		ws[1].ID != "b" || ws[1].State != WorkerLeft || ws[1].Pages != 4 || ws[1].Partitions != 0 || ws[1].Dir != "/data/b" {
		t.Fatalf("a killed, b left: %+v", ws)
	}
	if _, err := ReadWorkers(ctx, c.Client(), "no-such-crawl"); err == nil || !strings.Contains(err.Error(), "no-such-crawl") {
		t.Fatalf("an unknown crawl: %v", err)
	}
}

// TestWorkerRecordBounded: a worker holding many scattered partitions
// writes a bounded record.
func TestWorkerRecordBounded(t *testing.T) {
	t.Parallel()
	var ps []int
	for p := 0; p < 16384; p += 2 {
		ps = append(ps, p)
	}
	l := partList(ps)
	if len(l) > maxPartList+4 || !strings.HasPrefix(l, "0,2,4,") || !strings.HasSuffix(l, ",...") {
		t.Fatalf("partList of 8,192 scattered partitions: %d bytes %q", len(l), l)
	}
	if got := partList([]int{0, 1, 2, 5, 7, 8}); got != "0-2,5,7-8" {
		t.Fatalf("partList = %q", got)
	}
	w := WorkerInfo{ID: strings.Repeat("w", 60), Host: strings.Repeat("h", 64), Dir: "/" + strings.Repeat("d", 200),
		PartitionList: l, WorkerCounts: WorkerCounts{ByClass: map[string]int64{"unique": 1 << 40, "exact_duplicate": 1 << 40,
			"near_duplicate": 1 << 40, "mirror_skipped": 1 << 40, "robots_disallowed": 1 << 40, "not_html": 1 << 40, "error": 1 << 40}}}
	b, _ := json.Marshal(w)
	if len(b) > 1200 {
		t.Errorf("a worker's record is %d bytes", len(b))
	}
	t.Logf("a large worker record: %d bytes", len(b))
}

// TestPausedWorkerShownPaused: two workers of a crawl whose Redis reaches
// maxmemory (noeviction): their writes are refused (a pop says why), yet
// their heartbeats go on (over existing entries only, allow-oom), so each
// shows as paused with the reason, not dead, and keeps its partitions. Once
// Redis accepts writes again both are live.
//
// Not on the wall clock: the TTL is a minute (a 600 ms one ran out on
// correct code when a loaded machine descheduled the heartbeat that long),
// and instead of waiting past the TTL of the last normal heartbeat the
// test reads the expiries that heartbeat left, once every later write is
// refused, and waits for the paused heartbeats to move each worker's
// expiry (a heartbeat's time plus the TTL) and each lease's past them.
func TestPausedWorkerShownPaused(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 8, Capacity: 1000}, redistest.Options{NoPersistence: true})
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, c.NewIDs(), items("http://h.example/1", "http://h.example/2")); err != nil {
		t.Fatal(err)
	}
	info := func(dir string) func() WorkerInfo {
		return func() WorkerInfo { return WorkerInfo{Host: "m1", PID: 1, Dir: dir, Started: 1000} }
	}
	o := MemberOptions{TTL: time.Minute, Heartbeat: 50 * time.Millisecond}
	o.Info = info("/data/a")
	a, err := c.Join(ctx, "a", o)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Leave(ctx)
	o.Info = info("/data/b")
	b, err := openOn(t, srv, Options{}).Join(ctx, "b", o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Leave(ctx)
	members := map[string]*Member{"a": a, "b": b}
	waitFor(t, hangBound, "fair share", func() bool { return len(a.Owned()) == 4 && len(b.Owned()) == 4 })
	held := map[string][]Lease{"a": a.Owned(), "b": b.Owned()}

	rdb := c.Client()
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	defer rdb.ConfigSet(ctx, "maxmemory", "0")
	// What the last normal heartbeats left: every write after the
	// CONFIG SET is refused.
	expiry := func(id string) (int64, error) {
		v, err := rdb.ZScore(ctx, c.workersKey(), id).Result()
		return int64(v), err
	}
	leaseExpiry := func(p int) (time.Duration, error) { return rdb.PExpireTime(ctx, c.leaseKey(p)).Result() }
	normal := map[string]int64{}
	normalLease := map[int]time.Duration{}
	for id, ls := range held {
		var err error
		if normal[id], err = expiry(id); err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if normalLease[l.Partition], err = leaseExpiry(l.Partition); err != nil || normalLease[l.Partition] <= 0 {
				t.Fatalf("partition %d's lease expiry: %v %v", l.Partition, normalLease[l.Partition], err)
			}
		}
	}
	const oom = "out of memory (maxmemory reached)"
	m := a
	for _, mm := range []*Member{a, b} {
		if owns(mm, c.PartitionOf("h.example")) {
			m = mm
		}
	}
	if _, _, _, err := m.Pop(ctx, "h.example"); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), oom) {
		t.Fatalf("a pop over maxmemory: %v", err)
	}
	ttl := o.TTL.Milliseconds()
	waitUntil(t, "the paused heartbeats", func() string {
		ws, err := ReadWorkers(ctx, rdb, "t")
		if err != nil || len(ws) != 2 {
			return fmt.Sprintf("%+v %v", ws, err)
		}
		for _, w := range ws {
			exp, err := expiry(w.ID)
			switch {
			case err != nil || exp <= normal[w.ID] || exp != w.Heartbeat+ttl:
				return fmt.Sprintf("worker %s's expiry %d (%v), want past the last normal heartbeat's %d and its paused heartbeat's %d plus the TTL %d",
					w.ID, exp, err, normal[w.ID], w.Heartbeat, ttl)
			case w.State != WorkerPaused || w.Paused != oom:
				return fmt.Sprintf("worker %s over maxmemory: state %q (%q), want paused (%s)", w.ID, w.State, w.Paused, oom)
			case !errors.Is(members[w.ID].Err(), ErrUnavailable):
				return fmt.Sprintf("worker %s's heartbeat error while paused: %v", w.ID, members[w.ID].Err())
			}
		}
		for id, ls := range held {
			for _, l := range ls {
				if e, err := leaseExpiry(l.Partition); err != nil || e <= normalLease[l.Partition] {
					return fmt.Sprintf("worker %s's lease of partition %d not renewed while paused: expires %v, %v before (%v)", id, l.Partition, e, normalLease[l.Partition], err)
				}
			}
		}
		return ""
	})
	for id, mm := range members {
		if got := mm.Owned(); len(got) != len(held[id]) {
			t.Errorf("worker %s holds %d partitions while paused, %d before", id, len(got), len(held[id]))
		}
		for _, l := range held[id] {
			if v, err := rdb.Get(ctx, c.leaseKey(l.Partition)).Result(); err != nil || v != l.token {
				t.Errorf("worker %s's lease of partition %d lost while paused: %q %v", id, l.Partition, v, err)
			}
		}
	}

	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, hangBound, "live again", func() bool {
		ws, err := ReadWorkers(ctx, rdb, "t")
		return err == nil && len(ws) == 2 && ws[0].State == WorkerLive && ws[1].State == WorkerLive && ws[0].Paused == "" && ws[1].Paused == ""
	})
	if _, _, ok, err := m.Pop(ctx, "h.example"); err != nil || !ok {
		t.Fatalf("a pop once Redis accepts writes: %v %v", ok, err)
	}
}

func owns(m *Member, p int) bool {
	for _, l := range m.Owned() {
		if l.Partition == p {
			return true
		}
	}
	return false
}
