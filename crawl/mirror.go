package crawl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/mirror"
	"github.com/horseshoe-crawler/horseshoe/parse"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Mirror handling. The pure mirror.Detector holds candidates (prefix
// mappings proposed by duplicate pairs) and decisions; the engine feeds it
// comparisons of paths fetched on both sides, and acts on its decisions:
// a URL on a decided mirror whose counterpart on the original is known is
// recorded as mirror_skipped instead of fetched, and queued after all if the
// counterpart fails. One in VerifyEvery such URLs is fetched anyway to keep
// checking; a verification stream that stops matching withdraws the decision
// and queues the skipped URLs again. The link side is mirrorLinks (links.go).

// mirrorActions is what the engine does about mirrors at each step of a
// page: noMirrors when mirror detection is off, mirrorRules when on.
type mirrorActions interface {
	restore() error                                              // reload candidates on resume
	skipLeased(it *frontier.Item) (attempt, bool)                // record a leased copy instead of fetching it
	skipMissing(it *frontier.Item) (attempt, bool)               // record a leased URL under a missing subtree (subtree.go)
	content(ct *commitTx, p *storage.Page, c *pageContent) error // evidence and waiting samples of a page with content
	failed(ct *commitTx) error                                   // probe the mirror's copies of a failure
	recorded(ct *commitTx, p *storage.Page) error                // the result of a gap probe
	reads(p *storage.Page, content bool, r *PageReads)           // what content and recorded read of the store (commitTx.prefetch)
	committed(ct *commitTx)                                      // act on decisions made or withdrawn, after the commit
	follow(ctx context.Context) (stop func())                    // apply a shared crawl's mirror log while the crawl runs
}

type noMirrors struct{}

func (noMirrors) restore() error                                       { return nil }
func (noMirrors) skipLeased(*frontier.Item) (attempt, bool)            { return attempt{}, false }
func (noMirrors) skipMissing(*frontier.Item) (attempt, bool)           { return attempt{}, false }
func (noMirrors) content(*commitTx, *storage.Page, *pageContent) error { return nil }
func (noMirrors) failed(*commitTx) error                               { return nil }
func (noMirrors) recorded(*commitTx, *storage.Page) error              { return nil }
func (noMirrors) reads(*storage.Page, bool, *PageReads)                {}
func (noMirrors) committed(*commitTx)                                  {}
func (noMirrors) follow(context.Context) func()                        { return func() {} }

// mirrorRules acts on a mirror detector's candidates and decisions.
type mirrorRules struct {
	e   *Engine
	det *mirror.Detector
	sub *mirror.Subtrees // the hosts' missing subtrees (subtree.go)
	// In a shared crawl (mirrorlog.go): the crawl's mirror log, this
	// worker's tag in it, the position applied last and how far behind the
	// other workers' entries were applied.
	log    MirrorLog
	worker string
	pos    string
	lags   lagStats
}

func (m *mirrorRules) restore() error {
	if err := m.restoreSubtrees(); err != nil {
		return err
	}
	if m.log != nil {
		return m.replay()
	}
	return m.restoreEvidence()
}

// restoreEvidence reloads the candidates stored as evidence.
func (m *mirrorRules) restoreEvidence() error {
	cands, err := restoreEvidence[mirror.Candidate](m.e, "mirror")
	if err != nil {
		return fmt.Errorf("mirror evidence: %w", err)
	}
	return m.det.Restore(cands)
}

// leasedSkipQueuesWaiting off (tests) leaves the copies waiting on a URL
// skipped at lease time waiting, as another worker's copy added between the
// skip and its read of the waiting list is left in a shared crawl: the state
// the skip audit (skipaudit.go) repairs.
var leasedSkipQueuesWaiting = true

// skipLeased records a leased URL on a decided mirror as mirror_skipped,
// without a request, when its counterpart is usable. It reports whether it
// did (the attempt then says how to release the lease).
func (m *mirrorRules) skipLeased(it *frontier.Item) (attempt, bool) {
	key, cp, ok := m.det.SkipTarget(it.URL)
	if !ok || m.e.fetchCopies() {
		return attempt{}, false
	}
	e := m.e
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	requeue := attempt{settled: true, release: frontier.Outcome{Requeue: true}}
	if e.fatal() != nil {
		return requeue, true
	}
	skipped, verify := false, false
	var pushed []frontier.Item
	err := e.st.Update(e.sctx, func(tx Tx) error {
		skipped, verify = false, false
		pushed = pushed[:0]
		cpURL, cpID, usable, queued, err := m.counterpart(tx, cp, it.Depth, it.Via)
		if queued != nil {
			pushed = append(pushed, *queued)
		}
		if err != nil || !usable {
			return err
		}
		if short, err := m.tooShort(tx, key, cpID); err != nil || short {
			return err
		}
		if m.e.verifyPick(it.URL, cp) || !m.det.Skip(key) {
			verify = true
			return nil
		}
		skipped = true
		if err := m.recordLeased(tx, it, key, cpURL, cpID); err != nil {
			return err
		}
		// The copies skipped waiting on this URL (queued as their
		// counterpart) are queued: a skipped page stands for nothing
		// (counterpartUsable), and this one will neither be fetched nor
		// fail.
		if !leasedSkipQueuesWaiting {
			return nil
		}
		waiting, err := e.queueWaiting(tx, it.URL)
		pushed = append(pushed, waiting...)
		return err
	})
	if err != nil {
		e.setFatal(err)
		return requeue, true
	}
	if !skipped {
		// A verification pick (or a copy its counterpart cannot stand
		// for): fetched after all. A pick is marked so that its comparison
		// counts in the verification stream and the loss monitor (without
		// the mark, the picks drawn at lease time were fetched but never
		// verified anything). The counterpart queued for it is fetched too
		// (it is marked seen: nothing else would queue it in this run).
		it.Verify = it.Verify || verify
		e.push(pushed)
		return attempt{}, false
	}
	e.countClass(storage.ClassMirrorSkipped, 1)
	return attempt{settled: true, pushed: pushed}, true
}

// recordLeased writes the skip record of a leased copy.
func (m *mirrorRules) recordLeased(tx Tx, it *frontier.Item, key, cp string, cpID uint64) error {
	rec := &storage.Page{
		ID: it.ID, URL: it.URL, Host: it.Host, Depth: it.Depth, Via: it.Via,
		Class: storage.ClassMirrorSkipped, DuplicateOf: cp, OriginalID: cpID, Method: "mirror",
		FetchedAt: time.Now().UTC(),
	}
	if err := m.e.putPage(tx, rec); err != nil {
		return err
	}
	if err := tx.DeleteQueue(it.Host, it.Seq); err != nil {
		return err
	}
	if err := tx.AddDependent(cp, storage.Dependent{ID: it.ID, URL: it.URL, Depth: it.Depth, Via: it.Via, Seen: true}); err != nil {
		return err
	}
	return m.saveCandidate(tx, key)
}

// counterpart returns the URL and page id of counterpart cp (or of its other
// form, mirror.ExtAlternates) on a decided mirror's original and whether the
// copy may be skipped in its favour. An unknown
// counterpart is queued now (if in scope) and used; one that failed is not.
// queued is the new queue entry to push after the commit.
func (m *mirrorRules) counterpart(tx Tx, cp string, depth int, via string) (string, uint64, bool, *frontier.Item, error) {
	id, usable, err := counterpartUsable(tx, cp)
	if err != nil || usable {
		return cp, id, usable, nil, err
	}
	if _, seen, err := tx.SeenID(cp); err != nil || seen {
		return cp, 0, false, nil, err // known and failed
	}
	// A mapping learnt from a pair of index pages cannot tell whether one
	// side drops the other's extensions ("a" for "a.html"): a counterpart
	// known under the other form is the one, rather than a request for a
	// form the original may not serve.
	for _, alt := range mirror.ExtAlternates(cp) {
		if id, ok, err := counterpartUsable(tx, alt); err != nil || ok {
			return alt, id, ok, nil, err
		}
	}
	it, ok, err := m.e.follow(tx, cp, depth, via)
	if err != nil || !ok {
		return cp, 0, false, nil, err
	}
	return cp, it.ID, true, &it, nil
}

// skipLink records a newly found link on a decided mirror as mirror_skipped
// instead of queueing it, when its counterpart is usable. verify reports
// that the link is a pick of the verification stream: it must be fetched,
// whatever other rule would skip it.
func (m *mirrorRules) skipLink(ct *commitTx, cu string, via *storage.Page) (skipped, verify bool, err error) {
	key, cp, ok := m.det.SkipTarget(cu)
	if !ok || m.e.fetchCopies() {
		return false, false, nil
	}
	if seen, err := ct.seen(cu); err != nil || seen {
		return false, false, err
	}
	// A link skipped already (hub pages are linked from every page) stays
	// skipped while its counterpart stands: it is counted, and drawn for the
	// verification stream, once per URL, not once per link to it.
	if done, err := standingSkip(ct.tx, cu); err != nil || done {
		return done, false, err
	}
	if !m.e.inScope(cu) {
		return false, false, nil
	}
	cp, cpID, usable, queued, err := m.counterpart(ct.tx, cp, via.Depth+1, via.URL)
	if queued != nil {
		ct.queue(*queued)
	}
	if err != nil || !usable {
		return false, false, err
	}
	if short, err := m.tooShort(ct.tx, key, cpID); err != nil || short {
		if err != nil {
			return false, false, err
		}
		// Fetched, outside the verification stream (not a random pick).
		item, ok, err := m.e.follow(ct.tx, cu, via.Depth+1, via.URL)
		if ok {
			ct.queue(item)
		}
		return true, false, err
	}
	if m.e.verifyPick(cu, cp) || !m.det.Skip(key) {
		return false, true, nil
	}
	if err := ct.skip(cu, cp, cpID, via, 0); err != nil {
		return false, false, err
	}
	return true, false, m.saveCandidate(ct.tx, key)
}

// tooShort reports whether counterpart cpID, fetched, is too short to
// represent its copy under candidate key once the candidate's systematic
// differences are added (mirror.Detector.Represents): the copy is fetched.
func (m *mirrorRules) tooShort(tx Tx, key string, cpID uint64) (bool, error) {
	rec, err := tx.GetPage(cpID)
	if err == storage.ErrNotFound {
		return false, nil // queued: checked when it is fetched (sampleWaiting)
	}
	if err != nil {
		return false, err
	}
	return hasContent(rec) && !m.det.Represents(key, rec.Words), nil
}

// content feeds the detector a page with content: the pair's link evidence,
// comparisons with its counterparts, and the copies waiting to be sampled.
func (m *mirrorRules) content(ct *commitTx, p *storage.Page, c *pageContent) error {
	if err := m.linkEvidence(ct, p, c.links); err != nil {
		return err
	}
	if err := m.compare(ct, p, c.doc); err != nil {
		return err
	}
	return m.sampleWaiting(ct, p)
}

// linkEvidence proposes the candidate a duplicate pair implies, with its link
// evidence; a unique page's links are kept for the link evidence of its
// later copies.
func (m *mirrorRules) linkEvidence(ct *commitTx, p *storage.Page, links []string) error {
	tx := ct.tx
	// The copy's own URL is where it was served from (its links are
	// resolved against it), as in the link policy.
	self := p.ServedURL()
	if p.Class.Duplicate() && p.DuplicateOf != "" {
		// Do the copy's links map onto the original's (stored when it was
		// fetched) under the implied prefix mapping?
		orig, err := tx.GetLinks(p.OriginalID)
		if err != nil {
			return err
		}
		compared, matched := 0, 0
		if orig != nil {
			compared, matched = mirror.LinkEvidence(self, p.DuplicateOf, links, orig)
		}
		m.evidence(ct, mirrorEvidence{Propose: &mirrorProposal{Copy: self, Orig: p.DuplicateOf, Links: compared, Matched: matched}})
		// Saved whether or not the pair counted: its link evidence did.
		if mp, ok := mirror.Infer(self, p.DuplicateOf); ok && !mp.Identity() {
			key := mirror.Key(mp)
			if _, known := m.det.Candidate(key); !known && m.log != nil {
				// The log brings the candidate after the commit: the pair
				// is compared now all the same, as in one process.
				ct.proposed = &mirror.Counterpart{Key: key, URL: p.DuplicateOf}
			}
			return m.saveCandidate(tx, key)
		}
		return nil
	}
	if p.Class == storage.ClassUnique && p.Status == 200 && len(links) > 0 {
		return tx.PutLinks(p.ID, mirror.LinkHashes(self, links))
	}
	return nil
}

// compare compares the page with its counterparts under every candidate
// that were fetched before, and notes the decisions made or withdrawn.
func (m *mirrorRules) compare(ct *commitTx, p *storage.Page, doc *parse.Document) error {
	cps := m.det.Counterparts(p.URL)
	proposed := ""
	if pc := ct.proposed; pc != nil && !slices.ContainsFunc(cps, func(c mirror.Counterpart) bool { return c.Key == pc.Key }) {
		cps = append(cps, *pc)
		proposed = pc.Key
	}
	// The page's shingle set, made once for all its comparisons.
	var mine mirror.ShingleSet
	mineSet := func() mirror.ShingleSet {
		if mine == nil {
			e := m.e
			tokens := doc.Tokens
			if e.o.Parse.URLTokens {
				tokens = e.storedTokens(nil, doc.Title, doc.Text)
			}
			mine = mirror.NewShingleSet(e.det.Shingles(tokens, nil))
		}
		return mine
	}
	for _, cp := range cps {
		rec, err := fetchedRecord(ct.tx, cp.URL)
		if err != nil {
			return err
		}
		if rec == nil {
			continue // unknown, or queued: compared when it is fetched
		}
		if !hasContent(rec) || !hasContent(p) {
			continue
		}
		// The pages match when the crawler's own duplicate decision calls
		// them duplicates (seed 004: "identical (or near identical)").
		// Two builds of one site that differ page by page in more than the
		// near-duplicate threshold allows match on few paths, and the
		// sequential test rejects them.
		c, made, err := m.samePage(cp.Key, p, doc, rec, mineSet)
		if err != nil {
			return err
		}
		if !made {
			continue
		}
		c.Verify = p.Verify || rec.Verify
		c.OrigWords = originalWords(cp.Side == m.det.CopySide(cp.Key), p, rec)
		c.Proposed = cp.Key == proposed // counts only if this pair makes the candidate
		m.evidence(ct, mirrorEvidence{Compared: []mirrorComparison{c}})
		if err := m.saveCandidate(ct.tx, cp.Key); err != nil {
			return err
		}
	}
	if len(cps) > 0 {
		m.evidence(ct, mirrorEvidence{Observe: p.URL})
	}
	return nil
}

// fetchedRecord returns the record of u, a counterpart compare and lacks
// walk to, if u has one: nil (and no error) when u is not in the seen set,
// or is but has no record yet (queued).
func fetchedRecord(tx interface {
	SeenSet
	PageRecords
}, u string) (*storage.Page, error) {
	id, seen, err := tx.SeenID(u)
	if err != nil || !seen {
		return nil, err
	}
	rec, err := tx.GetPage(id)
	if err == storage.ErrNotFound {
		return nil, nil
	}
	return rec, err
}

// originalWords is the length of the page on the original's side of a pair
// compared under a candidate, pCopy saying p is on the side presumed the
// copy (mirror.Detector.CopySide).
func originalWords(pCopy bool, p, rec *storage.Page) int {
	if pCopy {
		return rec.Words
	}
	return p.Words
}

// note logs a comparison's change of decision and keeps it for committed.
func (m *mirrorRules) note(ct *commitTx, key string, change mirror.Event) {
	switch change {
	case mirror.DecidedNow:
		c, _ := m.det.Candidate(key)
		mp := c.MirrorMapping()
		kind := "mirror"
		if c.SameHost() {
			kind = "replicated prefix"
		}
		m.e.logger.Info(kind+" detected", "copy", mp.FromOrigin+mp.FromPrefix, "original", mp.ToOrigin+mp.ToPrefix,
			"compared", c.Compared, "matched", c.Matched)
		if !c.SameHost() {
			ct.decided = append(ct.decided, key)
			// A page below mirror.Represented among the comparisons made
			// before the decision: the first URLs it skips are verified.
			m.det.MonitorPrior(key)
		}
	case mirror.WithdrawnNow:
		m.e.logger.Info("mirror candidate withdrawn: its pages stopped matching; skipped URLs are queued again", "candidate", key)
		ct.withdrawn = append(ct.withdrawn, key)
	case mirror.HaltedNow:
		// The decision stands; its skipped URLs are queued again like a
		// withdrawn one's.
		m.e.logger.Info("mirror skipping stopped: a verified page would have been lost; skipped URLs are queued again", "candidate", key)
		ct.withdrawn = append(ct.withdrawn, key)
	case mirror.SwappedNow:
		c, _ := m.det.Candidate(key)
		mp := c.MirrorMapping()
		m.e.logger.Info("mirror direction reversed: the original lacked more of what the mirror serves",
			"copy", mp.FromOrigin+mp.FromPrefix, "original", mp.ToOrigin+mp.ToPrefix,
			"lacks_copy", c.Lacks(c.Mirror), "lacks_original", c.Lacks(1-c.Mirror))
		ct.swapped = append(ct.swapped, key)
	}
}

// failed handles a URL on the original side of a decided mirror that
// failed: the same path on the mirror may hold the page the original lacks;
// and the page that linked to the failed URL evidently differs from its copy
// on the mirror (which may link to more of what the original lacks), so a
// skipped copy of it is worth fetching too. Both become gap probes, issued
// as the detector allows.
func (m *mirrorRules) failed(ct *commitTx) error {
	items, err := m.copiesOfFailure(ct.tx, ct.it.URL, ct.it.Via, ct.it.Depth)
	ct.queue(items...)
	return err
}

func (m *mirrorRules) copiesOfFailure(tx Tx, failedURL, via string, depth int) ([]frontier.Item, error) {
	key := ""
	if cu, k, ok := m.det.CopyOf(failedURL); ok {
		key = k
		m.det.AddGap(k, mirror.Gap{URL: cu, Via: via, Depth: depth})
	}
	if via != "" {
		if cv, k, ok := m.det.CopyOf(via); ok {
			key = k
			m.det.AddGap(k, mirror.Gap{URL: cv, Depth: max(depth-1, 0), Linker: true})
		}
	}
	if key == "" {
		return nil, nil
	}
	return m.issueGaps(tx, key)
}

// issueGaps queues the gap probes the detector releases for key.
func (m *mirrorRules) issueGaps(tx Tx, key string) ([]frontier.Item, error) {
	var out []frontier.Item
	// Probes whose URL turns out known already are not sent; draw again
	// until the released ones are really under way or the backlog is empty.
	for {
		gaps := m.det.NextGaps(key)
		if len(gaps) == 0 {
			return out, nil
		}
		issued := 0
		for _, g := range gaps {
			item, ok, err := m.gapItem(tx, g)
			if err != nil {
				return nil, err
			}
			if !ok {
				m.det.GapUnissued(key, g.Linker)
				continue
			}
			issued++
			out = append(out, item)
			if err := tx.PutEvidence("gap", g.URL, gapMark{Key: key, Linker: g.Linker}); err != nil {
				return nil, err
			}
		}
		if issued == len(gaps) {
			return out, nil
		}
	}
}

// gapItem queues a gap probe's URL: a new URL, or one whose record says it
// was skipped as a copy. Anything else is already fetched or queued.
func (m *mirrorRules) gapItem(tx Tx, g mirror.Gap) (frontier.Item, bool, error) {
	id, seen, err := tx.SeenID(g.URL)
	if err != nil {
		return frontier.Item{}, false, err
	}
	if !seen {
		return m.e.follow(tx, g.URL, g.Depth, g.Via)
	}
	return m.e.requeueDependent(tx, storage.Dependent{ID: id, URL: g.URL, Depth: g.Depth, Via: g.Via, Seen: true})
}

// recorded records the outcome of a gap probe (a mirror page fetched
// because its original lacked something), a hit if it held new content, and
// issues the probes the result releases.
func (m *mirrorRules) recorded(ct *commitTx, p *storage.Page) error {
	if err := m.subtrees(ct, p); err != nil {
		return err
	}
	if err := m.lacks(ct, p); err != nil {
		return err
	}
	if err := m.gapResult(ct, p); err != nil {
		return err
	}
	return m.appendLog(ct)
}

// servedUnique reports whether p was served with content kept as unique.
func servedUnique(p *storage.Page) bool { return hasContent(p) && p.Class == storage.ClassUnique }

// lacking reports whether p's answer says its path is not there.
func lacking(p *storage.Page) bool { return p.Status == 404 || p.Status == 410 }

// lacks records the direction evidence a page completes: under each
// candidate whose side holds p, a path where one side answered 404 or 410
// and the other served a page (mirror.Detector.Lack). The evidence is
// recorded by whichever of the two pages is committed second: before the
// decision both sides' pages; after it, the mirror's copies of the
// original's failures (gap probes, copiesOfFailure) and the mirror's pages
// the verification stream fetches.
//
// Served means kept as unique: a host answering 200 with one "not found"
// page at every path (a soft 404) serves duplicates of that page, which
// hold nothing the other side lacks.
func (m *mirrorRules) lacks(ct *commitTx, p *storage.Page) error {
	served := servedUnique(p)
	if !served && !lacking(p) {
		return nil
	}
	var ls []mirrorLack
	for _, cp := range m.det.Counterparts(p.URL) {
		rec, err := fetchedRecord(ct.tx, cp.URL)
		if err != nil {
			return err
		}
		if rec == nil {
			continue // unknown, or queued: the evidence is recorded when it is fetched
		}
		switch {
		case served && lacking(rec):
			ls = append(ls, mirrorLack{Key: cp.Key, Side: 1 - cp.Side})
		case !served && servedUnique(rec):
			ls = append(ls, mirrorLack{Key: cp.Key, Side: cp.Side})
		}
	}
	if len(ls) == 0 {
		return nil
	}
	m.evidence(ct, mirrorEvidence{Lacks: ls})
	for _, l := range ls {
		if err := m.saveCandidate(ct.tx, l.Key); err != nil {
			return err
		}
	}
	return nil
}

// reads names the records content and recorded read: the copies waiting on
// a page with content (sampleWaiting), a gap probe's mark (gapResult).
func (m *mirrorRules) reads(p *storage.Page, content bool, r *PageReads) {
	if content {
		r.Dependents = append(r.Dependents, p.URL)
	}
	r.Evidence = append(r.Evidence, EvidenceRef{"gap", p.URL})
}

func (m *mirrorRules) gapResult(ct *commitTx, p *storage.Page) error {
	v, ok, err := ct.tx.TakeEvidence("gap", p.URL)
	if err != nil || !ok {
		return err
	}
	var g gapMark
	if err := json.Unmarshal(v, &g); err != nil {
		return err
	}
	m.evidence(ct, mirrorEvidence{Gaps: []mirrorGapResult{{Key: g.Key, Linker: g.Linker, Hit: p.Class == storage.ClassUnique}}})
	if err := m.saveCandidate(ct.tx, g.Key); err != nil {
		return err
	}
	items, err := m.issueGaps(ct.tx, g.Key)
	ct.queue(items...)
	return err
}

// gapMark is stored with a gap probe's URL until its result is in.
type gapMark struct {
	Key    string `json:"key"`
	Linker bool   `json:"linker,omitempty"`
}

// committed acts on the decisions the page withdrew or made. Called with
// commitMu held.
func (m *mirrorRules) committed(ct *commitTx) { m.act(ct, true) }

// act acts on the decisions ct noted; on the store's skip records too when
// shared (always in one process; in a shared crawl, where they are the
// crawl's, by the worker whose log entry changed the decision), else on the
// worker's own page records only.
func (m *mirrorRules) act(ct *commitTx, shared bool) {
	for _, key := range ct.withdrawn {
		m.requeueSkipped(key, shared)
	}
	for _, key := range ct.decided {
		m.verifyStanding(key, shared)
		m.onDecided(key)
	}
	// A reversed direction: SkipTarget, CopyMapping and CopyOf follow it
	// from now on (the new mirror's URLs are skipped at lease and link
	// time, the new original's failures are probed on the new mirror).
	// Nothing skipped is queued again: each URL skipped on the former
	// mirror stands for a counterpart on the former original that was
	// fetched with content (or was queued, and queues it if it fails:
	// queueWaiting), as it did before the swap, and the new mirror's
	// pages never stand for a skipped page (counterpartUsable), so no two
	// pages skip each other. The new original's failures from before the
	// swap are probed on the new mirror, as at a decision.
	for _, key := range ct.swapped {
		m.onDecided(key)
	}
}

// onDecided applies copiesOfFailure to the failures the original side had
// before the mirror was decided.
func (m *mirrorRules) onDecided(key string) {
	c, ok := m.det.Candidate(key)
	if !ok {
		return
	}
	e := m.e
	orig := c.MirrorMapping()
	origHead := orig.ToOrigin + orig.ToPrefix
	var failed []*storage.Page
	under := func(u string) bool { return strings.HasPrefix(u, origHead) }
	err := e.indexedPages(under, func(p *storage.Page) error {
		if p.Failed() && under(p.URL) {
			cp := *p
			failed = append(failed, &cp)
		}
		return nil
	})
	if err != nil {
		e.setFatal(err)
		return
	}
	if len(failed) == 0 {
		return
	}
	n, err := e.queueAllFrom(func(tx Tx) ([]frontier.Item, error) {
		var items []frontier.Item
		for _, p := range failed {
			got, err := m.copiesOfFailure(tx, p.URL, p.Via, p.Depth)
			if err != nil {
				return nil, err
			}
			items = append(items, got...)
		}
		return items, nil
	})
	if err != nil {
		e.setFatal(err)
		return
	}
	if n > 0 {
		e.logger.Info("queued mirror copies of pages the original lacks", "count", n, "mirror", orig.FromOrigin+orig.FromPrefix)
	}
}

// sampleWaiting queues, as samples of undecided mirror candidates, copies
// that were skipped while their counterpart p was queued: now that p has been
// fetched, each such sample is a comparison. (Copies are sampled only against
// fetched counterparts; sampled against queued ones, many turn out to be
// paths the original lacks and prove nothing.)
//
// It also queues the copies waiting on p that p is too short to represent
// (tooShort), and all of them under a mirror whose skipping the loss monitor
// stopped.
func (m *mirrorRules) sampleWaiting(ct *commitTx, p *storage.Page) error {
	if !hasContent(p) {
		return nil
	}
	deps, err := ct.tx.Dependents(p.URL)
	if err != nil || len(deps) == 0 {
		return err
	}
	for _, d := range deps {
		key, ok := m.det.SampleKey(d.URL, p.URL)
		sample := ok
		if !ok {
			key, ok = m.unrepresented(d.URL, p)
		}
		if !ok {
			continue
		}
		if err := ct.tx.DeleteDependent(p.URL, d); err != nil {
			return err
		}
		it, ok, err := m.e.requeueDependent(ct.tx, d)
		if err != nil {
			return err
		}
		// Counted only when really queued (it may be queued already);
		// SampleKey saw the count under the cap.
		if ok {
			ct.queue(it)
			if sample {
				m.det.WantSample(key)
			}
		}
	}
	return nil
}

// unrepresented returns the candidate under which copy u waits on page p
// when p will not stand for it: the candidate's skipping was stopped, or p is
// too short (mirror.Detector.Represents).
func (m *mirrorRules) unrepresented(u string, p *storage.Page) (string, bool) {
	for _, cp := range m.det.Counterparts(u) {
		if cp.URL != p.URL {
			continue
		}
		if m.det.Halted(cp.Key) || !m.det.Represents(cp.Key, p.Words) {
			return cp.Key, true
		}
	}
	return "", false
}

// samePage (mine: p's shingle set, made once for all its comparisons) reports (match) whether the crawler's duplicate decision calls p (parsed
// from doc, being committed) and rec (a stored page) duplicates, compared
// under candidate key: the same payload, one recorded as the other's
// duplicate, or the exact Jaccard of their looped shingle sets at least the
// near-duplicate threshold, with the differences systematic to the candidate
// left out (mirror.Resemblance: a banner or footer on every page of a copy). The
// shingles are those of the token stream the dedup signs, made from the
// visible text (and the title, with title_tokens); with url_tokens, whose
// URL tokens the stored text lacks, both sides are compared on their text
// alone. lost reports that their plain Jaccard similarity is below
// mirror.Represented: one would be lost were it skipped for the other (the
// loss monitor's event).
func (m *mirrorRules) samePage(key string, p *storage.Page, doc *parse.Document, rec *storage.Page, mine func() mirror.ShingleSet) (c mirrorComparison, made bool, err error) {
	c.Key = key
	if p.SHA256 != "" && p.SHA256 == rec.SHA256 {
		c.Match, c.Identical = true, true
		return c, true, nil
	}
	// One recorded as the other's duplicate matches; their text is compared
	// all the same, for the loss monitor and the pair's typical difference
	// (mirror.Detector.Represents).
	recorded := (p.Class.Duplicate() && p.OriginalID == rec.ID) || (rec.Class.Duplicate() && rec.OriginalID == p.ID)
	e := m.e
	text, err := e.st.Text(e.sctx, rec.ID)
	if err != nil {
		if errors.Is(err, ErrElsewhere) {
			// Kept by another worker that does not answer for it (gone,
			// silent): not made. Counting the pairs the index recorded as
			// duplicates without their text would count matches and never
			// mismatches.
			return c, false, nil
		}
		if errors.Is(err, storage.ErrDamaged) {
			c.Match = recorded
			return c, true, nil // unreadable: no evidence either way
		}
		return c, false, err
	}
	title := rec.Title
	if e.o.Parse.TitleTokens && title == "" {
		// Another worker's page: its summary lacks the title.
		if full, err := e.st.Page(e.sctx, rec.ID); err == nil {
			title = full.Title
		}
	}
	if text == doc.Text && (!e.o.Parse.TitleTokens || title == doc.Title) {
		c.Match, c.Identical = true, true
		return c, true, nil // the same token stream: J = 1 without shingling
	}
	theirs := e.storedTokens(nil, title, text)
	r, j, diff := m.det.MeasureSets(key, mine(), mirror.NewShingleSet(e.det.Shingles(theirs, nil)))
	c.Match, c.Lost = recorded || r >= e.det.Options().Threshold, j < mirror.Represented
	c.Measured, c.Size = true, len(diff)
	if m.log == nil || m.det.Tracking(key) {
		c.Diff = diff // past the candidate's first pairs, only the size counts
	}
	return c, true, nil
}

func (m *mirrorRules) saveCandidate(tx EvidenceLog, key string) error {
	c, ok := m.det.Candidate(key)
	if !ok {
		return nil
	}
	return tx.PutEvidence("mirror", key, c)
}

// requeueSkipped queues again every URL skipped under a withdrawn (or
// halted) decision.
func (m *mirrorRules) requeueSkipped(key string, shared bool) {
	deps, mp, ok := m.skippedUnder(key, shared)
	if !ok {
		return
	}
	e := m.e
	n, err := e.queueAll(len(deps), func(tx Tx, i int) (frontier.Item, bool, error) {
		return e.requeueDependent(tx, deps[i].Dependent)
	})
	if err != nil {
		e.setFatal(err)
		return
	}
	e.logger.Info("queued skipped URLs again", "count", n, "mirror", mp.FromOrigin+mp.FromPrefix)
}

// verifyStanding draws the verification stream from the URLs skipped under
// candidate key before it was decided (copies presumed while the test ran):
// on a small mirror they can be all of its pages, and a stream drawn only
// from later skips would never run. One in VerifyEvery is queued again,
// marked for verification.
func (m *mirrorRules) verifyStanding(key string, shared bool) {
	deps, mp, ok := m.skippedUnder(key, shared)
	if !ok {
		return
	}
	e := m.e
	n, err := e.queueAllFrom(func(tx Tx) ([]frontier.Item, error) {
		var items []frontier.Item
		for _, d := range deps {
			// Copies their counterparts are too short to represent are
			// fetched (outside the stream); one in VerifyEvery of the rest
			// is a verification pick.
			short, err := m.tooShort(tx, key, d.cpID)
			if err != nil {
				return nil, err
			}
			verify := !short && !m.det.Skip(key)
			if !short && !verify {
				continue
			}
			it, ok, err := e.requeueDependentAs(tx, d.Dependent, verify)
			if err != nil {
				return nil, err
			}
			if ok {
				items = append(items, it)
			}
		}
		return items, nil
	})
	if err != nil {
		e.setFatal(err)
		return
	}
	if n > 0 {
		e.logger.Info("queued skipped URLs to verify a mirror decision", "count", n, "mirror", mp.FromOrigin+mp.FromPrefix)
	}
}

// skippedCopy is a URL skipped under a mirror candidate and its
// counterpart's page id.
type skippedCopy struct {
	storage.Dependent
	cpID uint64
}

// skippedUnder returns the URLs skipped in favour of candidate key's
// counterparts (the store's skip records only when shared, see act; the
// leased copies recorded in the worker's own page records always), and its
// mirror mapping.
func (m *mirrorRules) skippedUnder(key string, shared bool) ([]skippedCopy, mirror.Mapping, bool) {
	c, ok := m.det.Candidate(key)
	if !ok {
		return nil, mirror.Mapping{}, false
	}
	mp := c.MirrorMapping()
	deps, ok := m.e.skippedUnderMapping(mp, shared)
	return deps, mp, ok
}

// skippedUnderMapping returns the URLs skipped in favour of their
// counterparts under mapping mp (the store's skip records only when shared,
// see mirrorRules.act; the leased copies recorded in the worker's own page
// records always).
func (e *Engine) skippedUnderMapping(mp mirror.Mapping, shared bool) ([]skippedCopy, bool) {
	var deps []skippedCopy
	collect := func(p *storage.Page) error {
		if p.Class != storage.ClassMirrorSkipped {
			return nil
		}
		// Only the URLs skipped in favour of this mapping's counterparts:
		// another candidate over the same prefix may be sound.
		if cp, under := mp.Apply(p.URL); under && cp == p.DuplicateOf {
			deps = append(deps, skippedCopy{storage.Dependent{ID: p.ID, URL: p.URL, Depth: p.Depth, Via: p.Via, Seen: p.ID != 0}, p.OriginalID})
		}
		return nil
	}
	under := func(u string) bool { _, ok := mp.Apply(u); return ok }
	if shared {
		// Every URL the mapping applies to starts with its head without
		// the trailing slash (mirror.Mapping.Apply).
		var err error
		if sr, ok := e.st.(SkipRangeReader); ok {
			err = sr.ForEachSkippedUnder(e.sctx, strings.TrimSuffix(mp.FromOrigin+mp.FromPrefix, "/"), collect)
		} else {
			err = e.st.ForEachSkipped(e.sctx, collect)
		}
		if err != nil {
			e.setFatal(err)
			return nil, false
		}
	}
	if err := e.indexedPages(under, collect); err != nil {
		e.setFatal(err)
		return nil, false
	}
	return deps, true
}
