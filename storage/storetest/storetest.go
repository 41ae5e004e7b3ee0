// Package storetest is the conformance suite of the crawl's shared state
// (the interfaces of crawl/seam.go, described in docs/SEAMS.md): written
// once, run against every implementation. Badger runs it in storage's
// tests; a shared backend (Redis) runs it in its own:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Stores { ... a fresh, empty store ... })
//	}
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Stores is one implementation of the crawl's shared state, empty.
type Stores struct {
	Store  crawl.Store          // records, seen-set, queue log, evidence, metadata
	Queues frontier.Store       // the queue log read back (what a frontier loads)
	Index  crawl.DuplicateIndex // the duplicate index
	// Frontier leases what the store's queue log holds (Delay 100 ms, the
	// per-host clock); a shared store's frontier reads its queues itself,
	// and then Queues may be nil (its queue log is the frontier's).
	Frontier crawl.Frontier
}

// Run runs the suite; open returns a fresh, empty implementation (closed by
// t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) Stores) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s Stores)
	}{
		{"SeenCheckAndMark", testSeenCheckAndMark},
		{"SeenAtomic", testSeenAtomic},
		{"Rollback", testRollback},
		{"CancelledContext", testCancelledContext},
		{"QueueLog", testQueueLog},
		{"FrontierLease", testFrontierLease},
		{"PageRecords", testPageRecords},
		{"PageContent", testPageContent},
		{"SkipRecords", testSkipRecords},
		{"Dependents", testDependents},
		{"Evidence", testEvidence},
		{"EvidenceTakeOnce", testEvidenceTakeOnce},
		{"EvidenceRead", testEvidenceRead},
		{"Meta", testMeta},
		{"DuplicateIndex", testDuplicateIndex},
		{"DuplicateIndexAtomic", testDuplicateIndexAtomic},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

var ctx = context.Background()

func update(t *testing.T, s Stores, fn func(tx crawl.Tx) error) {
	t.Helper()
	if err := s.Store.Update(ctx, fn); err != nil {
		t.Fatal(err)
	}
}

// testSeenCheckAndMark: the first mark adds the URL under the id newID
// gives, a second finds it under that id without asking for another, and
// the transaction reads its own marks.
func testSeenCheckAndMark(t *testing.T, s Stores) {
	const u = "http://a.test/"
	update(t, s, func(tx crawl.Tx) error {
		if _, seen, err := tx.SeenID(u); err != nil || seen {
			return fmt.Errorf("fresh store: seen %v, %v", seen, err)
		}
		calls := 0
		newID := func() uint64 { calls++; return 42 }
		id, fresh, err := tx.CheckAndMark(u, newID)
		if err != nil || !fresh || id != 42 || calls != 1 {
			return fmt.Errorf("first mark: id %d fresh %v err %v, newID called %d times", id, fresh, err, calls)
		}
		id, fresh, err = tx.CheckAndMark(u, newID)
		if err != nil || fresh || id != 42 || calls != 1 {
			return fmt.Errorf("second mark in the transaction: id %d fresh %v err %v, newID called %d times", id, fresh, err, calls)
		}
		return nil
	})
	update(t, s, func(tx crawl.Tx) error {
		if id, seen, err := tx.SeenID(u); err != nil || !seen || id != 42 {
			return fmt.Errorf("after commit: id %d seen %v err %v", id, seen, err)
		}
		if _, fresh, err := tx.CheckAndMark(u, func() uint64 { return 7 }); err != nil || fresh {
			return fmt.Errorf("mark after commit: fresh %v, %v", fresh, err)
		}
		return nil
	})
}

// testSeenAtomic: of many transactions marking one URL at once, one adds it.
func testSeenAtomic(t *testing.T, s Stores) {
	const n = 8
	var mu sync.Mutex
	fresh := map[uint64]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got bool
			var id uint64
			err := s.Store.Update(ctx, func(tx crawl.Tx) error {
				var err error
				id, got, err = tx.CheckAndMark("http://race.test/", func() uint64 { return uint64(100 + i) })
				return err
			})
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			if got {
				fresh[id] = true
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(fresh) != 1 {
		t.Fatalf("%d transactions added the URL, want 1", len(fresh))
	}
}

// testRollback: a transaction that fails leaves nothing.
func testRollback(t *testing.T, s Stores) {
	boom := errors.New("boom")
	err := s.Store.Update(ctx, func(tx crawl.Tx) error {
		if _, _, err := tx.CheckAndMark("http://a.test/x", tx.NewID); err != nil {
			return err
		}
		if err := tx.PutPage(&storage.Page{ID: 5, URL: "http://a.test/x", Class: storage.ClassUnique}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want the function's error", err)
	}
	update(t, s, func(tx crawl.Tx) error {
		if _, seen, err := tx.SeenID("http://a.test/x"); err != nil || seen {
			return fmt.Errorf("seen mark of a failed transaction: %v, %v", seen, err)
		}
		if _, err := tx.GetPage(5); !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("page of a failed transaction: %v", err)
		}
		return nil
	})
}

// testCancelledContext: a transaction under a cancelled context fails and
// writes nothing.
func testCancelledContext(t *testing.T, s Stores) {
	c, cancel := context.WithCancel(ctx)
	cancel()
	err := s.Store.Update(c, func(tx crawl.Tx) error { return tx.PutMeta("x", []byte("1")) })
	if err == nil {
		t.Fatal("Update under a cancelled context succeeded")
	}
	if _, err := s.Store.GetMeta(ctx, "x"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a cancelled transaction wrote: %v", err)
	}
}

// testQueueLog: entries written are read back per host in sequence order,
// with their fields; deleted ones are gone.
func testQueueLog(t *testing.T, s Stores) {
	if s.Queues == nil {
		t.Skip("the queue log is the frontier's own (FrontierLease checks it)")
	}
	items := []frontier.Item{
		{ID: 1, URL: "http://a.test/1", Host: "a.test", Seq: 1, Depth: 2, Via: "http://a.test/"},
		{ID: 2, URL: "http://a.test/2", Host: "a.test", Seq: 2, Verify: true},
		{ID: 3, URL: "http://a.test/3", Host: "a.test", Seq: 256, FetchURL: "http://a.test/3;s=1", Hops: 1, Sitemap: 2},
		{ID: 4, URL: "http://b.test:8080/", Host: "b.test:8080", Seq: 1},
	}
	update(t, s, func(tx crawl.Tx) error {
		for _, it := range items {
			if err := tx.PutQueue(it); err != nil {
				return err
			}
		}
		return nil
	})
	hosts, err := s.Queues.QueueHosts()
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(hosts, func(a, b frontier.HostInfo) int { return cmpString(a.Host, b.Host) })
	want := []frontier.HostInfo{{Host: "a.test", Count: 3, MinSeq: 1, MaxSeq: 256}, {Host: "b.test:8080", Count: 1, MinSeq: 1, MaxSeq: 1}}
	if !slices.Equal(hosts, want) {
		t.Fatalf("hosts %+v, want %+v", hosts, want)
	}
	got, err := s.Queues.LoadQueue("a.test", 2, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != items[1] || got[1] != items[2] {
		t.Fatalf("LoadQueue from 2: %+v", got)
	}
	update(t, s, func(tx crawl.Tx) error { return tx.DeleteQueue("a.test", 2) })
	got, err = s.Queues.LoadQueue("a.test", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != 1 || got[1].ID != 3 {
		t.Fatalf("after delete: %+v", got)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// testPageRecords: ids are never reused across transactions; records read
// back whole, in the transaction and outside, in id order; a deleted or
// missing record is ErrNotFound.
func testPageRecords(t *testing.T, s Stores) {
	var ids []uint64
	for range 3 {
		update(t, s, func(tx crawl.Tx) error {
			ids = append(ids, tx.NewID(), tx.NewID())
			return nil
		})
	}
	_ = s.Store.Update(ctx, func(tx crawl.Tx) error { ids = append(ids, tx.NewID()); return errors.New("fail") })
	update(t, s, func(tx crawl.Tx) error { ids = append(ids, tx.NewID()); return nil })
	seen := map[uint64]bool{}
	for _, id := range ids {
		if id == 0 || seen[id] {
			t.Fatalf("ids %v: 0 or repeated", ids)
		}
		seen[id] = true
	}
	p := &storage.Page{ID: ids[0], URL: "http://a.test/", FinalURL: "http://a.test/index.html", Host: "a.test", Status: 200,
		Class: storage.ClassNear, OriginalID: 9, Similarity: 0.97, Words: 120, Redirects: []string{"http://a.test/"}}
	q := &storage.Page{ID: ids[1], URL: "http://a.test/b", Class: storage.ClassError, ErrorClass: "http"}
	update(t, s, func(tx crawl.Tx) error {
		if err := tx.PutPage(q); err != nil {
			return err
		}
		if err := tx.PutPage(p); err != nil {
			return err
		}
		got, err := tx.GetPage(p.ID)
		if err != nil || got.ServedURL() != p.FinalURL || got.Similarity != p.Similarity || got.Class != p.Class {
			return fmt.Errorf("read in the transaction: %+v, %v", got, err)
		}
		return nil
	})
	got, err := s.Store.Page(ctx, p.ID)
	if err != nil || got.URL != p.URL || got.Words != p.Words || !slices.Equal(got.Redirects, p.Redirects) {
		t.Fatalf("Page: %+v, %v", got, err)
	}
	var order []uint64
	if err := s.Store.ForEachPage(ctx, func(p *storage.Page) error { order = append(order, p.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []uint64{ids[0], ids[1]}) {
		t.Fatalf("ForEachPage order %v, want %v", order, ids[:2])
	}
	update(t, s, func(tx crawl.Tx) error { return tx.DeletePage(q.ID) })
	if _, err := s.Store.Page(ctx, q.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("deleted page: %v", err)
	}
}

// testPageContent: text, signatures and link hashes read back; a page
// without link hashes has none.
func testPageContent(t *testing.T, s Stores) {
	update(t, s, func(tx crawl.Tx) error {
		if err := tx.PutText(1, "some visible text"); err != nil {
			return err
		}
		if err := tx.PutSignature(1, []byte{1, 2, 3}); err != nil {
			return err
		}
		if err := tx.PutRaw(1, []byte("GET / HTTP/1.1\r\n\r\n"), []byte("HTTP/1.1 200 OK\r\n\r\n")); err != nil {
			return err
		}
		return tx.PutLinks(1, []uint64{3, 7, 1 << 63})
	})
	if text, err := s.Store.Text(ctx, 1); err != nil || text != "some visible text" {
		t.Fatalf("Text: %q, %v", text, err)
	}
	sigs := map[uint64][]byte{}
	if err := s.Store.ForEachSignature(ctx, func(id uint64, b []byte) error { sigs[id] = slices.Clone(b); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(sigs) != 1 || !slices.Equal(sigs[1], []byte{1, 2, 3}) {
		t.Fatalf("signatures %v", sigs)
	}
	update(t, s, func(tx crawl.Tx) error {
		if h, err := tx.GetLinks(1); err != nil || !slices.Equal(h, []uint64{3, 7, 1 << 63}) {
			return fmt.Errorf("GetLinks: %v, %v", h, err)
		}
		if h, err := tx.GetLinks(2); err != nil || h != nil {
			return fmt.Errorf("GetLinks of a page without: %v, %v", h, err)
		}
		return nil
	})
}

// testSkipRecords: skip records by URL; none is nil without an error.
func testSkipRecords(t *testing.T, s Stores) {
	rec := &storage.Page{URL: "http://b.test/x", Class: storage.ClassMirrorSkipped, DuplicateOf: "http://a.test/x", OriginalID: 3}
	update(t, s, func(tx crawl.Tx) error {
		if got, err := tx.GetSkipped(rec.URL); err != nil || got != nil {
			return fmt.Errorf("no record: %+v, %v", got, err)
		}
		return tx.PutSkipped(rec)
	})
	n := 0
	if err := s.Store.ForEachSkipped(ctx, func(p *storage.Page) error {
		n++
		if p.URL != rec.URL || p.DuplicateOf != rec.DuplicateOf || p.Class != storage.ClassMirrorSkipped {
			return fmt.Errorf("read back %+v", p)
		}
		return nil
	}); err != nil || n != 1 {
		t.Fatalf("ForEachSkipped: %d records, %v", n, err)
	}
	update(t, s, func(tx crawl.Tx) error {
		if got, err := tx.GetSkipped(rec.URL); err != nil || got == nil || got.OriginalID != 3 {
			return fmt.Errorf("GetSkipped: %+v, %v", got, err)
		}
		if err := tx.DeleteSkipped(rec.URL); err != nil {
			return err
		}
		return tx.DeleteSkipped("http://b.test/never") // deleting nothing is no error
	})
	update(t, s, func(tx crawl.Tx) error {
		if got, err := tx.GetSkipped(rec.URL); err != nil || got != nil {
			return fmt.Errorf("after delete: %+v, %v", got, err)
		}
		return nil
	})
}

// testDependents: the dependents of a counterpart, with and without ids of
// their own (several of the latter do not overwrite each other), apart from
// another counterpart's; one deleted as read leaves the others.
func testDependents(t *testing.T, s Stores) {
	const a, b = "http://a.test/x", "http://a.test/y"
	deps := []storage.Dependent{
		{ID: 7, URL: "http://b.test/x", Depth: 2, Via: "http://b.test/", Seen: true},
		{URL: "http://c.test/x", Depth: 3},
		{URL: "http://d.test/x", Depth: 3},
	}
	update(t, s, func(tx crawl.Tx) error {
		for _, d := range deps {
			if err := tx.AddDependent(a, d); err != nil {
				return err
			}
		}
		return tx.AddDependent(b, storage.Dependent{URL: "http://e.test/y"})
	})
	update(t, s, func(tx crawl.Tx) error {
		got, err := tx.Dependents(a)
		if err != nil {
			return err
		}
		urls := func(ds []storage.Dependent) []string {
			var out []string
			for _, d := range ds {
				out = append(out, d.URL)
			}
			slices.Sort(out)
			return out
		}
		if u := urls(got); !slices.Equal(u, []string{"http://b.test/x", "http://c.test/x", "http://d.test/x"}) {
			return fmt.Errorf("dependents %v", u)
		}
		for _, d := range got {
			if d.URL == "http://b.test/x" && (d.ID != 7 || !d.Seen || d.Depth != 2 || d.Via != "http://b.test/") {
				return fmt.Errorf("read back %+v", d)
			}
			if d.URL == "http://c.test/x" {
				if err := tx.DeleteDependent(a, d); err != nil {
					return err
				}
			}
		}
		return nil
	})
	update(t, s, func(tx crawl.Tx) error {
		got, err := tx.Dependents(a)
		if err != nil || len(got) != 2 || slices.ContainsFunc(got, func(d storage.Dependent) bool { return d.URL == "http://c.test/x" }) {
			return fmt.Errorf("after delete: %+v, %v", got, err)
		}
		if got, err := tx.Dependents(b); err != nil || len(got) != 1 {
			return fmt.Errorf("other counterpart: %+v, %v", got, err)
		}
		return nil
	})
}

// testEvidence: records by kind, read back by kind only; take returns one
// once.
func testEvidence(t *testing.T, s Stores) {
	type rec struct{ N int }
	update(t, s, func(tx crawl.Tx) error {
		for i, k := range []string{"k1", "k2"} {
			if err := tx.PutEvidence("mirror", k, rec{i}); err != nil {
				return err
			}
		}
		return tx.PutEvidence("gap", "http://b.test/x", rec{9})
	})
	got := map[string]string{}
	if err := s.Store.ForEachEvidence(ctx, "mirror", func(k string, v []byte) error { got[k] = string(v); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["k1"] != `{"N":0}` || got["k2"] != `{"N":1}` {
		t.Fatalf("mirror evidence %v", got)
	}
	update(t, s, func(tx crawl.Tx) error {
		v, ok, err := tx.TakeEvidence("gap", "http://b.test/x")
		if err != nil || !ok || string(v) != `{"N":9}` {
			return fmt.Errorf("take: %s %v %v", v, ok, err)
		}
		return nil
	})
	update(t, s, func(tx crawl.Tx) error {
		if _, ok, err := tx.TakeEvidence("gap", "http://b.test/x"); err != nil || ok {
			return fmt.Errorf("second take: %v %v", ok, err)
		}
		return nil
	})
}

// testEvidenceRead: a transaction reads a record (its own write, or one
// committed before) without taking it; a missing one is not found. Skipped
// for a store whose Tx does not implement crawl.EvidenceReader (it crawls
// without canonical hints).
func testEvidenceRead(t *testing.T, s Stores) {
	errNoReader := errors.New("the store's Tx does not implement crawl.EvidenceReader")
	err := s.Store.Update(ctx, func(tx crawl.Tx) error {
		r, ok := tx.(crawl.EvidenceReader)
		if !ok {
			return errNoReader
		}
		if _, ok, err := r.GetEvidence("alias", "a.test/x"); err != nil || ok {
			return fmt.Errorf("fresh store: found %v, %v", ok, err)
		}
		if err := tx.PutEvidence("alias", "a.test/x", map[string]string{"canonical": "http://a.test/x"}); err != nil {
			return err
		}
		v, ok, err := r.GetEvidence("alias", "a.test/x")
		if err != nil || !ok || string(v) != `{"canonical":"http://a.test/x"}` {
			return fmt.Errorf("own write: %s %v %v", v, ok, err)
		}
		return nil
	})
	if errors.Is(err, errNoReader) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // read twice: a read takes nothing
		update(t, s, func(tx crawl.Tx) error {
			v, ok, err := tx.(crawl.EvidenceReader).GetEvidence("alias", "a.test/x")
			if err != nil || !ok || string(v) != `{"canonical":"http://a.test/x"}` {
				return fmt.Errorf("read %d: %s %v %v", i, v, ok, err)
			}
			if _, ok, err := tx.(crawl.EvidenceReader).GetEvidence("gap", "a.test/x"); err != nil || ok {
				return fmt.Errorf("another kind found: %v %v", ok, err)
			}
			return nil
		})
	}
}

// testEvidenceTakeOnce: of transactions taking one record at once, one gets
// it (a gap probe's result is counted once).
func testEvidenceTakeOnce(t *testing.T, s Stores) {
	update(t, s, func(tx crawl.Tx) error { return tx.PutEvidence("gap", "u", 1) })
	const n = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	took := 0
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ok bool
			err := s.Store.Update(ctx, func(tx crawl.Tx) error {
				var err error
				_, ok, err = tx.TakeEvidence("gap", "u")
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Error(err)
			}
			if ok {
				took++
			}
		}()
	}
	wg.Wait()
	if took != 1 {
		t.Fatalf("%d transactions took the record, want 1", took)
	}
}

// testMeta: metadata written in a transaction or outside reads back; a
// missing name is ErrNotFound.
func testMeta(t *testing.T, s Stores) {
	if _, err := s.Store.GetMeta(ctx, "requests"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("missing meta: %v", err)
	}
	update(t, s, func(tx crawl.Tx) error { return tx.PutMeta("requests", []byte("12")) })
	if err := s.Store.PutMeta(ctx, "complete", []byte("true")); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"requests": "12", "complete": "true"} {
		if v, err := s.Store.GetMeta(ctx, name); err != nil || string(v) != want {
			t.Errorf("%s = %q, %v; want %q", name, v, err, want)
		}
	}
}

func signer(t *testing.T) *dedup.Detector {
	t.Helper()
	d, err := dedup.New(dedup.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func words(seed, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("w%d", (i*7919+seed*104729)%100003)
	}
	return out
}

// testDuplicateIndex: a page is unique and indexed; the same token stream
// is an exact duplicate of it; a page added without a check is found too.
func testDuplicateIndex(t *testing.T, s Stores) {
	sg := signer(t)
	a, b := sg.Sign(words(1, 300)), sg.Sign(words(2, 300))
	check := func(id uint64, sig *dedup.Signature, class dedup.Class, orig uint64) {
		t.Helper()
		d, err := s.Index.CheckAndAdd(ctx, id, sig, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d.Class != class || (class != dedup.Unique && d.Original != orig) {
			t.Fatalf("page %d: %+v, want %v of %d", id, d, class, orig)
		}
	}
	check(1, a, dedup.Unique, 0)
	check(2, a, dedup.Exact, 1)
	if err := s.Index.Add(ctx, 3, b); err != nil {
		t.Fatal(err)
	}
	check(4, b, dedup.Exact, 3)
	check(5, sg.Sign(words(3, 300)), dedup.Unique, 0)
}

// testDuplicateIndexAtomic: of copies checked at once, one is the original
// and the others its duplicates.
func testDuplicateIndexAtomic(t *testing.T, s Stores) {
	sig := signer(t).Sign(words(4, 300))
	const n = 8
	var wg sync.WaitGroup
	decisions := make([]dedup.Decision, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := s.Index.CheckAndAdd(ctx, uint64(10+i), sig, nil)
			if err != nil {
				t.Error(err)
			}
			decisions[i] = d
		}()
	}
	wg.Wait()
	var orig []uint64
	for i, d := range decisions {
		if d.Class == dedup.Unique {
			orig = append(orig, uint64(10+i))
		}
	}
	if len(orig) != 1 {
		t.Fatalf("%d originals, want 1: %+v", len(orig), decisions)
	}
	for _, d := range decisions {
		if d.Class != dedup.Unique && d.Original != orig[0] {
			t.Fatalf("a copy of %d, want of %d", d.Original, orig[0])
		}
	}
}

// testFrontierLease: entries queued through transactions (and pushed, as
// the engine does after the commit) are leased one host at a time: a host's
// second entry is not leased while its first is, nor before the delay after
// the first's release; every entry is leased once, with its fields; when all
// are finished the frontier reports the end.
func testFrontierLease(t *testing.T, s Stores) {
	if s.Frontier == nil {
		t.Skip("no frontier")
	}
	const delay = 100 * time.Millisecond
	fr := s.Frontier
	items := []frontier.Item{
		{URL: "http://a.test/1", Host: "a.test", Depth: 1, Via: "http://a.test/"},
		{URL: "http://a.test/2", Host: "a.test", Depth: 2},
		{URL: "http://b.test/1", Host: "b.test", Verify: true, Sitemap: 1},
	}
	update(t, s, func(tx crawl.Tx) error {
		for i := range items {
			id, _, err := tx.CheckAndMark(items[i].URL, tx.NewID)
			if err != nil {
				return err
			}
			items[i].ID, items[i].Seq = id, fr.Assign(items[i].Host)
			if err := tx.PutQueue(items[i]); err != nil {
				return err
			}
		}
		return nil
	})
	fr.Push(items...)
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	next := func() *frontier.Item {
		t.Helper()
		it, err := fr.Next(c)
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		return it
	}
	first, second := next(), next()
	if first.Host == second.Host {
		t.Fatalf("two leases of %s at once", first.Host)
	}
	leased := map[string]frontier.Item{}
	for _, it := range []*frontier.Item{first, second} {
		leased[it.URL] = *it
	}
	a := first
	if a.Host != "a.test" {
		a = second
	}
	released := time.Now()
	fr.Release(a, frontier.Outcome{Requested: true, Status: 200})
	finish := func(it *frontier.Item) {
		update(t, s, func(tx crawl.Tx) error { return tx.DeleteQueue(it.Host, it.Seq) })
		fr.Finish(it)
	}
	finish(a)
	third := next()
	if third.Host != "a.test" || time.Since(released) < delay-10*time.Millisecond {
		t.Fatalf("third lease %s %v after the release of a.test's first (delay %v)", third.URL, time.Since(released), delay)
	}
	leased[third.URL] = *third
	for _, want := range items {
		got, ok := leased[want.URL]
		if !ok || got.ID != want.ID || got.Depth != want.Depth || got.Via != want.Via || got.Verify != want.Verify || got.Sitemap != want.Sitemap {
			t.Fatalf("leased %+v, want %+v", got, want)
		}
	}
	for _, it := range []*frontier.Item{first, second, third} {
		if it != a {
			fr.Release(it, frontier.Outcome{Requested: true, Status: 200})
			finish(it)
		}
	}
	if it, err := fr.Next(c); !errors.Is(err, frontier.ErrDone) {
		t.Fatalf("after every lease finished: %+v, %v; want frontier.ErrDone", it, err)
	}
}
