package crawl

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/mirror"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// commitTx is one page's commit: the store transaction and the scratch the
// commit fills, made afresh for every run of the transaction (a store may
// run it again on a conflict) and dropped after it. The shape of
// prometheus's scrapeLoopAppender: the engine stays free of per-page state.
type commitTx struct {
	e               *Engine
	tx              Tx
	it              *frontier.Item
	pushed          []frontier.Item     // new queue entries, handed to the frontier after the commit
	skipped         int                 // mirror_skipped records written
	withdrawn       []string            // mirror decisions withdrawn by this page
	decided         []string            // mirror decisions made by this page
	swapped         []string            // mirror directions reversed by this page
	mirrorLog       *mirrorEvidence     // the page's mirror evidence, for a shared crawl's log
	proposed        *mirror.Counterpart // the pair the page proposes, before the log brings its candidate
	proposedSamples int                 // its copies fetched as samples by this page
	nearFired       []mirror.Mapping    // prefix pairs whose near-duplicate link monitor fired (nearmonitor.go)
	marked          []string            // URLs found or marked seen, for the seen cache once committed
	fetched         bool                // the item cost a request (putCounts)
}

// queue adds a queue entry to hand to the frontier once committed.
func (ct *commitTx) queue(items ...frontier.Item) { ct.pushed = append(ct.pushed, items...) }

// commit records the page and the links it contributes in one transaction;
// fetched says whether its item cost a request (a page budget's unit).
func (e *Engine) commit(it *frontier.Item, p *storage.Page, c *pageContent, res *fetch.Result, fetched bool) {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	if e.fatal() != nil {
		return
	}
	stamp(it, p)
	// A PrefetchingIndex decides in the transaction's first run, in the
	// round trip of its prefetch; any other index before it.
	pi, piped := e.index.(PrefetchingIndex)
	decided := !piped || c == nil || c.known != nil || c.sig.Words == 0
	var decision dedup.Decision
	var learned []frontier.ParamRule
	var err, derr error
	if decided {
		if decision, err = e.decide(p, c); err != nil {
			e.setFatal(fmt.Errorf("cannot decide %s: %w", it.URL, err))
			return
		}
		learned = e.learnParams(p, c, decision)
	}
	var ct *commitTx
	err = e.st.Update(e.sctx, func(tx Tx) error {
		ct = &commitTx{e: e, tx: tx, it: it, fetched: fetched}
		if !decided { // once: a run again (a conflict) prefetches without it
			if decision, derr = ct.decidePrefetched(pi, p, c); derr != nil {
				return derr
			}
			learned, decided = e.learnParams(p, c, decision), true
			if err := putParamRules(tx, learned); err != nil {
				return err
			}
			return ct.record(p, c, res, decision)
		}
		if err := putParamRules(tx, learned); err != nil {
			return err
		}
		if err := ct.prefetch(p, c); err != nil {
			return err
		}
		return ct.record(p, c, res, decision)
	})
	if errors.Is(err, ErrNotRecorded) {
		// Given up at the stop, wherever the store refused (the duplicate
		// decision, a read, a page id, the commit): the item stays in
		// flight, as nothing of its page was recorded.
		if k, ok := e.fr.(InFlightKeeper); ok {
			k.KeepInFlight(it)
		}
		e.setFatal(fmt.Errorf("%s: %w", it.URL, err)) // not fatal: logged
		return
	}
	if derr != nil {
		e.setFatal(fmt.Errorf("cannot decide %s: %w", it.URL, derr))
		return
	}
	if err != nil {
		e.setFatal(fmt.Errorf("cannot record %s: %w", it.URL, err))
		return
	}
	e.committed(ct, p, c)
}

// stamp gives the record its item's identity.
func stamp(it *frontier.Item, p *storage.Page) {
	p.ID, p.URL, p.Host, p.Depth, p.Via = it.ID, it.URL, it.Host, it.Depth, it.Via
	if it.FetchURL != "" && p.FinalURL == "" {
		p.FinalURL = it.FetchURL // the URL that served the page
	}
	p.Verify = it.Verify
	if p.FetchedAt.IsZero() {
		p.FetchedAt = time.Now().UTC()
	}
}

// decide asks the duplicate index about a page with content.
func (e *Engine) decide(p *storage.Page, c *pageContent) (dedup.Decision, error) {
	return e.decideBy(p, c, func() (dedup.Decision, error) {
		return e.index.CheckAndAdd(e.sctx, p.ID, c.sig, e.settler(c.doc.Tokens))
	})
}

// decidePrefetched asks a PrefetchingIndex about a page with content, with
// the commit's prefetch in the same round trip.
func (ct *commitTx) decidePrefetched(pi PrefetchingIndex, p *storage.Page, c *pageContent) (dedup.Decision, error) {
	e := ct.e
	return e.decideBy(p, c, func() (dedup.Decision, error) {
		d, ok, err := pi.CheckAndAddPrefetch(e.sctx, ct.tx, ct.reads(p, c), p.ID, c.sig, e.settler(c.doc.Tokens))
		if ok || err != nil {
			return d, err
		}
		if err := ct.prefetch(p, c); err != nil { // another backend's transaction: one after the other
			return d, err
		}
		return pi.CheckAndAdd(e.sctx, p.ID, c.sig, e.settler(c.doc.Tokens))
	})
}

// decideBy is decide with check asking the index.
func (e *Engine) decideBy(p *storage.Page, c *pageContent, check func() (dedup.Decision, error)) (dedup.Decision, error) {
	var d dedup.Decision
	var err error
	switch {
	case c == nil:
		return dedup.Decision{}, nil
	case c.known != nil:
		d = *c.known
	case c.sig.Words == 0:
		return dedup.Decision{}, nil
	default:
		if err = e.indexReady(); err == nil {
			d, err = check()
		}
	}
	if d.Class != dedup.Unique && d.Original == p.ID {
		// A URL fetched again (queued twice) is not a copy of itself.
		d = dedup.Decision{}
	}
	return d, err
}

// prefetch names to a PagePrefetcher what record is about to read of the
// store, so that a shared store reads it in one round trip: the links' marks
// (links), the claims and the sample hint of an alias (aliasRecorded), the
// copies waiting on the page (failed, the mirror's sampleWaiting), a gap
// probe's mark (the mirror's gapResult). Each part names what its own step
// reads, under that step's conditions.
func (ct *commitTx) prefetch(p *storage.Page, c *pageContent) error {
	pf, ok := ct.tx.(PagePrefetcher)
	if !ok {
		return nil
	}
	return pf.PrefetchPage(ct.reads(p, c))
}

// reads are the reads prefetch names. The links are canonicalized by the
// parameter rules known before the page's own decision: a rule it teaches
// leaves its rewritten links to be read at their step (links.go).
func (ct *commitTx) reads(p *storage.Page, c *pageContent) PageReads {
	var r PageReads
	// hasContent(p) once content has classed the page.
	content := c != nil && p.Status == 200 && p.Words > 0
	if c != nil && !p.NoFollow && p.Depth < ct.e.o.MaxDepth {
		r.Links = ct.e.paramCanonical(c.links)
	}
	if _, ok := ct.tx.(EvidenceReader); ok && content && ct.e.o.CanonicalHints {
		r.Evidence = append(r.Evidence, EvidenceRef{"alias_claim", p.URL}, EvidenceRef{"alias_sample", p.URL})
	}
	if p.Failed() {
		r.Dependents = append(r.Dependents, ct.it.URL)
	}
	ct.e.mirror.reads(p, content, &r)
	if content && ct.e.near != nil && ct.e.o.SkipDuplicateLinks && !slices.Contains(r.Dependents, p.URL) {
		r.Dependents = append(r.Dependents, p.URL) // nearWaiting
	}
	return r
}

// record writes the page's whole effect: its content and links, its
// redirect, the dependents of a failure, the raw exchange, the record, and
// the deletion of its queue entry (last: a crash before it fetches the page
// again, its links already standing).
func (ct *commitTx) record(p *storage.Page, c *pageContent, res *fetch.Result, d dedup.Decision) error {
	if c != nil {
		if err := ct.content(p, c, d); err != nil {
			return err
		}
	}
	if res != nil && p.Status >= 300 && p.Status < 400 {
		item, ok, err := ct.e.redirect(ct.tx, ct.it, p, res.Header.Get("Location"))
		if err != nil {
			return err
		}
		if ok {
			ct.queue(item)
		}
	}
	if p.Failed() {
		if err := ct.failed(); err != nil {
			return err
		}
	}
	if res != nil && ct.e.o.KeepRaw && len(res.RawBody) > 0 {
		p.HasRaw = true
		if err := ct.tx.PutRaw(p.ID, res.WireRequest(), res.WireResponse()); err != nil {
			return err
		}
	}
	if err := ct.e.mirror.recorded(ct, p); err != nil {
		return err
	}
	if err := ct.e.putPage(ct.tx, p); err != nil {
		return err
	}
	if err := ct.tx.DeleteQueue(ct.it.Host, ct.it.Seq); err != nil {
		return err
	}
	return ct.e.putCounts(ct.tx, ct.fetched)
}

// putCounts writes a transaction's counters: the requests sent so far, and,
// for the transaction of a fetched item, the page budget spent once it
// commits (storage.MetaPagesCommitted: the budget a run resumed after a
// kill starts from, without counting page records). Transactions that
// write it are serialized (commitMu); the caller calls e.spent.Add(1) once
// the transaction committed.
func (e *Engine) putCounts(tx Tx, fetched bool) error {
	if err := tx.PutMeta(storage.MetaRequests, []byte(fmt.Sprint(e.requests.Load()))); err != nil {
		return err
	}
	if !fetched {
		return nil
	}
	return tx.PutMeta(storage.MetaPagesCommitted, []byte(fmt.Sprint(e.o.PagesSpent+e.spent.Load()+1)))
}

// content records a page with content: its class, mirror evidence, links,
// text and (when unique) signature.
func (ct *commitTx) content(p *storage.Page, c *pageContent, d dedup.Decision) error {
	switch d.Class {
	case dedup.Exact, dedup.Near:
		p.Class = storage.Class(d.Class.String())
		p.OriginalID, p.Similarity, p.Method = d.Original, d.Similarity, d.Method
		if op, err := ct.original(d.Original); err == nil {
			p.DuplicateOf = op.ServedURL()
		}
	default:
		p.Class = storage.ClassUnique
	}
	// The monitor's picks waiting on p first: the mirror's sampleWaiting
	// would queue them without their mark (compared all the same, but not
	// counted by the link monitor).
	if err := ct.nearContent(p); err != nil {
		return err
	}
	if err := ct.e.mirror.content(ct, p, c); err != nil {
		return err
	}
	if err := ct.aliasRecorded(p); err != nil {
		return err
	}
	if err := ct.links(p, c.links); err != nil {
		return err
	}
	if err := ct.tx.PutText(p.ID, c.doc.Text); err != nil {
		return err
	}
	if p.Class == storage.ClassUnique && c.sig != nil && c.sig.Words > 0 {
		b, err := c.sig.MarshalBinary()
		if err != nil {
			return err
		}
		return ct.tx.PutSignature(p.ID, b)
	}
	return nil
}

// original reads the record of a duplicate's original. In a shared crawl
// the original may be another worker's page whose commit is still under way
// (pages are indexed before they are committed): its record is waited for,
// up to a second, so that the duplicate names it.
func (ct *commitTx) original(id uint64) (*storage.Page, error) {
	for wait := 0; ; wait++ {
		op, err := ct.tx.GetPage(id)
		if !errors.Is(err, storage.ErrNotFound) || !ct.e.shared || wait == 100 {
			return op, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// failed queues what a failed URL stood for: the copies skipped in its
// favour (and, on a mirror, the copies of the failure itself).
func (ct *commitTx) failed() error {
	if err := ct.e.mirror.failed(ct); err != nil {
		return err
	}
	items, err := ct.e.queueWaiting(ct.tx, ct.it.URL)
	ct.queue(items...)
	return err
}

// skip records link as a copy of counterpart and registers it to be queued
// if the counterpart's fetch fails.
func (ct *commitTx) skip(link, counterpart string, cpID uint64, via *storage.Page, sim float64) error {
	return ct.skipAs(link, counterpart, cpID, via, sim, "")
}

// skipAs is skip, the dependent marked as a pick of the near-duplicate link
// monitor under prefix pair sample when set (nearWaiting queues it).
func (ct *commitTx) skipAs(link, counterpart string, cpID uint64, via *storage.Page, sim float64, sample string) error {
	rec := &storage.Page{
		URL: link, Host: frontier.HostKey(link), Depth: via.Depth + 1, Via: via.URL,
		Class: storage.ClassMirrorSkipped, DuplicateOf: counterpart, OriginalID: cpID,
		Method: "mirror", Similarity: sim, FetchedAt: time.Now().UTC(),
	}
	// The dependent first: a crash between two parts of the transaction
	// then leaves a dependent without its skip record (queued if the
	// counterpart fails, as it should be), never a skipped URL that nothing
	// would queue again.
	if err := ct.tx.AddDependent(counterpart, storage.Dependent{ID: cpID, URL: link, Depth: via.Depth + 1, Via: via.URL, Sample: sample}); err != nil {
		return err
	}
	ct.skipped++
	return ct.tx.PutSkipped(rec)
}

// committed updates the counters and caches after the transaction, hands
// the new queue entries to the frontier and acts on mirror decisions.
func (e *Engine) committed(ct *commitTx, p *storage.Page, c *pageContent) {
	if ct.fetched {
		e.spent.Add(1)
	}
	if p.Class.Duplicate() {
		e.dups.Add(1)
	}
	e.countClass(p.Class, 1)
	e.countClass(storage.ClassMirrorSkipped, ct.skipped)
	if c != nil && c.digest != nil && c.sig != nil && c.sig.Words > 0 {
		orig := p.ID
		if p.Class == storage.ClassExact {
			orig = p.OriginalID
		}
		if p.Class == storage.ClassUnique || p.Class == storage.ClassExact {
			e.digests.put(*c.digest, digestHit{original: orig, simhash: p.Simhash})
		}
	}
	e.seenURLs.add(ct.marked)
	e.push(ct.pushed)
	e.mirror.committed(ct)
	e.nearCommitted(ct)
}
