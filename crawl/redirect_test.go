package crawl_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/internal/hostile"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestRedirectHopsBounded: fetch.max_redirects bounds each redirect chain
// (a chain used to cost up to max_depth requests whatever the option said),
// and redirects do not spend link depth: a chain of exactly max_redirects hops
// reaches its page even at max_depth 1, one hop more is refused and recorded
// as an error of class "redirect".
func TestRedirectHopsBounded(t *testing.T) {
	for i, max := range []int{0, 1, 3, 10} {
		t.Run(fmt.Sprint("max_redirects=", max), func(t *testing.T) {
			hs, err := hostile.Start(hostile.Options{
				Addr: fmt.Sprintf("127.0.0.%d:0", 200+2*i), RobotsAddr: fmt.Sprintf("127.0.0.%d:0", 201+2*i)})
			if err != nil {
				t.Fatal(err)
			}
			defer hs.Close()
			cfg := configs.Default()
			cfg.Crawl.MaxDepth = 1
			cfg.Politeness.Delay = 0
			cfg.Fetch.MaxRedirects = max
			end := hostile.ChainLength + 1 // /chain/31 is the page
			for _, tc := range []struct {
				name, seed string
				requests   int    // requests to the chain's paths
				last       string // the URL whose record ends the chain
				class      storage.Class
			}{
				{"endless", "/redirect-forever/1", max + 1, fmt.Sprintf("/redirect-forever/%d", max+1), storage.ClassError},
				{"one hop too many", fmt.Sprintf("/chain/%d", end-max-1), max + 1, fmt.Sprintf("/chain/%d", end-1), storage.ClassError},
				{"exactly max_redirects", fmt.Sprintf("/chain/%d", end-max), max + 1, fmt.Sprintf("/chain/%d", end), storage.ClassUnique},
			} {
				before := hs.Handler().Hits("/chain/") + hs.Handler().Hits("/redirect-forever/")
				c := runEngine(t, cfg, filepath.Join(t.TempDir(), "data"), []string{hs.URL + tc.seed}, 30*time.Second)
				n := hs.Handler().Hits("/chain/") + hs.Handler().Hits("/redirect-forever/") - before
				if n != tc.requests {
					t.Errorf("%s: %d requests, want %d", tc.name, n, tc.requests)
				}
				p := c.pages[hs.URL+tc.last]
				if p == nil || p.Class != tc.class {
					t.Errorf("%s: record of %s is %+v, want class %s", tc.name, tc.last, p, tc.class)
					continue
				}
				if tc.class == storage.ClassError && (p.ErrorClass != fetch.ClassRedirect || p.Status/100 != 3) {
					t.Errorf("%s: %s recorded as %s/%s status %d (%s), want a 3xx of error class %q",
						tc.name, tc.last, p.Class, p.ErrorClass, p.Status, p.Error, fetch.ClassRedirect)
				}
			}
		})
	}
}
