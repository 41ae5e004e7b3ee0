package crawl

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/sitemap"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Sitemaps (Options.Sitemaps, crawl.sitemaps). The Sitemap lines of a
// site's robots.txt are queued as sitemap items (frontier.Item.Sitemap), once
// per site and run, when the engine first holds the site's rules. A sitemap
// item is leased, checked against robots.txt and the address policy, and
// fetched like a page: the same frontier, politeness clock and back-off,
// but its body is bounded by crawl.sitemap_max_bytes (the protocol's 50 MB),
// not fetch.max_body_size, and a body that breaks off (the timeout, a
// reset) is read as far as it arrived (fetch.Fetcher.FetchSitemap); one
// sitemap item is handled at a time (sitemapParses). Its body is read by
// package sitemap (bounded: 50,000 entries, sitemap_max_bytes uncompressed;
// a trailing entry not received whole is dropped, the ones before it
// kept); a urlset's URLs are followed like a page's links (scope, traps,
// max_depth, the seen-set), an index's sitemaps are queued as sitemap
// items one level deeper. As the protocol allows, a sitemap may list URLs of
// the host whose robots.txt named it (either scheme), or of its own site
// under its own directory; a sitemap named by robots.txt may be on another
// host.
//
// What a sitemap said about each URL it listed (lastmod, changefreq,
// priority) is kept as a "sitemap_url" record (SitemapHints), for the
// recrawl to order by and for canonical hints; what each sitemap file held,
// and what bounded or broke it, as a "sitemap" record (report host notes).
//
// Only robots.txt names sitemaps: no /sitemap.xml is guessed. Heritrix
// (ExtractorRobotsTxt) and StormCrawler (sitemap.discovery) do the same;
// Nutch's SitemapProcessor tries /sitemap.xml when robots.txt names none.
// A guess costs every host one request that mostly ends in a 404 recorded
// as an error, for a file the site did not announce.

const (
	// maxSitemapLevel bounds index nesting: robots.txt -> index -> index
	// -> sitemap. A deeper index is recorded, its sitemaps not queued.
	maxSitemapLevel = 3
	// maxSitemapsPerSite bounds the sitemap files queued per robots.txt
	// site and run (an index may list 50,000).
	maxSitemapsPerSite = 1000
	// sitemapParses bounds the sitemap items handled at once, from the
	// fetch to the commit: each holds a body of up to sitemap_max_bytes
	// (the protocol's 50 MB, up to twice that while its buffer grows) and
	// its entries. One at a time: a crawl holds one sitemap's memory.
	sitemapParses = 1
)

// sitemapState is the engine's per-run memory of sitemaps.
type sitemapState struct {
	mu      sync.Mutex
	robots  map[string]bool // robots.txt sites whose Sitemap lines were queued
	files   map[string]int  // sitemap items queued per robots.txt URL
	parsing chan struct{}   // sitemapParses tokens
}

// hold waits for one of the sitemapParses tokens; the returned function
// gives it back.
func (s *sitemapState) hold() func() {
	s.lock()
	sem := s.parsing
	s.mu.Unlock()
	sem <- struct{}{}
	return func() { <-sem }
}

// sitemapFetcher fetches a sitemap within its own body limit, keeping a
// body that broke off (*fetch.Fetcher does).
type sitemapFetcher interface {
	FetchSitemap(ctx context.Context, rawURL string, maxBody int64) (*fetch.Result, error)
}

// sitemapMaxBytes is crawl.sitemap_max_bytes.
func (e *Engine) sitemapMaxBytes() int64 {
	return cmp.Or(e.o.SitemapMaxBytes, sitemap.MaxBytes)
}

// fetchSitemap fetches a sitemap item.
func (e *Engine) fetchSitemap(ctx context.Context, rawURL string) (*fetch.Result, error) {
	if sf, ok := e.f.(sitemapFetcher); ok {
		return sf.FetchSitemap(ctx, rawURL, e.sitemapMaxBytes())
	}
	return e.f.Fetch(ctx, rawURL)
}

func (s *sitemapState) lock() {
	s.mu.Lock()
	if s.robots == nil {
		s.robots, s.files = map[string]bool{}, map[string]int{}
		s.parsing = make(chan struct{}, sitemapParses)
	}
}

// firstRobots reports whether key's robots.txt is seen for the first time
// this run.
func (s *sitemapState) firstRobots(key string) bool {
	s.lock()
	defer s.mu.Unlock()
	first := !s.robots[key]
	s.robots[key] = true
	return first
}

// budget returns how many more sitemap items robotsURL's site may queue.
func (s *sitemapState) budget(robotsURL string) int {
	s.lock()
	defer s.mu.Unlock()
	return maxSitemapsPerSite - s.files[robotsURL]
}

func (s *sitemapState) spend(robotsURL string, n int) {
	s.lock()
	s.files[robotsURL] += n
	s.mu.Unlock()
}

// discoverSitemaps queues the sitemaps the robots.txt of u's site names,
// the first time this run that the engine holds its rules (fetched now or
// restored from the store, so that a crash between the two loses nothing).
func (e *Engine) discoverSitemaps(it *frontier.Item, u *url.URL, rules *fetch.Robots) {
	if !e.o.Sitemaps || rules.Unavailable() {
		return
	}
	key := fetch.RobotsKey(u)
	if !e.sitemaps.firstRobots(key) {
		return
	}
	names := rules.Sitemaps()
	if len(names) == 0 {
		return
	}
	robotsURL := key + "/robots.txt"
	base, _ := url.Parse(robotsURL)
	if n := e.sitemaps.budget(robotsURL); len(names) > n {
		e.logger.Warn("robots.txt names too many sitemaps", "robots", robotsURL, "sitemaps", len(names), "queued", n)
		names = names[:n]
	}
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	if e.fatal() != nil {
		return
	}
	n, err := e.queueAll(len(names), func(tx Tx, i int) (frontier.Item, bool, error) {
		cu, err := frontier.Canonicalize(strings.TrimSpace(names[i]), base)
		if err != nil {
			return frontier.Item{}, false, nil
		}
		return e.enqueueSitemap(tx, cu, 1, it.Depth+1, robotsURL, 0)
	})
	if err != nil {
		e.setFatal(fmt.Errorf("cannot queue the sitemaps of %s: %w", robotsURL, err))
		return
	}
	e.sitemaps.spend(robotsURL, n)
}

// enqueueSitemap queues cu as a sitemap item of the given level, unless it
// was seen, is a trap, or is so deep that its URLs would be past max_depth.
// Scope is not checked: robots.txt or an index on the same site named it,
// which the protocol allows; the URLs it lists are checked.
func (e *Engine) enqueueSitemap(tx Tx, cu string, level, depth int, robotsURL string, hops int) (frontier.Item, bool, error) {
	if frontier.CheckTrap(cu, e.o.Trap) != nil || depth >= e.o.MaxDepth {
		return frontier.Item{}, false, nil
	}
	it, ok, err := e.enqueueItem(tx, cu, depth, robotsURL, false, hops)
	if err != nil || !ok {
		return it, ok, err
	}
	it.Sitemap = level
	return it, true, tx.PutQueue(it) // the entry again, with its level
}

// sitemapRecord is what one sitemap file held ("sitemap" evidence).
type sitemapRecord struct {
	URL        string `json:"url"`
	Robots     string `json:"robots"` // the robots.txt that named its chain
	Level      int    `json:"level"`
	Kind       string `json:"kind,omitempty"`
	Gzip       bool   `json:"gzip,omitempty"`
	Bytes      int64  `json:"bytes"`
	Entries    int    `json:"entries"`                // URLs or sitemaps read
	Queued     int    `json:"queued"`                 // of them, newly queued
	Invalid    int    `json:"invalid,omitempty"`      // entries without a usable loc
	OffSite    int    `json:"off_site,omitempty"`     // entries the protocol does not let it list
	OutOfScope int    `json:"out_of_scope,omitempty"` // entries outside the crawl's scope or max_depth
	NotQueued  int    `json:"not_queued,omitempty"`   // sitemaps past the nesting or per-site bound
	Truncated  string `json:"truncated,omitempty"`    // the limit that ended the read (urls, bytes, depth), or "broken off" (the body did)
	Error      string `json:"error,omitempty"`
}

// handleSitemap records a fetched sitemap item and queues what it lists.
// The body is read here, in the worker, outside the serial commit.
func (e *Engine) handleSitemap(it *frontier.Item, res *fetch.Result, ferr error) {
	p := &storage.Page{Class: storage.ClassNotHTML}
	rec := &sitemapRecord{URL: it.URL, Robots: it.Via, Level: it.Sitemap}
	var parsed *sitemap.Result
	var fe *fetch.Error
	errors.As(ferr, &fe)
	if res != nil {
		fillFromResult(p, res)
	}
	// A body cut at sitemap_max_bytes, or broken off, is read as far as it
	// goes: the entries received whole are kept.
	if res != nil && res.Status >= 200 && res.Status < 300 && (ferr == nil || res.Truncated || res.Partial) {
		parsed = e.readSitemap(res.RawBody)
		switch {
		case res.Truncated && parsed.Truncated == "":
			// The cut explains the document's unexpected end.
			parsed.Truncated, parsed.Err = "bytes", nil
		case res.Partial && parsed.Truncated == "":
			parsed.Truncated, parsed.Err = "broken off", ferr
		}
		if res.Partial && fe != nil {
			p.ErrorClass = fe.Class // the sitemap's trouble, the fetch's class
		}
		ferr = nil
	}
	switch {
	case ferr != nil:
		p.Class, p.Error, p.ErrorClass = storage.ClassError, ferr.Error(), "other"
		if fe != nil {
			p.ErrorClass = fe.Class
		}
	case res.Status >= 400 || res.Status < 200:
		p.Class, p.ErrorClass, p.Error = storage.ClassError, "http", fmt.Sprintf("HTTP %d", res.Status)
	case parsed != nil:
		rec.Kind, rec.Gzip, rec.Bytes, rec.Invalid, rec.Truncated = string(parsed.Kind), parsed.Gzip, parsed.Bytes, parsed.Invalid, parsed.Truncated
		rec.Entries = len(parsed.Entries)
		if parsed.Err != nil {
			rec.Error = parsed.Err.Error()
		}
		if rec.Error != "" || rec.Truncated != "" {
			p.ErrorClass, p.Error = cmp.Or(p.ErrorClass, "sitemap"), e.sitemapTrouble(rec)
			e.logger.Warn("sitemap not read whole", "url", it.URL, "problem", p.Error)
		}
	}
	if p.Class == storage.ClassError {
		rec.Error = p.Error
	}
	e.commitSitemap(it, p, res, parsed, rec)
}

// readSitemap parses a sitemap body (held by its item's token: handle),
// at most sitemap_max_bytes of it uncompressed.
func (e *Engine) readSitemap(body []byte) *sitemap.Result {
	return sitemap.Parse(body, sitemap.Options{MaxBytes: e.sitemapMaxBytes()})
}

// sitemapTrouble says what kept a sitemap from being read whole.
func (e *Engine) sitemapTrouble(rec *sitemapRecord) string {
	var parts []string
	switch rec.Truncated {
	case "urls":
		parts = append(parts, fmt.Sprintf("more than %d entries (the protocol's limit): the rest not read", sitemap.MaxURLs))
	case "bytes":
		parts = append(parts, fmt.Sprintf("more than %d bytes uncompressed (crawl.sitemap_max_bytes): the rest not read",
			e.sitemapMaxBytes()))
	case "depth":
		parts = append(parts, fmt.Sprintf("elements nested deeper than %d: the rest not read", sitemap.MaxDepth))
	case "broken off":
		parts = append(parts, "truncated: the body broke off, the entries received whole read")
	}
	if rec.Error != "" {
		if rec.Truncated == "broken off" {
			parts = append(parts, rec.Error)
		} else {
			parts = append(parts, "malformed: "+rec.Error)
		}
	}
	return fmt.Sprintf("sitemap (%d entries read): %s", rec.Entries, strings.Join(parts, "; "))
}

// commitSitemap records a sitemap item, its evidence record and what it
// queues in one transaction.
func (e *Engine) commitSitemap(it *frontier.Item, p *storage.Page, res *fetch.Result, parsed *sitemap.Result, rec *sitemapRecord) {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	if e.fatal() != nil {
		return
	}
	p.ID, p.URL, p.Host, p.Depth, p.Via = it.ID, it.URL, it.Host, it.Depth, it.Via
	if p.FetchedAt.IsZero() {
		p.FetchedAt = time.Now().UTC()
	}
	var pushed []frontier.Item
	var files int
	err := e.st.Update(e.sctx, func(tx Tx) error {
		pushed, files = pushed[:0], 0
		var err error
		if res != nil && res.Status >= 300 && res.Status < 400 {
			pushed, err = e.sitemapRedirect(tx, it, p, res.Header.Get("Location"))
		} else if parsed != nil {
			pushed, files, err = e.queueSitemapEntries(tx, it, parsed, rec)
		}
		if err != nil {
			return err
		}
		if err := tx.PutEvidence("sitemap", it.URL, rec); err != nil {
			return err
		}
		if res != nil && e.o.KeepRaw && len(res.RawBody) > 0 {
			p.HasRaw = true
			if err := tx.PutRaw(p.ID, res.WireRequest(), res.WireResponse()); err != nil {
				return err
			}
		}
		if err := e.putPage(tx, p); err != nil {
			return err
		}
		if err := tx.DeleteQueue(it.Host, it.Seq); err != nil {
			return err
		}
		return e.putCounts(tx, true)
	})
	if err != nil {
		e.setFatal(fmt.Errorf("cannot record sitemap %s: %w", it.URL, err))
		return
	}
	e.spent.Add(1)
	e.sitemaps.spend(it.Via, files)
	e.countClass(p.Class, 1)
	e.push(pushed)
}

// sitemapRedirect queues the target of a sitemap's redirect as the same
// sitemap, within fetch.max_redirects.
func (e *Engine) sitemapRedirect(tx Tx, it *frontier.Item, p *storage.Page, location string) ([]frontier.Item, error) {
	base, _ := url.Parse(it.Target())
	cu, err := frontier.Canonicalize(location, base)
	if location == "" || err != nil {
		return nil, nil
	}
	if e.pastRedirectBound(it, p, cu) {
		return nil, nil
	}
	item, ok, err := e.enqueueSitemap(tx, cu, it.Sitemap, it.Depth, it.Via, it.Hops+1)
	if err != nil || !ok {
		return nil, err
	}
	return []frontier.Item{item}, nil
}

// queueSitemapEntries queues what a sitemap lists: an index's sitemaps
// (the same site, one level deeper, within the per-site bound), a urlset's
// or text file's URLs (as the protocol allows, in scope and max_depth),
// each URL's hint kept. files is the number of sitemap items queued.
func (e *Engine) queueSitemapEntries(tx Tx, it *frontier.Item, parsed *sitemap.Result, rec *sitemapRecord) (out []frontier.Item, files int, err error) {
	budget := e.sitemaps.budget(it.Via)
	rec.Queued, rec.OffSite, rec.OutOfScope, rec.NotQueued = 0, 0, 0, 0
	rec.Invalid = parsed.Invalid // the transaction may run again
	for _, en := range parsed.Entries {
		cu, err := frontier.Canonicalize(en.Loc, nil)
		if err != nil {
			rec.Invalid++
			continue
		}
		var item frontier.Item
		var ok bool
		if parsed.Kind == sitemap.KindIndex {
			switch {
			case !sitemap.AllowedChild(it.Via, it.URL, cu):
				rec.OffSite++
				continue
			case it.Sitemap >= maxSitemapLevel || files >= budget:
				rec.NotQueued++
				continue
			}
			item, ok, err = e.enqueueSitemap(tx, cu, it.Sitemap+1, it.Depth+1, it.Via, 0)
			if ok {
				files++
			}
		} else {
			cu = e.params.Canonical(cu)
			switch {
			case !sitemap.Allowed(it.Via, it.URL, cu):
				rec.OffSite++
				continue
			case it.Depth+1 > e.o.MaxDepth || !e.inScope(cu):
				rec.OutOfScope++
				continue
			}
			if err := tx.PutEvidence("sitemap_url", cu, hintOf(it.URL, en)); err != nil {
				return nil, 0, err
			}
			if err := sitemapAlias(tx, cu); err != nil {
				return nil, 0, err
			}
			item, ok, err = e.follow(tx, cu, it.Depth+1, it.URL)
		}
		if err != nil {
			return nil, 0, err
		}
		if ok {
			rec.Queued++
			out = append(out, item)
		}
	}
	return out, files, nil
}

// SitemapHint is what a sitemap said about a URL it listed.
type SitemapHint struct {
	URL        string    `json:"-"` // canonical, as queued
	Sitemap    string    `json:"sitemap"`
	LastMod    time.Time `json:"lastmod,omitzero"`
	ChangeFreq string    `json:"changefreq,omitempty"`
	Priority   *float64  `json:"priority,omitempty"`
}

func hintOf(sitemapURL string, en sitemap.Entry) SitemapHint {
	h := SitemapHint{Sitemap: sitemapURL, LastMod: en.LastMod, ChangeFreq: en.ChangeFreq}
	if en.Priority >= 0 {
		pr := en.Priority
		h.Priority = &pr
	}
	return h
}

// SitemapHints calls fn for every URL a sitemap of the crawl listed (in
// scope), with what the last sitemap to list it said.
func SitemapHints(db *storage.DB, fn func(SitemapHint) error) error {
	return db.ForEachEvidence("sitemap_url", func(u string, v []byte) error {
		var h SitemapHint
		if err := json.Unmarshal(v, &h); err != nil {
			return fmt.Errorf("sitemap hint of %s: %w", u, err)
		}
		h.URL = u
		return fn(h)
	})
}

// sitemapNotes are the report's host notes on sitemaps: per robots.txt
// site, one "sitemaps" note summing up what its sitemaps listed; per sitemap
// file that was not read whole or listed what it may not, one "sitemap"
// note saying so.
func sitemapNotes(db *storage.DB) ([]report.HostNote, error) {
	type sum struct{ files, urls, queued int }
	sums := map[string]*sum{}
	var notes []report.HostNote
	err := db.ForEachEvidence("sitemap", func(u string, v []byte) error {
		var r sitemapRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("sitemap record of %s: %w", u, err)
		}
		s := sums[r.Robots]
		if s == nil {
			s = &sum{}
			sums[r.Robots] = s
		}
		s.files++
		if r.Kind != string(sitemap.KindIndex) {
			s.urls, s.queued = s.urls+r.Entries, s.queued+r.Queued
		}
		if d, ok := sitemapNote(u, r); ok {
			notes = append(notes, report.HostNote{Host: frontier.HostKey(u), Kind: "sitemap", Detail: d})
		}
		return nil
	})
	for robots, s := range sums {
		notes = append(notes, report.HostNote{Host: frontier.HostKey(robots), Kind: "sitemaps",
			Detail: fmt.Sprintf("sitemap files %d, URLs listed %d, queued %d", s.files, s.urls, s.queued)})
	}
	return notes, err
}

// sitemapNote describes a sitemap file that was not read whole or listed
// what it may not; ok is false for one that did neither.
func sitemapNote(u string, r sitemapRecord) (detail string, ok bool) {
	if r.Error == "" && r.Truncated == "" && r.Invalid+r.OffSite+r.NotQueued == 0 {
		return "", false
	}
	where := u // the host is the note's own column
	if pu, err := url.Parse(u); err == nil {
		where = pu.RequestURI()
	}
	detail = fmt.Sprintf("%s: %s, %d entries, %d queued", where, cmp.Or(r.Kind, "not read"), r.Entries, r.Queued)
	for _, c := range []struct {
		n    int
		what string
	}{{r.Invalid, "invalid"}, {r.OffSite, "off site"}, {r.OutOfScope, "out of scope"}, {r.NotQueued, "sitemaps past the bounds"}} {
		if c.n > 0 {
			detail += fmt.Sprintf(", %d %s", c.n, c.what)
		}
	}
	switch r.Truncated {
	case "":
	case "broken off":
		detail += ", truncated: broken off"
	default:
		detail += ", cut at the " + r.Truncated + " limit"
	}
	if r.Error != "" {
		detail += ", error: " + r.Error
	}
	return detail, true
}
