package session_test

import (
	"errors"
	"maps"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/session"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// signedStore returns a data dir whose first run (the defaults, seed a.test)
// signed pages.
func signedStore(t *testing.T, cfg configs.Config) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	s := open(t, dir, cfg, "http://a.test/")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	putPages(t, dir, 3, true)
	return dir
}

// A resume is refused (a *UsageError naming each setting and both values)
// when a setting changes how pages are signed, and writes nothing; settings
// used only when searching may change.
func TestOpenRefusesOtherSignatureSettings(t *testing.T) {
	dir := signedStore(t, configs.Default())
	before := meta(t, dir, storage.MetaConfig, storage.MetaSeeds, storage.MetaRunOpen)
	for _, c := range []struct {
		name   string
		change func(d *configs.Dedup)
		want   string
	}{
		{"shingle_words", func(d *configs.Dedup) { d.ShingleWords = 4 }, "dedup.shingle_words 5 (now 4)"},
		{"samples", func(d *configs.Dedup) { d.Samples = 96 }, "dedup.samples 84 (now 96)"},
		{"bing", func(d *configs.Dedup) { d.Filter = "bing" },
			"dedup supershingle samples (filter_s) 14 (now 5), dedup supershingle bits (filter_bits) 64 (now 16)"},
		{"filter_k", func(d *configs.Dedup) { d.Filter, d.FilterK, d.FilterS = "custom", 5, 16 },
			"dedup supershingles (filter_k) 6 (now 5), dedup supershingle samples (filter_s) 14 (now 16)"},
		{"simhash_weight", func(d *configs.Dedup) { d.SimhashWeight = "tf" }, "dedup.simhash_weight uniform (now tf)"},
		{"url_tokens", func(d *configs.Dedup) { d.URLTokens = true }, "dedup.url_tokens false (now true)"},
		{"title_tokens", func(d *configs.Dedup) { d.TitleTokens = true }, "dedup.title_tokens false (now true)"},
		{"two", func(d *configs.Dedup) { d.ShingleWords, d.TitleTokens = 4, true }, "dedup.shingle_words 5 (now 4), dedup.title_tokens false (now true)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := configs.Default()
			c.change(&cfg.Dedup)
			_, err := session.Open(dir, cfg, []string{"http://new.test/"}, nil)
			var ue *session.UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), "signed its pages with "+c.want+": resume it with those settings") {
				t.Errorf("got %v, want a usage error naming %q", err, c.want)
			}
		})
	}
	if after := meta(t, dir, storage.MetaConfig, storage.MetaSeeds, storage.MetaRunOpen); !maps.Equal(after, before) {
		t.Errorf("a refused resume changed the store's meta:\nbefore %q\nafter  %q", before, after)
	}

	cfg := configs.Default()
	d := &cfg.Dedup
	d.Threshold, d.SimhashK, d.SimhashIndex, d.BPHSBlocks, d.BPHSHeader, d.PSMBudget = 0.93, 2, "bphs", 6, 2, 8
	d.Filter, d.FilterK, d.FilterS, d.FilterR = "custom", 6, 14, 3
	d.Simhash = false
	s, err := session.Open(dir, cfg, nil, nil)
	if err != nil {
		t.Fatalf("search-side changes refused: %v", err)
	}
	s.Close()
}

// A config stored by an older version lacks the newer keys: they read as
// the defaults that version signed with.
func TestOpenReadsOlderConfigOverDefaults(t *testing.T) {
	dir := signedStore(t, configs.Default())
	old := regexp.MustCompile(`(?m)^\s*(simhash_weight|psm_budget|bphs_blocks|bphs_header):.*\n`).ReplaceAllString(meta(t, dir, storage.MetaConfig)[storage.MetaConfig], "")
	withStore(t, dir, func(db *storage.DB) error { return db.PutMeta(storage.MetaConfig, []byte(old)) })
	cfg := configs.Default()
	cfg.Dedup.SimhashWeight = "tf"
	if _, err := session.Open(dir, cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "simhash_weight uniform (now tf)") {
		t.Errorf("older store, simhash_weight tf: got %v, want a refusal", err)
	}
	s, err := session.Open(dir, configs.Default(), nil, nil)
	if err != nil {
		t.Fatalf("older store, same settings: %v", err)
	}
	s.Close()
}

// A store signed with URL tokens at the end of the page (an earlier
// Horseshoe: no url_tokens meta) is refused with URL tokens on.
func TestOpenRefusesEarlierURLTokens(t *testing.T) {
	cfg := configs.Default()
	cfg.Dedup.URLTokens = true
	dir := signedStore(t, cfg)
	s := open(t, dir, cfg)
	s.Close()
	withStore(t, dir, func(db *storage.DB) error { return db.PutMeta(storage.MetaURLTokens, nil) })
	_, err := session.Open(dir, cfg, nil, nil)
	var ue *session.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "url_tokens at the end of the page") {
		t.Fatalf("got %v, want a usage error", err)
	}
}

// A store without signatures (its first run signed no page) resumes with
// any settings.
func TestOpenWithoutSignaturesAcceptsAnySettings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s := open(t, dir, configs.Default(), "http://a.test/")
	s.Close()
	putPages(t, dir, 2, false)
	cfg := configs.Default()
	cfg.Dedup.ShingleWords, cfg.Dedup.Samples = 4, 96
	s = open(t, dir, cfg)
	s.Close()
}
