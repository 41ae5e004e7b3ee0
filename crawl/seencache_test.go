package crawl_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

var seenWebSeed = flag.Uint64("seenweb.seed", 0, "seed of TestSeenCacheCrawl's links (0: a new one, printed)")

// TestSeenCacheCrawl: with the seen cache in front of the seen-set (issue 29),
// a crawl still fetches every page once: a false "seen" would lose a page,
// a missed one would fetch it twice. A generated site where every page links
// to a navigation of five pages and to ten others at random (seeded, printed,
// -seenweb.seed), crawled with the cache's default bound and with a bound of
// two (evicting all the time).
func TestSeenCacheCrawl(t *testing.T) {
	const n = 120
	r := rand.New(rand.NewPCG(testtools.FlagSeed(t, *seenWebSeed, "seenweb.seed"), 1))
	s := &site{Pages: map[string]page{}}
	for i := range n {
		var links []string
		for k := range 5 {
			links = append(links, fmt.Sprintf("/p%d.html", k))
		}
		for range 10 {
			links = append(links, fmt.Sprintf("/p%d.html", r.IntN(n)))
		}
		if i+1 < n {
			links = append(links, fmt.Sprintf("/p%d.html", i+1)) // every page reachable
		}
		s.Pages[fmt.Sprintf("/p%d.html", i)] = page{Body: htmlPage(fmt.Sprintf("page%d", i), "", links...)}
	}
	for _, tc := range []struct {
		bound  int
		filter uint64 // the seen filter's first generation (0: no filter loaded)
	}{{0, 0}, {2, 0}, {0, 4}, {2, 4}} {
		bound := tc.bound
		t.Run(fmt.Sprintf("bound=%d/filter=%d", bound, tc.filter), func(t *testing.T) {
			if bound > 0 {
				defer crawl.SetSeenCacheMax(bound)()
			}
			if tc.filter > 0 {
				// Four URLs a generation: the filter grows many times.
				defer crawl.SetSeenFilterDesign(tc.filter)()
			}
			log := &hitLog{}
			srv := startServer(t, "127.0.0.61", s.handler(), log)
			res := runCrawl(t, crawlConfig{Restore: tc.filter > 0}, srv.Base("127.0.0.61")+"/p0.html")
			got := map[string]int{}
			for _, h := range log.all() {
				if h.Path != "/robots.txt" {
					got[h.Path]++
				}
			}
			for i := range n {
				path := fmt.Sprintf("/p%d.html", i)
				if got[path] != 1 {
					t.Errorf("%s requested %d times, want once", path, got[path])
				}
				if p := res.Pages[srv.Base("127.0.0.61")+path]; p == nil || p.Status != http.StatusOK {
					t.Errorf("%s: record %+v, want a 200", path, p)
				}
			}
		})
	}
}
