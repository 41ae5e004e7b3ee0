package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/parse"
	"github.com/horseshoe-crawler/horseshoe/storage"
	"gopkg.in/yaml.v3"
)

const version = "0.1.0"

func defaultConfig() []byte { return configs.DefaultYAML() }

// crawlFlags are the options of 'crawler crawl' that override the config.
type crawlFlags struct {
	config, data, seeds string
	delay               time.Duration
	maxPages, maxDepth  int
	workers             int
	allowPrivate        bool
	quiet               bool
	serve               string
	cpuProfile          string
	set                 map[string]bool
}

func parseCrawlFlags(args []string, stderr io.Writer) (*crawlFlags, []string, error) {
	fs := flag.NewFlagSet("crawl", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported in one line by main
	cf := &crawlFlags{}
	fs.StringVar(&cf.config, "config", "", "YAML config file (defaults: 'crawler config')")
	fs.StringVar(&cf.data, "data", "./crawl-data", "data directory (Badger); an unfinished crawl there is resumed")
	fs.StringVar(&cf.seeds, "seeds", "", "file with one seed URL per line (# comments)")
	fs.DurationVar(&cf.delay, "delay", 0, "minimum delay between requests to one host (overrides politeness.delay)")
	fs.IntVar(&cf.maxPages, "max-pages", 0, "stop after this many page requests (overrides crawl.max_pages)")
	fs.IntVar(&cf.maxDepth, "max-depth", 0, "link hops from a seed (overrides crawl.max_depth)")
	fs.IntVar(&cf.workers, "workers", 0, "concurrent fetches (overrides crawl.workers)")
	fs.BoolVar(&cf.allowPrivate, "allow-private-networks", false, "allow loopback and private addresses (link-local and cloud metadata addresses stay refused; see fetch.allow_addresses)")
	fs.BoolVar(&cf.quiet, "quiet", false, "no progress output (a refreshing line on a terminal, log lines otherwise)")
	fs.StringVar(&cf.serve, "serve", "", "serve the live HTML report and /metrics on this address during the crawl, e.g. 127.0.0.1:8080")
	fs.StringVar(&cf.cpuProfile, "cpuprofile", "", "write a CPU profile of the crawl to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return nil, nil, errHelp
		}
		return nil, nil, usageError{err}
	}
	cf.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { cf.set[f.Name] = true })
	return cf, fs.Args(), nil
}

func cmdCrawl(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cf, rest, err := parseCrawlFlags(args, stderr)
	if err != nil {
		return err
	}
	cfg, err := configs.Load(cf.config)
	if err != nil {
		return usageError{err}
	}
	if cf.set["delay"] {
		cfg.Politeness.Delay = configs.Duration(cf.delay)
		if cfg.Politeness.MaxDelay < cfg.Politeness.Delay {
			cfg.Politeness.MaxDelay = cfg.Politeness.Delay
		}
	}
	if cf.set["max-pages"] {
		cfg.Crawl.MaxPages = cf.maxPages
	}
	if cf.set["max-depth"] {
		cfg.Crawl.MaxDepth = cf.maxDepth
	}
	if cf.set["workers"] {
		cfg.Crawl.Workers = cf.workers
	}
	if err := cfg.Validate(); err != nil {
		return usageError{fmt.Errorf("invalid options: %w", err)}
	}
	raw := rest
	if cf.seeds != "" {
		fromFile, err := readSeeds(cf.seeds)
		if err != nil {
			return usageError{err}
		}
		raw = append(raw, fromFile...)
	}
	seeds, err := canonicalSeeds(raw, cfg.URLs.MaxLength)
	if err != nil {
		return err
	}
	ui := newCrawlUI(stderr, cf.quiet, cf.serve)
	logger := newLogger(ui, cf.quiet)
	if os.Getenv("GOMEMLIMIT") == "" {
		// Badger builds its tables on the Go heap; without a soft limit the
		// heap runs at twice the live data. GOMEMLIMIT overrides.
		debug.SetMemoryLimit(256 << 20)
	}
	if cf.cpuProfile != "" {
		f, err := os.Create(cf.cpuProfile)
		if err != nil {
			return fmt.Errorf("cannot write CPU profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cannot start CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	return runCrawl(ctx, cfg, cf.data, seeds, cf.allowPrivate, logger, stdout, ui)
}

func readSeeds(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read seeds: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read seeds: %w", err)
	}
	return out, nil
}

// canonicalSeeds canonicalizes the seed URLs, without repeats. A seed that
// is not an absolute http(s) URL, or longer than maxLen bytes (urls.max_length,
// which links obey too), is a usage error naming it (shortened).
func canonicalSeeds(raw []string, maxLen int) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, r := range raw {
		u, err := url.Parse(r)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, usagef("bad seed URL %q: want an absolute http:// or https:// URL", shorten(r))
		}
		c, err := frontier.Canonicalize(r, nil)
		if err != nil {
			return nil, usagef("bad seed URL %q: %v", shorten(r), err)
		}
		if len(c) > maxLen {
			return nil, usagef("bad seed URL %q: %d bytes, longer than urls.max_length (%d)", shorten(r), len(c), maxLen)
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// shorten cuts s to its first 100 bytes for an error message.
func shorten(s string) string {
	if len(s) <= 100 {
		return s
	}
	return strings.ToValidUTF8(s[:100], "") + "..."
}

func newLogger(w io.Writer, quiet bool) *slog.Logger {
	level := slog.LevelInfo
	if quiet {
		level = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// addrPolicy builds the address policy of a crawl: public addresses, the
// seeds' own addresses (a local test web needs nothing more), the entries of
// fetch.allow_addresses, and private addresses when deny_private_networks is
// off or --allow-private-networks is given. Link-local and cloud metadata
// addresses stay refused unless a seed or allow_addresses names them.
func addrPolicy(ctx context.Context, cfg configs.Config, seeds []string, allowPrivate bool, logger *slog.Logger) (fetch.AddrPolicy, error) {
	var p fetch.AddrPolicy
	p.AllowPrivate = allowPrivate || !cfg.Fetch.DenyPrivateNetworks
	if err := p.AllowEntries(cfg.Fetch.AllowAddresses); err != nil {
		return p, usageError{err}
	}
	hosts := make([]string, 0, len(seeds))
	for _, s := range seeds {
		if u, err := url.Parse(s); err == nil {
			hosts = append(hosts, u.Host)
		}
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if added := p.AllowSeeds(lctx, net.DefaultResolver, hosts); len(added) > 0 {
		logger.Info("seeds on non-public addresses: these are allowed, other private addresses are not",
			"allowed", strings.Join(added, " "), "private_networks", p.AllowPrivate)
	}
	return p, nil
}

// runCrawl runs (or resumes) a crawl in dataDir; ui shows its progress and
// serves its live report (nil: neither).
func runCrawl(ctx context.Context, cfg configs.Config, dataDir string, seeds []string, allowPrivate bool,
	logger *slog.Logger, stdout io.Writer, ui *crawlUI) error {
	if len(seeds) == 0 {
		// Only a missing store is a usage error; any other failure to look
		// (permission denied) is the store's to report.
		if _, err := os.Stat(filepath.Join(dataDir, "MANIFEST")); errors.Is(err, fs.ErrNotExist) {
			return usagef("no seed URLs given (and %s holds no crawl to resume)", dataDir)
		}
	}
	// The detector checks the dedup settings as a whole (k*s against the
	// samples, say) before anything is written to the store.
	det, err := dedup.New(crawl.DedupOptions(cfg.Dedup))
	if err != nil {
		return usageError{err}
	}
	db, err := storage.Open(dataDir, storage.Options{SyncWrites: cfg.Storage.SyncWrites, MinFreeBytes: cfg.Storage.MinFreeBytes,
		MaxValueSize: configs.StoredValueSize(cfg.Fetch.MaxBodySize), Logger: logger})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := checkSignatureSettings(db, cfg); err != nil {
		return err
	}

	stored, err := storedSeeds(db)
	if err != nil {
		return err
	}
	if len(seeds) == 0 {
		if len(stored) == 0 {
			return usagef("no seed URLs given (and %s holds no crawl to resume)", dataDir)
		}
		seeds = stored
		logger.Info("resuming crawl", "data", dataDir, "seeds", len(seeds))
	}
	allSeeds := mergeSeeds(stored, seeds)
	if err := db.PutMeta("seeds", []byte(strings.Join(allSeeds, "\n"))); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	if _, err := db.GetMeta("started"); errors.Is(err, storage.ErrNotFound) {
		if err := db.PutMeta("started", []byte(time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
			return fmt.Errorf("storage: %w", err)
		}
	}

	if b, err := yaml.Marshal(cfg); err == nil {
		if err := db.PutMeta("config", b); err != nil {
			return fmt.Errorf("storage: %w", err)
		}
		if err := db.PutMeta("url_tokens", []byte(urlTokensInPlace)); err != nil {
			return fmt.Errorf("storage: %w", err)
		}
	}

	policy, err := addrPolicy(ctx, cfg, allSeeds, allowPrivate, logger)
	if err != nil {
		return err
	}

	fo := fetch.DefaultOptions()
	fo.UserAgent = cfg.Fetch.UserAgent
	fo.RobotsAgent = cfg.Fetch.RobotsAgent
	fo.Timeout = cfg.Fetch.Timeout.D()
	fo.MaxBodySize = cfg.Fetch.MaxBodySize
	fo.MaxRedirects = cfg.Fetch.MaxRedirects
	fo.DenyPrivate = true
	fo.Policy = policy
	if fo.Proxy, err = fetch.ProxySettings(string(cfg.Fetch.Proxy), os.Getenv); err != nil {
		return usageError{err}
	}
	fo.NoFollowRedirects = true // the engine queues redirect targets as links
	fetcher, err := fetch.New(fo, logger.With("system", "fetch"))
	if err != nil {
		return usageError{err}
	}
	defer fetcher.Close()
	var robots crawl.RobotsSource
	if cfg.Politeness.ObeyRobots {
		robots = fetch.NewRobotsCache(fetcher, fetch.RobotsOptions{
			TTL:           cfg.Politeness.RobotsTTL.D(),
			RetryInterval: cfg.Politeness.RobotsRetry.D(),
		}, crawl.RobotsStore{DB: db}, nil)
	}

	fopts := frontier.Options{
		Delay:           cfg.Politeness.Delay.D(),
		AdaptiveFactor:  cfg.Politeness.AdaptiveFactor,
		MaxDelay:        cfg.Politeness.MaxDelay.D(),
		MaxPagesPerHost: cfg.Crawl.MaxPagesPerHost,
		BackoffBase:     cfg.Politeness.BackoffBase.D(),
		BackoffMax:      cfg.Politeness.BackoffMax.D(),
		MaxFailures:     cfg.Politeness.MaxFailures,
	}
	if cfg.Crawl.MaxPages > 0 {
		done, err := countFetched(db)
		if err != nil {
			return err
		}
		left := cfg.Crawl.MaxPages - done
		if left <= 0 {
			fmt.Fprintf(stdout, "page budget of %d already spent in %s; nothing to do\n", cfg.Crawl.MaxPages, dataDir)
			return nil
		}
		fopts.MaxPages = left
	}
	fr, err := frontier.New(fopts, db, nil, logger.With("system", "frontier"))
	if err != nil {
		return err
	}
	scope, err := frontier.NewScope(frontier.ScopeOptions{
		Mode: frontier.ScopeMode(cfg.Crawl.Scope), Allow: cfg.Crawl.Allow, Deny: cfg.Crawl.Deny,
	}, allSeeds)
	if err != nil {
		return usageError{err}
	}
	eng := crawl.New(crawl.Options{
		Workers:            cfg.Crawl.Workers,
		MaxDepth:           cfg.Crawl.MaxDepth,
		MaxRedirects:       cfg.Fetch.MaxRedirects,
		Scope:              scope,
		Trap:               crawl.TrapOptions(cfg.URLs),
		FollowNofollow:     cfg.Crawl.FollowNofollow,
		SkipDuplicateLinks: cfg.Crawl.SkipDuplicateLinks,
		Sitemaps:           cfg.Crawl.Sitemaps,
		Addresses:          fetcher,
		ObeyRobots:         cfg.Politeness.ObeyRobots,
		RobotsAgent:        cfg.Fetch.RobotsAgent,
		RobotsRetry:        cfg.Politeness.RobotsRetry.D(),
		MaxDelay:           cfg.Politeness.MaxDelay.D(),
		KeepRaw:            cfg.Storage.KeepRaw,
		Parse:              parse.Options{URLTokens: cfg.Dedup.URLTokens, TitleTokens: cfg.Dedup.TitleTokens, BotName: cfg.Fetch.RobotsAgent, MaxTokens: 1 << 20},
		ProgressEvery:      ui.logEvery(),
		Mirror:             crawl.MirrorDetector(cfg),
	}, db, fr, fetcher, robots, det, logger.With("system", "crawl"))
	restored, err := eng.Restore()
	if err != nil {
		return fmt.Errorf("cannot rebuild the duplicate index: %w", err)
	}
	if restored > 0 {
		logger.Info("duplicate index rebuilt", "pages", restored)
	}
	added, err := eng.Seed(seeds)
	if err != nil {
		return err
	}
	logger.Info("crawl starting", "data", dataDir, "seeds", len(seeds), "new_seeds", added,
		"queued", fr.Stats().Queued, "workers", cfg.Crawl.Workers, "delay", cfg.Politeness.Delay.D())

	soft, cancelSoft := context.WithCancel(ctx)
	defer cancelSoft()
	hard, cancelHard := context.WithCancel(ctx)
	defer cancelHard()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
		case <-hard.Done():
			return
		}
		logger.Warn("interrupted: finishing pages in flight (interrupt again to stop at once)")
		cancelSoft()
		select {
		case <-sigs:
		case <-hard.Done():
			return
		}
		logger.Warn("stopping now")
		cancelHard()
	}()
	stopUI, err := ui.start(ctx, db, cfg, fopts.MaxPages, eng.Snapshot, logger, stdout)
	if err != nil {
		return err
	}
	defer stopUI()
	start := time.Now()
	if err := eng.Run(soft, hard); err != nil {
		return err
	}
	stopUI() // the progress line ends before the summary
	st := fr.Stats()
	fmt.Fprintf(stdout, "crawl %s in %s: %d requests, %d queued left, data in %s\n",
		map[bool]string{true: "finished", false: "stopped"}[st.Queued == 0 && soft.Err() == nil],
		time.Since(start).Round(time.Millisecond), eng.Requests(), st.Queued, dataDir)
	for _, g := range fr.GiveUps() {
		fmt.Fprintf(stdout, "gave up host %s: %s\n", g.Host, g.Reason)
	}
	return nil
}

// checkSignatureSettings refuses to resume a crawl with dedup settings that
// change how a page's signature is made (shingle width, samples, the
// supershingle shape, simhash weighting, URL tokens). The index is rebuilt
// from the stored signatures: signatures made two ways would miss each other
// in it (other supershingles, other simhashes), or could not be compared at
// all (other sketches), and duplicates of earlier pages would be kept.
// Settings used only when searching (threshold, filter_r, simhash_k, the
// simhash index and its parameters) may change between runs. A store without
// signatures (a first run that fetched no HTML page) accepts any settings.
// It runs before the resumed run writes anything.
func checkSignatureSettings(db *storage.DB, cfg configs.Config) error {
	b, err := db.GetMeta("config")
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	errSigned := errors.New("signed")
	switch err := db.ForEachSignature(func(uint64, []byte) error { return errSigned }); {
	case err == nil:
		return nil // nothing signed yet
	case !errors.Is(err, errSigned):
		return fmt.Errorf("storage: %w", err)
	}
	// Only the dedup section is read, over the defaults: keys an older
	// version did not write keep the values it signed with.
	prev := struct {
		Dedup configs.Dedup `yaml:"dedup"`
	}{configs.Default().Dedup}
	if err := yaml.Unmarshal(b, &prev); err != nil {
		return fmt.Errorf("storage: the stored config is unreadable: %w", err)
	}
	type shape struct {
		name     string
		was, now any
	}
	po, no := crawl.DedupOptions(prev.Dedup), crawl.DedupOptions(cfg.Dedup)
	pf, nf := po.Filter.Resolved(), no.Filter.Resolved()
	var diffs []string
	for _, d := range []shape{
		{"dedup.shingle_words", po.ShingleWords, no.ShingleWords},
		{"dedup.samples", po.Samples, no.Samples},
		{"dedup supershingles (filter_k)", pf.K, nf.K},
		{"dedup supershingle samples (filter_s)", pf.S, nf.S},
		{"dedup supershingle bits (filter_bits)", pf.Bits, nf.Bits},
		{"dedup.simhash_weight", po.SimhashWeight, no.SimhashWeight},
		{"dedup.url_tokens", prev.Dedup.URLTokens, cfg.Dedup.URLTokens},
		{"dedup.title_tokens", prev.Dedup.TitleTokens, cfg.Dedup.TitleTokens},
	} {
		if d.was != d.now {
			diffs = append(diffs, fmt.Sprintf("%s %v (now %v)", d.name, d.was, d.now))
		}
	}
	if prev.Dedup.URLTokens && cfg.Dedup.URLTokens {
		// Until session 7 URL tokens followed the text instead of standing
		// in place: such a store's signatures were made another way.
		if b, err := db.GetMeta("url_tokens"); err != nil || string(b) != urlTokensInPlace {
			diffs = append(diffs, "dedup.url_tokens at the end of the page (an earlier Horseshoe; now in place)")
		}
	}
	if len(diffs) > 0 {
		return usagef("the crawl in this data dir signed its pages with %s: resume it with those settings, or start a new crawl in another data dir",
			strings.Join(diffs, ", "))
	}
	return nil
}

// urlTokensInPlace is stored (meta "url_tokens") by every run: its
// signatures put URL tokens where their elements are (parse.Options).
const urlTokensInPlace = "in-place"

func storedSeeds(db *storage.DB) ([]string, error) {
	b, err := db.GetMeta("seeds")
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, nil
	}
	return strings.Split(string(b), "\n"), nil
}

func mergeSeeds(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string{}, a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func countFetched(db *storage.DB) (int, error) {
	n := 0
	err := db.ForEachPage(func(p *storage.Page) error {
		if p.Status != 0 || p.Class == storage.ClassError {
			n++
		}
		return nil
	})
	return n, err
}
