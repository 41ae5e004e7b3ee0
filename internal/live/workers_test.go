package live_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/internal/live"
	"github.com/horseshoe-crawler/horseshoe/report"
)

// A shared crawl's view (fixed here; TestSharedCrawlWorkersView reads it
// from real workers through Redis): one live worker, one that left, one
// paused (Redis refuses its writes) and one dead, whose data dir has a
// hostile name.
func testWorkers() *report.Workers {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	v := &report.Workers{Crawl: "c1", Rows: []report.Worker{}}
	for _, w := range []report.Worker{
		{ID: "m1-10-a", Host: "m1", PID: 10, Dir: "/data/a", State: "live", Started: t0, Heartbeat: t0.Add(time.Hour), Partitions: 200,
			WorkerCounts: report.WorkerCounts{Pages: 40, Requests: 45, Queued: 7, InFlight: 2, TextsAsked: 12, TextsAnswered: 9, TextsFellBack: 3,
				LeaseChecks: 50, LeaseGone: 2, LeaseShort: 1, StaleLeaseEnds: 1,
				ByClass: map[string]int64{"unique": 30, "exact_duplicate": 4, "near_duplicate": 3, "error": 3}, Errors: 3}},
		{ID: "m2-11-b", Host: "m2", PID: 11, Dir: "/data/b", State: "left", Started: t0, Heartbeat: t0.Add(time.Minute),
			WorkerCounts: report.WorkerCounts{Pages: 5, Requests: 6, ByClass: map[string]int64{"unique": 5}, TextsAsked: 2, TextsAnswered: 2}},
		{ID: "m4-13-d", Host: "m4", PID: 13, Dir: "/data/d", State: "paused", Paused: "out of memory (maxmemory reached)", Started: t0,
			Heartbeat: t0.Add(time.Hour), Partitions: 0},
		{ID: "m3-12-c", Host: "m3", PID: 12, Dir: "/data/" + xssTitle, State: "dead", Started: t0, Heartbeat: t0.Add(time.Minute), Partitions: 56,
			WorkerCounts: report.WorkerCounts{Pages: 8, Requests: 9, Queued: 100, InFlight: 4, ByClass: map[string]int64{"unique": 8}}},
	} {
		v.Add(w)
	}
	return v
}

// TestWorkersInReportAndMetrics: with Options.Workers the HTML report shows
// a row per worker (the dead one marked, names escaped) and the crawl's
// totals, /report.json carries them, and /metrics has the crawl's totals
// (every worker's pages, the live workers' queues) and each worker's series
// (up 0 for the dead and the left one, 1 for the live and the paused one).
func TestWorkersInReportAndMetrics(t *testing.T) {
	read := func(context.Context) (*report.Workers, error) { return testWorkers(), nil }
	h := newHandler(t, testStore(t), live.Options{Workers: read})
	html := get(t, h, "GET", "/").Body.String()
	for _, want := range []string{`<section id="workers">`, "shared crawl c1: 1 live, 1 paused, 1 left, 1 dead", "<b>dead (heartbeat expired)</b>",
		"<b>paused (out of memory (maxmemory reached))</b>",
		"/data/&lt;script&gt;alert(1)&lt;/script&gt;", "m1-10-a", "m2-11-b", `<td class="n">53</td>`,
		`<td class="n">9 / 3</td>`, `<td class="n">11 / 3</td>`} {
		if !strings.Contains(html, want) {
			t.Errorf("the HTML report lacks %q", want)
		}
	}
	if strings.Contains(html, xssTitle) {
		t.Error("a data dir's name is not escaped")
	}
	js := get(t, h, "GET", "/report.json").Body.String()
	if !strings.Contains(js, `"workers": {`) || !strings.Contains(js, `"state": "dead"`) {
		t.Errorf("/report.json lacks the workers:\n%s", js)
	}
	m := get(t, h, "GET", "/metrics").Body.String()
	for _, want := range []string{
		`horseshoe_crawl_pages_total{class="unique"} 43`,
		`horseshoe_crawl_requests_total 60`,
		`horseshoe_crawl_queue_size 7`,
		`horseshoe_crawl_workers{state="dead"} 1`,
		`horseshoe_crawl_workers{state="paused"} 1`,
		`horseshoe_worker_up{worker="m4-13-d"} 1`,
		`horseshoe_worker_pages_total{class="exact_duplicate",worker="m1-10-a"} 4`,
		`horseshoe_worker_up{worker="m1-10-a"} 1`,
		`horseshoe_worker_up{worker="m3-12-c"} 0`,
		`horseshoe_worker_up{worker="m2-11-b"} 0`,
		`horseshoe_worker_partitions{worker="m1-10-a"} 200`,
		`horseshoe_worker_queue_size{worker="m3-12-c"} 100`,
		`horseshoe_worker_info{dir="/data/b",host="m2",pid="11",state="left",worker="m2-11-b"} 1`,
		`horseshoe_worker_remote_texts_total{outcome="fell_back",worker="m1-10-a"} 3`,
		`horseshoe_worker_remote_texts_total{outcome="answered",worker="m2-11-b"} 2`,
		`horseshoe_redis_up 1`,
		`horseshoe_worker_lease_checks_total{outcome="checked",worker="m1-10-a"} 50`,
		`horseshoe_worker_lease_checks_total{outcome="lease_gone",worker="m1-10-a"} 2`,
		`horseshoe_worker_lease_checks_total{outcome="lease_short",worker="m1-10-a"} 1`,
		`horseshoe_worker_lease_checks_total{outcome="no_answer",worker="m1-10-a"} 0`,
		`horseshoe_worker_stale_lease_ends_total{worker="m1-10-a"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// Without Options.Workers (one process's crawl) there is no such section.
	plain := get(t, newHandler(t, testStore(t), live.Options{}), "GET", "/").Body.String()
	if strings.Contains(plain, `id="workers"`) {
		t.Error("a crawl of one process shows a workers section")
	}
}

// TestWorkersUnreadable: when Redis cannot be read the report and the
// scrape still answer (200) with what this worker knows locally, and say
// why the crawl-wide data is missing: the note in the report (no workers
// section) and /report.json, horseshoe_redis_up 0 and no crawl-wide series
// on /metrics (not zeros).
func TestWorkersUnreadable(t *testing.T) {
	read := func(context.Context) (*report.Workers, error) { return nil, errors.New("connection refused") }
	h := newHandler(t, testStore(t), live.Options{Workers: read})
	note := "crawl-wide data unavailable: connection refused"
	if rec := get(t, h, "GET", "/"); rec.Code != 200 || !strings.Contains(rec.Body.String(), note) ||
		!strings.Contains(rec.Body.String(), `id="summary"`) || strings.Contains(rec.Body.String(), `id="workers"`) {
		t.Errorf("report: %d %s", rec.Code, rec.Body)
	}
	if rec := get(t, h, "GET", "/report.json"); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"unavailable": "`+note+`"`) {
		t.Errorf("report.json: %d %s", rec.Code, rec.Body)
	}
	rec := get(t, h, "GET", "/metrics")
	m := rec.Body.String()
	if rec.Code != 200 || !strings.Contains(m, "horseshoe_redis_up 0") || !strings.Contains(m, `horseshoe_pages_total{class="unique"} 3`) ||
		strings.Contains(m, "\nhorseshoe_crawl_pages_total") || strings.Contains(m, "\nhorseshoe_worker_") {
		t.Errorf("metrics: %d %s", rec.Code, m)
	}
}

// TestKeptWorkersMetrics: serving a finished crawl with Options.KeptWorkers
// (no store: Report and Snapshot read the crawl, as for several data dirs),
// /metrics has each worker's series and the crawl's totals, as with
// Options.Workers, but no horseshoe_redis_up (nothing read from Redis), and
// the reports are Report's own, the workers section untouched.
func TestKeptWorkersMetrics(t *testing.T) {
	kept := testWorkers()
	d := &report.Data{Stats: report.Stats{ByClass: map[string]int{"unique": 43}}, Workers: kept}
	snapshot := func() (crawl.Stats, error) {
		return crawl.Stats{ByClass: map[string]int64{"unique": 43}, Requests: 60}, nil
	}
	h := newHandler(t, nil, live.Options{KeptWorkers: kept, Report: func() (*report.Data, error) { return d, nil }, Snapshot: snapshot})
	m := get(t, h, "GET", "/metrics").Body.String()
	for _, want := range []string{
		`horseshoe_pages_total{class="unique"} 43`,
		`horseshoe_requests_total 60`,
		`horseshoe_crawl_pages_total{class="unique"} 43`,
		`horseshoe_crawl_workers{state="left"} 1`,
		`horseshoe_worker_info{dir="/data/b",host="m2",pid="11",state="left",worker="m2-11-b"} 1`,
		`horseshoe_worker_pages_total{class="exact_duplicate",worker="m1-10-a"} 4`,
		`horseshoe_worker_up{worker="m3-12-c"} 0`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(m, "horseshoe_redis_up") {
		t.Error("/metrics of kept workers says whether Redis is up")
	}
	if js := get(t, h, "GET", "/report.json").Body.String(); !strings.Contains(js, `"id": "m3-12-c"`) || strings.Contains(js, `"unavailable"`) {
		t.Errorf("/report.json: %s", js)
	}
	if _, err := live.NewHandler(nil, live.Options{KeptWorkers: kept}); err == nil {
		t.Error("a handler without a store, Report and Snapshot")
	}
}
