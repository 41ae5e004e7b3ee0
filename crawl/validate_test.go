package crawl_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
)

// Each bad value is rejected once, with the message of the stage that owns
// the rule (one copy of each rule: configs only decodes).
func TestValidateRejectsEachBadValueOnce(t *testing.T) {
	d := func(v time.Duration) configs.Duration { return configs.Duration(v) }
	cases := []struct {
		name   string
		change func(c *configs.Config)
		want   string
	}{
		{"workers", func(c *configs.Config) { c.Crawl.Workers = 0 }, "crawl: workers must be between 1 and 1024, got 0"},
		{"too many workers", func(c *configs.Config) { c.Crawl.Workers = 1025 }, "crawl: workers must be between 1 and 1024, got 1025"},
		{"max_depth", func(c *configs.Config) { c.Crawl.MaxDepth = -1 }, "crawl: max_depth must be >= 0"},
		{"max_redirects above", func(c *configs.Config) { c.Fetch.MaxRedirects = 51 }, "fetch: max_redirects must be between 0 and 50, got 51"},
		{"max_redirects below", func(c *configs.Config) { c.Fetch.MaxRedirects = -1 }, "fetch: max_redirects must be between 0 and 50, got -1"},
		{"max_pages", func(c *configs.Config) { c.Crawl.MaxPages = -1 }, "frontier: max_pages must be >= 0"},
		{"sitemap_max_bytes zero", func(c *configs.Config) { c.Crawl.SitemapMaxBytes = 0 }, "crawl.sitemap_max_bytes must be > 0, got 0"},
		{"sitemap_max_bytes below", func(c *configs.Config) { c.Crawl.SitemapMaxBytes = -1 }, "crawl: sitemap_max_bytes must be between 1 and"},
		{"sitemap_max_bytes above", func(c *configs.Config) { c.Crawl.SitemapMaxBytes = 512<<20 + 1 }, "crawl: sitemap_max_bytes must be between 1 and 536870912"},
		{"max_pages_per_host", func(c *configs.Config) { c.Crawl.MaxPagesPerHost = -1 }, "frontier: max_pages_per_host must be >= 0"},
		{"scope", func(c *configs.Config) { c.Crawl.Scope = "planet" }, `invalid scope: unknown mode "planet"`},
		{"allow", func(c *configs.Config) { c.Crawl.Allow = []string{"("} }, `invalid scope: allow[0] "("`},
		{"deny", func(c *configs.Config) { c.Crawl.Deny = []string{"a", "["} }, `invalid scope: deny[1] "["`},
		{"delay", func(c *configs.Config) { c.Politeness.Delay = d(-time.Second) }, "frontier: delay must be >= 0, got -1s"},
		{"adaptive_factor", func(c *configs.Config) { c.Politeness.AdaptiveFactor = 101 }, "frontier: adaptive_factor must be between 0 and 100"},
		{"max_delay", func(c *configs.Config) { c.Politeness.Delay = d(time.Minute) }, "frontier: max_delay (30s) must be >= delay (1m0s)"},
		{"backoff_base", func(c *configs.Config) { c.Politeness.BackoffBase = 0 }, "frontier: backoff_base must be > 0 and <= backoff_max"},
		{"backoff_max", func(c *configs.Config) { c.Politeness.BackoffMax = d(time.Second) }, "frontier: backoff_base must be > 0 and <= backoff_max, got 5s and 1s"},
		{"max_failures", func(c *configs.Config) { c.Politeness.MaxFailures = 0 }, "frontier: max_failures must be >= 1"},
		{"robots_ttl", func(c *configs.Config) { c.Politeness.RobotsTTL = 0 }, "robots.txt cache: ttl must be > 0"},
		{"robots_retry", func(c *configs.Config) { c.Politeness.RobotsRetry = d(-time.Second) }, "robots.txt cache: retry_interval must be > 0"},
		{"user_agent empty", func(c *configs.Config) { c.Fetch.UserAgent = "" }, "fetch.user_agent must not be empty"},
		{"user_agent control", func(c *configs.Config) { c.Fetch.UserAgent = "a\nb" }, "fetch options: user agent"},
		{"robots_agent empty", func(c *configs.Config) { c.Fetch.RobotsAgent = "" }, "fetch.robots_agent must not be empty"},
		{"robots_agent token", func(c *configs.Config) { c.Fetch.RobotsAgent = "horse shoe" }, "fetch options: robots agent"},
		{"timeout zero", func(c *configs.Config) { c.Fetch.Timeout = 0 }, "fetch.timeout must be > 0"},
		{"timeout negative", func(c *configs.Config) { c.Fetch.Timeout = d(-time.Second) }, "fetch options: timeout -1s: must not be negative"},
		{"max_body_size small", func(c *configs.Config) { c.Fetch.MaxBodySize = 100 }, "fetch.max_body_size must be between 1024 and"},
		{"max_body_size above a stored value", func(c *configs.Config) { c.Fetch.MaxBodySize = 600000000 }, "fetch.max_body_size must be between 1024 and"},
		{"max_body_size negative", func(c *configs.Config) { c.Fetch.MaxBodySize = -1 }, "fetch options: max body size -1"},
		{"allow_addresses", func(c *configs.Config) { c.Fetch.AllowAddresses = []string{"10.0.0.0/8", "foo!bar"} }, `allow "foo!bar": not an IP address`},
		{"proxy", func(c *configs.Config) { c.Fetch.Proxy = "ftp://proxy.test:21" }, "fetch.proxy: "},
		{"max_length", func(c *configs.Config) { c.URLs.MaxLength = 10 }, "frontier: max_url_length must be between 16 and 16384, got 10"},
		{"max_length above a key", func(c *configs.Config) { c.URLs.MaxLength = 20000 }, "frontier: max_url_length must be between 16 and 16384, got 20000"},
		{"max_path_depth", func(c *configs.Config) { c.URLs.MaxPathDepth = 0 }, "frontier: max_path_depth must be >= 1"},
		{"max_repeated_segment", func(c *configs.Config) { c.URLs.MaxRepeatedSegment = 0 }, "frontier: max_repeated_segment must be >= 1"},
		{"max_query_params", func(c *configs.Config) { c.URLs.MaxQueryParams = -1 }, "frontier: max_query_params must be >= 0"},
		{"shingle_words", func(c *configs.Config) { c.Dedup.ShingleWords = 65 }, "dedup: shingle words 65 out of range [1, 64]"},
		{"samples", func(c *configs.Config) { c.Dedup.Samples = 2000 }, "dedup: samples 2000 out of range [1, 1024]"},
		{"samples below the filter's", func(c *configs.Config) { c.Dedup.Samples = 50 }, "dedup: filter needs k*s = 84 samples, sketch has 50"},
		{"filter", func(c *configs.Config) { c.Dedup.Filter = "lycos" }, `dedup: unknown filter preset "lycos"`},
		{"filter_bits", func(c *configs.Config) { c.Dedup.Filter, c.Dedup.FilterBits = "custom", 8 }, "dedup: filter bits 8: want 16, 32 or 64"},
		{"filter_r", func(c *configs.Config) { c.Dedup.Filter, c.Dedup.FilterR = "custom", 7 }, "dedup: filter k=6 s=14 r=7"},
		{"simhash_k", func(c *configs.Config) { c.Dedup.SimhashK = 9 }, "dedup: simhash k 9 out of range [0, 8]"},
		{"simhash_index", func(c *configs.Config) { c.Dedup.SimhashIndex = "lsh" }, `dedup: unknown simhash index "lsh"`},
		{"simhash_weight", func(c *configs.Config) { c.Dedup.SimhashWeight = "idf" }, `dedup: unknown simhash weighting "idf"`},
		{"psm_budget", func(c *configs.Config) { c.Dedup.PSMBudget = 0 }, "dedup: psm budget 0"},
		{"bphs_blocks", func(c *configs.Config) { c.Dedup.SimhashIndex, c.Dedup.BPHSBlocks = "bphs", 1 }, "dedup: bphs blocks 1 out of range [2, 16]"},
		{"bphs_header", func(c *configs.Config) { c.Dedup.SimhashIndex, c.Dedup.BPHSBlocks, c.Dedup.BPHSHeader = "bphs", 4, 2 }, "dedup: bphs header blocks 2: want 1 <= g <= G-k = 1"},
		{"threshold", func(c *configs.Config) { c.Dedup.Threshold = 0.5 }, "dedup: threshold 0.5 out of range [0.75, 1]"},
		{"mirror shares", func(c *configs.Config) { c.Mirror.OtherShare = 0.9 }, "mirror shares must satisfy 0 < other_share (0.9) < mirror_share (0.8) < 1"},
		{"false_mirror", func(c *configs.Config) { c.Mirror.FalseMirror = 0.5 }, "mirror.false_mirror must be above 0 and below 0.5, got 0.5"},
		{"missed_mirror", func(c *configs.Config) { c.Mirror.MissedMirror = 0 }, "mirror.missed_mirror must be above 0 and below 0.5, got 0"},
		{"sample", func(c *configs.Config) { c.Mirror.Sample = 0 }, "mirror.sample must be between 1 and 10000, got 0"},
		{"max_compared", func(c *configs.Config) { c.Mirror.MaxCompared = 0 }, "mirror.max_compared must be >= 1, got 0"},
		{"verify_every", func(c *configs.Config) { c.Mirror.VerifyEvery = 1 }, "mirror.verify_every must be >= 2, got 1"},
		{"policy", func(c *configs.Config) { c.Mirror.Policy = "sometimes" }, `mirror.policy must be skip, verify or fetch, got "sometimes"`},
		{"link_sample", func(c *configs.Config) { c.Mirror.LinkSample = 1.5 }, "mirror.link_sample must be in [0, 1], got 1.5"},
		{"verify_share", func(c *configs.Config) { c.Mirror.VerifyShare = 0 }, "mirror.verify_share must be in (0, 1], got 0"},
		{"min_free_bytes", func(c *configs.Config) { c.Storage.MinFreeBytes = -1 }, "storage.min_free_bytes must be >= 0, got -1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := configs.Default()
			c.change(&cfg)
			err := crawl.Validate(cfg)
			if err == nil {
				t.Fatalf("accepted; want %q", c.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], c.want) {
				t.Errorf("got %d errors:\n%v\nwant one: %q", len(lines), err, c.want)
			}
		})
	}
}

// A config with several errors lists every one of them.
func TestValidateListsEveryError(t *testing.T) {
	cfg := configs.Default()
	cfg.Crawl.Workers = 0
	cfg.Crawl.Scope = "planet"
	cfg.Crawl.Deny = []string{"("}
	cfg.Dedup.Filter = "lycos"
	cfg.Dedup.Threshold = 0.5
	cfg.Dedup.SimhashWeight = "idf"
	cfg.Mirror.Sample = 0
	cfg.Fetch.Timeout = 0
	err := crawl.Validate(cfg)
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"crawl: workers", "unknown mode", "deny[0]", "dedup: unknown filter preset", "dedup: threshold",
		"dedup: unknown simhash weighting", "mirror.sample", "fetch.timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
	if n := len(strings.Split(err.Error(), "\n")); n != 8 {
		t.Errorf("%d errors, want 8:\n%v", n, err)
	}
	if err := crawl.Validate(configs.Default()); err != nil {
		t.Errorf("the default config is invalid: %v", err)
	}
}

// The rules that drifted (shingle_words <= 32 in configs, <= 64 in dedup;
// filter_bits {16, 64} against {16, 32, 64}) follow what the detector
// really supports: 64-word shingles and 32-bit supershingles pass, and a
// detector built from them finds a near duplicate and keeps an unrelated page.
func TestValidateAcceptsWhatTheDetectorSupports(t *testing.T) {
	words := func(seed, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("w%d_%d", seed, i)
		}
		return out
	}
	for _, c := range []struct {
		name   string
		change func(d *configs.Dedup)
	}{
		{"64-word shingles", func(d *configs.Dedup) { d.ShingleWords = 64 }},
		{"33-word shingles", func(d *configs.Dedup) { d.ShingleWords = 33 }},
		{"32-bit supershingles", func(d *configs.Dedup) { d.Filter, d.FilterBits = "custom", 32 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := configs.Default()
			c.change(&cfg.Dedup)
			if err := crawl.Validate(cfg); err != nil {
				t.Fatalf("refused: %v", err)
			}
			det, err := dedup.New(crawl.DedupOptions(cfg.Dedup))
			if err != nil {
				t.Fatal(err)
			}
			page := words(1, 20000)
			if got := det.CheckAndAdd(1, det.Sign(page)); got.Class != dedup.Unique {
				t.Fatalf("first page: %+v", got)
			}
			near := append([]string(nil), page...)
			near[10000] = "changed" // one word of 20,000: J >= 0.99 for any w <= 64
			if got := det.CheckAndAdd(2, det.Sign(near)); got.Class != dedup.Near || got.Original != 1 {
				t.Errorf("near duplicate: %+v, want near of page 1", got)
			}
			if got := det.CheckAndAdd(3, det.Sign(words(2, 20000))); got.Class != dedup.Unique {
				t.Errorf("unrelated page: %+v, want unique", got)
			}
		})
	}
}
