//go:build e2e

package redisstate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// tokens is a page's text of n distinct words (seed tells pages apart).
func tokens(seed, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("w%d", mix(uint64(seed)<<20|uint64(i))%100_000)
	}
	return out
}

// The page cycle as a worker's engine runs it: Frontier.Next (the IP's
// clock and the pop, one pipeline), the lease check before the request,
// Release (the IP's release kept), the transaction (its reads, the first
// check-and-add round and the kept release in one pipeline; the commit
// script, which ends the lease), Finish (nothing left to send): 4 round
// trips whatever the number of links. Before session 13: 6 (the release
// and the check-and-add each alone). The release went (another worker
// reserves the IP at once: delay 0) and the page is in the index.
func TestRoundTripsPerPageStore(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 2, Capacity: 10_000}, redistest.Options{})
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, c.NewIDs(), items("http://a.example/")); err != nil {
		t.Fatal(err)
	}
	wc := openOn(t, srv, Options{})
	m, err := wc.Join(ctx, "w", MemberOptions{TTL: time.Minute, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Leave(ctx)
	f := wc.NewFrontier(m, FrontierOptions{})
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := mustStore(t, wc, db, f)
	if _, err := st.ids.Next(ctx); err != nil { // the id block, once per 1024 ids
		t.Fatal(err)
	}
	det, err := dedup.New(dedup.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	x := wc.NewIndex(det, DedupOptions{})
	if err := commitScript.Load(ctx, wc.Client()).Err(); err != nil { // as a worker's first commit does
		t.Fatal(err)
	}
	rt := &roundTrips{}
	wc.Client().AddHook(rt)
	for _, nlinks := range []int{1, 100} {
		rt.reset()
		it, err := f.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.CheckLease(ctx, it); err != nil {
			t.Fatal(err)
		}
		f.Release(it, frontier.Outcome{Requested: true, Status: 200})
		links := make([]string, nlinks)
		for i := range links {
			links[i] = fmt.Sprintf("http://a.example/%d/%d", nlinks, i)
		}
		sig := det.Sign(tokens(nlinks, 300))
		var d dedup.Decision
		err = st.Update(ctx, func(tx crawl.Tx) error {
			var ok bool
			var err error
			if d, ok, err = x.CheckAndAddPrefetch(ctx, tx, crawl.PageReads{Links: links}, it.ID, sig, nil); err != nil || !ok {
				return fmt.Errorf("check-and-add with the prefetch: ok %v, %v", ok, err)
			}
			if err := tx.(crawl.SeenPrefetcher).PrefetchSeen(links); err != nil { // read already
				return err
			}
			for _, u := range links {
				id, fresh, err := tx.CheckAndMark(u, tx.NewID)
				if err != nil || !fresh {
					return fmt.Errorf("mark %s: %v %v", u, fresh, err)
				}
				if err := tx.PutQueue(frontier.Item{ID: id, URL: u, Host: "a.example", Depth: 1}); err != nil {
					return err
				}
			}
			if err := tx.PutPage(&storage.Page{ID: it.ID, URL: it.URL, Class: storage.ClassUnique}); err != nil {
				return err
			}
			return tx.DeleteQueue(it.Host, it.Seq)
		})
		if err != nil {
			t.Fatal(err)
		}
		f.Finish(it)
		if d.Class != dedup.Unique {
			t.Fatalf("page %d: %+v, want unique", nlinks, d)
		}
		if rt.get() != 4 {
			t.Fatalf("a page with %d links: %d round trips, want 4", nlinks, rt.get())
		}
		r, _, _, err := c.ReserveIP(ctx, "a.example", "other", time.Second)
		if err != nil || r == nil {
			t.Fatalf("the IP is not released after the page of %d links: %v", nlinks, err)
		}
		if err := c.ReleaseIP(ctx, r, 0); err != nil {
			t.Fatal(err)
		}
		dup, err := x.CheckAndAdd(ctx, it.ID+1_000_000, sig, nil)
		if err != nil || dup.Class != dedup.Exact || dup.Original != it.ID {
			t.Fatalf("the page of %d links is not in the index: %+v %v", nlinks, dup, err)
		}
	}
	if n, _ := c.InFlight(ctx, c.PartitionOf("a.example")); n != 0 {
		t.Fatalf("%d in flight after the pages", n)
	}
}

// CheckAndAddPrefetch decides as CheckAndAdd: a second copy is an exact
// duplicate of the first, a page sharing its supershingles a candidate
// settled by the rule (here: no settler, the sketch estimate), and of two
// transactions racing with copies of one page, one keeps it. After Redis
// lost its scripts (SCRIPT FLUSH, as a restart does) the first round goes
// alone and decides the same.
func TestCheckAndAddPrefetchDecides(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	ca, a := storeOn(t, srv, "pfdec", nil)
	_, b := storeOn(t, srv, "pfdec", nil)
	det, err := dedup.New(dedup.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	xa, xb := ca.NewIndex(det, DedupOptions{}), b.c.NewIndex(det, DedupOptions{})
	decide := func(s *Store, x *Index, id uint64, sig *dedup.Signature) dedup.Decision {
		t.Helper()
		var d dedup.Decision
		err := s.Update(context.Background(), func(tx crawl.Tx) error {
			var ok bool
			var err error
			if d, ok, err = x.CheckAndAddPrefetch(context.Background(), tx, crawl.PageReads{Links: []string{"http://l.test/"}}, id, sig, nil); !ok && err == nil {
				err = errors.New("not of this backend")
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	text := tokens(1, 400)
	if d := decide(a, xa, 1, det.Sign(text)); d.Class != dedup.Unique {
		t.Fatalf("first page: %+v", d)
	}
	if d := decide(b, xb, 2, det.Sign(text)); d.Class != dedup.Exact || d.Original != 1 {
		t.Fatalf("its copy by another worker: %+v", d)
	}
	near := append(append([]string{}, text[:396]...), "x1", "x2", "x3", "x4")
	if d := decide(b, xb, 3, det.Sign(near)); d.Class != dedup.Near || d.Original != 1 {
		t.Fatalf("a near copy: %+v", d)
	}
	if err := ca.Client().ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if d := decide(a, xa, 4, det.Sign(text)); d.Class != dedup.Exact || d.Original != 1 {
		t.Fatalf("a copy after SCRIPT FLUSH: %+v", d)
	}
	// Racing copies of a new page: one unique, the other its duplicate.
	other := det.Sign(tokens(2, 400))
	var wg sync.WaitGroup
	ds := make([]dedup.Decision, 2)
	for i, s := range []*Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ds[i] = decide(s, []*Index{xa, xb}[i], uint64(10+i), other)
		}()
	}
	wg.Wait()
	if (ds[0].Class == dedup.Unique) == (ds[1].Class == dedup.Unique) {
		t.Fatalf("racing copies: %+v and %+v, want one unique", ds[0], ds[1])
	}
}

// A kept release holds the IP's gap from Release, as one sent at once:
// another worker finds the IP held until the release goes, then waits the
// gap less the time the release was kept, never less (its reservation
// comes no earlier than Release + the delay, and not a whole delay after
// the send). A reservation older than half its hold is released at once.
//
// Not on the wall clock: the release is kept 5 minutes, moved back in time
// (keptAgo), under a delay of 10 and a hold of 20 (a loaded machine let a
// 1 s half hold pass before Release, or the IP wait its 400 ms gap less
// 150 ms kept longer than the test allowed). The other worker's wait then
// tells one gap from the other: at most the delay less the 5 minutes kept
// (the gap from the send is 5 minutes longer), at least that less the time
// the test took since before Release.
func TestKeptReleaseHoldsTheGap(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 2, Capacity: 10_000}, redistest.Options{})
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, c.NewIDs(), items("http://a.example/1", "http://a.example/2")); err != nil {
		t.Fatal(err)
	}
	wc := openOn(t, srv, Options{})
	m, err := wc.Join(ctx, "w", MemberOptions{TTL: time.Minute, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Leave(ctx)
	const delay, kept = 10 * time.Minute, 5 * time.Minute
	// Redis's clock (TIME, whole ms) and the test's (monotonic) differ by
	// the truncation and any slewing: allow 2 ms.
	const skew = 2 * time.Millisecond
	f := wc.NewFrontier(m, FrontierOptions{Options: frontier.Options{Delay: delay}, Hold: 20 * time.Minute,
		OnNewHost: nil})
	it, err := f.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now() // before Release
	f.Release(it, frontier.Outcome{Requested: true, Status: 200})
	if !f.releasePending(it) {
		t.Fatal("the release was not kept")
	}
	if r, _, held, err := c.ReserveIP(ctx, "a.example", "other", time.Second); r != nil || !held || err != nil {
		t.Fatalf("the IP is not held while its release is kept: %v held %v %v", r, held, err)
	}
	keptAgo(f, it, kept)
	f.Finish(it) // sends it: no other round trip took it
	if f.releasePending(it) {
		t.Fatal("Finish did not send the release")
	}
	r, wait, held, err := c.ReserveIP(ctx, "a.example", "other", time.Second)
	took := time.Since(before)
	if err != nil || held || r != nil {
		t.Fatalf("after the release: reserved %v held %v, %v; want the IP in its gap", r, held, err)
	}
	// The release script got the gap less the time kept (at least kept),
	// rounded up to the ms, and ran before this reservation; it ran after
	// Release, which came after before.
	if most, least := delay-kept+time.Millisecond+skew, delay-kept-took-skew; wait > most || wait < least {
		t.Fatalf("the IP's gap after a release kept %v: %v left (want %v to %v; delay %v, %v since before Release)", kept, wait, least, most, delay, took)
	}
	t.Logf("the IP's gap after a release kept %v: %v left (delay %v, %v since before Release)", kept, wait, delay, took)
	// The gap is not waited out: the IP is freed for what follows.
	if err := c.rdb.Del(ctx, c.ipKey("a.example")).Err(); err != nil {
		t.Fatal(err)
	}

	// Past half its hold, a reservation is released at once.
	f2 := wc.NewFrontier(m, FrontierOptions{Options: frontier.Options{Delay: 0}, Hold: 200 * time.Millisecond})
	it, err = f2.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(120 * time.Millisecond)
	f2.Release(it, frontier.Outcome{Requested: true, Status: 200})
	if f2.releasesKept() {
		t.Fatal("a reservation past half its hold: its release was kept")
	}
	if r, _, _, err := c.ReserveIP(ctx, "a.example", "other", time.Second); r == nil || err != nil {
		t.Fatalf("the IP is not free after its release was sent at once: %v", err)
	}
	f2.Finish(it)
}

// keptAgo makes it's kept release of f look kept d, as if the round trip
// that sends it came d after Release.
func keptAgo(f *Frontier, it *frontier.Item, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.releases {
		if r.it == it {
			r.at = r.at.Add(-d)
		}
	}
}

// Workers whose goroutines keep their IP releases for the next round trip
// (each goroutine takes a few ms after Release before Finish, as a page's
// parse and commit do, so the releases ride in the other goroutines' pops)
// keep every IP's requests apart by the delay, whichever workers sent them,
// and request every URL once. That a kept release rides in another pop's
// round trip is made to happen, not hoped for from the schedule: before its
// goroutines start, the first worker (alone, holding every partition) pops
// the next item between a Release and its Finish, and that pop's round trip
// must carry the release.
func TestKeptReleasesPoliteAcrossWorkers(t *testing.T) {
	t.Parallel()
	srv, c := open(t, Options{Partitions: 8, Capacity: 10_000}, redistest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var urls []string
	for i := 0; i < 120; i++ {
		urls = append(urls, fmt.Sprintf("http://h%d.example/%d", i%24, i))
	}
	if _, err := c.Enqueue(ctx, c.NewIDs(), items(urls...)); err != nil {
		t.Fatal(err)
	}
	ipOf := func(h string) string { return fmt.Sprintf("ip:10.0.0.%d", len(h)%3) }
	const delay = 15 * time.Millisecond
	var mu sync.Mutex
	var reqs []request
	kept := newScriptTrips()
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wc := openOn(t, srv, Options{})
		wc.Client().AddHook(kept)
		// Leases and IP holds that only a hang outlasts: a lease that ran
		// out under a request (its goroutine descheduled past a TTL of
		// 900 ms) has its item requested again by the next holder, an IP
		// hold that ran out lets another worker in within the delay.
		m, err := wc.Join(ctx, fmt.Sprintf("w%d", w), MemberOptions{TTL: time.Minute, Heartbeat: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var f *Frontier
		f = wc.NewFrontier(m, FrontierOptions{Options: frontier.Options{Delay: delay, MaxFailures: 10},
			Hold: time.Minute, OnNewHost: func(h string) { f.SetPoliteKey(h, ipOf(h)) }})
		fetch := func(it *frontier.Item) {
			r := request{url: it.URL, ip: ipOf(it.Host), start: time.Now(), worker: w}
			time.Sleep(2 * time.Millisecond)
			r.end = time.Now()
			mu.Lock()
			reqs = append(reqs, r)
			mu.Unlock()
		}
		if w == 0 {
			a, err := f.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			fetch(a)
			f.Release(a, frontier.Outcome{Requested: true, Status: 200})
			if !f.releasePending(a) {
				t.Fatal("the release was not kept")
			}
			rode := kept.rode(ipReleaseScript, ipReserveScript)
			b, err := f.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if f.releasePending(a) || kept.rode(ipReleaseScript, ipReserveScript) != rode+1 {
				t.Fatalf("the release kept did not ride in the next pop's round trip (still kept: %v): %s", f.releasePending(a), kept)
			}
			f.Finish(a)
			fetch(b)
			f.Release(b, frontier.Outcome{Requested: true, Status: 200})
			f.Finish(b)
		}
		var left sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			left.Add(1)
			go func() {
				defer wg.Done()
				defer left.Done()
				for {
					it, err := f.Next(ctx)
					if errors.Is(err, frontier.ErrDone) {
						return
					}
					if err != nil {
						t.Errorf("worker %d: %v", w, err)
						return
					}
					fetch(it)
					f.Release(it, frontier.Outcome{Requested: true, Status: 200})
					time.Sleep(3 * time.Millisecond) // the page's parse and commit
					f.Finish(it)
				}
			}()
		}
		go func() { left.Wait(); m.Leave(ctx) }()
	}
	wg.Wait()
	checkCrawl(t, reqs, urls, delay)
	t.Logf("%d requests; %s", len(reqs), kept)
}

// scriptTrips counts a client's round trips by the scripts in them: alone
// (one script's calls and nothing else), with others, and riding in a
// round trip with a given other script.
type scriptTrips struct {
	mu    sync.Mutex
	alone map[string]int
	with  map[string]int
	pairs map[[2]string]int
	total int
}

func newScriptTrips() *scriptTrips {
	return &scriptTrips{alone: map[string]int{}, with: map[string]int{}, pairs: map[[2]string]int{}}
}

func (h *scriptTrips) add(cmds ...redis.Cmder) {
	shas := map[string]bool{}
	other := false
	for _, c := range cmds {
		if c.Name() == "evalsha" {
			shas[fmt.Sprint(c.Args()[1])] = true
		} else {
			other = true
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.total++
	for sha := range shas {
		if len(shas) == 1 && !other {
			h.alone[sha]++
		} else {
			h.with[sha]++
		}
		for o := range shas {
			if o != sha {
				h.pairs[[2]string{sha, o}]++
			}
		}
	}
}

// rode is the number of round trips with calls of both scripts.
func (h *scriptTrips) rode(s, with *redis.Script) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pairs[[2]string{s.Hash(), with.Hash()}]
}

func (h *scriptTrips) counts(s *redis.Script) (alone, with int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.alone[s.Hash()], h.with[s.Hash()]
}

func (h *scriptTrips) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d round trips;", h.total)
	for sha, name := range ScriptNames() {
		if h.alone[sha]+h.with[sha] > 0 {
			fmt.Fprintf(&b, " %s: %d alone, %d with others;", name, h.alone[sha], h.with[sha])
		}
	}
	return b.String()
}

func (h *scriptTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scriptTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.add(cmd); return next(ctx, cmd) }
}
func (h *scriptTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.add(cmds...); return next(ctx, cmds) }
}

// TestEngineRoundTripsPerPage: a worker's engine (one fetch at a time,
// robots.txt off) crawls a web of 60 distinct pages, 3 of them missing.
// Every page's IP release rides in a round trip the page makes anyway, and
// every page with content has its first check-and-add round in its
// prefetch's pipeline: none goes alone (only an empty pop's IP goes back
// alone). A page then costs 4 round trips (pop, lease check, prefetch,
// commit); before session 13, 6.
func TestEngineRoundTripsPerPage(t *testing.T) {
	t.Parallel()
	const pages = 60
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := -1
		fmt.Sscanf(r.URL.Path, "/p/%d", &i)
		if i < 0 || i >= pages || i%17 == 16 {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><html><head><title>page %d</title></head><body><p>%s</p>", i, strings.Join(tokens(i, 120), " "))
		fmt.Fprintf(w, "<a href=/p/%d>a</a> <a href=/p/%d>b</a> <a href=/p/%d>c</a></body></html>", (2*i+1)%pages, (2*i+2)%pages, (i+1)%pages)
	}))
	defer web.Close()
	trips := newScriptTrips()
	ctx := context.Background()
	sh, db := sharedEngineParts(t, "rt", trips)
	cfg := configs.Default()
	cfg.Politeness.Delay, cfg.Politeness.ObeyRobots = 0, false
	cfg.Crawl.Workers = 1
	seed := web.URL + "/p/0"
	cr, err := crawl.BuildShared(cfg, db, sh, crawl.Env{Seeds: []string{seed}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cr.Close()
	if _, err := cr.Engine.Seed([]string{seed}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := cr.Engine.Run(rctx, rctx); err != nil {
		t.Fatal(err)
	}
	recorded, content := 0, 0
	if err := db.ForEachPage(func(p *storage.Page) error {
		recorded++
		if p.Class == storage.ClassUnique {
			content++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if recorded != pages || content != pages-3 {
		t.Fatalf("%d page records, %d unique; want %d, %d", recorded, content, pages, pages-3)
	}
	relAlone, relWith := trips.counts(ipReleaseScript)
	caAlone, caWith := trips.counts(checkAndAddScript)
	_, pops := trips.counts(popScript)
	// A pop that finds the queue empty gives its IP back at once (undo):
	// not a page's release.
	if relAlone > pops-recorded || relWith != recorded {
		t.Errorf("IP releases: %d round trips alone, %d with others; want at most %d (the empty pops'), %d (one a page)",
			relAlone, relWith, pops-recorded, recorded)
	}
	if caAlone != 0 || caWith != content {
		t.Errorf("check-and-adds: %d round trips alone, %d with others; want 0, %d (one a page with content)", caAlone, caWith, content)
	}
	if n := trips.rode(checkAndAddScript, ipReleaseScript); n != content {
		t.Errorf("%d pages' check-and-adds with their IP release, want %d", n, content)
	}
	t.Logf("%d pages: %s", recorded, trips)
}

// BenchmarkPageRoundTrips measures what the round trips saved cost the
// worker: the CPU (user+sys of this process, the client; Redis's is its
// own) of a page's Redis part after its request, the IP's release, the
// check-and-add and the transaction (the reads of 10 links, the commit),
// sent as before session 13 ("separate": the release and the check-and-add
// each alone, 4 round trips) and as now ("pipelined": the release kept and
// the check-and-add's first round in the prefetch's pipeline, 2). Each page
// is new (the check-and-add adds it). Reported: cpu-us/page.
func BenchmarkPageRoundTrips(b *testing.B) {
	srv := redistest.Start(b, redistest.Options{NoPersistence: true})
	ctx := context.Background()
	c := openOn(b, srv, Options{Partitions: 4, Capacity: 1 << 20})
	m, err := c.Join(ctx, "w", MemberOptions{TTL: time.Minute, Heartbeat: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Leave(ctx)
	f := c.NewFrontier(m, FrontierOptions{})
	db, err := storage.Open(b.TempDir(), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	st := mustStore(b, c, db, f)
	det, err := dedup.New(dedup.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	x := c.NewIndex(det, DedupOptions{})
	sigs := make([]*dedup.Signature, 4096)
	for i := range sigs {
		sigs[i] = det.Sign(tokens(1_000_000+i, 300))
	}
	page := 0
	run := func(b *testing.B, pipelined bool) {
		for b.Loop() {
			page++
			id, sig := uint64(page), sigs[page%len(sigs)]
			if page >= len(sigs) {
				sig = det.Sign(tokens(2_000_000+page, 300))
			}
			links := make([]string, 10)
			for i := range links {
				links[i] = fmt.Sprintf("http://h%d.example/%d/%d", i, page, i)
			}
			res := &Reservation{ip: fmt.Sprintf("10.1.%d.%d", page/250%250, page%250), token: "w h"}
			if pipelined {
				f.mu.Lock()
				f.releases = append(f.releases, &ipRelease{it: &frontier.Item{Host: "h.example"}, res: res, at: time.Now()})
				f.mu.Unlock()
			} else if err := c.ReleaseIP(ctx, res, 0); err != nil {
				b.Fatal(err)
			}
			var pre dedup.Decision
			if !pipelined {
				if pre, err = x.CheckAndAdd(ctx, id, sig, nil); err != nil {
					b.Fatal(err)
				}
			}
			err := st.Update(ctx, func(tx crawl.Tx) error {
				d := pre
				if pipelined {
					var err error
					if d, _, err = x.CheckAndAddPrefetch(ctx, tx, crawl.PageReads{Links: links}, id, sig, nil); err != nil {
						return err
					}
				} else if err := tx.(crawl.PagePrefetcher).PrefetchPage(crawl.PageReads{Links: links}); err != nil {
					return err
				}
				if d.Class != dedup.Unique {
					return fmt.Errorf("page %d: %+v", id, d)
				}
				for _, u := range links {
					lid, fresh, err := tx.CheckAndMark(u, tx.NewID)
					if err != nil {
						return err
					}
					if fresh {
						if err := tx.PutQueue(frontier.Item{ID: lid, URL: u, Depth: 1}); err != nil {
							return err
						}
					}
				}
				return tx.PutPage(&storage.Page{ID: id, URL: fmt.Sprintf("http://p.example/%d", id), Class: storage.ClassUnique})
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, pipelined := range []bool{false, true} {
		name := map[bool]string{false: "separate", true: "pipelined"}[pipelined]
		b.Run(name, func(b *testing.B) {
			before := testtools.ProcessCPU()
			run(b, pipelined)
			b.ReportMetric(float64((testtools.ProcessCPU()-before).Microseconds())/float64(b.N), "cpu-us/page")
		})
	}
}

// BenchmarkRoundTripCPU measures a round trip's fixed cost in the client:
// an IP release alone (its own round trip, as before session 13), a
// pipeline of one read, and the same pipeline with the release riding in
// it (as kept releases do). Reported: cpu-us/op (user+sys of this process).
func BenchmarkRoundTripCPU(b *testing.B) {
	srv := redistest.Start(b, redistest.Options{NoPersistence: true})
	ctx := context.Background()
	c := openOn(b, srv, Options{})
	res := &Reservation{ip: "10.0.0.1", token: "w h"}
	for _, bc := range []struct {
		name string
		op   func()
	}{
		{"release alone", func() { c.ReleaseIP(ctx, res, 0) }},
		{"read", func() {
			c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { p.HMGet(ctx, "k", "a", "b"); return nil })
		}},
		{"read with the release", func() {
			c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				ipReleaseScript.EvalSha(ctx, p, []string{c.ipKey(res.ip)}, 0, res.token)
				p.HMGet(ctx, "k", "a", "b")
				return nil
			})
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			before := testtools.ProcessCPU()
			for b.Loop() {
				bc.op()
			}
			b.ReportMetric(float64((testtools.ProcessCPU()-before).Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
}
