package session

import (
	"errors"
	"fmt"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Served are the data dirs of one finished (or stopped) crawl, open
// read-only for `crawler serve`: one dir, or the workers' dirs of a shared
// crawl. They give what `crawler report` gives of the same dirs: Report of
// one dir, MergedReport of several.
type Served struct {
	dirs   []string
	dbs    []*storage.DB
	curves crawl.Curves
	kept   []keptWorker
}

// OpenServed opens dirs (at least one) read-only, with the curves of cfg's
// detector for their report.
func OpenServed(dirs []string, cfg configs.Config) (*Served, error) {
	c, err := crawl.ReportCurves(cfg.Dedup)
	if err != nil {
		return nil, err
	}
	s := &Served{dirs: dirs, curves: c}
	for _, dir := range dirs {
		db, err := OpenExisting(dir)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.dbs = append(s.dbs, db)
		k, err := keptWorkers(db)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.kept = append(s.kept, k...)
	}
	return s, nil
}

// Close closes the stores.
func (s *Served) Close() error {
	var errs []error
	for _, db := range s.dbs {
		errs = append(errs, db.Close())
	}
	return errors.Join(errs...)
}

// Damage is DamageError of each dir whose store is damaged.
func (s *Served) Damage(note string) []error {
	var errs []error
	for i, db := range s.dbs {
		if err := DamageError(s.dirs[i], db, note); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Report is the report `crawler report` writes of the dirs.
func (s *Served) Report() (*report.Data, error) {
	return s.report(s.curves)
}

func (s *Served) report(c crawl.Curves) (*report.Data, error) {
	if len(s.dbs) == 1 {
		d, err := crawl.ReportWith(s.dbs[0], c)
		if err != nil {
			return nil, err
		}
		d.Workers = keptView(s.kept)
		return d, nil
	}
	var m merged
	for i, db := range s.dbs {
		if err := m.add(db, c); err != nil {
			return nil, fmt.Errorf("%s: %w", s.dirs[i], err)
		}
	}
	return m.result(), nil
}

// Workers are the workers' records the dirs keep, as the report shows
// them (nil outside a shared crawl).
func (s *Served) Workers() *report.Workers { return keptView(s.kept) }

// Stats are the counters of /metrics and the status API: the store's
// (crawl.StoredStats) of one dir; of several, those of the merged report
// (each URL once) with the URLs the dirs still queue.
func (s *Served) Stats() (crawl.Stats, error) {
	if len(s.dbs) == 1 {
		return crawl.StoredStats(s.dbs[0])
	}
	d, err := s.report(crawl.Curves{})
	if err != nil {
		return crawl.Stats{}, err
	}
	st := crawl.Stats{Requests: int64(d.Stats.Requests), Hosts: d.Stats.Hosts, ByClass: map[string]int64{}}
	for c, n := range d.Stats.ByClass {
		st.ByClass[c] = int64(n)
	}
	for _, p := range d.Pages {
		if p.Status != 0 || p.Class == string(storage.ClassError) { // storage.Page.CostsRequest
			st.Pages++
		}
		if storage.Class(p.Class).Duplicate() {
			st.Duplicates++
		}
	}
	for _, db := range s.dbs {
		queue, err := db.QueueHosts()
		if err != nil {
			return st, err
		}
		for _, h := range queue {
			st.Queued += h.Count
		}
	}
	return st, nil
}
