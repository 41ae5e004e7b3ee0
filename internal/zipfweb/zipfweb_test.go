package zipfweb

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/parse"
)

// smallWeb is a web of the fast tier: a few thousand pages on a few hosts.
func smallWeb(t *testing.T, seed uint64) *Web {
	t.Helper()
	w, err := New(Options{Hosts: 7, Pages: 1003, Seed: seed, Port: 8123})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// parsed is one page of a web as the crawler reads it.
type parsed struct {
	h, j  int
	body  []byte
	doc   *parse.Document
	links []string // the a[href]s, as written
}

// parseAll parses every page of w.
func parseAll(t *testing.T, w *Web) [][]parsed {
	t.Helper()
	out := make([][]parsed, w.o.Hosts)
	for h := range w.o.Hosts {
		for j := range w.HostPages(h) {
			body, ok := w.Page(h, j)
			if !ok {
				t.Fatalf("no page %d of host %d", j, h)
			}
			u, _ := url.Parse("http://" + HostIP(h) + ":" + strconv.Itoa(w.o.Port) + PagePath(j))
			doc, err := parse.Parse(body, u, parse.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p := parsed{h: h, j: j, body: body, doc: doc}
			for _, s := range strings.Split(string(body), `href="`)[1:] {
				p.links = append(p.links, s[:strings.IndexByte(s, '"')])
			}
			out[h] = append(out[h], p)
		}
	}
	return out
}

func TestDeterministic(t *testing.T) {
	seed := testtools.Seed(t, "./internal/zipfweb/")
	a, b, c := smallWeb(t, seed), smallWeb(t, seed), smallWeb(t, seed+1)
	differ := 0
	for h := range a.o.Hosts {
		for j := range a.HostPages(h) {
			pa, _ := a.Page(h, j)
			pb, _ := b.Page(h, j)
			if !bytes.Equal(pa, pb) {
				t.Fatalf("seed %d: page %d of host %d differs between two webs of the same options", seed, j, h)
			}
			if pc, _ := c.Page(h, j); !bytes.Equal(pa, pc) {
				differ++
			}
		}
	}
	if differ == 0 {
		t.Errorf("seeds %d and %d give the same web", seed, seed+1)
	}
	if _, ok := a.Page(0, a.HostPages(0)); ok {
		t.Error("a page past the host's last is served")
	}
}

// TestStructure: word counts in [300, 1500], 10-40 distinct links a page,
// each to a page of the web; exactly round(N/10) exact copies (the bytes of
// an original of their host) and round(N/10) near copies, whose exact
// Jaccard (the crawler's shingles of the parsed text) is NearJaccard's, in
// [NearLo, NearHi]; every page reachable from the index pages through the
// links of originals alone.
func TestStructure(t *testing.T) {
	seed := testtools.Seed(t, "./internal/zipfweb/")
	w := smallWeb(t, seed)
	pages := parseAll(t, w)
	det, err := dedup.New(dedup.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got := dedup.DefaultOptions().ShingleWords; got != w.o.ShingleWords {
		t.Fatalf("the crawler's shingles have %d words, the web's near copies assume %d", got, w.o.ShingleWords)
	}
	kinds := map[Kind]int{}
	index := map[string][2]int{} // absolute URL -> (h, j)
	for h := range pages {
		for _, p := range pages[h] {
			index["http://"+HostIP(h)+":"+strconv.Itoa(w.o.Port)+PagePath(p.j)] = [2]int{h, p.j}
		}
	}
	for h := range pages {
		for _, p := range pages[h] {
			k := w.Kind(h, p.j)
			kinds[k]++
			if n := len(p.doc.Tokens); n < minWords || n > maxWords {
				t.Errorf("page %d of host %d: %d words", p.j, h, n)
			}
			if n := len(p.links); n < minLinks || n > maxLinks || n != len(p.doc.Links) {
				t.Errorf("page %d of host %d: %d links (%d distinct)", p.j, h, n, len(p.doc.Links))
			}
			for _, l := range p.doc.Links {
				if _, ok := index[l.URL]; !ok {
					t.Errorf("page %d of host %d links %s, no page of the web", p.j, h, l.URL)
				}
			}
			src := w.Source(h, p.j)
			switch {
			case k == Original && src != p.j:
				t.Errorf("original %d of host %d has source %d", p.j, h, src)
			case k != Original && w.Kind(h, src) != Original:
				t.Errorf("copy %d of host %d copies %d, a %s", p.j, h, src, w.Kind(h, src))
			case k == ExactCopy && !bytes.Equal(p.body, pages[h][src].body):
				t.Errorf("exact copy %d of host %d differs from its source %d", p.j, h, src)
			case k == NearCopy:
				a := det.Shingles(p.doc.Tokens, nil)
				b := det.Shingles(pages[h][src].doc.Tokens, nil)
				got, want := dedup.ExactJaccard(a, b), w.NearJaccard(h, p.j)
				if got != want || want < w.o.NearLo || want > w.o.NearHi {
					t.Errorf("near copy %d of host %d: exact Jaccard %v with its source %d, stated %v, in [%v, %v]",
						p.j, h, got, src, want, w.o.NearLo, w.o.NearHi)
				}
			}
		}
	}
	want := int(math.Round(float64(w.o.Pages) / 10))
	if kinds[ExactCopy] != want || kinds[NearCopy] != want {
		t.Errorf("%d exact and %d near copies of %d pages, want %d each", kinds[ExactCopy], kinds[NearCopy], w.o.Pages, want)
	}
	// Reachable through originals alone.
	reached := map[[2]int]bool{}
	var queue [][2]int
	for h := range pages {
		reached[[2]int{h, 0}] = true
		queue = append(queue, [2]int{h, 0})
	}
	for len(queue) > 0 {
		at := queue[0]
		queue = queue[1:]
		if w.Kind(at[0], at[1]) != Original {
			continue
		}
		for _, l := range pages[at[0]][at[1]].doc.Links {
			if to := index[l.URL]; !reached[to] {
				reached[to] = true
				queue = append(queue, to)
			}
		}
	}
	if len(reached) != w.o.Pages {
		t.Errorf("%d of %d pages reachable from the index pages through originals", len(reached), w.o.Pages)
	}
}

// TestServe: every host address answers its own pages, and 404 elsewhere.
func TestServe(t *testing.T) {
	seed := testtools.Seed(t, "./internal/zipfweb/")
	s, err := Listen(Options{Hosts: 3, Pages: 60, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for h, seedURL := range s.Web.Seeds() {
		for _, j := range []int{0, 1, s.Web.HostPages(h) - 1} {
			resp, err := http.Get(strings.TrimSuffix(seedURL, "/") + PagePath(j))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want, _ := s.Web.Page(h, j)
			if resp.StatusCode != 200 || !bytes.Equal(body, want) {
				t.Errorf("%s page %d: status %d, %d bytes, want page %d of host %d", seedURL, j, resp.StatusCode, len(body), j, h)
			}
		}
		for _, path := range []string{"/robots.txt", "/p/0.html", "/p/01.html", PagePath(s.Web.HostPages(h))} {
			resp, err := http.Get(strings.TrimSuffix(seedURL, "/") + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 404 {
				t.Errorf("%s%s: status %d, want 404", seedURL, path, resp.StatusCode)
			}
		}
	}
}

func TestHostIPDistinctLoopback(t *testing.T) {
	seen := map[string]bool{}
	for i := range maxHosts {
		ip := HostIP(i)
		a, err := netip.ParseAddr(ip)
		if err != nil || !a.IsLoopback() || seen[ip] {
			t.Fatalf("HostIP(%d) = %q: not a new loopback address (%v)", i, ip, err)
		}
		if b := a.As4(); b[3] == 0 || b[3] == 255 {
			t.Fatalf("HostIP(%d) = %s: last octet %d", i, ip, b[3])
		}
		seen[ip] = true
	}
}

// BenchmarkServe: pages/s of the server over loopback HTTP, keep-alive,
// GOMAXPROCS clients (a crawler's pages and sizes).
func BenchmarkServe(b *testing.B) {
	s, err := Listen(Options{Hosts: 250, Pages: 100000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	seeds := s.Web.Seeds()
	var next int64
	var bytesServed int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
		for pb.Next() {
			k := int(atomicAdd(&next))
			h := k % 250
			u := strings.TrimSuffix(seeds[h], "/") + PagePath((k/250)%s.Web.HostPages(h))
			resp, err := c.Get(u)
			if err != nil {
				b.Error(err)
				return
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			atomicAddN(&bytesServed, n)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
	b.ReportMetric(float64(bytesServed)/float64(b.N), "B/page")
}

// BenchmarkPage: one page generated and rendered, no HTTP.
func BenchmarkPage(b *testing.B) {
	w, err := New(Options{Hosts: 250, Pages: 100000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		w.Page(i%250, (i/250)%w.HostPages(i%250))
	}
}

func atomicAdd(p *int64) int64           { return atomic.AddInt64(p, 1) }
func atomicAddN(p *int64, n int64) int64 { return atomic.AddInt64(p, n) }
