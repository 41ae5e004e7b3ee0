//go:build e2e

package redisstate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/storage"
	"github.com/horseshoe-crawler/horseshoe/storage/storetest"
)

var crawlNo atomic.Int64

// TestConformance runs the shared-state suite (storage/storetest) against
// the Redis Store, Index and Frontier on a real redis-server: each test a
// crawl of its own on one server, one worker with its own Badger data dir.
func TestConformance(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	storetest.Run(t, func(t *testing.T) storetest.Stores {
		ctx := context.Background()
		rdb := srv.Client(t)
		c, err := Open(ctx, rdb, fmt.Sprintf("conf%d", crawlNo.Add(1)), Options{Partitions: 4, Capacity: 10_000})
		if err != nil {
			t.Fatal(err)
		}
		db, err := storage.Open(t.TempDir(), storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		// The lone worker holds its leases a minute: a heartbeat descheduled
		// past 900 ms let it take them again and lease what it had in
		// flight a second time.
		m, err := c.Join(ctx, "w1", MemberOptions{TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Leave(ctx) })
		fo := frontier.DefaultOptions()
		fo.Delay = 100 * time.Millisecond
		fr := c.NewFrontier(m, FrontierOptions{Options: fo})
		det, err := dedup.New(dedup.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		return storetest.Stores{Store: mustStore(t, c, db, fr), Index: c.NewIndex(det, DedupOptions{}), Frontier: fr}
	})
}

// mustStore is c.NewStore over db with a fresh IDs.
func mustStore(tb testing.TB, c *Crawl, db *storage.DB, fr *Frontier) *Store {
	tb.Helper()
	st, err := c.NewStore(db, c.NewIDs(), fr, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// storeOn opens crawl name on srv with a client counting its round trips,
// and a Store over a fresh data dir.
func storeOn(t *testing.T, srv *redistest.Server, name string, h *roundTrips) (*Crawl, *Store) {
	t.Helper()
	ctx := context.Background()
	rdb := srv.Client(t)
	if h != nil {
		rdb.AddHook(h)
	}
	c, err := Open(ctx, rdb, name, Options{Partitions: 4, Capacity: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return c, mustStore(t, c, db, nil)
}

// pageTx is one page's transaction as the engine makes it: its links'
// marks read at once, each link marked and queued when fresh, its record,
// text and counter, the end of its queue entry. It returns the links queued.
func pageTx(t *testing.T, s *Store, id uint64, links []string) []string {
	t.Helper()
	var queued []string
	err := s.Update(context.Background(), func(tx crawl.Tx) error {
		queued = queued[:0]
		if err := tx.(crawl.SeenPrefetcher).PrefetchSeen(links); err != nil {
			return err
		}
		for _, u := range links {
			// What the canonical hints ask of a link (crawl/canonical.go).
			if _, err := tx.GetSkipped(u); err != nil {
				return err
			}
			if _, _, err := tx.(crawl.EvidenceReader).GetEvidence("alias", crawl.AliasKey(u)); err != nil {
				return err
			}
			lid, fresh, err := tx.CheckAndMark(u, tx.NewID)
			if err != nil {
				return err
			}
			if fresh {
				queued = append(queued, u)
				if err := tx.PutQueue(frontier.Item{ID: lid, URL: u}); err != nil {
					return err
				}
			}
		}
		if err := tx.PutPage(&storage.Page{ID: id, URL: fmt.Sprintf("http://p.test/%d", id), Class: storage.ClassUnique}); err != nil {
			return err
		}
		if err := tx.PutText(id, "text"); err != nil {
			return err
		}
		if err := tx.DeleteQueue("p.test", id); err != nil {
			return err
		}
		return tx.PutMeta("requests", []byte("1"))
	})
	if err != nil {
		t.Fatal(err)
	}
	return queued
}

func linksOf(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("http://h%d.test/%s/%d", i%7, prefix, i)
	}
	return out
}

// TestStoreRoundTripsPerPage: a page's transaction costs two round trips
// (its links' marks, skip records and alias hints read in one pipeline, the
// commit in one script call) whether it has 1 link or 200 (ids come in
// blocks of 1,024: warmed first).
func TestStoreRoundTripsPerPage(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	h := &roundTrips{}
	_, s := storeOn(t, srv, "rt", h)
	pageTx(t, s, 1, linksOf("warm", 1))
	for _, n := range []int{1, 20, 200} {
		h.reset()
		if q := pageTx(t, s, uint64(10+n), linksOf(fmt.Sprint(n), n)); len(q) != n {
			t.Fatalf("%d links: %d queued", n, len(q))
		}
		if got := h.get(); got != 2 {
			t.Errorf("a page with %d links: %d round trips, want 2", n, got)
		}
	}
	h.reset()
	if q := pageTx(t, s, 999, linksOf("200", 200)); len(q) != 0 || h.get() != 2 {
		t.Errorf("a page whose 200 links are seen: %d queued, %d round trips", len(q), h.get())
	}
}

// TestStoreMarkRace: a URL another worker marks between this transaction's
// read and its commit is not queued twice: the commit's check fails, the
// transaction runs again and finds it marked.
func TestStoreMarkRace(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	_, a := storeOn(t, srv, "race", nil)
	_, b := storeOn(t, srv, "race", nil)
	const u = "http://r.test/x"
	runs := 0
	var aFresh bool
	err := a.Update(context.Background(), func(tx crawl.Tx) error {
		runs++
		if err := tx.(crawl.SeenPrefetcher).PrefetchSeen([]string{u}); err != nil {
			return err
		}
		if runs == 1 {
			if q := pageTx(t, b, 5, []string{u}); len(q) != 1 {
				t.Errorf("worker b: %v queued", q)
			}
		}
		var err error
		_, aFresh, err = tx.CheckAndMark(u, tx.NewID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if runs != 2 || aFresh {
		t.Fatalf("worker a: %d runs, fresh %v; want 2 runs, the URL found marked", runs, aFresh)
	}
}

// TestStoreTextElsewhere: the text of a page another worker fetched is
// crawl.ErrElsewhere (settlement falls back to the sketch rule, quietly);
// its record reads as the summary that worker left in Redis.
func TestStoreTextElsewhere(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	_, a := storeOn(t, srv, "else", nil)
	_, b := storeOn(t, srv, "else", nil)
	pageTx(t, a, 7, nil)
	if text, err := a.Text(context.Background(), 7); err != nil || text != "text" {
		t.Fatalf("own text: %q, %v", text, err)
	}
	_, err := b.Text(context.Background(), 7)
	if !errors.Is(err, crawl.ErrElsewhere) || !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("another worker's text: %v", err)
	}
	err = b.Update(context.Background(), func(tx crawl.Tx) error {
		p, err := tx.GetPage(7)
		if err != nil || p.URL != "http://p.test/7" || p.Class != storage.ClassUnique {
			return fmt.Errorf("summary: %+v, %v", p, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStorePausesWhileRedisIsDown: a page's transaction whose commit finds
// Redis gone pauses (and says why) until Redis is back, then commits whole:
// its links are marked and queued, nothing lost.
func TestStorePausesWhileRedisIsDown(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	c, s := storeOn(t, srv, "down", nil)
	logs := &pauseLog{paused: make(chan struct{})}
	s.logger = slog.New(slog.NewTextHandler(logs, nil))
	s.Pause = 50 * time.Millisecond
	pageTx(t, s, 1, linksOf("warm", 1))
	links := linksOf("down", 5)
	stopped := make(chan struct{})
	done := make(chan struct{})
	// The commit pauses until ctx ends: when Redis cannot come back (its
	// port taken meanwhile; Resume fails the test), the test ends instead of
	// waiting out go test's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := s.Update(ctx, func(tx crawl.Tx) error {
		if err := tx.(crawl.SeenPrefetcher).PrefetchSeen(links); err != nil {
			return err
		}
		for _, u := range links {
			if _, _, err := tx.CheckAndMark(u, tx.NewID); err != nil {
				return err
			}
		}
		select {
		case <-stopped:
		default:
			srv.Stop() // before the commit
			close(stopped)
			// Redis comes back once the commit has found it gone and
			// paused, not after a fixed time: the client's dial retries
			// (5 attempts, 100 ms apart) can outlast any fixed sleep.
			go func() {
				resumed := false
				defer func() {
					if !resumed {
						cancel() // Resume failed the test (Goexit)
					}
					close(done)
				}()
				select {
				case <-logs.paused:
				case <-time.After(30 * time.Second):
				}
				srv.Resume()
				resumed = true
			}()
		}
		return nil
	})
	<-done
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if !strings.Contains(logs.String(), "pausing") {
		t.Errorf("the pause was not logged: %s", logs.String())
	}
	if !strings.Contains(logs.String(), "accepts writes again") {
		t.Errorf("the end of the pause was not logged: %s", logs.String())
	}
	ids, err := c.Seen(context.Background(), links)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if id == 0 {
			t.Errorf("%s not marked after the pause", links[i])
		}
	}
}

// pauseLog is a log buffer safe for concurrent use; paused is closed when
// the Store logs its pause.
type pauseLog struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	paused chan struct{}
	closed bool
}

func (l *pauseLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed && bytes.Contains(p, []byte("pausing")) {
		close(l.paused)
		l.closed = true
	}
	return l.buf.Write(p)
}

func (l *pauseLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestStoreEvidenceReadChecked: four workers each add 25 to a counter kept
// in one evidence record by read-modify-write (GetEvidence, then
// PutEvidence: as the canonical hints keep a host's record), all at once,
// and each in one case reads a record absent and writes it (as a hint
// stored once): the counter ends at 100, no update lost (the commit checks
// what GetEvidence read and runs the transaction again when another worker
// changed it), and the record written once is written once.
func TestStoreEvidenceReadChecked(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	const workers, each = 4, 25
	stores := make([]*Store, workers)
	for i := range stores {
		_, stores[i] = storeOn(t, srv, "rmw", nil)
	}
	var wg sync.WaitGroup
	var firsts atomic.Int32
	for _, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < each; k++ {
				wrote := false
				err := s.Update(context.Background(), func(tx crawl.Tx) error {
					wrote = false
					r := tx.(crawl.EvidenceReader)
					var n struct{ N int }
					if b, ok, err := r.GetEvidence("counter", "host"); err != nil {
						return err
					} else if ok {
						if err := json.Unmarshal(b, &n); err != nil {
							return err
						}
					}
					n.N++
					if err := tx.PutEvidence("counter", "host", n); err != nil {
						return err
					}
					if _, ok, err := r.GetEvidence("once", "key"); err != nil || ok {
						return err
					}
					wrote = true
					return tx.PutEvidence("once", "key", "first")
				})
				if err != nil {
					t.Error(err)
					return
				}
				if wrote {
					firsts.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	rdb := srv.Client(t)
	v, err := rdb.HGet(context.Background(), "hs:{rmw/e}:counter", "host").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`{"N":%d}`, workers*each); v != want {
		t.Errorf("counter %s, want %s: updates lost", v, want)
	}
	if n := firsts.Load(); n != 1 {
		t.Errorf("the record absent at first was written by %d transactions, want 1", n)
	}
}

// TestStoreGivesUpAtStop: a commit that Redis refuses (maxmemory) pauses
// until the crawl stops (StopPauses), then gives up with
// crawl.ErrNotRecorded instead of waiting on; and the lease that commit
// would have ended is not ended by Finish, even once Redis takes writes
// again: the item stays in flight, and the partition's next holder gets it.
func TestStoreGivesUpAtStop(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	c, st := storeOn(t, srv, "stop", nil)
	ctx := context.Background()
	rdb := c.Client()
	const host = "stop.example"
	if _, err := c.Enqueue(ctx, c.NewIDs(), items("http://"+host+"/1")); err != nil {
		t.Fatal(err)
	}
	ma, err := c.Join(ctx, "a", MemberOptions{TTL: time.Minute, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer ma.Abandon()
	fa := c.NewFrontier(ma, FrontierOptions{})
	st.UseFrontier(fa)
	it, err := fa.Next(ctx)
	if err != nil || it == nil {
		t.Fatalf("pop: %v %v", it, err)
	}
	logs := &pauseLog{paused: make(chan struct{})}
	st.logger = slog.New(slog.NewTextHandler(logs, nil))
	st.Pause = 50 * time.Millisecond
	stop, stopNow := context.WithCancel(ctx)
	defer stopNow()
	st.StopPauses(stop)
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	defer rdb.ConfigSet(ctx, "maxmemory", "0")
	go func() {
		<-logs.paused
		stopNow()
	}()
	// Bounded only so that a commit that ignores the stop fails the test
	// rather than hanging it.
	uctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = st.Update(uctx, func(tx crawl.Tx) error {
		if err := tx.PutPage(&storage.Page{ID: it.ID, URL: it.URL, Class: storage.ClassUnique}); err != nil {
			return err
		}
		return tx.DeleteQueue(it.Host, it.ID)
	})
	if !errors.Is(err, crawl.ErrNotRecorded) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a refused commit after the stop: %v; want it given up (crawl.ErrNotRecorded, with the refusal)", err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	fa.Finish(it) // Redis takes writes again: an end of the lease would run
	p := c.PartitionOf(host)
	if n, err := c.InFlight(ctx, p); err != nil || n != 1 {
		t.Fatalf("in flight after the unrecorded page's Finish: %d %v; want its item still in flight", n, err)
	}
	ma.Abandon()
	if err := rdb.Del(ctx, c.leaseKey(p)).Err(); err != nil { // a's lease runs out
		t.Fatal(err)
	}
	mb, err := c.Join(ctx, "b", MemberOptions{TTL: time.Minute, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer mb.Abandon()
	if _, raw, ok, err := mb.Pop(ctx, host); !ok || err != nil {
		t.Fatalf("the item is lost: the partition's next holder's pop: %v %v", ok, err)
	} else if got, _ := DecodeItem(raw, host); got.URL != it.URL {
		t.Fatalf("popped %s, want %s", got.URL, it.URL)
	}
}
