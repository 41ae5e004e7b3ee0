package crawl_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/internal/hostile"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestPagesWithThousandsOfLinks: a page whose links are more than one Badger
// transaction holds (an HTML sitemap, a documentation index) is recorded with
// every link queued, instead of failing its commit and ending the crawl (and
// every resume) with "Txn is too big to fit into one request". The sizes vary:
// short links past the entry count limit, long links past the byte limit.
func TestPagesWithThousandsOfLinks(t *testing.T) {
	if testing.Short() {
		t.Skip("writes tens of thousands of queue entries")
	}
	hs, err := hostile.Start(hostile.Options{Addr: "127.0.0.74:0", RobotsAddr: "127.0.0.75:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	short := func(i int) string { return fmt.Sprintf("/many-links/t/%d", i) }
	long := func(l int) func(int) string {
		return func(i int) string {
			head := fmt.Sprintf("/long-links/t/%d/", i)
			return head + strings.Repeat("x", l-len(head))
		}
	}
	for _, tc := range []struct {
		path  string
		links int
		link  func(i int) string // the path of link i
	}{
		{"/many-links/7000", 7000, short},
		{"/many-links/25000", 25000, short},
		{"/long-links/3000/230", 3000, long(230)},
		{"/long-links/1200/2000", 1200, long(2000)},
	} {
		t.Run(tc.path, func(t *testing.T) {
			cfg := configs.Default()
			cfg.Crawl.Workers = 2
			cfg.Crawl.MaxDepth = 3
			cfg.Crawl.MaxPages = 3
			cfg.Politeness.Delay = 0
			dir := filepath.Join(t.TempDir(), "data")
			seed := hs.URL + tc.path
			c := runEngine(t, cfg, dir, []string{seed}, 60*time.Second)
			p := c.pages[seed]
			if p == nil || p.Class != storage.ClassUnique || p.Links != tc.links {
				t.Fatalf("seed page record %+v; want a unique page with %d links", p, tc.links)
			}
			db, err := storage.Open(dir, storage.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			hosts, err := db.QueueHosts()
			if err != nil {
				t.Fatal(err)
			}
			queued := 0
			for _, h := range hosts {
				queued += h.Count
			}
			// Every link is queued or was fetched within the page budget.
			fetched := len(c.pages) - 1
			if queued+fetched != tc.links {
				t.Errorf("%d links queued and %d fetched, want %d in all", queued, fetched, tc.links)
			}
			for _, i := range []int{0, tc.links / 2, tc.links - 1} {
				u := hs.URL + tc.link(i)
				if ok, err := db.Seen(u); err != nil || !ok {
					t.Errorf("link %d (%.80s...) not in the seen set (err %v)", i, u, err)
				}
			}
		})
	}
}
