//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/report"
)

// sharedSubset is the part of the real corpus TestSharedCrawlKilledWorker
// crawls (about 2,100 of its 8,000 pages; it crawls twice): the git docs and
// their near-duplicate and partial-mirror hosts, the npm versions, the man
// pages with their alias copies and their changed-footer copy, and the
// large pages. TestSharedCrawlThreeWorkers crawls the whole corpus.
var sharedSubset = map[string]bool{"127.0.0.4": true, "127.0.0.5": true, "127.0.0.6": true,
	"127.0.0.10": true, "127.0.0.11": true, "127.0.0.12": true, "127.0.0.15": true}

// sharedDelay is the politeness delay of the shared-crawl tests: long enough
// that a request closer than it after another to one host is a fault, short
// enough for the crawl to be quick.
const sharedDelay = 10 * time.Millisecond

// sharedWeb serves the real corpus and returns the seeds of the hosts in
// hosts (nil: every host).
func sharedWeb(t *testing.T, hosts map[string]bool) (*loopweb.Web, []string) {
	t.Helper()
	root := corpusRoot(t)
	_, manifest, err := testweb.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	web, err := loopweb.Start(root, loopweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Close() })
	var seeds []string
	for _, m := range manifest {
		if hosts == nil || hosts[m.Host] {
			seeds = append(seeds, web.URL(m.Host, m.Prefix))
		}
	}
	return web, seeds
}

// sharedConfig turns off what makes one process's content depend on the
// order of its fetches: mirror detection (which side of a mirror is skipped)
// and skipping a duplicate's links as copies of its original's (which then
// keeps whichever side came first): with both off, the content kept is the
// same in any order, but for which copy of a near-duplicate pair is kept.
// TestSharedCrawlMirrorsCorpus crawls with them on.
const sharedConfig = "mirror:\n  enabled: false\ncrawl:\n  skip_duplicate_links: false\n"

// sharedReference is one process's crawl of sharedSubset with sharedConfig,
// made once per test binary (on its own web, closed after it) and compared
// against by TestSharedCrawlThreeWorkers and the killed-worker tests: with
// sharedConfig its content does not depend on the order of its fetches, so
// one such crawl stands for any. Its URLs carry its own web's ports;
// report and content give them with the ports of the web the caller's
// workers crawled.
type sharedReference struct {
	dir      string            // its data dir, under refDir
	web      *loopweb.Web      // the web it crawled, closed
	requests []loopweb.Request // its web's log
	took     time.Duration
	err      error

	data    report.Data         // mergedReportOf(dir)
	content map[string][]string // uniqueContent(dir)
}

var (
	sharedRefOnce sync.Once
	sharedRef     sharedReference
	refDir        string // removed by TestMain
)

// singleSubsetCrawl returns the crawl of sharedSubset by one process with
// sharedConfig, crawling it on the first call.
func singleSubsetCrawl(t *testing.T) *sharedReference {
	t.Helper()
	sharedRefOnce.Do(func() {
		r := &sharedRef
		root, manifest, err := testweb.Corpus()
		if err != nil {
			r.err = err
			return
		}
		web, err := loopweb.Start(root, loopweb.Options{})
		if err != nil {
			r.err = err
			return
		}
		defer web.Close()
		r.web = web
		var seeds []string
		for _, m := range manifest {
			if sharedSubset[m.Host] {
				seeds = append(seeds, web.URL(m.Host, m.Prefix))
			}
		}
		if refDir, err = os.MkdirTemp("", "horseshoe-ref-"); err != nil {
			r.err = err
			return
		}
		r.dir = filepath.Join(refDir, "single")
		cfgPath := filepath.Join(refDir, "nomirror.yaml")
		if err := os.WriteFile(cfgPath, []byte(sharedConfig), 0o644); err != nil {
			r.err = err
			return
		}
		var so, se bytes.Buffer
		start := time.Now()
		if err := run(context.Background(), crawlArgs(r.dir, seeds, "--config", cfgPath), &so, &se); err != nil {
			r.err = fmt.Errorf("single crawl: %v\n%s", err, se.String())
			return
		}
		r.took = time.Since(start)
		r.requests = web.Requests()
		if r.data, r.err = mergedReport(refDir, r.dir); r.err == nil {
			r.content, r.err = exportedContent(refDir, r.dir)
		}
	})
	testweb.RequireCorpus(t, sharedRef.err)
	return &sharedRef
}

// report is the reference's report, its URLs on web.
func (r *sharedReference) report(t *testing.T, web *loopweb.Web) report.Data {
	t.Helper()
	b, err := json.Marshal(r.data)
	if err != nil {
		t.Fatal(err)
	}
	var d report.Data
	if err := json.Unmarshal([]byte(urlMapper(r.web, web)(string(b))), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// uniqueContent is the reference's kept content (uniqueContent), its URLs
// on web.
func (r *sharedReference) uniqueContent(web *loopweb.Web) map[string][]string {
	m := make(map[string][]string, len(r.content))
	onWeb := urlMapper(r.web, web)
	for sha, us := range r.content {
		for _, u := range us {
			m[sha] = append(m[sha], onWeb(u))
		}
	}
	return m
}

// pageRequestCount counts the requests in rs that are not for robots.txt.
func pageRequestCount(rs []loopweb.Request) int {
	n := 0
	for _, r := range rs {
		if r.Path != "/robots.txt" {
			n++
		}
	}
	return n
}

func crawlArgs(data string, seeds []string, extra ...string) []string {
	args := append([]string{"crawl", "--data", data, "--delay", sharedDelay.String(), "--workers", "4", "--quiet"}, extra...)
	return append(args, seeds...)
}

// exportedJSONL runs `crawler export --format jsonl` of dirs (one merged
// corpus) and returns the file's bytes.
func exportedJSONL(t *testing.T, dirs ...string) []byte {
	t.Helper()
	b, _ := runOut(t, "export", append([]string{"--format", "jsonl"}, dataArgs(dirs...)...)...)
	return b
}

// uniqueContent is the URLs of every page the export keeps (the unique
// pages) by the SHA-256 of its body. A body may be kept more than once: pages
// too short to judge are never dropped as duplicates (the corpus's redirect
// stubs, served by two mirror hosts), in one process as in several.
func uniqueContent(t *testing.T, dirs ...string) map[string][]string {
	t.Helper()
	m, err := exportedContent(t.TempDir(), dirs...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// exportedContent is uniqueContent, its export's file in tmp.
func exportedContent(tmp string, dirs ...string) (map[string][]string, error) {
	b, _, err := commandOut(tmp, "export", append([]string{"--format", "jsonl"}, dataArgs(dirs...)...)...)
	if err != nil {
		return nil, err
	}
	m := map[string][]string{}
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var r struct {
			URL    string `json:"url"`
			SHA256 string `json:"sha256"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, err
		}
		m[r.SHA256] = append(m[r.SHA256], r.URL)
	}
	return m, nil
}

// sameContent checks that two crawls kept the same content: every body as
// many times in both, but for the other choice of copy: a body kept by one
// crawl and not the other is allowed when the other recorded its URL as a
// duplicate (near, or exact in text with other bytes) of a page it kept
// (which copy of a duplicate pair is fetched first, and kept, varies from
// run to run). It returns how many such choices differ.
func sameContent(t *testing.T, a, b map[string][]string, ra, rb *report.Data) (choices int) {
	t.Helper()
	pa, pb := pagesByURL(ra), pagesByURL(rb)
	keptURLs := func(m map[string][]string) map[string]bool {
		k := map[string]bool{}
		for _, us := range m {
			for _, u := range us {
				k[u] = true
			}
		}
		return k
	}
	ka, kb := keptURLs(a), keptURLs(b)
	for _, side := range []struct {
		name       string
		kept, othr map[string][]string
		other      map[string]report.Page
		otherKept  map[string]bool
	}{{"one process", a, b, pb, kb}, {"the workers", b, a, pa, ka}} {
		for sha, us := range side.kept {
			if n := len(side.othr[sha]); n > 0 {
				if n != len(us) && side.name == "one process" {
					t.Errorf("body %s kept %d times by one process (%v), %d by the workers (%v)", sha, len(us), us, n, side.othr[sha])
				}
				continue
			}
			for _, u := range us {
				p := side.other[u]
				if (p.Class == "near_duplicate" || p.Class == "exact_duplicate") && side.otherKept[p.DuplicateOf] {
					choices++
					continue
				}
				t.Errorf("%s kept %s (%s); the other crawl recorded it as %q (duplicate of %q) and kept no page with its body", side.name, u, sha, p.Class, p.DuplicateOf)
			}
		}
	}
	return choices
}

func mergedReportOf(t *testing.T, dirs ...string) report.Data {
	t.Helper()
	d, err := mergedReport(t.TempDir(), dirs...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// mergedReport is mergedReportOf, its report's file in tmp.
func mergedReport(tmp string, dirs ...string) (report.Data, error) {
	var d report.Data
	b, _, err := commandOut(tmp, "report", append([]string{"--format", "json"}, dataArgs(dirs...)...)...)
	if err == nil {
		err = json.Unmarshal(b, &d)
	}
	return d, err
}

// checkRequests: no URL requested twice (robots.txt apart: each worker keeps
// its own robots.txt cache, so a host whose partition moves has it fetched
// again; counted and returned), and no host sees a request start sooner
// than the delay after the one before was sent, from the servers' log. The
// clock's gap runs from the worker's end of a request (Redis TIME, whole
// ms: up to 1 ms short), which comes after the server began its last write
// (Sent) but may come before the server's handler returned (End).
func checkRequests(t *testing.T, reqs []loopweb.Request) (robots int) {
	t.Helper()
	seen := map[string]int{}
	byHost := map[string][]loopweb.Request{}
	for _, r := range reqs {
		if r.Path == "/robots.txt" {
			robots++
		} else if seen[r.Host+r.Path]++; seen[r.Host+r.Path] == 2 {
			t.Errorf("requested twice: http://%s%s", r.Host, r.Path)
		}
		byHost[r.Host] = append(byHost[r.Host], r)
	}
	for h, rs := range byHost {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Start.Before(rs[j].Start) })
		for i := 1; i < len(rs); i++ {
			if gap := rs[i].Start.Sub(rs[i-1].Sent); gap < sharedDelay-time.Millisecond {
				t.Errorf("host %s: %s started %v after %s was sent (delay %v)", h, rs[i].Path, gap, rs[i-1].Path, sharedDelay)
			}
		}
	}
	return robots
}

// TestSharedCrawlThreeWorkers: three workers of one crawl through a real
// redis-server, each with its own data dir, crawl the corpus subset; the
// merged export keeps the same content as one process's crawl
// (singleSubsetCrawl), no URL is requested twice, no host sees two requests
// closer than the delay, and the merged report's classes agree with the
// single crawl's where the order of the fetches cannot move them
// (compareClasses). TestSharedCorpusQuality crawls the whole corpus.
func TestSharedCrawlThreeWorkers(t *testing.T) {
	t.Parallel() // its own corpus web and Redis
	ref := singleSubsetCrawl(t)
	web, seeds := sharedWeb(t, sharedSubset)
	srv := redistest.Start(t, redistest.Options{})
	tmp := t.TempDir()
	cfgPath := filepath.Join(tmp, "nomirror.yaml")
	if err := os.WriteFile(cfgPath, []byte(sharedConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	dirs := make([]string, 3)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	logs := make([]bytes.Buffer, 3)
	for i := range dirs {
		dirs[i] = filepath.Join(tmp, fmt.Sprintf("w%d", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			args := crawlArgs(dirs[i], seeds, "--redis", srv.URL(), "--crawl", "c3", "--config", cfgPath)
			args = slices.DeleteFunc(args, func(a string) bool { return a == "--quiet" })
			errs[i] = run(context.Background(), args, &out, &logs[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v\n%s", i, err, logs[i].String())
		}
	}
	t.Logf("single crawl: %d requests in %v; three workers: %d requests in %v", len(ref.requests), ref.took, len(web.Requests()), time.Since(start))
	robots := checkRequests(t, web.Requests())
	t.Logf("robots.txt requests of the three workers: %d (%d hosts)", robots, len(web.Hosts()))

	sr, mr := ref.report(t, web), mergedReportOf(t, dirs...)
	want, got := ref.uniqueContent(web), uniqueContent(t, dirs...)
	choices := sameContent(t, want, got, &sr, &mr)
	t.Logf("content kept: %d unique bodies by one process, %d by three workers; %d duplicate pairs kept the other copy", len(want), len(got), choices)
	t.Logf("classes: single %v, merged %v", sr.Stats.ByClass, mr.Stats.ByClass)
	compareClasses(t, sr.Stats.ByClass, mr.Stats.ByClass)
	if len(sr.Pages) != len(mr.Pages) {
		t.Errorf("page records: %d in one process, %d merged", len(sr.Pages), len(mr.Pages))
	}
	logRedisCost(t, srv, len(mr.Pages))
	total := 0
	for i, d := range dirs {
		n := len(mergedReportOf(t, d).Pages)
		total += n
		t.Logf("worker %d: %d page records (a worker may hold none of the %d hosts' partitions)", i, n, len(web.Hosts()))
	}
	if total != len(mr.Pages) || total == 0 {
		t.Errorf("workers' page records %d, merged report %d", total, len(mr.Pages))
	}
}

// TestSharedCrawlKilledWorker: of two worker processes, one is killed with
// SIGKILL mid-crawl and a third joins later; the crawl finishes with the
// content one process keeps, and the requests above one process's crawl are
// at most what the killed worker had in flight (its --workers).
func TestSharedCrawlKilledWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls the corpus subset twice")
	}
	t.Parallel() // its own corpus web and Redis
	killedWorkerCrawl(t, redistest.Start(t, redistest.Options{}).URL())
}

// killedWorkerCrawl is TestSharedCrawlKilledWorker through the Redis (or
// Redis Cluster) at redisURL.
func killedWorkerCrawl(t *testing.T, redisURL string) {
	bin := buildSignalCrawler(t)
	ref := singleSubsetCrawl(t)
	web, seeds := sharedWeb(t, sharedSubset)
	tmp := t.TempDir()
	cfgPath := filepath.Join(tmp, "nomirror.yaml")
	if err := os.WriteFile(cfgPath, []byte(sharedConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	dirs := []string{filepath.Join(tmp, "a"), filepath.Join(tmp, "b"), filepath.Join(tmp, "c")}
	start := func(dir string) (*exec.Cmd, *bytes.Buffer) {
		var log bytes.Buffer
		cmd := exec.Command(bin, crawlArgs(dir, seeds, "--redis", redisURL, "--crawl", "k", "--config", cfgPath)...)
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &log
	}
	// a works alone (it holds every partition, so it has work in flight),
	// b joins and takes its share, then a is killed mid-crawl.
	a, _ := start(dirs[0])
	deadline := time.Now().Add(2 * time.Minute)
	for len(web.Requests()) < 300 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	b, logB := start(dirs[1])
	time.Sleep(1500 * time.Millisecond)
	if err := a.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.Wait()
	killedAt := len(web.Requests())
	time.Sleep(2 * time.Second)
	c, logC := start(dirs[2])
	done := make(chan error, 2)
	go func() { done <- b.Wait() }()
	go func() { done <- c.Wait() }()
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("worker: %v\nb:\n%s\nc:\n%s", err, logB, logC)
			}
		case <-time.After(10 * time.Minute): // a hang: the crawl takes under 3 minutes alone
			b.Process.Kill()
			c.Process.Kill()
			t.Fatalf("workers did not finish\nb:\n%s\nc:\n%s", logB, logC)
		}
	}
	reqs := web.Requests()
	extra := pageRequestCount(reqs) - pageRequestCount(ref.requests)
	t.Logf("killed after %d requests; one process %d page requests, the workers %d (%d above)", killedAt, pageRequestCount(ref.requests), pageRequestCount(reqs), extra)
	const inFlight = 4 // --workers of the killed process
	if extra > inFlight {
		t.Errorf("%d page requests above one process's crawl, more than the %d the killed worker could have in flight", extra, inFlight)
	}
	twice := map[string]int{}
	for _, r := range reqs {
		if r.Path != "/robots.txt" {
			twice[r.Host+r.Path]++
		}
	}
	n := 0
	for u, k := range twice {
		if k > 1 {
			n++
			t.Logf("requested %d times: %s", k, u)
		}
	}
	if n > inFlight {
		t.Errorf("%d URLs requested more than once, more than the %d in flight at the kill", n, inFlight)
	}
	sr, mr := ref.report(t, web), mergedReportOf(t, dirs...)
	choices := sameContent(t, ref.uniqueContent(web), uniqueContent(t, dirs...), &sr, &mr)
	t.Logf("duplicate pairs that kept the other copy: %d; classes: one process %v, workers %v", choices, sr.Stats.ByClass, mr.Stats.ByClass)
	compareClasses(t, sr.Stats.ByClass, mr.Stats.ByClass)
}

// logRedisCost logs the commands Redis ran per page record (the commands
// its scripts run included; TestStoreRoundTripsPerPage counts round trips)
// and its memory.
func logRedisCost(t *testing.T, srv *redistest.Server, pages int) {
	t.Helper()
	rdb := srv.Client(t)
	stats, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var calls, reads int64
	var lines []string
	for _, line := range strings.Split(stats, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
		calls += n
		cmd := strings.TrimPrefix(name, "cmdstat_")
		if cmd == "hget" || cmd == "hgetall" {
			reads += n
		}
		lines = append(lines, fmt.Sprintf("%s %.2f", cmd, float64(n)/float64(pages)))
	}
	mem, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	used := ""
	for _, line := range strings.Split(mem, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			used = v
		}
	}
	t.Logf("redis per page record (%d): %.1f commands (those the scripts run counted too: not round trips), %.1f HGET/HGETALL; by command: %s; used_memory %s bytes",
		pages, float64(calls)/float64(pages), float64(reads)/float64(pages), strings.Join(lines, ", "), used)
}

// TestSharedCrawlPasswordTLS: a worker reaches a redis-server that requires
// a password and serves only TLS (rediss://, its certificate trusted through
// --redis-ca) and crawls; the password never shows in its output; without
// --redis-ca the certificate is refused with a clear error.
func TestSharedCrawlPasswordTLS(t *testing.T) {
	t.Parallel() // its own corpus web and Redis
	root := corpusRoot(t)
	web, err := loopweb.Start(root, loopweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Close() })
	const password = "s3cret-Pa55"
	srv := redistest.Start(t, redistest.Options{Password: password, TLS: true})
	seed := web.URL("127.0.0.15", "/reference/")
	data := filepath.Join(t.TempDir(), "w")
	var so, se bytes.Buffer
	err = run(context.Background(), crawlArgs(data, []string{seed}, "--redis", srv.URL(), "--crawl", "tls"), &so, &se)
	if err == nil || strings.Contains(err.Error()+se.String(), password) {
		t.Fatalf("without --redis-ca: %v (the self-signed certificate must be refused, the password never shown)\n%s", err, se.String())
	}
	so.Reset()
	se.Reset()
	args := crawlArgs(data, []string{seed}, "--redis", srv.URL(), "--crawl", "tls", "--redis-ca", filepath.Join(srv.Dir, "cert.pem"))
	if err := run(context.Background(), args, &so, &se); err != nil {
		t.Fatalf("crawl: %v\n%s", err, se.String())
	}
	if strings.Contains(so.String()+se.String(), password) {
		t.Error("the password shows in the worker's output")
	}
	d := mergedReportOf(t, data)
	if d.Stats.ByClass["unique"] < 10 {
		t.Errorf("crawl over TLS kept %d unique pages (by class %v)", d.Stats.ByClass["unique"], d.Stats.ByClass)
	}
	// A worker joining without seeds takes the crawl's, finds it done and
	// requests nothing.
	before := len(web.Requests())
	args = slices.DeleteFunc(args, func(a string) bool { return a == seed })
	args[2] = filepath.Join(t.TempDir(), "late")
	if err := run(context.Background(), args, &so, &se); err != nil {
		t.Fatalf("a worker without seeds: %v\n%s", err, se.String())
	}
	if n := len(web.Requests()) - before; n != 0 {
		t.Errorf("a worker joining a finished crawl made %d requests", n)
	}
}

// compareClasses checks the merged classes against one process's, by what
// does not depend on the order of the fetches. With mirror detection off,
// every link is followed (a duplicate's links where the page kept lacks
// them), so the set of URLs reached is the closure of the seeds whichever
// copy is fetched first: errors, robots exclusions, non-HTML answers and
// mirror skips (none) are equal, and so is the number of HTML pages judged
// (unique plus duplicates). How those split into unique and duplicate pages
// is not: which copy of a near-duplicate chain A~B~C is fetched first
// decides whether B alone or A and C are kept. That choice is checked by
// content (sameContent, every body kept by one crawl kept by the other or
// recorded there as a duplicate of a kept page), never by a count.
func compareClasses(t *testing.T, one, merged map[string]int) {
	t.Helper()
	for _, c := range []string{"error", "robots_disallowed", "not_html", "mirror_skipped"} {
		if one[c] != merged[c] {
			t.Errorf("class %s: %d in one process, %d merged", c, one[c], merged[c])
		}
	}
	judged := func(m map[string]int) int { return m["unique"] + m["exact_duplicate"] + m["near_duplicate"] }
	if a, b := judged(one), judged(merged); a != b {
		t.Errorf("HTML pages judged (unique and duplicates): %d in one process, %d merged", a, b)
	}
}
