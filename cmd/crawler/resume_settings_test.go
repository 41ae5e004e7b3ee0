package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestResumeRefusesOtherSignatureSettings: the command maps the session's
// refusal of a signature setting (session.CheckCompatibility, tested there
// setting by setting) to exit 2, writes nothing, and resumes with settings
// used only when searching.
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
	metaBefore := readMeta(t, data, storage.MetaConfig, storage.MetaSeeds)
	pagesBefore := countPages(t, data)

	newSeed := seeds[0] + "refused-run-seed"                       // a 404 on the demo web: quick even if a regression crawled it
	err := crawlWith("dedup:\n  shingle_words: 4\n", 100, newSeed) // a new seed too: it must not be remembered
	var ue usageError
	if !errors.As(err, &ue) || exitCode(err, io.Discard) != 2 || !strings.Contains(err.Error(), "dedup.shingle_words 5 (now 4)") {
		t.Errorf("resume with shingle_words 4: got %v, want a usage error naming it", err)
	}
	if after := readMeta(t, data, storage.MetaConfig, storage.MetaSeeds); !maps.Equal(after, metaBefore) {
		t.Errorf("a refused resume changed the store's meta:\nbefore %q\nafter  %q", metaBefore, after)
	}
	if n := countPages(t, data); n != pagesBefore {
		t.Errorf("a refused resume recorded pages: %d, was %d", n, pagesBefore)
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

// An invalid config (here dedup settings the detector refuses as a whole)
// is a usage error that writes no store at all.
func TestInvalidConfigWritesNoStore(t *testing.T) {
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

func countPages(t *testing.T, data string) int {
	t.Helper()
	n := 0
	withStore(t, data, func(db *storage.DB) error {
		return db.ForEachPage(func(*storage.Page) error { n++; return nil })
	})
	return n
}
