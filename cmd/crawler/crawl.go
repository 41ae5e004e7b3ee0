package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/session"
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
	cfg, err := crawlConfig(cf)
	if err != nil {
		return err
	}
	raw := rest
	if cf.seeds != "" {
		fromFile, err := session.ReadSeeds(cf.seeds)
		if err != nil {
			return usageError{err}
		}
		raw = append(raw, fromFile...)
	}
	seeds, err := session.CanonicalSeeds(raw, cfg.URLs.MaxLength)
	if err != nil {
		return asUsage(err)
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
	return asUsage(runCrawl(ctx, cfg, cf.data, seeds, cf.allowPrivate, logger, stdout, ui))
}

// crawlConfig loads the config file and applies the flags that override it.
func crawlConfig(cf *crawlFlags) (configs.Config, error) {
	cfg, err := loadConfig(cf.config)
	if err != nil {
		return cfg, err
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
	if err := crawl.Validate(cfg); err != nil {
		return cfg, usageError{fmt.Errorf("invalid options: %w", err)}
	}
	return cfg, nil
}

// loadConfig reads the config file at path (none: the defaults) and checks
// its values; either failure is a usage error.
func loadConfig(path string) (configs.Config, error) {
	cfg, err := configs.Load(path)
	if err == nil {
		if err = crawl.Validate(cfg); err != nil && path != "" {
			err = fmt.Errorf("config %s: %w", path, err)
		}
	}
	if err != nil {
		return cfg, usageError{err}
	}
	return cfg, nil
}

// asUsage marks the refusals of the session and the configuration's faults
// as usage errors (exit 2).
func asUsage(err error) error {
	var se *session.UsageError
	if errors.As(err, &se) || crawl.IsConfigError(err) {
		return usageError{err}
	}
	return err
}

func newLogger(w io.Writer, quiet bool) *slog.Logger {
	level := slog.LevelInfo
	if quiet {
		level = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// runCrawl runs (or resumes) a crawl in dataDir; ui shows its progress and
// serves its live report (nil: neither).
func runCrawl(ctx context.Context, cfg configs.Config, dataDir string, seeds []string, allowPrivate bool,
	logger *slog.Logger, stdout io.Writer, ui *crawlUI) (err error) {
	sess, err := session.Open(dataDir, cfg, seeds, logger)
	if err != nil {
		return err
	}
	var c *crawl.Crawl
	defer func() {
		var pages int64
		if c != nil {
			pages = c.Engine.Snapshot().Pages
		}
		if cerr := sess.Close(pages); err == nil && cerr != nil {
			err = fmt.Errorf("storage: %w", cerr)
		}
	}()
	env := sess.Env()
	policy, err := crawl.AddrPolicy(ctx, cfg.Fetch, sess.Seeds, allowPrivate, logger)
	if err != nil {
		return err
	}
	env.Policy, env.ProgressEvery = &policy, ui.logEvery()
	c, err = crawl.Build(cfg, sess.DB, env, logger)
	if errors.Is(err, crawl.ErrBudgetSpent) {
		fmt.Fprintf(stdout, "page budget of %d already spent in %s; nothing to do\n", cfg.Crawl.MaxPages, dataDir)
		return nil
	}
	if err != nil {
		return err
	}
	defer c.Close()
	restored, err := c.Engine.Restore()
	if err != nil {
		return fmt.Errorf("cannot rebuild the duplicate index: %w", err)
	}
	if restored > 0 {
		logger.Info("duplicate index rebuilt", "pages", restored)
	}
	added, err := c.Engine.Seed(sess.Run)
	if err != nil {
		return err
	}
	logger.Info("crawl starting", "data", dataDir, "seeds", len(sess.Run), "new_seeds", added,
		"queued", c.Frontier.Stats().Queued, "workers", cfg.Crawl.Workers, "delay", cfg.Politeness.Delay.D())
	return runEngine(ctx, c, cfg, sess, logger, stdout, ui)
}

// runEngine runs the built crawl until it ends or is interrupted (a first
// signal lets pages in flight finish, a second stops at once) and prints
// its summary.
func runEngine(ctx context.Context, c *crawl.Crawl, cfg configs.Config, sess *session.Session,
	logger *slog.Logger, stdout io.Writer, ui *crawlUI) error {
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
	maxPages := 0
	if cfg.Crawl.MaxPages > 0 {
		maxPages = cfg.Crawl.MaxPages - sess.PagesSpent()
	}
	stopUI, err := ui.start(ctx, sess.DB, cfg, maxPages, c.Engine.Snapshot, logger, stdout)
	if err != nil {
		return err
	}
	defer stopUI()
	start := time.Now()
	if err := c.Engine.Run(soft, hard); err != nil {
		return err
	}
	stopUI() // the progress line ends before the summary
	st := c.Frontier.Stats()
	fmt.Fprintf(stdout, "crawl %s in %s: %d requests, %d queued left, data in %s\n",
		map[bool]string{true: "finished", false: "stopped"}[st.Queued == 0 && soft.Err() == nil],
		time.Since(start).Round(time.Millisecond), c.Engine.Requests(), st.Queued, sess.Dir)
	for _, g := range c.Frontier.GiveUps() {
		fmt.Fprintf(stdout, "gave up host %s: %s\n", g.Host, g.Reason)
	}
	return nil
}
