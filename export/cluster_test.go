package export

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// clusterStore writes page records and skip records into a real crawl store
// in a temporary directory, each page with a text.
func clusterStore(tb testing.TB, pages, skipped []storage.Page) *storage.DB {
	tb.Helper()
	db, err := storage.Open(tb.TempDir(), storage.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	err = db.Update(func(tx *storage.Tx) error {
		for i := range pages {
			if err := tx.PutPage(&pages[i]); err != nil {
				return err
			}
			if err := tx.PutText(pages[i].ID, "text of "+pages[i].URL); err != nil {
				return err
			}
		}
		for i := range skipped {
			if err := tx.PutSkipped(&skipped[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

func readJSONL(tb testing.TB, st Store, o JSONLOptions) []Record {
	tb.Helper()
	var b bytes.Buffer
	n, err := JSONL(&b, st, o)
	if err != nil {
		tb.Fatal(err)
	}
	var out []Record
	dec := json.NewDecoder(&b)
	for dec.More() {
		var r Record
		if err := dec.Decode(&r); err != nil {
			tb.Fatal(err)
		}
		out = append(out, r)
	}
	if n != len(out) {
		tb.Fatalf("JSONL reports %d records, wrote %d", n, len(out))
	}
	return out
}

func page(id uint64, u string, class storage.Class, orig uint64, dupOf string) storage.Page {
	return storage.Page{ID: id, URL: u, Host: "h", Status: 200, Class: class, OriginalID: orig, DuplicateOf: dupOf, Words: 10}
}

func skip(u string, orig uint64, dupOf string) storage.Page {
	return storage.Page{URL: u, Host: "m", Class: storage.ClassMirrorSkipped, OriginalID: orig, DuplicateOf: dupOf, Method: "mirror"}
}

// TestJSONLClusters: the JSONL cluster is the connected component of the
// duplicate_of edges, with one representative (the unique page) flagged,
// whatever the shape: a chain (a mirror copy skipped for a near duplicate,
// itself a duplicate of a unique page; a skip record named as the original
// of another), a star, two separate clusters, a lone unique page, a
// mirror_skipped page record (skipped at lease time, with an id) and a skip
// record whose counterpart has no record (not fetched yet).
func TestJSONLClusters(t *testing.T) {
	const (
		a  = "http://a.test/"
		b  = "http://b.test/"
		c  = "http://c.test/"
		d  = "http://d.test/"
		e  = "http://e.test/"
		x  = "http://x.test/"
		x1 = "http://x1.test/"
		x2 = "http://x2.test/"
		y  = "http://y.test/"
	)
	pages := []storage.Page{
		page(1, a, storage.ClassUnique, 0, ""),
		page(2, b, storage.ClassNear, 1, a),    // b ~ a
		page(5, d, storage.ClassExact, 1, a),   // d = a
		page(6, x, storage.ClassUnique, 0, ""), // second cluster: a star around x
		page(7, x1, storage.ClassNear, 6, x),
		page(8, x2, storage.ClassExact, 6, x),
		page(9, y, storage.ClassUnique, 0, ""), // alone
		// A mirror copy skipped at lease time (a page record with an id)
		// whose counterpart is the near duplicate b.
		page(10, "http://m.test/b", storage.ClassMirrorSkipped, 2, b),
	}
	skipped := []storage.Page{
		skip("http://m.test/", 2, b),                   // chain: m.test/ -> b -> a
		skip("http://m.test/c", 0, c),                  // chain through a skip record: m.test/c -> c -> ... no record of c
		skip("http://n.test/", 0, "http://m.test/"),    // a skip record naming a skip record: -> m.test/ -> b -> a
		skip("http://m.test/q", 42, "http://q.test/"),  // counterpart queued, not fetched: no cluster with content
		skip("http://m.test/q2", 42, "http://q.test/"), // the same counterpart
		skip("http://m.test/e", 0, e),                  // counterpart known by URL only
		skip("http://m.test/e2", 0, e),                 //
		skip("http://m.test/x", 7, x1),                 // chain in the star: -> x1 -> x
	}
	db := clusterStore(t, pages, skipped)

	t.Run("unique pages", func(t *testing.T) {
		recs := readJSONL(t, db, JSONLOptions{})
		got := map[string]Record{}
		for _, r := range recs {
			got[r.URL] = r
			if !r.Representative {
				t.Errorf("%s: a unique page is its cluster's representative", r.URL)
			}
		}
		if len(recs) != 3 {
			t.Fatalf("%d records, want the 3 unique pages", len(recs))
		}
		want := map[string][]string{
			a: {b, d, "http://m.test/b", "http://m.test/", "http://n.test/"},
			x: {x1, x2, "http://m.test/x"},
			y: {},
		}
		for u, w := range want {
			var members []string
			for _, m := range got[u].Duplicates {
				members = append(members, m.URL)
			}
			slices.Sort(members)
			slices.Sort(w)
			if !slices.Equal(members, w) && !(len(members) == 0 && len(w) == 0) {
				t.Errorf("%s: duplicates %v, want %v", u, members, w)
			}
		}
		if got[a].Cluster != "1" || got[x].Cluster != "6" || got[y].Cluster != "9" {
			t.Errorf("clusters %s %s %s, want the representatives' ids 1 6 9", got[a].Cluster, got[x].Cluster, got[y].Cluster)
		}
	})

	t.Run("all", func(t *testing.T) {
		recs := readJSONL(t, db, JSONLOptions{All: true})
		if len(recs) != len(pages)+len(skipped) {
			t.Fatalf("%d records, want %d", len(recs), len(pages)+len(skipped))
		}
		cluster := map[string]string{}
		reps := map[string][]string{}
		for _, r := range recs {
			cluster[r.URL] = r.Cluster
			if r.Representative {
				reps[r.Cluster] = append(reps[r.Cluster], r.URL)
			}
		}
		for _, group := range [][]string{
			{a, b, d, "http://m.test/b", "http://m.test/", "http://n.test/"},
			{x, x1, x2, "http://m.test/x"},
			{y},
			{"http://m.test/q", "http://m.test/q2"},
			{"http://m.test/e", "http://m.test/e2"},
		} {
			for _, u := range group[1:] {
				if cluster[u] != cluster[group[0]] {
					t.Errorf("%s in cluster %q, %s in %q: want one cluster", u, cluster[u], group[0], cluster[group[0]])
				}
			}
		}
		if cluster[a] == cluster[x] || cluster[a] == cluster["http://m.test/q"] || cluster["http://m.test/q"] == cluster["http://m.test/e"] ||
			cluster["http://m.test/c"] == cluster[a] {
			t.Errorf("separate clusters share a value: %v", cluster)
		}
		for cl, us := range reps {
			if len(us) != 1 {
				t.Errorf("cluster %s: representatives %v, want one", cl, us)
			}
		}
		if len(reps) != 3 {
			t.Errorf("%d clusters with a representative, want 3: %v", len(reps), reps)
		}
		if cluster["http://m.test/q"] != "42" {
			t.Errorf("a cluster without a unique page is named by its smallest id: got %q, want 42", cluster["http://m.test/q"])
		}
	})
}
