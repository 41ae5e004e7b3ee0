// Package crawl is the engine: it wires frontier, fetch, parse, dedup, mirror
// and storage, owns the worker goroutines and shuts them down.
//
// One page flows: frontier lease -> robots.txt check -> fetch -> release the
// host's politeness slot -> parse and sign (in the worker) -> commit (serial):
// dedup decision, links to follow or skip, one storage transaction -> push the
// new queue entries to the frontier -> finish the lease.
//
// Commits are serialized so that "is this page a duplicate" and "are its
// links' counterparts known" are answered against a state in which every
// earlier page's links are already queued.
package crawl

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/mirror"
	"github.com/horseshoe-crawler/horseshoe/parse"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Fetcher fetches one URL.
type Fetcher interface {
	Fetch(ctx context.Context, rawURL string) (*fetch.Result, error)
}

// RobotsSource answers robots.txt questions for a URL's host.
type RobotsSource interface {
	Get(ctx context.Context, u *url.URL) (*fetch.Robots, bool, error)
}

// Detector is the near-duplicate detector.
type Detector interface {
	Sign(tokens []string) *dedup.Signature
	Shingles(tokens []string, dst []uint64) []uint64
	Options() dedup.Options
	CheckAndAddSettled(id uint64, sig *dedup.Signature, settle dedup.Settler) dedup.Decision
	Add(id uint64, sig *dedup.Signature)
}

// Options configures the engine.
type Options struct {
	Workers            int
	MaxDepth           int
	MaxRedirects       int // redirect hops followed per chain (fetch.max_redirects; 0 follows none)
	Scope              *frontier.Scope
	Trap               frontier.TrapOptions
	FollowNofollow     bool
	SkipDuplicateLinks bool
	ObeyRobots         bool
	RobotsAgent        string
	RobotsRetry        time.Duration // how long a host with an unavailable robots.txt waits before a retry
	MaxDelay           time.Duration // politeness.max_delay: the cap applied to Crawl-delay (for the report)
	KeepRaw            bool
	Parse              parse.Options
	ProgressEvery      time.Duration    // slog progress lines (0 = off)
	Mirror             *mirror.Detector // host-level mirror detection (nil = off)
	Addresses          HostChecker      // address policy applied at lease time (nil = none)
	Resolver           Resolver         // politeness lookups (nil = net.DefaultResolver)
	MaxLookups         int              // concurrent politeness lookups (0 = DefaultMaxLookups)
	LookupTimeout      time.Duration    // one politeness lookup (0 = DefaultLookupTimeout)
	Sitemaps           bool             // fetch the sitemaps robots.txt names and queue their URLs (sitemaps.go)
}

// Engine runs a crawl over one store.
type Engine struct {
	o      Options
	db     *storage.DB
	fr     *frontier.Frontier
	f      Fetcher
	robots RobotsSource
	det    Detector
	logger *slog.Logger

	commitMu sync.Mutex
	requests atomic.Int64
	pages    atomic.Int64
	dups     atomic.Int64

	// Page records by class in this run, for Snapshot. txSkipped counts the
	// mirror_skipped records of the transaction in progress (commitMu).
	classMu   sync.Mutex
	classes   map[string]int64
	txSkipped int

	digMu   sync.RWMutex
	digests map[[8]byte]digestHit // payload key -> page it is a copy of (or is)

	hostMu    sync.Mutex
	hostsSeen map[string]bool
	lq        lookupQueue // hosts waiting for politeKey's lookup
	capLogged map[string]bool

	params *frontier.ParamLearner // irrelevant parameters per host (params.go)

	sitemaps sitemapState // sitemaps.go

	errMu    sync.Mutex
	fatalErr error
	cancel   context.CancelFunc
}

// New builds an engine. robots may be nil when robots.txt is not obeyed.
func New(o Options, db *storage.DB, fr *frontier.Frontier, f Fetcher, robots RobotsSource, det Detector, logger *slog.Logger) *Engine {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if o.Workers < 1 {
		o.Workers = 1
	}
	e := &Engine{o: o, db: db, fr: fr, f: f, robots: robots, det: det, logger: logger, lq: lookupQueue{wake: make(chan struct{}, 1)},
		hostsSeen: map[string]bool{}, capLogged: map[string]bool{}, classes: newClassCounts(), digests: map[[8]byte]digestHit{},
		params: frontier.NewParamLearner(frontier.ParamOptions{})}
	if b, err := db.GetMeta("requests"); err == nil {
		var n int64
		fmt.Sscan(string(b), &n)
		e.requests.Store(n)
	}
	return e
}

// Restore rebuilds the dedup index from the signatures in the store, so a
// resumed crawl still drops duplicates of pages fetched before.
func (e *Engine) Restore() (int, error) {
	n := 0
	err := e.db.ForEachSignature(func(id uint64, b []byte) error {
		var s dedup.Signature
		if err := s.UnmarshalBinary(b); err != nil {
			return fmt.Errorf("signature of page %d: %w", id, err)
		}
		e.det.Add(id, &s)
		n++
		return nil
	})
	if err == nil {
		err = e.restoreParams()
	}
	if err != nil || e.o.Mirror == nil {
		return n, err
	}
	var cands []mirror.Candidate
	err = e.db.ForEachEvidence("mirror", func(_ string, v []byte) error {
		var c mirror.Candidate
		if err := json.Unmarshal(v, &c); err != nil {
			return err
		}
		cands = append(cands, c)
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("mirror evidence: %w", err)
	}
	return n, e.o.Mirror.Restore(cands)
}

// Seed queues the seed URLs (canonical) that were not seen before.
func (e *Engine) Seed(seeds []string) (added int, err error) {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	return e.queueAll(len(seeds), func(tx *storage.Tx, i int) (frontier.Item, bool, error) {
		return e.enqueue(tx, e.params.Canonical(seeds[i]), 0, "")
	})
}

// queueAll queues up to n items in one transaction (queue(tx, i) returns the
// i-th, or false) and hands them to the frontier. Called with commitMu held.
func (e *Engine) queueAll(n int, queue func(tx *storage.Tx, i int) (frontier.Item, bool, error)) (int, error) {
	var items []frontier.Item
	err := e.db.Update(func(tx *storage.Tx) error {
		items = items[:0]
		for i := 0; i < n; i++ {
			it, ok, err := queue(tx, i)
			if err != nil {
				return err
			}
			if ok {
				items = append(items, it)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	e.push(items)
	return len(items), nil
}

// Requests returns the number of HTTP requests sent so far (all runs).
func (e *Engine) Requests() int64 { return e.requests.Load() }

// Snapshot returns the engine's counters and the frontier's queue, for the
// progress line and /metrics. It is safe to call while Run runs.
func (e *Engine) Snapshot() Stats {
	st := e.fr.Stats()
	s := Stats{
		Pages: e.pages.Load(), Requests: e.requests.Load(), Duplicates: e.dups.Load(),
		Queued: st.Queued, Active: st.Active, Hosts: st.Hosts, Running: true,
		ByClass: make(map[string]int64, len(storage.Classes)),
	}
	e.classMu.Lock()
	for c, n := range e.classes {
		s.ByClass[c] = n
	}
	e.classMu.Unlock()
	return s
}

// countClass adds n page records of class to the run's counters.
func (e *Engine) countClass(class string, n int) {
	if n == 0 {
		return
	}
	e.classMu.Lock()
	e.classes[class] += int64(n)
	e.classMu.Unlock()
}

// Run crawls until the frontier is exhausted or ctx is cancelled. ctx stops
// leasing new URLs (requests in flight finish); hard cancels requests in flight.
func (e *Engine) Run(ctx, hard context.Context) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	e.cancel = cancel
	stopLookups := e.startLookups(runCtx)
	var wg sync.WaitGroup
	if e.o.ProgressEvery > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); e.progress(runCtx) }()
	}
	// Hosts queued by an earlier run get their IP grouping before any lease.
	for _, h := range e.fr.Hosts() {
		e.hostMu.Lock()
		first := !e.hostsSeen[h]
		e.hostsSeen[h] = true
		e.hostMu.Unlock()
		if first {
			e.politeKey(h)
		}
	}
	var workers sync.WaitGroup
	for i := 0; i < e.o.Workers; i++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				it, err := e.fr.Next(runCtx)
				if err != nil {
					return
				}
				e.handle(hard, it)
			}
		}()
	}
	workers.Wait()
	cancel()
	wg.Wait()
	stopLookups()
	if err := e.fatal(); err != nil {
		return err
	}
	complete := ctx.Err() == nil && e.fr.Stats().Queued == 0
	if err := e.db.PutMeta("complete", []byte(fmt.Sprint(complete))); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	return e.db.PutMeta("finished", []byte(time.Now().UTC().Format(time.RFC3339Nano)))
}

func (e *Engine) setFatal(err error) {
	e.errMu.Lock()
	if e.fatalErr == nil {
		e.fatalErr = err
		e.logger.Error("stopping crawl", "err", err)
		e.fr.Stop()
		if e.cancel != nil {
			e.cancel()
		}
	}
	e.errMu.Unlock()
}

func (e *Engine) fatal() error {
	e.errMu.Lock()
	defer e.errMu.Unlock()
	return e.fatalErr
}

func (e *Engine) progress(ctx context.Context) {
	t := time.NewTicker(e.o.ProgressEvery)
	defer t.Stop()
	last, lastT := e.pages.Load(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			p := e.pages.Load()
			st := e.fr.Stats()
			rate := float64(p-last) / now.Sub(lastT).Seconds()
			last, lastT = p, now
			e.logger.Info("progress", "pages", p, "requests", e.requests.Load(), "queued", st.Queued,
				"active", st.Active, "duplicates", e.dups.Load(), "pages_per_sec", fmt.Sprintf("%.1f", rate))
		}
	}
}

// handle processes one leased item to the end of its lease.
func (e *Engine) handle(ctx context.Context, it *frontier.Item) {
	defer e.fr.Finish(it)
	u, err := url.Parse(it.Target())
	if err != nil {
		e.fr.Release(it, frontier.Outcome{})
		e.commit(it, &storage.Page{Class: storage.ClassError, Error: err.Error(), ErrorClass: "url"}, nil, nil)
		return
	}
	if e.o.Mirror != nil && !it.Verify && e.skipLeased(it) {
		return
	}
	if e.refusedHost(it, u.Host) {
		return
	}
	if e.o.ObeyRobots && e.robots != nil {
		rules, fetched, err := e.robots.Get(ctx, u)
		if err != nil { // cancelled
			e.fr.Release(it, frontier.Outcome{Requeue: true})
			return
		}
		if fetched {
			e.requests.Add(1)
		}
		if d, ok := rules.CrawlDelay(e.o.RobotsAgent); ok {
			if e.fr.SetCrawlDelay(it.Host, d) {
				e.logCap(it.Host, d)
			}
		}
		e.discoverSitemaps(it, u, rules)
		if rules.Unavailable() {
			// RFC 9309 2.3.1.3: a 5xx or unreachable robots.txt means the
			// whole host is disallowed until it recovers. Keep the URL and
			// come back after the retry interval; a host that never
			// recovers is given up by the frontier (max_failures), one
			// that cannot recover soon at once (robotsOutcome).
			if !e.fr.Release(it, robotsOutcome(rules, fetched, e.o.RobotsRetry)) {
				e.recordGiveUps()
			}
			return
		}
		if fetched {
			// robots.txt was a request to this host: wait for the
			// politeness clock before the page itself.
			e.fr.Release(it, frontier.Outcome{Requested: true, Requeue: true})
			return
		}
		if !rules.Allowed(e.o.RobotsAgent, requestURI(u)) {
			e.fr.Release(it, frontier.Outcome{})
			e.commit(it, &storage.Page{Class: storage.ClassRobotsDisallowed, Error: "disallowed by robots.txt"}, nil, nil)
			return
		}
	}

	start := time.Now()
	res, ferr := e.f.Fetch(ctx, it.Target())
	e.requests.Add(1)
	out := frontier.Outcome{Requested: true, ResponseTime: time.Since(start)}
	if res != nil {
		out.Status, out.RetryAfter, out.ResponseTime = res.Status, res.RetryAfter, res.Duration
	}
	var fe *fetch.Error
	if ferr != nil && errors.As(ferr, &fe) {
		switch fe.Class {
		case "dns", "connect", "timeout", "reset":
			out.Failed = true
		case "canceled":
			e.fr.Release(it, frontier.Outcome{Requeue: true})
			return
		}
	}
	if ferr != nil && errors.Is(ferr, context.Canceled) {
		e.fr.Release(it, frontier.Outcome{Requeue: true})
		return
	}
	if e.fr.Release(it, out) {
		return // 429/503: back in the queue after back-off
	}
	defer e.recordGiveUps()
	e.pages.Add(1)
	if it.Sitemap > 0 {
		e.handleSitemap(it, res, ferr)
		return
	}

	p := &storage.Page{}
	if res != nil {
		fillFromResult(p, res)
	}
	if ferr != nil {
		p.Class = storage.ClassError
		p.Error = ferr.Error()
		p.ErrorClass = "other"
		if fe != nil {
			p.ErrorClass = fe.Class
		}
		e.commit(it, p, nil, res)
		return
	}
	switch {
	case res.Status >= 300 && res.Status < 400:
		p.Class = storage.ClassNotHTML
		e.commit(it, p, nil, res)
		return
	case res.Status >= 400 || res.Status < 200:
		p.Class = storage.ClassError
		p.ErrorClass = "http"
		p.Error = fmt.Sprintf("HTTP %d", res.Status)
		e.commit(it, p, nil, res)
		return
	case !res.IsHTML:
		p.Class = storage.ClassNotHTML
		e.commit(it, p, nil, res)
		return
	}
	base, _ := url.Parse(res.FinalURL)
	if base == nil {
		base = u
	}
	doc, err := parse.Parse(res.Body, base, e.o.Parse)
	if err != nil {
		p.Class = storage.ClassError
		p.ErrorClass = "parse"
		p.Error = err.Error()
		e.commit(it, p, nil, res)
		return
	}
	p.Title, p.Lang, p.Canonical = doc.Title, doc.Lang, doc.Canonical
	if code, conf, ok := parse.DetectLanguage(doc.Text); ok {
		p.TextLang, p.TextLangConf = code, conf
	}
	p.NoIndex, p.NoFollow = doc.NoIndex, doc.NoFollow
	for _, v := range res.Header.Values("X-Robots-Tag") {
		ni, nf := parse.RobotsDirectives(v, e.o.RobotsAgent)
		p.NoIndex = p.NoIndex || ni
		p.NoFollow = p.NoFollow || nf
	}
	p.Words = len(doc.Tokens)
	p.Links = len(doc.Links)
	c := &pageContent{doc: doc, links: e.followable(doc)}
	// A payload byte-identical to a page already seen has the same token
	// stream: it is an exact duplicate without signing it again.
	digest := payloadKey(p.SHA256)
	if hit, ok := e.digestHit(digest); ok && len(doc.Tokens) > 0 && !e.o.Parse.URLTokens {
		c.known = &dedup.Decision{Class: dedup.Exact, Original: hit.original, Similarity: 1, Method: "exact"}
		p.Simhash = hit.simhash
	} else {
		c.sig = e.det.Sign(doc.Tokens)
		p.Simhash = c.sig.Simhash
		c.digest = &digest
	}
	e.commit(it, p, c, res)
}

// settler returns the exact settlement of a page's near-duplicate
// candidates (dedup.Settler): the Jaccard similarity of the page's looped
// shingles and those of the candidate's stored visible text, tokenized as
// parse.Parse tokenized it (parse.Tokenize, cut at Parse.MaxTokens). It runs
// in the serial commit, only for candidates whose sketch estimate is in the
// settled band (at most dedup.MaxSettle per page): one text read and two
// shinglings. A resumed crawl settles the same way: the texts are in the
// store. With title_tokens the candidate's title (in its page record) comes
// first. With url_tokens the tokens hold URLs that the stored text lacks, so
// there is no settlement (nil: the sketch rule).
func (e *Engine) settler(tokens []string) dedup.Settler {
	if e.o.Parse.URLTokens {
		return nil
	}
	var mine, theirs []uint64
	var words []string
	return func(original uint64) (float64, bool) {
		var err error
		words, err = e.pageTokensTo(words[:0], original)
		if err != nil {
			e.logger.Warn("near-duplicate candidate not settled: text unreadable", "page", original, "err", err)
			return 0, false
		}
		if mine == nil {
			mine = e.det.Shingles(tokens, nil)
		}
		theirs = e.det.Shingles(words, theirs[:0])
		return dedup.ExactJaccard(mine, theirs), true
	}
}

// pageTokensTo appends the token stream of stored page id as the dedup signed
// it (without URL tokens): its title's words with title_tokens (from its page
// record), then its visible text's, cut at Parse.MaxTokens.
func (e *Engine) pageTokensTo(dst []string, id uint64) ([]string, error) {
	text, err := e.db.Text(id)
	if err != nil {
		return dst, err
	}
	title := ""
	if e.o.Parse.TitleTokens {
		rec, err := e.db.Page(id)
		if err != nil {
			return dst, err
		}
		title = rec.Title
	}
	return e.storedTokens(dst, title, text), nil
}

// storedTokens tokenizes a page's title and text as parse.Parse does (the
// title only with title_tokens; no URL tokens), cut at Parse.MaxTokens.
func (e *Engine) storedTokens(dst []string, title, text string) []string {
	if e.o.Parse.TitleTokens {
		dst = parse.Tokenize(dst, title)
	}
	dst = parse.Tokenize(dst, text)
	if m := e.o.Parse.MaxTokens; m > 0 && len(dst) > m {
		dst = dst[:m]
	}
	return dst
}

// followable returns the canonical URLs of the links a page offers to follow
// (rel=nofollow dropped unless configured), in order, without repeats. It
// runs in the worker, outside the serial commit.
func (e *Engine) followable(doc *parse.Document) []string {
	links := doc.Links
	if doc.Refresh != "" {
		links = append(links[:len(links):len(links)], parse.Link{URL: doc.Refresh, Tag: "meta"})
	}
	out := make([]string, 0, len(links))
	seen := make(map[string]bool, len(links))
	for _, l := range links {
		if l.Nofollow && !e.o.FollowNofollow {
			continue
		}
		cu, err := frontier.Canonicalize(l.URL, nil)
		cu = e.params.Canonical(cu)
		if err != nil || seen[cu] {
			continue
		}
		seen[cu] = true
		out = append(out, cu)
	}
	return out
}

type digestHit struct{ original, simhash uint64 }

// payloadKey is the first 8 bytes of the payload's SHA-256, taken from the
// hex digest the page record already carries (the body is hashed once).
func payloadKey(sha256Hex string) [8]byte {
	var k [8]byte
	hex.Decode(k[:], []byte(sha256Hex[:16]))
	return k
}

func (e *Engine) digestHit(k [8]byte) (digestHit, bool) {
	e.digMu.RLock()
	defer e.digMu.RUnlock()
	h, ok := e.digests[k]
	return h, ok
}

// recordGiveUps records the hosts the frontier gave up, so the report and a
// resumed crawl know why their URLs were not fetched.
func (e *Engine) recordGiveUps() {
	for _, g := range e.fr.GiveUps() {
		e.logger.Warn("host given up", "host", g.Host, "reason", g.Reason, "urls_in_memory", len(g.Items))
		e.commitMu.Lock()
		err := e.db.Update(func(tx *storage.Tx) error {
			return tx.PutEvidence("giveup", g.Host, map[string]any{"host": g.Host, "reason": g.Reason, "at": time.Now().UTC()})
		})
		e.commitMu.Unlock()
		if err != nil {
			e.setFatal(err)
			return
		}
		// The URLs the frontier held for the host are recorded with the
		// reason; any further queue entries stay in the store, so a later
		// run on the same data dir tries the host again.
		class := storage.ClassError
		if g.Blocked {
			class = storage.ClassRobotsDisallowed // RFC 9309: unavailable robots.txt disallows the host
		}
		for i := range g.Items {
			it := g.Items[i]
			e.commit(&it, &storage.Page{Class: class, ErrorClass: "gave_up", Error: "host given up: " + g.Reason}, nil, nil)
		}
	}
}

type pageContent struct {
	doc    *parse.Document
	links  []string         // canonical followable links
	sig    *dedup.Signature // nil when known is set
	known  *dedup.Decision  // decided without signing (byte-identical payload)
	digest *[8]byte         // payload key to remember after the commit
}

func requestURI(u *url.URL) string {
	s := u.EscapedPath()
	if s == "" {
		s = "/"
	}
	if u.RawQuery != "" {
		s += "?" + u.RawQuery
	}
	return s
}

// logCap logs and records (once per host) a Crawl-delay above max_delay.
func (e *Engine) logCap(host string, d time.Duration) {
	e.hostMu.Lock()
	first := !e.capLogged[host]
	e.capLogged[host] = true
	e.hostMu.Unlock()
	if !first {
		return
	}
	e.logger.Warn("Crawl-delay capped", "host", host, "requested", d, "applied", e.o.MaxDelay)
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	err := e.db.Update(func(tx *storage.Tx) error {
		return tx.PutEvidence("crawldelay", host, map[string]string{"requested": d.String(), "applied": e.o.MaxDelay.String()})
	})
	if err != nil {
		e.setFatal(err)
	}
}

func fillFromResult(p *storage.Page, r *fetch.Result) {
	p.Status = r.Status
	p.ContentType = r.ContentType
	p.FetchedAt = r.FetchedAt
	p.DurationMS = float64(r.Duration.Microseconds()) / 1000
	p.RemoteIP = r.RemoteIP
	p.Bytes = len(r.RawBody)
	if r.FinalURL != "" && r.FinalURL != r.URL {
		p.FinalURL = r.FinalURL
		p.Redirects = r.Redirects
	}
	s256 := sha256.Sum256(r.RawBody)
	p.SHA256 = hex.EncodeToString(s256[:])
	s1 := sha1.Sum(r.RawBody)
	p.SHA1 = base32.StdEncoding.EncodeToString(s1[:])
}

// commit records the page and the links it contributes in one transaction.
func (e *Engine) commit(it *frontier.Item, p *storage.Page, c *pageContent, res *fetch.Result) {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	if e.fatal() != nil {
		return
	}
	p.ID, p.URL, p.Host, p.Depth, p.Via = it.ID, it.URL, it.Host, it.Depth, it.Via
	if it.FetchURL != "" && p.FinalURL == "" {
		p.FinalURL = it.FetchURL // the URL that served the page
	}
	p.Verify = it.Verify
	if p.FetchedAt.IsZero() {
		p.FetchedAt = time.Now().UTC()
	}
	var decision dedup.Decision
	if c != nil && c.known != nil {
		decision = *c.known
	} else if c != nil && c.sig.Words > 0 {
		decision = e.det.CheckAndAddSettled(p.ID, c.sig, e.settler(c.doc.Tokens))
		if decision.Class != dedup.Unique && decision.Original == p.ID {
			// A URL fetched again (queued twice) is not a copy of itself.
			decision = dedup.Decision{}
		}
	}
	learned := e.learnParams(p, c, decision)
	var pushed []frontier.Item
	var withdrawn, decided []string
	err := e.db.Update(func(tx *storage.Tx) error {
		if err := putParamRules(tx, learned); err != nil {
			return err
		}
		pushed = pushed[:0]
		withdrawn = withdrawn[:0]
		e.txSkipped = 0
		decided = decided[:0]
		if c != nil {
			switch decision.Class {
			case dedup.Exact, dedup.Near:
				p.Class = decision.Class.String()
				p.OriginalID = decision.Original
				p.Similarity = decision.Similarity
				p.Method = decision.Method
				if op, err := tx.GetPage(decision.Original); err == nil {
					p.DuplicateOf = op.URL
					if op.FinalURL != "" {
						p.DuplicateOf = op.FinalURL
					}
				}
			default:
				p.Class = storage.ClassUnique
			}
			if e.o.Mirror != nil {
				w, dec, err := e.mirrorEvidence(tx, p, c.doc, c.links)
				if err != nil {
					return err
				}
				withdrawn = append(withdrawn, w...)
				decided = append(decided, dec...)
				items, err := e.sampleWaiting(tx, p)
				if err != nil {
					return err
				}
				pushed = append(pushed, items...)
			}
			items, err := e.links(tx, p, c.links)
			if err != nil {
				return err
			}
			pushed = append(pushed, items...)
			if err := tx.PutText(p.ID, c.doc.Text); err != nil {
				return err
			}
			if p.Class == storage.ClassUnique && c.sig != nil && c.sig.Words > 0 {
				b, err := c.sig.MarshalBinary()
				if err != nil {
					return err
				}
				if err := tx.PutSignature(p.ID, b); err != nil {
					return err
				}
			}
		}
		if res != nil && p.Status >= 300 && p.Status < 400 {
			item, ok, err := e.redirect(tx, it, p, res.Header.Get("Location"))
			if err != nil {
				return err
			}
			if ok {
				pushed = append(pushed, item)
			}
		}
		// A URL whose fetch failed cannot stand in for the copies that were
		// skipped in its favour: queue them after all.
		failed := p.Class == storage.ClassError || p.Class == storage.ClassRobotsDisallowed ||
			(p.Status >= 300 && p.Status < 400)
		if failed {
			// The same path on a mirror of this URL's site may hold what
			// the original lacks.
			if e.o.Mirror != nil {
				items, err := e.fetchCopiesOfFailure(tx, it.URL, it.Via, it.Depth)
				if err != nil {
					return err
				}
				pushed = append(pushed, items...)
			}
			// Each dependent is queued before its record goes: a crash
			// between two parts of this transaction (storage.Update) then
			// leaves it queued twice at worst, never lost.
			deps, err := tx.Dependents(it.URL)
			if err != nil {
				return err
			}
			for _, d := range deps {
				item, ok, err := e.requeueDependent(tx, d)
				if err != nil {
					return err
				}
				if ok {
					pushed = append(pushed, item)
				}
				if err := tx.DeleteDependent(it.URL, d); err != nil {
					return err
				}
			}
		}
		if res != nil && e.o.KeepRaw && len(res.RawBody) > 0 {
			p.HasRaw = true
			if err := tx.PutRaw(p.ID, rawRequest(res), rawResponse(res)); err != nil {
				return err
			}
		}
		if e.o.Mirror != nil {
			items, err := e.gapResult(tx, p)
			if err != nil {
				return err
			}
			pushed = append(pushed, items...)
		}
		if err := tx.PutPage(p); err != nil {
			return err
		}
		if err := tx.DeleteQueue(it.Host, it.Seq); err != nil {
			return err
		}
		return tx.PutMeta("requests", []byte(fmt.Sprint(e.requests.Load())))
	})
	if err != nil {
		e.setFatal(fmt.Errorf("cannot record %s: %w", it.URL, err))
		return
	}
	if p.Class == storage.ClassExact || p.Class == storage.ClassNear {
		e.dups.Add(1)
	}
	e.countClass(p.Class, 1)
	e.countClass(storage.ClassMirrorSkipped, e.txSkipped)
	if c != nil && c.digest != nil && c.sig != nil && c.sig.Words > 0 {
		orig := p.ID
		if p.Class == storage.ClassExact {
			orig = p.OriginalID
		}
		if p.Class == storage.ClassUnique || p.Class == storage.ClassExact {
			e.digMu.Lock()
			e.digests[*c.digest] = digestHit{original: orig, simhash: p.Simhash}
			e.digMu.Unlock()
		}
	}
	e.push(pushed)
	for _, key := range withdrawn {
		e.requeueSkipped(key)
	}
	for _, key := range decided {
		e.onDecided(key)
	}
}

// links decides, for a parsed page, which of its links to queue and which to
// skip as copies of URLs already known on the page's original.
func (e *Engine) links(tx *storage.Tx, p *storage.Page, links []string) ([]frontier.Item, error) {
	if p.NoFollow || p.Depth >= e.o.MaxDepth {
		return nil, nil
	}
	links = e.paramCanonical(links) // rules decided since the worker canonicalized them
	dup := p.Class == storage.ClassExact || p.Class == storage.ClassNear
	var mapping mirror.Mapping
	mapped := false
	if dup && e.o.SkipDuplicateLinks && p.DuplicateOf != "" {
		self := p.URL
		if p.FinalURL != "" {
			self = p.FinalURL
		}
		mapping, mapped = mirror.Infer(self, p.DuplicateOf)
		if mapped && mapping.Identity() {
			mapped = false
		}
	}
	if !dup && e.o.SkipDuplicateLinks && e.o.Mirror != nil {
		// A page on the copy side of a mirror candidate whose counterpart
		// is known is presumed a copy until the evidence says otherwise.
		if m, ok := e.o.Mirror.CopyMapping(p.URL); ok {
			if cp, ok := m.Apply(p.URL); ok {
				if _, seen, err := tx.SeenID(cp); err != nil {
					return nil, err
				} else if seen {
					dup, mapping, mapped = true, m, true
				}
			}
		}
	}
	var out []frontier.Item
	for _, cu := range links {
		verify := false
		if e.o.Mirror != nil {
			skipped, v, queued, err := e.skipMirrorLink(tx, cu, p)
			if err != nil {
				return nil, err
			}
			if queued != nil {
				out = append(out, *queued)
			}
			if skipped {
				continue
			}
			verify = v
		}
		if dup && e.o.SkipDuplicateLinks && !verify {
			if _, seen, err := tx.SeenID(cu); err != nil {
				return nil, err
			} else if seen {
				continue
			}
			// A link skipped as a copy already (hub pages are linked from
			// every page) keeps its skip record while its counterpart
			// stands; it is fetched only as a sample.
			already, err := standingSkip(tx, cu)
			if err != nil {
				return nil, err
			}
			sample := false
			if !e.inScope(cu) {
				continue
			}
			if mapped {
				if cp, ok := mapping.Apply(cu); ok && cp != cu {
					cpID, usable, err := counterpartUsable(tx, cp)
					if err != nil {
						return nil, err
					}
					// A pair of index pages cannot tell whether one side
					// drops the other's extensions ("a" for "a.html"):
					// a counterpart known under the other form is the one.
					for _, alt := range mirror.ExtAlternates(cp) {
						if usable {
							break
						}
						if id, ok, err := counterpartUsable(tx, alt); err != nil {
							return nil, err
						} else if ok {
							cp, cpID, usable = alt, id, true
						}
					}
					// While the mapping is an undecided mirror candidate, a
					// few copies are fetched to verify it: copies whose
					// counterpart was fetched with content already, so that
					// each sample is a comparison (a counterpart that is only
					// queued may turn out missing, and the sample wasted).
					if usable && e.o.Mirror != nil {
						cmp, err := comparable(tx, cpID)
						if err != nil {
							return nil, err
						}
						sample = cmp && e.o.Mirror.WantSample(mirror.Key(mapping))
					}
					if usable && !sample {
						if !already {
							if err := e.skip(tx, cu, cp, cpID, p, p.Similarity); err != nil {
								return nil, err
							}
						}
						continue
					}
					// Across hosts, a counterpart nobody has linked to yet is
					// queued on the original and the copy waits on it (it is
					// fetched if the counterpart fails): the copy host does
					// not race ahead of a busy original.
					if !usable && !sample && e.o.Mirror != nil && !mapping.SameHost() {
						item, queued, err := e.follow(tx, cp, p.Depth+1, p.URL)
						if err != nil {
							return nil, err
						}
						if queued {
							out = append(out, item)
							if !already {
								if err := e.skip(tx, cu, cp, item.ID, p, p.Similarity); err != nil {
									return nil, err
								}
							}
							continue
						}
					}
				}
			}
			if already && !sample {
				continue
			}
			// A sample, or a duplicate's link with no known counterpart
			// (which may lead to content the original does not have):
			// follow it.
		}
		var item frontier.Item
		var ok bool
		var err error
		if verify {
			if p.Depth+1 <= e.o.MaxDepth && e.inScope(cu) {
				item, ok, err = e.enqueueItem(tx, cu, p.Depth+1, p.URL, true, 0)
			}
		} else {
			item, ok, err = e.follow(tx, cu, p.Depth+1, p.URL)
		}
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, item)
		}
	}
	return out, nil
}

// skip records link as a copy of counterpart and registers it to be queued
// if the counterpart's fetch fails.
func (e *Engine) skip(tx *storage.Tx, link, counterpart string, cpID uint64, via *storage.Page, sim float64) error {
	rec := &storage.Page{
		URL: link, Host: frontier.HostKey(link), Depth: via.Depth + 1, Via: via.URL,
		Class: storage.ClassMirrorSkipped, DuplicateOf: counterpart, OriginalID: cpID,
		Method: "mirror", Similarity: sim, FetchedAt: time.Now().UTC(),
	}
	// The dependent first: a crash between two parts of the transaction
	// then leaves a dependent without its skip record (queued if the
	// counterpart fails, as it should be), never a skipped URL that nothing
	// would queue again.
	if err := tx.AddDependent(counterpart, storage.Dependent{ID: cpID, URL: link, Depth: via.Depth + 1, Via: via.URL}); err != nil {
		return err
	}
	e.txSkipped++
	return tx.PutSkipped(rec)
}

func (e *Engine) inScope(cu string) bool {
	if e.o.Scope != nil && !e.o.Scope.InScope(cu) {
		return false
	}
	return frontier.CheckTrap(cu, e.o.Trap) == nil
}

// follow queues cu if it is in scope, not a trap and not seen.
func (e *Engine) follow(tx *storage.Tx, cu string, depth int, via string) (frontier.Item, bool, error) {
	cu = e.params.Canonical(cu)
	if depth > e.o.MaxDepth || !e.inScope(cu) {
		return frontier.Item{}, false, nil
	}
	return e.enqueue(tx, cu, depth, via)
}

// redirect queues the target of a 3xx response p (of item it) as the next hop
// of its chain. The target stands for the URL that was linked, so it keeps
// that URL's depth (as Heritrix, which does not count redirect hops against
// max-hops); fetch.max_redirects bounds the chain instead: a redirect past it
// is not followed, and p is recorded as an error of class "redirect" naming
// the chain's length and the target it refused.
func (e *Engine) redirect(tx *storage.Tx, it *frontier.Item, p *storage.Page, location string) (frontier.Item, bool, error) {
	if location == "" {
		return frontier.Item{}, false, nil
	}
	base, _ := url.Parse(it.Target()) // Location is relative to the URL requested
	cu, err := frontier.Canonicalize(location, base)
	if err != nil {
		return frontier.Item{}, false, nil
	}
	if it.Hops >= e.o.MaxRedirects {
		p.Class, p.ErrorClass = storage.ClassError, fetch.ClassRedirect
		p.Error = fmt.Sprintf("too many redirects: %d followed (fetch.max_redirects %d), not following HTTP %d to %s",
			it.Hops, e.o.MaxRedirects, p.Status, cu)
		return frontier.Item{}, false, nil
	}
	cu = e.params.Canonical(cu)
	if it.Depth > e.o.MaxDepth || !e.inScope(cu) {
		return frontier.Item{}, false, nil
	}
	if cu == it.URL {
		// The server redirects the URL to itself but for session
		// parameters (/ to /;jsessionid=R): it serves the page only under
		// them. Request the same item once more at the URL as written; the
		// seen-set keeps the canonical form. A server that redirects that
		// one too (a fresh id each time, no cookies kept) is recorded.
		written, err := url.Parse(location)
		if err != nil {
			return frontier.Item{}, false, nil
		}
		target := base.ResolveReference(written).String()
		if target == it.Target() {
			return frontier.Item{}, false, nil // redirects to itself: the seen-set ends it
		}
		if it.FetchURL != "" {
			p.Class, p.ErrorClass = storage.ClassError, fetch.ClassRedirect
			p.Error = fmt.Sprintf("redirect loop: HTTP %d to %s, the same page but for session parameters", p.Status, location)
			return frontier.Item{}, false, nil
		}
		item := frontier.Item{ID: it.ID, URL: it.URL, FetchURL: target, Depth: it.Depth, Via: it.Via,
			Host: it.Host, Seq: e.fr.Assign(it.Host), Verify: it.Verify, Hops: it.Hops + 1}
		return item, true, tx.PutQueue(item)
	}
	item, ok, err := e.enqueueItem(tx, cu, it.Depth, it.URL, false, it.Hops+1)
	return item, ok, err
}

// enqueue marks cu seen and writes its queue entry, unless it was seen.
func (e *Engine) enqueue(tx *storage.Tx, cu string, depth int, via string) (frontier.Item, bool, error) {
	return e.enqueueItem(tx, cu, depth, via, false, 0)
}

// enqueueItem queues cu unless it was seen; hops is the number of redirects
// followed to reach it.
func (e *Engine) enqueueItem(tx *storage.Tx, cu string, depth int, via string, verify bool, hops int) (frontier.Item, bool, error) {
	if _, seen, err := tx.SeenID(cu); err != nil || seen {
		return frontier.Item{}, false, err
	}
	host := frontier.HostKey(cu)
	it := frontier.Item{ID: tx.NewID(), URL: cu, Depth: depth, Via: via, Host: host, Seq: e.fr.Assign(host), Verify: verify, Hops: hops}
	if err := tx.MarkSeen(cu, it.ID); err != nil {
		return it, false, err
	}
	if err := tx.PutQueue(it); err != nil {
		return it, false, err
	}
	if err := tx.DeleteSkipped(cu); err != nil {
		return it, false, err
	}
	return it, true, nil
}

// push hands committed queue entries to the frontier, first telling it which
// IP each new host shares its politeness clock with.
func (e *Engine) push(items []frontier.Item) {
	for _, it := range items {
		e.hostMu.Lock()
		first := !e.hostsSeen[it.Host]
		e.hostsSeen[it.Host] = true
		e.hostMu.Unlock()
		if first {
			e.politeKey(it.Host)
		}
	}
	e.fr.Push(items...)
}

// politeKey groups hosts by IP address. IP literals are grouped at once; names
// are queued for the lookup pool (resolve.go) and grouped when the answer
// comes. A name the address policy refuses outright is not looked up.
func (e *Engine) politeKey(host string) {
	h := hostOnly(host)
	if ip := net.ParseIP(h); ip != nil {
		e.fr.SetPoliteKey(host, "ip:"+ip.String())
		return
	}
	if e.o.Addresses != nil && e.o.Addresses.CheckHost(host) != nil {
		e.fr.SetPoliteKey(host, host)
		return
	}
	// Hold the host until it is grouped, so that its first request (its
	// robots.txt) already waits for the clock of its IP.
	e.fr.AwaitPoliteKey(host)
	e.lq.push(host)
}

// hostOnly strips the port and the IPv6 brackets of a host key.
func hostOnly(host string) string {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	return strings.Trim(h, "[]")
}

func rawRequest(r *fetch.Result) []byte {
	u, err := url.Parse(r.FinalURL)
	if err != nil || r.FinalURL == "" {
		u, _ = url.Parse(r.URL)
	}
	var b strings.Builder
	target := "/"
	if u != nil {
		target = requestURI(u)
	}
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\n", target)
	if u != nil {
		fmt.Fprintf(&b, "Host: %s\r\n", u.Host)
	}
	for k, vs := range r.RequestHeader {
		if strings.EqualFold(k, "Host") {
			continue
		}
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	return []byte(b.String())
}

func rawResponse(r *fetch.Result) []byte {
	var b strings.Builder
	proto := r.Proto
	if proto == "" {
		proto = "HTTP/1.1"
	}
	fmt.Fprintf(&b, "%s %d %s\r\n", proto, r.Status, http.StatusText(r.Status))
	for k, vs := range r.Header {
		// The body is stored decoded: drop headers that describe the
		// transfer rather than the payload.
		if strings.EqualFold(k, "Content-Encoding") || strings.EqualFold(k, "Transfer-Encoding") || strings.EqualFold(k, "Content-Length") {
			continue
		}
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(r.RawBody))
	out := make([]byte, 0, b.Len()+len(r.RawBody))
	out = append(out, b.String()...)
	return append(out, r.RawBody...)
}
