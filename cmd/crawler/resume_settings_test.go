package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestResumeRefusesOtherSignatureSettings: a resumed crawl rebuilds its
// near-duplicate index from the stored signatures, so settings that change
// how a page is signed are refused (exit 2, naming each setting and both
// values) and leave the data dir as it was; settings used only when
// searching may change.
func TestResumeRefusesOtherSignatureSettings(t *testing.T) {
	_, seeds := startDemo(t)
	data := filepath.Join(t.TempDir(), "data")
	crawlWith := func(yml string, maxPages int, seeds ...string) error {
		t.Helper()
		args := []string{"crawl", "--data", data, "--delay", "0", "--quiet", "--max-pages", strconv.Itoa(maxPages)}
		if yml != "" {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--config", path)
		}
		var so, se bytes.Buffer
		return run(context.Background(), append(args, seeds...), &so, &se)
	}
	if err := crawlWith("", 4, seeds...); err != nil {
		t.Fatalf("first crawl: %v", err)
	}
	metaBefore := readMeta(t, data, "config", "seeds")
	pagesBefore := countPages(t, data)

	newSeed := seeds[0] + "refused-run-seed" // a 404 on the demo web: quick even if a regression crawled it
	for _, c := range []struct{ yml, want string }{
		{"dedup:\n  shingle_words: 4\n", "dedup.shingle_words 5 (now 4)"},
		{"dedup:\n  samples: 96\n", "dedup.samples 84 (now 96)"},
		{"dedup:\n  filter: bing\n", "filter_s) 14 (now 5)"},
		{"dedup:\n  simhash_weight: tf\n", "dedup.simhash_weight uniform (now tf)"},
		{"dedup:\n  url_tokens: true\n", "dedup.url_tokens false (now true)"},
		{"dedup:\n  title_tokens: true\n", "dedup.title_tokens false (now true)"},
	} {
		err := crawlWith(c.yml, 100, newSeed) // a new seed too: it must not be remembered
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("resume with %q: got %v, want a usage error naming %q", c.yml, err, c.want)
		}
	}
	// The refusals wrote nothing: the same settings, seeds and pages.
	if after := readMeta(t, data, "config", "seeds"); !maps.Equal(after, metaBefore) {
		t.Errorf("a refused resume changed the store's meta:\nbefore %q\nafter  %q", metaBefore, after)
	}
	if n := countPages(t, data); n != pagesBefore {
		t.Errorf("a refused resume recorded pages: %d, was %d", n, pagesBefore)
	}

	// A config written by an older version lacks the newer keys: they read
	// as the defaults that version signed with.
	old := regexp.MustCompile(`(?m)^\s*(simhash_weight|psm_budget|bphs_blocks|bphs_header):.*\n`).ReplaceAllString(metaBefore["config"], "")
	if old == metaBefore["config"] {
		t.Fatal("the stored config has none of the newer keys to remove")
	}
	writeMeta(t, data, "config", old)
	if err := crawlWith("dedup:\n  simhash_weight: tf\n", 100); err == nil || !strings.Contains(err.Error(), "simhash_weight uniform (now tf)") {
		t.Errorf("older store, simhash_weight tf: got %v, want a refusal", err)
	}

	// Search-side settings may change: the index is rebuilt from the same
	// signatures and searched otherwise, and the crawl goes on.
	yml := "dedup:\n  threshold: 0.93\n  simhash_k: 2\n  simhash_index: bphs\n  bphs_blocks: 6\n  bphs_header: 2\n  psm_budget: 8\n  filter: custom\n  filter_k: 6\n  filter_s: 14\n  filter_r: 3\n"
	if err := crawlWith(yml, 100); err != nil {
		t.Fatalf("resume with search-side changes refused: %v", err)
	}
	if n := countPages(t, data); n <= pagesBefore {
		t.Errorf("the resumed crawl recorded no new page (%d, was %d)", n, pagesBefore)
	}
}

// A store signed with URL tokens by an earlier Horseshoe (at the end of the
// page, not in place: no "url_tokens" meta) is refused with URL tokens on;
// one signed by this version resumes.
func TestResumeRefusesEarlierURLTokens(t *testing.T) {
	_, seeds := startDemo(t)
	data := filepath.Join(t.TempDir(), "data")
	cfg := filepath.Join(t.TempDir(), "urls.yaml")
	if err := os.WriteFile(cfg, []byte("dedup:\n  url_tokens: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	crawl := func(maxPages int) error {
		var so, se bytes.Buffer
		return run(context.Background(), append([]string{"crawl", "--data", data, "--delay", "0", "--quiet",
			"--config", cfg, "--max-pages", strconv.Itoa(maxPages)}, seeds...), &so, &se)
	}
	if err := crawl(4); err != nil {
		t.Fatalf("first crawl: %v", err)
	}
	if m := readMeta(t, data, "url_tokens"); m["url_tokens"] != urlTokensInPlace {
		t.Fatalf("meta url_tokens = %q, want %q", m["url_tokens"], urlTokensInPlace)
	}
	if err := crawl(6); err != nil {
		t.Fatalf("resume of this version's store: %v", err)
	}
	writeMeta(t, data, "url_tokens", "") // as an earlier version left it
	err := crawl(8)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "url_tokens at the end of the page") {
		t.Fatalf("resume of an earlier version's URL-token store: got %v, want a usage error", err)
	}
}

// A store that holds no signature yet (its first run signed no page)
// resumes with any settings; an invalid config writes no store at all.
func TestResumeWithoutSignaturesAcceptsAnySettings(t *testing.T) {
	_, seeds := startDemo(t)
	data := filepath.Join(t.TempDir(), "data")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("dedup:\n  samples: 50\n"), 0o644); err != nil { // 6 x 14 samples do not fit
		t.Fatal(err)
	}
	var so, se bytes.Buffer
	err := run(context.Background(), append([]string{"crawl", "--data", data, "--delay", "0", "--quiet", "--config", bad}, seeds...), &so, &se)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "samples") {
		t.Fatalf("invalid dedup settings: got %v, want a usage error about samples", err)
	}
	if _, err := os.Stat(filepath.Join(data, "MANIFEST")); err == nil {
		t.Error("an invalid config left a store behind")
	}

	writeMeta(t, data, "config", "dedup:\n  shingle_words: 4\n  samples: 96\n")
	if err := run(context.Background(), append([]string{"crawl", "--data", data, "--delay", "0", "--quiet", "--max-pages", "3"}, seeds...), &so, &se); err != nil {
		t.Fatalf("a store without signatures refused other settings: %v", err)
	}
	if n := countPages(t, data); n == 0 {
		t.Error("the crawl recorded no page")
	}
}

// withStore opens the crawl store in data for fn and closes it after.
func withStore(t *testing.T, data string, fn func(db *storage.DB) error) {
	t.Helper()
	db, err := storage.Open(data, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := fn(db); err != nil {
		t.Fatal(err)
	}
}

func readMeta(t *testing.T, data string, keys ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	withStore(t, data, func(db *storage.DB) error {
		for _, k := range keys {
			b, err := db.GetMeta(k)
			if err != nil {
				return fmt.Errorf("meta %s: %w", k, err)
			}
			m[k] = string(b)
		}
		return nil
	})
	return m
}

func writeMeta(t *testing.T, data, key, value string) {
	t.Helper()
	withStore(t, data, func(db *storage.DB) error { return db.PutMeta(key, []byte(value)) })
}

func countPages(t *testing.T, data string) int {
	t.Helper()
	n := 0
	withStore(t, data, func(db *storage.DB) error {
		return db.ForEachPage(func(*storage.Page) error { n++; return nil })
	})
	return n
}
