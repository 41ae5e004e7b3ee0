//go:build e2e

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// genSite serves n distinct pages /p/0 ... on ip (loopback), each linking to
// the next three and to links(i), each after pause; it returns the site's
// base URL.
func genSite(t *testing.T, ip string, n int, pause time.Duration, links func(i int) []string) string {
	t.Helper()
	return genSiteBefore(t, ip, n, func(int) { time.Sleep(pause) }, links)
}

// genSiteBefore is genSite with before called ahead of answering page i
// (a test holds pages until an event).
func genSiteBefore(t *testing.T, ip string, n int, before func(i int), links func(i int) []string) string {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	base := "http://" + ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var i int
		if _, err := fmt.Sscanf(r.URL.Path, "/p/%d", &i); err != nil || i < 0 || i >= n {
			http.NotFound(w, r)
			return
		}
		before(i)
		var b strings.Builder
		fmt.Fprintf(&b, "<html><head><title>Page %d</title></head><body><h1>Page %d</h1><p>", i, i)
		for k := 0; k < 60; k++ {
			fmt.Fprintf(&b, "word%d_%d ", i, k)
		}
		b.WriteString("</p>")
		for k := i + 1; k <= i+3 && k < n; k++ {
			fmt.Fprintf(&b, `<a href="/p/%d">next %d</a> `, k, k)
		}
		for _, l := range links(i) {
			fmt.Fprintf(&b, `<a href="%s">elsewhere</a> `, l)
		}
		b.WriteString("</body></html>")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(b.String()))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return base
}

// deadBase is the base URL of a host that refuses every connection.
func deadBase(t *testing.T, ip string) string {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// runSharedWorkers runs n workers' crawls (in this process) of crawl name
// through srv, each with its own data dir under tmp (named prefix-wI), and
// returns the dirs.
func runSharedWorkers(t *testing.T, srv *redistest.Server, tmp, prefix, name, cfg string, n int, seeds []string, extra ...string) []string {
	t.Helper()
	dirs := make([]string, n)
	errs := make([]error, n)
	logs := make([]bytes.Buffer, n)
	var wg sync.WaitGroup
	for i := range dirs {
		dirs[i] = filepath.Join(tmp, fmt.Sprintf("%s-w%d", prefix, i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			args := crawlArgs(dirs[i], seeds, append([]string{"--redis", srv.URL(), "--crawl", name, "--config", cfg}, extra...)...)
			errs[i] = run(context.Background(), args, &out, &logs[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v\n%s", i, err, logs[i].String())
		}
	}
	return dirs
}

// TestSharedCrawlBudgetAndGiveUp: three workers of a crawl with
// crawl.max_pages 40 over a site of 80 pages and a host that refuses every
// connection: the merged report holds exactly 40 records of leases (each
// lease that did not go back to its queue is one; the dead host's queue is
// drained into records besides), the dead host is given up once in
// the merged report, and a worker that joins afterwards fetches nothing.
func TestSharedCrawlBudgetAndGiveUp(t *testing.T) {
	t.Parallel() // its own sites and Redis
	tmp := t.TempDir()
	dead := deadBase(t, "127.0.0.37")
	site := genSite(t, "127.0.0.36", 80, 0, func(i int) []string { return []string{fmt.Sprintf("%s/d/%d", dead, i)} })
	cfg := filepath.Join(tmp, "budget.yaml")
	conf := "mirror:\n  enabled: false\ncrawl:\n  max_pages: 40\n  sitemaps: false\n" +
		"politeness:\n  max_failures: 3\n  backoff_base: 10ms\n  backoff_max: 40ms\n  robots_retry: 10ms\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t, redistest.Options{})
	seeds := []string{site + "/p/0", dead + "/d/seed"}
	dirs := runSharedWorkers(t, srv, tmp, "first", "budget", cfg, 3, seeds)
	mr := mergedReportOf(t, dirs...)
	// The dead host's URLs but the one leased when it was given up are
	// drained into records without a lease: they cost no page.
	deadRecords := 0
	for _, p := range mr.Pages {
		if strings.HasPrefix(p.URL, dead+"/") {
			deadRecords++
		}
	}
	if leases := len(mr.Pages) - deadRecords + 1; leases != 40 || deadRecords < 1 {
		t.Errorf("merged report: %d records, %d of the dead host: %d leases, want max_pages = 40 (classes %v)", len(mr.Pages), deadRecords, leases, mr.Stats.ByClass)
	}
	deadHost := strings.TrimPrefix(dead, "http://")
	gaveUp := 0
	for _, n := range mr.HostNotes {
		if n.Kind == "gave_up" {
			if n.Host != deadHost {
				t.Errorf("host given up: %+v", n)
			}
			gaveUp++
		}
	}
	if gaveUp != 1 {
		t.Errorf("gave_up notes of %s in the merged report: %d, want 1 (%+v)", deadHost, gaveUp, mr.HostNotes)
	}
	late := runSharedWorkers(t, srv, tmp, "late", "budget", cfg, 1, seeds)
	if lr := mergedReportOf(t, late...); len(lr.Pages) != 0 {
		t.Errorf("a worker that joined the spent crawl made %d records", len(lr.Pages))
	}
	t.Logf("merged: %d records %v; notes %+v", len(mr.Pages), mr.Stats.ByClass, mr.HostNotes)
}
