package redisstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Store is one worker's crawl.Store (docs/SEAMS.md): what the crawl shares
// (the seen-set, the queues, skip records, dependents, evidence) is in Redis;
// what the worker fetched (page records, raw responses, texts, signatures,
// link hashes, its counters) is in its own Badger data dir, so each worker
// writes its own WARC and `crawler report` merges the data dirs.
//
// A transaction runs fn inside a Badger transaction and buffers its Redis
// writes; reads go to Redis with the buffered writes applied on top. Once
// the Badger transaction committed, the buffer is applied in one script call
// (one round trip), which
// first checks what fn relied on: every URL fn marked is still unmarked,
// every evidence record fn took is still there. If another worker got there
// first, nothing is written and fn runs again (optimistic, as Badger's own
// conflicts). Reads cost a round trip each (SeenID, CheckAndMark, GetSkipped,
// Dependents, TakeEvidence); the engine makes about one per link (docs/SCALE.md).
//
// Redis refusing writes (maxmemory, connection lost) pauses the transaction:
// it is tried again every Pause until Redis accepts it, ctx ends, or the
// crawl stops (StopPauses: it is given up then, crawl.ErrNotRecorded, and
// the lease of its item is not ended: the item stays in flight, and is
// queued again when the lease moves); the pause is logged once with its
// reason.
//
// The commit script names keys of many partitions: against a Cluster the
// commit is split by slot instead (slotcommit.go; docs/SCALE.md).
type Store struct {
	c      *Crawl
	db     *storage.DB
	ids    *IDs
	fr     *Frontier
	logger *slog.Logger
	Pause  time.Duration                   // between tries while Redis refuses (default 1 s)
	stop   atomic.Pointer[context.Context] // the crawl's stop (StopPauses)

	// Remote texts (text.go): the id this worker answers under, whether
	// it serves (and so asks), counters, the bound of one request.
	keeper       string
	serving      atomic.Bool
	texts        textStats
	reqSeq       atomic.Uint64
	fallbackOnce sync.Once
	unkMu        sync.Mutex
	unknown      map[uint64]time.Time
	latMu        sync.Mutex
	lats         []time.Duration
	TextTimeout  time.Duration // one remote text request (default DefaultTextTimeout)
}

var (
	_ crawl.Store            = (*Store)(nil)
	_ crawl.PausingStore     = (*Store)(nil)
	_ crawl.LocalPageReader  = (*Store)(nil)
	_ crawl.Tx               = (*seamTx)(nil)
	_ crawl.SeenPrefetcher   = (*seamTx)(nil)
	_ crawl.PagePrefetcher   = (*seamTx)(nil)
	_ crawl.Frontier         = (*Frontier)(nil)
	_ crawl.LeaseChecker     = (*Frontier)(nil)
	_ crawl.InFlightKeeper   = (*Frontier)(nil)
	_ crawl.DuplicateIndex   = (*Index)(nil)
	_ crawl.PrefetchingIndex = (*Index)(nil)
)

// NewStore returns worker's Store over its data dir db. ids hands out the
// crawl-wide page ids; fr, when not nil, is the worker's frontier: the
// deletion of a leased item's queue entry (Tx.DeleteQueue) then ends its
// lease in the same commit. An error is the data dir's keeper id
// (keeperID) that cannot be read or saved, or a data dir crawled under an
// earlier generation of the crawl (claimDir).
func (c *Crawl) NewStore(db *storage.DB, ids *IDs, fr *Frontier, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	keeper, err := keeperID(db)
	if err != nil {
		return nil, err
	}
	if err := c.claimDir(db); err != nil {
		return nil, err
	}
	return &Store{c: c, db: db, ids: ids, fr: fr, logger: logger, Pause: time.Second, keeper: keeper}, nil
}

// errConflict: another worker marked or took what the transaction relied on.
var errConflict = errors.New("redisstate: transaction conflict")

// Update runs fn as one transaction (see Store). The worker's data dir
// commits first, then Redis: a worker killed in between leaves its page
// recorded in its dir with the lease still in flight in Redis, so the page
// is fetched again by the partition's next holder (recorded twice, once in
// each dir; a merged report keeps one) and nothing is lost. A conflict in
// Redis runs fn again (its local writes are written again over the first
// ones); Redis refusing pauses and retries the same Redis writes.
//
// A refusal met inside fn (a read, the duplicate index's check-and-add, the
// refill of the worker's block of page ids) leaves nothing written, in
// Redis or in the data dir: fn runs again once Redis answers, pausing as a
// refused commit does; at the crawl's stop it is given up the same way.
func (s *Store) Update(ctx context.Context, fn func(tx crawl.Tx) error) error {
	paused := false
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		var t *seamTx
		err := s.db.Update(func(btx *storage.Tx) error {
			t = &seamTx{s: s, ctx: ctx, Tx: btx, over: map[hkey]*string{}}
			err := fn(t)
			if t.idErr != nil {
				return t.idErr // what fn did with id 0 is not kept
			}
			return err
		})
		if errors.Is(err, ErrUnavailable) {
			if t != nil {
				t.notCommitted()
			}
			if err := s.pause(ctx, "transaction", &paused, err); err != nil {
				return err
			}
			attempt--
			continue
		}
		if err != nil {
			return err
		}
		if paused {
			s.logger.Info("redis answers again")
			paused = false
		}
		err = s.commit(ctx, t)
		if errors.Is(err, errConflict) && attempt < 100 {
			continue
		}
		if err != nil {
			t.notCommitted()
		}
		return err
	}
}

// StopPauses makes a commit that Redis refuses give up once stop is done
// (crawl.PausingStore).
func (s *Store) StopPauses(stop context.Context) { s.stop.Store(&stop) }

// stopped is the crawl's stop (nil, which never fires, before StopPauses).
func (s *Store) stopped() <-chan struct{} {
	if p := s.stop.Load(); p != nil {
		return (*p).Done()
	}
	return nil
}

// commit applies t's Redis writes, pausing while Redis refuses them, until
// ctx ends or the crawl stops.
func (s *Store) commit(ctx context.Context, t *seamTx) error {
	paused := false
	for {
		err := t.commit()
		if err == nil {
			t.committed()
			if paused {
				s.logger.Info("redis accepts writes again")
			}
			return nil
		}
		if !errors.Is(err, ErrUnavailable) {
			return err
		}
		if err := s.pause(ctx, "commit", &paused, err); err != nil {
			return err
		}
	}
}

// pause waits out a refusal err of what (logged once a pause: paused) before
// it is tried again: nil after Pause; err when ctx ends; err given up,
// crawl.ErrNotRecorded, when the crawl stops (StopPauses). Every wait of a
// page's transaction on Redis goes through it, so that a stop ends each.
func (s *Store) pause(ctx context.Context, what string, paused *bool, err error) error {
	if !*paused {
		s.logger.Warn("redis refuses the "+what+"; pausing", "err", err)
		*paused = true
	}
	t := time.NewTimer(s.Pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return err
	case <-s.stopped():
		return fmt.Errorf("%w: %w", crawl.ErrNotRecorded, err)
	case <-t.C:
		return nil
	}
}

func (s *Store) GetMeta(_ context.Context, name string) ([]byte, error) { return s.db.GetMeta(name) }
func (s *Store) PutMeta(_ context.Context, name string, v []byte) error { return s.db.PutMeta(name, v) }

// LocalPage reads the record of a page this worker fetched
// (crawl.LocalPageReader): storage.ErrNotFound for any other.
func (s *Store) LocalPage(_ context.Context, id uint64) (*storage.Page, error) { return s.db.Page(id) }

// Page reads the record of a page this worker fetched, or asks the worker
// that keeps it (text.go; while Serve runs).
func (s *Store) Page(ctx context.Context, id uint64) (*storage.Page, error) {
	p, err := s.db.Page(id)
	if errors.Is(err, storage.ErrNotFound) {
		return s.remotePage(ctx, id)
	}
	return p, err
}

// Text reads the text of a page this worker fetched, or asks the worker that
// keeps it (text.go; while Serve runs). A text no worker answers for is
// crawl.ErrElsewhere (and storage.ErrNotFound): the settlement falls back to
// the sketch rule.
func (s *Store) Text(ctx context.Context, id uint64) (string, error) {
	t, err := s.db.Text(id)
	if errors.Is(err, storage.ErrNotFound) {
		return s.remoteText(ctx, id)
	}
	return t, err
}

func (s *Store) ForEachPage(ctx context.Context, fn func(*storage.Page) error) error {
	return crawl.BadgerStore(s.db).ForEachPage(ctx, fn)
}

func (s *Store) ForEachSignature(ctx context.Context, fn func(id uint64, sig []byte) error) error {
	return crawl.BadgerStore(s.db).ForEachSignature(ctx, fn)
}

// ForEachSkipped reads the crawl's skip records (every worker's: they are
// shared, a URL queued later by any worker drops its record).
func (s *Store) ForEachSkipped(ctx context.Context, fn func(*storage.Page) error) error {
	for p := 0; p < s.c.partitions; p++ {
		err := s.c.scanHash(ctx, s.c.partTag(p)+"k", func(_ string, v []byte) error {
			var pg storage.Page
			if err := json.Unmarshal(v, &pg); err != nil {
				return fmt.Errorf("redisstate: skip record: %w", err)
			}
			return fn(&pg)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) ForEachEvidence(ctx context.Context, kind string, fn func(key string, v []byte) error) error {
	return s.c.ForEachEvidence(ctx, kind, fn)
}

func (c *Crawl) scanHash(ctx context.Context, key string, fn func(field string, v []byte) error) error {
	var cursor uint64
	for {
		kv, next, err := c.rdb.HScan(ctx, key, cursor, "", 512).Result()
		if err != nil {
			return wrap("scan", err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if err := fn(kv[i], []byte(kv[i+1])); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// hkey is one field of one Redis hash.
type hkey struct{ key, field string }

// txOp is one buffered Redis write or check, applied by commitScript.
type txOp struct {
	code       byte // N: mark (check absent, set), T: take (check value, delete), G/A: read (check value/absent), H: set, D: delete, R: rpush, S: sadd, X: xadd (field: the cap), E: end of a lease (value: the epoch popped under), V: a partition's marker (check the value: lost.go)
	key, field string
	value      string
}

// seamTx is one transaction: the Badger one (embedded: page records and
// contents) and the Redis writes buffered in ops, with over the hash fields
// as they read after them (nil: deleted).
type seamTx struct {
	*storage.Tx
	s         *Store
	ctx       context.Context
	ops       []txOp
	over      map[hkey]*string
	read      map[hkey]*string             // fields read (PrefetchPage, GetEvidence), nil: absent
	deps      map[string]map[string]string // dependents read by PrefetchPage, by counterpart
	links     []string                     // the links PrefetchPage read
	checked   map[hkey]bool                // evidence read by GetEvidence: checked at the commit
	summaries map[hkey]string              // page summaries read from Redis (checked when deleted)
	ended     []string                     // raw forms of leases ended by the commit
	hosts     []string                     // their hosts
	left      int64                        // of those, the ends that left the in-flight record (the partition was taken since the pop)
	slots     *slotCommit                  // a commit on a Cluster under way (slotcommit.go)
	idErr     error                        // NewID's failure (the transaction fails with it)
}

func (t *seamTx) put(code byte, key, field, v string) {
	t.ops = append(t.ops, txOp{code: code, key: key, field: field, value: v})
	switch code {
	case 'N', 'H':
		t.over[hkey{key, field}] = &v
	case 'T', 'D', 'E':
		t.over[hkey{key, field}] = nil
	}
}

// hget reads a hash field through the buffer.
func (t *seamTx) hget(key, field string) (string, bool, error) {
	for _, m := range []map[hkey]*string{t.over, t.read} {
		if v, ok := m[hkey{key, field}]; ok {
			if v == nil {
				return "", false, nil
			}
			return *v, true, nil
		}
	}
	v, err := t.s.c.rdb.HGet(t.ctx, key, field).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, wrap("read", err)
	}
	return v, true, nil
}

func (t *seamTx) SeenID(u string) (uint64, bool, error) {
	key, field := t.s.c.seenSlot(frontier.HostKey(u), u)
	v, ok, err := t.hget(key, field)
	if err != nil || !ok {
		return 0, false, err
	}
	id, err := strconv.ParseUint(v, 10, 64)
	return id, true, err
}

// PrefetchSeen reads the marks of urls in one pipeline (one round trip);
// SeenID and CheckAndMark then answer from it. A mark made meanwhile by
// another worker is caught by the commit's check. The same pipeline reads
// what the canonical hints ask of a link not seen (crawl/canonical.go): its
// skip record and the alias hint of its key, so that a page's links cost
// one round trip with the hints too.
func (t *seamTx) PrefetchSeen(urls []string) error {
	if slices.Equal(urls, t.links) {
		return nil // read by PrefetchPage
	}
	return t.PrefetchPage(crawl.PageReads{Links: urls})
}

// PrefetchPage reads what a page's commit will read (crawl.PagePrefetcher)
// in one pipeline: its links as PrefetchSeen does, the evidence records
// named (TakeEvidence and GetEvidence then answer from them, and check them
// at the commit as when read one by one), the dependents named (Dependents
// then answers from them, with the transaction's own writes on top, as when
// read at the call). What is read already is not read again. The
// worker's IP releases kept for a round trip go in the same pipeline
// (release.go).
func (t *seamTx) PrefetchPage(r crawl.PageReads) error { return t.prefetch(r, nil) }

// prefetch is PrefetchPage with also's commands in the same pipeline (the
// duplicate index's first round: Index.CheckAndAddPrefetch); their replies
// are also's caller's to read.
func (t *seamTx) prefetch(r crawl.PageReads, also func(redis.Pipeliner)) error {
	var want []hkey
	add := func(k hkey) {
		if _, ok := t.over[k]; ok {
			return
		}
		if _, ok := t.read[k]; ok {
			return
		}
		want = append(want, k)
	}
	for _, u := range r.Links {
		key, field := t.s.c.seenSlot(frontier.HostKey(u), u)
		add(hkey{key, field})
		add(hkey{t.s.c.skipKey(u), u})
		add(hkey{t.s.c.evidenceKey("alias"), crawl.AliasKey(u)})
	}
	for _, e := range r.Evidence {
		add(hkey{t.s.c.evidenceKey(e.Kind), e.Key})
	}
	var deps []string
	for _, u := range r.Dependents {
		if _, ok := t.deps[u]; !ok && !slices.Contains(deps, u) {
			deps = append(deps, u)
		}
	}
	if len(want) == 0 && len(deps) == 0 && also == nil {
		return nil
	}
	t.links = r.Links
	// One HMGET a hash: a page's links' alias hints share one, its links
	// on one host their seen bucket and skip records.
	var keys []string
	fields := map[string][]string{}
	for _, k := range want {
		if _, ok := fields[k.key]; !ok {
			keys = append(keys, k.key)
		}
		fields[k.key] = append(fields[k.key], k.field)
	}
	rs := t.s.fr.takeReleases()
	var rcmds []*redis.Cmd
	hm := make([]*redis.SliceCmd, len(keys))
	dc := make([]*redis.MapStringStringCmd, len(deps))
	_, err := t.s.c.rdb.Pipelined(t.ctx, func(p redis.Pipeliner) error {
		rcmds = t.s.fr.queueReleases(t.ctx, p, rs)
		for i, k := range keys {
			hm[i] = p.HMGet(t.ctx, k, fields[k]...)
		}
		for i, u := range deps {
			dc[i] = p.HGetAll(t.ctx, t.s.c.depKey(u))
		}
		if also != nil {
			also(p)
		}
		return nil
	})
	t.s.fr.releasesSent(t.ctx, rs, rcmds, err)
	// The reads' own errors (a pipeline cut short may leave a command
	// without its reply or its error).
	for _, c := range hm {
		if e := replyErr(c, c.Val() == nil, err); e != nil {
			return wrap("read seen", e)
		}
	}
	for _, c := range dc {
		if e := replyErr(c, c.Val() == nil, err); e != nil {
			return wrap("dependents", e)
		}
	}
	if t.read == nil {
		t.read = make(map[hkey]*string, len(want))
	}
	for i, k := range keys {
		vals := hm[i].Val()
		if len(vals) != len(fields[k]) {
			return fmt.Errorf("redisstate: read seen: %d values for %d fields", len(vals), len(fields[k]))
		}
		for j, f := range fields[k] {
			if v, ok := vals[j].(string); ok {
				t.read[hkey{k, f}] = &v
			} else {
				t.read[hkey{k, f}] = nil
			}
		}
	}
	if len(deps) > 0 && t.deps == nil {
		t.deps = make(map[string]map[string]string, len(deps))
	}
	for i, u := range deps {
		m := dc[i].Val()
		if m == nil {
			m = map[string]string{}
		}
		t.deps[u] = m
	}
	return nil
}

// replyErr is a pipelined command's error: its own, or the pipeline's
// (perr) when it has no reply.
func replyErr(c redis.Cmder, noReply bool, perr error) error {
	if err := c.Err(); err != nil {
		return err
	}
	if noReply {
		return perr
	}
	return nil
}

func (t *seamTx) CheckAndMark(u string, newID func() uint64) (uint64, bool, error) {
	if id, seen, err := t.SeenID(u); err != nil || seen {
		return id, false, err
	}
	id := newID()
	key, field := t.s.c.seenSlot(frontier.HostKey(u), u)
	t.put('N', key, field, strconv.FormatUint(id, 10))
	return id, true, nil
}

// NewID is a crawl-wide id (a block of ids from Redis every 1024).
func (t *seamTx) NewID() uint64 {
	id, err := t.s.ids.Next(t.ctx)
	if err != nil {
		// The seam's NewID returns no error: the transaction fails
		// instead (Update: a refusal pauses it and runs it again).
		if t.idErr == nil {
			t.idErr = err
		}
		return 0
	}
	return id
}

// recordKey is the hash of the page summaries of ids id>>7<<7 to +127 (one
// slot for all: a commit's keys stay in one server's reach, see Store).
func (c *Crawl) recordKey(id uint64) string {
	return "hs:{" + c.name + "/g}:" + strconv.FormatUint(id>>7, 36)
}

// pageSummary is what other workers read of a page record (GetPage of a
// page this worker did not fetch, into a storage.Page: the fields carry its
// JSON names): what the engine decides on, not the content (its word count:
// whether a mirror comparison can use it, and whether it is long enough to
// stand for a copy), and the keeper of the page's data dir, which answers
// for its text (text.go). Its own type, not a storage.Page: the record's
// other fields (the zero ones not omitted among them) cost encoding time and
// Redis memory on every page.
type pageSummary struct {
	ID         uint64        `json:"id"`
	URL        string        `json:"url"`
	FinalURL   string        `json:"final_url,omitempty"`
	Status     int           `json:"status"`
	Class      storage.Class `json:"class"`
	OriginalID uint64        `json:"original_id,omitempty"`
	ErrorClass string        `json:"error_class,omitempty"`
	Words      int           `json:"words,omitempty"`
	Keeper     string        `json:"k,omitempty"`
}

func (s *Store) summary(p *storage.Page) *pageSummary {
	return &pageSummary{ID: p.ID, URL: p.URL, FinalURL: p.FinalURL, Status: p.Status, Class: p.Class,
		OriginalID: p.OriginalID, ErrorClass: p.ErrorClass, Words: p.Words, Keeper: s.keeper}
}

// PutPage records p in the worker's data dir and its summary in Redis.
func (t *seamTx) PutPage(p *storage.Page) error {
	if err := t.Tx.PutPage(p); err != nil {
		return err
	}
	b, err := json.Marshal(t.s.summary(p))
	if err != nil {
		return err
	}
	t.put('H', t.s.c.recordKey(p.ID), strconv.FormatUint(p.ID, 36), string(b))
	return nil
}

// GetPage reads the record of a page this worker fetched, or the summary of
// one another worker did. A copy this worker skipped when it was leased
// (class mirror_skipped) is read from its summary too: another worker may
// have queued it again (the summary is then gone, and so is the page:
// storage.ErrNotFound).
func (t *seamTx) GetPage(id uint64) (*storage.Page, error) {
	p, err := t.Tx.GetPage(id)
	if err == nil && p.Class != storage.ClassMirrorSkipped || err != nil && !errors.Is(err, storage.ErrNotFound) {
		return p, err
	}
	k := hkey{t.s.c.recordKey(id), strconv.FormatUint(id, 36)}
	v, ok, rerr := t.hget(k.key, k.field)
	if rerr != nil {
		return nil, rerr
	}
	if !ok {
		return nil, storage.ErrNotFound
	}
	if _, buffered := t.over[k]; !buffered {
		if t.summaries == nil {
			t.summaries = map[hkey]string{}
		}
		t.summaries[k] = v
	}
	if err == nil {
		return p, nil
	}
	var q storage.Page
	return &q, json.Unmarshal([]byte(v), &q)
}

// DeletePage deletes the record and its summary; a summary the transaction
// read is deleted only if it still holds what was read (a skipped copy that
// two workers queue again at once is queued by one: the other's
// transaction runs again and finds it gone).
func (t *seamTx) DeletePage(id uint64) error {
	if err := t.Tx.DeletePage(id); err != nil {
		return err
	}
	k := hkey{t.s.c.recordKey(id), strconv.FormatUint(id, 36)}
	if v, read := t.summaries[k]; read {
		if _, buffered := t.over[k]; !buffered {
			t.put('T', k.key, k.field, v)
			return nil
		}
	}
	t.put('D', k.key, k.field, "")
	return nil
}

// PutQueue queues it in the shared queue of its host (the list the
// frontiers lease from); the sequence number is the local frontier's and is
// not kept.
func (t *seamTx) PutQueue(it frontier.Item) error {
	if it.Host == "" {
		it.Host = frontier.HostKey(it.URL)
	}
	p := t.s.c.PartitionOf(it.Host)
	t.put('R', t.s.c.queueKey(p, it.Host), "", EncodeItem(&it))
	t.put('S', t.s.c.hostsKey(p), "", it.Host)
	return nil
}

// DeleteQueue ends the lease of the item of host this worker is committing
// (in the commit itself) when the frontier can tell which one; otherwise
// Frontier.Finish ends it after the commit.
func (t *seamTx) DeleteQueue(host string, _ uint64) error {
	if t.s.fr == nil {
		return nil
	}
	raw, epoch, ok := t.s.fr.leasedRaw(host)
	if !ok {
		return nil
	}
	t.put('E', t.s.c.inflightKey(t.s.c.PartitionOf(host)), raw, strconv.FormatInt(epoch, 10))
	t.ended, t.hosts = append(t.ended, raw), append(t.hosts, host)
	return nil
}

// PutSkipped records the skip in Redis (what every worker reads) and in the
// worker's data dir (what its report shows; a merged report drops a skip
// record whose URL another worker fetched later).
func (t *seamTx) PutSkipped(p *storage.Page) error {
	if err := t.Tx.PutSkipped(p); err != nil {
		return err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	t.put('H', t.s.c.skipKey(p.URL), p.URL, string(b))
	return nil
}

func (t *seamTx) GetSkipped(u string) (*storage.Page, error) {
	v, ok, err := t.hget(t.s.c.skipKey(u), u)
	if err != nil || !ok {
		return nil, err
	}
	var p storage.Page
	return &p, json.Unmarshal([]byte(v), &p)
}

func (t *seamTx) DeleteSkipped(u string) error {
	if err := t.Tx.DeleteSkipped(u); err != nil {
		return err
	}
	t.put('D', t.s.c.skipKey(u), u, "")
	return nil
}

// depField keys a dependent as Badger does: by id when it has a page record,
// by URL otherwise.
func depField(d storage.Dependent) string {
	if d.Seen {
		return "i" + strconv.FormatUint(d.ID, 10)
	}
	return "u" + d.URL
}

func (t *seamTx) AddDependent(counterpart string, d storage.Dependent) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	t.put('H', t.s.c.depKey(counterpart), depField(d), string(b))
	return nil
}

func (t *seamTx) Dependents(counterpart string) ([]storage.Dependent, error) {
	key := t.s.c.depKey(counterpart)
	m, read := maps.Clone(t.deps[counterpart]), t.deps[counterpart] != nil
	if !read {
		var err error
		if m, err = t.s.c.rdb.HGetAll(t.ctx, key).Result(); err != nil {
			return nil, wrap("dependents", err)
		}
	}
	for k, v := range t.over {
		if k.key != key {
			continue
		}
		if v == nil {
			delete(m, k.field)
		} else {
			m[k.field] = *v
		}
	}
	out := make([]storage.Dependent, 0, len(m))
	for _, v := range m {
		var d storage.Dependent
		if err := json.Unmarshal([]byte(v), &d); err != nil {
			return nil, fmt.Errorf("redisstate: dependent of %s: %w", counterpart, err)
		}
		out = append(out, d)
	}
	return out, nil
}

func (t *seamTx) DeleteDependent(counterpart string, d storage.Dependent) error {
	t.put('D', t.s.c.depKey(counterpart), depField(d), "")
	return nil
}

// reportedEvidence are the evidence kinds a data dir's report reads
// (crawl.Report: mirror candidates, host give-ups, capped Crawl-delays,
// parameter rules): they are written to the worker's data dir too, so that
// the merged report of the workers' dirs shows them (session.MergedReport
// keeps one of each; every worker's mirror detector follows the crawl's
// mirror log, and the merged report lists each mirror once with the requests
// each worker's skips saved summed).
var reportedEvidence = map[string]bool{"giveup": true, "crawldelay": true, "param": true, "mirror": true}

func (t *seamTx) PutEvidence(kind, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if reportedEvidence[kind] {
		if err := t.Tx.PutEvidence(kind, key, v); err != nil {
			return err
		}
	}
	t.put('H', t.s.c.evidenceKey(kind), key, string(b))
	return nil
}

// GetEvidence reads a crawl-wide record (this transaction's writes
// included) without taking it (crawl.EvidenceReader). What it read from
// Redis is checked at the commit (the record still holds that value, or is
// still absent): a transaction that read-modify-writes records (the
// canonical hints) runs again when another worker changed one meanwhile.
func (t *seamTx) GetEvidence(kind, key string) ([]byte, bool, error) {
	k := hkey{t.s.c.evidenceKey(kind), key}
	_, buffered := t.over[k]
	v, ok, err := t.hget(k.key, k.field)
	if err != nil {
		return nil, false, err
	}
	if !buffered && !t.checked[k] {
		if t.read == nil {
			t.read = map[hkey]*string{}
		}
		if t.checked == nil {
			t.checked = map[hkey]bool{}
		}
		code := byte('A') // checked absent
		t.read[k] = nil
		if ok {
			code, t.read[k] = 'G', &v // checked to hold v
		}
		t.checked[k] = true
		t.ops = append(t.ops, txOp{code: code, key: k.key, field: k.field, value: v})
	}
	if !ok {
		return nil, false, nil
	}
	return []byte(v), true, nil
}

// TakeEvidence reads the record now and deletes it in the commit, which
// fails (and fn runs again) if another transaction took it meanwhile.
func (t *seamTx) TakeEvidence(kind, key string) ([]byte, bool, error) {
	k := t.s.c.evidenceKey(kind)
	_, buffered := t.over[hkey{k, key}]
	v, ok, err := t.hget(k, key)
	if err != nil || !ok {
		return nil, false, err
	}
	code := byte('T')
	if buffered {
		code = 'D' // written by this transaction: nothing to check
	}
	t.put(code, k, key, v)
	return []byte(v), true, nil
}

// commitScript applies a transaction's buffered ops: first the checks (a
// mark's field still absent, a take's field still holding the value read, a
// record read still holding its value (G) or still absent (A)), returning 0
// without writing if one fails, then the writes, returning 1 plus the ends
// of leases left. The end of a lease (E, key: the partition's in-flight hash
// "...}:f", whose epoch key "...}:epoch" it reads, in the same slot) removes
// the item's in-flight record only when the partition's epoch is still the
// one it was popped under (doneScript); else it is left and counted. A push
// (R) grows the partition's count of queued items (queueCountKey, in the
// queue's slot).
// A partition's marker (V, first) that does not hold the crawl's generation
// returns -1 before anything: its state was lost (lost.go).
// KEYS: the keys named. ARGV: per op its code, key index, field, value.
// (Plain: one command an op. Grouping a hash's checks into one HMGET and its
// writes into one HSET cost Redis more CPU than it saved, measured: the Lua
// tables it takes are dearer than the commands.)
var commitScript = redis.NewScript(`#!lua
for i = 1, #ARGV, 4 do
  local c, k, f = ARGV[i], KEYS[tonumber(ARGV[i+1])], ARGV[i+2]
  if c == 'V' then
    if redis.call('GET', k) ~= ARGV[i+3] then return -1 end
  elseif c == 'N' or c == 'A' then
    if redis.call('HEXISTS', k, f) == 1 then return 0 end
  elseif c == 'T' or c == 'G' then
    if redis.call('HGET', k, f) ~= ARGV[i+3] then return 0 end
  end
end
local left = 0
for i = 1, #ARGV, 4 do
  local c, k, f, v = ARGV[i], KEYS[tonumber(ARGV[i+1])], ARGV[i+2], ARGV[i+3]
  if c == 'N' or c == 'H' then redis.call('HSET', k, f, v)
  elseif c == 'T' or c == 'D' then redis.call('HDEL', k, f)
  elseif c == 'E' then
    if redis.call('GET', string.sub(k, 1, -2) .. 'epoch') == v then redis.call('HDEL', k, f) else left = left + 1 end
  elseif c == 'R' then
    redis.call('RPUSH', k, v)
    redis.call('INCR', string.sub(k, 1, string.find(k, '}:', 1, true) + 1) .. 'n')
  elseif c == 'S' then redis.call('SADD', k, v)
  elseif c == 'X' then redis.call('XADD', k, 'MAXLEN', '~', f, '*', 'e', v)
  end
end
return 1 + left
`)

// commit applies the buffered ops in one round trip.
func (t *seamTx) commit() error {
	if len(t.ops) == 0 {
		return nil
	}
	if t.s.c.onCluster() {
		return t.commitSlots()
	}
	markers := t.s.c.markerOps(t.ops)
	idx := map[string]int{}
	var keys []string
	args := make([]any, 0, 4*(len(markers)+len(t.ops)))
	for _, op := range append(markers, t.ops...) {
		i, ok := idx[op.key]
		if !ok {
			keys = append(keys, op.key)
			i = len(keys)
			idx[op.key] = i
		}
		args = append(args, string(op.code), i, op.field, op.value)
	}
	v, err := t.s.c.runWithReleases(t.ctx, t.s.fr, "commit", commitScript, keys, args...)
	if err != nil {
		return err
	}
	n, _ := v.(int64)
	if n == -1 {
		return t.s.c.markersLost(t.ctx, markers)
	}
	if n < 1 {
		return errConflict
	}
	t.left = n - 1
	return nil
}

// committed tells the frontier which leases the commit ended.
func (t *seamTx) committed() {
	for i, raw := range t.ended {
		t.s.fr.endedRaw(t.hosts[i], raw)
	}
	if t.left > 0 {
		t.s.fr.m.staleEnds.Add(t.left)
		t.s.logger.Warn("a commit left the in-flight record of its item: the item's partition was taken again since its pop (this worker stalled past its lease): the record there, if any, is the new holder's",
			"hosts", t.hosts, "left", t.left)
	}
}

// notCommitted keeps the leases the commit would have ended: their items
// stay in flight (Frontier.Finish does not end them).
func (t *seamTx) notCommitted() {
	for i, raw := range t.ended {
		t.s.fr.keepRaw(t.hosts[i], raw)
	}
}

// KeepInFlight keeps it's lease from being ended by Finish: its page's
// transaction was given up at the crawl's stop while Redis refused
// (crawl.InFlightKeeper), so it stays in flight and is queued again when
// the lease moves.
func (f *Frontier) KeepInFlight(it *frontier.Item) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.leased[it]; l != nil {
		l.kept = true
	}
}

// leasedRaw is the queue form of the item of host this worker holds in
// flight, and the epoch of the lease it was popped under, when it holds
// exactly one that is not ended.
func (f *Frontier) leasedRaw(host string) (string, int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	raw, epoch, n := "", int64(0), 0
	for it, l := range f.leased {
		if it.Host == host && l.raw != "" {
			raw, epoch, n = l.raw, l.epoch(), n+1
		}
	}
	return raw, epoch, n == 1
}

// endedRaw records that a commit ended the lease of raw: Finish costs no
// round trip then.
func (f *Frontier) endedRaw(host, raw string) {
	f.mu.Lock()
	found := false
	for it, l := range f.leased {
		if it.Host == host && l.raw == raw {
			l.raw, found = "", true
		}
	}
	f.mu.Unlock()
	if found {
		f.m.Finished(host)
	}
}

// keepRaw marks the lease of raw as not to be ended: a commit that would
// have ended it was not applied.
func (f *Frontier) keepRaw(host, raw string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for it, l := range f.leased {
		if it.Host == host && l.raw == raw {
			l.kept = true
		}
	}
}

// UseFrontier makes fr's leases end in the commits (see NewStore).
func (s *Store) UseFrontier(fr *Frontier) { s.fr = fr }

func (c *Crawl) seedsKey() string { return "hs:{" + c.name + "}:seeds" }

// AddSeeds adds seeds to the crawl's and returns all of them, sorted: every
// worker draws the crawl's scope around the same seeds.
func (c *Crawl) AddSeeds(ctx context.Context, seeds []string) ([]string, error) {
	pipe := c.rdb.TxPipeline()
	for _, s := range seeds {
		pipe.SAdd(ctx, c.seedsKey(), s)
	}
	all := pipe.SMembers(ctx, c.seedsKey())
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, wrap("seeds", err)
	}
	out := all.Val()
	slices.Sort(out)
	return out, nil
}
