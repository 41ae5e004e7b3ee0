//go:build e2e

package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/cluster/redisstate"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/report"
)

// pairEdits are the words a copy replaces, pair by pair: J 0.966, 0.934,
// 0.918, 0.902 (three times), 0.887 (twice), 0.856.
var pairEdits = []int{2, 4, 5, 6, 6, 6, 7, 7, 9}

// settlePairWeb serves near-copy pairs on 8 loopback hosts (127.0.0.211 to
// .218): pair i's original on host i%8, its copy on host (i+3)%8, both
// linked from their host's /index. The copies replace 2 to 9 of the 585
// words (pairEdits: J about 0.97 down to 0.86 with 5-word shingles, most
// near the 0.90 threshold, where the sketch rule errs most). It returns the
// seeds (the hosts' indexes) and the pairs' URLs. Every request first calls
// wait.
func settlePairWeb(t *testing.T, pairs int, wait func()) (seeds []string, pair [][2]string) {
	t.Helper()
	const hosts, nwords = 8, 585
	rng := rand.New(rand.NewPCG(211, 218))
	pages := make([]map[string]string, hosts)
	for h := range pages {
		pages[h] = map[string]string{}
	}
	base := make([]string, hosts)
	var lns []net.Listener
	for h := range hosts {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:0", 211+h))
		if err != nil {
			t.Skipf("loopback address 127.0.0.%d: %v", 211+h, err)
		}
		lns = append(lns, ln)
		base[h] = "http://" + ln.Addr().String()
	}
	page := func(words []string) string {
		return "<!doctype html><html><head><title>page</title></head><body><p>" + strings.Join(words, " ") + "</p></body></html>"
	}
	for i := range pairs {
		a := make([]string, nwords)
		for j := range a {
			a[j] = strconv.FormatUint(rng.Uint64()>>12, 36)
		}
		c := append([]string(nil), a...)
		edits := pairEdits[i%len(pairEdits)]
		for k := range edits {
			c[(i+k*nwords/edits)%nwords] = "x" + strconv.FormatUint(rng.Uint64()>>12, 36)
		}
		ho, hc := i%hosts, (i+3)%hosts
		pages[ho][fmt.Sprintf("/o/%d", i)] = page(a)
		pages[hc][fmt.Sprintf("/c/%d", i)] = page(c)
		pair = append(pair, [2]string{fmt.Sprintf("%s/o/%d", base[ho], i), fmt.Sprintf("%s/c/%d", base[hc], i)})
	}
	for h, ln := range lns {
		var idx strings.Builder
		idx.WriteString("<!doctype html><html><head><title>index</title></head><body><ul>")
		for p := range pages[h] {
			fmt.Fprintf(&idx, "<li><a href=%q>x</a></li>", p)
		}
		idx.WriteString("</ul></body></html>")
		pages[h]["/index"] = idx.String()
		ps := pages[h]
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			wait()
			p, ok := ps[r.URL.Path]
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, p)
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		seeds = append(seeds, base[h]+"/index")
	}
	return seeds, pair
}

// TestSharedCrawlSettlesAsOneProcess: three workers share a crawl of
// near-copy pairs whose two pages are on different hosts (so mostly fetched
// by different workers, each with its own data dir and Redis client: the
// command's run, three at once in this process): which pairs lose a page as
// a near duplicate is the same as in one process's crawl (the settlement
// reads the other worker's text through Redis); before, the sketch rule
// decided those pairs and some were decided otherwise. The workers' logs
// count the remote texts: some must have been answered.
func TestSharedCrawlSettlesAsOneProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("two crawls of 458 pages")
	}
	const pairs = 225
	// The web answers the workers once the partitions have spread (see
	// spread): the first worker to join takes every partition, and the
	// others get theirs only at their heartbeats after it sheds them;
	// before, it would crawl the 458 pages alone and the test would settle
	// nothing across workers.
	var gate atomic.Pointer[chan struct{}]
	seeds, pair := settlePairWeb(t, pairs, func() {
		if g := gate.Load(); g != nil {
			<-*g
		}
	})
	srv := redistest.Start(t, redistest.Options{NoPersistence: true})
	tmp := t.TempDir()
	cfgPath := filepath.Join(tmp, "settle.yaml")
	cfg := sharedConfig + "dedup:\n  simhash: false\n" // the simhash index is per worker (docs/SCALE.md)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	args := func(data string, extra ...string) []string {
		a := append([]string{"crawl", "--data", data, "--delay", "0s", "--workers", "4", "--config", cfgPath}, extra...)
		return append(a, seeds...)
	}
	single := filepath.Join(tmp, "single")
	var so, se bytes.Buffer
	if err := run(context.Background(), args(single, "--quiet"), &so, &se); err != nil {
		t.Fatalf("single crawl: %v\n%s", err, se.String())
	}
	dirs := []string{filepath.Join(tmp, "w0"), filepath.Join(tmp, "w1"), filepath.Join(tmp, "w2")}
	held := make(chan struct{})
	var openGate sync.Once
	release := func() { openGate.Do(func() { close(held) }) }
	t.Cleanup(release)
	gate.Store(&held)
	rdb := srv.Client(t)
	spread := make(chan error, 1)
	var spreadState string
	go func() {
		defer release()
		var err error
		spreadState, err = waitSpread(rdb, "settle", len(dirs), seeds, time.Minute)
		spread <- err
	}()
	logs := make([]bytes.Buffer, len(dirs))
	errs := make([]error, len(dirs))
	var wg sync.WaitGroup
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			errs[i] = run(context.Background(), args(dirs[i], "--redis", srv.URL(), "--crawl", "settle"), &out, &logs[i])
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v\n%s", i, err, logs[i].String())
		}
	}
	if err := <-spread; err != nil {
		t.Fatalf("the partitions did not spread before the crawl: %v", err)
	}
	t.Logf("when the web started answering: %s", spreadState)
	one, shared := mergedReportOf(t, single), mergedReportOf(t, dirs...)
	p1, p2 := pagesByURL(&one), pagesByURL(&shared)
	dropped := func(pages map[string]report.Page, p [2]string) bool {
		return pages[p[0]].Class == "near_duplicate" || pages[p[1]].Class == "near_duplicate"
	}
	differ, drops := 0, 0
	for i, p := range pair {
		a, b := dropped(p1, p), dropped(p2, p)
		if a {
			drops++
		}
		if a != b {
			differ++
			t.Logf("pair %d (%d words replaced): one process drops one: %v; the shared crawl: %v (%s %s %.3f / %s %s %.3f)", i, pairEdits[i%len(pairEdits)], a, b,
				p2[p[0]].Class, p2[p[0]].Method, p2[p[0]].Similarity, p2[p[1]].Class, p2[p[1]].Method, p2[p[1]].Similarity)
		}
	}
	var remote []string
	answered := 0
	for i := range logs {
		for _, l := range strings.Split(logs[i].String(), "\n") {
			if m := remoteTextsLog.FindStringSubmatch(l); m != nil {
				remote = append(remote, fmt.Sprintf("worker %d: %s", i, m[0]))
				n, _ := strconv.Atoi(m[1])
				answered += n
			}
		}
	}
	t.Logf("%d pairs: one process drops a page of %d; the shared crawl decides %d otherwise; %s", pairs, drops, differ, strings.Join(remote, "; "))
	if drops < pairs/4 || drops > pairs*3/4 {
		t.Fatalf("one process drops a page of %d pairs of %d: the pairs do not test the threshold", drops, pairs)
	}
	if differ > 0 {
		t.Fatalf("%d of %d pairs decided otherwise than by one process", differ, pairs)
	}
	if len(remote) != len(logs) || answered == 0 {
		t.Fatalf("remote texts logged by %d of %d workers, %d answered: the pairs were not settled across workers", len(remote), len(logs), answered)
	}
	// The workers' records in Redis (the live report, /metrics) carry the
	// same counts as their logs.
	ws, err := redisstate.ReadWorkers(context.Background(), rdb, "settle")
	if err != nil {
		t.Fatal(err)
	}
	published := int64(0)
	for _, w := range ws {
		published += w.TextsAnswered
	}
	if published != int64(answered) {
		t.Errorf("the workers' records say %d remote texts answered, their logs %d", published, answered)
	}
}

// remoteTextsLog is a worker's log line of its remote text counts
// (session.Worker.Leave); its group is the count answered.
var remoteTextsLog = regexp.MustCompile(`asked=\d+ answered=(\d+) .*served=\d+`)

// waitSpread waits until the partitions of crawl name have spread over its
// workers as the test needs them before any page is served: workers live,
// each holding at most its share of the partitions (so none gives more up),
// and the partitions of the seeds' hosts held by at least two of them (so
// some pairs have their pages in two workers' data dirs: the pairs link
// host h to h+3 mod 8, one cycle through the 8 hosts, so any split of the
// hosts cuts some pairs). The lease keys say who holds what now (a worker's
// record says it a heartbeat late).
func waitSpread(rdb redis.UniversalClient, name string, workers int, seeds []string, wait time.Duration) (string, error) {
	ctx := context.Background()
	var c *redisstate.Crawl
	state := "no worker live"
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ws, err := redisstate.ReadWorkers(ctx, rdb, name)
		if err != nil {
			state = err.Error() // no worker has created the crawl yet
			continue
		}
		live := 0
		for _, w := range ws {
			if w.State == redisstate.WorkerLive {
				live++
			}
		}
		if live < workers {
			state = fmt.Sprintf("%d of %d workers live", live, workers)
			continue
		}
		if c == nil {
			if c, err = redisstate.Open(ctx, rdb, name, redisstate.Options{}); err != nil {
				return "", err
			}
		}
		holders, err := leaseHolders(ctx, rdb, c)
		if err != nil {
			return "", err
		}
		held := map[string]int{}
		for _, w := range holders {
			if w != "" {
				held[w]++
			}
		}
		share := (c.Partitions() + workers - 1) / workers
		seedHolders := map[string]bool{}
		for _, s := range seeds {
			if w := holders[c.PartitionOf(frontier.HostKey(s))]; w != "" {
				seedHolders[w] = true
			}
		}
		state = fmt.Sprintf("partitions held per worker %v (share %d); the seeds' hosts held by %d workers", held, share, len(seedHolders))
		balanced := len(held) == workers
		for _, n := range held {
			balanced = balanced && n <= share
		}
		if balanced && len(seedHolders) >= 2 {
			return state, nil
		}
	}
	return state, fmt.Errorf("after %v: %s", wait, state)
}

// leaseHolders returns the worker holding each partition of c ("" when
// free), from the lease keys ("worker epoch", docs/SCALE.md).
func leaseHolders(ctx context.Context, rdb redis.UniversalClient, c *redisstate.Crawl) ([]string, error) {
	cmds := make([]*redis.StringCmd, c.Partitions())
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range cmds {
			cmds[i] = p.Get(ctx, fmt.Sprintf("hs:{%s/p%d}:lease", c.Name(), i))
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, err
	}
	out := make([]string, len(cmds))
	for i, cmd := range cmds {
		out[i], _, _ = strings.Cut(cmd.Val(), " ")
	}
	return out, nil
}
