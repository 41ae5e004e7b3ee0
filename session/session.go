// Package session is one run of a crawl over its data dir: it opens a new
// store or resumes the crawl one holds, refuses settings the stored
// signatures cannot be searched with, merges the seeds, keeps the run's
// metadata and knows how much of the page budget earlier runs spent. The
// command line keeps flags, signals, progress and exit codes.
package session

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Session is an open crawl store and what the run knows of it.
type Session struct {
	Dir     string
	DB      *storage.DB
	Seeds   []string // every seed of the crawl, stored ones first
	Run     []string // the seeds this run queues: the given ones, or the stored ones on resume
	Resumed bool     // no seed was given: the stored crawl goes on
	// Recrawl makes Start queue the pages of the earlier crawls again, to
	// revisit them with change detection (crawl.Engine.Recrawl).
	Recrawl bool

	spent  int64        // page requests of earlier runs (the page budget spent)
	crawl  *crawl.Crawl // built by Start
	maxURL int          // urls.max_length, for seeds added by AddSeeds
	seedMu sync.Mutex   // serializes AddSeeds (Seeds)
}

// UsageError is a refusal caused by how the crawl was asked for: no seed and
// no crawl to resume, or settings the stored crawl cannot go on with.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

// urlTokensInPlace is stored (MetaURLTokens) by every run: its signatures put
// URL tokens where their elements are (parse.Options).
const urlTokensInPlace = "in-place"

// Open opens the crawl in dir for a run with cfg (valid) and the canonical
// seeds given (none: resume the stored crawl). It checks that the stored
// signatures can be searched with cfg before it writes anything, then stores
// the merged seeds, the start time and cfg, and marks a run under way until
// Close.
func Open(dir string, cfg configs.Config, seeds []string, logger *slog.Logger) (*Session, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if len(seeds) == 0 {
		// Only a missing store is a usage error; any other failure to look
		// (permission denied) is the store's to report.
		if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); errors.Is(err, fs.ErrNotExist) {
			return nil, usagef("no seed URLs given (and %s holds no crawl to resume)", dir)
		}
	}
	db, err := storage.Open(dir, storage.Options{SyncWrites: cfg.Storage.SyncWrites, MinFreeBytes: cfg.Storage.MinFreeBytes,
		MaxValueSize: configs.StoredValueSize(cfg.Fetch.MaxBodySize), Logger: logger})
	if err != nil {
		return nil, err
	}
	s := &Session{Dir: dir, DB: db, Run: seeds}
	if err := s.open(cfg, logger); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func (s *Session) open(cfg configs.Config, logger *slog.Logger) error {
	if err := CheckCompatibility(s.DB, cfg); err != nil {
		return err
	}
	stored, err := s.DB.Seeds()
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	if len(s.Run) == 0 {
		if len(stored) == 0 {
			return usagef("no seed URLs given (and %s holds no crawl to resume)", s.Dir)
		}
		s.Run, s.Resumed = stored, true
		logger.Info("resuming crawl", "data", s.Dir, "seeds", len(stored))
	}
	s.Seeds = Merge(stored, s.Run)
	if s.spent, err = pagesSpent(s.DB); err != nil {
		return err
	}
	return s.putRunMeta(cfg)
}

// putRunMeta stores the seeds, the start time of the first run, the run's
// configuration, and the mark of a run under way.
func (s *Session) putRunMeta(cfg configs.Config) error {
	put := func(name string, v []byte) error {
		if err := s.DB.PutMeta(name, v); err != nil {
			return fmt.Errorf("storage: %w", err)
		}
		return nil
	}
	if err := s.DB.PutSeeds(s.Seeds); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	if _, err := s.DB.GetMeta(storage.MetaStarted); errors.Is(err, storage.ErrNotFound) {
		if err := put(storage.MetaStarted, []byte(time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
			return err
		}
	}
	if b, err := yaml.Marshal(cfg); err == nil {
		if err := put(storage.MetaConfig, b); err != nil {
			return err
		}
		if err := put(storage.MetaURLTokens, []byte(urlTokensInPlace)); err != nil {
			return err
		}
	}
	// The count a kill leaves (pagesSpent) starts at this run's start.
	if err := put(storage.MetaPagesCommitted, []byte(strconv.FormatInt(s.spent, 10))); err != nil {
		return err
	}
	return put(storage.MetaRunOpen, []byte("true"))
}

// OpenExisting opens a finished or stopped crawl's store read-only: report,
// export and serve change nothing in the data dir (they work on read-only
// media), and a damaged store opens with what can still be read. A dir that
// holds no crawl is a *UsageError.
func OpenExisting(dir string) (*storage.DB, error) {
	if dir == "" {
		return nil, usagef("--data is required")
	}
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
		return nil, usagef("%s holds no crawl (no Badger MANIFEST)", dir)
	}
	// Reading needs no free space: no guard (a crawl stopped for lack of
	// space must still be reportable).
	return storage.Open(dir, storage.Options{ReadOnly: true, MinFreeBytes: -1})
}

// DamageError returns the one-line error for what db found damaged in dir
// (nil when nothing was), note saying what the command did all the same.
func DamageError(dir string, db *storage.DB, note string) error {
	if ds := db.Damage(); len(ds) > 0 {
		return &storage.DamageError{Dir: dir, Damages: ds, Note: note}
	}
	return nil
}

// PagesSpent returns the page requests earlier runs made, the part of
// crawl.max_pages that is spent.
func (s *Session) PagesSpent() int { return int(s.spent) }

// Start builds the run's crawl over the store (crawl.Build with env, to
// which the session adds its seeds and the budget spent), rebuilds the
// duplicate index from the stored signatures and queues the run's seeds.
// It returns crawl.ErrBudgetSpent when earlier runs spent crawl.max_pages.
func (s *Session) Start(cfg configs.Config, env crawl.Env, logger *slog.Logger) (*crawl.Crawl, error) {
	return s.StartShared(cfg, env, nil, logger)
}

// StartShared is Start as one worker of a shared crawl (crawl.BuildShared
// over sh; nil: Start).
func (s *Session) StartShared(cfg configs.Config, env crawl.Env, sh *crawl.Shared, logger *slog.Logger) (*crawl.Crawl, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	env.Seeds, env.PagesSpent = s.Seeds, int(s.spent)
	build := crawl.Build
	if sh != nil {
		build = func(cfg configs.Config, db *storage.DB, env crawl.Env, logger *slog.Logger) (*crawl.Crawl, error) {
			return crawl.BuildShared(cfg, db, sh, env, logger)
		}
	}
	c, err := build(cfg, s.DB, env, logger)
	if err != nil {
		return nil, err
	}
	s.crawl, s.maxURL = c, cfg.URLs.MaxLength
	// The duplicate index is rebuilt beside the first requests (the
	// decisions wait for it: crawl.Engine.Restore).
	if err := c.Engine.Restore(); err != nil {
		return nil, fmt.Errorf("cannot restore the crawl's state: %w", err)
	}
	if s.Recrawl {
		round, queued, err := c.Engine.Recrawl()
		if err != nil {
			return nil, err
		}
		logger.Info("recrawl", "round", round, "revisits_queued", queued)
	}
	added, err := c.Engine.Seed(s.Run)
	if err != nil {
		return nil, err
	}
	logger.Info("crawl starting", "data", s.Dir, "seeds", len(s.Run), "new_seeds", added,
		"queued", c.Queues.Stats().Queued, "workers", cfg.Crawl.Workers, "delay", cfg.Politeness.Delay.D())
	return c, nil
}

// PagesLeft returns the page requests this run may make under maxPages
// (crawl.max_pages; 0 for no budget).
func (s *Session) PagesLeft(maxPages int) int {
	if maxPages <= 0 {
		return 0
	}
	return maxPages - int(s.spent)
}

// Close closes the run's crawl, records the requests and page requests it
// made, ends the run's mark and closes the store.
func (s *Session) Close() error {
	var pages int64
	var err error
	if s.crawl != nil {
		snap := s.crawl.Engine.Counts() // not the queue: a shared crawl's is in Redis
		pages = snap.Pages
		s.crawl.Close()
		// The engine stores its request count with each page; a
		// robots.txt fetched after the last page would be left out.
		err = s.DB.PutMeta(storage.MetaRequests, []byte(strconv.FormatInt(snap.Requests, 10)))
	}
	if err == nil {
		err = s.DB.PutMeta(storage.MetaPagesSpent, []byte(strconv.FormatInt(s.spent+pages, 10)))
	}
	if err == nil {
		err = s.DB.PutMeta(storage.MetaRunOpen, []byte("false"))
	}
	if cerr := s.DB.Close(); err == nil {
		err = cerr
	}
	return err
}

// pagesSpent reads the stored count of page requests. A store that has none
// (written by an earlier Horseshoe) or whose last run did not end (a crash,
// a kill) is counted once by reading its page records.
func pagesSpent(db *storage.DB) (int64, error) {
	n, ok, err := db.MetaInt(storage.MetaPagesSpent)
	if err != nil {
		return 0, fmt.Errorf("storage: %w", err)
	}
	open, err := db.GetMeta(storage.MetaRunOpen)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return 0, fmt.Errorf("storage: %w", err)
	}
	if ok && string(open) != "true" {
		return n, nil
	}
	// A run that did not end: every transaction of a fetched item kept the
	// count (crawl's putCounts), from the run's start. A store of an earlier
	// Horseshoe has none: its page records are counted once.
	if c, ok, err := db.MetaInt(storage.MetaPagesCommitted); err != nil {
		return 0, fmt.Errorf("storage: %w", err)
	} else if ok {
		return c, nil
	}
	st, err := crawl.StoredStats(db)
	if err != nil {
		return 0, fmt.Errorf("storage: %w", err)
	}
	return st.Pages, nil
}

// Merge returns the seeds of a and then b, without repeats.
func Merge(a, b []string) []string {
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
