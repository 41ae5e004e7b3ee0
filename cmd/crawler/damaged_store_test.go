//go:build e2e

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/export"
	"github.com/horseshoe-crawler/horseshoe/internal/hostile"
	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
)

// bigTextWeb writes a one-host web on 127.0.0.81 of n pages, most with a
// text above Badger's 4 KiB value threshold (so it lives in the value log).
func bigTextWeb(t *testing.T, n int) string {
	t.Helper()
	root := t.TempDir()
	host := filepath.Join(root, "127.0.0.81")
	if err := os.MkdirAll(host, 0o755); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(81, 81))
	var index strings.Builder
	index.WriteString("<html><head><title>index</title></head><body>")
	for i := range n {
		fmt.Fprintf(&index, "<a href=\"/p%d.html\">p%d</a> ", i, i)
		words := 30 + r.IntN(100)
		if i%4 != 0 {
			words = 900 + r.IntN(900)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "<html><head><title>page %d</title></head><body><p>", i)
		for range words {
			fmt.Fprintf(&b, "w%x ", r.Uint32()%20000)
		}
		b.WriteString("</p></body></html>")
		if err := os.WriteFile(filepath.Join(host, fmt.Sprintf("p%d.html", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	index.WriteString("</body></html>")
	if err := os.WriteFile(filepath.Join(host, "index.html"), []byte(index.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func readJSONL(t *testing.T, path string) map[string]export.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]export.Record{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r export.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out[r.URL] = r
	}
	return out
}

// TestDamagedStoreCommands crawls a small web, then damages copies of its
// data dir (hostile.DamageStore) and runs report, export (JSONL and WARC)
// and crawl on them: no panic and no stack trace, exit 1 with one line
// saying the store is damaged, the data dir byte-identical afterwards, and,
// when the store can be read, a JSONL export holding every page, the ones
// whose text was lost flagged "damaged" with as many flagged as the line
// says and every other text and main text equal to the undamaged export's.
func TestDamagedStoreCommands(t *testing.T) {
	t.Parallel() // its own web and data dirs
	bin := buildSignalCrawler(t)
	w, err := loopweb.Start(bigTextWeb(t, 120), loopweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	data := filepath.Join(t.TempDir(), "data")
	if code, stderr := runBin(t, bin, "crawl", "--data", data, "--delay", "0", "--quiet", w.URL("127.0.0.81", "/")); code != 0 {
		t.Fatalf("crawl: exit %d: %s", code, stderr)
	}
	orig := filepath.Join(t.TempDir(), "orig.jsonl")
	if code, stderr := runBin(t, bin, "export", "--data", data, "--format", "jsonl", "--out", orig); code != 0 {
		t.Fatalf("export of the sound store: exit %d: %s", code, stderr)
	}
	want := readJSONL(t, orig)
	if len(want) < 100 {
		t.Fatalf("the sound export has %d pages, want 121", len(want))
	}
	flagged := regexp.MustCompile(`(\d+) of them flagged "damaged"`)

	cases := []string{"truncate-sst", "truncate-manifest", "truncate-manifest-header", "truncate-vlog", "flip-vlog", "flip-vlog-many", "zero-vlog-block", "delete-vlog", "delete-sst", "flip-keyregistry"}
	for _, name := range cases {
		for seed := range uint64(2) {
			t.Run(fmt.Sprintf("%s/%d", name, seed), func(t *testing.T) {
				dir := copyTree(t, data)
				did, err := hostile.DamageStore(dir, name, rand.New(rand.NewPCG(seed, 7)))
				if errors.Is(err, os.ErrNotExist) {
					t.Skip(err)
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Log(did)
				before := snapshot(t, dir)
				out := t.TempDir()
				jsonl := filepath.Join(out, "pages.jsonl")
				for _, args := range [][]string{
					{"report", "--data", dir, "--format", "text", "--out", filepath.Join(out, "r.txt")},
					{"export", "--data", dir, "--format", "warc", "--out", filepath.Join(out, "c.warc.gz")},
					{"export", "--data", dir, "--format", "jsonl", "--out", jsonl},
					{"crawl", "--data", dir, "--delay", "0", "--quiet"},
				} {
					code, stderr := runBin(t, bin, args...)
					if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
						t.Fatalf("%s panicked: %s", args[0], stderr)
					}
					line := oneLine(t, stderr)
					if code != 1 || !strings.Contains(line, "store damaged") {
						t.Errorf("%s: exit %d, %q; want exit 1 saying the store is damaged", args[0], code, line)
					}
					t.Logf("%s: %s", args[0], line)
					after := snapshot(t, dir)
					if len(after) != len(before) {
						t.Errorf("%s: files in the data dir changed: %d before, %d after", args[0], len(before), len(after))
					}
					for p, h := range before {
						if after[p] != h {
							t.Errorf("%s modified %s", args[0], filepath.Base(p))
						}
					}
					if args[0] != "export" || args[4] != "jsonl" {
						continue
					}
					if _, err := os.Stat(jsonl); err != nil {
						continue // the store could not be opened at all
					}
					got := readJSONL(t, jsonl)
					if len(got) != len(want) {
						t.Errorf("export holds %d pages, the sound one %d", len(got), len(want))
					}
					n := 0
					for u, r := range got {
						switch {
						case r.Damaged:
							n++
							if r.Text != "" && (r.MainText == nil || *r.MainText != "") {
								t.Errorf("%s: flagged damaged, with a text and a main text", u)
							}
						case r.Text != want[u].Text:
							t.Errorf("%s: text differs from the sound export's (%d bytes, want %d)", u, len(r.Text), len(want[u].Text))
						case (r.MainText == nil) != (want[u].MainText == nil) || r.MainText != nil && *r.MainText != *want[u].MainText:
							t.Errorf("%s: not flagged damaged, and main text differs from the sound export's", u)
						}
					}
					m := flagged.FindStringSubmatch(line)
					if n == 0 && m != nil || n > 0 && (m == nil || m[1] != strconv.Itoa(n)) {
						t.Errorf("%d records flagged damaged; the line says %q", n, line)
					}
				}
			})
		}
	}
}

// copyTree copies the data dir src (flat) into a new directory.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
