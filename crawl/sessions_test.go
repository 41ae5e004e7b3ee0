package crawl_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/hostile"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestSessionShops crawls each session-id shop of internal/hostile (issue 16) on a
// host of its own, with a generous max_depth: every link of every response carries a
// fresh session id, so without stripping or learning the crawl would only end at
// fan-out^depth. It must end by itself, within a few requests per real page, having
// fetched every real page and kept every distinct text as a unique page.
func TestSessionShops(t *testing.T) {
	if testing.Short() {
		t.Skip("five crawls of a few seconds each")
	}
	// The parameter each shop's crawl must learn: none where Canonicalize
	// strips it from the start.
	learn := map[hostile.SessionVariant]string{
		hostile.SessionVisit: "visit", hostile.SessionPaged: "s", hostile.SessionAisles: "token",
	}
	for i, v := range hostile.SessionVariants() {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			shop := hostile.NewSessionShop(v)
			srv := startServer(t, fmt.Sprintf("127.0.0.%d", 161+i), shop, &hitLog{})
			cfg := configs.Default()
			cfg.Crawl.Workers = 4
			cfg.Crawl.MaxDepth = 50
			// A backstop so that a crawl that does not stop fails the
			// request bound below instead of the time limit.
			cfg.Crawl.MaxPages = 500
			cfg.Politeness.Delay = 0
			seed := srv.Base(srv.IP) + "/"
			dataDir := filepath.Join(t.TempDir(), "data")
			c := runEngine(t, cfg, dataDir, []string{seed}, 60*time.Second)

			real := shop.RealPages()
			n := shop.Requests()
			t.Logf("%s: %d requests for %d real pages, %d records, %s", v, n, len(real), len(c.pages), c.elapsed.Round(time.Millisecond))
			// robots.txt, each real page once, and per real page a few
			// more: the evidence a learned rule needs and the links queued
			// before it was decided.
			if bound := 1 + 6*len(real); n > bound {
				t.Errorf("%d requests, want at most %d (1 + 6 x %d real pages)", n, bound, len(real))
			}
			hits := shop.Hits()
			for _, p := range real {
				if hits[p] == 0 {
					t.Errorf("real page %s never fetched", p)
				}
			}
			unique := map[string]int{}
			for _, p := range c.pages {
				if p.Class == storage.ClassUnique {
					unique[p.Title]++
				}
			}
			for _, title := range shop.Titles() {
				if unique[title] != 1 {
					t.Errorf("text %q: %d unique pages, want 1", title, unique[title])
				}
			}

			// The report lists the learned parameter with its evidence, and
			// nothing else: page selects content in the paged shop.
			params := reportParams(t, dataDir)
			want := []string{}
			if name, ok := learn[v]; ok {
				want = append(want, srv.HostPort(srv.IP)+" "+name)
			}
			var got []string
			for _, p := range params {
				got = append(got, p.Host+" "+p.Param)
				if p.Withdrawn || p.Pairs < frontier.DefaultParamMinPairs || p.Paths < frontier.DefaultParamMinPaths || len(p.Examples) == 0 {
					t.Errorf("rule %+v: want standing, with its evidence", p)
				}
				for _, e := range p.Examples {
					if e.URL == e.Other || !strings.Contains(e.URL, p.Param+"=") || !strings.Contains(e.Other, p.Param+"=") {
						t.Errorf("evidence %+v does not show two values of %s", e, p.Param)
					}
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("irrelevant parameters %q, want %q", got, want)
			}

			// A resumed crawl keeps the rule: a seed under a new session id
			// is the real page already fetched.
			if name, ok := learn[v]; ok {
				before := shop.Hits()
				again := runEngine(t, cfg, dataDir, []string{seed, srv.Base(srv.IP) + "/b?" + name + "=123456789"}, 60*time.Second)
				if after := shop.Hits(); !maps.Equal(before, after) {
					t.Errorf("resumed crawl fetched pages again: %v, then %v", before, after)
				}
				if _, ok := again.pages[srv.Base(srv.IP)+"/b?"+name+"=123456789"]; ok {
					t.Errorf("resumed crawl recorded the seed with its session id")
				}
			}
		})
	}
}

// reportParams reads the irrelevant parameters of a finished crawl's report.
func reportParams(tb testing.TB, dataDir string) []report.IrrelevantParam {
	tb.Helper()
	db, err := storage.Open(dataDir, storage.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	d, err := crawl.ReportData(db, "", nil)
	if err != nil {
		tb.Fatal(err)
	}
	return d.IrrelevantParams
}

// TestSessionRedirects: a site that serves its pages only under a path session
// id (it redirects "/a" to "/a;jsessionid=R") is crawled: the redirect target
// canonicalizes back to the URL that redirected, so it is requested once more
// as written, and every page is kept at two requests a page. A site that
// redirects the session URL too, forever, costs a bounded number of requests
// and records the loop.
func TestSessionRedirects(t *testing.T) {
	pages := []string{"/", "/a", "/b", "/c"}
	for i, insist := range []bool{false, true} {
		t.Run(fmt.Sprint("insist=", insist), func(t *testing.T) {
			shop := &hostile.SessionRedirector{Pages: pages, Insist: insist}
			srv := startServer(t, fmt.Sprintf("127.0.0.%d", 171+i), shop, &hitLog{})
			cfg := configs.Default()
			cfg.Crawl.MaxDepth = 20
			cfg.Politeness.Delay = 0
			base := srv.Base(srv.IP)
			c := runEngine(t, cfg, filepath.Join(t.TempDir(), "data"), []string{base + "/"}, 30*time.Second)
			if !insist {
				for _, p := range pages {
					rec := c.pages[base+p]
					if rec == nil || rec.Class != storage.ClassUnique || !strings.HasPrefix(rec.Title, "Session shop") ||
						!strings.Contains(strings.ToLower(rec.FinalURL), ";jsessionid=") {
						t.Errorf("%s: %+v, want a unique page served under its session id", p, rec)
					}
				}
				if n, bound := shop.Hits(), 1+2*len(pages); n > bound {
					t.Errorf("%d requests, want at most %d (robots.txt and two a page)", n, bound)
				}
				return
			}
			rec := c.pages[base+"/"]
			if rec == nil || rec.Class != storage.ClassError || rec.ErrorClass != "redirect" || !strings.Contains(rec.Error, "redirect loop") {
				t.Errorf("insisting site: / recorded as %+v, want a redirect-loop error", rec)
			}
			if n := shop.Hits(); n > 3 {
				t.Errorf("insisting site: %d requests, want at most 3 (robots.txt, /, once more as written)", n)
			}
		})
	}
}
