//go:build e2e

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// TestSharedCrawlLostStateFails: a worker whose crawl's state in Redis is
// lost mid-crawl (FLUSHALL, as a restart without persistence leaves it,
// while the worker's request for one page is held by the server) stops
// with an error that says the state was lost and how to go on, and its
// data dir's report does not say complete. Before, it printed "crawl
// finished ... 0 queued left", returned nil, and the report said complete.
// A worker started afterwards under the crawl's name is refused.
func TestSharedCrawlLostStateFails(t *testing.T) {
	const n, hold = 40, 5
	hs := startHeldSite(t, "127.0.0.44", n, hold, false)
	ln, reached, releaseOnce := hs.ln, hs.reached, hs.release
	tmp := t.TempDir()
	cfg := writePlainConfig(t, tmp, "lost.yaml")
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	dir := filepath.Join(tmp, "w")
	var out, logs bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), crawlArgs(dir, []string{"http://" + ln.Addr().String() + "/p/0"},
			"--redis", srv.URL(), "--crawl", "lost", "--config", cfg), &out, &logs)
	}()
	select {
	case <-reached:
	case err := <-done:
		t.Fatalf("the crawl ended before page %d was requested: %v\n%s", hold, err, logs.String())
	case <-time.After(2 * time.Minute): // only a hang reaches it
		t.Fatal("page 5 never requested")
	}
	if err := srv.Client(t).FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	releaseOnce()
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the worker did not stop after its state was lost\n%s", logs.String())
	}
	if runErr == nil || !strings.Contains(runErr.Error(), "lost or damaged") || !strings.Contains(runErr.Error(), "data dirs") {
		t.Fatalf("the worker ended with %v; want the lost state named, with how to go on\nstdout: %s\nlog:\n%s", runErr, out.String(), logs.String())
	}
	if strings.Contains(out.String(), "crawl finished") {
		t.Errorf("the worker printed a finished crawl: %s", out.String())
	}
	if mr := mergedReportOf(t, dir); mr.Stats.Complete {
		t.Errorf("the report of a crawl whose state was lost says complete (%d pages)", len(mr.Pages))
	}
	t.Logf("%v", runErr)

	// A worker started again under the crawl's name, on the old dir or a
	// new one, is refused (the old worker's record is back in Redis, the
	// meta hash is not): the crawl is not started afresh unnoticed.
	for _, d := range []string{dir, filepath.Join(tmp, "w2")} {
		var out2, logs2 bytes.Buffer
		err := run(context.Background(), crawlArgs(d, []string{"http://" + ln.Addr().String() + "/p/0"},
			"--redis", srv.URL(), "--crawl", "lost", "--config", cfg), &out2, &logs2)
		if err == nil || !strings.Contains(err.Error(), "lost or damaged") {
			t.Errorf("a worker started on %s after the loss: %v; want it refused\n%s", filepath.Base(d), err, logs2.String())
		}
	}
}
