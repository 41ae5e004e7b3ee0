package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// crashText is the text of page id, above the value threshold, so in the
// value log: 5-13 KB, one in 16 1-3 MB (a kill then often lands in the
// middle of Badger's copy of it into the value log). Random bytes: values are
// stored compressed (codec.go), and these stay their size.
func crashText(id uint64) string { return pageText(id, id%16 == 0) }

// pageText is page id's text: 5-13 KB of random bytes, 1-3 MB when big.
func pageText(id uint64, big bool) string {
	r := rand.New(rand.NewPCG(id, 5))
	n := 5000 + r.IntN(8000)
	if big {
		n = 1<<20 + r.IntN(2<<20)
	}
	return noise(r, n)
}

// crashRaw is the raw response of page id: 3 KB, below the value threshold,
// so in the memtable (4 MB: flushed every thousand pages or so). Its body is
// random bytes, which compression does not shrink.
func crashRaw(id uint64) string {
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nX-Id: %d\r\n\r\n", id) + noise(rand.New(rand.NewPCG(id, 6)), 3000)
}

// noise returns n random bytes from r.
func noise(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return string(b)
}

// vlogEntry encodes an entry as Badger writes it to the value log.
func vlogEntry(key, value []byte) []byte {
	b := []byte{0, 0}
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = binary.AppendUvarint(b, uint64(len(value)))
	b = binary.AppendUvarint(b, 0)
	b = append(append(b, key...), value...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// TestCheckTornVlogWrite: a kill in the middle of Badger's copy of an entry
// into the last value log leaves the entry's tail written and its header
// still zero, then the zeros of the preallocated file. That is not damage in
// the last value log; it is in any other, or when a sound entry follows.
func TestCheckTornVlogWrite(t *testing.T) {
	key := func(i int) []byte { return append([]byte(fmt.Sprintf("t/%08d", i)), 0, 0, 0, 0, 0, 0, 0, 1) }
	val := []byte(strings.Repeat("a page text ", 800))
	build := func(torn func(e []byte) []byte, after bool) []byte {
		b := make([]byte, 2*DefaultValueLogFileSize) // preallocated by a crash
		off := vlogHeaderSize
		for i := range 3 {
			off += copy(b[off:], vlogEntry(key(i), val))
		}
		e := vlogEntry(key(3), val)
		copy(b[off:], torn(e))
		if after {
			copy(b[off+len(e):], vlogEntry(key(4), val))
		}
		return b
	}
	tailOnly := func(e []byte) []byte { // header and start still zero
		c := append([]byte(nil), e...)
		clear(c[:len(c)/2])
		return c
	}
	headOnly := func(e []byte) []byte { // header written, end still zero
		c := append([]byte(nil), e...)
		clear(c[len(c)/2:])
		return c
	}
	for _, c := range []struct {
		name   string
		b      []byte
		last   bool
		damage bool
	}{
		{"tail written, header zero, last file", build(tailOnly, false), true, false},
		{"header written, tail zero, last file", build(headOnly, false), true, false},
		{"tail written, header zero, not the last file", build(tailOnly, false), false, true},
		{"tail written, header zero, a sound entry after", build(tailOnly, true), true, true},
		{"header written, tail zero, a sound entry after", build(headOnly, true), true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			what := scanVlog(c.b, c.last)
			if (what != "") != c.damage {
				t.Errorf("scanVlog = %q; want damage %v", what, c.damage)
			}
		})
	}
}

// TestCheckUnlistedTables: table files the MANIFEST does not list, beside a
// MANIFEST that reads to its end, are what a crash leaves between writing a
// table and recording it: not damage, and the store opens (Badger deletes
// them). A MANIFEST cut inside a record, or holding no record, stays damage.
func TestCheckUnlistedTables(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	for i := range 3000 {
		err := db.Update(func(tx *Tx) error {
			return tx.PutRaw(tx.NewID(), nil, []byte(crashRaw(uint64(i))))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.db.Flatten(1); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash: the data dir as it stands while the store is open with a
	// write in its memtable (its write-ahead log in place), copied aside,
	// plus two table files a flush or compaction had written but not
	// recorded yet.
	db = open(t, dir)
	if err := db.Update(func(tx *Tx) error { return tx.PutMeta("after", []byte("x")) }); err != nil {
		t.Fatal(err)
	}
	crashed := t.TempDir()
	copyOpenStore(t, dir, crashed)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if wals, _ := filepath.Glob(filepath.Join(crashed, "*.mem")); len(wals) == 0 {
		t.Fatal("the copy of an open store has no write-ahead log: the test proves nothing")
	}
	ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(ssts) == 0 {
		t.Fatal("no table written")
	}
	b, err := os.ReadFile(ssts[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"000900.sst", "000901.sst"} {
		if err := os.WriteFile(filepath.Join(crashed, name), b[:len(b)/2], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if found, err := Check(crashed); err != nil || len(found) > 0 {
		t.Fatalf("Check of a crashed store with unlisted tables: %v %v; want no damage", found, err)
	}
	// The same unlisted tables in a store closed cleanly cannot be a
	// crash's: a MANIFEST cut short, even between two records.
	clean := t.TempDir()
	if err := os.CopyFS(clean, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"000900.sst", "000901.sst"} {
		if err := os.WriteFile(filepath.Join(clean, name), b[:len(b)/2], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if found, err := Check(clean); err != nil || len(found) == 0 || !found[0].Fatal {
		t.Fatalf("Check of a cleanly closed store with unlisted tables: %v %v; want fatal damage", found, err)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "MANIFEST"))
	if err != nil {
		t.Fatal(err)
	}
	// Record boundaries: an 8-byte header, then records of a 4-byte length,
	// a 4-byte checksum and the change set.
	var bounds []int
	for off := manifestHeaderSize; off+8 <= len(manifest); {
		off += 8 + int(binary.BigEndian.Uint32(manifest[off:]))
		bounds = append(bounds, off)
	}
	if len(bounds) < 2 {
		t.Fatalf("the MANIFEST has %d records: no boundary to cut at", len(bounds))
	}
	for _, c := range []struct {
		name string
		size int
	}{
		{"cut inside its last record", len(manifest) - 3},
		{"cut to its header", manifestHeaderSize},
		{"cut between its first two records", bounds[0]},
		{"cut before its last record", bounds[len(bounds)-2]},
	} {
		t.Run(c.name, func(t *testing.T) {
			cut := t.TempDir()
			if err := os.CopyFS(cut, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(filepath.Join(cut, "MANIFEST"), int64(c.size)); err != nil {
				t.Fatal(err)
			}
			before := snapshotDir(t, cut)
			found, err := Check(cut)
			if err != nil || len(found) == 0 || !found[0].Fatal {
				t.Errorf("Check: %v %v; want fatal damage", found, err)
			}
			if _, err := Open(cut, Options{ReadOnly: true}); !errors.Is(err, ErrDamaged) {
				t.Errorf("read-only open: %v, want ErrDamaged", err)
			}
			if after := snapshotDir(t, cut); !maps.Equal(before, after) {
				t.Error("the refused open changed the data dir")
			}
		})
	}
	db, err = Open(crashed, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open of the crashed store: %v", err)
	}
	db.Close()
	db = open(t, crashed)
	defer db.Close()
	if _, err := os.Stat(filepath.Join(crashed, "000900.sst")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unlisted table kept after a read-write open: %v", err)
	}
}

// copyOpenStore copies the files of a store that is open into to, as a crash
// leaves them at one instant. Badger flushes and compacts in the background
// (after a reopen too, moving tables to the levels their sizes call for): it
// writes the new tables, records them in the MANIFEST, then deletes the tables
// they replace, so at every instant the tables the MANIFEST lists are on disk.
// A copy file by file spans many instants: the tables are copied before the
// MANIFEST (names sort digits first), and a compaction that writes and records
// a table in between leaves a copy whose MANIFEST lists a table it does not
// hold, which no crash leaves (and Check rightly calls damage). So the copy is
// made again until the store's file names and its MANIFEST are the same after
// it as before it: then no table was written, recorded or deleted meanwhile,
// and the copy is the store at one instant. Nothing writes to the store
// during the copy, so its background work ends and the loop with it.
func copyOpenStore(t *testing.T, from, to string) {
	t.Helper()
	// The background work ends within seconds of the last write; only a
	// store that never settles (a hang) reaches the cap.
	const maxAttempts = 3000
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		before := storeFiles(t, from)
		if err := os.RemoveAll(to); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(to, 0o755); err != nil {
			t.Fatal(err)
		}
		es, err := os.ReadDir(from)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			b, err := os.ReadFile(filepath.Join(from, e.Name()))
			if errors.Is(err, os.ErrNotExist) {
				continue // removed meanwhile: storeFiles differs, the copy is made again
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if storeFiles(t, from) == before {
			return
		}
		t.Logf("copy %d of the open store overlapped a flush or compaction: copying again", attempt)
		time.Sleep(10 * time.Millisecond) // let the background work go on; not a timing assertion
	}
	t.Fatalf("the open store's files changed during each of %d copies: its background work never settled", maxAttempts)
}

// storeFiles returns the file names of the store in dir and its MANIFEST.
func storeFiles(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range es {
		b.WriteString(e.Name() + "\n")
	}
	m, err := os.ReadFile(filepath.Join(dir, "MANIFEST"))
	if err != nil {
		t.Fatal(err)
	}
	b.Write(m)
	return b.String()
}

// snapshotDir returns the contents of every file in dir.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// TestEmptyFilesOfACrash: killed between creating a write-ahead log or a
// value log and sizing it, Badger leaves a file of 0 bytes, which holds
// nothing but which Badger cannot open. It is not damage; the store opens,
// read-only and to resume.
func TestEmptyFilesOfACrash(t *testing.T) {
	for _, ro := range []bool{true, false} {
		t.Run(fmt.Sprintf("read-only %v", ro), func(t *testing.T) {
			dir := t.TempDir()
			db := open(t, dir)
			var id uint64
			err := db.Update(func(tx *Tx) error {
				id = tx.NewID()
				return tx.PutText(id, crashText(1))
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"00077.mem", "000077.vlog"} {
				if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if found, err := Check(dir); err != nil || len(found) > 0 {
				t.Fatalf("Check: %v %v; want no damage", found, err)
			}
			db, err = Open(dir, Options{ReadOnly: ro})
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer db.Close()
			if text, err := db.Text(id); err != nil || text != crashText(1) {
				t.Errorf("text after the crash: %d bytes, %v", len(text), err)
			}
		})
	}
}
