// Package crawl is the engine: it wires frontier, fetch, parse, dedup, mirror
// and storage, owns the worker goroutines and shuts them down.
//
// One page flows: frontier lease -> robots.txt check -> fetch (worker.go) ->
// release the host's politeness slot -> parse and sign (worker.go) -> commit
// (commit.go, serial): dedup decision, links to follow or skip (links.go),
// mirror actions (mirror.go), one storage transaction -> push the new queue
// entries to the frontier -> finish the lease.
// A sitemap item (sitemaps.go) takes the same way up to the fetch; its body
// is read as a sitemap and its URLs queued in a transaction of its own.
//
// Commits are serialized so that "is this page a duplicate" and "are its
// links' counterparts known" are answered against a state in which every
// earlier page's links are already queued. The state the engine shares with
// other crawl processes is behind the interfaces of seam.go.
package crawl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
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

// Detector is the near-duplicate detector: signing (pure) and its in-memory
// index (LocalIndex makes the index a DuplicateIndex).
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
	ProgressEvery      time.Duration       // slog progress lines (0 = off)
	Mirror             *mirror.Detector    // host-level mirror detection (nil = off)
	Links              *mirror.LinkMonitor // the near-duplicate link monitor and copy policy (nil = off: links suppressed, none sampled)
	Addresses          HostChecker         // address policy applied at lease time (nil = none)
	Resolver           Resolver            // politeness lookups (nil = net.DefaultResolver)
	MaxLookups         int                 // concurrent politeness lookups (0 = DefaultMaxLookups)
	LookupTimeout      time.Duration       // one politeness lookup (0 = DefaultLookupTimeout)
	Sitemaps           bool                // fetch the sitemaps robots.txt names and queue their URLs (sitemaps.go)
	SitemapMaxBytes    int64               // uncompressed bytes of one sitemap read (crawl.sitemap_max_bytes; 0 = sitemap.MaxBytes)
	CanonicalHints     bool                // queue a known canonical URL in place of its alias (canonical.go)
	ParamRefresh       time.Duration       // read the parameter rules other workers stored this often (params.go; 0 = never)
	PagesSpent         int64               // the page requests of earlier runs (storage.MetaPagesCommitted counts on from it)
}

// Engine runs a crawl over one store.
type Engine struct {
	o      Options
	st     Store
	fr     Frontier
	f      Fetcher
	robots RobotsSource
	det    Detector       // signing and shingling
	index  DuplicateIndex // the duplicate decision
	shared bool           // one worker of a shared crawl (BuildShared)
	logger *slog.Logger
	// sctx is the context of store calls: a page's transaction, once its
	// fetch is over, runs to its end (a hard stop cancels fetches, not
	// commits), so it is not the crawl's context. (A store that refuses
	// writes is told of the stop apart: PausingStore.)
	sctx context.Context

	mirror mirrorActions       // noMirrors, or mirrorRules over Options.Mirror
	links  linkPolicy          // plainLinks, or mirrorLinks over Options.Mirror
	near   *mirror.LinkMonitor // Options.Links (nearmonitor.go)

	commitMu sync.Mutex
	requests atomic.Int64
	pages    atomic.Int64
	dups     atomic.Int64
	spent    atomic.Int64 // fetched items committed in this run (putCounts)

	classMu sync.Mutex
	classes map[string]int64 // page records by class in this run, for Snapshot

	digests payloadDigests // byte-identical payloads seen in this run

	hostMu    sync.Mutex
	hostsSeen map[string]bool
	lq        lookupQueue // hosts waiting for politeKey's lookup
	capLogged map[string]bool

	params *frontier.ParamLearner // irrelevant parameters per host (params.go)
	rc     recrawlRound           // the latest recrawl (recrawl.go)

	sitemaps sitemapState // sitemaps.go
	audit    skipAudit    // skipaudit.go
	pidx     pageIndex    // pageindex.go
	load     indexLoad    // indexload.go
	seenURLs seenCache    // seencache.go
	// seenFilter is the seen filter of an engine over its own Badger
	// store (nil for a shared store): seenfilter.go.
	seenFilter *seenFilter

	errMu    sync.Mutex
	fatalErr error
	cancel   context.CancelFunc
}

// New builds an engine over a Badger store and the in-memory frontier and
// dedup index. robots may be nil when robots.txt is not obeyed.
func New(o Options, db *storage.DB, fr *frontier.Frontier, f Fetcher, robots RobotsSource, det Detector, logger *slog.Logger) *Engine {
	var q Frontier
	if fr != nil {
		q = fr
	}
	// The engine owns the store: its seen filter answers "not seen"
	// without a read once Restore has loaded it (seenfilter.go).
	sf := newSeenFilter(seenFilterN0, seenFilterRate)
	e := NewShared(o, badgerStore{db: db, seen: sf}, q, f, robots, det, LocalIndex(det), logger)
	e.seenFilter = sf
	return e
}

// NewShared builds an engine over any implementation of the crawl's shared
// state (seam.go): the store, the frontier and the duplicate index. det
// signs pages; index decides duplicates.
func NewShared(o Options, st Store, fr Frontier, f Fetcher, robots RobotsSource, det Detector, index DuplicateIndex, logger *slog.Logger) *Engine {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if o.Workers < 1 {
		o.Workers = 1
	}
	e := &Engine{o: o, st: st, fr: fr, f: f, robots: robots, det: det, index: index, logger: logger,
		sctx: context.Background(), lq: lookupQueue{wake: make(chan struct{}, 1)},
		hostsSeen: map[string]bool{}, capLogged: map[string]bool{}, classes: newClassCounts(),
		digests: payloadDigests{m: map[[8]byte]digestHit{}}, params: frontier.NewParamLearner(frontier.ParamOptions{})}
	e.mirror, e.links, e.near = noMirrors{}, plainLinks{}, o.Links
	if o.Mirror != nil {
		mr := &mirrorRules{e: e, det: o.Mirror, sub: mirror.NewSubtrees(mirror.SubtreeOptions{})}
		e.mirror, e.links = mr, mirrorLinks{mr}
	}
	if o.Links != nil {
		lo := o.Links.Options()
		logger.Info("copy policy", "policy", lo.Policy, "rate", lo.Rate(), "sample_seed", lo.Seed)
	}
	e.rc = loadRecrawl(e.sctx, st)
	if b, err := st.GetMeta(e.sctx, storage.MetaRequests); err == nil {
		var n int64
		fmt.Sscan(string(b), &n)
		e.requests.Store(n)
	}
	return e
}

// Restore restores what a resumed crawl knows: the learned parameters, the
// near-duplicate link monitor's pairs and the mirror evidence, and starts
// the rebuild of the dedup index from the signatures in the store, so a
// resumed crawl still drops duplicates of pages fetched before. The rebuild
// runs beside the first requests; every duplicate decision waits for it
// (indexload.go; IndexLoaded waits for it too). The seen filter of an engine
// over its own store is loaded beside them too (seenfilter.go).
func (e *Engine) Restore() error {
	if err := e.restoreParams(); err != nil {
		return err
	}
	if err := e.restoreNear(); err != nil {
		return err
	}
	if err := e.mirror.restore(); err != nil {
		return err
	}
	e.startIndexLoad()
	if bs, ok := e.st.(badgerStore); ok && e.seenFilter != nil && bs.seen == e.seenFilter {
		e.seenFilter.startLoad(e.sctx, bs.db.ForEachSeenURL)
	}
	return nil
}

// Seed queues the seed URLs (canonical) that were not seen before.
func (e *Engine) Seed(seeds []string) (added int, err error) {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	return e.queueAll(len(seeds), func(tx Tx, i int) (frontier.Item, bool, error) {
		return e.enqueue(tx, e.params.Canonical(seeds[i]), 0, "")
	})
}

// queueAll queues up to n items in one transaction (queue(tx, i) returns the
// i-th, or false) and hands them to the frontier. Called with commitMu held.
func (e *Engine) queueAll(n int, queue func(tx Tx, i int) (frontier.Item, bool, error)) (int, error) {
	return e.queueAllFrom(func(tx Tx) ([]frontier.Item, error) {
		var items []frontier.Item
		for i := 0; i < n; i++ {
			it, ok, err := queue(tx, i)
			if err != nil {
				return nil, err
			}
			if ok {
				items = append(items, it)
			}
		}
		return items, nil
	})
}

// queueAllFrom runs queue in one transaction and hands the entries it
// returns to the frontier. Called with commitMu held.
func (e *Engine) queueAllFrom(queue func(tx Tx) ([]frontier.Item, error)) (int, error) {
	var items []frontier.Item
	err := e.st.Update(e.sctx, func(tx Tx) error {
		var err error
		items, err = queue(tx)
		return err
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
	s := e.Counts()
	st := e.fr.Stats()
	s.Queued, s.Active, s.Hosts, s.QueuedErr = st.Queued, st.Active, st.Hosts, st.Err
	return s
}

// Counts is Snapshot without the frontier's figures (Queued, Active and
// Hosts stay zero): the engine's own counters, read without asking the
// frontier (a shared crawl's frontier asks Redis).
func (e *Engine) Counts() Stats {
	s := Stats{
		Pages: e.pages.Load(), Requests: e.requests.Load(), Duplicates: e.dups.Load(), Running: true,
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
func (e *Engine) countClass(class storage.Class, n int) {
	if n == 0 {
		return
	}
	e.classMu.Lock()
	e.classes[string(class)] += int64(n)
	e.classMu.Unlock()
}

// Run crawls until the frontier is exhausted or ctx is cancelled. ctx stops
// leasing new URLs (requests in flight finish); hard cancels requests in flight.
func (e *Engine) Run(ctx, hard context.Context) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	e.cancel = cancel
	if ps, ok := e.st.(PausingStore); ok {
		ps.StopPauses(runCtx) // a stop ends the waits for a store that refuses writes
	}
	if err := e.recordPolicy(); err != nil {
		return err
	}
	stopLookups := e.startLookups(runCtx)
	stopMirror := e.mirror.follow(runCtx)
	var wg sync.WaitGroup
	if e.o.ProgressEvery > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); e.progress(runCtx) }()
	}
	if e.o.ParamRefresh > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); e.refreshParams(runCtx) }()
	}
	// Hosts queued by an earlier run get their IP grouping before any lease.
	for _, h := range e.fr.Hosts() {
		e.newHost(h)
	}
	// When the frontier runs out, the skip audit (skipaudit.go) may queue
	// skipped URLs whose counterparts were not kept: the crawl goes on.
	e.runWorkers(runCtx, hard)
	for e.auditEnd(ctx) {
		e.runWorkers(runCtx, hard)
	}
	cancel()
	wg.Wait()
	stopLookups()
	stopMirror()
	if err := e.fatal(); err != nil {
		// Not complete, whatever an earlier run on this data dir said (the
		// store may be what failed: then it keeps what it had).
		_ = e.st.PutMeta(e.sctx, storage.MetaComplete, []byte("false"))
		return err
	}
	st := e.fr.Stats()
	complete := ctx.Err() == nil && st.Err == nil && st.Queued == 0
	if err := e.st.PutMeta(e.sctx, storage.MetaComplete, []byte(fmt.Sprint(complete))); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	return e.st.PutMeta(e.sctx, storage.MetaFinished, []byte(time.Now().UTC().Format(time.RFC3339Nano)))
}

// runWorkers leases and handles URLs with o.Workers goroutines until the
// frontier has nothing more to lease or ctx is done.
func (e *Engine) runWorkers(ctx, hard context.Context) {
	var workers sync.WaitGroup
	for i := 0; i < e.o.Workers; i++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				it, err := e.fr.Next(ctx)
				if err != nil {
					if !errors.Is(err, frontier.ErrDone) && ctx.Err() == nil {
						// Not a finished crawl: a frontier that cannot go on
						// (a shared crawl's state lost in Redis) stops it.
						e.setFatal(fmt.Errorf("frontier: %w", err))
					}
					return
				}
				e.handle(hard, it)
			}
		}()
	}
	workers.Wait()
}

func (e *Engine) setFatal(err error) {
	if errors.Is(err, ErrNotRecorded) {
		// The crawl is stopping already (PausingStore): what was not
		// recorded stays queued in the store.
		e.logger.Warn("not recorded, stays queued", "err", err)
		return
	}
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
			var queued any = st.Queued
			if st.Err != nil {
				queued = "unknown (" + st.Err.Error() + ")"
			}
			e.logger.Info("progress", "pages", p, "requests", e.requests.Load(), "queued", queued,
				"active", st.Active, "duplicates", e.dups.Load(), "pages_per_sec", fmt.Sprintf("%.1f", rate))
		}
	}
}

// recordGiveUps records the hosts the frontier gave up, so the report and a
// resumed crawl know why their URLs were not fetched.
func (e *Engine) recordGiveUps() {
	for _, g := range e.fr.GiveUps() {
		e.logger.Warn("host given up", "host", g.Host, "reason", g.Reason, "urls_in_memory", len(g.Items))
		if !e.putEvidence("giveup", g.Host, map[string]any{"host": g.Host, "reason": g.Reason, "at": time.Now().UTC()}) {
			return
		}
		// The URLs the frontier held for the host are recorded with the
		// reason; any further queue entries stay in the store, so a later
		// run on the same data dir tries the host again. (A shared crawl's
		// frontier hands out the rest of the host's queue as leases to
		// record: frontier.Item.GivenUp.)
		for i := range g.Items {
			it := g.Items[i]
			if e.giveUpRevisit(&it, g.Reason) {
				continue
			}
			e.commit(&it, giveUpRecord(g), nil, nil, false)
		}
	}
}

// giveUpRecord is the record of a URL of host g gave up, not requested.
func giveUpRecord(g frontier.GiveUp) *storage.Page {
	class := storage.ClassError
	if g.Blocked {
		class = storage.ClassRobotsDisallowed // RFC 9309: unavailable robots.txt disallows the host
	}
	return &storage.Page{Class: class, ErrorClass: "gave_up", Error: "host given up: " + g.Reason}
}

// logCap logs and records (once per host) a Crawl-delay above max_delay. d is the delay read,
// text the value as written: a value beyond what d holds (fetch.MaxCrawlDelay) is shown as written.
func (e *Engine) logCap(host string, d time.Duration, text string) {
	e.hostMu.Lock()
	first := !e.capLogged[host]
	e.capLogged[host] = true
	e.hostMu.Unlock()
	if !first {
		return
	}
	requested := d.String()
	if d >= fetch.MaxCrawlDelay && text != "" {
		if len(text) > 40 {
			text = text[:40] + "..." // a number can be a line long
		}
		requested = text + " s"
	}
	e.logger.Warn("Crawl-delay capped", "host", host, "requested", requested, "applied", e.o.MaxDelay)
	e.putEvidence("crawldelay", host, map[string]string{"requested": requested, "applied": e.o.MaxDelay.String()})
}

// putEvidence stores one evidence record in a transaction of its own; a
// failure stops the crawl (false).
func (e *Engine) putEvidence(kind, key string, v any) bool {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	err := e.st.Update(e.sctx, func(tx Tx) error { return tx.PutEvidence(kind, key, v) })
	if err != nil {
		e.setFatal(err)
		return false
	}
	return true
}

// restoreEvidence decodes every evidence record of kind into a T.
func restoreEvidence[T any](e *Engine, kind string) ([]T, error) {
	var out []T
	err := e.st.ForEachEvidence(e.sctx, kind, func(_ string, v []byte) error {
		var r T
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}
