package crawl_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// A mirror whose pages all link to one another (every link a hub): each link
// is skipped once, samples are drawn only when they can be compared, and the
// mirror is decided after a few pages; the original is fetched in full.
func TestMirrorOfHubHeavySite(t *testing.T) {
	const n = 40
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("p%d.html", i))
	}
	mk := func() *site {
		s := &site{Pages: map[string]page{}}
		return s
	}
	orig, copySite := mk(), mk()
	for _, name := range names {
		body := htmlPage(strings.TrimSuffix(name, ".html"), "", names...)
		orig.Pages["/docs/"+name] = page{Body: body}
		copySite.Pages["/m/"+name] = page{Body: body}
	}
	index := htmlPage("index", "", names...)
	orig.Pages["/docs/"] = page{Body: index}
	copySite.Pages["/m/"] = page{Body: index}
	// The copy's seed is met second: the copy answers nothing until the
	// crawl follows a link of the original's index, which it does once that
	// page is committed. (A latency on the copy was not enough on a loaded
	// machine: the copy's index was committed first, and the original
	// became the mirror, as whichever side is met first does.)
	origFirst := make(chan struct{})
	var once sync.Once
	origH, copyH := orig.handler(), copySite.handler()
	log := &hitLog{}
	a := startServer(t, "127.0.0.41", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/docs/p") {
			once.Do(func() { close(origFirst) })
		}
		origH.ServeHTTP(w, r)
	}), log)
	b := startServer(t, "127.0.0.42", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			select {
			case <-origFirst:
			case <-r.Context().Done():
				return
			}
		}
		copyH.ServeHTTP(w, r)
	}), log)
	res := runCrawl(t, crawlConfig{Mirror: true, Workers: 4},
		a.Base("127.0.0.41")+"/docs/", b.Base("127.0.0.42")+"/m/")

	for _, name := range names {
		if p := res.page(t, a.Base("127.0.0.41")+"/docs/"+name); p.Status != 200 {
			t.Errorf("original %s: status %d", name, p.Status)
		}
	}
	if len(res.Mirrors) != 1 || !strings.HasSuffix(res.Mirrors[0].Host, ":"+b.Port) || res.Mirrors[0].Prefix != "/m/" {
		t.Fatalf("mirrors %+v, want 127.0.0.42/m/ -> 127.0.0.41/docs/", res.Mirrors)
	}
	m := res.Mirrors[0]
	copyHits := len(log.byIP("127.0.0.42"))
	t.Logf("copy: %d requests of %d pages; compared %d, matched %d, samples %d, saved %d, links %d/%d",
		copyHits, n+1, m.PathsCompared, m.PathsMatched, m.Samples, m.RequestsSaved, m.LinksMatched, m.LinksCompared)
	if m.RequestsSaved+copyHits < n/2 || m.RequestsSaved == 0 {
		t.Errorf("the decision saved %d requests (copy fetched %d of %d)", m.RequestsSaved, copyHits, n+1)
	}
	if m.LinksCompared == 0 || m.LinksMatched*2 < m.LinksCompared {
		t.Errorf("link evidence %d of %d", m.LinksMatched, m.LinksCompared)
	}
}

// A chain of two candidates (testweb.MirrorChain): a page skipped waiting on
// its counterpart, queued for it, which a decided mirror then skips at lease
// time. Before the fix it stayed skipped, waiting on a page never fetched
// and never failed, and its content was in no kept page.
func TestMirrorChainKeepsSkippedCounterpartsCopy(t *testing.T) {
	chain, web, seeds, err := testweb.StartMirrorChain(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Close() })
	res := runCrawl(t, crawlConfig{Mirror: true, Workers: 4}, seeds...)
	lost := web.URL(chain.Other.IP, chain.Lost)
	var mirrors []string
	for _, m := range res.Mirrors {
		mirrors = append(mirrors, fmt.Sprintf("%s%s -> %s%s (%d/%d)", m.Host, m.Prefix, m.MirrorOf, m.OriginalPrefix, m.PathsMatched, m.PathsCompared))
	}
	p := res.Pages[lost]
	if s := res.Skipped[lost]; s != nil {
		p = s
	}
	switch {
	case p == nil:
		t.Errorf("%s never reached; mirrors %v", lost, mirrors)
	case p.Class != storage.ClassUnique:
		cp := res.Pages[p.DuplicateOf]
		if s := res.Skipped[p.DuplicateOf]; s != nil {
			cp = s
		}
		class := storage.Class("none")
		if cp != nil {
			class = cp.Class
		}
		t.Errorf("%s recorded %s in favour of %s (%s there): its content is in no kept page; mirrors %v", lost, p.Class, p.DuplicateOf, class, mirrors)
	}
	// The chain was built: the counterpart was skipped at lease time.
	if mx := res.Pages[web.URL(chain.Mirror.IP, "/m/x.html")]; mx == nil || mx.Class != storage.ClassMirrorSkipped {
		t.Errorf("the mirror's x.html is %+v, want mirror_skipped (the chain this test is about); mirrors %v", mx, mirrors)
	}
	t.Logf("mirrors %v; requests %d", mirrors, res.Requests)
}
