package storage

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

func open(t *testing.T, dir string) *DB {
	t.Helper()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestPageCommitAndReopen(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	var id uint64
	err := db.Update(func(tx *Tx) error {
		id = tx.NewID()
		if err := tx.MarkSeen("http://a/x", id); err != nil {
			return err
		}
		if err := tx.PutQueue(frontier.Item{ID: id, URL: "http://a/x", Host: "a", Seq: 7}); err != nil {
			return err
		}
		if err := tx.PutPage(&Page{ID: id, URL: "http://a/x", Class: ClassUnique, FetchedAt: time.Unix(5, 0).UTC()}); err != nil {
			return err
		}
		if err := tx.PutText(id, "hello world"); err != nil {
			return err
		}
		if err := tx.PutRaw(id, []byte("GET / HTTP/1.1\r\n\r\n"), []byte("HTTP/1.1 200 OK\r\n\r\nbody")); err != nil {
			return err
		}
		return tx.PutSignature(id, []byte{1, 2, 3})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(t, dir)
	defer db.Close()
	p, err := db.Page(id)
	if err != nil || p.URL != "http://a/x" || p.Class != ClassUnique {
		t.Fatalf("page after reopen: %+v %v", p, err)
	}
	if txt, _ := db.Text(id); txt != "hello world" {
		t.Errorf("text %q", txt)
	}
	if _, resp, err := db.Raw(id); err != nil || string(resp) != "HTTP/1.1 200 OK\r\n\r\nbody" {
		t.Errorf("raw %q %v", resp, err)
	}
	if ok, _ := db.Seen("http://a/x"); !ok {
		t.Error("seen mark lost")
	}
	hosts, err := db.QueueHosts()
	if err != nil || len(hosts) != 1 || hosts[0].Host != "a" || hosts[0].Count != 1 || hosts[0].MinSeq != 7 {
		t.Fatalf("queue hosts %+v %v", hosts, err)
	}
	items, err := db.LoadQueue("a", 0, 10)
	if err != nil || len(items) != 1 || items[0].Seq != 7 || items[0].URL != "http://a/x" {
		t.Fatalf("load queue %+v %v", items, err)
	}
	// Ids are not reused after a reopen.
	var id2 uint64
	if err := db.Update(func(tx *Tx) error { id2 = tx.NewID(); return nil }); err != nil {
		t.Fatal(err)
	}
	if id2 <= id {
		t.Errorf("id %d reused after reopen (had %d)", id2, id)
	}
	n := 0
	if err := db.ForEachSignature(func(gid uint64, b []byte) error { n++; return nil }); err != nil || n != 1 {
		t.Errorf("signatures %d %v", n, err)
	}
}

func TestQueueOrderAcrossHosts(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	err := db.Update(func(tx *Tx) error {
		for _, it := range []frontier.Item{
			{URL: "u3", Host: "h", Seq: 300}, {URL: "u1", Host: "h", Seq: 1}, {URL: "u2", Host: "h", Seq: 256},
			{URL: "v1", Host: "h2", Seq: 1}, {URL: "w1", Host: "h:8080", Seq: 2},
		} {
			if err := tx.PutQueue(it); err != nil {
				return err
			}
		}
		return tx.DeleteQueue("h", 256)
	})
	if err != nil {
		t.Fatal(err)
	}
	items, _ := db.LoadQueue("h", 0, 10)
	if len(items) != 2 || items[0].URL != "u1" || items[1].URL != "u3" {
		t.Fatalf("order/deletion wrong: %+v", items)
	}
	items, _ = db.LoadQueue("h", 2, 10)
	if len(items) != 1 || items[0].URL != "u3" {
		t.Fatalf("from seq: %+v", items)
	}
	hosts, _ := db.QueueHosts()
	if len(hosts) != 3 {
		t.Fatalf("hosts %+v", hosts)
	}
}

func TestDependentsAndSkipped(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	err := db.Update(func(tx *Tx) error {
		if err := tx.PutSkipped(&Page{URL: "http://m/a", Class: ClassMirrorSkipped, DuplicateOf: "http://o/a"}); err != nil {
			return err
		}
		if rec, err := tx.GetSkipped("http://m/a"); err != nil || rec == nil || rec.DuplicateOf != "http://o/a" {
			t.Errorf("GetSkipped = %+v, %v after PutSkipped", rec, err)
		}
		if rec, err := tx.GetSkipped("http://m/b"); err != nil || rec != nil {
			t.Errorf("GetSkipped = %+v, %v for a URL never skipped", rec, err)
		}
		// Two links skipped without page records in favour of one
		// counterpart (both carry the counterpart's id): both wait on it.
		if err := tx.AddDependent("http://o/a", Dependent{ID: 9, URL: "http://m/a"}); err != nil {
			return err
		}
		if err := tx.AddDependent("http://o/a", Dependent{ID: 9, URL: "http://m3/a"}); err != nil {
			return err
		}
		return tx.AddDependent("http://o/a", Dependent{ID: 10, URL: "http://m2/a", Seen: true})
	})
	if err != nil {
		t.Fatal(err)
	}
	// Dependents reads without removing; DeleteDependent removes one.
	if err := db.Update(func(tx *Tx) error {
		ds, err := tx.Dependents("http://o/a")
		if err != nil || len(ds) != 3 {
			t.Errorf("Dependents = %+v, %v; want 3", ds, err)
		}
		if err := tx.DeleteDependent("http://o/a", Dependent{ID: 9, URL: "http://m3/a"}); err != nil {
			return err
		}
		if ds, _ := tx.Dependents("http://o/a"); len(ds) != 2 {
			t.Errorf("after DeleteDependent: %+v", ds)
		}
		return tx.AddDependent("http://o/a", Dependent{ID: 9, URL: "http://m3/a"})
	}); err != nil {
		t.Fatal(err)
	}
	var deps []Dependent
	if err := db.Update(func(tx *Tx) error {
		var err error
		deps, err = tx.TakeDependents("http://o/a")
		if err != nil {
			return err
		}
		return tx.DeleteSkipped("http://m/a")
	}); err != nil {
		t.Fatal(err)
	}
	if len(deps) != 3 {
		t.Fatalf("dependents %+v, want 3", deps)
	}
	_ = db.Update(func(tx *Tx) error {
		again, _ := tx.TakeDependents("http://o/a")
		if len(again) != 0 {
			t.Errorf("dependents not removed: %+v", again)
		}
		return nil
	})
	n := 0
	_ = db.ForEachSkipped(func(*Page) error { n++; return nil })
	if n != 0 {
		t.Errorf("skip record not deleted")
	}
	_ = db.Update(func(tx *Tx) error {
		if rec, _ := tx.GetSkipped("http://m/a"); rec != nil {
			t.Errorf("GetSkipped after DeleteSkipped: %+v", rec)
		}
		return nil
	})
}

func TestRobotsEntries(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	if _, ok, err := db.GetRobots("http://h"); ok || err != nil {
		t.Fatalf("empty: %v %v", ok, err)
	}
	if err := db.PutRobots("http://h", []byte(`{"status":200}`)); err != nil {
		t.Fatal(err)
	}
	got, ok, err := db.GetRobots("http://h")
	if !ok || err != nil || string(got) != `{"status":200}` {
		t.Fatalf("robots round trip: %q %v %v", got, ok, err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	// A second open of the same dir is refused while the first holds it.
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrLocked) {
		t.Errorf("second open: %v, want ErrLocked", err)
	}
	if err := db.PutMeta("version", []byte("horseshoe-storage-0")); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrVersion) {
		t.Errorf("old version: %v, want ErrVersion", err)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "notes.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(other, Options{}); !errors.Is(err, ErrNotDataDir) {
		t.Errorf("foreign dir: %v, want ErrNotDataDir", err)
	}
	file := filepath.Join(other, "notes.txt")
	if _, err := Open(file, Options{}); !errors.Is(err, ErrNotDataDir) {
		t.Errorf("file as dir: %v, want ErrNotDataDir", err)
	}
}

func TestDiskSpaceGuard(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	defer db.Close()
	free := int64(1 << 40)
	db.statfsFunc = func(string) (int64, error) { return free, nil }
	db.spaceEvery = 0
	if err := db.Update(func(tx *Tx) error { return tx.PutText(1, "x") }); err != nil {
		t.Fatalf("with space: %v", err)
	}
	free = 1 << 20
	err := db.Update(func(tx *Tx) error { return tx.PutText(2, "y") })
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("below min free: %v, want ErrDiskFull naming the dir", err)
	}
	if txt, _ := db.Text(2); txt != "" {
		t.Error("the refused write happened")
	}
	if err := db.PutMeta("x", []byte("y")); !errors.Is(err, ErrDiskFull) {
		t.Errorf("PutMeta below min free: %v", err)
	}
	free = 1 << 40
	if err := db.Update(func(tx *Tx) error { return tx.PutText(3, "z") }); err != nil {
		t.Fatalf("space back: %v", err)
	}
}

// A dependent stored under the key form of earlier versions is read back and
// deleted by the key it was read under.
func TestDeleteDependentOldKeyForm(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	err := db.Update(func(tx *Tx) error {
		b, _ := json.Marshal(Dependent{ID: 7, URL: "http://m/old"})
		old := binary.BigEndian.AppendUint64(append([]byte("d/http://o/x"), 0), 7)
		return tx.txn.Set(old, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *Tx) error {
		ds, err := tx.Dependents("http://o/x")
		if err != nil || len(ds) != 1 || ds[0].URL != "http://m/old" {
			t.Fatalf("Dependents = %+v, %v", ds, err)
		}
		return tx.DeleteDependent("http://o/x", ds[0])
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx *Tx) error {
		if ds, _ := tx.Dependents("http://o/x"); len(ds) != 0 {
			t.Errorf("old-form dependent not deleted: %+v", ds)
		}
		return nil
	})
}

// TestUpdateSplitsLargeTransactions: one Update may write more than a Badger
// transaction holds (many entries, or many bytes); it commits in parts, each
// part sees the earlier ones, and page ids stay unique across a reopen.
func TestUpdateSplitsLargeTransactions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		width int // bytes of each URL
	}{
		{"many short", 40_000, 30},
		{"fewer long", 4_000, 2_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := open(t, dir)
			url := func(i int) string {
				u := fmt.Sprintf("http://h.test/%d/", i)
				return u + strings.Repeat("x", max(0, tc.width-len(u)))
			}
			var maxID uint64
			err := db.Update(func(tx *Tx) error {
				for i := 0; i < tc.n; i++ {
					if i > 0 {
						// Reads see the writes of earlier parts.
						if _, seen, err := tx.SeenID(url(i - 1)); err != nil || !seen {
							return fmt.Errorf("url %d not seen inside the transaction (err %v)", i-1, err)
						}
					}
					id := tx.NewID()
					maxID = max(maxID, id)
					if err := tx.MarkSeen(url(i), id); err != nil {
						return err
					}
					if err := tx.PutQueue(frontier.Item{ID: id, URL: url(i), Host: "h.test", Seq: uint64(i)}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("Update: %v", err)
			}
			hosts, err := db.QueueHosts()
			if err != nil || len(hosts) != 1 || hosts[0].Count != tc.n {
				t.Fatalf("queue after the update: %+v (err %v), want %d entries", hosts, err, tc.n)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = open(t, dir)
			defer db.Close()
			err = db.Update(func(tx *Tx) error {
				if id := tx.NewID(); id <= maxID {
					return fmt.Errorf("id %d after reopen, but %d was taken before", id, maxID)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range []int{0, tc.n / 2, tc.n - 1} {
				if ok, err := db.Seen(url(i)); err != nil || !ok {
					t.Errorf("url %d not seen after reopen (err %v)", i, err)
				}
			}
		})
	}
}

// TestUpdateFailureWritesNothingWhenOnePart: a transaction that fits in one
// part is still all or nothing.
func TestUpdateFailureWritesNothingWhenOnePart(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	boom := errors.New("boom")
	err := db.Update(func(tx *Tx) error {
		if err := tx.MarkSeen("http://h.test/a", tx.NewID()); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update: %v, want boom", err)
	}
	if ok, _ := db.Seen("http://h.test/a"); ok {
		t.Error("a failed one-part transaction left a write behind")
	}
}

// TestValuesLargerThanTheDefaultLogFile: a value above the default value log
// file size (a large page's decoded text, with fetch.max_body_size raised) is
// stored when the store is opened for such values, and read back whole.
func TestValuesLargerThanTheDefaultLogFile(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 70 MB")
	}
	const size = DefaultValueLogFileSize + 6<<20
	// Random bytes: values are stored compressed, and these do not compress.
	seed := testtools.Seed(t, "./storage/")
	raw := make([]byte, size)
	rand.New(rand.NewSource(int64(seed))).Read(raw)
	text := string(raw)
	dir := t.TempDir()
	small := open(t, dir)
	err := small.Update(func(tx *Tx) error { return tx.PutText(1, text) })
	small.Close()
	if err == nil {
		t.Fatal("a value larger than a value log file was accepted by a store not opened for it; the test proves nothing")
	}
	db, err := Open(dir, Options{MaxValueSize: size})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *Tx) error { return tx.PutText(1, text) }); err != nil {
		t.Fatalf("store opened for %d-byte values: %v", size, err)
	}
	if got, err := db.Text(1); err != nil || len(got) != size {
		t.Fatalf("read back %d bytes (err %v), want %d", len(got), err, size)
	}
}
