//go:build e2e

package redisstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// open starts a redis-server and opens crawl "t" on it.
func open(t testing.TB, o Options, so redistest.Options) (*redistest.Server, *Crawl) {
	t.Helper()
	srv := redistest.Start(t, so)
	return srv, openOn(t, srv, o)
}

// openOn opens crawl "t" with a client of its own (another worker).
func openOn(t testing.TB, srv *redistest.Server, o Options) *Crawl {
	t.Helper()
	ctx := context.Background()
	rdb := srv.Client(t)
	if _, err := EnsureServerConfig(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	c, err := Open(ctx, rdb, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func items(urls ...string) []frontier.Item {
	out := make([]frontier.Item, len(urls))
	for i, u := range urls {
		out[i] = frontier.Item{URL: u, Depth: 1, Via: "http://via.example/"}
	}
	return out
}

func TestItemRoundTrip(t *testing.T) {
	t.Parallel()
	it := frontier.Item{ID: 1 << 40, URL: "http://a.example/x?y=1", Depth: 3, Via: "http://b.example/", Hops: 2,
		Tries: 1, FetchURL: "http://a.example/x;s=1", Verify: true, Sitemap: 2, Host: "a.example"}
	got, err := DecodeItem(EncodeItem(&it), "a.example")
	if err != nil || got != it {
		t.Fatalf("round trip: got %+v, %v; want %+v", got, err, it)
	}
	if _, err := DecodeItem(EncodeItem(&it)[:10], "a.example"); err == nil {
		t.Fatal("a cut item decoded without error")
	}
}

// Four workers queue overlapping link lists at once: each URL is queued
// exactly once, under one id, and the seen-set answers with that id.
func TestEnqueueOnceAcrossWorkers(t *testing.T) {
	t.Parallel()
	srv, c0 := open(t, Options{Partitions: 8, Capacity: 10_000}, redistest.Options{})
	ctx := context.Background()
	const n = 2000
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://h%d.example/p%d", i%37, i)
	}
	var mu sync.Mutex
	queuedBy := map[string]uint64{}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		c := openOn(t, srv, Options{})
		ids := c.NewIDs()
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for start := 0; start < n; start += 50 {
				// Every worker sees every URL, in its own order.
				batch := make([]string, 0, 50)
				for i := start; i < start+50; i++ {
					batch = append(batch, urls[(i+w*500)%n])
				}
				its := items(batch...)
				added, err := c.Enqueue(ctx, ids, its)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for i, a := range added {
					if a {
						if prev, dup := queuedBy[its[i].URL]; dup {
							t.Errorf("%s queued twice (ids %d, %d)", its[i].URL, prev, its[i].ID)
						}
						queuedBy[its[i].URL] = its[i].ID
					}
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if len(queuedBy) != n {
		t.Fatalf("%d URLs queued, want %d", len(queuedBy), n)
	}
	var total int64
	for p := 0; p < c0.Partitions(); p++ {
		q, err := c0.Queued(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		total += q
	}
	if total != n {
		t.Fatalf("queues hold %d items, want %d", total, n)
	}
	ids, err := c0.Seen(ctx, append(urls[:5:5], "http://never.example/"))
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range urls[:5] {
		if ids[i] != queuedBy[u] {
			t.Errorf("Seen(%s) = %d, want %d", u, ids[i], queuedBy[u])
		}
	}
	if ids[5] != 0 {
		t.Errorf("an unseen URL has id %d", ids[5])
	}
	// Mark: a queued URL is not fresh and keeps its id.
	mids, fresh, err := c0.Mark(ctx, c0.NewIDs(), []string{urls[0], "http://new.example/"})
	if err != nil || fresh[0] || mids[0] != queuedBy[urls[0]] || !fresh[1] {
		t.Fatalf("Mark = %v %v %v", mids, fresh, err)
	}
}

// page builds an index page; pages with the same content share everything
// but the id.
func page(id uint64, content int, keys int) *IndexPage {
	pg := &IndexPage{ID: id, Exact: uint64(content)*0x9e3779b97f4a7c15 + 1, Simhash: uint64(content)}
	for i := 0; i < keys; i++ {
		pg.Keys = append(pg.Keys, SuperKey(i, mix(uint64(content)<<8|uint64(i))))
	}
	if keys == 6 {
		pg.Need = 2 // AltaVista: 2 of 6 supershingles
	}
	for i := 0; i < recordSamples; i++ {
		pg.Sketch = append(pg.Sketch, mix(uint64(content)<<16|uint64(i)))
	}
	return pg
}

func mix(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	return z ^ z>>31
}

// settleAt is a sketch-estimate rule: the best candidate at or above j.
func settleAt(pg *IndexPage, j float64) Settle {
	return func(cands []Candidate) (uint64, bool) {
		best, bestJ := uint64(0), -1.0
		for _, cd := range cands {
			if e := cd.Estimate(pg.Sketch); e > bestJ {
				best, bestJ = cd.ID, e
			}
		}
		return best, bestJ >= j
	}
}

// Workers racing with copies of one page (exact copies, and near copies
// that share the supershingle keys and sketch but not the exact
// fingerprint) are never both told "new": of every race exactly one page
// is added, and the others name it.
func TestCheckAndAddRace(t *testing.T) {
	t.Parallel()
	srv, _ := open(t, Options{Partitions: 4, Pages: 10_000}, redistest.Options{})
	ctx := context.Background()
	const workers, rounds = 6, 40
	crawls := make([]*Crawl, workers)
	for i := range crawls {
		crawls[i] = openOn(t, srv, Options{})
	}
	for _, tc := range []struct {
		near bool
		keys int
	}{{false, 15}, {true, 15}, {false, 6}, {true, 6}} {
		near := tc.near
		for r := 0; r < rounds; r++ {
			content := r + 1 + 10000*tc.keys
			if near {
				content += 1000
			}
			type out struct {
				id            uint64
				exact, isNear bool
				orig          uint64
			}
			res := make([]out, workers)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					pg := page(uint64(content*100+w+1), content, tc.keys)
					if near {
						pg.Exact += uint64(w) // different bytes, same shingles
					}
					<-start
					ex, nr, orig, err := crawls[w].Decide(ctx, pg, settleAt(pg, 0.9), DedupOptions{})
					if err != nil {
						t.Error(err)
					}
					res[w] = out{pg.ID, ex, nr, orig}
				}(w)
			}
			close(start)
			wg.Wait()
			var added []uint64
			for _, o := range res {
				if !o.exact && !o.isNear {
					added = append(added, o.id)
				}
			}
			if len(added) != 1 {
				t.Fatalf("near=%v round %d: %d pages added (%v), want exactly 1", near, r, len(added), res)
			}
			for _, o := range res {
				if o.id != added[0] && o.orig != added[0] {
					t.Fatalf("near=%v round %d: page %d names original %d, want %d", near, r, o.id, o.orig, added[0])
				}
				if near && o.id != added[0] && !o.isNear {
					t.Fatalf("near copy %d decided exact", o.id)
				}
			}
		}
	}
	// A page unlike any other is added at once; a candidate below the
	// threshold is considered and the page added on the second call.
	c := crawls[0]
	other := page(999_999, 5555, 15)
	if ex, nr, _, err := c.Decide(ctx, other, settleAt(other, 0.9), DedupOptions{}); err != nil || ex || nr {
		t.Fatalf("an unrelated page: exact %v near %v err %v", ex, nr, err)
	}
	half := page(999_998, 5556, 15)
	copy(half.Keys, other.Keys[:1]) // one shared key: a candidate
	r, err := c.CheckAndAdd(ctx, half, nil, DedupOptions{})
	if err != nil || r.Added || len(r.Candidates) != 1 || r.Candidates[0].ID != other.ID || r.Candidates[0].Simhash != other.Simhash {
		t.Fatalf("first call: %+v %v", r, err)
	}
	if e := r.Candidates[0].Estimate(other.Sketch); e != 1 {
		t.Fatalf("the candidate's stored sketch estimates %v against its own", e)
	}
	if r, err = c.CheckAndAdd(ctx, half, r.Candidates, DedupOptions{}); err != nil || !r.Added {
		t.Fatalf("second call: %+v %v", r, err)
	}
	// With 6 supershingle keys of which 2 must agree, one shared key makes
	// no candidate, two do.
	six := page(999_997, 7777, 6)
	if ex, nr, _, err := c.Decide(ctx, six, settleAt(six, 0.9), DedupOptions{}); err != nil || ex || nr {
		t.Fatalf("a 6-key page: exact %v near %v err %v", ex, nr, err)
	}
	one := page(999_996, 7778, 6)
	one.Keys[3] = six.Keys[3]
	if r, err := c.CheckAndAdd(ctx, one, nil, DedupOptions{}); err != nil || !r.Added {
		t.Fatalf("one key of 6 shared (need 2): %+v %v", r, err)
	}
	two := page(999_995, 7779, 6)
	two.Keys[1], two.Keys[4] = six.Keys[1], six.Keys[4]
	if r, err := c.CheckAndAdd(ctx, two, nil, DedupOptions{}); err != nil || len(r.Candidates) != 1 || r.Candidates[0].ID != six.ID {
		t.Fatalf("two keys of 6 shared (need 2): %+v %v", r, err)
	}
	// The stream feeds the new pages' simhashes in order.
	var last NewPage
	count := 0
	fctx, cancel := context.WithTimeout(ctx, time.Minute) // a hang bound: cancelled at the last page
	defer cancel()
	c.FollowNewPages(fctx, "0", func(p NewPage) {
		last = p
		if count++; count == 4*rounds+4 {
			cancel()
		}
	})
	if count != 4*rounds+4 || last.ID != one.ID || last.Simhash != one.Simhash {
		t.Fatalf("stream: %d entries, last %+v", count, last)
	}
}

// hangBound bounds a wait for a state change that correct code makes: only
// a hang outlasts it. A tighter bound (it was 5 s) asserts a duration,
// which a loaded machine (load 10 on 2 cores) exceeds on correct code.
const hangBound = time.Minute

// waitFor polls cond every 20 ms until it holds, for at most d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// waitUntil polls check every 20 ms until it returns "" (what it waits for
// holds), for at most hangBound; a timeout reports check's last answer,
// what still did not hold.
func waitUntil(t *testing.T, what string, check func() string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		why := check()
		if why == "" {
			return time.Since(start)
		}
		if time.Since(start) > hangBound {
			t.Fatalf("%s: not within %v: %s", what, hangBound, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A worker killed mid-fetch (its heartbeat stops, nothing released) loses
// its leases after the TTL; the worker that takes them puts what was in
// flight back in the queues, and a pop from the dead worker's side after
// that is refused (fencing). The leases are held a minute (a 600 ms TTL
// made a pop stale when the heartbeat was descheduled) and the dead
// worker's expired by the test (expireWorker), as their TTL would.
func TestKilledWorkerLosesNothing(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 4, Capacity: 1000}, redistest.Options{})
	ctx := context.Background()
	urls := []string{"http://a.example/1", "http://a.example/2", "http://b.example/1", "http://c.example/1"}
	if _, err := c.Enqueue(ctx, c.NewIDs(), items(urls...)); err != nil {
		t.Fatal(err)
	}
	o := MemberOptions{TTL: time.Minute}
	a, err := c.Join(ctx, "a", o)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(a.Owned()); got != 4 {
		t.Fatalf("a lone worker holds %d of 4 partitions", got)
	}
	it, raw, ok, err := a.Pop(ctx, "a.example")
	if err != nil || !ok || it.URL != urls[0] {
		t.Fatalf("pop: %+v %v %v", it, ok, err)
	}
	if n, _ := c.InFlight(ctx, c.PartitionOf("a.example")); n != 1 {
		t.Fatalf("%d items in flight, want 1", n)
	}
	a.Abandon() // kill -9: no release
	expireWorker(t, c, "a")
	c2 := openOn(t, srv, Options{})
	b, err := c2.Join(ctx, "b", o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Leave(ctx)
	took := waitFor(t, hangBound, "b takes every partition", func() bool { return len(b.Owned()) == 4 })
	t.Logf("b held all partitions %v after joining", took)
	var total int64
	for p := 0; p < 4; p++ {
		q, _ := c.Queued(ctx, p)
		f, _ := c.InFlight(ctx, p)
		total += q
		if f != 0 {
			t.Errorf("partition %d: %d in flight after the takeover", p, f)
		}
	}
	if total != 4 {
		t.Fatalf("%d queued after the takeover, want all 4", total)
	}
	// The requeued item comes first again, with its id.
	it2, raw2, ok, err := b.Pop(ctx, "a.example")
	if err != nil || !ok || it2 != it {
		t.Fatalf("b pops %+v (%v %v), want %+v", it2, ok, err, it)
	}
	// a, back from its stall, can neither pop nor put back.
	if _, _, _, err := a.Pop(ctx, "a.example"); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("the dead worker's pop: %v, want ErrNotOwner", err)
	}
	if ok, err := a.PutBack(ctx, &it, raw, true); ok || err != nil {
		t.Fatalf("the dead worker's put-back: %v %v", ok, err)
	}
	if err := b.Done(ctx, "a.example", raw2); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.InFlight(ctx, c.PartitionOf("a.example")); n != 0 {
		t.Fatalf("%d in flight after Done", n)
	}
}

// A new worker gets its fair share: the old one gives up the partitions
// above its share once nothing of theirs is in flight. Leases are held a
// minute, renewed every 500 ms: with a TTL of 1.5 s, a heartbeat
// descheduled past it let the other worker take a partition that the
// first still listed (held twice, as the two saw it).
func TestNewWorkerTakesShare(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 16, Capacity: 1000}, redistest.Options{})
	ctx := context.Background()
	o := MemberOptions{TTL: time.Minute, Heartbeat: 500 * time.Millisecond}
	a, err := c.Join(ctx, "a", o)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Leave(ctx)
	if len(a.Owned()) != 16 {
		t.Fatalf("a holds %d", len(a.Owned()))
	}
	b, err := openOn(t, srv, Options{}).Join(ctx, "b", o)
	if err != nil {
		t.Fatal(err)
	}
	took := waitFor(t, hangBound, "fair share", func() bool { return len(a.Owned()) == 8 && len(b.Owned()) == 8 })
	t.Logf("8/8 after %v (heartbeat %v)", took, o.Heartbeat)
	seen := map[int]bool{}
	for _, l := range append(a.Owned(), b.Owned()...) {
		if seen[l.Partition] {
			t.Fatalf("partition %d held twice", l.Partition)
		}
		seen[l.Partition] = true
	}
	// b leaves: a takes everything back.
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, hangBound, "a takes back", func() bool { return len(a.Owned()) == 16 })
}

// The per-IP clock holds across workers: a second worker waits while the
// first holds the IP and for the gap after its release; a dead holder's
// reservation runs out after its hold. Real time (Redis's clock) only
// bounds from below here: a reservation is never granted before the gap
// or the hold that the test's own clock measured since before it began;
// what must still hold when asked (w1's hold, w2's reservation) holds for
// a minute, which only a hang outlasts.
func TestIPClockAcrossWorkers(t *testing.T) {
	t.Parallel()
	srv, c1 := open(t, Options{}, redistest.Options{})
	c2 := openOn(t, srv, Options{})
	ctx := context.Background()
	const long = time.Minute
	// Redis's clock (TIME, whole ms) and the test's (monotonic) differ by
	// the truncation and any slewing: allow 2 ms.
	const skew = 2 * time.Millisecond
	before := time.Now()
	r1, wait, _, err := c1.ReserveIP(ctx, "10.0.0.1", "w1", long)
	if err != nil || r1 == nil || wait != 0 {
		t.Fatalf("first reserve: %v %v %v", r1, wait, err)
	}
	r2, wait, held, err := c2.ReserveIP(ctx, "10.0.0.1", "w2", 5*time.Second)
	// The hold runs long from the first reservation, which came after before.
	if least := long - time.Since(before) - skew; err != nil || r2 != nil || !held || wait > long || wait < least {
		t.Fatalf("reserve while held: %v wait %v (want %v to %v) held %v %v", r2, wait, least, long, held, err)
	}
	// The gap after a release: refused (waits at most the gap, not held)
	// until the gap is over, then granted; never granted before the gap
	// ran since the release was sent.
	const gap = time.Second
	released := time.Now()
	if err := c1.ReleaseIP(ctx, r1, gap); err != nil {
		t.Fatal(err)
	}
	refused := 0
	for r2 == nil {
		r2, wait, held, err = c2.ReserveIP(ctx, "10.0.0.1", "w2", long)
		since := time.Since(released)
		switch {
		case err != nil:
			t.Fatal(err)
		case r2 != nil && since < gap-skew:
			t.Fatalf("reserved %v after the release was sent, within its gap of %v", since, gap)
		case r2 == nil && (wait <= 0 || wait > gap || held):
			t.Fatalf("reserve within the gap: wait %v (at most %v) held %v", wait, gap, held)
		case r2 == nil && since > hangBound:
			t.Fatalf("still refused %v after a release with a gap of %v", since, gap)
		case r2 == nil:
			refused++
			time.Sleep(min(wait, 50*time.Millisecond))
		}
	}
	t.Logf("w2 reserved %v after the release (gap %v), refused %d times before", time.Since(released), gap, refused)
	// w1's late release does not free w2's reservation (held a minute).
	if err := c1.ReleaseIP(ctx, r1, 0); err != nil {
		t.Fatal(err)
	}
	if r, _, held, _ := c1.ReserveIP(ctx, "10.0.0.1", "w1", time.Second); r != nil || !held {
		t.Fatalf("a stale release freed another worker's reservation (%v, held %v)", r, held)
	}
	// w3 dies holding another IP: free again after its 200 ms hold, not
	// before.
	const hold = 200 * time.Millisecond
	reserved := time.Now()
	if r, _, _, err := c2.ReserveIP(ctx, "10.0.0.2", "w3", hold); r == nil || err != nil {
		t.Fatalf("reserve 10.0.0.2: %v %v", r, err)
	}
	for {
		r, wait, held, err := c1.ReserveIP(ctx, "10.0.0.2", "w1", time.Second)
		since := time.Since(reserved)
		if err != nil {
			t.Fatal(err)
		}
		if r != nil {
			if since < hold-skew {
				t.Fatalf("a dead holder's reservation ran out %v after it was sent, within its hold of %v", since, hold)
			}
			break
		}
		if !held || wait > hold || since > hangBound {
			t.Fatalf("a dead holder's reservation after %v: wait %v held %v (hold %v)", since, wait, held, hold)
		}
		time.Sleep(min(wait, 50*time.Millisecond))
	}
}

// robots.txt is fetched once per host and lease: an entry stored under one
// lease is returned under it, not under the partition's next lease. The
// first lease is held a minute (one of 500 ms, run out under a descheduled
// heartbeat and taken again, dropped the entry before it was read) and
// expired by the test when its holder dies.
func TestRobotsOncePerLease(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 2}, redistest.Options{})
	ctx := context.Background()
	o := MemberOptions{TTL: time.Minute}
	a, err := c.Join(ctx, "a", o)
	if err != nil {
		t.Fatal(err)
	}
	l := a.Owned()[c.PartitionOf("a.example")]
	if _, ok, err := c.Robots(ctx, l, "a.example"); ok || err != nil {
		t.Fatalf("an entry before any fetch: %v %v", ok, err)
	}
	if err := c.PutRobots(ctx, l, "a.example", RobotsEntry{Status: 200, Body: "User-agent: *\nDisallow: /x\n"}); err != nil {
		t.Fatal(err)
	}
	e, ok, err := c.Robots(ctx, l, "a.example")
	if !ok || err != nil || e.Body == "" {
		t.Fatalf("the entry under its lease: %+v %v %v", e, ok, err)
	}
	a.Abandon()
	expireWorker(t, c, "a")
	b, err := openOn(t, srv, Options{}).Join(ctx, "b", o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Leave(ctx)
	waitFor(t, hangBound, "takeover", func() bool { return len(b.Owned()) == 2 })
	l2 := b.Owned()[c.PartitionOf("a.example")]
	if l2.Epoch <= l.Epoch {
		t.Fatalf("new lease epoch %d, old %d", l2.Epoch, l.Epoch)
	}
	if _, ok, _ := c.Robots(ctx, l2, "a.example"); ok {
		t.Fatal("the entry of the last lease is served under the new one")
	}
	if n, err := c.Client().Exists(ctx, c.robotsKey(l.Partition)).Result(); err != nil || n != 0 {
		t.Fatalf("the last lease's entries are kept: %v %v", n, err)
	}
}

// When Redis reaches maxmemory, writes are refused with an UnavailableError
// that says so, nothing of a refused batch is half-written, and after the
// limit is raised the same batch goes through: every URL queued once.
func TestOutOfMemoryLosesNothing(t *testing.T) {
	t.Parallel()
	_, c := open(t, Options{Partitions: 4, Capacity: 100_000}, redistest.Options{NoPersistence: true})
	ctx := context.Background()
	rdb := c.Client()
	used, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	base := infoInt(used, "used_memory")
	if err := rdb.ConfigSet(ctx, "maxmemory", fmt.Sprint(base+300_000)).Err(); err != nil {
		t.Fatal(err)
	}
	ids := c.NewIDs()
	var attempted []string
	var refused []frontier.Item
	for b := 0; b < 400 && refused == nil; b++ {
		its := make([]frontier.Item, 100)
		for i := range its {
			its[i] = frontier.Item{URL: fmt.Sprintf("http://h%d.example/a-rather-long-path/to/page/%d", i%50, b*100+i)}
			attempted = append(attempted, its[i].URL)
		}
		_, err := c.Enqueue(ctx, ids, its)
		var ue *UnavailableError
		if errors.As(err, &ue) {
			if !errors.Is(err, ErrUnavailable) || ue.Reason != "out of memory (maxmemory reached)" {
				t.Fatalf("error %v: reason %q", err, ue.Reason)
			}
			t.Logf("refused at URL %d: %v", len(attempted), err)
			refused = its
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if refused == nil {
		t.Fatal("maxmemory never refused a write")
	}
	// Well over the limit (a pipeline's buffers, freed after it, may have
	// been what crossed it): every write is refused.
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CheckAndAdd(ctx, page(1, 1, 15), nil, DedupOptions{}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("check-and-add over maxmemory: %v", err)
	}
	if n, err := rdb.Exists(ctx, c.streamKey()).Result(); err != nil || n != 0 {
		t.Fatalf("a refused check-and-add wrote: %v %v", n, err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	// The worker retries the refused batch: what the refusal cut off is
	// queued now, what went through before it is found seen.
	if _, err := c.Enqueue(ctx, ids, refused); err != nil {
		t.Fatal(err)
	}
	var total int64
	for p := 0; p < 4; p++ {
		q, _ := c.Queued(ctx, p)
		total += q
	}
	if total != int64(len(attempted)) {
		t.Fatalf("queues hold %d items, %d URLs were queued", total, len(attempted))
	}
	got, err := c.Seen(ctx, attempted)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[uint64]string{}
	for i, id := range got {
		if id == 0 {
			t.Fatalf("%s not in the seen-set", attempted[i])
		}
		if u, dup := byID[id]; dup {
			t.Fatalf("%s and %s share id %d", u, attempted[i], id)
		}
		byID[id] = attempted[i]
	}
}

func infoInt(info, field string) int64 {
	var v int64
	for _, line := range splitLines(info) {
		if n, _ := fmt.Sscanf(line, field+":%d", &v); n == 1 {
			return v
		}
	}
	return -1
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// A stopped server refuses with "connection lost"; once it is back (with its
// append-only file), every write acknowledged before is there, the scripts
// are loaded again, and the crawl goes on.
func TestServerRestartLosesNothing(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 4, Capacity: 1000}, redistest.Options{})
	ctx := context.Background()
	ids := c.NewIDs()
	first := items("http://a.example/1", "http://b.example/1")
	if _, err := c.Enqueue(ctx, ids, first); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CheckAndAdd(ctx, page(first[0].ID, 7, 15), nil, DedupOptions{}); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	_, err := c.Enqueue(ctx, ids, items("http://c.example/1"))
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Reason != "connection lost" {
		t.Fatalf("enqueue while stopped: %v", err)
	}
	srv.Resume()
	added, err := c.Enqueue(ctx, ids, items("http://a.example/1", "http://c.example/1"))
	if err != nil {
		t.Fatal(err)
	}
	if added[0] || !added[1] {
		t.Fatalf("after the restart: added %v, want [false true] (a.example/1 was seen before)", added)
	}
	r, err := c.CheckAndAdd(ctx, page(999, 7, 15), nil, DedupOptions{})
	if err != nil || r.Exact != first[0].ID {
		t.Fatalf("the index after the restart: %+v %v", r, err)
	}
}

// roundTrips counts what a client sends (a redis.Hook): its round trips (a
// pipeline is one) but the frontier's refresh of its partitions' host lists
// (SMEMBERS only: at most every 500 ms, not per page), and its commands by
// name (named; pipelined or not, evalsha by the kind of its last key: a pop
// names the in-flight hash, the host budgets and failures last: ":hf").
type roundTrips struct {
	mu    sync.Mutex
	n     int
	names map[string]int
}

func (h *roundTrips) count(cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cmds {
		if c.Name() != "smembers" {
			h.n++
			break
		}
	}
	if h.names == nil {
		h.names = map[string]int{}
	}
	for _, c := range cmds {
		name := c.Name()
		if args := c.Args(); name == "evalsha" && len(args) > 2 {
			nk := 0
			fmt.Sscan(fmt.Sprint(args[2]), &nk)
			if nk > 0 && len(args) > 2+nk {
				key := fmt.Sprint(args[2+nk])
				name += " " + key[strings.LastIndexByte(key, '}')+1:]
			}
		}
		h.names[name]++
	}
}

func (h *roundTrips) get() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// named is the number of commands named name sent.
func (h *roundTrips) named(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.names[name]
}

func (h *roundTrips) reset() {
	h.mu.Lock()
	h.n = 0
	h.mu.Unlock()
}

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.count(cmd); return next(ctx, cmd) }
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.count(cmds...); return next(ctx, cmds) }
}

// A page costs a fixed number of round trips whatever its number of links:
// pop, IP reserve, IP release, check-and-add (one more per round of new
// candidates), and one pipeline with its links and the end of its lease.
func TestRoundTripsPerPage(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 2, Capacity: 10_000}, redistest.Options{})
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, c.NewIDs(), items("http://a.example/")); err != nil {
		t.Fatal(err)
	}
	m, err := c.Join(ctx, "w", MemberOptions{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Leave(ctx)
	rt := &roundTrips{}
	wc := openOn(t, srv, Options{})
	wc.Client().AddHook(rt)
	ids := wc.NewIDs()
	if _, err := ids.Next(ctx); err != nil { // the id block, once per 1024 ids
		t.Fatal(err)
	}
	wm := &Member{c: wc, id: m.id, o: m.o, owned: m.owned, inflight: map[int]int{}, draining: map[int]bool{}}
	for _, nlinks := range []int{1, 100} {
		rt.reset()
		it, raw, ok, err := wm.Pop(ctx, "a.example")
		if err != nil || !ok {
			t.Fatalf("pop: %v %v", ok, err)
		}
		r, _, _, err := wc.ReserveIP(ctx, "127.0.0.1", "w", time.Minute)
		if err != nil || r == nil {
			t.Fatal(err)
		}
		if err := wc.ReleaseIP(ctx, r, 0); err != nil {
			t.Fatal(err)
		}
		pg := page(it.ID, nlinks, 15)
		if _, _, _, err := wc.Decide(ctx, pg, settleAt(pg, 0.9), DedupOptions{}); err != nil {
			t.Fatal(err)
		}
		links := make([]frontier.Item, nlinks)
		for i := range links {
			links[i] = frontier.Item{URL: fmt.Sprintf("http://a.example/%d/%d", nlinks, i), Depth: 1, Via: it.URL}
		}
		if _, err := wc.Commit(ctx, wm, ids, &it, raw, links); err != nil {
			t.Fatal(err)
		}
		if rt.get() != 5 {
			t.Fatalf("a page with %d links: %d round trips, want 5", nlinks, rt.get())
		}
	}
}

// The same page cycle as a worker's frontier runs it (Next: the IP's clock
// and the pop in one pipeline; the lease check before the request; Release;
// the index; Frontier.Commit; Finish): 5 round trips, whatever the number of
// links.
func TestRoundTripsPerPageFrontier(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 2, Capacity: 10_000}, redistest.Options{})
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, c.NewIDs(), items("http://a.example/")); err != nil {
		t.Fatal(err)
	}
	rt := &roundTrips{}
	wc := openOn(t, srv, Options{})
	m, err := wc.Join(ctx, "w", MemberOptions{TTL: time.Minute, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Leave(ctx)
	f := wc.NewFrontier(m, FrontierOptions{})
	ids := wc.NewIDs()
	if _, err := ids.Next(ctx); err != nil {
		t.Fatal(err)
	}
	wc.Client().AddHook(rt)
	for _, nlinks := range []int{1, 100} {
		rt.reset()
		it, err := f.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.CheckLease(ctx, it); err != nil { // the fence before the request
			t.Fatal(err)
		}
		f.Release(it, frontier.Outcome{Requested: true, Status: 200})
		pg := page(it.ID, nlinks+500, 6)
		if _, err := wc.CheckAndAdd(ctx, pg, nil, DedupOptions{}); err != nil {
			t.Fatal(err)
		}
		links := make([]frontier.Item, nlinks)
		for i := range links {
			links[i] = frontier.Item{URL: fmt.Sprintf("http://a.example/%d/%d", nlinks, i), Depth: 1, Via: it.URL}
		}
		if _, err := f.Commit(ctx, ids, it, links); err != nil {
			t.Fatal(err)
		}
		f.Finish(it)
		if rt.get() != 5 {
			t.Fatalf("a page with %d links: %d round trips, want 5", nlinks, rt.get())
		}
	}
	if n, _ := c.InFlight(ctx, c.PartitionOf("a.example")); n != 0 {
		t.Fatalf("%d in flight after the pages", n)
	}
}

// A page's commit is all or nothing: refused over maxmemory, the item stays
// in flight and none of its links is marked; after Redis lost its scripts
// (SCRIPT FLUSH, as a restart does) it loads them and goes through whole.
func TestCommitAllOrNothing(t *testing.T) {
	t.Parallel()
	_, c := open(t, Options{Partitions: 2, Capacity: 1000}, redistest.Options{NoPersistence: true})
	ctx := context.Background()
	rdb := c.Client()
	ids := c.NewIDs()
	if _, err := c.Enqueue(ctx, ids, items("http://a.example/")); err != nil {
		t.Fatal(err)
	}
	m, err := c.Join(ctx, "w", MemberOptions{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Leave(ctx)
	it, raw, ok, err := m.Pop(ctx, "a.example")
	if err != nil || !ok {
		t.Fatalf("pop: %v %v", ok, err)
	}
	links := func() []frontier.Item {
		return items("http://a.example/1", "http://b.example/1", "http://c.example/1")
	}
	urls := []string{"http://a.example/1", "http://b.example/1", "http://c.example/1"}
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	_, err = c.Commit(ctx, m, ids, &it, raw, links())
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("commit over maxmemory: %v", err)
	}
	if n, _ := c.InFlight(ctx, c.PartitionOf("a.example")); n != 1 {
		t.Fatalf("a refused commit ended the lease (%d in flight)", n)
	}
	if seen, _ := c.Seen(ctx, urls); seen[0] != 0 || seen[1] != 0 || seen[2] != 0 {
		t.Fatalf("a refused commit marked links: %v", seen)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	added, err := c.Commit(ctx, m, ids, &it, raw, links())
	if err != nil || !added[0] || !added[1] || !added[2] {
		t.Fatalf("commit after SCRIPT FLUSH: %v %v", added, err)
	}
	if n, _ := c.InFlight(ctx, c.PartitionOf("a.example")); n != 0 {
		t.Fatalf("%d in flight after the commit", n)
	}
	if seen, _ := c.Seen(ctx, urls); seen[0] == 0 || seen[1] == 0 || seen[2] == 0 {
		t.Fatalf("links not marked: %v", seen)
	}
}

// A batch carries a page's crawl-wide records with its links: dependents,
// skip records and evidence are written with them, all or nothing; a URL
// queued without a mark is queued although seen; evidence is taken once.
func TestBatchRecords(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 4, Capacity: 1000}, redistest.Options{NoPersistence: true})
	ctx := context.Background()
	ids := c.NewIDs()
	b := c.NewBatch(ids)
	b.Enqueue(items("http://a.example/1")...)
	b.Push(frontier.Item{URL: "http://a.example/1", FetchURL: "http://a.example/1;s=2"})
	b.AddDependent("http://a.example/1", "ihttp://m.example/1", []byte(`{"url":"http://m.example/1"}`))
	b.AddDependent("http://a.example/1", "ihttp://m.example/2", []byte(`{"url":"http://m.example/2"}`))
	b.PutSkipped("http://m.example/1", []byte(`{"class":"mirror_skipped"}`))
	b.PutEvidence("mirror", "m.example>a.example", []byte(`{"n":1}`))
	added, err := b.Commit(ctx)
	if err != nil || len(added) != 1 || !added[0] {
		t.Fatalf("commit: %v %v", added, err)
	}
	if q, _ := c.Queued(ctx, c.PartitionOf("a.example")); q != 2 {
		t.Fatalf("%d queued, want the URL and its push", q)
	}
	deps, err := c.Dependents(ctx, "http://a.example/1")
	if err != nil || len(deps) != 2 {
		t.Fatalf("dependents: %v %v", deps, err)
	}
	if v, err := c.SkipRecord(ctx, "http://m.example/1"); err != nil || string(v) != `{"class":"mirror_skipped"}` {
		t.Fatalf("skip record: %q %v", v, err)
	}
	if v, err := c.SkipRecord(ctx, "http://m.example/9"); err != nil || v != nil {
		t.Fatalf("a missing skip record: %q %v", v, err)
	}
	n := 0
	if err := c.ForEachEvidence(ctx, "mirror", func(string, []byte) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("evidence: %d %v", n, err)
	}
	// Two workers take the record at once: one gets it.
	var wg sync.WaitGroup
	var got sync.Map
	for w := 0; w < 2; w++ {
		cw := openOn(t, srv, Options{})
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			if _, ok, err := cw.TakeEvidence(ctx, "mirror", "m.example>a.example"); err != nil {
				t.Error(err)
			} else if ok {
				got.Store(w, true)
			}
		}(w)
	}
	wg.Wait()
	takers := 0
	got.Range(func(any, any) bool { takers++; return true })
	if takers != 1 {
		t.Fatalf("%d workers took the record", takers)
	}
	// A batch of deletes and a mark over maxmemory: the mark is refused,
	// and the deletes, which Redis would allow alone, go with it.
	b = c.NewBatch(ids)
	b.DeleteDependent("http://a.example/1", "ihttp://m.example/1")
	b.DeleteSkipped("http://m.example/1")
	b.Enqueue(items("http://b.example/1")...)
	if err := c.Client().ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Commit(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a batch over maxmemory: %v", err)
	}
	if deps, _ := c.Dependents(ctx, "http://a.example/1"); len(deps) != 2 {
		t.Fatalf("a refused batch deleted a dependent: %v", deps)
	}
	if err := c.Client().ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if deps, _ := c.Dependents(ctx, "http://a.example/1"); len(deps) != 1 {
		t.Fatalf("dependents after the delete: %v", deps)
	}
	if v, _ := c.SkipRecord(ctx, "http://m.example/1"); v != nil {
		t.Fatalf("skip record after the delete: %q", v)
	}
}

// TestStalledWorkerStopsPopping: a worker whose heartbeat stalls (here it
// never beats after Join) stops popping once its leases were not renewed for
// 2/3 of the TTL, while they still hold in Redis: a request is not sent under
// a lease that may run out before it ends, to be sent again by the
// partition's next holder. A renewal lets it pop again.
//
// On the wall clock only the expiry side is asserted (a worker that waited
// past 2/3 of a short TTL is refused, however much longer it was
// descheduled); what must still hold when asked (the lease in Redis, a pop
// just under 2/3 of the TTL, a pop after the renewal) is asserted under a
// TTL of a minute, with the last renewal moved back in time
// (renewedAgo): a loaded machine made a lease of 1.2 s run out in Redis
// before the test asked.
func TestStalledWorkerStopsPopping(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 4, Capacity: 1000}, redistest.Options{})
	ctx := context.Background()
	urls := []string{"http://a.example/1", "http://a.example/2", "http://a.example/3"}
	if _, err := c.Enqueue(ctx, c.NewIDs(), items(urls...)); err != nil {
		t.Fatal(err)
	}
	// Real time: stale after waiting 2/3 of the TTL since the leases were
	// taken (the wait only grows on a loaded machine).
	const short = 1200 * time.Millisecond
	s, err := openOn(t, srv, Options{}).Join(ctx, "s", MemberOptions{TTL: short, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now() // after the leases were taken
	time.Sleep(2*short/3 + 100*time.Millisecond)
	if _, _, ok, err := s.Pop(ctx, "a.example"); !errors.Is(err, ErrLeaseStale) || !errors.Is(err, ErrNotOwner) || ok {
		t.Fatalf("pop %v after the last renewal (TTL %v): %v %v, want ErrLeaseStale", time.Since(start), short, ok, err)
	}
	s.Leave(ctx) // its leases may have run out already: nothing to check

	const ttl = time.Minute
	a, err := c.Join(ctx, "a", MemberOptions{TTL: ttl, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Leave(ctx)
	if got := len(a.Owned()); got != 4 {
		t.Fatalf("a holds %d of 4 partitions", got)
	}
	if _, _, ok, err := a.Pop(ctx, "a.example"); !ok || err != nil {
		t.Fatalf("pop under a fresh lease: %v %v", ok, err)
	}
	renewedAgo(a, 2*ttl/3-10*time.Second)
	if _, _, ok, err := a.Pop(ctx, "a.example"); !ok || err != nil {
		t.Fatalf("pop %v after the last renewal (TTL %v): %v %v", 2*ttl/3-10*time.Second, ttl, ok, err)
	}
	renewedAgo(a, 2*ttl/3+time.Second)
	if _, _, ok, err := a.Pop(ctx, "a.example"); !errors.Is(err, ErrLeaseStale) || !errors.Is(err, ErrNotOwner) || ok {
		t.Fatalf("pop %v after the last renewal (TTL %v): %v %v, want ErrLeaseStale", 2*ttl/3+time.Second, ttl, ok, err)
	}
	rdb := c.rdb
	if pttl, err := rdb.PTTL(ctx, c.leaseKey(c.PartitionOf("a.example"))).Result(); err != nil || pttl <= 0 {
		t.Fatalf("the lease of %v ran out already (%v, %v)", ttl, pttl, err)
	}
	if err := a.round(ctx); err != nil { // the late heartbeat
		t.Fatal(err)
	}
	if _, _, ok, err := a.Pop(ctx, "a.example"); !ok || err != nil {
		t.Fatalf("pop after the renewal: %v %v", ok, err)
	}
}

// renewedAgo makes m's leases look last renewed d ago (Lease.sure), as if
// its heartbeat had stalled that long.
func renewedAgo(m *Member, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	at := time.Now().Add(-d)
	for p, l := range m.owned {
		l.sure = at
		m.owned[p] = l
	}
}
