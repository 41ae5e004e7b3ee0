package hostile_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/export"
	"github.com/horseshoe-crawler/horseshoe/internal/hostile"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// storeFixture is a finished store on disk: page records with texts and raw
// exchanges, two in three texts and every response above Badger's value
// threshold (4 KiB, so in the value log), the rest in the tables.
type storeFixture struct {
	dir   string
	texts map[uint64]string
	resps map[uint64]string
}

func buildStore(tb testing.TB, pages int) storeFixture {
	tb.Helper()
	f := storeFixture{dir: filepath.Join(tb.TempDir(), "data"), texts: map[uint64]string{}, resps: map[uint64]string{}}
	db, err := storage.Open(f.dir, storage.Options{MinFreeBytes: -1})
	if err != nil {
		tb.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	for i := range pages {
		err := db.Update(func(tx *storage.Tx) error {
			id := tx.NewID()
			u := fmt.Sprintf("http://127.0.0.81/page/%d", i)
			n := 40 + r.IntN(200)
			if i%3 != 0 {
				n = 800 + r.IntN(1500)
			}
			var b strings.Builder
			for range n {
				fmt.Fprintf(&b, "w%x ", r.Uint32()%5000)
			}
			text := b.String()
			resp := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>" + text + strings.Repeat(" ", 4096) + "</p>"
			f.texts[id], f.resps[id] = text, resp
			if err := tx.PutPage(&storage.Page{ID: id, URL: u, Host: "127.0.0.81", Status: 200, Class: storage.ClassUnique, HasRaw: true}); err != nil {
				return err
			}
			if err := tx.PutText(id, text); err != nil {
				return err
			}
			return tx.PutRaw(id, []byte("GET /page HTTP/1.1\r\n\r\n"), []byte(resp))
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	return f
}

func copyDir(tb testing.TB, src string) string {
	tb.Helper()
	dst := filepath.Join(tb.TempDir(), "copy")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return dst
}

func hashDir(tb testing.TB, dir string) map[string][32]byte {
	tb.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[filepath.Base(p)] = sha256.Sum256(b)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func sameFiles(tb testing.TB, what string, before, after map[string][32]byte) {
	tb.Helper()
	for p, h := range before {
		if g, ok := after[p]; !ok {
			tb.Errorf("%s deleted %s", what, p)
		} else if g != h {
			tb.Errorf("%s modified %s", what, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			tb.Errorf("%s created %s", what, p)
		}
	}
}

// TestDamagedStore damages copies of a finished store in every way
// StoreDamages knows, with several random choices each, and checks what the
// store does with them: opening it to resume fails with ErrDamaged in one
// line; opening it read-only either fails the same way or reads what is
// left, every text and response it returns equal to what was written and
// every one it cannot return an ErrDamaged, with the damage reported; and
// neither changes a byte of the data dir.
func TestDamagedStore(t *testing.T) {
	f := buildStore(t, 240)
	// Three seeds of each damage; one under the race detector, where
	// Badger's opens and checks take ten times as long (the end-to-end tier
	// runs all three without it).
	seeds := uint64(3)
	if raceEnabled {
		seeds = 1
	}
	for _, d := range hostile.StoreDamages() {
		for seed := range seeds {
			t.Run(fmt.Sprintf("%s/%d", d.Name, seed), func(t *testing.T) {
				dir := copyDir(t, f.dir)
				did, err := hostile.DamageStore(dir, d.Name, rand.New(rand.NewPCG(seed, 99)))
				if errors.Is(err, os.ErrNotExist) {
					t.Skip(err)
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Log(did)
				before := hashDir(t, dir)

				db, err := storage.Open(dir, storage.Options{ReadOnly: true, MinFreeBytes: -1})
				if err != nil {
					if !errors.Is(err, storage.ErrDamaged) || strings.Contains(err.Error(), "\n") {
						t.Fatalf("read-only open: %v; want one line wrapping ErrDamaged", err)
					}
					// A damaged KEYREGISTRY is named, with what to do, not Badger's words.
					if strings.Contains(d.Name, "keyregistry") && (!strings.Contains(err.Error(), "KEYREGISTRY") || !strings.Contains(err.Error(), "remove it")) {
						t.Errorf("read-only open: %v; want the KEYREGISTRY named and what to do", err)
					}
					t.Logf("read-only open refused: %v", err)
				} else {
					checkReadable(t, f, db, d.Name, did)
					checkExportFlags(t, db)
					if err := db.Close(); err != nil {
						t.Errorf("close: %v", err)
					}
				}
				sameFiles(t, "read-only open", before, hashDir(t, dir))

				db, err = storage.Open(dir, storage.Options{MinFreeBytes: -1})
				if err == nil {
					db.Close()
					t.Fatalf("open to resume succeeded on a damaged store")
				}
				if !errors.Is(err, storage.ErrDamaged) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("open to resume: %v; want one line wrapping ErrDamaged", err)
				}
				sameFiles(t, "open to resume", before, hashDir(t, dir))

				if strings.Contains(d.Name, "keyregistry") {
					// What the error says to do: without the file, every record reads.
					if err := os.Remove(filepath.Join(dir, "KEYREGISTRY")); err != nil {
						t.Fatal(err)
					}
					db, err := storage.Open(dir, storage.Options{ReadOnly: true, MinFreeBytes: -1})
					if err != nil {
						t.Fatalf("read-only open without KEYREGISTRY: %v", err)
					}
					defer db.Close()
					pages := 0
					err = db.ForEachPage(func(p *storage.Page) error {
						pages++
						text, err := db.Text(p.ID)
						if err != nil || text != f.texts[p.ID] {
							t.Errorf("without KEYREGISTRY, page %d: text of %d bytes, %v", p.ID, len(text), err)
						}
						return nil
					})
					if err != nil || pages != len(f.texts) {
						t.Errorf("without KEYREGISTRY: %d of %d pages read, %v", pages, len(f.texts), err)
					}
				}
			})
		}
	}
}

// checkReadable reads every page of a damaged store opened read-only.
func checkReadable(t *testing.T, f storeFixture, db *storage.DB, damage, did string) {
	t.Helper()
	pages, lost := 0, 0
	err := db.ForEachPage(func(p *storage.Page) error {
		pages++
		text, err := db.Text(p.ID)
		switch {
		case errors.Is(err, storage.ErrDamaged):
			lost++
		case err != nil:
			return fmt.Errorf("text of page %d: %w", p.ID, err)
		case text != f.texts[p.ID]:
			t.Errorf("page %d: text differs from the one written (%d bytes, want %d)", p.ID, len(text), len(f.texts[p.ID]))
		}
		_, resp, err := db.Raw(p.ID)
		switch {
		case errors.Is(err, storage.ErrDamaged):
			lost++
		case err != nil:
			return fmt.Errorf("raw of page %d: %w", p.ID, err)
		case string(resp) != f.resps[p.ID]:
			t.Errorf("page %d: response differs from the one written", p.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading a damaged store: %v", err)
	}
	ds := db.Damage()
	t.Logf("%d pages read, %d values lost; damage: %v", pages, lost, ds)
	if len(ds) == 0 {
		t.Errorf("damage (%s) not reported", did)
	}
	if pages+len(f.texts)/100 < len(f.texts) && lost == 0 {
		t.Errorf("%d of %d page records read, none reported lost", pages, len(f.texts))
	}
	var n int
	if strings.HasPrefix(damage, "flip-vlog") {
		fmt.Sscanf(did, "flipped a bit in %d value(s)", &n)
		if lost != n {
			t.Errorf("%d values lost after %s; want %d", lost, did, n)
		}
	}
	if lost > 0 && db.Unreadable()["page texts"]+db.Unreadable()["raw responses"] != lost {
		t.Errorf("Unreadable counts %v; %d values lost", db.Unreadable(), lost)
	}
}

// checkExportFlags exports a damaged store opened read-only as JSONL: a
// record is flagged "damaged" exactly when its text or its raw response is
// unreadable, and what is lost is empty (the text, or the main text made
// from the raw response); the callback counts the records flagged.
func checkExportFlags(t *testing.T, db *storage.DB) {
	t.Helper()
	ids := map[string]uint64{}
	if err := db.ForEachPage(func(p *storage.Page) error { ids[p.URL] = p.ID; return nil }); err != nil {
		t.Fatal(err)
	}
	// Main text is opt-in: without it the raw response is not read, and a
	// record is damaged when its text is; with it, also when its raw
	// response is (its main text then "").
	for _, mainText := range []bool{false, true} {
		var buf bytes.Buffer
		called := 0
		if _, err := export.JSONL(&buf, db, export.JSONLOptions{MainText: mainText, Damaged: func(*storage.Page) { called++ }}); err != nil {
			t.Fatalf("JSONL export (main text %v): %v", mainText, err)
		}
		flagged := 0
		for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
			var r export.Record
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatal(err)
			}
			_, terr := db.Text(ids[r.URL])
			_, _, rerr := db.Raw(ids[r.URL])
			textLost, rawLost := errors.Is(terr, storage.ErrDamaged), errors.Is(rerr, storage.ErrDamaged)
			if r.Damaged {
				flagged++
			}
			switch {
			case r.Damaged != (textLost || (mainText && rawLost)):
				t.Errorf("%s (main text %v): damaged %v, but text lost %v, raw response lost %v", r.URL, mainText, r.Damaged, textLost, rawLost)
			case textLost && r.Text != "":
				t.Errorf("%s: text lost, yet exported", r.URL)
			case mainText && rawLost && (r.MainText == nil || *r.MainText != ""):
				t.Errorf("%s: raw response lost, yet a main text", r.URL)
			case !mainText && r.MainText != nil:
				t.Errorf("%s: a main text, not asked for", r.URL)
			}
		}
		if called != flagged {
			t.Errorf("JSONLOptions.Damaged called %d times, %d records flagged (main text %v)", called, flagged, mainText)
		}
	}
}
