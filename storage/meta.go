package storage

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The crawl's metadata values, each named once. GetMeta and PutMeta take
// these names; MetaInt and Seeds read the values that have a type.
const (
	MetaVersion  = "version"  // storage schema (SchemaVersion)
	MetaNextID   = "next_id"  // next page ID, 8 bytes big-endian
	MetaSeeds    = "seeds"    // the crawl's seed URLs, one per line
	MetaStarted  = "started"  // RFC 3339 time the first run started
	MetaFinished = "finished" // RFC 3339 time the last run ended
	MetaComplete = "complete" // "true" when the last run emptied the frontier
	MetaRequests = "requests" // HTTP requests sent over all runs, robots.txt included (decimal)
	MetaConfig   = "config"   // the effective configuration of the last run (YAML)
	// MetaURLTokens is "in-place" when the signatures put URL tokens where
	// their elements are (every run since session 7 writes it).
	MetaURLTokens = "url_tokens"
	// MetaPagesSpent counts the page records that cost a request, over all
	// runs that ended cleanly (decimal): the spent part of the page budget.
	MetaPagesSpent = "pages_spent"
	// MetaRunOpen is "true" while a run is under way: a store that still
	// says so when opened was not closed by its last run, and MetaPagesSpent
	// may be behind.
	MetaRunOpen = "run_open"
	// MetaPagesCommitted is the page budget spent as of the last committed
	// transaction of a fetched item (decimal): each such transaction writes
	// it, and each run starts it at MetaPagesSpent, so a store whose last
	// run did not end reads it instead of counting its page records (issue
	// 30: a full scan before the first request).
	MetaPagesCommitted = "pages_committed"
	// MetaKeeper names the data dir in a crawl shared through Redis: the
	// id under which its worker answers for its pages' texts
	// (cluster/redisstate/text.go).
	MetaKeeper = "keeper"
	// MetaWorkers holds, in a crawl shared through Redis, the records of
	// the workers that ran on the data dir, each as it left (JSON, an array
	// of session's keptWorker: one per run), so that a report of the data
	// dirs alone shows the crawl's workers.
	MetaWorkers = "workers"
	// MetaSharedCrawl is, in a crawl shared through Redis, the crawl's name
	// and generation ("name generation") the data dir's pages were crawled
	// under: a data dir is not used for the crawl made again after its
	// state in Redis was lost (cluster/redisstate/lost.go).
	MetaSharedCrawl = "shared_crawl"
)

// MetaInt returns the decimal metadata value name; ok is false when there is
// none.
func (d *DB) MetaInt(name string) (n int64, ok bool, err error) {
	b, err := d.GetMeta(name)
	if errors.Is(err, ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	n, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("meta %s: bad count %q: %w", name, b, err)
	}
	return n, true, nil
}

// Seeds returns the stored seed URLs (none for a new store).
func (d *DB) Seeds() ([]string, error) {
	b, err := d.GetMeta(MetaSeeds)
	if errors.Is(err, ErrNotFound) || (err == nil && len(b) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return strings.Split(string(b), "\n"), nil
}

// PutSeeds stores the seed URLs.
func (d *DB) PutSeeds(seeds []string) error {
	return d.PutMeta(MetaSeeds, []byte(strings.Join(seeds, "\n")))
}

// DeleteMeta removes the metadata value name (none: nothing to do).
func (d *DB) DeleteMeta(name string) error {
	return d.Update(func(tx *Tx) error { return tx.delete(metaKey(name)) })
}
