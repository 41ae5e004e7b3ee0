package crawl_test

import (
	"testing"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

func TestStoredStats(t *testing.T) {
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := crawl.StoredStats(db)
	if err != nil {
		t.Fatalf("empty store: %v", err)
	}
	if s.Pages != 0 || s.Requests != 0 || len(s.ByClass) != len(storage.Classes) {
		t.Errorf("empty store: %+v, want zeros for every class", s)
	}
	pages := []storage.Page{
		{URL: "http://a/1", Host: "a", Status: 200, Class: storage.ClassUnique},
		{URL: "http://a/2", Host: "a", Status: 200, Class: storage.ClassExact},
		{URL: "http://b/1", Host: "b", Status: 200, Class: storage.ClassNear},
		{URL: "http://b/2", Host: "b", Status: 404, Class: storage.ClassError},
		{URL: "http://b/3", Host: "b", Class: storage.ClassError, ErrorClass: "connect"},
		{URL: "http://b/4", Host: "b", Class: storage.ClassRobotsDisallowed},
		{URL: "http://b/5", Host: "b", Class: storage.ClassMirrorSkipped},
		{URL: "http://b/6", Host: "b", Status: 200, Class: storage.ClassNotHTML},
	}
	err = db.Update(func(tx *storage.Tx) error {
		for i := range pages {
			pages[i].ID = tx.NewID()
			if err := tx.PutPage(&pages[i]); err != nil {
				return err
			}
		}
		if err := tx.PutSkipped(&storage.Page{URL: "http://c/1", Host: "c", Class: storage.ClassMirrorSkipped}); err != nil {
			return err
		}
		for i := 1; i <= 3; i++ {
			if err := tx.PutQueue(frontier.Item{ID: tx.NewID(), URL: "http://d/q", Host: "d", Seq: uint64(i)}); err != nil {
				return err
			}
		}
		return tx.PutMeta(storage.MetaRequests, []byte("17"))
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err = crawl.StoredStats(db)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"unique": 1, "exact_duplicate": 1, "near_duplicate": 1, "error": 2,
		"robots_disallowed": 1, "mirror_skipped": 2, "not_html": 1}
	for c, n := range want {
		if s.ByClass[c] != n {
			t.Errorf("ByClass[%s] = %d, want %d", c, s.ByClass[c], n)
		}
	}
	// Requests cost: 2 HTML pages, a duplicate of each kind, 2 errors, 1
	// not_html; robots_disallowed and mirror_skipped cost none.
	if s.Pages != 6 || s.Duplicates != 2 || s.Requests != 17 || s.Queued != 3 || s.Hosts != 4 || s.Running {
		t.Errorf("stats %+v, want 6 pages, 2 duplicates, 17 requests, 3 queued, 4 hosts, not running", s)
	}
	if r := s.DuplicateRatio(); r < 0.333 || r > 0.334 {
		t.Errorf("DuplicateRatio %v, want 1/3", r)
	}

	if err := db.PutMeta(storage.MetaRequests, []byte("many")); err != nil {
		t.Fatal(err)
	}
	if _, err := crawl.StoredStats(db); err == nil {
		t.Error("a corrupt request counter was accepted")
	}
}
