// Package frontier decides what to fetch next and when: URL canonicalization,
// scope and trap checks, per-host FIFO queues served breadth-first and fairly
// across hosts, politeness clocks per host and per IP, back-off, and budgets.
//
// The queues themselves are persistent: the crawl engine writes queue entries in
// the same storage transaction that records the page which discovered them, and
// the frontier reads them back through Store. In memory the frontier keeps only
// per-host state and a short head of each host's queue, so a frontier of
// millions of URLs does not need millions of entries in RAM.
package frontier

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// Item is one URL waiting in (or leased from) the frontier.
type Item struct {
	ID    uint64 `json:"id"`              // page id, assigned when the URL was first seen
	URL   string `json:"url"`             // canonical URL
	Depth int    `json:"depth"`           // link hops from a seed
	Via   string `json:"via,omitempty"`   // URL of the page that linked here
	Host  string `json:"-"`               // HostKey(URL)
	Seq   uint64 `json:"-"`               // position in the host's queue
	Tries int    `json:"tries,omitempty"` // earlier attempts that ended in back-off
	// Hops counts the redirects followed to reach this URL from the link or
	// seed that started its chain (fetch.max_redirects bounds it).
	Hops int `json:"hops,omitempty"`
	// FetchURL, when set, is requested in place of URL: the same page under
	// the session parameters its server insists on (it redirected URL there).
	FetchURL string `json:"fetch_url,omitempty"`
	// Verify marks a URL picked for a mirror decision's verification
	// stream: it is fetched although it could be skipped as a copy.
	Verify bool `json:"verify,omitempty"`
	// Sample, when set, marks a copy fetched as a sample of the
	// near-duplicate link monitor (mirror.LinkMonitor): the key of its
	// prefix pair. Its commit tells whether it was a duplicate.
	Sample string `json:"sample,omitempty"`
	// Sitemap, above 0, marks a sitemap file rather than a page: its
	// nesting level (1 named by a robots.txt, 2 listed by a sitemap index,
	// ...). Via is then the robots.txt that named its chain.
	Sitemap int `json:"sitemap,omitempty"`
	// GivenUp, set by a shared crawl's frontier (cluster/redisstate), marks
	// a URL of a host given up crawl-wide, leased to be recorded as the
	// URLs held for a host given up are (the engine's recordGiveUps), not
	// requested.
	GivenUp *GiveUp `json:"-"`
}

// Target is the URL to request for the item: FetchURL if set, else URL.
func (it *Item) Target() string {
	if it.FetchURL != "" {
		return it.FetchURL
	}
	return it.URL
}

// HostInfo describes one host's persistent queue, as found on start-up.
type HostInfo struct {
	Host   string
	Count  int    // queued items
	MinSeq uint64 // lowest sequence number queued
	MaxSeq uint64 // highest sequence number queued
}

// Store is what the frontier needs from persistence. Writes (queue entries
// added and removed) happen in the crawl engine's per-page transaction.
type Store interface {
	// QueueHosts lists every host that has queued items.
	QueueHosts() ([]HostInfo, error)
	// LoadQueue returns up to n items of host's queue with Seq >= from, in order.
	LoadQueue(host string, from uint64, n int) ([]Item, error)
}

// Options configures the scheduler.
type Options struct {
	Delay           time.Duration // minimum gap between requests to one host (and one IP)
	AdaptiveFactor  float64       // also wait this factor times the last response time
	MaxDelay        time.Duration // cap for adaptive delay and Crawl-delay
	MaxPages        int           // page leases in total (0 = unlimited)
	MaxPagesPerHost int           // page leases per host (0 = unlimited)
	BackoffBase     time.Duration // first back-off after 429/503/network failure
	BackoffMax      time.Duration // longest back-off
	MaxFailures     int           // consecutive failures before a host is given up
	HeadSize        int           // queue head kept in memory per host (default 64)
}

// DefaultOptions returns polite defaults.
func DefaultOptions() Options {
	return Options{
		Delay:       time.Second,
		MaxDelay:    30 * time.Second,
		BackoffBase: 5 * time.Second,
		BackoffMax:  10 * time.Minute,
		MaxFailures: 10,
		HeadSize:    64,
	}
}

// ErrDone is returned by Next when nothing is left to lease: every queue is
// empty (or its budget spent) and no leased item is still being processed.
var ErrDone = errors.New("frontier: crawl finished")

// Outcome tells the frontier how a leased item's request went.
type Outcome struct {
	Requested    bool          // a request was sent to the host (its politeness clock restarts)
	ResponseTime time.Duration // for the adaptive delay
	Status       int           // HTTP status (0 if none)
	RetryAfter   time.Duration // from the Retry-After header
	Failed       bool          // a network-level failure (timeout, reset, refused)
	Requeue      bool          // put the item back at the head of its queue (e.g. robots.txt was fetched first)
	Wait         time.Duration // do not serve the host again before this much time has passed
	Blocked      bool          // the host cannot be crawled now (robots.txt unavailable): counts as a failure
	Reason       string        // with Blocked: why, for the give-up record
	GiveUp       bool          // with Blocked: give the host up now (a failure retrying cannot cure)
}

// GiveUp describes a host the frontier stopped serving.
type GiveUp struct {
	Host    string
	Reason  string
	Blocked bool   // given up because its robots.txt stayed unavailable
	Items   []Item // items that were still in memory for it; more may remain in the store
}

type hostState struct {
	key        string
	politeKey  string // hosts with the same politeness key (IP) share one clock
	head       []Item // in-memory head of the queue, in order
	queued     int    // items in the queue not leased (in memory or only in the store)
	loadedTo   uint64 // highest seq that is in head or was leased
	nextSeq    uint64 // next sequence number to assign
	busy       bool   // an item of this host is leased and its request not yet released
	leased     int    // page leases so far (for MaxPagesPerHost)
	crawlDelay time.Duration
	notBefore  time.Time // Outcome.Wait: this host (not its IP) is held until then
	keyPending bool      // AwaitPoliteKey: not leased until SetPoliteKey groups it
	lastResp   time.Duration
	failures   int
	dead       bool
	heapIdx    int // index in the ready heap, -1 if not in it
}

type politeState struct {
	nextAt  time.Time
	busy    bool
	members int // hosts sharing this clock
}

// Frontier schedules leases. Its methods are safe for concurrent use.
type Frontier struct {
	opts   Options
	store  Store
	now    func() time.Time
	logger *slog.Logger

	mu      sync.Mutex
	hosts   map[string]*hostState
	polite  map[string]*politeState
	ready   readyHeap // hosts with queued items, not busy, not dead
	active  int       // leased items not yet Finished
	leased  int       // page leases in total (budget)
	queued  int       // total queued
	pending int       // hosts held by AwaitPoliteKey
	stopped bool
	paused  bool          // Pause: no lease until Resume (pause.go)
	changed chan struct{} // closed and replaced whenever state changes
	giveUps []GiveUp
}

// New builds a frontier over store, loading the queue state it holds.
// A nil now uses time.Now; a nil logger discards.
func New(o Options, store Store, now func() time.Time, logger *slog.Logger) (*Frontier, error) {
	if o.HeadSize <= 0 {
		o.HeadSize = 64
	}
	o = o.WithDefaults()
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := &Frontier{
		opts: o, store: store, now: now, logger: logger,
		hosts:   make(map[string]*hostState),
		polite:  make(map[string]*politeState),
		changed: make(chan struct{}),
	}
	infos, err := store.QueueHosts()
	if err != nil {
		return nil, fmt.Errorf("frontier: cannot read queues: %w", err)
	}
	for _, in := range infos {
		h := f.host(in.Host)
		h.queued = in.Count
		h.loadedTo = in.MinSeq - 1
		h.nextSeq = in.MaxSeq + 1
		f.queued += in.Count
		f.markReady(h)
	}
	return f, nil
}

func (f *Frontier) host(key string) *hostState {
	h := f.hosts[key]
	if h == nil {
		h = &hostState{key: key, politeKey: key, heapIdx: -1, nextSeq: 1}
		f.hosts[key] = h
	}
	return h
}

func (f *Frontier) politeOf(h *hostState) *politeState {
	p := f.polite[h.politeKey]
	if p == nil {
		p = &politeState{members: 1}
		f.polite[h.politeKey] = p
	}
	return p
}

func (f *Frontier) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *Frontier) markReady(h *hostState) {
	if h.dead || h.busy || h.keyPending || h.queued == 0 {
		return
	}
	if f.opts.MaxPagesPerHost > 0 && h.leased >= f.opts.MaxPagesPerHost {
		return
	}
	if h.heapIdx >= 0 {
		heap.Fix(&f.ready, h.heapIdx)
		return
	}
	heap.Push(&f.ready, readyEntry{h: h, f: f})
}

// Assign returns the next queue sequence number of host. The engine writes the
// queue entry under it and then calls Push after its transaction commits.
func (f *Frontier) Assign(host string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.host(host)
	s := h.nextSeq
	h.nextSeq++
	return s
}

// Push makes items (already stored under their assigned Seq) available.
func (f *Frontier) Push(items ...Item) {
	if len(items) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, it := range items {
		h := f.host(it.Host)
		h.queued++
		f.queued++
		// Keep it in memory only if everything before it is loaded, so
		// that the head stays a contiguous prefix of the stored queue.
		if len(h.head) < f.opts.HeadSize && it.Seq == h.loadedTo+1 {
			h.head = append(h.head, it)
			h.loadedTo = it.Seq
		}
		f.markReady(h)
	}
	f.notify()
}

// SetPoliteKey makes host share its politeness clock with every other host of
// the same key (its IP address). Call it before the host's first lease.
func (f *Frontier) SetPoliteKey(host, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.host(host)
	if h.politeKey != key {
		old := f.politeOf(h)
		old.members--
		h.politeKey = key
		p := f.polite[key]
		if p == nil {
			p = &politeState{}
			f.polite[key] = p
		}
		p.members++
		if old.nextAt.After(p.nextAt) {
			p.nextAt = old.nextAt
		}
		if h.busy {
			// Leased under the old key: the new group is busy until Release.
			old.busy = false
			p.busy = true
		}
		if h.heapIdx >= 0 {
			heap.Fix(&f.ready, h.heapIdx)
		}
	}
	if h.keyPending {
		h.keyPending = false
		f.pending--
		f.markReady(h)
		f.notify()
	}
}

// AwaitPoliteKey holds host, which must not have been leased yet, until
// SetPoliteKey is called for it, so that its first request already shares
// the clock of its IP. Next does not report ErrDone while a host is held.
func (f *Frontier) AwaitPoliteKey(host string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.host(host)
	if h.keyPending {
		return
	}
	h.keyPending = true
	f.pending++
	if h.heapIdx >= 0 {
		heap.Remove(&f.ready, h.heapIdx)
	}
}

// SetCrawlDelay records a host's robots.txt Crawl-delay (capped at MaxDelay).
// It reports whether the value was capped.
func (f *Frontier) SetCrawlDelay(host string, d time.Duration) (capped bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d > f.opts.MaxDelay {
		d, capped = f.opts.MaxDelay, true
	}
	f.host(host).crawlDelay = d
	return capped
}

// Stop makes Next return ErrDone to every caller from now on.
func (f *Frontier) Stop() {
	f.mu.Lock()
	f.stopped = true
	f.notify()
	f.mu.Unlock()
}

// Next blocks until an item may be fetched under the politeness rules and
// leases it, or returns ErrDone, or ctx's error.
func (f *Frontier) Next(ctx context.Context) (*Item, error) {
	for {
		// A cancelled crawl leases nothing more, even when URLs are ready:
		// otherwise a worker whose item was requeued by the cancellation
		// leases it again at once, and spins.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f.mu.Lock()
		if f.stopped {
			f.mu.Unlock()
			return nil, ErrDone
		}
		if f.paused {
			if err := f.awaitChange(ctx); err != nil {
				return nil, err
			}
			continue
		}
		budgetLeft := f.opts.MaxPages <= 0 || f.leased < f.opts.MaxPages
		var wait time.Duration = -1
		if budgetLeft {
			for f.ready.Len() > 0 {
				h := f.ready.items[0].h
				p := f.politeOf(h)
				now := f.now()
				if p.busy {
					// Another host on the same IP holds the clock; it will
					// notify when released.
					wait = -1
					break
				}
				if d := readyAt(h, p).Sub(now); d > 0 {
					wait = d
					break
				}
				heap.Pop(&f.ready)
				it, err := f.takeHead(h)
				if err != nil {
					f.mu.Unlock()
					return nil, err
				}
				if it == nil {
					continue // queue turned out empty
				}
				h.busy = true
				p.busy = true
				f.fixShared(h, p)
				h.leased++
				f.leased++
				f.active++
				f.mu.Unlock()
				return it, nil
			}
		}
		if f.active == 0 && f.pending == 0 && (f.queued == 0 || !budgetLeft || f.ready.Len() == 0) {
			f.mu.Unlock()
			return nil, ErrDone
		}
		ch := f.changed
		f.mu.Unlock()
		var timer *time.Timer
		var tc <-chan time.Time
		if wait >= 0 {
			timer = time.NewTimer(wait)
			tc = timer.C
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil, ctx.Err()
		case <-ch:
		case <-tc:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// takeHead removes the first item of h's queue from memory, loading more
// from the store when the in-memory head is empty. Called with f.mu held.
func (f *Frontier) takeHead(h *hostState) (*Item, error) {
	if len(h.head) == 0 && h.queued > 0 {
		items, err := f.store.LoadQueue(h.key, h.loadedTo+1, f.opts.HeadSize)
		if err != nil {
			return nil, fmt.Errorf("frontier: cannot load queue of %s: %w", h.key, err)
		}
		for i := range items {
			items[i].Host = h.key
			h.loadedTo = items[i].Seq
		}
		h.head = items
		if len(items) == 0 {
			// The store has nothing more: our count was stale.
			f.queued -= h.queued
			h.queued = 0
			return nil, nil
		}
	}
	if len(h.head) == 0 {
		return nil, nil
	}
	it := h.head[0]
	h.head = h.head[1:]
	h.queued--
	f.queued--
	return &it, nil
}

// Release frees the host slot of a leased item and restarts the host's
// politeness clock. Call it as soon as the request is over, before the page is
// processed, so the host's next URL can be scheduled. It reports whether the
// item went back into the queue (Requeue, or a 429/503 to be retried after
// back-off); the caller then records nothing for it.
func (f *Frontier) Release(it *Item, o Outcome) (requeued bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.host(it.Host)
	p := f.politeOf(h)
	h.busy = false
	p.busy = false
	now := f.now()
	if o.Wait > 0 {
		if t := now.Add(o.Wait); t.After(h.notBefore) {
			h.notBefore = t
		}
	}
	if o.Blocked {
		h.failures++
		if h.failures >= f.opts.MaxFailures || o.GiveUp {
			f.giveUp(h, GiveUpReason(h.failures, o))
			// The engine records nothing for a blocked item: hand it over.
			g := &f.giveUps[len(f.giveUps)-1]
			g.Items = append([]Item{*it}, g.Items...)
			g.Blocked = true
		}
	}
	if o.Requested {
		h.lastResp = o.ResponseTime
		next := now.Add(f.opts.Gap(h.crawlDelay, o.ResponseTime))
		if o.BacksOff() {
			h.failures++
			if t := now.Add(f.opts.Backoff(h.failures, o.RetryAfter)); t.After(next) {
				next = t
			}
			if h.failures >= f.opts.MaxFailures {
				f.giveUp(h, GiveUpReason(h.failures, o))
			} else if o.Status == 429 || o.Status == 503 {
				o.Requeue = true
			}
		} else if !o.Blocked {
			h.failures = 0
		}
		if next.After(p.nextAt) {
			p.nextAt = next
		}
	}
	if o.Requeue && !h.dead {
		it2 := *it
		if o.BacksOff() {
			it2.Tries++
		}
		h.head = append([]Item{it2}, h.head...)
		h.queued++
		f.queued++
		h.leased--
		f.leased--
		requeued = true
	}
	f.markReady(h)
	f.fixShared(h, p)
	f.notify()
	return requeued
}

// fixShared restores heap order for the other hosts that share h's politeness
// clock after it changed. Only IPs with several hosts pay for the scan.
func (f *Frontier) fixShared(h *hostState, p *politeState) {
	if p.members < 2 {
		return
	}
	heap.Init(&f.ready)
}

func (f *Frontier) giveUp(h *hostState, reason string) {
	h.dead = true
	g := GiveUp{Host: h.key, Reason: reason, Items: h.head}
	f.queued -= h.queued
	h.queued = 0
	h.head = nil
	if h.heapIdx >= 0 {
		heap.Remove(&f.ready, h.heapIdx)
	}
	f.giveUps = append(f.giveUps, g)
	f.logger.Warn("giving up host", "host", h.key, "reason", reason)
}

// GiveUps returns (and forgets) the hosts given up since the last call.
func (f *Frontier) GiveUps() []GiveUp {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.giveUps
	f.giveUps = nil
	return g
}

// Finish ends a lease once the item's results (and the links it found) are
// stored. The crawl is over only when no lease is unfinished.
func (f *Frontier) Finish(*Item) {
	f.mu.Lock()
	f.active--
	f.notify()
	f.mu.Unlock()
}

// Stats is a snapshot for progress reporting.
type Stats struct {
	Queued, Active, Leased, Hosts, ReadyHosts int
	// Err says why Queued could not be counted (a shared crawl's frontier
	// could not read Redis); Queued is then 0 and means nothing.
	Err error
}

// Stats returns a snapshot of the frontier's counters.
func (f *Frontier) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Stats{Queued: f.queued, Active: f.active, Leased: f.leased, Hosts: len(f.hosts), ReadyHosts: f.ready.Len()}
}

// Hosts returns the keys of all known hosts, sorted.
func (f *Frontier) Hosts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.hosts))
	for k := range f.hosts {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// readyAt is when h may next be leased: its IP's politeness clock, or later
// while the host itself is held (Outcome.Wait).
func readyAt(h *hostState, p *politeState) time.Time {
	if h.notBefore.After(p.nextAt) {
		return h.notBefore
	}
	return p.nextAt
}

// readyHeap orders ready hosts by the time their politeness clock allows the
// next request; ties go to the host with fewer leases (fairness).
type readyEntry struct {
	h *hostState
	f *Frontier
}

type readyHeap struct{ items []readyEntry }

func (r readyHeap) Len() int { return len(r.items) }
func (r readyHeap) Less(i, j int) bool {
	a, b := r.items[i], r.items[j]
	pa, pb := a.f.politeOf(a.h), b.f.politeOf(b.h)
	if pa.busy != pb.busy {
		return !pa.busy
	}
	if ra, rb := readyAt(a.h, pa), readyAt(b.h, pb); !ra.Equal(rb) {
		return ra.Before(rb)
	}
	if a.h.leased != b.h.leased {
		return a.h.leased < b.h.leased
	}
	return a.h.key < b.h.key
}
func (r readyHeap) Swap(i, j int) {
	r.items[i], r.items[j] = r.items[j], r.items[i]
	r.items[i].h.heapIdx = i
	r.items[j].h.heapIdx = j
}
func (r *readyHeap) Push(x any) {
	e := x.(readyEntry)
	e.h.heapIdx = len(r.items)
	r.items = append(r.items, e)
}
func (r *readyHeap) Pop() any {
	n := len(r.items)
	e := r.items[n-1]
	r.items = r.items[:n-1]
	e.h.heapIdx = -1
	return e
}
