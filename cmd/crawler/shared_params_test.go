//go:build e2e

package main

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
	"github.com/horseshoe-crawler/horseshoe/report"
)

// sessionSite serves a shop that puts a fresh session id in every link
// ("/p?visit=N", "/q?visit=N+1"; the text of /p and of /q is the same under
// any visit), an endless trap until the parameter is learned. ruled is
// closed once the shop has answered the requests that teach the rule (3
// pairs of one path under two visits, on 2 paths: ruleDecidedAt).
func sessionSite(t *testing.T, ip string) (base string, ruled <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	var next atomic.Int64
	var mu sync.Mutex
	byPath := map[string]int{}
	pairs, paths := 0, 0
	done := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/p" && r.URL.Path != "/q" {
			http.NotFound(w, r)
			return
		}
		n := next.Add(2)
		var b strings.Builder
		fmt.Fprintf(&b, "<html><head><title>Shop %s</title></head><body><p>", r.URL.Path)
		for k := 0; k < 50; k++ {
			fmt.Fprintf(&b, "shop%s_%d ", r.URL.Path[1:], k)
		}
		fmt.Fprintf(&b, `</p><a href="/p?visit=%d">p</a> <a href="/q?visit=%d">q</a></body></html>`, n, n+1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(b.String()))
		if r.URL.Query().Get("visit") == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if byPath[r.URL.Path]++; byPath[r.URL.Path] > 1 {
			pairs++
			if byPath[r.URL.Path] == 2 {
				paths++
			}
		}
		if pairs >= 3 && paths >= 2 {
			select {
			case <-done:
			default:
				close(done)
			}
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), done
}

// TestSharedCrawlParamRule: two workers crawl a session-id shop and six
// sites whose pages each link to the shop with a session id of their own
// (linker i, page j: visit=Li-j), one page after another. The worker holding
// the shop learns that visit is irrelevant; the rule reaches the other worker
// through Redis within its refresh (crawl.SharedParamRefresh): no shop URL
// linked from a page fetched more than a second after the rule was decided
// (by either worker) is fetched, and the merged report names the rule once.
func TestSharedCrawlParamRule(t *testing.T) {
	t.Parallel() // its own sites and Redis
	tmp := t.TempDir()
	shop, ruled := sessionSite(t, "127.0.0.38")
	seeds := []string{shop + "/p?visit=seed"}
	const linkers, pages = 6, 80
	// The linkers' pages after their first wait until the shop has
	// answered the requests that teach the rule: each linker's 79 others
	// then take at least 78 politeness gaps of 40 ms (3.1 s), so pages are
	// fetched more than a second after the rule however loaded the machine
	// (before, a crawl that met the shop late fetched every linker page
	// first, and the test tested nothing). A shop that never teaches the
	// rule lets them go after a hang bound (the test then fails on it).
	hold := func(j int) {
		if j == 0 {
			return
		}
		select {
		case <-ruled:
		case <-time.After(2 * time.Minute):
		}
	}
	for i := 0; i < linkers; i++ {
		base := genSiteBefore(t, fmt.Sprintf("127.0.0.%d", 50+i), pages, hold, func(j int) []string {
			path := []string{"p", "q"}[j%2]
			return []string{fmt.Sprintf("%s/%s?visit=L%d-%d", shop, path, i, j)}
		})
		seeds = append(seeds, base+"/p/0")
	}
	cfg := filepath.Join(tmp, "params.yaml")
	conf := "mirror:\n  enabled: false\ncrawl:\n  sitemaps: false\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t, redistest.Options{})
	dirs := runSharedWorkers(t, srv, tmp, "params", "params", cfg, 2, seeds, "--delay", "40ms")
	mr := mergedReportOf(t, dirs...)
	shopHost := strings.TrimPrefix(shop, "http://")
	var shopPages []report.Page
	linkerAt := map[string]time.Time{} // "Li-j" -> when linker i's page j was fetched
	for _, p := range mr.Pages {
		u, err := url.Parse(p.URL)
		if err != nil {
			t.Fatal(err)
		}
		if u.Host == shopHost {
			shopPages = append(shopPages, p)
			continue
		}
		var j int
		if _, err := fmt.Sscanf(u.Path, "/p/%d", &j); err == nil {
			for i := 0; i < linkers; i++ {
				if strings.HasPrefix(u.Hostname(), fmt.Sprintf("127.0.0.%d", 50+i)) {
					linkerAt[fmt.Sprintf("L%d-%d", i, j)] = p.FetchedAt
				}
			}
		}
	}
	sort.Slice(shopPages, func(a, b int) bool { return shopPages[a].FetchedAt.Before(shopPages[b].FetchedAt) })
	decided := ruleDecidedAt(shopPages)
	if decided.IsZero() {
		t.Fatalf("the shop's %d pages never made 3 pairs on 2 paths", len(shopPages))
	}
	late, after := 0, 0
	for k, at := range linkerAt {
		if at.After(decided.Add(time.Second)) {
			after++
			for _, p := range shopPages {
				if strings.HasSuffix(p.URL, "visit="+k) {
					late++
					t.Errorf("%s fetched: linked from a page fetched %v after the rule", p.URL, at.Sub(decided))
				}
			}
		}
	}
	if after == 0 {
		t.Fatalf("no linker page fetched a second after the rule (%v): the test tests nothing", decided)
	}
	rules := 0
	for _, r := range mr.IrrelevantParams {
		if r.Host == shopHost && r.Param == "visit" && !r.Withdrawn {
			rules++
		}
	}
	if rules != 1 {
		t.Errorf("rules for visit on the shop in the merged report: %d, want 1 (%+v)", rules, mr.IrrelevantParams)
	}
	t.Logf("shop pages %d; linker pages after the rule + 1 s: %d, their shop links fetched: %d", len(shopPages), after, late)
}

// ruleDecidedAt is when the shop's fetched pages (in fetch order) first made
// the learner's evidence: 3 pairs (a URL whose path was fetched before under
// another visit) on 2 paths (frontier.DefaultParamMinPairs, MinPaths).
func ruleDecidedAt(pages []report.Page) time.Time {
	byPath := map[string]int{}
	pairs, paths := 0, 0
	for _, p := range pages {
		u, _ := url.Parse(p.URL)
		if u.Query().Get("visit") == "" {
			continue
		}
		if byPath[u.Path]++; byPath[u.Path] > 1 {
			pairs++
			if byPath[u.Path] == 2 {
				paths++
			}
		}
		if pairs >= 3 && paths >= 2 {
			return p.FetchedAt
		}
	}
	return time.Time{}
}
