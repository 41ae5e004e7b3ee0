package session_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/configs"
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
	if err := s.Close(0); err != nil {
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
	if err := s.Close(0); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, cfg, "http://c.test/", "http://a.test/")
	if s.Resumed || !slices.Equal(s.Run, []string{"http://c.test/", "http://a.test/"}) ||
		!slices.Equal(s.Seeds, []string{"http://a.test/", "http://b.test/", "http://c.test/"}) {
		t.Errorf("new seeds: resumed %v, run %v, seeds %v", s.Resumed, s.Run, s.Seeds)
	}
	if err := s.Close(0); err != nil {
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

// The page budget spent is a counter kept by Close; a store without one (an
// earlier Horseshoe) or whose last run did not close (a crash) is counted
// from its page records once.
func TestPagesSpent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg := configs.Default()
	s := open(t, dir, cfg, "http://a.test/")
	if s.PagesSpent() != 0 {
		t.Errorf("new store: %d spent", s.PagesSpent())
	}
	if err := s.Close(7); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, cfg)
	if s.PagesSpent() != 7 || s.Env().PagesSpent != 7 {
		t.Errorf("after a run of 7: %d spent", s.PagesSpent())
	}
	// The counter is read, not the pages: 3 pages written behind its back
	// do not count while it is valid.
	s.Close(2)
	putPages(t, dir, 3, false)
	s = open(t, dir, cfg)
	if s.PagesSpent() != 9 {
		t.Errorf("after runs of 7 and 2: %d spent, want 9", s.PagesSpent())
	}
	s.DB.Close() // a crash: Close never runs, the run mark stays
	s = open(t, dir, cfg)
	if s.PagesSpent() != 3 {
		t.Errorf("after a crash: %d spent, want the 3 fetched page records", s.PagesSpent())
	}
	s.Close(0)
	withStore(t, dir, func(db *storage.DB) error { return db.PutMeta(storage.MetaPagesSpent, []byte("many")) })
	if _, err := session.Open(dir, cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "bad count") {
		t.Errorf("a corrupt counter: %v", err)
	}
}
