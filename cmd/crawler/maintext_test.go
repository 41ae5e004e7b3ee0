//go:build e2e

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
)

// exportLines runs `crawler export --format jsonl --all` with extra args
// and returns each record as a map, and what export wrote on stderr.
func exportLines(t *testing.T, data string, extra ...string) ([]map[string]any, string) {
	t.Helper()
	start := time.Now()
	b, stderr := runOut(t, "export", append([]string{"--data", data, "--format", "jsonl", "--all"}, extra...)...)
	took := time.Since(start)
	recs := decodeJSONL[map[string]any](t, b)
	t.Logf("export %v: %d records in %v (%.2f ms a record)", extra, len(recs), took.Round(time.Millisecond), float64(took.Microseconds())/1000/float64(max(len(recs), 1)))
	return recs, stderr
}

// TestCorpusMainText: on the crawl of the real corpus, with
// --with-main-text every JSONL record has main_text, drawn from the page's visible text and shorter than it
// (navigation, headers and footers left out), and every page with a raw
// response gets one; with --main-text, text holds that main text and
// records have no main_text.
func TestCorpusMainText(t *testing.T) {
	c := crawlCorpus(t)
	recs, stderr := exportLines(t, c.data, "--with-main-text")
	if strings.Contains(stderr, "no main text") {
		t.Errorf("pages without main text on a crawl that kept every raw response: %s", stderr)
	}
	mainOf := map[string]string{}
	var withMain, parsed int
	var inText, kept []float64 // per page: share of main-text words in the visible text; main words / visible words
	for _, r := range recs {
		url, _ := r["url"].(string)
		mt, ok := r["main_text"].(string)
		if !ok {
			t.Fatalf("%s: no main_text string: %v", url, r["main_text"])
		}
		mainOf[url] = mt
		class, _ := r["class"].(string)
		if class == "unique" || class == "exact_duplicate" || class == "near_duplicate" {
			parsed++
		} else if mt != "" {
			t.Errorf("%s (%s) has a main text", url, class)
		}
		if mt == "" {
			continue
		}
		withMain++
		text, _ := r["text"].(string)
		mw, tw := words(mt), words(text)
		inText = append(inText, containedShare(mw, tw))
		kept = append(kept, float64(len(mw))/float64(max(len(tw), 1)))
	}
	slices.Sort(inText)
	slices.Sort(kept)
	t.Logf("%d records, %d parsed pages, %d with a main text; median share of its words in the visible text %.3f; median main/visible words %.3f",
		len(recs), parsed, withMain, inText[len(inText)/2], kept[len(kept)/2])
	if withMain < parsed/2 {
		t.Errorf("main text on %d of %d parsed pages", withMain, parsed)
	}
	if m := inText[len(inText)/2]; m < 0.95 {
		t.Errorf("median share of main-text words found in the visible text %.3f, want 0.95", m)
	}
	if m := kept[len(kept)/2]; m >= 1 {
		t.Errorf("median main text keeps %.3f of the visible words: nothing left out", m)
	}

	mainRecs, _ := exportLines(t, c.data, "--main-text")
	if len(mainRecs) != len(recs) {
		t.Fatalf("--main-text wrote %d records, without it %d", len(mainRecs), len(recs))
	}
	for i, r := range mainRecs {
		url, _ := r["url"].(string)
		if want, _ := recs[i]["url"].(string); url != want {
			t.Fatalf("record %d: %s, without --main-text %s", i, url, want)
		}
		if _, ok := r["main_text"]; ok {
			t.Errorf("%s: main_text beside --main-text's text", url)
		}
		if text, _ := r["text"].(string); text != mainOf[url] {
			t.Errorf("%s: --main-text text %.60q, main_text %.60q", url, text, mainOf[url])
		}
	}
}

// words splits s into lower-cased runs of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) })
}

// containedShare is the share of the words of a (as a bag) found in b.
func containedShare(a, b []string) float64 {
	have := map[string]int{}
	for _, w := range b {
		have[w]++
	}
	found := 0
	for _, w := range a {
		if have[w] > 0 {
			have[w]--
			found++
		}
	}
	return float64(found) / float64(max(len(a), 1))
}

// TestExportMainTextWithoutRaw: a crawl that kept no raw responses
// (storage.keep_raw: false) exports every page whole with an empty
// main_text and a main_text_error saying why, and export says how many
// pages have none, and why.
func TestExportMainTextWithoutRaw(t *testing.T) {
	w, err := loopweb.Start(bigTextWeb(t, 10), loopweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("storage:\n  keep_raw: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	var so, se bytes.Buffer
	if err := run(context.Background(), []string{"crawl", "--config", cfg, "--data", data, "--delay", "0", "--quiet", w.URL("127.0.0.81", "/")}, &so, &se); err != nil {
		t.Fatalf("crawl: %v %s", err, se.String())
	}
	recs, stderr := exportLines(t, data, "--with-main-text")
	if len(recs) != 11 {
		t.Fatalf("%d records, want 11", len(recs))
	}
	for _, r := range recs {
		if text, _ := r["text"].(string); text == "" {
			t.Errorf("%s: no text", r["url"])
		}
		if mt, ok := r["main_text"].(string); !ok || mt != "" {
			t.Errorf("%s: main_text %q (present %v), want empty", r["url"], mt, ok)
		}
		if why, _ := r["main_text_error"].(string); !strings.Contains(why, "storage.keep_raw") {
			t.Errorf("%s: main_text_error %q, want why (storage.keep_raw)", r["url"], why)
		}
	}
	if !strings.Contains(stderr, "11 pages have no main text") || !strings.Contains(stderr, "11 without a raw response") {
		t.Errorf("export's stderr does not count the pages without main text by cause: %q", stderr)
	}
}
