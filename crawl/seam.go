package crawl

import (
	"context"
	"errors"
	"time"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// The state a crawl shares, named by what the engine does with it. Badger
// (storage.DB, through BadgerStore) and the in-memory frontier and dedup index
// implement every interface here; a shared backend (issue 19: Redis) implements
// them again, and storage/storetest checks any implementation against the
// same suite. docs/SEAMS.md states what each guarantees.
//
// Writes go through Store.Update: one call is one page's whole effect (its
// record, its links' queue entries and seen marks, skip records, evidence),
// and its reads see its own writes. The context given to Update bounds the
// whole transaction: a network store carries it into every call of the Tx.

// SeenSet is the set of URLs the crawl knows (queued, fetched or skipped as a
// known copy's dependent), each under the page id it was given.
type SeenSet interface {
	// SeenID returns the page id of u, if u is in the set.
	SeenID(u string) (id uint64, seen bool, err error)
	// CheckAndMark adds u under a new id (newID is called only then) unless
	// u is in the set, and returns u's id and whether this call added it.
	// Atomic: of two transactions that mark one URL, one adds it.
	CheckAndMark(u string, newID func() uint64) (id uint64, fresh bool, err error)
}

// SeenPrefetcher is a SeenSet that can read many URLs' marks in one round
// trip (a network store): the engine hands it a page's links before it marks
// them one by one, so that a page costs a bounded number of round trips.
// Optional: a Tx without it is asked URL by URL. The marks are checked
// again when the transaction commits.
type SeenPrefetcher interface {
	PrefetchSeen(urls []string) error
}

// PagePrefetcher is a Tx that reads in one round trip what a page's commit
// reads of the shared state one record at a time (a network store): the
// engine names those reads before the commit's steps run (commitTx.prefetch),
// and the steps are answered from what was read. Optional, as
// SeenPrefetcher: a read named but not made costs nothing more than its part
// of the round trip, a read made but not named goes to the store as before.
// What was read is checked at the commit as a read made one by one is.
type PagePrefetcher interface {
	PrefetchPage(r PageReads) error
}

// PageReads are the reads of one page's commit that a PagePrefetcher makes
// at once.
type PageReads struct {
	Links      []string      // links whose marks are read (SeenPrefetcher's urls)
	Evidence   []EvidenceRef // records TakeEvidence or GetEvidence reads
	Dependents []string      // counterparts whose dependents Dependents reads
}

// EvidenceRef names one evidence record.
type EvidenceRef struct{ Kind, Key string }

// ErrElsewhere is what a shared store's Text returns (wrapped, with
// storage.ErrNotFound) for a page another process fetched and keeps: the
// near-duplicate settlement then falls back to the sketch rule without a
// warning (docs/DEDUP.md).
var ErrElsewhere = errors.New("kept by another worker")

// PausingStore is a Store whose Update waits while the store refuses writes
// (a network store out of memory or cut off: redisstate tries again until
// it takes them). The engine hands it the crawl's stop (Engine.Run): once
// stop is done, a transaction the store refuses is given up at once, with
// ErrNotRecorded, so that a stopped crawl ends while the store refuses.
// What the transaction would have written is not in the store: its item
// stays queued there (a shared crawl's lease stays in flight and the item
// is queued again when the lease ends). Optional: a store that never
// waits (Badger) needs no stop.
type PausingStore interface {
	StopPauses(stop context.Context)
}

// InFlightKeeper is a Frontier whose leased items can stay in flight in a
// shared state past Finish (a shared crawl): the engine calls KeepInFlight
// for an item whose page's transaction was given up at the stop
// (ErrNotRecorded), so that Finish does not end its lease without a record:
// the item is queued again when the lease moves (the partition's next
// holder, or the resumed crawl).
type InFlightKeeper interface {
	KeepInFlight(it *frontier.Item)
}

// ErrNotRecorded is what a PausingStore's Update returns (wrapped, with the
// store's refusal) for a transaction given up at the crawl's stop. It ends
// no crawl with an error: the crawl was stopped, and is not complete.
var ErrNotRecorded = errors.New("not recorded: the crawl stopped while the store refused writes")

// QueueLog is the durable side of the frontier's queues: an entry is written
// when a URL is queued and deleted when its page is recorded, so a crash
// loses no URL (frontier.Store reads them back).
type QueueLog interface {
	PutQueue(it frontier.Item) error
	DeleteQueue(host string, seq uint64) error
}

// PageRecords are the records of the URLs the crawl dealt with, by page id.
type PageRecords interface {
	NewID() uint64 // never reused, even by a transaction that fails
	GetPage(id uint64) (*storage.Page, error)
	PutPage(p *storage.Page) error
	DeletePage(id uint64) error // a skip record whose URL is queued again
}

// PageContent is what a fetched page leaves besides its record: the raw
// request and response, the visible text (settlement, mirror comparisons),
// the dedup signature (the index is rebuilt from them), the link hashes
// (mirror link evidence).
type PageContent interface {
	PutRaw(id uint64, request, response []byte) error
	PutText(id uint64, text string) error
	PutSignature(id uint64, sig []byte) error
	PutLinks(id uint64, hashes []uint64) error
	GetLinks(id uint64) ([]uint64, error)
}

// SkipRecords are the records of links skipped as copies without a page id
// of their own (class mirror_skipped), by URL.
type SkipRecords interface {
	PutSkipped(p *storage.Page) error
	GetSkipped(u string) (*storage.Page, error) // nil, nil when u has none
	DeleteSkipped(u string) error
}

// DependentSet holds the URLs skipped in favour of a counterpart, by
// counterpart: they are queued if the counterpart fails.
type DependentSet interface {
	AddDependent(counterpart string, d storage.Dependent) error
	Dependents(counterpart string) ([]storage.Dependent, error)
	DeleteDependent(counterpart string, d storage.Dependent) error
}

// EvidenceLog holds mirror candidates, gap probes, parameter rules, give-ups
// and capped crawl delays, as JSON records by kind and key.
type EvidenceLog interface {
	PutEvidence(kind, key string, v any) error
	// TakeEvidence returns and deletes one record: of two transactions
	// that take it, one gets it.
	TakeEvidence(kind, key string) ([]byte, bool, error)
}

// EvidenceReader reads an evidence record inside a transaction without
// taking it: the store of URL alias hints (canonical.go). A Tx that lacks it
// crawls without alias hints (every alias is fetched; nothing is lost).
type EvidenceReader interface {
	GetEvidence(kind, key string) ([]byte, bool, error)
}

// Tx is one page's transaction (storage.Tx implements it).
type Tx interface {
	SeenSet
	QueueLog
	PageRecords
	PageContent
	SkipRecords
	DependentSet
	EvidenceLog
	PutMeta(name string, v []byte) error
}

// Store opens transactions and reads outside them.
type Store interface {
	// Update runs fn in one transaction: its writes become visible
	// together, or (on an error, or a conflict fn is retried for) not at
	// all. A store may commit a very large transaction in parts, in the
	// order fn wrote them (storage.DB.Update): the engine writes a page's
	// links before its record and the deletion of its queue entry.
	Update(ctx context.Context, fn func(tx Tx) error) error
	GetMeta(ctx context.Context, name string) ([]byte, error) // storage.ErrNotFound when absent
	PutMeta(ctx context.Context, name string, v []byte) error
	Page(ctx context.Context, id uint64) (*storage.Page, error)
	Text(ctx context.Context, id uint64) (string, error)
	ForEachPage(ctx context.Context, fn func(*storage.Page) error) error
	ForEachSkipped(ctx context.Context, fn func(*storage.Page) error) error
	ForEachSignature(ctx context.Context, fn func(id uint64, sig []byte) error) error
	ForEachEvidence(ctx context.Context, kind string, fn func(key string, v []byte) error) error
}

// SkipRangeReader is a Store that reads the skip records under a URL prefix
// without reading the others (a Badger store: they are keyed by URL). The
// rules acting on a mirror decision read the skips under its prefix so
// (issue 29); a Store without it is scanned whole.
type SkipRangeReader interface {
	ForEachSkippedUnder(ctx context.Context, prefix string, fn func(*storage.Page) error) error
}

// LocalPageReader is a Store whose Page may ask another process for a
// record this one does not keep (redisstate): LocalPage reads this process's
// records only, as ForEachPage does. The page index (pageindex.go) reads its
// candidates with it, so that a record deleted here is not asked of another
// worker.
type LocalPageReader interface {
	LocalPage(ctx context.Context, id uint64) (*storage.Page, error)
}

// DuplicateIndex is the near-duplicate index: exact fingerprints,
// supershingle keys, simhashes and sketches of the unique pages.
type DuplicateIndex interface {
	// CheckAndAdd decides whether the page is a duplicate of an indexed
	// one and, when it is unique, adds it: atomic, so of two copies
	// checked at once one is the original.
	CheckAndAdd(ctx context.Context, id uint64, sig *dedup.Signature, settle dedup.Settler) (dedup.Decision, error)
	// Add indexes a page unconditionally (the rebuild on resume).
	Add(ctx context.Context, id uint64, sig *dedup.Signature) error
}

// PrefetchingIndex is a DuplicateIndex whose check-and-add can send its
// first round in the round trip of a PagePrefetcher's reads (an index and a
// store over one network backend): a page's decision and its commit's reads
// then cost one round trip, not two. The index decides as CheckAndAdd does
// (atomically); rounds after the first go alone. Optional: the engine asks
// CheckAndAdd before the transaction otherwise.
type PrefetchingIndex interface {
	DuplicateIndex
	// CheckAndAddPrefetch makes tx's PrefetchPage(r) and CheckAndAdd's
	// decision of the page, the reads and the first round in one round
	// trip. ok is false, and nothing is done, when tx is not of its
	// backend.
	CheckAndAddPrefetch(ctx context.Context, tx Tx, r PageReads, id uint64, sig *dedup.Signature, settle dedup.Settler) (d dedup.Decision, ok bool, err error)
}

// Queues is the frontier as the workers use it: leases, their release and
// end, new entries, and what the frontier gave up.
type Queues interface {
	Next(ctx context.Context) (*frontier.Item, error) // a lease; an error when stopped
	Release(it *frontier.Item, o frontier.Outcome) (requeued bool)
	Finish(it *frontier.Item)
	Push(items ...frontier.Item)
	Assign(host string) uint64 // the next sequence number of host's queue
	Hosts() []string
	Stats() frontier.Stats
	GiveUps() []frontier.GiveUp
	Stop()
}

// Politeness is the frontier's clock per host and per IP.
type Politeness interface {
	SetCrawlDelay(host string, d time.Duration) (capped bool)
	SetPoliteKey(host, key string)
	AwaitPoliteKey(host string)
}

// Frontier is the frontier the engine drives (*frontier.Frontier).
type Frontier interface {
	Queues
	Politeness
}

// LeaseChecker is a Frontier whose leases can end without the worker knowing
// it (a shared crawl: a worker stalled past its lease, whose item another
// worker took): the engine asks CheckLease before a page request and before
// a robots.txt request of the item's host, and again once the request's
// connection is obtained when the last check is older than a tenth of
// FenceMargin (fence.go); on an error the request is not sent (the item is
// released with Requeue). Optional: a frontier without it is one process's,
// whose leases cannot be taken from it.
type LeaseChecker interface {
	CheckLease(ctx context.Context, it *frontier.Item) error
	// FenceMargin is the lease time a passed CheckLease proves left.
	FenceMargin() time.Duration
}

var (
	_ Tx              = (*storage.Tx)(nil)
	_ EvidenceReader  = (*storage.Tx)(nil)
	_ SkipRangeReader = badgerStore{}
	_ Frontier        = (*frontier.Frontier)(nil)
)
