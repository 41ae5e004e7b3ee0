package session_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/session"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// withStore opens the store in dir for fn and closes it after.
func withStore(t *testing.T, dir string, fn func(db *storage.DB) error) {
	t.Helper()
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := fn(db); err != nil {
		t.Fatal(err)
	}
}

func meta(t *testing.T, dir string, keys ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	withStore(t, dir, func(db *storage.DB) error {
		for _, k := range keys {
			b, err := db.GetMeta(k)
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return err
			}
			m[k] = string(b)
		}
		return nil
	})
	return m
}

// putPages records n fetched pages (and one that cost no request) and, when
// signed, a signature.
func putPages(t *testing.T, dir string, n int, signed bool) {
	t.Helper()
	withStore(t, dir, func(db *storage.DB) error {
		return db.Update(func(tx *storage.Tx) error {
			for i := 0; i < n; i++ {
				p := &storage.Page{ID: tx.NewID(), URL: "http://a.test/" + string(rune('a'+i)), Host: "a.test", Status: 200, Class: storage.ClassUnique}
				if err := tx.PutPage(p); err != nil {
					return err
				}
				if signed {
					if err := tx.PutSignature(p.ID, []byte{1}); err != nil {
						return err
					}
				}
			}
			return tx.PutPage(&storage.Page{ID: tx.NewID(), URL: "http://a.test/robots-only", Host: "a.test", Class: storage.ClassRobotsDisallowed})
		})
	})
}

// runCrawl starts a crawl on s and runs it to its end.
func runCrawl(t *testing.T, s *session.Session, cfg configs.Config) *crawl.Crawl {
	t.Helper()
	c, err := s.Start(cfg, crawl.Env{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a hang bound
	defer cancel()
	if err := c.Engine.Run(ctx, ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

func open(t *testing.T, dir string, cfg configs.Config, seeds ...string) *session.Session {
	t.Helper()
	s, err := session.Open(dir, cfg, seeds, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// A new crawl stores its seeds, start time, config and run mark; a resume
// without seeds takes the stored ones, and new seeds are merged after them.
func TestOpenStoresRunAndResumes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg := configs.Default()
	s := open(t, dir, cfg, "http://a.test/", "http://b.test/")
	if s.Resumed || !slices.Equal(s.Run, []string{"http://a.test/", "http://b.test/"}) {
		t.Errorf("new crawl: resumed %v, run %v", s.Resumed, s.Run)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	m := meta(t, dir, storage.MetaSeeds, storage.MetaStarted, storage.MetaConfig, storage.MetaURLTokens, storage.MetaRunOpen)
	if m[storage.MetaSeeds] != "http://a.test/\nhttp://b.test/" || m[storage.MetaStarted] == "" ||
		!strings.Contains(m[storage.MetaConfig], "shingle_words: 5") || m[storage.MetaURLTokens] != "in-place" || m[storage.MetaRunOpen] != "false" {
		t.Errorf("stored meta: %q", m)
	}
	started := m[storage.MetaStarted]

	s = open(t, dir, cfg)
	if !s.Resumed || !slices.Equal(s.Run, []string{"http://a.test/", "http://b.test/"}) {
		t.Errorf("resume: resumed %v, run %v", s.Resumed, s.Run)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, cfg, "http://c.test/", "http://a.test/")
	if s.Resumed || !slices.Equal(s.Run, []string{"http://c.test/", "http://a.test/"}) ||
		!slices.Equal(s.Seeds, []string{"http://a.test/", "http://b.test/", "http://c.test/"}) {
		t.Errorf("new seeds: resumed %v, run %v, seeds %v", s.Resumed, s.Run, s.Seeds)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if m := meta(t, dir, storage.MetaSeeds, storage.MetaStarted); m[storage.MetaSeeds] != "http://a.test/\nhttp://b.test/\nhttp://c.test/" || m[storage.MetaStarted] != started {
		t.Errorf("after new seeds: %q (started was %q)", m, started)
	}
}

// No seed and no crawl to resume is a usage error that leaves no store.
func TestOpenWithoutSeedsOrCrawl(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	_, err := session.Open(dir, configs.Default(), nil, nil)
	var ue *session.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "no seed URLs given (and "+dir+" holds no crawl to resume)") {
		t.Fatalf("got %v, want a usage error", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused open left %s behind (%v)", dir, err)
	}
}

// crawlSite serves three linked pages on loopback and returns its root.
func crawlSite(t *testing.T) string {
	t.Helper()
	body := func(name string, links ...string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "<html><head><title>%s</title></head><body><p>", name)
		for i := 0; i < 60; i++ {
			fmt.Fprintf(&b, "%s-word%d ", name, i)
		}
		for _, l := range links {
			fmt.Fprintf(&b, "<a href=%q>%s</a>", l, l)
		}
		return b.String() + "</p></body></html>"
	}
	pages := map[string]string{"/": body("root", "/a", "/b"), "/a": body("alpha", "/"), "/b": body("beta", "/a")}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, p)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// The page budget spent is a counter Close keeps from the run's crawl; a
// store whose last run did not close (a crash) or that has no counter (an
// earlier Horseshoe) is counted from its page records once.
func TestPagesSpent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg := configs.Default()
	cfg.Politeness.Delay = 0
	root := crawlSite(t)
	s := open(t, dir, cfg, root)
	if s.PagesSpent() != 0 || s.PagesLeft(5) != 5 || s.PagesLeft(0) != 0 {
		t.Errorf("new store: %d spent, %d left of 5", s.PagesSpent(), s.PagesLeft(5))
	}
	runCrawl(t, s, cfg)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var stored int64
	withStore(t, dir, func(db *storage.DB) error {
		st, err := crawl.StoredStats(db)
		stored = st.Pages
		return err
	})
	if stored != 3 {
		t.Fatalf("the crawl recorded %d pages that cost a request, want 3", stored)
	}
	s = open(t, dir, cfg)
	if s.PagesSpent() != 3 || s.PagesLeft(5) != 2 {
		t.Errorf("after a run of 3: %d spent, %d left of 5", s.PagesSpent(), s.PagesLeft(5))
	}
	cfg.Crawl.MaxPages = 3
	if _, err := s.Start(cfg, crawl.Env{}, nil); !errors.Is(err, crawl.ErrBudgetSpent) {
		t.Errorf("a budget of 3 after 3 pages: %v, want crawl.ErrBudgetSpent", err)
	}
	s.Close()

	// The counter is read, not the pages: 2 pages written behind its back
	// do not count while it is valid.
	putPages(t, dir, 2, false)
	s = open(t, dir, cfg)
	if s.PagesSpent() != 3 {
		t.Errorf("with a valid counter: %d spent, want 3", s.PagesSpent())
	}
	s.DB.Close() // a crash: Close never runs, the run mark stays
	s = open(t, dir, cfg)
	if s.PagesSpent() != 3 {
		t.Errorf("after a crash: %d spent, want the 3 the run's commits counted (not the pages written behind their back)", s.PagesSpent())
	}
	if pages, _ := s.DB.FullScans(); pages != 0 {
		t.Errorf("after a crash: %d scans of the page records, want none (the count is kept at commit)", pages)
	}
	s.DB.Close() // a crash again
	// A store of an earlier Horseshoe has no count kept at commit: its
	// page records are counted.
	withStore(t, dir, func(db *storage.DB) error { return db.DeleteMeta(storage.MetaPagesCommitted) })
	s = open(t, dir, cfg)
	if s.PagesSpent() != 5 {
		t.Errorf("after a crash of an earlier Horseshoe: %d spent, want the 5 fetched page records", s.PagesSpent())
	}
	s.Close()
	withStore(t, dir, func(db *storage.DB) error { return db.PutMeta(storage.MetaPagesSpent, []byte("many")) })
	if _, err := session.Open(dir, cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "bad count") {
		t.Errorf("a corrupt counter: %v", err)
	}
}

// A crawl killed after its pages were committed resumes with the page
// budget its commits spent, exactly the page records that cost a request,
// and without reading the page records before its first request (issue 30:
// a resumed crawl of a million pages counted them all first).
func TestResumeAfterKillReadsNoPageRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg := configs.Default()
	cfg.Politeness.Delay = 0
	s := open(t, dir, cfg, crawlSite(t))
	c := runCrawl(t, s, cfg)
	c.Close()
	s.DB.Close() // a kill: Close never runs, the run mark stays

	s = open(t, dir, cfg)
	if _, err := s.Start(cfg, crawl.Env{}, nil); err != nil {
		t.Fatal(err)
	}
	if pages, skipped := s.DB.FullScans(); pages != 0 || skipped != 0 {
		t.Errorf("resume up to the first lease scanned the page records %d times and the skip records %d times, want none", pages, skipped)
	}
	st, err := crawl.StoredStats(s.DB)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pages != 3 || int64(s.PagesSpent()) != st.Pages {
		t.Errorf("after a kill: %d spent, want the %d page records that cost a request (3)", s.PagesSpent(), st.Pages)
	}
	s.Close()
}
