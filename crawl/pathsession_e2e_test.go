//go:build e2e

package crawl_test

import (
	"fmt"
	"html"
	"maps"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/hostile"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestPathSessionShops crawls each path session shop of internal/hostile (issue 27):
// a fresh session id in a path segment on every response ("/(S(id))/a",
// "/(X(1)S(id))/a", "/sess/id/a"), each aisle with a text of its own. The crawl must
// end by itself, far below the max_pages backstop, having fetched every aisle and
// kept each text as one unique page, and its report must name the learned segment.
//
// The bound is the rule's (frontier/segments.go): each page committed under the
// segment shows one new id in its links, so the rule is decided when SegMinValues
// pages are committed; their links (fan-out 3) are all the session URLs ever queued;
// then each real page is fetched once more under the rule's value. With robots.txt
// and the seed: 2 + 3 x SegMinValues + real pages.
func TestPathSessionShops(t *testing.T) {
	for i, v := range hostile.PathSessionVariants() {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			shop := hostile.NewSessionShop(v)
			srv := startServer(t, fmt.Sprintf("127.0.0.%d", 201+i), shop, &hitLog{})
			cfg := configs.Default()
			cfg.Crawl.Workers = 4
			cfg.Crawl.MaxDepth = 50
			// A backstop far above the bound, so that a crawl that does
			// not stop fails the bound below, not the time limit.
			cfg.Crawl.MaxPages = 1000
			cfg.Politeness.Delay = 0
			dataDir := filepath.Join(t.TempDir(), "data")
			c := runEngine(t, cfg, dataDir, []string{srv.Base(srv.IP) + "/"}, 3*time.Minute)

			real := shop.RealPages()
			n := shop.Requests()
			dups := 0
			for _, p := range c.pages {
				if p.Class == storage.ClassExact {
					dups++
				}
			}
			bound := 2 + 3*frontier.DefaultSegMinValues + len(real)
			t.Logf("%s: %d requests (bound %d), %d records, %d exact duplicates, %s", v, n, bound, len(c.pages), dups, c.elapsed.Round(time.Millisecond))
			if n > bound {
				t.Errorf("%d requests, want at most %d (2 + 3 x %d values + %d real pages)", n, bound, frontier.DefaultSegMinValues, len(real))
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

			want := "/*/"
			if v == hostile.SessionSegment {
				want = "/sess/*/"
			}
			params := reportParams(t, dataDir)
			if len(params) != 1 || params[0].Param != want || params[0].Host != srv.HostPort(srv.IP) ||
				params[0].Value == "" || params[0].Withdrawn || len(params[0].Examples) == 0 {
				t.Fatalf("learned %+v, want one standing rule %s with its value and evidence", params, want)
			}
			for _, e := range params[0].Examples {
				if e.URL == e.Other || !strings.Contains(e.URL, strings.TrimSuffix(want, "*/")) {
					t.Errorf("evidence %+v does not show two values of %s", e, want)
				}
			}

			// A resumed crawl keeps the rule: a seed under a new session id is
			// the real page already fetched under the rule's value.
			fresh := map[hostile.SessionVariant]string{hostile.SessionASPNET: "/(S(abcdefghijklmnopqrstuvwx))/b",
				hostile.SessionASPNETX: "/(X(1)S(abcdefghijklmnopqrstuvwx))/b", hostile.SessionSegment: "/sess/0123456789abcdef0123456789abcdef/b"}[v]
			before := shop.Hits()
			again := runEngine(t, cfg, dataDir, []string{srv.Base(srv.IP) + "/", srv.Base(srv.IP) + fresh}, 3*time.Minute)
			if after := shop.Hits(); !maps.Equal(before, after) {
				t.Errorf("resumed crawl fetched pages again: %v, then %v", before, after)
			}
			if _, ok := again.pages[srv.Base(srv.IP)+fresh]; ok {
				t.Errorf("resumed crawl recorded the seed %s with its session id", fresh)
			}
		})
	}
}

// versionSite serves documentation in version directories, /docs/<version>/<page>,
// generated from a seed: some pages the same text in every version, the others a
// text of their own per version. Each page links to every page of its version and
// to the same page of every other version (a version switcher); / links to each
// version's index.
type versionSite struct {
	versions []string
	pages    int          // per version: "" (the index), "p1", ...
	shared   map[int]bool // pages whose text is the same in every version

	mu   sync.Mutex
	hits map[string]int // by path
}

func newVersionSite(rng *rand.Rand, tokens bool) *versionSite {
	k := 3 + rng.IntN(frontier.DefaultSegMinValues-3) // a handful: fewer than the rule's count
	s := &versionSite{pages: 4 + rng.IntN(6), shared: map[int]bool{}, hits: map[string]int{}}
	for i := range k {
		if tokens {
			// Named like session tokens (build ids): only the count
			// of values keeps them from the rule.
			s.versions = append(s.versions, fmt.Sprintf("b%015x%016x", rng.Uint64N(1<<60), rng.Uint64()))
		} else {
			s.versions = append(s.versions, fmt.Sprintf("v10.%d.%d", i/4, i%4))
		}
	}
	// At least three pages the same in every version (evidence on three
	// skeletons), at least one that differs.
	for p := range s.pages - 1 {
		if p < 3 || rng.IntN(2) == 0 {
			s.shared[p] = true
		}
	}
	return s
}

func (s *versionSite) pageName(p int) string {
	if p == 0 {
		return ""
	}
	return fmt.Sprintf("p%d", p)
}

func (s *versionSite) path(v, p int) string { return "/docs/" + s.versions[v] + "/" + s.pageName(p) }

// Paths returns every page's path.
func (s *versionSite) Paths() []string {
	var out []string
	for v := range s.versions {
		for p := range s.pages {
			out = append(out, s.path(v, p))
		}
	}
	return out
}

func (s *versionSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.Path]++
	s.mu.Unlock()
	var links []string
	var text string
	if r.URL.Path == "/" {
		for v := range s.versions {
			links = append(links, s.path(v, 0))
		}
		text = "Documentation of every version of the tool, pick one."
	} else {
		v, p := -1, -1
		for i := range s.versions {
			for j := range s.pages {
				if s.path(i, j) == r.URL.Path {
					v, p = i, j
				}
			}
		}
		if v < 0 {
			http.NotFound(w, r)
			return
		}
		for j := range s.pages {
			links = append(links, s.path(v, j))
		}
		for i := range s.versions {
			links = append(links, s.path(i, p))
		}
		owner := fmt.Sprintf("page %d", p)
		if !s.shared[p] {
			owner += " of version " + s.versions[v]
		}
		h := uint64(0)
		for _, c := range owner {
			h = h*31 + uint64(c)
		}
		words := []string{"install", "configure", "module", "option", "default", "value", "command", "package", "release", "upgrade"}
		rng := rand.New(rand.NewPCG(h, 9))
		var b strings.Builder
		fmt.Fprintf(&b, "This is the documentation of %s.", owner)
		for range 60 {
			fmt.Fprintf(&b, " %s %d", words[rng.IntN(len(words))], rng.IntN(1000))
		}
		text = b.String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><html><head><title>Docs</title></head><body><p>%s</p><ul>\n", html.EscapeString(text))
	for _, l := range links {
		fmt.Fprintf(&b, "<li><a href=\"%s\">link</a></li>\n", html.EscapeString(l))
	}
	b.WriteString("</ul></body></html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, b.String())
}

// TestVersionDirectoriesNotLearned: a documentation site with a handful of version
// directories (3 to SegMinValues-1, from the seed), some pages the same text in
// every version, is crawled whole: no path segment is learned, and every page of
// every version is fetched. Versions named "v10.1.2" are no candidates at all;
// versions named like session tokens are candidates whose position never shows
// enough values.
func TestVersionDirectoriesNotLearned(t *testing.T) {
	seed := testtools.Seed(t, "./crawl/")
	for i, tokens := range []bool{false, true} {
		site := newVersionSite(rand.New(rand.NewPCG(seed, uint64(i))), tokens)
		t.Run(fmt.Sprintf("tokens=%v", tokens), func(t *testing.T) {
			t.Parallel()
			srv := startServer(t, fmt.Sprintf("127.0.0.%d", 211+i), site, &hitLog{})
			t.Logf("%d versions of %d pages, %d the same in every version", len(site.versions), site.pages, len(site.shared))
			cfg := configs.Default()
			cfg.Crawl.Workers = 4
			cfg.Crawl.MaxDepth = 50
			cfg.Politeness.Delay = 0
			dataDir := filepath.Join(t.TempDir(), "data")
			runEngine(t, cfg, dataDir, []string{srv.Base(srv.IP) + "/"}, 3*time.Minute)
			for _, p := range reportParams(t, dataDir) {
				t.Errorf("learned %+v on a version site", p)
			}
			site.mu.Lock()
			defer site.mu.Unlock()
			for _, p := range site.Paths() {
				if site.hits[p] == 0 {
					t.Errorf("%s never fetched", p)
				}
			}
		})
	}
}
