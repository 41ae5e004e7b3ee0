package crawl_test

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// partialMirror is the demo's family (testdata/demo): a guide of n pages
// under /guide/ on the complete side, and its copy under /mirror/guide/ on
// the partial side, byte for byte, except that the copy lacks some pages
// (404) while its pages still link to them.
type partialMirror struct {
	names  []string        // the guide's pages
	lacked map[string]bool // the pages the partial side lacks
	bodies map[string]string
}

func newPartialMirror(rng *rand.Rand) partialMirror {
	n := 16 + rng.IntN(15)
	pm := partialMirror{lacked: map[string]bool{}, bodies: map[string]string{}}
	for i := range n {
		pm.names = append(pm.names, fmt.Sprintf("page%d.html", i))
	}
	for range 1 + rng.IntN(max(1, n/5)) {
		pm.lacked[pm.names[rng.IntN(n)]] = true
	}
	pm.bodies[""] = htmlPage("guide index", "", pm.names...)
	for _, name := range pm.names {
		links := []string{"./"}
		for range 3 {
			links = append(links, pm.names[rng.IntN(n)])
		}
		pm.bodies[name] = htmlPage("guide "+strings.TrimSuffix(name, ".html"), "", links...)
	}
	return pm
}

// site serves the guide under prefix, without the lacked pages when partial.
func (pm partialMirror) site(prefix string, partial bool) *site {
	s := &site{Pages: map[string]page{}}
	for name, body := range pm.bodies {
		if partial && pm.lacked[name] {
			continue
		}
		s.Pages[prefix+name] = page{Body: body}
	}
	return s
}

// gated answers nothing but robots.txt until open is closed.
func gated(h http.Handler, open <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			select {
			case <-open:
			case <-r.Context().Done():
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// opener closes its channel at the first request for a page of the guide
// (not its index): the crawl follows the index's links once the index is
// committed.
func opener(h http.Handler, open chan struct{}) http.Handler {
	var once sync.Once
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/page") {
			once.Do(func() { close(open) })
		}
		h.ServeHTTP(w, r)
	})
}

// jittered sleeps 0-4 ms before each answer, a function of the seed, the
// side and the path: the same request waits the same on a replay, and
// concurrent handlers share no state (one rand.Rand behind two handlers'
// locks was a data race under -race).
func jittered(h http.Handler, seed uint64, side string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := fnv.New64a()
		binary.Write(f, binary.LittleEndian, seed)
		io.WriteString(f, side+" "+r.URL.Path)
		time.Sleep(time.Duration(f.Sum64()%5) * time.Millisecond)
		h.ServeHTTP(w, r)
	})
}

// TestMirrorDirectionEveryOrder: a partial mirror (the demo's family, on
// either host) is reported as the mirror of the complete side, whichever
// side the crawl meets first: the complete side first, the partial side
// first, or both at once with seeded latencies; and no page's content is
// lost. Before the direction came from evidence (mirror.Detector.Lack), the
// side met first was the original: the partial side, in the partial-first
// order. Seeded (HORSESHOE_SEED).
func TestMirrorDirectionEveryOrder(t *testing.T) {
	seed := testtools.Seed(t, "./crawl/")
	rng := rand.New(rand.NewPCG(seed, 1))
	orders := []string{"complete_first", "partial_first", "interleaved"}
	for _, order := range orders {
		for _, partialOnFirstIP := range []bool{false, true} {
			pm := newPartialMirror(rng)
			jitterSeed := rng.Uint64()
			name := fmt.Sprintf("%s/partial_on_%d", order, map[bool]int{true: 91, false: 92}[partialOnFirstIP])
			t.Run(name, func(t *testing.T) {
				checkMirrorDirection(t, pm, order, partialOnFirstIP, jitterSeed)
			})
		}
	}
}

func checkMirrorDirection(t *testing.T, pm partialMirror, order string, partialOnFirstIP bool, jitterSeed uint64) {
	completeIP, partialIP := "127.0.0.91", "127.0.0.92"
	if partialOnFirstIP {
		completeIP, partialIP = partialIP, completeIP
	}
	complete, partial := pm.site("/guide/", false).handler(), pm.site("/mirror/guide/", true).handler()
	first := make(chan struct{})
	switch order {
	case "complete_first":
		complete, partial = opener(complete, first), gated(partial, first)
	case "partial_first":
		partial, complete = opener(partial, first), gated(complete, first)
	default:
		complete, partial = jittered(complete, jitterSeed, "complete"), jittered(partial, jitterSeed, "partial")
	}
	log := &hitLog{}
	cs := startServer(t, completeIP, complete, log)
	ps := startServer(t, partialIP, partial, log)
	seeds := []string{cs.Base(completeIP) + "/guide/", ps.Base(partialIP) + "/mirror/guide/"}
	if order == "partial_first" {
		seeds[0], seeds[1] = seeds[1], seeds[0]
	}
	res := runCrawl(t, crawlConfig{Mirror: true, Workers: 4}, seeds...)

	var lacked []string
	for name := range pm.lacked {
		lacked = append(lacked, name)
	}
	var mirrors []string
	for _, m := range res.Mirrors {
		mirrors = append(mirrors, fmt.Sprintf("%s%s -> %s%s (%s)", m.Host, m.Prefix, m.MirrorOf, m.OriginalPrefix, m.Direction()))
	}
	t.Logf("%d pages, the partial side lacks %v; mirrors %v; requests %d", len(pm.names), lacked, mirrors, res.Requests)
	if len(res.Mirrors) != 1 {
		t.Fatalf("mirrors %v, want one: %s/mirror/guide/ -> %s/guide/", mirrors, partialIP, completeIP)
	}
	m := res.Mirrors[0]
	// The mapping may be learnt as /mirror/ -> / (the common tail left out).
	rest, ok1 := strings.CutPrefix("/mirror/guide/", m.Prefix)
	rest2, ok2 := strings.CutPrefix("/guide/", m.OriginalPrefix)
	if m.Host != ps.HostPort(partialIP) || m.MirrorOf != cs.HostPort(completeIP) || !ok1 || !ok2 || rest != rest2 {
		t.Errorf("mirror %v, want %s/mirror/guide/ -> %s/guide/ (the complete side is the original)", mirrors, ps.HostPort(partialIP), cs.HostPort(completeIP))
	}
	if m.LacksOriginal > 0 && m.Swaps == 0 && !m.ByLacks {
		t.Errorf("the original lacks %d paths and the direction was not chosen by lacks", m.LacksOriginal)
	}
	// No content lost: every page of the guide is kept as unique on one
	// side or the other.
	kept := map[string]bool{}
	for _, p := range res.Pages {
		if p.Class == storage.ClassUnique {
			kept[p.Title] = true
		}
	}
	for _, name := range pm.names {
		if title := "guide " + strings.TrimSuffix(name, ".html"); !kept[title] {
			t.Errorf("%s (%q) was kept nowhere", name, title)
		}
	}
}
