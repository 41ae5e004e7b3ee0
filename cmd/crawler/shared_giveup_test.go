//go:build e2e

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// TestSharedGiveUpDrainsQueue: a host that refuses every connection, with
// a seed and a link from each of 30 pages of a live site queued for it,
// crawled by two workers. It is given up crawl-wide (its robots.txt
// unreachable max_failures times) and the rest of its queue is drained into
// records, as one process records the URLs it holds for a host it gives up
// (robots_disallowed, "host given up: ..."): the merged report has every URL
// of it once, in that class, and Redis holds none of them afterwards (no
// queue, no host set names it, nothing in flight).
func TestSharedGiveUpDrainsQueue(t *testing.T) {
	t.Parallel() // its own sites and Redis
	tmp := t.TempDir()
	dead := deadBase(t, "127.0.0.41")
	site := genSite(t, "127.0.0.40", 30, 0, func(i int) []string { return []string{fmt.Sprintf("%s/d/%d", dead, i)} })
	cfg := filepath.Join(tmp, "giveup.yaml")
	conf := "mirror:\n  enabled: false\ncrawl:\n  sitemaps: false\n" +
		"politeness:\n  max_failures: 3\n  backoff_base: 10ms\n  backoff_max: 40ms\n  robots_retry: 10ms\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t, redistest.Options{})
	seeds := []string{site + "/p/0", dead + "/d/seed"}
	dirs := runSharedWorkers(t, srv, tmp, "gu", "giveup", cfg, 2, seeds)
	mr := mergedReportOf(t, dirs...)

	want := []string{dead + "/d/seed"}
	for i := 0; i < 30; i++ {
		want = append(want, fmt.Sprintf("%s/d/%d", dead, i))
	}
	got := map[string]int{}
	for _, p := range mr.Pages {
		if !strings.HasPrefix(p.URL, dead+"/") {
			continue
		}
		got[p.URL]++
		if p.Class != "robots_disallowed" || !strings.HasPrefix(p.Error, "host given up: ") {
			t.Errorf("%s: class %s, error %q; want robots_disallowed, host given up", p.URL, p.Class, p.Error)
		}
	}
	for _, u := range want {
		if got[u] != 1 {
			t.Errorf("%s has %d records in the merged report, want 1", u, got[u])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d URLs of the dead host recorded, want %d", len(got), len(want))
	}

	// Redis: no queue of the host, no host set names it, nothing of it in
	// flight.
	ctx := context.Background()
	rdb := srv.Client(t)
	host := strings.TrimPrefix(dead, "http://")
	keys, err := rdb.Keys(ctx, "hs:{giveup/p*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		switch {
		case strings.HasSuffix(k, ":q:"+host):
			n, _ := rdb.LLen(ctx, k).Result()
			t.Errorf("the queue of %s is still in Redis: %s, %d URLs", host, k, n)
		case strings.HasSuffix(k, ":hosts"):
			if ok, _ := rdb.SIsMember(ctx, k, host).Result(); ok {
				t.Errorf("%s still names %s", k, host)
			}
		case strings.HasSuffix(k, ":f"):
			vals, _ := rdb.HVals(ctx, k).Result()
			for _, v := range vals {
				if v == host {
					t.Errorf("%s holds a URL of %s in flight", k, host)
				}
			}
		}
	}

	// One process on the same web records what it held for the host in the
	// same class.
	one := filepath.Join(tmp, "one")
	var so, se bytes.Buffer
	if err := run(ctx, crawlArgs(one, seeds, "--config", cfg), &so, &se); err != nil {
		t.Fatalf("one process: %v\n%s", err, se.String())
	}
	n := 0
	for _, p := range mergedReportOf(t, one).Pages {
		if strings.HasPrefix(p.URL, dead+"/") {
			n++
			if p.Class != "robots_disallowed" || !strings.HasPrefix(p.Error, "host given up: ") {
				t.Errorf("one process: %s: class %s, error %q", p.URL, p.Class, p.Error)
			}
		}
	}
	if n == 0 {
		t.Error("one process recorded no URL of the dead host")
	}
	t.Logf("shared: %d URLs of the dead host recorded (classes %v); one process: %d", len(got), mr.Stats.ByClass, n)
}
