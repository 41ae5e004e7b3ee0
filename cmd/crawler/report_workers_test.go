//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/cluster/redisstate"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/report"
)

// reportOut runs `crawler report --format format` with args and returns
// what it wrote.
func reportOut(t *testing.T, format string, args ...string) []byte {
	t.Helper()
	b, _ := runOut(t, "report", append([]string{"--format", format}, args...)...)
	return b
}

// checkWorkerRows: v has one row per dir, each worker left, its pages by
// class and requests those of its own data dir's report, and the crawl's
// totals their sums.
func checkWorkerRows(t *testing.T, what string, v *report.Workers, dirs []string) {
	t.Helper()
	if v == nil {
		t.Fatalf("%s: no workers section", what)
	}
	if len(v.Rows) != len(dirs) || v.Left != len(dirs) || v.Live+v.Dead+v.Paused != 0 {
		t.Fatalf("%s: %d rows (%d live, %d paused, %d left, %d dead), want %d workers that left", what, len(v.Rows), v.Live, v.Paused, v.Left, v.Dead, len(dirs))
	}
	host, _ := os.Hostname()
	var sum report.WorkerCounts
	sum.ByClass = map[string]int64{}
	for _, w := range v.Rows {
		found := false
		for _, d := range dirs {
			if w.Dir != d {
				continue
			}
			found = true
			own := mergedReportOf(t, d).Stats
			for _, c := range report.Classes() {
				if w.ByClass[c] != int64(own.ByClass[c]) {
					t.Errorf("%s: worker %s has %d %s pages, its data dir %d", what, w.ID, w.ByClass[c], c, own.ByClass[c])
				}
			}
			if w.Requests != int64(own.Requests) || w.Errors != int64(own.ByClass["error"]) {
				t.Errorf("%s: worker %s made %d requests (%d errors), its data dir says %d (%d)", what, w.ID, w.Requests, w.Errors, own.Requests, own.ByClass["error"])
			}
		}
		if !found || w.State != report.WorkerLeft || w.Host != host || w.PID != os.Getpid() || w.Heartbeat.IsZero() || w.Started.IsZero() {
			t.Errorf("%s: row %+v (dirs %v)", what, w, dirs)
		}
		sum.Pages += w.Pages
		sum.Requests += w.Requests
		sum.Errors += w.Errors
		for c, n := range w.ByClass {
			sum.ByClass[c] += n
		}
	}
	if sum.Pages != v.Total.Pages || sum.Requests != v.Total.Requests || sum.Errors != v.Total.Errors || sum.Pages == 0 {
		t.Errorf("%s: totals %+v, the rows sum to %+v", what, v.Total, sum)
	}
	for c, n := range sum.ByClass {
		if v.Total.ByClass[c] != n {
			t.Errorf("%s: total %s %d, the rows sum to %d", what, c, v.Total.ByClass[c], n)
		}
	}
}

// TestReportWorkersSection: two workers of a shared crawl; `crawler report`
// of their data dirs (no Redis) shows a workers section from the records
// each kept in its dir when it left: per worker its machine, pid, dir,
// pages by class and requests as its own dir counts them, left, and when
// last seen, the crawl's totals their sums, in JSON, text and HTML. With
// --redis and --crawl the rows come from Redis, the same.
func TestReportWorkersSection(t *testing.T) {
	t.Parallel() // its own generated site and Redis
	tmp := t.TempDir()
	site := genSite(t, "127.0.0.38", 40, 0, func(int) []string { return nil })
	cfg := filepath.Join(tmp, "conf.yaml")
	if err := os.WriteFile(cfg, []byte("mirror:\n  enabled: false\ncrawl:\n  sitemaps: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t, redistest.Options{})
	dirs := runSharedWorkers(t, srv, tmp, "rw", "rw", cfg, 2, []string{site + "/p/0"})
	args := []string{"--data", dirs[0], "--data", dirs[1]}

	var d report.Data
	if err := json.Unmarshal(reportOut(t, "json", args...), &d); err != nil {
		t.Fatal(err)
	}
	checkWorkerRows(t, "report of the data dirs", d.Workers, dirs)
	if d.Workers.From != report.WorkersFromDirs || d.Workers.Crawl != "rw" {
		t.Errorf("workers from %q of crawl %q", d.Workers.From, d.Workers.Crawl)
	}
	var one report.Data
	if err := json.Unmarshal(reportOut(t, "json", "--data", dirs[1]), &one); err != nil {
		t.Fatal(err)
	}
	if one.Workers == nil || len(one.Workers.Rows) != 1 || one.Workers.Rows[0].Dir != dirs[1] {
		t.Errorf("report of one worker's dir: workers %+v", one.Workers)
	}

	text := string(reportOut(t, "text", args...))
	sec := between(text, "WORKERS (2) of shared crawl rw: 0 live, 0 paused, 2 left, 0 dead", "\nHOSTS")
	for _, w := range d.Workers.Rows {
		lease := fmt.Sprintf("lease checks %d: %d gone, %d short, %d no answer; %d stale lease ends",
			w.LeaseChecks, w.LeaseGone, w.LeaseShort, w.LeaseNoAnswer, w.StaleLeaseEnds)
		if !strings.Contains(sec, w.ID) || !strings.Contains(sec, w.Dir) || !strings.Contains(sec, fmt.Sprintf("pid %d", w.PID)) ||
			!strings.Contains(sec, lease) || w.LeaseChecks < w.Pages {
			t.Errorf("text report's workers section lacks worker %s (%s):\n%s", w.ID, w.Dir, sec)
		}
	}
	if !strings.Contains(sec, fmt.Sprintf("TOTAL%s %8d %8d", strings.Repeat(" ", 25), d.Workers.Total.Pages, d.Workers.Total.Requests)) {
		t.Errorf("text report's workers section lacks the totals %+v:\n%s", d.Workers.Total, sec)
	}
	for _, line := range strings.Split(text, "\n") {
		if n := len([]rune(line)); n > report.TextWidth {
			t.Errorf("text line of %d columns: %q", n, line)
		}
	}

	var viaRedis report.Data
	if err := json.Unmarshal(reportOut(t, "json", "--redis", srv.URL(), "--crawl", "rw"), &viaRedis); err != nil {
		t.Fatal(err)
	}
	checkWorkerRows(t, "report through Redis", viaRedis.Workers, dirs)
	if viaRedis.Workers.From != report.WorkersFromRedis {
		t.Errorf("workers through Redis from %q", viaRedis.Workers.From)
	}
	ws, err := redisstate.ReadWorkers(context.Background(), srv.Client(t), "rw")
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range ws {
		if r := viaRedis.Workers.Rows[i]; r.ID != w.ID || r.Pages != w.Pages || !r.Heartbeat.Equal(d.Workers.Rows[i].Heartbeat) {
			t.Errorf("row %d through Redis %+v, its record %+v, kept in its dir %+v", i, r, w, d.Workers.Rows[i])
		}
	}
	checkDirsThroughRedis(t, srv, "rw", dirs)
}

// TestBrowserWorkersReport: the HTML report of two workers' data dirs,
// loaded in Chromium, shows the workers table: a row per worker with its
// state, machine, pid and dir, pages, requests and lease checks as the JSON
// report has them, and the crawl's totals, without scrolling sideways.
func TestBrowserWorkersReport(t *testing.T) {
	t.Parallel() // its own generated site and Redis
	b := needBrowser(t)
	tmp := t.TempDir()
	site := genSite(t, "127.0.0.39", 30, 0, func(int) []string { return nil })
	cfg := filepath.Join(tmp, "conf.yaml")
	if err := os.WriteFile(cfg, []byte("mirror:\n  enabled: false\ncrawl:\n  sitemaps: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t, redistest.Options{})
	dirs := runSharedWorkers(t, srv, tmp, "bw", "bw", cfg, 2, []string{site + "/p/0"})
	args := []string{"--data", dirs[0], "--data", dirs[1]}
	var d report.Data
	if err := json.Unmarshal(reportOut(t, "json", args...), &d); err != nil {
		t.Fatal(err)
	}
	checkWorkerRows(t, "report of the data dirs", d.Workers, dirs)
	page := filepath.Join(tmp, "report.html")
	if err := os.WriteFile(page, reportOut(t, "html", args...), 0o644); err != nil {
		t.Fatal(err)
	}
	r := b.load(t, page, screenshotPath(t, "workers-report.png"), "Workers", "shared crawl bw: 0 live, 0 paused, 2 left, 0 dead")
	r.assertClean(t)
	for text, seen := range r.Texts {
		if !seen {
			t.Errorf("%q is not visible", text)
		}
	}
	rows := r.WorkerRows
	if len(rows) != 2+len(d.Workers.Rows) {
		t.Fatalf("workers table rows %q, want a head, %d workers and the totals", rows, len(d.Workers.Rows))
	}
	for i, w := range d.Workers.Rows {
		row := rows[1+i]
		if len(row) < 6 || !strings.HasPrefix(row[0], w.ID) || row[1] != "left" || !strings.Contains(row[0], w.Dir) ||
			!strings.Contains(row[0], fmt.Sprint(w.PID)) || row[4] != formatThousands(int(w.Pages)) || row[5] != formatThousands(int(w.Requests)) {
			t.Errorf("workers table row %d = %q, want worker %s left in %s with %d pages, %d requests", i, row, w.ID, w.Dir, w.Pages, w.Requests)
		}
	}
	if total := rows[len(rows)-1]; len(total) < 6 || total[0] != "Crawl" || total[4] != formatThousands(int(d.Workers.Total.Pages)) ||
		total[5] != formatThousands(int(d.Workers.Total.Requests)) {
		t.Errorf("totals row %q, want %d pages, %d requests", total, d.Workers.Total.Pages, d.Workers.Total.Requests)
	}
	// The last column: lease checks · gone / short / no answer · stale ends,
	// as the JSON report has them (every page request is checked).
	if d.Workers.Total.LeaseChecks < d.Workers.Total.Pages {
		t.Errorf("%d lease checks for %d pages", d.Workers.Total.LeaseChecks, d.Workers.Total.Pages)
	}
	leaseCell := func(c report.WorkerCounts) string {
		return fmt.Sprintf("%s · %s / %s / %s · %s", formatThousands(int(c.LeaseChecks)), formatThousands(int(c.LeaseGone)),
			formatThousands(int(c.LeaseShort)), formatThousands(int(c.LeaseNoAnswer)), formatThousands(int(c.StaleLeaseEnds)))
	}
	want := []string{"LEASE CHECKS · GONE / SHORT / NO ANSWER · STALE ENDS"} // the head's style capitalizes
	for _, w := range d.Workers.Rows {
		want = append(want, leaseCell(w.WorkerCounts))
	}
	want = append(want, leaseCell(d.Workers.Total))
	for i, row := range rows {
		if len(row) != 13 || row[12] != want[i] {
			t.Errorf("workers table row %d = %q, want 13 cells, the last %q", i, row, want[i])
		}
	}
}

// TestServeSharedWorkerReport: `crawler serve` of a shared crawl's data dirs
// serves the report `crawler report` writes of the same dirs, byte for byte
// (/report.json and the HTML report, the workers section included): of one
// worker's dir (its kept record), of both workers' dirs merged, and of the
// dirs found through Redis (Redis's records). Its /metrics has the merged
// counts and the per-worker series a live worker shows, one per worker of
// the report (checkServedMetrics).
func TestServeSharedWorkerReport(t *testing.T) {
	t.Parallel() // its own generated site and Redis
	tmp := t.TempDir()
	site := genSite(t, "127.0.0.43", 20, 0, func(int) []string { return nil })
	cfg := filepath.Join(tmp, "conf.yaml")
	if err := os.WriteFile(cfg, []byte("mirror:\n  enabled: false\ncrawl:\n  sitemaps: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t, redistest.Options{})
	dirs := runSharedWorkers(t, srv, tmp, "sv", "sv", cfg, 2, []string{site + "/p/0"})
	busy := dirs[0] // a worker that fetched pages (the site's one host is in one's partitions)
	if mergedReportOf(t, busy).Stats.Pages == 0 {
		busy = dirs[1]
	}
	for _, tc := range []struct {
		name    string
		args    []string
		workers []string // the dirs of the workers the report shows
	}{
		{"one worker's dir", []string{"--data", busy}, []string{busy}},
		{"both workers' dirs", []string{"--data", dirs[0], "--data", dirs[1]}, dirs},
		{"the dirs found through Redis", []string{"--redis", srv.URL(), "--crawl", "sv"}, dirs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := reportOut(t, "json", tc.args...)
			var d report.Data
			if err := json.Unmarshal(want, &d); err != nil {
				t.Fatal(err)
			}
			checkWorkerRows(t, "report of "+tc.name, d.Workers, tc.workers)
			wantHTML := reportOut(t, "html", tc.args...)
			base := startServe(t, tc.args...)
			if _, got := httpGet(t, base+"report.json"); !bytes.Equal(got, want) {
				t.Errorf("served /report.json differs from `crawler report`'s JSON:\nserved %.600s\nreport %.600s", got, want)
			}
			_, html := httpGet(t, base)
			if !bytes.Equal(html, wantHTML) {
				t.Errorf("served HTML report (%d bytes) differs from `crawler report`'s (%d bytes)", len(html), len(wantHTML))
			}
			head := fmt.Sprintf("shared crawl sv: 0 live, 0 paused, %d left, 0 dead", len(tc.workers))
			for _, s := range []string{`<section id="workers">`, head, d.Workers.Rows[0].ID, d.Workers.Rows[0].Dir} {
				if !strings.Contains(string(html), s) {
					t.Errorf("served HTML report lacks %q", s)
				}
			}
			checkServedMetrics(t, scrape(t, base), &d)
		})
	}
}

// startServe runs `crawler serve` with args on a free port until the test
// ends, and returns its URL.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var sout syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), &sout, io.Discard)
	}()
	base := waitURL(t, &sout, done)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return base
}

// checkServedMetrics: m, the /metrics of a served finished crawl, has the
// pages by class and requests of its report d, and the series of every
// worker of d's workers section that a live worker's /metrics has (the
// same names and labels), no others, and the crawl's totals; Redis is not
// read per scrape (no horseshoe_redis_up).
func checkServedMetrics(t *testing.T, m map[string]float64, d *report.Data) {
	t.Helper()
	for _, c := range report.Classes() {
		if k := "horseshoe_pages_total{class=" + c + "}"; m[k] != float64(d.Stats.ByClass[c]) {
			t.Errorf("%s = %v, the report counts %d", k, m[k], d.Stats.ByClass[c])
		}
	}
	if m["horseshoe_requests_total"] != float64(d.Stats.Requests) || m["horseshoe_crawl_running"] != 0 {
		t.Errorf("horseshoe_requests_total %v (the report: %d), running %v", m["horseshoe_requests_total"], d.Stats.Requests, m["horseshoe_crawl_running"])
	}
	if _, ok := m["horseshoe_redis_up"]; ok {
		t.Error("a served finished crawl says whether Redis is up")
	}
	v := d.Workers
	var served []string
	for k := range m {
		if strings.HasPrefix(k, "horseshoe_worker_info{") {
			served = append(served, k)
		}
	}
	if len(served) != len(v.Rows) {
		t.Errorf("/metrics has %d workers %q, the report %d", len(served), served, len(v.Rows))
	}
	for _, w := range v.Rows {
		info := fmt.Sprintf("horseshoe_worker_info{dir=%s,host=%s,pid=%d,state=%s,worker=%s}", w.Dir, w.Host, w.PID, w.State, w.ID)
		if m[info] != 1 {
			t.Errorf("/metrics lacks %s", info)
		}
		for _, c := range report.Classes() {
			if k := fmt.Sprintf("horseshoe_worker_pages_total{class=%s,worker=%s}", c, w.ID); m[k] != float64(w.ByClass[c]) {
				t.Errorf("%s = %v, the report's row %d", k, m[k], w.ByClass[c])
			}
		}
		for k, want := range map[string]int64{
			"horseshoe_worker_requests_total":                       w.Requests,
			"horseshoe_worker_stale_lease_ends_total":               w.StaleLeaseEnds,
			"horseshoe_worker_partitions":                           int64(w.Partitions),
			"horseshoe_worker_queue_size":                           int64(w.Queued),
			"horseshoe_worker_up":                                   0, // left
			"horseshoe_worker_lease_checks_total{outcome=checked,":  w.LeaseChecks,
			"horseshoe_worker_remote_texts_total{outcome=answered,": w.TextsAnswered,
		} {
			if !strings.HasSuffix(k, ",") {
				k += "{"
			}
			k += "worker=" + w.ID + "}"
			if got, ok := m[k]; !ok || got != float64(want) {
				t.Errorf("%s = %v (present %v), the report's row %d", k, got, ok, want)
			}
		}
		if _, ok := m["horseshoe_worker_heartbeat_timestamp_seconds{worker="+w.ID+"}"]; !ok {
			t.Errorf("/metrics lacks worker %s's heartbeat", w.ID)
		}
	}
	for _, c := range report.Classes() {
		if k := "horseshoe_crawl_pages_total{class=" + c + "}"; m[k] != float64(v.Total.ByClass[c]) {
			t.Errorf("%s = %v, the workers' total %d", k, m[k], v.Total.ByClass[c])
		}
	}
	if m["horseshoe_crawl_requests_total"] != float64(v.Total.Requests) || m["horseshoe_crawl_workers{state=left}"] != float64(v.Left) {
		t.Errorf("crawl requests %v (total %d), workers left %v (%d)", m["horseshoe_crawl_requests_total"], v.Total.Requests, m["horseshoe_crawl_workers{state=left}"], v.Left)
	}
}
