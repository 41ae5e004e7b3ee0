package storefill

import (
	"fmt"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestFill: every copy holds each source record once under its own id and
// URL, with its class, text and raw exchange, and its duplicate edges name
// the original of the same copy.
func TestFill(t *testing.T) {
	const seed = 7
	t.Logf("seed %d", seed)
	src, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	err = src.Update(func(tx *storage.Tx) error {
		for _, p := range []storage.Page{
			{ID: 3, URL: "http://a.test/x", Class: storage.ClassUnique, HasRaw: true},
			{ID: 5, URL: "http://a.test/y", Class: storage.ClassExact, OriginalID: 3, DuplicateOf: "http://a.test/x"},
			{ID: 9, URL: "http://a.test/z", Class: storage.ClassError},
		} {
			if err := tx.PutPage(&p); err != nil {
				return err
			}
			if err := tx.PutText(p.ID, "text "+p.URL); err != nil {
				return err
			}
		}
		if err := tx.PutRaw(3, []byte("GET"), []byte("HTTP/1.1 200 OK\r\n\r\nx")); err != nil {
			return err
		}
		return tx.PutSkipped(&storage.Page{URL: "http://m.test/x", Class: storage.ClassMirrorSkipped, DuplicateOf: "http://a.test/x"})
	})
	if err != nil {
		t.Fatal(err)
	}
	dst, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	n, k, err := Fill(dst, src, 12, seed)
	if err != nil {
		t.Fatal(err)
	}
	if n != 12 || k != 4 {
		t.Fatalf("%d pages and %d skip records, want 4 copies: 12 and 4", n, k)
	}
	urls := map[string]bool{}
	err = dst.ForEachPage(func(p *storage.Page) error {
		c := p.ID / 10
		if urls[p.URL] {
			t.Errorf("%s written twice", p.URL)
		}
		urls[p.URL] = true
		if c > 0 && p.URL[:len("http://a.test/r1/")] != fmt.Sprintf("http://a.test/r%d/", c) {
			t.Errorf("page %d of copy %d at %s", p.ID, c, p.URL)
		}
		if text, err := dst.Text(p.ID); err != nil || text != "text http://a.test/"+p.URL[len(p.URL)-1:] {
			t.Errorf("page %d: text %q, %v", p.ID, text, err)
		}
		if p.Class == storage.ClassExact {
			o, err := dst.Page(p.OriginalID)
			if err != nil || o.URL != p.DuplicateOf || o.ID/10 != c {
				t.Errorf("duplicate %d (%s) names %d %s, not the original of its copy (%v)", p.ID, p.URL, p.OriginalID, p.DuplicateOf, err)
			}
		}
		if _, _, err := dst.Raw(p.ID); (err == nil) != p.HasRaw {
			t.Errorf("page %d: raw exchange %v, has_raw %v", p.ID, err, p.HasRaw)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
