//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/cluster/redisstate"
	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/report"
)

// checkDirsThroughRedis: `crawler report` and `crawler export` with --redis
// and --crawl find the data dirs the workers of crawl registered, say which
// they cannot read (planted here: a worker's on another machine, and one on
// this machine whose dir is gone), and give
// byte for byte what they give with those dirs as --data.
func checkDirsThroughRedis(t *testing.T, srv *redistest.Server, crawl string, dirs []string) {
	t.Helper()
	ctx := context.Background()
	rdb := srv.Client(t)
	host, _ := os.Hostname()
	gone := filepath.Join(t.TempDir(), "removed")
	planted := map[string]string{
		"other-1": `{"id":"other-1","host":"other-machine.example","pid":7,"dir":"/srv/crawl/w9","started_ms":1,"left":true}`,
		"gone-1":  fmt.Sprintf(`{"id":"gone-1","host":%q,"pid":8,"dir":%q,"started_ms":2,"left":true}`, host, gone),
	}
	for id, rec := range planted {
		if err := rdb.HSet(ctx, "hs:{"+crawl+"}:info", id, rec).Err(); err != nil {
			t.Fatal(err)
		}
	}
	tmp := t.TempDir()
	redisArgs := []string{"--redis", srv.URL(), "--crawl", crawl}
	for _, c := range []struct{ cmd, format string }{{"export", "jsonl"}, {"report", "json"}, {"report", "text"}} {
		viaRedis, viaData := filepath.Join(tmp, c.cmd+"-redis."+c.format), filepath.Join(tmp, c.cmd+"-data."+c.format)
		var so, se bytes.Buffer
		if err := run(ctx, append([]string{c.cmd, "--format", c.format, "--out", viaRedis}, redisArgs...), &so, &se); err != nil {
			t.Fatalf("%s --redis: %v\n%s", c.cmd, err, se.String())
		}
		if !strings.Contains(se.String(), "cannot read the data dir other-machine.example:/srv/crawl/w9 (on another machine)") ||
			!strings.Contains(se.String(), "cannot read the data dir "+host+":"+gone+" (missing here:") {
			t.Errorf("%s --redis does not say which dir it cannot read:\n%s", c.cmd, se.String())
		}
		_, list, ok := strings.Cut(se.String(), "data dirs found through Redis: ")
		found := strings.Split(strings.TrimSpace(strings.SplitN(list, "\n", 2)[0]), ", ")
		if !ok || len(found) != len(dirs) || !sameSet(found, dirs) {
			t.Fatalf("%s --redis found %q, the workers' dirs are %q\n%s", c.cmd, found, dirs, se.String())
		}
		args := []string{c.cmd, "--format", c.format, "--out", viaData}
		for _, d := range found {
			args = append(args, "--data", d)
		}
		if err := run(ctx, args, &so, &se); err != nil {
			t.Fatalf("%s --data: %v\n%s", c.cmd, err, se.String())
		}
		a, _ := os.ReadFile(viaRedis)
		b, _ := os.ReadFile(viaData)
		if c.cmd == "report" {
			// The workers section: Redis's records (the planted ones
			// too) against those the dirs kept; the rest the same.
			var wa, wb []string
			a, wa = cutWorkers(t, c.format, a)
			b, wb = cutWorkers(t, c.format, b)
			if len(wa) != len(dirs)+len(planted) || len(wb) != len(dirs) {
				t.Errorf("report --format %s: workers %q through Redis, %q from the dirs; want the %d workers and the %d planted, then the %d", c.format, wa, wb, len(dirs), len(planted), len(dirs))
			}
		}
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s --format %s: %d bytes through --redis, %d with the dirs as --data, not the same", c.cmd, c.format, len(a), len(b))
		}
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "--redis", srv.URL()}, "--crawl"},
		{[]string{"report", "--crawl", crawl}, "--redis"},
		{append([]string{"export", "--out", filepath.Join(tmp, "x"), "--data", dirs[0]}, redisArgs...), "not both"},
		{[]string{"report", "--redis", srv.URL(), "--crawl", "no-such-crawl"}, `no crawl named "no-such-crawl"`},
	} {
		var so, se bytes.Buffer
		err := run(ctx, bad.args, &so, &se)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want an error saying %q", bad.args, err, bad.want)
		}
	}
}

// cutWorkers returns a report (JSON or text) without its workers section,
// and the worker ids the section names.
func cutWorkers(t *testing.T, format string, b []byte) ([]byte, []string) {
	t.Helper()
	if format == "json" {
		var d report.Data
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		var ids []string
		if d.Workers != nil {
			for _, w := range d.Workers.Rows {
				ids = append(ids, w.ID)
			}
		}
		d.Workers = nil
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return out, ids
	}
	s := string(b)
	i := strings.Index(s, "\nWORKERS (")
	j := strings.Index(s, "\nHOSTS (")
	if i < 0 || j < i {
		return b, nil
	}
	var ids []string
	for _, line := range strings.Split(s[i:j], "\n") {
		if f := strings.Fields(line); len(f) > 1 && !strings.HasPrefix(line, "      ") && f[0] != "WORKERS" && f[0] != "WORKER" && f[0] != "TOTAL" && f[0] != "records" && !strings.HasPrefix(f[0], "---") {
			ids = append(ids, f[0])
		}
	}
	return []byte(s[:i] + s[j:]), ids
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestSharedCrawlWorkersView: three workers of one crawl, each serving its
// live report (--serve). The corpus's servers hold every request after the
// first 150 (the counters stop moving); then each worker's /metrics shows
// every worker's row with the pages by class and requests that worker's own
// /metrics shows, the crawl's totals their sums, the partitions all held once
// and the queues of the workers' partitions summing to the crawl's queue;
// the HTML report shows the workers (a data dir's hostile name escaped) and
// /report.json the same rows. Stopped, every worker's record says it left,
// with the counts of its own data dir's report; report and export find the
// dirs through Redis (checkDirsThroughRedis).
func TestSharedCrawlWorkersView(t *testing.T) {
	if testing.Short() {
		t.Skip("three workers on the corpus")
	}
	t.Parallel() // its own corpus web and Redis
	root := corpusRoot(t)
	_, manifest, err := testweb.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	var served atomic.Int64
	gate := make(chan struct{})
	var openGate sync.Once
	release := func() { openGate.Do(func() { close(gate) }) }
	defer release()
	hold := func(_ string, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if served.Add(1) > 150 {
				<-gate
			}
			next.ServeHTTP(w, r)
		})
	}
	web, err := loopweb.Start(root, loopweb.Options{Handler: hold})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release(); web.Close() })
	var seeds []string
	for _, m := range manifest {
		seeds = append(seeds, web.URL(m.Host, m.Prefix))
	}
	srv := redistest.Start(t, redistest.Options{})
	tmp := t.TempDir()
	cfgPath := filepath.Join(tmp, "nomirror.yaml")
	if err := os.WriteFile(cfgPath, []byte(sharedConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	dirs := []string{filepath.Join(tmp, "w0"), filepath.Join(tmp, "w1"), filepath.Join(tmp, "w<i>2</i>")}
	outs := make([]syncBuffer, len(dirs))
	done := make(chan error, len(dirs))
	for i, d := range dirs {
		go func() {
			args := crawlArgs(d, seeds, "--redis", srv.URL(), "--crawl", "view", "--config", cfgPath, "--serve", "127.0.0.1:0")
			done <- run(context.Background(), args, &outs[i], &outs[i])
		}()
	}
	bases := make([]string, len(dirs))
	for i := range dirs {
		bases[i] = waitURL(t, &outs[i], done)
	}
	// Wait for the counters to stop (every request past the 150th held),
	// then for the heartbeats and the queue count (every 5 s) to catch up.
	own := func() []map[string]float64 {
		ms := make([]map[string]float64, len(bases))
		for i, b := range bases {
			ms[i] = scrape(t, b)
		}
		return ms
	}
	deadline := time.Now().Add(2 * time.Minute)
	for served.Load() <= 150 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	pagesOf := func(m map[string]float64) (n float64) {
		for k, v := range m {
			if strings.HasPrefix(k, "horseshoe_pages_total{") {
				n += v
			}
		}
		return n
	}
	var before, after []map[string]float64
	for stable := 0; stable < 2 && time.Now().Before(deadline); {
		before = own()
		time.Sleep(time.Second)
		after = own()
		stable++
		for i := range after {
			if pagesOf(after[i]) != pagesOf(before[i]) || after[i]["horseshoe_requests_total"] != before[i]["horseshoe_requests_total"] {
				stable = 0
			}
		}
	}
	time.Sleep(6 * time.Second) // the queue count of the held partitions
	mine := own()
	views := own() // what each endpoint shows of the others
	ids := make([]string, len(dirs))
	for k := range views[0] {
		for i, d := range dirs {
			if strings.HasPrefix(k, "horseshoe_worker_info{") && strings.Contains(k, "dir="+d+",") {
				ids[i] = k[strings.Index(k, "worker=")+len("worker=") : len(k)-1]
			}
		}
	}
	for i, id := range ids {
		if id == "" {
			t.Fatalf("worker %d (%s) has no row on the first worker's /metrics", i, dirs[i])
		}
	}
	classes := []string{"unique", "exact_duplicate", "near_duplicate", "mirror_skipped", "robots_disallowed", "not_html", "error"}
	var queues, parts, total float64
	for e, v := range views {
		for i, id := range ids {
			for _, c := range classes {
				row := v[fmt.Sprintf("horseshoe_worker_pages_total{class=%s,worker=%s}", c, id)]
				if want := mine[i][fmt.Sprintf("horseshoe_pages_total{class=%s}", c)]; row != want {
					t.Errorf("worker %d's endpoint shows %v %s pages of worker %d, which counts %v itself", e, row, c, i, want)
				}
			}
			if row, want := v["horseshoe_worker_requests_total{worker="+id+"}"], mine[i]["horseshoe_requests_total"]; row != want {
				t.Errorf("worker %d's endpoint shows %v requests of worker %d, which counts %v itself", e, row, i, want)
			}
			if v["horseshoe_worker_up{worker="+id+"}"] != 1 {
				t.Errorf("worker %d's endpoint shows worker %d not up", e, i)
			}
			if e == 0 {
				queues += v["horseshoe_worker_queue_size{worker="+id+"}"]
				parts += v["horseshoe_worker_partitions{worker="+id+"}"]
				total += pagesOf(mine[i])
			}
		}
		var crawlPages float64
		for _, c := range classes {
			crawlPages += v["horseshoe_crawl_pages_total{class="+c+"}"]
		}
		if crawlPages != total || v["horseshoe_crawl_workers{state=live}"] != 3 {
			t.Errorf("worker %d's endpoint: crawl pages %v (the workers count %v), live workers %v", e, crawlPages, total, v["horseshoe_crawl_workers{state=live}"])
		}
	}
	if q := mine[0]["horseshoe_queue_size"]; queues != q || parts != 256 || total < 100 {
		t.Errorf("the workers' queues sum to %v (the crawl's queue %v), partitions to %v (256), pages %v (about 150)", queues, q, parts, total)
	}
	t.Logf("held after %d requests: %v pages; queue %v; rows of worker 0's endpoint agree with the workers' own", served.Load(), total, queues)

	resp, body := httpGet(t, bases[1])
	if resp.Header.Get("Content-Security-Policy") == "" || resp.Header.Get("Refresh") == "" {
		t.Error("the live report lost its headers")
	}
	html := string(body)
	if !strings.Contains(html, `<section id="workers">`) || !strings.Contains(html, "3 live, 0 paused, 0 left, 0 dead") ||
		!strings.Contains(html, "w&lt;i&gt;2&lt;/i&gt;") || strings.Contains(html, "w<i>2") {
		t.Errorf("the live report's workers section is missing, wrong or unescaped:\n%s", between(html, `<section id="workers">`, "</section>"))
	}
	for _, id := range ids {
		if !strings.Contains(html, id) {
			t.Errorf("the live report has no row for worker %s", id)
		}
	}
	_, js := httpGet(t, bases[2]+"report.json")
	var d report.Data
	if err := json.Unmarshal(js, &d); err != nil {
		t.Fatal(err)
	}
	if d.Workers == nil || len(d.Workers.Rows) != 3 || d.Workers.Total.Pages == 0 {
		t.Errorf("/report.json workers: %+v", d.Workers)
	}

	// Stop the workers (finishing what is in flight), as the control API
	// of each does: their last records are final.
	for _, b := range bases {
		if code, v := api(t, b, "", "POST", "/api/stop", ""); code != 202 {
			t.Errorf("POST %sapi/stop: %d %v", b, code, v)
		}
	}
	release()
	for range dirs {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("worker: %v", err)
			}
		case <-time.After(5 * time.Minute):
			t.Fatal("the workers did not finish")
		}
	}
	ws, err := redisstate.ReadWorkers(context.Background(), srv.Client(t), "view")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		i := slices.Index(dirs, w.Dir)
		if i < 0 || w.State != redisstate.WorkerLeft {
			t.Errorf("after the crawl: worker %s (%s) %s", w.ID, w.Dir, w.State)
			continue
		}
		own := mergedReportOf(t, w.Dir).Stats.ByClass
		for _, c := range classes {
			if int64(own[c]) != w.ByClass[c] {
				t.Errorf("worker %d left with %d %s pages in its record, %d in its data dir", i, w.ByClass[c], c, own[c])
			}
		}
	}
	checkDirsThroughRedis(t, srv, "view", dirs)
}

// between is s from the first start to the end marker after it.
func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return "(no " + start + ")"
	}
	j := strings.Index(s[i:], end)
	if j < 0 {
		return s[i:]
	}
	return s[i : i+j+len(end)]
}

// TestSharedLiveReportRedisHung: a worker's live report and /metrics while
// Redis does not answer (its process stopped): both answer 200 within a few
// seconds with what the worker knows locally, and say the crawl-wide data is
// unavailable (the note in the report, horseshoe_redis_up 0 and no queue
// size on /metrics, queued_unknown in /api/status); once Redis answers
// again the crawl finishes.
func TestSharedLiveReportRedisHung(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	data := filepath.Join(t.TempDir(), "w")
	c := startHeldCrawl(t, func(seed string) []string {
		return crawlArgs(data, []string{seed}, "--redis", srv.URL(), "--crawl", "hung", "--serve", "127.0.0.1:0")
	})
	base, done, unblock, out := c.base, c.done, c.release, c.out
	if m := scrape(t, base); m["horseshoe_redis_up"] != 1 || m["horseshoe_crawl_workers{state=live}"] != 1 {
		t.Fatalf("Redis answering: redis_up %v, live workers %v", m["horseshoe_redis_up"], m["horseshoe_crawl_workers{state=live}"])
	}
	srv.Freeze()
	start := time.Now()
	_, body := httpGet(t, base) // fails the test unless 200
	html := string(body)
	if !strings.Contains(html, "crawl-wide data unavailable: ") || !strings.Contains(html, `id="summary"`) {
		t.Errorf("the live report with Redis hung says nothing of it:\n%s", between(html, "</nav>", "</section>"))
	}
	m := scrape(t, base)
	_, js := httpGet(t, base+"report.json")
	code, status := api(t, base, "", "GET", "/api/status", "")
	took := time.Since(start)
	if why, _ := status["queued_unknown"].(string); code != 200 || !strings.HasPrefix(why, "crawl-wide data unavailable: ") {
		t.Errorf("/api/status with Redis hung: %d %v", code, status)
	}
	var d report.Data
	if err := json.Unmarshal(js, &d); err != nil || d.Workers != nil || !strings.HasPrefix(d.Unavailable, "crawl-wide data unavailable: ") {
		t.Errorf("/report.json with Redis hung: unavailable %q, workers %+v, %v", d.Unavailable, d.Workers, err)
	}
	if _, ok := m["horseshoe_queue_size"]; ok || m["horseshoe_redis_up"] != 0 || m["horseshoe_pages_total{class=unique}"] < 1 || m["horseshoe_crawl_running"] != 1 {
		t.Errorf("/metrics with Redis hung: redis_up %v, queue size present %v, unique pages %v, running %v",
			m["horseshoe_redis_up"], ok, m["horseshoe_pages_total{class=unique}"], m["horseshoe_crawl_running"])
	}
	t.Logf("with Redis hung: %s; report, metrics, report.json and status in %v", between(html, "crawl-wide data unavailable", "</b>"), took)
	if took > 15*time.Second {
		t.Errorf("the three requests took %v with Redis hung", took)
	}
	srv.Thaw()
	unblock()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("crawl after Redis came back: %v\n%s", err, out.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the crawl did not finish after Redis came back; Redis holds:\n%s\nthe crawl's log:\n%s", redisDump(t, srv), out.String())
	}
}

// redisDump lists every key of srv with its type and size (a hash's or
// string's contents when short): what a test that failed left in Redis.
func redisDump(t *testing.T, srv *redistest.Server) string {
	ctx := context.Background()
	rdb := srv.Client(t)
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		return err.Error()
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		typ := rdb.Type(ctx, k).Val()
		ttl := rdb.PTTL(ctx, k).Val()
		fmt.Fprintf(&b, "%s %s ttl=%v", k, typ, ttl)
		switch typ {
		case "string":
			if v := rdb.Get(ctx, k).Val(); len(v) < 80 {
				fmt.Fprintf(&b, " %q", v)
			}
		case "hash":
			m := rdb.HGetAll(ctx, k).Val()
			fmt.Fprintf(&b, " %d fields", len(m))
			if len(m) <= 4 {
				fmt.Fprintf(&b, " %q", m)
			}
		case "set":
			fmt.Fprintf(&b, " %q", rdb.SMembers(ctx, k).Val())
		case "list":
			fmt.Fprintf(&b, " len %d", rdb.LLen(ctx, k).Val())
		case "zset":
			fmt.Fprintf(&b, " card %d", rdb.ZCard(ctx, k).Val())
		}
		b.WriteByte('\n')
	}
	return b.String()
}
