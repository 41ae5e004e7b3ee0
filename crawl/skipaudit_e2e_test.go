//go:build e2e

package crawl_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/cluster/redisstate"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestSkipAuditKeepsCopyOfSkippedPage: the end-of-crawl skip audit keeps a
// page that a skip left waiting on a page skipped itself, in one process and
// in a Redis-shared crawl of two workers. The state is forced on
// testweb.MirrorChain with the lease-time repair turned off (a skipped URL
// does not queue the copies waiting on it): the state a shared crawl is left
// in when another worker adds a copy as waiting between one worker's skip
// and its read of the waiting list. Without the audit Other's x.html, whose
// content only it holds, stays mirror_skipped in favour of the mirror's
// skipped x.html; with it, it is fetched.
func TestSkipAuditKeepsCopyOfSkippedPage(t *testing.T) {
	chain, web, seeds, err := testweb.StartMirrorChain(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Close() })
	lost, mx := web.URL(chain.Other.IP, chain.Lost), web.URL(chain.Mirror.IP, chain.Mirror.Path+"x.html")
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	for _, mode := range []string{"one process", "shared"} {
		for _, audit := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/audit=%v", mode, audit), func(t *testing.T) {
				defer crawl.SetSkipRepairs(false, audit)()
				var pages map[string]*storage.Page
				if mode == "shared" {
					pages = sharedChainCrawl(t, srv, fmt.Sprintf("audit%v", audit), 2, seeds)
				} else {
					res := runCrawl(t, crawlConfig{Mirror: true, Workers: 4}, seeds...)
					pages = res.Pages
					for u, p := range res.Skipped {
						pages[u] = p
					}
				}
				if p := pages[mx]; p == nil || p.Class != storage.ClassMirrorSkipped {
					t.Fatalf("%s is %+v, want mirror_skipped (the chain this test is about)", mx, p)
				}
				p := pages[lost]
				if p == nil {
					t.Fatalf("%s never reached", lost)
				}
				if audit && p.Class != storage.ClassUnique {
					t.Errorf("with the audit, %s is %s in favour of %s: lost", lost, p.Class, p.DuplicateOf)
				}
				if !audit && (p.Class != storage.ClassMirrorSkipped || p.DuplicateOf != mx) {
					t.Errorf("without the audit, %s is %s in favour of %q; want mirror_skipped in favour of %s (the loss the audit repairs)", lost, p.Class, p.DuplicateOf, mx)
				}
			})
		}
	}
}

// sharedChainCrawl crawls seeds with n workers of a shared crawl named name
// on srv, each with its data dir, and returns every page record and skip
// record by URL.
func sharedChainCrawl(t *testing.T, srv *redistest.Server, name string, n int, seeds []string) map[string]*storage.Page {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rdb := srv.Client(t)
	if _, err := redisstate.EnsureServerConfig(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	c, err := redisstate.Open(ctx, rdb, name, redisstate.Options{Partitions: 8, Capacity: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	cfg := crawlConfig{Mirror: true, Workers: 4}.withDefaults().config()
	dbs := make([]*storage.DB, n)
	stores := make([]*redisstate.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		m, err := c.Join(ctx, fmt.Sprintf("w%d", i), redisstate.MemberOptions{})
		if err != nil {
			t.Fatal(err)
		}
		db, err := storage.Open(t.TempDir(), storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		store, err := c.NewStore(db, c.NewIDs(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		dbs[i], stores[i] = db, store
		sh := &crawl.Shared{
			Store:  store,
			Robots: c.NewRobotsStore(m),
			Index:  func(det *dedup.Detector) crawl.DuplicateIndex { return c.NewIndex(det, redisstate.DedupOptions{}) },
			Frontier: func(fo frontier.Options, onNew func(string)) crawl.Frontier {
				fr := c.NewFrontier(m, redisstate.FrontierOptions{Options: fo, OnNewHost: onNew})
				store.UseFrontier(fr)
				return fr
			},
			MirrorLog: c.MirrorLog(),
		}
		cr, err := crawl.BuildShared(cfg, db, sh, crawl.Env{Seeds: seeds}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cr.Engine.Seed(seeds); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cr.Close()
			errs[i] = cr.Engine.Run(ctx, ctx)
			m.Leave(context.Background())
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("the shared crawl did not finish within a minute")
	}
	pages := map[string]*storage.Page{}
	for i, db := range dbs {
		if errs[i] != nil {
			t.Fatalf("worker %d: %v", i, errs[i])
		}
		if err := db.ForEachPage(func(p *storage.Page) error { pages[p.URL] = p; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := stores[0].ForEachSkipped(ctx, func(p *storage.Page) error { pages[p.URL] = p; return nil }); err != nil {
		t.Fatal(err)
	}
	return pages
}
