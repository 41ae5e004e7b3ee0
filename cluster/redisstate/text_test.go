//go:build e2e

package redisstate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/parse"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// textWorker is one worker of a test crawl: its Store (own data dir), its
// index, and its remote text service while serve is on.
type textWorker struct {
	st   *Store
	x    *Index
	stop context.CancelFunc
	done chan struct{}
}

func textWorkers(t *testing.T, srv *redistest.Server, name string, n int, det *dedup.Detector, h *roundTrips, serve bool) []*textWorker {
	t.Helper()
	var ws []*textWorker
	for i := 0; i < n; i++ {
		var hk *roundTrips
		if i == 0 {
			hk = h
		}
		c, st := storeOn(t, srv, name, hk)
		w := &textWorker{st: st, x: c.NewIndex(det, DedupOptions{})}
		if serve {
			w.serve(t)
		}
		ws = append(ws, w)
	}
	return ws
}

// serve starts w's remote text service (waits until it is alive).
func (w *textWorker) serve(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w.stop, w.done = cancel, make(chan struct{})
	go func() {
		defer close(w.done)
		if err := w.st.Serve(ctx); err != nil {
			t.Error(err)
		}
	}()
	t.Cleanup(w.leave)
	for !w.st.serving.Load() {
		time.Sleep(time.Millisecond)
	}
}

// leave stops w's service as a worker leaving does.
func (w *textWorker) leave() {
	if w.stop != nil {
		w.stop()
		<-w.done
		w.stop = nil
	}
}

// settlerOf is the engine's settler (crawl/settle.go) over st: the candidate's
// text through the seam's Store.Text, tokenized as parse.Parse does, its
// exact Jaccard with the page's; "cannot tell" on crawl.ErrElsewhere.
func settlerOf(t *testing.T, det *dedup.Detector, st crawl.Store, toks []string) dedup.Settler {
	mine := det.Shingles(toks, nil)
	return func(orig uint64) (float64, bool) {
		text, err := st.Text(context.Background(), orig)
		if errors.Is(err, crawl.ErrElsewhere) {
			return 0, false
		}
		if err != nil {
			t.Errorf("text of %d: %v", orig, err)
			return 0, false
		}
		return dedup.ExactJaccard(mine, det.Shingles(parse.Tokenize(nil, text), nil)), true
	}
}

// whyStore is a Store that records why each text it was asked for was not
// available (Text's error).
type whyStore struct {
	*Store
	whys *[]string
}

func (w whyStore) Text(ctx context.Context, id uint64) (string, error) {
	text, err := w.Store.Text(ctx, id)
	if err != nil {
		*w.whys = append(*w.whys, err.Error())
	}
	return text, err
}

// commitText records page id with its text, as the engine's commit does
// after the index decided.
func commitText(t testing.TB, st *Store, id uint64, toks []string) {
	err := st.Update(context.Background(), func(tx crawl.Tx) error {
		if err := tx.PutPage(&storage.Page{ID: id, URL: fmt.Sprintf("http://p%d.test/", id), Class: storage.ClassUnique}); err != nil {
			return err
		}
		return tx.PutText(id, strings.Join(toks, " "))
	})
	if err != nil {
		t.Error(err)
	}
}

// textPair is one generated pair's outcome.
type textPair struct {
	j             float64
	local, shared dedup.Decision
}

// runPairs generates families (an original and a near copy of it, J about
// 0.84 to 0.98), the original indexed and committed by worker f%n, the copy
// checked by worker (f+1)%n (every candidate is remote), and returns each
// copy's decision in the shared crawl and by one local detector with
// settlement. With late, every third original is committed 80 ms after it
// was indexed, while the copy's worker already asks for its text.
func runPairs(t *testing.T, ws []*textWorker, det *dedup.Detector, families int, late bool) []textPair {
	ctx := context.Background()
	local, _ := dedup.New(det.Options())
	r := rand.New(rand.NewPCG(19, 85))
	texts := map[uint64][]string{}
	localSettle := func(toks []string) dedup.Settler {
		mine := det.Shingles(toks, nil)
		return func(orig uint64) (float64, bool) {
			return dedup.ExactJaccard(mine, det.Shingles(texts[orig], nil)), true
		}
	}
	var out []textPair
	var wg sync.WaitGroup
	for f := 0; f < families; f++ {
		a, b := ws[f%len(ws)], ws[(f+1)%len(ws)]
		base := words(r, 400+r.IntN(200))
		cp := variant(r, base, 2+r.IntN(7))
		id := uint64(1000 + 2*f)
		texts[id], texts[id+1] = base, cp
		local.CheckAndAddSettled(id, det.Sign(base), localSettle(base))
		d, err := a.x.CheckAndAdd(ctx, id, det.Sign(base), settlerOf(t, det, a.st, base))
		if err != nil || d.Class != dedup.Unique {
			t.Fatalf("family %d: the original is %v (%v)", f, d.Class, err)
		}
		if late && f%3 == 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(80 * time.Millisecond)
				commitText(t, a.st, id, base)
			}()
		} else {
			commitText(t, a.st, id, base)
		}
		want := local.CheckAndAddSettled(id+1, det.Sign(cp), localSettle(cp))
		got, err := b.x.CheckAndAdd(ctx, id+1, det.Sign(cp), settlerOf(t, det, b.st, cp))
		if err != nil {
			t.Fatal(err)
		}
		if got.Class == dedup.Unique {
			commitText(t, b.st, id+1, cp)
		}
		j := dedup.ExactJaccard(det.Shingles(base, nil), det.Shingles(cp, nil))
		out = append(out, textPair{j: j, local: want, shared: got})
	}
	wg.Wait()
	return out
}

// differing counts the pairs decided otherwise than by one process, and
// those with J in the band [0.85, 0.97].
func differing(t *testing.T, res []textPair) (differ, inBand, dups int) {
	for i, p := range res {
		if p.j >= 0.85 && p.j <= 0.97 {
			inBand++
		}
		if p.local.Class != dedup.Unique {
			dups++
		}
		if p.local.Class != p.shared.Class || p.local.Original != p.shared.Original {
			differ++
			t.Logf("pair %d at J %.3f: one process %v (settled %v), shared %v (J %.3f, settled %v)",
				i, p.j, p.local.Class, p.local.Settled, p.shared.Class, p.shared.Similarity, p.shared.Settled)
		}
	}
	return
}

// TestRemoteTextSettlesAsOneProcess: three workers, each near-duplicate
// candidate kept by another worker: with remote texts every decision equals
// one process's with settlement (J 0.85-0.97 around the 0.90 threshold); the
// same pairs without the text service fall back to the sketch rule and
// some are decided otherwise (what a shared crawl did before).
func TestRemoteTextSettlesAsOneProcess(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	det, err := dedup.New(dedup.Options{Simhash: false})
	if err != nil {
		t.Fatal(err)
	}
	const families = 90
	h := &roundTrips{}
	ws := textWorkers(t, srv, "remote", 3, det, h, true)
	res := runPairs(t, ws, det, families, true)
	differ, inBand, dups := differing(t, res)
	t.Logf("remote texts: %d pairs, %d in J 0.85-0.97, %d duplicates, %d decided otherwise", len(res), inBand, dups, differ)
	if inBand < families*2/3 || dups < 20 || dups > families-20 {
		t.Fatalf("%d pairs in the band, %d duplicates: the pairs do not test the threshold", inBand, dups)
	}
	if differ > 0 {
		t.Fatalf("%d of %d pairs decided otherwise than by one process", differ, len(res))
	}
	var asked, answered, fell int64
	for _, w := range ws {
		s := w.st.TextStats()
		asked, answered, fell = asked+s.Asked, answered+s.Answered, fell+s.FellBack
	}
	if asked == 0 || answered != asked || fell != 0 {
		t.Fatalf("remote texts: asked %d, answered %d, fell back %d", asked, answered, fell)
	}
	var lats []time.Duration
	var bytes int64
	for _, w := range ws {
		lats = append(lats, w.st.RemoteLatencies()...)
		bytes += w.st.TextStats().Bytes
	}
	slices.Sort(lats)
	t.Logf("remote texts answered: %d, %d text bytes (%.0f a text), latency median %v, p99 %v, max %v (the late commits included)",
		answered, bytes, float64(bytes)/float64(answered), lats[len(lats)/2], lats[len(lats)*99/100], lats[len(lats)-1])

	// Without the service (as before): the sketch rule decides remote
	// candidates.
	without := textWorkers(t, srv, "remote-off", 3, det, nil, false)
	res = runPairs(t, without, det, families, false)
	differ, _, _ = differing(t, res)
	t.Logf("without remote texts: %d of %d pairs decided otherwise", differ, len(res))
	if differ == 0 {
		t.Fatalf("without remote texts every pair was decided as by one process: the pairs do not test settlement")
	}
}

// TestRemoteTextRoundTrips: a remote text costs the requester one round
// trip (the route script and the wait for the answer in one pipeline); its
// latency on loopback is logged (median, p99).
func TestRemoteTextRoundTrips(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	det, _ := dedup.New(dedup.Options{Simhash: false})
	h := &roundTrips{}
	ws := textWorkers(t, srv, "rt", 2, det, h, true)
	toks := words(rand.New(rand.NewPCG(1, 2)), 300)
	commitText(t, ws[1].st, 42, toks)
	h.reset()
	const n = 500
	for i := 0; i < n; i++ {
		text, err := ws[0].st.Text(context.Background(), 42)
		if err != nil || text != strings.Join(toks, " ") {
			t.Fatalf("remote text: %d bytes, %v", len(text), err)
		}
	}
	// The serving goroutines of worker 0 use the same client: their
	// BLPOPs (one a second each) and alive renewals are counted too.
	if got := h.get(); got < n || got > n+8 {
		t.Fatalf("%d round trips for %d remote texts", got, n)
	}
	lats := ws[0].st.RemoteLatencies()
	slices.Sort(lats)
	st := ws[0].st.TextStats()
	t.Logf("%d round trips for %d remote texts of %d bytes; latency median %v, p99 %v, max %v; %d bytes received",
		h.get(), n, len(strings.Join(toks, " ")), lats[len(lats)/2], lats[len(lats)*99/100], lats[len(lats)-1], st.Bytes)
}

// TestRemoteTextKeeperGone: a worker that left answers nothing; one killed
// (its alive key still there, nobody serving) answers nothing either: the
// settlement falls back to the sketch rule at once (left: "gone") or after
// the request timeout (killed: "did not answer in time"), then at once
// once its alive key expired, counted; every page is decided, none lost.
//
// Not on the wall clock: each fallback's reason (Store.Text's error) tells
// a request answered "gone" at once from one that waited its timeout (it
// checked how long 10 copies took, under 1 s, and between 1 and 1.9 s
// around an alive key of 1 s). Where the answer must be "gone" the timeout
// is a minute, which only a hang outlasts; the killed keeper's alive key
// lives until the test makes it expire.
func TestRemoteTextKeeperGone(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	det, _ := dedup.New(dedup.Options{Simhash: false})
	ctx := context.Background()
	ws := textWorkers(t, srv, "gone", 2, det, nil, true)
	a, b := ws[0], ws[1]
	r := rand.New(rand.NewPCG(3, 4))
	var bases [][]string
	for f := 0; f < 20; f++ {
		base := words(r, 400)
		bases = append(bases, base)
		if _, err := a.x.CheckAndAdd(ctx, uint64(100+f), det.Sign(base), nil); err != nil {
			t.Fatal(err)
		}
		commitText(t, a.st, uint64(100+f), base)
	}
	gone, late := statusWhy[replyGone], statusWhy[0]
	// check decides copies from to to, and returns why each remote text
	// asked fell back.
	check := func(from, to int) (decided int, whys []string) {
		st := whyStore{Store: b.st, whys: &whys}
		for f := from; f < to; f++ {
			cp := variant(r, bases[f], 2) // J about 0.95: a candidate to settle
			d, err := b.x.CheckAndAdd(ctx, uint64(200+f), det.Sign(cp), settlerOf(t, det, st, cp))
			if err != nil {
				t.Fatalf("copy %d: %v", f, err)
			}
			if d.Class != dedup.Unique && d.Original != uint64(100+f) {
				t.Fatalf("copy %d: a duplicate of %d", f, d.Original)
			}
			if d.Settled {
				t.Fatalf("copy %d settled exactly with its keeper gone", f)
			}
			decided++
		}
		return decided, whys
	}
	only := func(whys []string, want string) bool {
		for _, w := range whys {
			if !strings.Contains(w, want) {
				return false
			}
		}
		return true
	}

	a.leave() // left: its alive key is gone at once
	b.st.TextTimeout = hangBound
	n, whys := check(0, 10)
	s := b.st.TextStats()
	t.Logf("keeper left: %d copies decided; stats %+v", n, s)
	if s.Asked < 3 || s.FellBack != s.Asked || s.Answered != 0 || s.Gone != s.FellBack {
		t.Fatalf("keeper left: stats %+v", s)
	}
	if len(whys) != int(s.Asked) || !only(whys, gone) {
		t.Fatalf("keeper left: the requests fell back %q, want each %q (the requests should not wait)", whys, gone)
	}

	// Killed: the alive key outlives the process (for up to its TTL); the
	// requests wait for the silent keeper, their timeout, while it lives,
	// then fall back at once.
	up := b.st.c.keeperUpKey(a.st.Keeper())
	if err := b.st.c.rdb.Set(ctx, up, "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	b.st.TextTimeout = 300 * time.Millisecond
	before := b.st.TextStats()
	n, whys = check(10, 15)
	t.Logf("keeper killed, its alive key there: %d copies decided; fell back %q", n, whys)
	if len(whys) == 0 || !only(whys, late) {
		t.Fatalf("keeper killed, its alive key there: the requests fell back %q, want at least one, each %q", whys, late)
	}
	if err := b.st.c.rdb.PExpire(ctx, up, 50*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, hangBound, "the alive key to expire", func() bool { return b.st.c.rdb.Exists(ctx, up).Val() == 0 })
	b.st.TextTimeout = hangBound
	n, whys = check(15, 20)
	t.Logf("keeper killed, its alive key expired: %d copies decided; fell back %q", n, whys)
	if len(whys) == 0 || !only(whys, gone) {
		t.Fatalf("keeper killed, its alive key expired: the requests fell back %q, want at least one, each %q", whys, gone)
	}
	s = b.st.TextStats()
	fell := s.FellBack - before.FellBack
	if fell < 2 || fell != s.Asked-before.Asked || s.Gone != s.FellBack || s.Answered != 0 {
		t.Fatalf("keeper killed: stats %+v", s)
	}
	// Nothing lost: worker a's pages are all in its data dir.
	for f := 0; f < 20; f++ {
		if _, err := a.st.Text(ctx, uint64(100+f)); err != nil {
			t.Fatalf("page %d: %v", 100+f, err)
		}
	}
}

// A page record too comes from its keeper (the settlement with
// title_tokens reads the candidate's title); a text over the cap is not
// sent.
func TestRemotePageAndCap(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	det, _ := dedup.New(dedup.Options{Simhash: false})
	ctx := context.Background()
	ws := textWorkers(t, srv, "page", 2, det, nil, true)
	err := ws[1].st.Update(ctx, func(tx crawl.Tx) error {
		if err := tx.PutPage(&storage.Page{ID: 5, URL: "http://t.test/", Title: "The Title", Class: storage.ClassUnique}); err != nil {
			return err
		}
		if err := tx.PutPage(&storage.Page{ID: 6, URL: "http://big.test/", Class: storage.ClassUnique}); err != nil {
			return err
		}
		return tx.PutText(6, strings.Repeat("a ", MaxRemoteText/2+1))
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ws[0].st.Page(ctx, 5)
	if err != nil || p.Title != "The Title" || p.URL != "http://t.test/" {
		t.Fatalf("remote record: %+v, %v", p, err)
	}
	if _, err := ws[0].st.Page(ctx, 77); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a page nobody fetched: %v", err)
	}
	_, err = ws[0].st.Text(ctx, 6)
	if !errors.Is(err, crawl.ErrElsewhere) || !strings.Contains(err.Error(), "size cap") {
		t.Fatalf("a text over the cap: %v", err)
	}
}

// A worker restarted on its data dir answers for its pages again: the
// keeper id is the data dir's (kept in its meta), not the process's.
func TestRemoteTextKeeperRestarts(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	det, _ := dedup.New(dedup.Options{Simhash: false})
	ctx := context.Background()
	ws := textWorkers(t, srv, "restart", 2, det, nil, true)
	commitText(t, ws[1].st, 9, []string{"kept", "text"})
	ws[1].leave()
	if _, err := ws[0].st.Text(ctx, 9); !errors.Is(err, crawl.ErrElsewhere) {
		t.Fatalf("the keeper left: %v", err)
	}
	again := &textWorker{st: mustStore(t, ws[1].st.c, ws[1].st.db, nil)}
	if again.st.Keeper() != ws[1].st.Keeper() {
		t.Fatalf("keeper id %q after the restart, %q before", again.st.Keeper(), ws[1].st.Keeper())
	}
	again.serve(t)
	if text, err := ws[0].st.Text(ctx, 9); err != nil || text != "kept text" {
		t.Fatalf("after the restart: %q, %v", text, err)
	}
}

// BenchmarkRemoteText: one worker reads texts another keeps (3.4 KB, 12 KB
// and 118 KB: 500, 2,000 and 20,000 words, the sizes of BenchmarkSettle),
// one at a time as the serialized commit asks: the round trip through
// Redis and the keeper's Badger read.
func BenchmarkRemoteText(b *testing.B) {
	srv := redistest.Start(b, redistest.Options{NoPersistence: true})
	det, _ := dedup.New(dedup.Options{Simhash: false})
	for _, n := range []int{500, 2000, 20000} {
		b.Run(fmt.Sprintf("words=%d", n), func(b *testing.B) {
			ws := textWorkersB(b, srv, fmt.Sprintf("bench%d", n), det)
			toks := make([]string, n)
			r := rand.New(rand.NewPCG(uint64(n), 1))
			for i := range toks {
				toks[i] = fmt.Sprintf("%x", r.Uint64()>>40)
			}
			commitText(b, ws[1].st, 1, toks)
			text := strings.Join(toks, " ")
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				got, err := ws[0].st.Text(context.Background(), 1)
				if err != nil || len(got) != len(text) {
					b.Fatalf("remote text: %d bytes, %v", len(got), err)
				}
			}
			b.StopTimer()
			lats := ws[0].st.RemoteLatencies()
			slices.Sort(lats)
			b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// textWorkersB is textWorkers for a benchmark: two workers, both serving.
func textWorkersB(b *testing.B, srv *redistest.Server, name string, det *dedup.Detector) []*textWorker {
	ctx := context.Background()
	var ws []*textWorker
	for range 2 {
		c, err := Open(ctx, srv.Client(b), name, Options{Partitions: 4, Capacity: 10_000})
		if err != nil {
			b.Fatal(err)
		}
		db, err := storage.Open(b.TempDir(), storage.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		w := &textWorker{st: mustStore(b, c, db, nil), x: c.NewIndex(det, DedupOptions{})}
		sctx, cancel := context.WithCancel(ctx)
		w.stop, w.done = cancel, make(chan struct{})
		go func() { defer close(w.done); w.st.Serve(sctx) }()
		b.Cleanup(w.leave)
		for !w.st.serving.Load() {
			time.Sleep(time.Millisecond)
		}
		ws = append(ws, w)
	}
	return ws
}

// A page this worker keeps and lacks the text of is missing at once: it is
// not asked of itself through Redis.
func TestRemoteTextOwnPageMissing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	det, _ := dedup.New(dedup.Options{Simhash: false})
	ws := textWorkers(t, srv, "own", 1, det, nil, true)
	err := ws[0].st.Update(context.Background(), func(tx crawl.Tx) error {
		return tx.PutPage(&storage.Page{ID: 3, URL: "http://notext.test/", Class: storage.ClassUnique})
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ws[0].st.Text(context.Background(), 3)
	if !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), "does not have it") {
		t.Fatalf("own page without text: %v", err)
	}
	if s := ws[0].st.TextStats(); s.Served != 0 {
		t.Fatalf("the worker asked itself: %+v", s)
	}
}

// A request the keeper's service takes from its list while it stops (its
// blocking pop outlives the cancel by up to a second) is answered "gone",
// not dropped: the asking worker falls back at once instead of waiting its
// whole timeout.
func TestRemoteTextAnsweredWhileStopping(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	det, _ := dedup.New(dedup.Options{Simhash: false})
	keeper := textWorkers(t, srv, "stopping", 1, det, nil, true)[0]
	commitText(t, keeper.st, 7, []string{"kept", "text"})
	// The reason tells an answer "gone" from a request dropped, which
	// waits its whole timeout (it checked the request took under 1.5 s
	// of a 3 s timeout): the timeout is a minute, the asker's client
	// without a read timeout to cut its wait short.
	asker := patientWorker(t, srv, "stopping")
	asker.st.TextTimeout = hangBound
	keeper.stop() // cancelled; its pops still block, its alive key is still there
	start := time.Now()
	_, err := asker.st.Text(context.Background(), 7)
	took := time.Since(start)
	keeper.leave()
	if !errors.Is(err, crawl.ErrElsewhere) || !strings.Contains(err.Error(), statusWhy[replyGone]) {
		t.Fatalf("a keeper stopping: %v after %v, want %q: the request was dropped, not answered", err, took, statusWhy[replyGone])
	}
	t.Logf("a keeper stopping: answered %q after %v", statusWhy[replyGone], took)
}

// patientWorker is a serving text worker of crawl name whose client has
// no read timeout: a request waits its whole TextTimeout (maxBlock).
func patientWorker(t *testing.T, srv *redistest.Server, name string) *textWorker {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, Password: srv.Password, TLSConfig: srv.TLS, ReadTimeout: -1})
	t.Cleanup(func() { rdb.Close() })
	c, err := Open(context.Background(), rdb, name, Options{Partitions: 4, Capacity: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	w := &textWorker{st: mustStore(t, c, db, nil)}
	w.serve(t)
	return w
}

// The keeper id of a data dir is made once: a store that cannot be read
// (here closed; a transient Badger error alike) is an error, not a new id
// that would orphan the texts kept under the old one.
func TestKeeperIDNotReplacedOnReadError(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	c, err := Open(context.Background(), srv.Client(t), "kid", Options{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	first := mustStore(t, c, db, nil).Keeper()
	db.Close()
	if st, err := c.NewStore(db, c.NewIDs(), nil, nil); err == nil {
		t.Fatalf("a store that cannot be read gave keeper id %q (the dir's is %q), no error", st.Keeper(), first)
	} else {
		t.Logf("unreadable store: %v", err)
	}
	db, err = storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if again := mustStore(t, c, db, nil).Keeper(); again != first {
		t.Fatalf("keeper id %q after reopening, %q before", again, first)
	}
}

// keeperProcess is a worker process keeping the texts of pages 1 to 3 in its
// data dir dir and serving them (crawl "slow" at addr) until killed.
func keeperProcess(addr, dir string) {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(1)
	}
	c, err := Open(ctx, redis.NewClient(&redis.Options{Addr: addr}), "slow", Options{Partitions: 4, Capacity: 10_000})
	if err != nil {
		fail(err)
	}
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		fail(err)
	}
	st, err := c.NewStore(db, c.NewIDs(), nil, nil)
	if err != nil {
		fail(err)
	}
	err = st.Update(ctx, func(tx crawl.Tx) error {
		for id, text := range slowTexts {
			if err := tx.PutPage(&storage.Page{ID: id, URL: fmt.Sprintf("http://k%d.test/", id), Class: storage.ClassUnique}); err != nil {
				return err
			}
			if err := tx.PutText(id, text); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		fail(err)
	}
	go st.Serve(ctx)
	for !st.serving.Load() {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("serving")
	time.Sleep(time.Minute)
}

var slowTexts = map[uint64]string{1: "text one", 2: "text two", 3: "text three"}

// A keeper slow once (its process stopped, as a long GC pause or an
// overloaded machine would) is not taken for gone: the request it missed
// falls back (it did not answer in time), the next one, made while it is
// still stopped, is answered once it runs again.
//
// Not on the wall clock: the keeper is resumed once the second request was
// asked, not by a 1 s timer racing the requests' 700 ms timeouts; that
// request waits up to a minute, from a worker whose client has no read
// timeout; while stopped the keeper's alive key is made to last a minute,
// as its renewals would keep it (a test stalled past its 3 s TTL would
// otherwise see the keeper gone).
func TestRemoteTextKeeperSlowOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	ctx := context.Background()
	req := patientWorker(t, srv, "slow").st
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "REDISSTATE_TEST_KEEPER="+srv.Addr, "REDISSTATE_TEST_DIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "serving\n" {
		t.Fatalf("keeper said %q", line)
	}
	text := func(id uint64) (string, time.Duration, error) {
		start := time.Now()
		s, err := req.Text(ctx, id)
		return s, time.Since(start), err
	}
	if s, _, err := text(1); s != slowTexts[1] || err != nil {
		t.Fatalf("before the pause: %q, %v", s, err)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	defer resume()
	waitFor(t, hangBound, "the keeper to stop", func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		_, after, _ := strings.Cut(string(b), ") ")
		return strings.HasPrefix(after, "T") // stopped (Linux; elsewhere the wait times out)
	})
	rdb := req.c.rdb
	ups, err := rdb.Keys(ctx, req.c.keeperUpKey("*")).Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, up := range ups {
		if up != req.c.keeperUpKey(req.Keeper()) {
			n++
			if ok, err := rdb.PExpire(ctx, up, time.Minute).Result(); !ok || err != nil {
				t.Fatalf("the stopped keeper's alive key %s: %v %v", up, ok, err)
			}
		}
	}
	if n != 1 {
		t.Fatalf("alive keys %q: want the stopped keeper's and the asker's", ups)
	}
	req.TextTimeout = 700 * time.Millisecond
	s, took, err := text(2)
	if !errors.Is(err, crawl.ErrElsewhere) || !strings.Contains(err.Error(), statusWhy[0]) {
		t.Fatalf("asked while the keeper is stopped: %q, %v after %v; want %q", s, err, took, statusWhy[0])
	}
	t.Logf("asked while the keeper is stopped: fell back after %v (%v)", took, err)
	req.TextTimeout = hangBound
	type answer struct {
		s    string
		err  error
		took time.Duration
	}
	asked := req.TextStats().Asked
	third := make(chan answer, 1)
	go func() { s, took, err := text(3); third <- answer{s, err, took} }()
	// Asked is counted just before the request goes (its route and wait
	// in one pipeline); a keeper resumed before the route ran answers it
	// as a running one does.
	waitFor(t, hangBound, "the second request asked", func() bool { return req.TextStats().Asked > asked })
	resume()
	a := <-third
	if a.s != slowTexts[3] || a.err != nil {
		t.Fatalf("asked while the keeper is stopped, which then resumes: %q, %v after %v", a.s, a.err, a.took)
	}
	t.Logf("asked while stopped, then resumed: answered after %v", a.took)
	if s, _, err := text(1); s != slowTexts[1] || err != nil {
		t.Fatalf("after the pause: %q, %v", s, err)
	}
	if st := req.TextStats(); st.Answered != 3 || st.FellBack != 1 || st.Gone != 1 {
		t.Fatalf("stats %+v: want 3 answered, 1 fell back", st)
	}
}

// Serve says why the remote text service never started (its caller warns
// that settlements of the worker's pages by others fall back), and nothing
// when it served.
func TestServeReturnsWhyNotStarted(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	_, st := storeOn(t, srv, "serve", nil)
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	err := st.Serve(ctx)
	if err == nil || !strings.Contains(err.Error(), "not started") {
		t.Fatalf("Serve with Redis down until its context ended: %v", err)
	}
	t.Logf("Redis down: %v", err)
	srv.Resume()
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Serve(ctx) }()
	waitFor(t, hangBound, "the service to start", st.serving.Load)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve after serving: %v", err)
	}
}

// A keeper whose client has a read timeout shorter than its pop's one
// second block (read_timeout in the Redis URL) still answers: the pop is
// not cut by the read timeout (as a raw BLPOP through Do was: it failed
// after its retries and the keeper slept a second, missing requests made
// then).
//
// Not on the wall clock: the keeper's pops are watched (popWatch) instead
// of asking within 250 ms after sleeping 1.3 s: each request is asked once
// every serving goroutine's pop has gone round its whole block, is
// answered (under a 1 min timeout, from a client without read timeout),
// and no pop of the keeper failed.
func TestKeeperShortReadTimeout(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	ctx := context.Background()
	asker := patientWorker(t, srv, "rt").st
	rdb, err := Connect(ctx, srv.URL()+"?read_timeout=300ms", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	pops := &popWatch{}
	rdb.AddHook(pops)
	c, err := Open(ctx, rdb, "rt", Options{Partitions: 4, Capacity: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	keeper := &textWorker{st: mustStore(t, c, db, nil)}
	for id := uint64(1); id <= 5; id++ {
		commitText(t, keeper.st, id, []string{"text", strconv.FormatUint(id, 10)})
	}
	keeper.serve(t)
	asker.TextTimeout = hangBound
	for id := uint64(1); id <= 5; id++ {
		empty := pops.empty.Load()
		waitFor(t, hangBound, "the keeper's pops to go round their block", func() bool {
			return pops.empty.Load() >= empty+serveWorkers || pops.failed.Load() > 0
		})
		if n := pops.failed.Load(); n > 0 {
			t.Fatalf("before page %d: %d of the keeper's pops failed (its read timeout cut them): %v", id, n, pops.last.Load())
		}
		start := time.Now()
		text, err := asker.Text(ctx, id)
		if want := "text " + strconv.FormatUint(id, 10); text != want || err != nil {
			t.Fatalf("page %d: %q, %v after %v", id, text, err, time.Since(start))
		}
	}
	if n := pops.failed.Load(); n > 0 {
		t.Fatalf("%d of the keeper's pops failed (its read timeout cut them): %v", n, pops.last.Load())
	}
}

// popWatch counts a client's BLPOPs that ended empty (their block ran out)
// and those that failed.
type popWatch struct {
	empty, failed atomic.Int64
	last          atomic.Value // the last failure's error text
}

func (w *popWatch) DialHook(next redis.DialHook) redis.DialHook { return next }

func (w *popWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "blpop" {
			switch {
			case errors.Is(err, redis.Nil):
				w.empty.Add(1)
			case err != nil && ctx.Err() == nil:
				w.failed.Add(1)
				w.last.Store(err.Error())
			}
		}
		return err
	}
}

func (w *popWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
