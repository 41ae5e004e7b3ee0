//go:build e2e

package redisstate

import (
	"context"
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
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// singleReads counts the round trips that are one HGET or HGETALL (a read
// made alone, not in a pipeline), by the key's kind: what a page's commit
// reads one by one instead of in its prefetch.
type singleReads struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *singleReads) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *singleReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "hget" || name == "hgetall" {
			key := fmt.Sprint(cmd.Args()[1])
			kind := key[strings.LastIndexByte(key, '}')+1:] // ":r", ":e:gap", ":s:3", ":d:URL" ...
			if i := strings.IndexByte(kind[1:], ':'); i >= 0 && !strings.HasPrefix(kind, ":e:") {
				kind = kind[:i+1] // one key of many: seen buckets, dependents of a URL
			}
			h.mu.Lock()
			h.n[name+" "+kind]++
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}
func (h *singleReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestEngineCommitReadsPrefetched: a worker's engine (mirror detection and
// canonical hints on, as the crawler's defaults) crawls a web of 60 pages,
// 3 of them missing, and its commits read what they read of Redis in
// their prefetch (crawl.PagePrefetcher): no HGET or HGETALL goes alone but
// robots.txt's. Before the prefetch, each page's commit read its gap probe
// mark, its alias claims and sample hint, and the copies waiting on it, one
// round trip each.
func TestEngineCommitReadsPrefetched(t *testing.T) {
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
		fmt.Fprintf(w, "<!doctype html><html><head><title>page %d</title></head><body><p>", i)
		for k := range 80 {
			fmt.Fprintf(w, "word%d ", (i*7919+k*k*31)%5003)
		}
		fmt.Fprintf(w, "</p><a href=/p/%d>a</a> <a href=/p/%d>b</a> <a href=/p/%d>c</a></body></html>", (2*i+1)%pages, (2*i+2)%pages, (i+1)%pages)
	}))
	defer web.Close()
	reads := &singleReads{n: map[string]int{}}
	ctx := context.Background()
	sh, db := sharedEngineParts(t, "pf", reads)
	cfg := configs.Default()
	cfg.Politeness.Delay = 0
	cfg.Crawl.Workers = 4
	cfg.Crawl.SkipDuplicateLinks, cfg.Mirror.Enabled, cfg.Crawl.CanonicalHints = true, true, true
	seed := web.URL + "/p/0"
	cr, err := crawl.BuildShared(cfg, db, sh, crawl.Env{Seeds: []string{seed}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cr.Close()
	if _, err := cr.Engine.Seed([]string{seed}); err != nil {
		t.Fatal(err)
	}
	reads.mu.Lock()
	clear(reads.n) // the seed's mark: not a page's commit
	reads.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := cr.Engine.Run(rctx, rctx); err != nil {
		t.Fatal(err)
	}
	recorded, missing := 0, 0
	if err := db.ForEachPage(func(p *storage.Page) error {
		recorded++
		if p.Status == 404 {
			missing++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if recorded != pages || missing != 3 { // /p/16, /p/33, /p/50 missing
		t.Fatalf("%d page records, %d missing; want %d, 3", recorded, missing, pages)
	}
	reads.mu.Lock()
	defer reads.mu.Unlock()
	for k, n := range reads.n {
		if k != "hget :r" {
			t.Errorf("%d reads of %s made alone in a crawl of %d pages", n, k, recorded)
		}
	}
	t.Logf("reads made alone: %v", reads.n)
}

// TestPrefetchPageChecked: what PrefetchPage read answers the transaction's
// reads in one round trip and is checked at its commit as a read made alone:
// a gap mark another worker took between the prefetch and the commit runs
// the transaction again, which finds it gone (of two takers, one gets it);
// dependents read in the prefetch show the transaction's own writes.
func TestPrefetchPageChecked(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{})
	h := &roundTrips{}
	_, a := storeOn(t, srv, "pp", h)
	_, b := storeOn(t, srv, "pp", nil)
	const u = "http://g.test/x"
	put := func(s *Store, fn func(tx crawl.Tx) error) {
		t.Helper()
		if err := s.Update(context.Background(), fn); err != nil {
			t.Fatal(err)
		}
	}
	put(b, func(tx crawl.Tx) error {
		if err := tx.PutEvidence("gap", u, map[string]string{"key": "k"}); err != nil {
			return err
		}
		return tx.AddDependent(u, storage.Dependent{URL: "http://g.test/copy1"})
	})
	runs, took := 0, false
	var deps []storage.Dependent
	put(a, func(tx crawl.Tx) error {
		runs++
		h.reset()
		err := tx.(crawl.PagePrefetcher).PrefetchPage(crawl.PageReads{
			Evidence: []crawl.EvidenceRef{{Kind: "gap", Key: u}}, Dependents: []string{u}, Links: []string{"http://g.test/y"}})
		if err != nil {
			return err
		}
		if runs == 1 {
			put(b, func(tx crawl.Tx) error { // b takes the mark first
				_, ok, err := tx.TakeEvidence("gap", u)
				if !ok {
					t.Error("worker b did not find the gap mark")
				}
				return err
			})
		}
		_, took, err = tx.TakeEvidence("gap", u)
		if err != nil {
			return err
		}
		if err := tx.AddDependent(u, storage.Dependent{URL: "http://g.test/copy2"}); err != nil {
			return err
		}
		deps, err = tx.Dependents(u)
		if err != nil {
			return err
		}
		if _, _, err := tx.SeenID("http://g.test/y"); err != nil {
			return err
		}
		if n := h.get(); n != 1 {
			t.Errorf("run %d: %d round trips for the prefetch and the reads, want 1", runs, n)
		}
		return nil
	})
	if runs != 2 || took {
		t.Fatalf("%d runs, mark taken %v; want 2 runs, the mark found taken by the other worker", runs, took)
	}
	if len(deps) != 2 {
		t.Fatalf("dependents %v: want the stored one and the transaction's own", deps)
	}
}

// sharedEngineParts opens crawl name on a new redis-server (hook sees every
// command), joins it as one worker and returns the parts crawl.BuildShared
// takes, with the worker's data dir. The worker leaves and the dir closes at
// the test's end.
func sharedEngineParts(t *testing.T, name string, hook redis.Hook) (*crawl.Shared, *storage.DB) {
	t.Helper()
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	ctx := context.Background()
	rdb := srv.Client(t)
	rdb.AddHook(hook)
	if _, err := EnsureServerConfig(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	c, err := Open(ctx, rdb, name, Options{Partitions: 4, Capacity: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Join(ctx, "w", MemberOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Leave(ctx) })
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store, err := c.NewStore(db, c.NewIDs(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &crawl.Shared{
		Store:  store,
		Robots: c.NewRobotsStore(m),
		Index:  func(det *dedup.Detector) crawl.DuplicateIndex { return c.NewIndex(det, DedupOptions{}) },
		Frontier: func(fo frontier.Options, onNew func(string)) crawl.Frontier {
			fr := c.NewFrontier(m, FrontierOptions{Options: fo, OnNewHost: onNew})
			store.UseFrontier(fr)
			return fr
		},
		MirrorLog: c.MirrorLog(),
	}, db
}
