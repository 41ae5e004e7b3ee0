package crawl

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/parse"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Env is what a crawl needs besides its configuration: the facts of this run
// and the resources of the process.
type Env struct {
	// Seeds are every seed of the crawl, canonical: the scope is drawn
	// around them.
	Seeds []string
	// PagesSpent is the part of crawl.max_pages earlier runs spent; the
	// frontier leases the rest.
	PagesSpent int
	// Policy is the address policy every connection is checked against
	// (AddrPolicy builds the crawler's); nil checks no address.
	Policy *fetch.AddrPolicy
	// Getenv reads the proxy environment (HTTP_PROXY, HTTPS_PROXY,
	// NO_PROXY) for fetch.proxy ""; nil reads none (os.Getenv reads the
	// process's).
	Getenv func(string) string
	// Resolver looks up host names for the fetcher and the politeness
	// clocks, at most DefaultMaxLookups at a time for both; nil is the
	// system's.
	Resolver fetch.Resolver
	// Transport replaces the fetcher's transport (fetch.Options.Transport;
	// tests: an in-memory network); nil is the built-in one.
	Transport http.RoundTripper
	// ProgressEvery is the interval of slog progress lines (0: none).
	ProgressEvery time.Duration
}

// Crawl is a crawl wired by Build: fetch -> robots.txt -> frontier -> scope
// -> dedup -> engine over one store.
type Crawl struct {
	Engine   *Engine
	Frontier *frontier.Frontier // the local frontier (nil in a shared crawl)
	Queues   Frontier           // the frontier the engine drives (Frontier, or the shared one)
	Fetcher  *fetch.Fetcher
	Scope    *frontier.Scope // widened by AddSeeds (control.go)
}

// Close ends the rebuild of the duplicate index if it still runs and
// releases the fetcher's connections.
func (c *Crawl) Close() {
	c.Engine.stopIndexLoad()
	c.Fetcher.Close()
}

// ErrBudgetSpent is Build's error when earlier runs spent crawl.max_pages.
var ErrBudgetSpent = errors.New("crawl: page budget already spent")

// ConfigError marks a Build error caused by the configuration (or the seeds)
// rather than by the store.
type ConfigError struct{ Err error }

func (e ConfigError) Error() string { return e.Err.Error() }
func (e ConfigError) Unwrap() error { return e.Err }

// Build wires the crawl cfg describes over db. cfg must be valid
// (Validate); the frontier loads the queues db holds. Close the result when
// done.
func Build(cfg configs.Config, db *storage.DB, env Env, logger *slog.Logger) (*Crawl, error) {
	return build(cfg, db, nil, env, logger)
}

// build is Build, over the shared state sh when it is not nil (shared.go).
func build(cfg configs.Config, db *storage.DB, sh *Shared, env Env, logger *slog.Logger) (*Crawl, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	det, err := dedup.New(DedupOptions(cfg.Dedup))
	if err != nil {
		return nil, ConfigError{err}
	}
	// One bound for every lookup of the crawl: the fetcher's (each dial by
	// name) and the politeness clocks' share it.
	if env.Resolver == nil {
		env.Resolver = net.DefaultResolver
	}
	env.Resolver = fetch.LimitLookups(env.Resolver, DefaultMaxLookups)
	fetchOpts, err := proxyOptions(FetchOptions(cfg.Fetch, env), cfg.Fetch.Proxy, env.Getenv)
	if err != nil {
		return nil, err
	}
	fetcher, err := fetch.New(fetchOpts, logger.With("system", "fetch"))
	if err != nil {
		return nil, ConfigError{err}
	}
	var robots RobotsSource
	if cfg.Politeness.ObeyRobots {
		robots = fetch.NewRobotsCache(fetcher, RobotsOptions(cfg.Politeness), robotsStore(db, sh), nil)
	}
	fo := FrontierOptions(cfg)
	if fo.MaxPages > 0 && sh == nil { // a shared crawl's budget is counted crawl-wide (in Redis)
		if fo.MaxPages -= env.PagesSpent; fo.MaxPages <= 0 {
			fetcher.Close()
			return nil, ErrBudgetSpent
		}
	}
	scope, err := frontier.NewScope(ScopeOptions(cfg.Crawl), env.Seeds)
	if err != nil {
		fetcher.Close()
		return nil, ConfigError{err}
	}
	eo := EngineOptions(cfg)
	eo.Scope, eo.Addresses, eo.ProgressEvery = scope, fetcher, env.ProgressEvery
	eo.PagesSpent = int64(env.PagesSpent)
	if env.Resolver != nil {
		eo.Resolver = env.Resolver
	}
	if sh != nil {
		eo.ParamRefresh = SharedParamRefresh
		return buildShared(eo, fo, sh, det, fetcher, robots, logger), nil
	}
	fr, err := frontier.New(fo, db, nil, logger.With("system", "frontier"))
	if err != nil {
		fetcher.Close()
		return nil, err
	}
	eng := New(eo, db, fr, fetcher, robots, det, logger.With("system", "crawl"))
	return &Crawl{Engine: eng, Frontier: fr, Queues: fr, Fetcher: fetcher, Scope: scope}, nil
}

// AddrPolicy builds the address policy of a crawl: public addresses, the
// seeds' own addresses (a local test web needs nothing more), the entries of
// fetch.allow_addresses, and private addresses when deny_private_networks is
// off or allowPrivate is set. Link-local and cloud metadata addresses stay
// refused unless a seed or allow_addresses names them.
func AddrPolicy(ctx context.Context, cfg configs.Fetch, seeds []string, allowPrivate bool, logger *slog.Logger) (fetch.AddrPolicy, error) {
	var p fetch.AddrPolicy
	p.AllowPrivate = allowPrivate || !cfg.DenyPrivateNetworks
	if err := p.AllowEntries(cfg.AllowAddresses); err != nil {
		return p, ConfigError{err}
	}
	hosts := make([]string, 0, len(seeds))
	for _, s := range seeds {
		if u, err := url.Parse(s); err == nil {
			hosts = append(hosts, u.Host)
		}
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if added := p.AllowSeeds(lctx, net.DefaultResolver, hosts); len(added) > 0 && logger != nil {
		logger.Info("seeds on non-public addresses: these are allowed, other private addresses are not",
			"allowed", strings.Join(added, " "), "private_networks", p.AllowPrivate)
	}
	return p, nil
}

// FetchOptions maps the fetch section to the fetcher's options. Redirects
// are not followed: the engine queues their targets as links (and bounds
// the chains: Options.MaxRedirects).
func FetchOptions(f configs.Fetch, env Env) fetch.Options {
	o := fetch.DefaultOptions()
	o.UserAgent = f.UserAgent
	o.RobotsAgent = f.RobotsAgent
	o.Timeout = f.Timeout.D()
	o.MaxBodySize = f.MaxBodySize
	o.NoFollowRedirects = true
	if env.Policy != nil {
		o.DenyPrivate, o.Policy = true, *env.Policy
	}
	o.Resolver = env.Resolver
	o.Transport = env.Transport
	return o
}

// proxyOptions adds the proxy of fetch.proxy and the environment to o.
func proxyOptions(o fetch.Options, proxy configs.ProxyURL, getenv func(string) string) (fetch.Options, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var err error
	if o.Proxy, err = fetch.ProxySettings(string(proxy), getenv); err != nil {
		return o, ConfigError{err}
	}
	return o, nil
}

// RobotsOptions maps the politeness section to the robots.txt cache's options.
func RobotsOptions(p configs.Politeness) fetch.RobotsOptions {
	return fetch.RobotsOptions{TTL: p.RobotsTTL.D(), RetryInterval: p.RobotsRetry.D()}
}

// FrontierOptions maps the politeness section and the crawl's budgets to the
// frontier's options.
func FrontierOptions(cfg configs.Config) frontier.Options {
	p := cfg.Politeness
	return frontier.Options{
		Delay:           p.Delay.D(),
		AdaptiveFactor:  p.AdaptiveFactor,
		MaxDelay:        p.MaxDelay.D(),
		MaxPages:        cfg.Crawl.MaxPages,
		MaxPagesPerHost: cfg.Crawl.MaxPagesPerHost,
		BackoffBase:     p.BackoffBase.D(),
		BackoffMax:      p.BackoffMax.D(),
		MaxFailures:     p.MaxFailures,
	}
}

// ScopeOptions maps the crawl section to the scope's options.
func ScopeOptions(c configs.Crawl) frontier.ScopeOptions {
	return frontier.ScopeOptions{Mode: frontier.ScopeMode(c.Scope), Allow: c.Allow, Deny: c.Deny}
}

// ParseOptions maps the config to the parser's options.
func ParseOptions(cfg configs.Config) parse.Options {
	return parse.Options{URLTokens: cfg.Dedup.URLTokens, TitleTokens: cfg.Dedup.TitleTokens,
		BotName: cfg.Fetch.RobotsAgent, MaxTokens: 1 << 20}
}

// EngineOptions maps the config to the engine's options; Build adds the
// scope, the address checker and the progress interval.
func EngineOptions(cfg configs.Config) Options {
	return Options{
		Workers:            cfg.Crawl.Workers,
		MaxDepth:           cfg.Crawl.MaxDepth,
		MaxRedirects:       cfg.Fetch.MaxRedirects,
		Trap:               TrapOptions(cfg.URLs),
		FollowNofollow:     cfg.Crawl.FollowNofollow,
		SkipDuplicateLinks: cfg.Crawl.SkipDuplicateLinks,
		Sitemaps:           cfg.Crawl.Sitemaps,
		SitemapMaxBytes:    cfg.Crawl.SitemapMaxBytes,
		CanonicalHints:     cfg.Crawl.CanonicalHints,
		ObeyRobots:         cfg.Politeness.ObeyRobots,
		RobotsAgent:        cfg.Fetch.RobotsAgent,
		RobotsRetry:        cfg.Politeness.RobotsRetry.D(),
		MaxDelay:           cfg.Politeness.MaxDelay.D(),
		KeepRaw:            cfg.Storage.KeepRaw,
		Parse:              ParseOptions(cfg),
		Mirror:             MirrorDetector(cfg),
		Links:              LinkMonitor(cfg),
	}
}

// IsConfigError reports whether err is the configuration's fault.
func IsConfigError(err error) bool {
	var ce ConfigError
	return errors.As(err, &ce)
}
