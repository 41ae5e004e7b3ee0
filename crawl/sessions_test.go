package crawl_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/internal/hostile"
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
			c := runEngine(t, cfg, filepath.Join(t.TempDir(), "data"), []string{seed}, 60*time.Second)

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
		})
	}
}
