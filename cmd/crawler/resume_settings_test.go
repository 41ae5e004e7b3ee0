package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
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
	crawlWith := func(yml string, seeds ...string) error {
		t.Helper()
		args := []string{"crawl", "--data", data, "--delay", "0", "--quiet", "--max-pages", "4"}
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
	if err := crawlWith("", seeds...); err != nil {
		t.Fatalf("first crawl: %v", err)
	}

	for _, c := range []struct{ yml, want string }{
		{"dedup:\n  shingle_words: 4\n", "dedup.shingle_words 5 (now 4)"},
		{"dedup:\n  samples: 96\n", "dedup.samples 84 (now 96)"},
		{"dedup:\n  filter: bing\n", "filter_s) 14 (now 5)"},
		{"dedup:\n  simhash_weight: tf\n", "dedup.simhash_weight uniform (now tf)"},
		{"dedup:\n  url_tokens: true\n", "dedup.url_tokens false (now true)"},
	} {
		err := crawlWith(c.yml)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("resume with %q: got %v, want a usage error naming %q", c.yml, err, c.want)
		}
	}
	// The refusals left the stored settings alone.
	db, err := storage.Open(data, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.GetMeta("config")
	db.Close()
	if err != nil || !strings.Contains(string(b), "shingle_words: 5") || !strings.Contains(string(b), "simhash_weight: uniform") {
		t.Errorf("stored config changed by a refused resume (err %v):\n%s", err, b)
	}

	// Search-side settings may change: the same signatures, searched otherwise.
	yml := "dedup:\n  threshold: 0.9\n  simhash_k: 2\n  simhash_index: bphs\n  psm_budget: 8\n  filter: custom\n  filter_k: 6\n  filter_s: 14\n  filter_r: 3\n"
	if err := crawlWith(yml); err != nil {
		t.Errorf("resume with search-side changes refused: %v", err)
	}
}
