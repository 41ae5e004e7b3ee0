package crawl_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/mirror"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// treeGuide is a guide with shared pages at its top and subtrees below:
// the two sides of a mirror pair serve it byte for byte (relative links),
// except the paths each lacks (404), which their pages go on linking to.
type treeGuide struct {
	bodies map[string]string // relative path -> body
	titles map[string]string // relative path -> title
	dirs   []string          // the subtrees, "t0/", "t1/", ...
}

// newTreeGuide builds a guide of shared pages s0..s(k-1) and subtrees of m
// pages each, under an index page linked from the guide's index; every
// subtree page is linked from a shared page, and links to two of its
// siblings and back to a shared page.
func newTreeGuide(rng *rand.Rand, subtrees, m int) treeGuide {
	g := treeGuide{bodies: map[string]string{}, titles: map[string]string{}}
	k := 8 + rng.IntN(5)
	shared := make([][]string, k)
	for i := range k {
		shared[i] = []string{"./", fmt.Sprintf("s%d.html", (i+1)%k), fmt.Sprintf("s%d.html", rng.IntN(k))}
	}
	var index []string
	for i := range k {
		index = append(index, fmt.Sprintf("s%d.html", i))
	}
	for t := range subtrees {
		dir := fmt.Sprintf("t%d/", t)
		g.dirs = append(g.dirs, dir)
		index = append(index, dir)
		var pages []string
		for j := range m {
			pages = append(pages, fmt.Sprintf("p%d.html", j))
		}
		g.add(dir, "guide "+dir+" index", append([]string{"../"}, pages...)...)
		for j, p := range pages {
			shared[j%k] = append(shared[j%k], dir+p)
			g.add(dir+p, fmt.Sprintf("guide %sp%d", dir, j), pages[rng.IntN(m)], pages[(j+1)%m], fmt.Sprintf("../s%d.html", rng.IntN(k)))
		}
	}
	g.add("", "guide index", index...)
	for i := range k {
		g.add(fmt.Sprintf("s%d.html", i), fmt.Sprintf("guide s%d", i), shared[i]...)
	}
	return g
}

func (g treeGuide) add(rel, title string, links ...string) {
	g.bodies[rel] = htmlPage(title, "", links...)
	g.titles[rel] = title
}

// site serves the guide under prefix without the paths lacked says.
func (g treeGuide) site(prefix string, lacked func(rel string) bool) *site {
	s := &site{Pages: map[string]page{}}
	for rel, body := range g.bodies {
		if !lacked(rel) {
			s.Pages[prefix+rel] = page{Body: body}
		}
	}
	return s
}

// bothIndexesFirst holds every request of two sides but robots.txt and
// the sides' index pages until both sides have been asked for some other
// page. A side is asked for another page only once its index is committed
// (its links are queued then), and the second index committed is recorded
// as the first's duplicate, which proposes the mirror candidate: every
// other page of either side is answered, and so committed, once the
// candidate exists.
type bothIndexesFirst struct {
	mu    sync.Mutex
	asked [2]bool
	open  chan struct{}
}

func (b *bothIndexesFirst) wrap(side int, index string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" && r.URL.Path != index {
			b.mu.Lock()
			if !b.asked[side] {
				b.asked[side] = true
				if b.asked[1-side] {
					close(b.open)
				}
			}
			b.mu.Unlock()
			select {
			case <-b.open:
			case <-r.Context().Done():
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// subtreeCrawl crawls a pair of sides serving g under /guide/ and
// /mirror/guide/, lacking what lacks[0] and lacks[1] say, and checks that no
// page either side serves is lost. It returns the result, the hits and the
// two servers' addresses.
func subtreeCrawl(t *testing.T, g treeGuide, ips [2]string, lacks [2]func(string) bool) (crawlResult, *hitLog, [2]string) {
	prefixes := [2]string{"/guide/", "/mirror/guide/"}
	b := &bothIndexesFirst{open: make(chan struct{})}
	log := &hitLog{}
	var bases [2]string
	var seeds []string
	for i := range 2 {
		s := startServer(t, ips[i], b.wrap(i, prefixes[i], g.site(prefixes[i], lacks[i]).handler()), log)
		bases[i] = s.Base(ips[i])
		seeds = append(seeds, bases[i]+prefixes[i])
	}
	const workers = 4
	res := runCrawl(t, crawlConfig{Mirror: true, Workers: workers, NoSitemaps: true}, seeds...)
	var mirrors []string
	for _, m := range res.Mirrors {
		mirrors = append(mirrors, fmt.Sprintf("%s%s -> %s%s", m.Host, m.Prefix, m.MirrorOf, m.OriginalPrefix))
	}
	t.Logf("%d pages, %d requests; mirrors %v; missing subtrees %+v", len(g.bodies), res.Requests, mirrors, res.Subtrees)
	// No content lost: every page one side or the other serves is kept
	// as unique somewhere.
	kept := map[string]bool{}
	for _, p := range res.Pages {
		if p.Class == storage.ClassUnique {
			kept[p.Title] = true
		}
	}
	for rel, title := range g.titles {
		if lacks[0](rel) && lacks[1](rel) {
			continue
		}
		if !kept[title] {
			t.Errorf("%s (%q), served by a side, was kept nowhere", rel, title)
		}
	}
	return res, log, bases
}

// TestMissingSubtreeStopsRequests: each side of a mirror pair lacks a whole
// subtree the other serves (so the original lacks one, and the mirror the
// other, whichever the direction): the pages of both subtrees are fetched
// from the side that has them, and the requests under a subtree on the
// side that lacks it stop at the rule's bound: n =
// mirror.SubtreeEvidence(alpha, q0) answers 404 decide the rule, and a
// request passes the rule's check at lease time before the n-th answer is
// committed only if it is held by one of the other workers (a worker holds
// one request from its lease to its commit): at most n + workers - 1. The
// subtrees are 3n pages and more, so a crawl without the rule requests
// them all on the original. A fourth subtree both sides lack must not
// make the two sides skip each other's URLs for ever (the crawl ends).
// Both sides in both address orders. Seeded (HORSESHOE_SEED).
func TestMissingSubtreeStopsRequests(t *testing.T) {
	seed := testtools.Seed(t, "./crawl/")
	rng := rand.New(rand.NewPCG(seed, 31))
	n := mirror.SubtreeEvidence(mirror.DefaultSubtreeErrorRate, mirror.DefaultDeadLinkRate)
	const workers = 4
	for _, swap := range []bool{false, true} {
		g := newTreeGuide(rng, 4, 3*n+rng.IntN(n))
		t.Run(fmt.Sprintf("swap=%v", swap), func(t *testing.T) {
			ips := [2]string{"127.0.0.193", "127.0.0.194"}
			if swap {
				ips[0], ips[1] = ips[1], ips[0]
			}
			// Side 0 lacks t0/, side 1 lacks t1/; both serve t2/ and
			// both lack t3/ (links dead on both sides: each side's URLs
			// there are skipped for the other's, which must not skip
			// them back for ever).
			lacks := [2]func(string) bool{
				func(rel string) bool { return strings.HasPrefix(rel, g.dirs[0]) || strings.HasPrefix(rel, g.dirs[3]) },
				func(rel string) bool { return strings.HasPrefix(rel, g.dirs[1]) || strings.HasPrefix(rel, g.dirs[3]) },
			}
			res, log, bases := subtreeCrawl(t, g, ips, lacks)
			prefixes := [2]string{"/guide/", "/mirror/guide/"}
			decided := 0
			for side := range 2 {
				under := prefixes[side] + g.dirs[side]
				var requested []string
				for _, h := range log.byIP(ips[side]) {
					if strings.HasPrefix(h.Path, under) {
						requested = append(requested, h.Path)
					}
				}
				t.Logf("side %s lacks %s: %d requests under it %v", ips[side], under, len(requested), requested)
				if len(requested) > n+workers-1 {
					t.Errorf("%d requests under %s%s, which answers 404 throughout: the rule's bound is n + workers - 1 = %d",
						len(requested), bases[side], under, n+workers-1)
				}
				for _, r := range res.Subtrees {
					if strings.HasPrefix(r.Prefix, bases[side]+under) && r.Prefix != bases[side]+under {
						t.Errorf("rule %s inside the missing subtree %s%s: the shortest prefix decides first", r.Prefix, bases[side], under)
					}
					if r.Prefix == bases[side]+under {
						decided++
						if r.Lacks < n || r.Needed != n || r.ErrorRate != mirror.DefaultSubtreeErrorRate || r.Withdrawn {
							t.Errorf("rule %+v: want at least %d lacks, needed %d, error rate %g, standing", r, n, n, mirror.DefaultSubtreeErrorRate)
						}
					}
				}
				if len(requested) >= n+workers-1 && decided == 0 {
					t.Errorf("%d requests under %s%s and no rule reported", len(requested), bases[side], under)
				}
			}
			// Only the missing subtrees are learned.
			for _, r := range res.Subtrees {
				if r.Prefix != bases[0]+prefixes[0]+g.dirs[0] && r.Prefix != bases[1]+prefixes[1]+g.dirs[1] &&
					r.Prefix != bases[0]+prefixes[0]+g.dirs[3] && r.Prefix != bases[1]+prefixes[1]+g.dirs[3] {
					t.Errorf("rule %+v is no missing subtree", r)
				}
			}
			if decided == 0 {
				t.Errorf("no missing subtree learned")
			}
			if !strings.Contains(res.Text, "MISSING SUBTREES") {
				t.Errorf("the text report has no MISSING SUBTREES section")
			}
		})
	}
}

// TestScatteredLacksLearnNoSubtree: a partial mirror whose missing pages are
// scattered, fewer than the rule's n in any directory, never has a subtree
// decided missing (the rule needs n answers 404 under a directory: no
// order of requests gives them), and loses no page.
func TestScatteredLacksLearnNoSubtree(t *testing.T) {
	seed := testtools.Seed(t, "./crawl/")
	rng := rand.New(rand.NewPCG(seed, 32))
	n := mirror.SubtreeEvidence(mirror.DefaultSubtreeErrorRate, mirror.DefaultDeadLinkRate)
	g := newTreeGuide(rng, 3, 2*n)
	// Up to n - 1 pages of each subtree (its index included) lacked on
	// side 0, up to n - 1 shared pages on side 1.
	lacked := [2]map[string]bool{{}, {}}
	for _, dir := range g.dirs {
		for range n - 1 {
			j := rng.IntN(2*n + 1)
			rel := dir + fmt.Sprintf("p%d.html", j)
			if j == 2*n {
				rel = dir
			}
			lacked[0][rel] = true
		}
	}
	for range n - 1 {
		lacked[1][fmt.Sprintf("s%d.html", 1+rng.IntN(7))] = true
	}
	t.Logf("lacked: side 0 %v, side 1 %v", lacked[0], lacked[1])
	res, _, _ := subtreeCrawl(t, g, [2]string{"127.0.0.195", "127.0.0.196"},
		[2]func(string) bool{func(rel string) bool { return lacked[0][rel] }, func(rel string) bool { return lacked[1][rel] }})
	if len(res.Subtrees) > 0 {
		t.Errorf("scattered 404s decided missing subtrees: %+v", res.Subtrees)
	}
	for u, p := range res.Skipped {
		if p.Method == "subtree" {
			t.Errorf("%s skipped as under a missing subtree", u)
		}
	}
}
