//go:build e2e

package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// TestSharedStopWhileRedisRefuses: a worker whose commit Redis refuses
// (maxmemory reached: it pauses) ends after a stop (POST /api/stop, as the
// first Ctrl-C), without an error, though Redis still refuses; what it
// could not record stays queued in Redis, so once Redis takes writes again
// a new worker finishes the crawl with every page recorded. Before, the
// paused commit and every worker waiting on the commit lock ignored the
// stop: the worker never ended.
func TestSharedStopWhileRedisRefuses(t *testing.T) {
	t.Parallel() // its own site and Redis
	const n, hold = 30, 5
	// Its held page answers 404: that record needs no duplicate decision,
	// whose check-and-add is a write of its own, so the refusal meets the
	// commit.
	hs := startHeldSite(t, "127.0.0.47", n, hold, true)
	ln, reached, releaseOnce := hs.ln, hs.reached, hs.release
	tmp := t.TempDir()
	cfg := writePlainConfig(t, tmp, "refused.yaml")
	srv := redistest.Start(t, redistest.Options{})
	rdb := srv.Client(t)
	seed := "http://" + ln.Addr().String() + "/p/0"
	dir1, dir2 := filepath.Join(tmp, "w1"), filepath.Join(tmp, "w2")
	var out, logs syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), crawlArgs(dir1, []string{seed},
			"--redis", srv.URL(), "--crawl", "refused", "--config", cfg, "--serve", "127.0.0.1:0"), &out, &logs)
	}()
	base := waitControl(t, &out, done)
	select {
	case <-reached:
	case err := <-done:
		t.Fatalf("the crawl ended before page %d was requested: %v\n%s", hold, err, logs.String())
	case <-time.After(2 * time.Minute): // only a hang reaches it
		t.Fatalf("page %d never requested", hold)
	}
	// Redis refuses every write from now on (noeviction, over maxmemory).
	if err := rdb.ConfigSet(context.Background(), "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	releaseOnce()
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(logs.String(), "pausing"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no commit paused while Redis refused writes\n%s", logs.String())
		}
	}
	if code, v := api(t, base, "", "POST", "/api/stop", ""); code != 202 {
		t.Fatalf("stop: %d %v", code, v)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the stopped worker: %v (a stop exits cleanly)\n%s", err, logs.String())
		}
	case <-time.After(60 * time.Second): // only a hang reaches it
		t.Fatalf("the worker did not end after the stop while Redis refused writes\n%s", logs.String())
	}

	// Redis takes writes again: a new worker finishes the crawl (after
	// the first worker's hold of the site's IP, 2 min: it could not be
	// released while Redis refused).
	if err := rdb.ConfigSet(context.Background(), "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	var out2, logs2 bytes.Buffer
	done2 := make(chan error, 1)
	go func() {
		done2 <- run(context.Background(), crawlArgs(dir2, []string{seed},
			"--redis", srv.URL(), "--crawl", "refused", "--config", cfg), &out2, &logs2)
	}()
	select {
	case err := <-done2:
		if err != nil {
			t.Fatalf("the second worker: %v\n%s", err, logs2.String())
		}
	case <-time.After(5 * time.Minute): // only a hang reaches it (the stopped worker's IP hold ends with its heartbeat: endDeadHold)
		t.Fatalf("the second worker did not finish\n%s", logs2.String())
	}
	mr := mergedReportOf(t, dir1, dir2)
	got := map[string]bool{}
	for _, p := range mr.Pages {
		got[p.URL] = true
	}
	for i := 0; i < n; i++ {
		if u := fmt.Sprintf("http://%s/p/%d", ln.Addr(), i); !got[u] {
			t.Errorf("%s not recorded in either data dir", u)
		}
	}
	if !strings.Contains(out2.String(), "crawl finished") {
		t.Errorf("the second worker did not finish the crawl: %s", out2.String())
	}
}
