//go:build e2e && linux

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/cluster/redisstate"
	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// TestSharedFenceStalledWorker: a worker process stopped (SIGSTOP, through
// the test hook of a crawler built with the horseshoe_testhooks tag) right
// after it popped a URL, and resumed once its lease ran out and a second
// worker took the partition and requested the URL, does not request it
// again: the server's log has it once and the stalled worker logs the lease
// check that stopped it. With the check off (the hook's
// HORSESHOE_TEST_NO_LEASE_CHECK) the same stall requests it twice: the test
// makes the window it closes.
func TestSharedFenceStalledWorker(t *testing.T) {
	bin, srv := stallSetup(t)
	for _, check := range []bool{false, true} {
		t.Run(fmt.Sprintf("check=%v", check), func(t *testing.T) {
			fenceStall(t, bin, srv, check)
		})
	}
}

// TestSharedFenceStalledRobots: the same stall right after the pop of the
// seed, before the robots.txt of its host is looked up: once resumed, the
// stalled worker does not request robots.txt (its lease is gone; the worker
// that took the partition requested it under its own): the server's log has
// it once. With the robots.txt check off (HORSESHOE_TEST_NO_LEASE_CHECK=robots)
// it has it twice. One partition, so that the resumed worker cannot take the
// host's partition back under a lease of its own (which would request
// robots.txt again, rightly: once per host and lease).
//
// TestSharedFenceStalledConnecting: the stall falls after the page's lease
// check passed, once its connection is made and before the request is
// written (the server closes every connection after its response, so each
// request dials): the check asked again once the connection is obtained
// stops it, and the URL is requested once. With that re-check off
// (HORSESHOE_TEST_NO_LEASE_CHECK=recheck) it is requested twice.
func TestSharedFenceStalledRobots(t *testing.T) {
	fenceStallTest(t, stallCase{stopEnv: "HORSESHOE_TEST_STOP_BEFORE_ROBOTS", stopPath: "/", path: "/robots.txt",
		off: "robots", robotsOnce: true, log: "not requesting robots.txt: the lease"})
}

func TestSharedFenceStalledConnecting(t *testing.T) {
	fenceStallTest(t, stallCase{stopEnv: "HORSESHOE_TEST_STOP_CONNECTED", stopPath: "/p3.html", path: "/p3.html",
		off: "recheck", connClose: true, log: "not requesting: the lease"})
}

// stallSetup builds the crawler with its test hooks and starts the Redis
// the stalled-worker crawls share (skipped with -short).
func stallSetup(t *testing.T) (bin string, srv *redistest.Server) {
	t.Helper()
	if testing.Short() {
		t.Skip("two crawls of real worker processes, each waiting out a lease")
	}
	return buildCrawler(t, "horseshoe_testhooks"), redistest.Start(t, redistest.Options{})
}

func fenceStallTest(t *testing.T, c stallCase) {
	t.Parallel() // each stall has its own web and Redis, and waits out leases
	bin, srv := stallSetup(t)
	for _, check := range []bool{false, true} {
		t.Run(fmt.Sprintf("check=%v", check), func(t *testing.T) {
			c := c
			c.check = check
			r := runStall(t, bin, srv, c)
			n := r.requests(c.path)
			fenced := strings.Contains(r.logA, c.log) && strings.Contains(r.logA, r.stopURL)
			if !check {
				if n < 2 {
					t.Errorf("without the check %s was requested %d times: the stall did not make the duplicate the check is for", c.path, n)
				}
				if fenced {
					t.Errorf("worker a logged a lease check that was off")
				}
				return
			}
			if n != 1 {
				t.Errorf("%s requested %d times, want once\nworker a:\n%s", c.path, n, r.logA)
			}
			if !fenced || r.ra.LeaseGone < 1 {
				t.Errorf("worker a: logged the check %v, %d lease gone in its record; want the check that stopped the request logged and counted\n%s",
					fenced, r.ra.LeaseGone, r.logA)
			}
			r.noneTwice(t, c.robotsOnce)
		})
	}
}

// stallCase is one stalled-worker scenario: worker a stops (stopEnv, a test
// hook) on the lease of the URL at stopPath; path is the request counted.
type stallCase struct {
	stopEnv, stopPath, path string
	check                   bool   // lease checks on; else HORSESHOE_TEST_NO_LEASE_CHECK=off
	off                     string // which check is off without check
	robotsOnce              bool   // robots.txt is requested once in all (the stall falls before its lookup)
	connClose               bool   // the server closes each connection after its response
	log                     string // what worker a logs when a check stops its request
}

// stallRun is what a stalled run left: worker a's log and record, the server's log.
type stallRun struct {
	web     *loopweb.Web
	stopURL string
	logA    string
	ra      redisstate.WorkerInfo
}

func (r stallRun) requests(path string) int {
	n := 0
	for _, q := range r.web.Requests() {
		if q.Path == path {
			n++
		}
	}
	return n
}

// noneTwice checks that no path was requested twice (robots.txt: only with
// robots set, a crawl whose partition cannot move back) and that all were
// requested.
func (r stallRun) noneTwice(t *testing.T, robots bool) {
	t.Helper()
	seen := map[string]int{}
	for _, q := range r.web.Requests() {
		if seen[q.Path]++; seen[q.Path] == 2 && (robots || q.Path != "/robots.txt") {
			t.Errorf("requested twice: %s", q.Path)
		}
	}
	if len(seen) < 31 {
		t.Errorf("%d paths requested, want the index and its 30 pages", len(seen))
	}
}

// fenceWeb serves one host of n distinct pages, linked from its index.
func fenceWeb(t *testing.T, n int, o loopweb.Options) *loopweb.Web {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "127.0.0.2")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var index strings.Builder
	index.WriteString("<html><head><title>index</title></head><body>\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&index, "<a href=\"p%d.html\">page %d</a>\n", i, i)
		var body strings.Builder
		for j := range 80 {
			fmt.Fprintf(&body, "word%dx%d ", (i*7919+j*104729)%100003, j)
		}
		page := fmt.Sprintf("<html><head><title>page %d</title></head><body><p>%s</p></body></html>\n", i, body.String())
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("p%d.html", i)), []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	index.WriteString("</body></html>\n")
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte(index.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	web, err := loopweb.Start(filepath.Dir(dir), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Close() })
	return web
}

// fenceStall runs the stall of TestSharedFenceStalledWorker and checks it.
func fenceStall(t *testing.T, bin string, srv *redistest.Server, check bool) {
	c := stallCase{stopEnv: "HORSESHOE_TEST_STOP_BEFORE", stopPath: "/p3.html", path: "/p3.html", check: check, off: "1"}
	r := runStall(t, bin, srv, c)
	target, logA, ra := r.stopURL, r.logA, r.ra
	fenced := strings.Contains(logA, "not requesting: the lease") && strings.Contains(logA, target)
	t.Logf("check %v: %s requested %d times; worker a logged the check: %v", check, target, r.requests(c.path), fenced)
	if !check {
		if r.requests(c.path) < 2 {
			t.Errorf("without the lease check %s was requested %d times: the stall did not make the duplicate the check is for", target, r.requests(c.path))
		}
		// a requested the URL and committed it after b took the partition:
		// the commit's end of the lease left the in-flight record (b's, or
		// none yet) and counted it.
		if ra.LeaseChecks != 0 || ra.StaleLeaseEnds < 1 {
			t.Errorf("worker a's record: %d lease checks (want none: off), %d stale lease ends (want its late commit of %s)",
				ra.LeaseChecks, ra.StaleLeaseEnds, target)
		}
		return
	}
	if ra.LeaseChecks < 1 || ra.LeaseGone < 1 {
		t.Errorf("worker a's record: %d lease checks, %d with the lease gone; want the check that stopped %s counted", ra.LeaseChecks, ra.LeaseGone, target)
	}
	if n := r.requests(c.path); n != 1 {
		t.Errorf("%s requested %d times, want once\nworker a:\n%s", target, n, logA)
	}
	if !fenced {
		t.Errorf("worker a did not log the lease check for %s:\n%s", target, logA)
	}
	r.noneTwice(t, false)
}

// runStall runs a stall once: worker a stops on the lease of stopPath
// (c.stopEnv), worker b joins and takes the partitions once a's leases ran
// out (its acquire requeues the URL); a is resumed then. (b cannot request
// the URL before a resumes: a's reservation holds the IP's clock, for up to
// 2 minutes while a is stopped.)
func runStall(t *testing.T, bin string, srv *redistest.Server, c stallCase) stallRun {
	redisURL, rdb := srv.URL(), srv.Client(t)
	var wo loopweb.Options
	if c.connClose {
		wo.Handler = func(_ string, next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Connection", "close")
				next.ServeHTTP(w, r)
			})
		}
	}
	web := fenceWeb(t, 30, wo)
	seed := web.URL("127.0.0.2", "/")
	target := web.URL("127.0.0.2", c.stopPath)
	tmp := t.TempDir()
	crawl := fmt.Sprintf("fence-%s-%v", strings.ToLower(strings.TrimPrefix(c.stopEnv, "HORSESHOE_TEST_")), c.check)
	// One partition: b's fair share of it stays 1 once a is back, so a
	// cannot take the host's partition back under a lease of its own (which
	// would request robots.txt again, rightly: once per host and lease) and
	// b keeps popping the stalled URL, requeued when it took the partition.
	// With many, a's return could make b give up the host's partition
	// before b popped it (b pops it only once a's request freed the IP's
	// clock), and then no second request came whatever the check did: the
	// check=false run failed so in CI (b: 0 requests).
	if _, err := redisstate.Open(context.Background(), rdb, crawl, redisstate.Options{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	start := func(name string, env ...string) (*exec.Cmd, *syncBuffer) {
		var log syncBuffer
		cmd := exec.Command(bin, "crawl", "--data", filepath.Join(tmp, name), "--delay", "200ms", "--workers", "2",
			"--quiet", "--redis", redisURL, "--crawl", crawl, seed)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { // a test that failed early leaves no stopped process behind
			cmd.Process.Signal(syscall.SIGCONT)
			cmd.Process.Kill()
		})
		return cmd, &log
	}
	waitFor := func(what string, d time.Duration, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(d); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited %v for %s", d, what)
			}
		}
	}
	r := stallRun{web: web, stopURL: target}
	env := []string{c.stopEnv + "=" + target}
	if !c.check {
		env = append(env, "HORSESHOE_TEST_NO_LEASE_CHECK="+c.off)
	}
	a, logA := start("a", env...)
	waitFor("worker a to stop on "+target, time.Minute, func() bool {
		return strings.Contains(logA.String(), "test hook: stopping") && processState(a.Process.Pid) == "T"
	})
	stoppedAt := time.Now()
	if n := r.requests(c.path); n != 0 {
		t.Fatalf("%s requested %d times before the stall\n%s\n%+v", c.path, n, logA, web.Requests())
	}
	b, logB := start("b")
	// The lease keys (docs/SCALE.md) hold "worker epoch"; a worker's id
	// has its pid.
	leases := "hs:{" + crawl + "/p*}:lease"
	waitFor("worker b to take a's partitions", time.Minute, func() bool {
		keys, err := rdb.Keys(context.Background(), leases).Result()
		if err != nil || len(keys) == 0 {
			return false
		}
		for _, k := range keys {
			if v, _ := rdb.Get(context.Background(), k).Result(); !strings.Contains(v, fmt.Sprintf("-%d-", b.Process.Pid)) {
				return false
			}
		}
		return true
	})
	t.Logf("worker b took a's partitions %v after a stopped", time.Since(stoppedAt).Round(time.Millisecond))
	if n := r.requests(c.path); n != 0 {
		t.Fatalf("%s requested %d times while worker a held the IP's clock", c.path, n)
	}
	if err := a.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]struct {
		cmd *exec.Cmd
		log *syncBuffer
	}{"a": {a, logA}, "b": {b, logB}} {
		done := make(chan error, 1)
		go func() { done <- w.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("worker %s: %v\n%s", name, err, w.log)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("worker %s did not finish\n%s", name, w.log)
		}
	}
	r.logA = logA.String()
	r.ra = workerRecord(t, rdb, crawl, a.Process.Pid)
	// The cost of the checks: b (not stalled) asks one per request sent
	// (page or robots.txt), plus a re-check for each connection that took
	// over a tenth of the margin to obtain (none expected on loopback).
	rb := workerRecord(t, rdb, crawl, b.Process.Pid)
	t.Logf("worker b: %d requests, %d lease checks", rb.Requests, rb.LeaseChecks)
	t.Logf("%s: %s requested %d times; worker a's record: %d lease checks, %d lease gone, %d short, %d no answer, %d stale lease ends\n%s",
		c.stopEnv, c.path, r.requests(c.path), r.ra.LeaseChecks, r.ra.LeaseGone, r.ra.LeaseShort, r.ra.LeaseNoAnswer, r.ra.StaleLeaseEnds, r.logA)
	return r
}

// workerRecord is the record in Redis of crawl's worker of process pid (a
// worker's id has its pid).
func workerRecord(t *testing.T, rdb redis.UniversalClient, crawl string, pid int) redisstate.WorkerInfo {
	t.Helper()
	ws, err := redisstate.ReadWorkers(context.Background(), rdb, crawl)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if strings.Contains(w.ID, fmt.Sprintf("-%d-", pid)) {
			return w
		}
	}
	t.Fatalf("no record of the worker of pid %d among %d", pid, len(ws))
	return redisstate.WorkerInfo{}
}

// processState is the state letter of process pid ("T": stopped).
func processState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return ""
}
