package crawl_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// recrawlSite is a small site on disk: pages of generated prose (600 words,
// enough for a new date to stay within the near-duplicate threshold) with a
// footer, served by testweb (ETag and Last-Modified from the file, 304 for a
// matching If-None-Match or If-Modified-Since).
type recrawlSite struct {
	dir string
	r   *rand.Rand
}

func (s *recrawlSite) words(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("w%d", int(3000*s.r.Float64()*s.r.Float64()))
	}
	return strings.Join(ws, " ")
}

// write writes page name with its prose, footer and links, dated mod.
func (s *recrawlSite) write(t *testing.T, name, prose, footer string, links []string, mod time.Time) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><html><head><title>%s</title></head><body><p>%s</p><ul>", name, prose)
	for _, l := range links {
		fmt.Fprintf(&b, "<li><a href=%q>%s</a></li>", l, l)
	}
	fmt.Fprintf(&b, "</ul><footer>%s</footer></body></html>", footer)
	path := filepath.Join(s.dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// condLog records the conditional headers of every request, by path.
type condLog struct {
	mu   sync.Mutex
	reqs []condReq
}

type condReq struct{ path, inm, ims string }

func (l *condLog) wrap(_ string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.reqs = append(l.reqs, condReq{r.URL.Path, r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since")})
		l.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (l *condLog) take() []condReq {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.reqs
	l.reqs = nil
	return r
}

// crawlDir runs one crawl (or, with recrawl, a recrawl) over the store in
// dir, wired by crawl.Build, to the end.
func crawlDir(t *testing.T, dir string, recrawl bool, seeds ...string) {
	t.Helper()
	crawlStore(t, dir, recrawl, 0, seeds...)
}

// crawlDirWorkers recrawls with the given number of workers.
func crawlDirWorkers(t *testing.T, dir string, workers int, seeds ...string) {
	t.Helper()
	crawlStore(t, dir, true, workers, seeds...)
}

func crawlStore(t *testing.T, dir string, recrawl bool, workers int, seeds ...string) {
	t.Helper()
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := crawlConfig{Workers: workers}.withDefaults().config()
	cfg.Storage.KeepRaw = true
	c, err := crawl.Build(cfg, db, crawl.Env{Seeds: seeds}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Engine.Restore(); err != nil {
		t.Fatal(err)
	}
	if recrawl {
		if _, _, err := c.Engine.Recrawl(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Engine.Seed(seeds); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Engine.Run(ctx, ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRecrawlFailedAndContinued: a recrawl that stops before its first
// request is continued by the next --recrawl (same round, nothing queued
// twice, one request per page); a revisit answered 500 is failed and keeps
// the stored version.
func TestRecrawlFailedAndContinued(t *testing.T) {
	root := t.TempDir()
	const ip = "127.0.0.2"
	s := &recrawlSite{dir: filepath.Join(root, ip), r: rand.New(rand.NewPCG(5, 6))}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	s.write(t, "index.html", "The index.", "footer", []string{"a.html", "broken.html"}, t0)
	s.write(t, "a.html", s.words(300), "footer", nil, t0)
	s.write(t, "broken.html", s.words(300), "footer", nil, t0)
	var failing sync.Map
	log := &condLog{}
	web, err := loopweb.Start(root, loopweb.Options{Handler: func(ip string, next http.Handler) http.Handler {
		return log.wrap(ip, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := failing.Load(r.URL.Path); ok {
				http.Error(w, "boom", http.StatusInternalServerError)
				return
			}
			next.ServeHTTP(w, r)
		}))
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	seed := web.URL(ip, "/index.html")
	data := t.TempDir()
	crawlDir(t, data, false, seed)
	log.take()
	failing.Store("/broken.html", true)

	// A recrawl queued, then stopped before any request.
	db, err := storage.Open(data, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := crawlConfig{}.withDefaults().config()
	c, err := crawl.Build(cfg, db, crawl.Env{Seeds: []string{seed}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if round, n, err := c.Engine.Recrawl(); err != nil || round != 1 || n != 3 {
		t.Fatalf("Recrawl = %d, %d, %v; want round 1, 3 queued", round, n, err)
	}
	c.Close()
	db.Close()

	crawlDir(t, data, true, seed) // continues round 1
	reqs := log.take()
	if len(reqs) != 3 {
		t.Errorf("the continued recrawl made %d requests, want 3 (one a page): %v", len(reqs), reqs)
	}
	db, rd := openReport(t, data)
	if ch := rd.Changes; ch == nil || ch.Round != 1 || ch.ByChange[report.ChangeFailed] != 1 || ch.ByChange[report.ChangeNone] != 2 {
		t.Errorf("changes %+v", rd.Changes)
	}
	broken := recordOf(t, db, web.URL(ip, "/broken.html"))
	if broken.Class != storage.ClassUnique || broken.Status != 200 || broken.Revisit == nil ||
		broken.Revisit.Change != storage.ChangeFailed || broken.Revisit.Status != 500 {
		t.Errorf("broken.html after a failed revisit: class %s status %d revisit %+v", broken.Class, broken.Status, broken.Revisit)
	}
	if text, err := db.Text(broken.ID); err != nil || len(strings.Fields(text)) < 300 {
		t.Errorf("broken.html lost its stored text: %v", err)
	}
}

// TestRecrawlOrder: with one worker, a recrawl requests first the page whose
// sitemap lastmod is later than its stored version, then the page that
// changed at the last recrawl, then the others, oldest version first; a page
// whose lastmod says it did not change comes last.
func TestRecrawlOrder(t *testing.T) {
	root := t.TempDir()
	const ip = "127.0.0.2"
	s := &recrawlSite{dir: filepath.Join(root, ip), r: rand.New(rand.NewPCG(8, 9))}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	names := []string{"a.html", "b.html", "c.html", "d.html"}
	for _, n := range names {
		s.write(t, n, s.words(200), "footer", nil, t0)
	}
	s.write(t, "index.html", "The index.", "footer", names, t0)
	log := &condLog{}
	web, err := loopweb.Start(root, loopweb.Options{Handler: log.wrap})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	seed := web.URL(ip, "/index.html")
	data := t.TempDir()
	crawlDir(t, data, false, seed)
	// b changes before the first recrawl: its history says it changes.
	s.write(t, "b.html", s.words(200), "footer", nil, t0.Add(time.Minute))
	crawlDir(t, data, true, seed)
	log.take()

	// The sitemap says c changed after it was fetched and d did not.
	db, err := storage.Open(data, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *storage.Tx) error {
		if err := tx.PutEvidence("sitemap_url", web.URL(ip, "/c.html"), map[string]any{"lastmod": time.Now().Add(time.Hour)}); err != nil {
			return err
		}
		return tx.PutEvidence("sitemap_url", web.URL(ip, "/d.html"), map[string]any{"lastmod": t0.Add(-time.Hour)})
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	crawlDirWorkers(t, data, 1, seed)
	var order []string
	for _, r := range log.take() {
		order = append(order, strings.TrimPrefix(r.path, "/"))
	}
	if got := strings.Join(order, " "); !strings.HasPrefix(got, "c.html b.html") || !strings.HasSuffix(got, "d.html") || len(order) != 5 {
		t.Errorf("recrawl order %q: want c.html (sitemap), b.html (history) first and d.html (sitemap: unchanged) last", got)
	}
}

// TestRecrawlSitemap: a recrawl reads the site's sitemap again first (it is
// a sitemap, not a page revisit) and fetches what it now lists as new pages;
// the pages it listed before are revisited.
func TestRecrawlSitemap(t *testing.T) {
	root := t.TempDir()
	const ip = "127.0.0.2"
	s := &recrawlSite{dir: filepath.Join(root, ip), r: rand.New(rand.NewPCG(10, 11))}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, n := range []string{"a.html", "b.html", "c.html"} {
		s.write(t, n, s.words(200), "footer", nil, t0)
	}
	writeSitemap := func(names ...string) {
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for _, n := range names {
			fmt.Fprintf(&b, "<url><loc>BASE/%s</loc><lastmod>%s</lastmod></url>", n, t0.Format("2006-01-02"))
		}
		b.WriteString("</urlset>")
		if err := os.WriteFile(filepath.Join(s.dir, "sitemap.xml.tmpl"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeSitemap("a.html", "b.html")
	log := &condLog{}
	var web *loopweb.Web
	web, err := loopweb.Start(root, loopweb.Options{
		Robots: map[string]string{ip: "User-agent: *\nAllow: /\nSitemap: /sitemap.xml\n"},
		Handler: func(ip string, next http.Handler) http.Handler {
			return log.wrap(ip, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/sitemap.xml" { // the loc URLs need the port
					b, _ := os.ReadFile(filepath.Join(s.dir, "sitemap.xml.tmpl"))
					w.Header().Set("Content-Type", "application/xml")
					w.Write([]byte(strings.ReplaceAll(string(b), "BASE", web.BaseURL(ip))))
					return
				}
				next.ServeHTTP(w, r)
			}))
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	seed := web.URL(ip, "/a.html")
	data := t.TempDir()
	crawlDir(t, data, false, seed)
	log.take()
	writeSitemap("a.html", "b.html", "c.html") // c is reachable only through the sitemap
	crawlDirWorkers(t, data, 1, seed)
	var order []string
	for _, r := range log.take() {
		order = append(order, strings.TrimPrefix(r.path, "/"))
	}
	if len(order) != 4 || order[0] != "sitemap.xml" || !slices.Contains(order, "c.html") {
		t.Errorf("recrawl requests %v: want sitemap.xml first, then a, b and the new c", order)
	}
	_, rd := openReport(t, data)
	got := map[string]string{}
	for _, p := range rd.Pages {
		got[strings.TrimPrefix(p.URL, web.BaseURL(ip)+"/")] = p.Change
	}
	if got["a.html"] != report.ChangeNone || got["b.html"] != report.ChangeNone || got["c.html"] != report.ChangeNew || got["sitemap.xml"] != "" {
		t.Errorf("changes %v", got)
	}
}

func recordOf(t *testing.T, db *storage.DB, u string) *storage.Page {
	t.Helper()
	var found *storage.Page
	db.ForEachPage(func(p *storage.Page) error {
		if p.URL == u {
			found = p
		}
		return nil
	})
	if found == nil {
		t.Fatalf("no record of %s", u)
	}
	return found
}
