package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/internal/console"
	"github.com/horseshoe-crawler/horseshoe/internal/live"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/session"
)

const version = "0.1.0"

// crawlFlags are the options of 'crawler crawl' that override the config.
type crawlFlags struct {
	config, data, seeds string
	delay               time.Duration
	maxPages, maxDepth  int
	workers             int
	allowPrivate        bool
	quiet               bool
	recrawl             bool
	serve               string
	cpuProfile          string
	memProfile          string
	set                 map[string]bool
	shared              sharedFlags
}

func parseCrawlFlags(args []string, stderr io.Writer) (*crawlFlags, []string, error) {
	fs := newFlagSet("crawl", stderr)
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
	fs.BoolVar(&cf.recrawl, "recrawl", false, "revisit the pages of the earlier crawl in --data with conditional requests and class their changes")
	fs.StringVar(&cf.serve, "serve", "", "serve the live HTML report and /metrics on this address during the crawl, e.g. 127.0.0.1:8080")
	fs.StringVar(&cf.cpuProfile, "cpuprofile", "", "write a CPU profile of the crawl to this file")
	fs.StringVar(&cf.memProfile, "memprofile", "", "write a heap profile of the crawl's end to this file, and one of its largest live heap to FILE.peak")
	fs.StringVar(&cf.shared.redis, "redis", "", "work on a crawl shared through Redis: redis://[:PASSWORD@]HOST:PORT/DB or rediss:// (TLS); --data keeps this worker's pages")
	fs.StringVar(&cf.shared.name, "crawl", "", "with --redis: the name of the shared crawl")
	fs.StringVar(&cf.shared.ca, "redis-ca", "", "with a rediss:// URL: PEM file of the certificates to trust (default: the system's)")
	if err := parseFlagArgs(fs, args); err != nil {
		return nil, nil, err
	}
	cf.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { cf.set[f.Name] = true })
	return cf, fs.Args(), nil
}

func cmdCrawl(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	cf, rest, err := parseCrawlFlags(args, stderr)
	if err != nil {
		return err
	}
	cfg, err := crawlConfig(cf)
	if err != nil {
		return err
	}
	seeds, err := session.Seeds(rest, cf.seeds, cfg.URLs.MaxLength)
	if err != nil {
		return asUsage(err)
	}
	token := session.ServeToken(cfg)
	if cf.serve != "" {
		if err := live.CheckBind(cf.serve, token); err != nil {
			return usagef("--serve: %v", err)
		}
	}
	ui := console.NewUI(stderr, cf.quiet)
	logger := console.NewLogger(ui, cf.quiet)
	stopProfile, err := console.StartProcess(console.Profiles{CPU: cf.cpuProfile, Mem: cf.memProfile})
	if err != nil {
		return err
	}
	defer func() {
		if perr := stopProfile(); err == nil && perr != nil {
			err = perr
		}
	}()
	if cf.recrawl && cf.shared.redis != "" {
		return usageError{errors.New("--recrawl works on one data dir, not on a crawl shared through --redis")}
	}
	run := crawlRun{allowPrivate: cf.allowPrivate, recrawl: cf.recrawl, serve: cf.serve, token: token, ui: ui, logger: logger, stdout: stdout}
	return asUsage(run.crawl(ctx, cfg, cf.data, seeds, cf.shared))
}

// crawlConfig loads the config file and applies the flags that override it.
func crawlConfig(cf *crawlFlags) (configs.Config, error) {
	cfg, where, err := loadConfigWhere(cf.config)
	if err != nil {
		return cfg, err
	}
	if cf.set["delay"] {
		cfg.Politeness.Delay = configs.Duration(cf.delay)
		where["politeness.delay"] = "--delay"
		if cfg.Politeness.MaxDelay < cfg.Politeness.Delay {
			cfg.Politeness.MaxDelay = cfg.Politeness.Delay
			where["politeness.max_delay"] = "--delay"
		}
	}
	if cf.set["max-pages"] {
		cfg.Crawl.MaxPages = cf.maxPages
		where["crawl.max_pages"] = "--max-pages"
	}
	if cf.set["max-depth"] {
		cfg.Crawl.MaxDepth = cf.maxDepth
		where["crawl.max_depth"] = "--max-depth"
	}
	if cf.set["workers"] {
		cfg.Crawl.Workers = cf.workers
		where["crawl.workers"] = "--workers"
	}
	if err := configs.Attribute(cfg, where, crawl.Validate); err != nil {
		return cfg, usageError{fmt.Errorf("invalid options: %w", err)}
	}
	return cfg, nil
}

// loadConfig reads the config file at path (none: the defaults) and checks
// its values; either failure is a usage error.
func loadConfig(path string) (configs.Config, error) {
	cfg, _, err := loadConfigWhere(path)
	return cfg, err
}

// loadConfigWhere is loadConfig, and where each option was set. Each
// complaint about a value names its key and the line that set it
// (configs.Attribute).
func loadConfigWhere(path string) (configs.Config, configs.Where, error) {
	cfg, where, err := configs.LoadWhere(path)
	if err == nil {
		if err = configs.Attribute(cfg, where, crawl.Validate); err != nil && path != "" {
			err = fmt.Errorf("config %s: %w", path, err)
		}
	}
	if err != nil {
		return cfg, where, usageError{err}
	}
	return cfg, where, nil
}

// asUsage marks the refusals of the session and the configuration's faults
// as usage errors (exit 2).
func asUsage(err error) error {
	var se *session.UsageError
	var le *live.ListenError
	if errors.As(err, &se) || errors.As(err, &le) || crawl.IsConfigError(err) {
		return usageError{err}
	}
	return err
}

// crawlRun is how one crawl runs: what the address policy lets through,
// where the live report and control API are served ("" for nowhere) with
// which token, and what it shows.
type crawlRun struct {
	allowPrivate bool
	recrawl      bool
	serve, token string
	ui           *console.UI // nil shows no progress
	logger       *slog.Logger
	stdout       io.Writer
	// workers, in a shared crawl, reads its workers' records for the live
	// report and metrics.
	workers func(context.Context) (*report.Workers, error)
}

// sharedFlags make 'crawler crawl' one worker of a crawl shared through
// Redis (docs/SCALE.md).
type sharedFlags struct {
	redis, name, ca string
}

// crawl runs (or resumes) a crawl in dataDir; with sf.redis set, as one
// worker of the shared crawl sf names, keeping what it fetches in dataDir.
func (r crawlRun) crawl(ctx context.Context, cfg configs.Config, dataDir string, seeds []string, sf sharedFlags) (err error) {
	var w *session.Worker
	if sf.redis != "" {
		if w, seeds, err = session.JoinShared(ctx, session.SharedOptions{Redis: sf.redis, Name: sf.name, CAFile: sf.ca, Dir: dataDir}, seeds, r.logger); err != nil {
			return err
		}
		defer w.Leave(nil) // the session did not open
	}
	sess, err := session.Open(dataDir, cfg, seeds, r.logger)
	if err != nil {
		return err
	}
	defer func() {
		if w != nil {
			w.Leave(sess.DB) // its final record kept in the data dir, before it closes
		}
		if cerr := sess.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("storage: %w", cerr)
		}
	}()
	sess.Recrawl = r.recrawl
	policy, err := crawl.AddrPolicy(ctx, cfg.Fetch, sess.Seeds, r.allowPrivate, r.logger)
	if err != nil {
		return err
	}
	env := crawl.Env{Policy: &policy, Getenv: os.Getenv, ProgressEvery: r.ui.LogEvery()}
	var c *crawl.Crawl
	if w != nil {
		var sh *crawl.Shared
		if sh, err = w.Shared(sess, r.logger); err != nil {
			return err
		}
		c, err = sess.StartShared(cfg, env, sh, r.logger)
	} else {
		c, err = sess.Start(cfg, env, r.logger)
	}
	if errors.Is(err, crawl.ErrBudgetSpent) {
		fmt.Fprintf(r.stdout, "page budget of %d already spent in %s; nothing to do\n", cfg.Crawl.MaxPages, dataDir)
		return nil
	}
	if err != nil {
		return err
	}
	if w != nil {
		w.Publish(c.Engine.Counts)
		r.workers = w.Workers
	}
	return r.run(ctx, c, cfg, sess)
}

// run runs the built crawl until it ends or is interrupted (a first signal,
// or POST /api/stop, lets pages in flight finish, a second signal stops at
// once), with its progress, live report and control API, and prints its
// summary.
func (r crawlRun) run(ctx context.Context, c *crawl.Crawl, cfg configs.Config, sess *session.Session) error {
	stops, unwatch := console.WatchInterrupts(ctx, r.logger)
	defer unwatch()
	stop := func() { stops.Stop("stop asked by the control API") }
	sv := live.Serving{Addr: r.serve, Token: r.token, Controls: sess.Controls(c, stop), Workers: r.workers}
	stopLive, err := live.StartLive(sv, sess.DB, cfg.Dedup, c.Engine.Snapshot, r.logger, r.stdout)
	if err != nil {
		return asUsage(err)
	}
	defer stopLive()
	stopUI := r.ui.Start(ctx, sess.PagesLeft(cfg.Crawl.MaxPages), c.Engine.Snapshot)
	defer stopUI()
	start := time.Now()
	if err := c.Engine.Run(stops.Soft, stops.Hard); err != nil {
		return err
	}
	stopUI() // the progress line ends before the summary
	stopLive()
	console.WriteSummary(r.stdout, c, stops.Soft.Err() != nil, time.Since(start), sess.Dir)
	return nil
}
