//go:build e2e

package redisstate

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// refusal is one way a real redis-server refuses writes: on makes it
// refuse, off makes it take them again.
type refusal struct {
	name    string
	on, off func(srv *redistest.Server, rdb *redis.Client) error
}

var refusals = []refusal{
	{"oom", // maxmemory reached under noeviction: OOM
		func(_ *redistest.Server, rdb *redis.Client) error { return configSet(rdb, "maxmemory", "1") },
		func(_ *redistest.Server, rdb *redis.Client) error { return configSet(rdb, "maxmemory", "0") }},
	{"misconf", // a failed background save with stop-writes-on-bgsave-error: MISCONF
		func(srv *redistest.Server, rdb *redis.Client) error {
			// The dump cannot be renamed over a directory of its name.
			if err := os.MkdirAll(filepath.Join(srv.Dir, "blocked", "x"), 0o755); err != nil {
				return err
			}
			if err := configSet(rdb, "save", "3600 1", "dbfilename", "blocked"); err != nil {
				return err
			}
			return bgsave(rdb, "err")
		},
		func(_ *redistest.Server, rdb *redis.Client) error {
			if err := configSet(rdb, "dbfilename", "dump.rdb"); err != nil {
				return err
			}
			if err := bgsave(rdb, "ok"); err != nil {
				return err
			}
			return configSet(rdb, "save", "")
		}},
	{"readonly", // a replica (of a master that does not answer): READONLY
		func(_ *redistest.Server, rdb *redis.Client) error {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			port := ln.Addr().(*net.TCPAddr).Port
			ln.Close()
			return rdb.ReplicaOf(context.Background(), "127.0.0.1", fmt.Sprint(port)).Err()
		},
		func(_ *redistest.Server, rdb *redis.Client) error {
			return rdb.ReplicaOf(context.Background(), "NO", "ONE").Err()
		}},
	{"down", // the server stopped: connection refused (the first refusal is the prefetch's read)
		func(srv *redistest.Server, _ *redis.Client) error { srv.Stop(); return nil },
		func(srv *redistest.Server, _ *redis.Client) error { srv.Resume(); return nil }},
}

func configSet(rdb *redis.Client, kv ...string) error {
	for i := 0; i+1 < len(kv); i += 2 {
		if err := rdb.ConfigSet(context.Background(), kv[i], kv[i+1]).Err(); err != nil {
			return fmt.Errorf("config set %s %q: %w", kv[i], kv[i+1], err)
		}
	}
	return nil
}

// bgsave runs a background save and waits for its status (ok or err).
func bgsave(rdb *redis.Client, want string) error {
	ctx := context.Background()
	if err := rdb.BgSave(ctx).Err(); err != nil {
		return err
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		info, err := rdb.Info(ctx, "persistence").Result()
		if err != nil {
			return err
		}
		if strings.Contains(info, "rdb_bgsave_in_progress:0") && strings.Contains(info, "rdb_last_bgsave_status:"+want) {
			return nil
		}
		if time.Now().After(deadline) { // only a hang reaches it
			return fmt.Errorf("background save never ended with status %s:\n%s", want, info)
		}
	}
}

// TestStopWhileRedisRefuses: a worker whose page's transaction Redis
// refuses, at the duplicate index's check-and-add or at the refill of its
// block of page ids, pauses; a stop then ends it (no error) though Redis
// still refuses, under every kind of refusal a real redis-server makes: out
// of memory, a failed save (MISCONF), a replica (READONLY), the server gone.
// The page is recorded nowhere and its item stays in Redis's in-flight
// hash; once Redis takes writes again a new worker finishes the crawl, and
// every URL is recorded once. Before, a refused check-and-add or id refill
// ended the crawl with an error, and the end of its item's lease went on
// without a record (under OOM, lost at once: the end deletes only).
func TestStopWhileRedisRefuses(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"check-and-add", "id-refill"} {
		for _, r := range refusals {
			t.Run(path+"/"+r.name, func(t *testing.T) { stopWhileRefused(t, path, r) })
		}
	}
}

func stopWhileRefused(t *testing.T, path string, r refusal) {
	const n, hold = 12, 4 // pages /p/0 .. /p/11; /p/4 is held
	reached, release := make(chan struct{}), make(chan struct{})
	var reachOnce sync.Once
	releaseOnce := sync.OnceFunc(func() { close(release) })
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		i := -1
		fmt.Sscanf(req.URL.Path, "/p/%d", &i)
		if i < 0 || i >= n {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if i == hold {
			reachOnce.Do(func() { close(reached) })
			<-release
		}
		fmt.Fprintf(w, "<!doctype html><html><body>")
		if i != hold || path == "check-and-add" {
			// Words: a duplicate decision, the check-and-add.
			fmt.Fprintf(w, "<p>")
			for k := range 80 {
				fmt.Fprintf(w, "word%d ", (i*7919+k*k*31)%5003)
			}
			fmt.Fprintf(w, "</p>")
		}
		// The pages before the held one chain; the held one alone links
		// the rest, fresh URLs: its transaction needs page ids.
		if i < hold {
			fmt.Fprintf(w, `<a href="/p/%d"></a>`, i+1)
		} else if i == hold {
			for k := hold + 1; k < n; k++ {
				fmt.Fprintf(w, `<a href="/p/%d"></a>`, k)
			}
		}
		fmt.Fprintf(w, "</body></html>")
	}))
	defer web.Close()
	defer releaseOnce()

	srv := redistest.Start(t, redistest.Options{Args: []string{"--enable-protected-configs", "yes"}})
	rdb := srv.Client(t)
	ctx := context.Background()
	if _, err := EnsureServerConfig(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	c, err := Open(ctx, rdb, "refused", Options{Partitions: 4, Capacity: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	seed := web.URL + "/p/0"
	host := frontier.HostKey(seed)
	heldURL := fmt.Sprintf("%s/p/%d", web.URL, hold)

	// The first worker, stopped while Redis refuses.
	logs := &pauseLog{paused: make(chan struct{})}
	w1 := refusalWorker(t, c, "w1", slog.New(slog.NewTextHandler(logs, nil)))
	// Redis takes writes again as soon as the engine has given the page
	// up, before the item's Finish: an end of its lease would go through.
	gaveUp := &giveUpLog{}
	w1.logger = slog.New(slog.NewTextHandler(gaveUp, nil))
	stop, stopNow := context.WithCancel(ctx)
	defer stopNow()
	hard, hardStop := context.WithCancel(ctx)
	defer hardStop()
	done := make(chan error, 1)
	go func() { done <- w1.run(t, seed, stop, hard) }()
	select {
	case <-reached:
	case err := <-done:
		t.Fatalf("the crawl ended before page %d was requested: %v", hold, err)
	case <-time.After(2 * time.Minute): // only a hang reaches it
		t.Fatalf("page %d never requested", hold)
	}
	if path == "id-refill" {
		w1.ids.mu.Lock()
		w1.ids.next, w1.ids.free = w1.ids.end, nil // the block is used up: the next id is a refill
		w1.ids.mu.Unlock()
	}
	if err := r.on(srv, rdb); err != nil {
		t.Fatal(err)
	}
	var offErr error
	lift := sync.OnceFunc(func() { offErr = r.off(srv, rdb) })
	defer lift()
	gaveUp.mu.Lock()
	gaveUp.onGiveUp = lift
	gaveUp.mu.Unlock()
	releaseOnce()
	select {
	case <-logs.paused:
	case err := <-done:
		t.Fatalf("the crawl ended while Redis refused, before a stop: %v\n%s", err, logText(logs))
	case <-time.After(2 * time.Minute): // only a hang reaches it
		t.Fatalf("no pause while Redis refused\n%s", logText(logs))
	}
	stopNow()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the stopped worker: %v (a stop ends it without an error)\n%s", err, logText(logs))
		}
	case <-time.After(2 * time.Minute): // only a hang reaches it
		t.Fatalf("the worker did not end after the stop while Redis refused\n%s", logText(logs))
	}
	t.Logf("stopped while refused:\n%s", logText(logs))
	if err := w1.db.ForEachPage(func(p *storage.Page) error {
		if p.URL == heldURL {
			return fmt.Errorf("the held page was recorded though its transaction was given up: %+v", p)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	lift()
	if offErr != nil {
		t.Fatal(offErr)
	}
	if !gaveUp.seen() {
		t.Fatalf("the engine did not say what it gave up\n%s", logText(logs))
	}
	inflight, err := rdb.HGetAll(ctx, c.inflightKey(c.PartitionOf(host))).Result()
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for f, v := range inflight {
		for _, raw := range []string{f, v} {
			if it, err := DecodeItem(raw, host); err == nil && it.URL == heldURL {
				held = append(held, raw)
			}
		}
	}
	if len(inflight) != 1 || len(held) != 1 {
		t.Fatalf("in flight after the stop: %v; want the held page's item alone", inflight)
	}
	w1.close(t)

	// Redis takes writes again: a second worker finishes the crawl.
	w2 := refusalWorker(t, c, "w2", nil)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute) // only a hang reaches it
	defer cancel()
	if err := w2.run(t, seed, rctx, rctx); err != nil {
		t.Fatalf("the second worker: %v", err)
	}
	if rctx.Err() != nil {
		t.Fatal("the second worker did not finish")
	}
	w2.close(t)
	recorded := map[string]int{}
	for _, db := range []*storage.DB{w1.db, w2.db} {
		if err := db.ForEachPage(func(p *storage.Page) error {
			recorded[p.URL]++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if u := fmt.Sprintf("%s/p/%d", web.URL, i); recorded[u] != 1 {
			t.Errorf("%s recorded %d times, want once", u, recorded[u])
		}
	}
}

// refusalWorkerParts is one worker of a shared crawl: its membership, data
// dir, page ids and store.
type refusalWorkerParts struct {
	m      *Member
	db     *storage.DB
	ids    *IDs
	st     *Store
	c      *Crawl
	logger *slog.Logger // the engine's
}

func refusalWorker(t *testing.T, c *Crawl, name string, logger *slog.Logger) *refusalWorkerParts {
	t.Helper()
	m, err := c.Join(context.Background(), name, MemberOptions{TTL: 10 * time.Second, Heartbeat: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ids := c.NewIDs()
	st, err := c.NewStore(db, ids, nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	st.Pause = 50 * time.Millisecond
	return &refusalWorkerParts{m: m, db: db, ids: ids, st: st, c: c}
}

// run crawls from seed until the crawl is done or stop.
func (w *refusalWorkerParts) run(t *testing.T, seed string, stop, hard context.Context) error {
	cfg := configs.Default()
	cfg.Politeness.Delay = 0
	cfg.Crawl.Workers = 1
	cfg.Crawl.Sitemaps = false
	cfg.Mirror.Enabled = false
	sh := &crawl.Shared{
		Store:  w.st,
		Robots: w.c.NewRobotsStore(w.m),
		Index:  func(det *dedup.Detector) crawl.DuplicateIndex { return w.c.NewIndex(det, DedupOptions{}) },
		Frontier: func(fo frontier.Options, onNew func(string)) crawl.Frontier {
			fr := w.c.NewFrontier(w.m, FrontierOptions{Options: fo, OnNewHost: onNew})
			w.st.UseFrontier(fr)
			return fr
		},
		MirrorLog: w.c.MirrorLog(),
	}
	cr, err := crawl.BuildShared(cfg, w.db, sh, crawl.Env{Seeds: []string{seed}}, w.logger)
	if err != nil {
		return err
	}
	defer cr.Close()
	if _, err := cr.Engine.Seed([]string{seed}); err != nil {
		return err
	}
	return cr.Engine.Run(stop, hard)
}

// close ends the worker's membership (Redis answering).
func (w *refusalWorkerParts) close(t *testing.T) {
	if err := w.m.Leave(context.Background()); err != nil {
		t.Logf("leave: %v", err)
	}
}

func logText(l *pauseLog) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// giveUpLog is an engine's log that calls onGiveUp (once, before the
// engine goes on) when the engine says it gave a page up at the stop.
type giveUpLog struct {
	mu       sync.Mutex
	onGiveUp func()
	done     bool
}

func (l *giveUpLog) Write(p []byte) (int, error) {
	if strings.Contains(string(p), "not recorded") {
		l.mu.Lock()
		defer l.mu.Unlock()
		if !l.done && l.onGiveUp != nil {
			l.onGiveUp()
			l.done = true
		}
	}
	return len(p), nil
}

func (l *giveUpLog) seen() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
}
