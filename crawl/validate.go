package crawl

import (
	"errors"
	"fmt"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/fetch"
)

// Validate reports every invalid option of cfg at once: each stage checks
// the options Build gives it (its own Validate, one copy of each rule), and
// the limits of the crawl as a whole are checked here.
func Validate(cfg configs.Config) error {
	var policy fetch.AddrPolicy
	return errors.Join(
		EngineOptions(cfg).Validate(),
		FrontierOptions(cfg).Validate(),
		TrapOptions(cfg.URLs).Validate(),
		ScopeOptions(cfg.Crawl).Validate(),
		RobotsOptions(cfg.Politeness).Validate(),
		FetchOptions(cfg.Fetch, Env{}).Validate(),
		proxyError(cfg.Fetch.Proxy),
		policy.AllowEntries(cfg.Fetch.AllowAddresses),
		DedupOptions(cfg.Dedup).Validate(),
		MirrorOptions(cfg.Mirror).Validate(),
		LinkOptions(cfg.Mirror).Validate(),
		crawlLimits(cfg),
	)
}

// proxyError checks fetch.proxy itself (the environment's proxies are
// checked when the crawl is built, Build).
func proxyError(p configs.ProxyURL) error {
	_, err := proxyOptions(fetch.Options{}, p, nil)
	return err
}

// MaxBodySize bounds fetch.max_body_size: a body's decoded text takes up to
// three times its bytes (one byte of windows-1252 or an invalid byte becomes
// three of UTF-8), and each is stored as one value of at most 2 GB.
const MaxBodySize = 512 << 20

// crawlLimits checks what no one stage owns: the store's bound on a page,
// and the settings a crawl must state (a stage built in code fills zero
// fields with defaults; a configuration sets every field).
func crawlLimits(cfg configs.Config) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	f := cfg.Fetch
	if f.UserAgent == "" {
		bad("fetch.user_agent must not be empty")
	}
	if f.RobotsAgent == "" {
		bad("fetch.robots_agent must not be empty")
	}
	// A value the fetcher refuses is its to report.
	fetchOK := func(o fetch.Options) bool { return o.Validate() == nil }
	if f.Timeout == 0 {
		bad("fetch.timeout must be > 0, got %s", f.Timeout.D())
	}
	if cfg.Crawl.SitemapMaxBytes == 0 {
		bad("crawl.sitemap_max_bytes must be > 0, got 0")
	}
	if fetchOK(fetch.Options{MaxBodySize: f.MaxBodySize}) && (f.MaxBodySize < 1024 || f.MaxBodySize > MaxBodySize) {
		bad("fetch.max_body_size must be between 1024 and %d bytes (512 MiB), got %d", MaxBodySize, f.MaxBodySize)
	}
	if cfg.Storage.MinFreeBytes < 0 {
		bad("storage.min_free_bytes must be >= 0, got %d", cfg.Storage.MinFreeBytes)
	}
	return errors.Join(errs...)
}

// maxWorkers and maxRedirects bound Options.Workers and MaxRedirects.
const (
	maxWorkers   = 1024
	maxRedirects = 50
)

// Validate reports every invalid engine option at once.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("crawl: "+format, a...)) }
	if o.Workers < 1 || o.Workers > maxWorkers {
		bad("workers must be between 1 and %d, got %d", maxWorkers, o.Workers)
	}
	if o.MaxDepth < 0 {
		bad("max_depth must be >= 0, got %d", o.MaxDepth)
	}
	if o.MaxRedirects < 0 || o.MaxRedirects > maxRedirects {
		// The option's home is the fetch section (fetch.max_redirects).
		errs = append(errs, fmt.Errorf("fetch: max_redirects must be between 0 and %d, got %d", maxRedirects, o.MaxRedirects))
	}
	if o.SitemapMaxBytes < 0 || o.SitemapMaxBytes > MaxBodySize {
		bad("sitemap_max_bytes must be between 1 and %d bytes (512 MiB; 0 in code: the protocol's 50 MB), got %d",
			MaxBodySize, o.SitemapMaxBytes)
	}
	return errors.Join(errs...)
}
