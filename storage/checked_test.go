package storage

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
)

// checkedStore writes a store in three sessions (three tables, value logs
// with texts in them) and returns its dir and one text id per session.
func checkedStore(t *testing.T) (string, []uint64) {
	t.Helper()
	dir := t.TempDir()
	var ids []uint64
	for s := range 3 {
		db := open(t, dir)
		for i := range 40 {
			err := db.Update(func(tx *Tx) error {
				id := tx.NewID()
				if i == 0 {
					ids = append(ids, id)
				}
				if err := tx.PutText(id, checkedText(id)); err != nil {
					return err
				}
				return tx.PutRaw(id, nil, []byte(crashRaw(uint64(s*100+i))))
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dir, ids
}

// checkedText is above the value threshold, compressed too (random bytes,
// which compression does not shrink): in the value log.
func checkedText(id uint64) string {
	return fmt.Sprintf("text of page %d ", id) + noise(rand.New(rand.NewPCG(id, 7)), 9000)
}

// openRecording opens dir and returns the tables and value logs its check
// read whole.
func openRecording(t *testing.T, dir string, o Options) (*DB, []string, error) {
	t.Helper()
	var read []string
	checkedHook = func(d string, r []string) {
		if d == dir {
			read = slices.Clone(r)
		}
	}
	defer func() { checkedHook = nil }()
	db, err := Open(dir, o)
	return db, read, err
}

func filesOf(t *testing.T, dir, ext string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range m {
		out = append(out, filepath.Base(p))
	}
	sort.Strings(out)
	return out
}

// TestOpenReadsOnlyWhatChanged: a table or a value log a check at Open read
// whole and found sound is not read again while it is unchanged. An open of a
// store unchanged since the last open reads no table and no value log but the
// last (which Badger appends to), the one that was last at the previous open
// (Badger cut it to its end then, a change) and the tables a compaction wrote
// since the previous open. Without the sidecar, or with a damaged one, every
// file is read, as Check does.
func TestOpenReadsOnlyWhatChanged(t *testing.T) {
	dir, _ := checkedStore(t)
	var before []string // the tables and value logs at the previous open
	var prevLast string
	for i := range 3 {
		vlogs := filesOf(t, dir, ".vlog")
		last := vlogs[len(vlogs)-1]
		tables := filesOf(t, dir, ".sst")
		db, read, err := openRecording(t, dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			skipped := map[string]int{}
			for _, name := range append(slices.Clone(tables), vlogs...) {
				switch {
				case slices.Contains(read, name):
					if name != last && name != prevLast && slices.Contains(before, name) {
						t.Errorf("an open of an unchanged store read %s whole (read %v; last value logs %s and %s)", name, read, prevLast, last)
					}
				default:
					skipped[filepath.Ext(name)]++
				}
			}
			if !slices.Contains(read, last) {
				t.Errorf("the last value log %s was not read (read %v)", last, read)
			}
			if skipped[".sst"] == 0 || skipped[".vlog"] < 2 {
				t.Fatalf("skipped %v of tables %v and value logs %v: the test proves nothing", skipped, tables, vlogs)
			}
		}
		prevLast, before = last, append(tables, vlogs...)
	}
	// No sidecar, or a damaged one: every listed table and value log.
	for _, damage := range []func() error{
		func() error { return os.Remove(filepath.Join(dir, checkedFile)) },
		func() error {
			p := filepath.Join(dir, checkedFile)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 1
			return os.WriteFile(p, b, 0o644)
		},
	} {
		db := open(t, dir) // writes a sound sidecar
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if readChecked(dir) == nil {
			t.Fatal("a read-write open of a sound store wrote no sidecar")
		}
		if err := damage(); err != nil {
			t.Fatal(err)
		}
		want := append(filesOf(t, dir, ".sst"), filesOf(t, dir, ".vlog")...)
		db, read, err := openRecording(t, dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		sort.Strings(want)
		sort.Strings(read)
		if !slices.Equal(read, want) {
			t.Errorf("without a sound sidecar the check read %v, want every table and value log %v", read, want)
		}
		if readChecked(dir) != nil {
			t.Error("a read-only open wrote a sidecar")
		}
	}
}

// TestOpenCatchesRewrittenFiles: a table or an old value log damaged after a
// check recorded it as sound, by a rewrite (a new inode) or a cut (a new
// size), is read again and the store refused, read-write and read-only.
func TestOpenCatchesRewrittenFiles(t *testing.T) {
	cases := []struct {
		name   string
		file   func(tables, vlogs []string) string
		damage func(b []byte) []byte
	}{
		{"table rewritten with a bit flipped", func(ts, _ []string) string { return ts[0] },
			func(b []byte) []byte { b[len(b)/4] ^= 0x10; return b }},
		{"table cut short", func(ts, _ []string) string { return ts[len(ts)-1] },
			func(b []byte) []byte { return b[:len(b)-100] }},
		{"old value log rewritten with a bit flipped", func(_, vs []string) string { return vs[0] },
			func(b []byte) []byte { b[len(b)/2] ^= 0x10; return b }},
		{"old value log cut short", func(_, vs []string) string { return vs[1] },
			func(b []byte) []byte { return b[:len(b)-7] }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := checkedStore(t)
			// Opens record the files they find sound, but the last value
			// log and the tables compactions write after the check.
			var name string
			for i := 0; name == ""; i++ {
				if i == 6 {
					t.Fatalf("no %s recorded as checked after %d opens: the test proves nothing", c.name, i)
				}
				db := open(t, dir)
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				known := readChecked(dir)
				recorded := func(ext string) []string {
					return slices.DeleteFunc(filesOf(t, dir, ext), func(n string) bool { _, ok := known[n]; return !ok })
				}
				if ts, vs := recorded(".sst"), recorded(".vlog"); len(ts) > 0 && len(vs) > 1 {
					name = c.file(ts, vs)
				}
			}
			p := filepath.Join(dir, name)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			// Rewritten: a new file renamed over the old one.
			if err := os.WriteFile(p+".new", c.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(p+".new", p); err != nil {
				t.Fatal(err)
			}
			for _, ro := range []bool{true, false} {
				db, read, err := openRecording(t, dir, Options{ReadOnly: ro})
				var found []Damage
				var de *DamageError
				switch {
				case err == nil:
					// A read-only open reads what is left of a damaged
					// value log, and says what is lost.
					found = db.Damage()
					db.Close()
				case errors.As(err, &de):
					found = de.Damages
				}
				if !slices.ContainsFunc(found, func(d Damage) bool { return d.File == name }) {
					t.Errorf("read-only %v: open gave %v, damage %v; want the damage of %s", ro, err, found, name)
				}
				if !ro && err == nil {
					t.Errorf("a crawl resumed on a damaged %s", name)
				}
				if !slices.Contains(read, name) {
					t.Errorf("read-only %v: the check did not read %s again (read %v)", ro, name, read)
				}
			}
		})
	}
}
