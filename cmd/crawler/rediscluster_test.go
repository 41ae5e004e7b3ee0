//go:build e2e

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// clusterSubset is the part of the real corpus TestSharedCrawlRedisCluster
// crawls (about 500 pages, twice): a docs host, its near-duplicate copy's
// neighbour and a small host.
var clusterSubset = map[string]bool{"127.0.0.4": true, "127.0.0.10": true, "127.0.0.15": true}

// clusterURL is the Redis URL of a Cluster: its first node, the others as
// addr parameters (go-redis's ParseClusterURL).
func clusterURL(cl *redistest.Cluster) string {
	u := "redis://" + cl.Servers[0].Addr
	for i, s := range cl.Servers[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + s.Addr
	}
	return u
}

// twoWorkers runs two worker processes of crawl name through redisURL, each
// with its own data dir under tmp, and returns the dirs.
func twoWorkers(t *testing.T, tmp, redisURL, name, cfgPath string, seeds []string) []string {
	t.Helper()
	dirs := make([]string, 2)
	errs := make([]error, 2)
	logs := make([]bytes.Buffer, 2)
	var wg sync.WaitGroup
	for i := range dirs {
		dirs[i] = filepath.Join(tmp, fmt.Sprintf("%s-w%d", name, i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			args := crawlArgs(dirs[i], seeds, "--redis", redisURL, "--crawl", name, "--config", cfgPath)
			errs[i] = run(context.Background(), args, &out, &logs[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d of %s: %v\n%s", i, name, err, logs[i].String())
		}
	}
	return dirs
}

// TestSharedCrawlRedisCluster: two workers share a crawl through a Redis
// Cluster of three real masters (the crawl's partitions spread over them)
// and keep the same content as two workers through one standalone
// redis-server; no URL is requested twice and no host sees two requests
// closer than the delay.
func TestSharedCrawlRedisCluster(t *testing.T) {
	t.Parallel() // its own corpus web and Redis servers: independent of other tests
	web, seeds := sharedWeb(t, clusterSubset)
	srv := redistest.Start(t, redistest.Options{})
	cl := redistest.StartCluster(t, 3)
	tmp := t.TempDir()
	cfgPath := filepath.Join(tmp, "nomirror.yaml")
	if err := os.WriteFile(cfgPath, []byte(sharedConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	standalone := twoWorkers(t, tmp, srv.URL(), "one", cfgPath, seeds)
	took := time.Since(start)
	before := len(web.Requests())
	start = time.Now()
	clustered := twoWorkers(t, tmp, clusterURL(cl), "many", cfgPath, seeds)
	reqs := web.Requests()[before:]
	t.Logf("standalone Redis: %d requests in %v; Cluster: %d requests in %v", before, took, len(reqs), time.Since(start))
	robots := checkRequests(t, reqs)
	t.Logf("robots.txt requests through the Cluster: %d (%d hosts)", robots, len(clusterSubset))
	// The crawl's partitions were on every master: the commits spanned shards.
	for _, s := range cl.Servers {
		keys, err := s.Client(t).Keys(context.Background(), "hs:{many/p*").Result()
		if err != nil || len(keys) == 0 {
			t.Errorf("node %s holds %d partition keys of the crawl (%v)", s.Addr, len(keys), err)
		}
	}

	sr, mr := mergedReportOf(t, standalone...), mergedReportOf(t, clustered...)
	want, got := uniqueContent(t, standalone...), uniqueContent(t, clustered...)
	choices := sameContent(t, want, got, &sr, &mr)
	t.Logf("content kept: %d unique bodies through one server, %d through the Cluster; %d duplicate pairs kept the other copy", len(want), len(got), choices)
	compareClasses(t, sr.Stats.ByClass, mr.Stats.ByClass)
	if len(sr.Pages) != len(mr.Pages) || len(mr.Pages) < 400 {
		t.Errorf("page records: %d through one server, %d through the Cluster", len(sr.Pages), len(mr.Pages))
	}
}

// TestSharedCrawlKilledWorkerCluster: TestSharedCrawlKilledWorker through a
// Redis Cluster of three masters: a worker killed with kill -9 mid-crawl
// (mid-commit, possibly between the steps of a commit split by slot) loses
// nothing and costs at most what it had in flight.
func TestSharedCrawlKilledWorkerCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls the corpus subset twice")
	}
	t.Parallel() // its own corpus web and Redis Cluster; mostly waiting on leases
	killedWorkerCrawl(t, clusterURL(redistest.StartCluster(t, 3)))
}
