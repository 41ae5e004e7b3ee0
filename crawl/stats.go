package crawl

import (
	"fmt"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Stats is a snapshot of a crawl's counters, for the progress line and the
// /metrics endpoint. A running engine gives one with Engine.Snapshot; a
// finished crawl's store gives one with StoredStats.
type Stats struct {
	// Pages counts the page records of this run that cost a request
	// (fetched or failed), the figure the page budget limits.
	Pages int64
	// Requests counts HTTP requests sent, robots.txt included, over all runs
	// on the store.
	Requests int64
	// Duplicates counts exact and near duplicates among Pages.
	Duplicates int64
	// ByClass counts page records by class (storage.Class*), including
	// URLs recorded as mirror_skipped without a request. Every class is
	// present, with zero when there is none.
	ByClass map[string]int64
	// Queued is the number of URLs waiting; Active the fetches in flight
	// (at most one per host); Hosts the hosts known.
	Queued, Active, Hosts int
	// QueuedErr says why Queued is unknown: a shared crawl's frontier
	// could not read Redis (Queued is then 0 and means nothing).
	QueuedErr error
	// Running is true while a crawl runs in this process.
	Running bool
}

// DuplicateRatio returns Duplicates / Pages, or 0 before the first page.
func (s Stats) DuplicateRatio() float64 {
	if s.Pages <= 0 {
		return 0
	}
	return float64(s.Duplicates) / float64(s.Pages)
}

// newClassCounts returns a ByClass map with every class at zero.
func newClassCounts() map[string]int64 {
	m := make(map[string]int64, len(storage.Classes))
	for _, c := range storage.Classes {
		m[string(c)] = 0
	}
	return m
}

// StoredStats reads the counters of a crawl from its store: the crawl may be
// finished, stopped, or running in this process (reads do not block the
// engine's writes). Pages counts every page record that cost a request, of
// all runs; Active is 0 and Running false.
func StoredStats(db *storage.DB) (Stats, error) {
	s := Stats{ByClass: newClassCounts()}
	hosts := map[string]bool{}
	err := db.ForEachPage(func(p *storage.Page) error {
		s.ByClass[string(p.Class)]++
		hosts[p.Host] = true
		if !p.CostsRequest() {
			return nil // no request: robots_disallowed, mirror_skipped
		}
		s.Pages++
		if p.Class.Duplicate() {
			s.Duplicates++
		}
		return nil
	})
	if err != nil {
		return s, fmt.Errorf("read pages: %w", err)
	}
	err = db.ForEachSkipped(func(p *storage.Page) error {
		s.ByClass[string(p.Class)]++
		hosts[p.Host] = true
		return nil
	})
	if err != nil {
		return s, fmt.Errorf("read skipped URLs: %w", err)
	}
	queue, err := db.QueueHosts()
	if err != nil {
		return s, fmt.Errorf("read queue: %w", err)
	}
	for _, h := range queue {
		s.Queued += h.Count
		hosts[h.Host] = true
	}
	s.Hosts = len(hosts)
	if s.Requests, _, err = db.MetaInt(storage.MetaRequests); err != nil {
		return s, fmt.Errorf("read request count: %w", err)
	}
	return s, nil
}
