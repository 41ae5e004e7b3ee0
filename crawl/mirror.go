package crawl

import (
	"encoding/json"
	"errors"
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
// and queues the skipped URLs again.

// failedRecord reports whether a fetched page cannot stand in for its copies.
func failedRecord(p *storage.Page) bool {
	return p.Class == storage.ClassError || p.Class == storage.ClassRobotsDisallowed ||
		(p.Status >= 300 && p.Status < 400)
}

// counterpartUsable reports whether counterpart cp is known (queued or
// fetched) and has not failed. On a decided mirror an unknown counterpart is
// queued on the original first (mirrorCounterpart), so the copy is fetched
// only if the original turns out not to have the page.
func counterpartUsable(tx *storage.Tx, cp string) (uint64, bool, error) {
	id, seen, err := tx.SeenID(cp)
	if err != nil || !seen {
		return 0, false, err
	}
	rec, err := tx.GetPage(id)
	if err == nil && (failedRecord(rec) || rec.Class == storage.ClassMirrorSkipped) {
		// A counterpart that failed cannot stand in for the copy, nor can
		// one that was itself skipped (two candidates pointing opposite
		// ways must not skip each other's pages).
		return id, false, nil
	}
	if err != nil && err != storage.ErrNotFound {
		return 0, false, err
	}
	return id, true, nil
}

// skipLeased records a leased URL on a decided mirror as mirror_skipped,
// without a request, when its counterpart is usable. It reports whether it
// did (the lease is then released).
func (e *Engine) skipLeased(it *frontier.Item) bool {
	key, cp, ok := e.o.Mirror.SkipTarget(it.URL)
	if !ok {
		return false
	}
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	if e.fatal() != nil {
		e.fr.Release(it, frontier.Outcome{Requeue: true})
		return true
	}
	skipped := false
	var pushed []frontier.Item
	err := e.db.Update(func(tx *storage.Tx) error {
		skipped = false
		pushed = pushed[:0]
		cpID, usable, queued, err := e.mirrorCounterpart(tx, cp, it.Depth, it.Via)
		if err != nil || !usable || !e.o.Mirror.Skip(key) {
			return err
		}
		if queued != nil {
			pushed = append(pushed, *queued)
		}
		rec := &storage.Page{
			ID: it.ID, URL: it.URL, Host: it.Host, Depth: it.Depth, Via: it.Via,
			Class: storage.ClassMirrorSkipped, DuplicateOf: cp, OriginalID: cpID, Method: "mirror",
			FetchedAt: time.Now().UTC(),
		}
		if err := tx.PutPage(rec); err != nil {
			return err
		}
		if err := tx.DeleteQueue(it.Host, it.Seq); err != nil {
			return err
		}
		if err := tx.AddDependent(cp, storage.Dependent{ID: it.ID, URL: it.URL, Depth: it.Depth, Via: it.Via, Seen: true}); err != nil {
			return err
		}
		skipped = true
		return e.saveCandidate(tx, key)
	})
	if err != nil {
		e.setFatal(err)
		e.fr.Release(it, frontier.Outcome{Requeue: true})
		return true
	}
	if skipped {
		e.countClass(storage.ClassMirrorSkipped, 1)
		e.fr.Release(it, frontier.Outcome{})
		e.push(pushed)
	}
	return skipped
}

// mirrorCounterpart returns the page id of counterpart cp on a decided
// mirror's original and whether the copy may be skipped in its favour. An
// unknown counterpart is queued now (if in scope) and used; one that failed
// is not. queued is the new queue entry to push after the commit.
func (e *Engine) mirrorCounterpart(tx *storage.Tx, cp string, depth int, via string) (uint64, bool, *frontier.Item, error) {
	id, usable, err := counterpartUsable(tx, cp)
	if err != nil || usable {
		return id, usable, nil, err
	}
	if _, seen, err := tx.SeenID(cp); err != nil || seen {
		return 0, false, nil, err // known and failed
	}
	it, ok, err := e.follow(tx, cp, depth, via)
	if err != nil || !ok {
		return 0, false, nil, err
	}
	return it.ID, true, &it, nil
}

// skipMirrorLink records a newly found link on a decided mirror as
// mirror_skipped instead of queueing it, when its counterpart is usable.
// verify reports that the link is a pick of the verification stream: it must
// be fetched, whatever other rule would skip it.
func (e *Engine) skipMirrorLink(tx *storage.Tx, cu string, via *storage.Page) (skipped, verify bool, queued *frontier.Item, err error) {
	key, cp, ok := e.o.Mirror.SkipTarget(cu)
	if !ok {
		return false, false, nil, nil
	}
	if _, seen, err := tx.SeenID(cu); err != nil || seen {
		return false, false, nil, err
	}
	// A link skipped already (hub pages are linked from every page) stays
	// skipped while its counterpart stands: it is counted, and drawn for the
	// verification stream, once per URL, not once per link to it.
	if done, err := standingSkip(tx, cu); err != nil || done {
		return done, false, nil, err
	}
	if !e.inScope(cu) {
		return false, false, nil, nil
	}
	cpID, usable, queued, err := e.mirrorCounterpart(tx, cp, via.Depth+1, via.URL)
	if err != nil || !usable {
		return false, false, queued, err
	}
	if !e.o.Mirror.Skip(key) {
		return false, true, queued, nil
	}
	if err := e.skip(tx, cu, cp, cpID, via, 0); err != nil {
		return false, false, nil, err
	}
	return true, false, queued, e.saveCandidate(tx, key)
}

// mirrorEvidence proposes candidates from a duplicate pair and compares the
// page with its counterparts under every candidate that were fetched before.
// It returns the keys of decisions withdrawn by the comparison.
func (e *Engine) mirrorEvidence(tx *storage.Tx, p *storage.Page, doc *parse.Document, links []string) (withdrawn, decided []string, err error) {
	det := e.o.Mirror
	if (p.Class == storage.ClassExact || p.Class == storage.ClassNear) && p.DuplicateOf != "" {
		// The pair's link evidence: do the copy's links map onto the
		// original's (stored when it was fetched) under the implied prefix
		// mapping?
		orig, err := tx.GetLinks(p.OriginalID)
		if err != nil {
			return nil, nil, err
		}
		// The copy's own URL is where it was served from (its links are
		// resolved against it), as in links().
		self := p.URL
		if p.FinalURL != "" {
			self = p.FinalURL
		}
		compared, matched := 0, 0
		if orig != nil {
			compared, matched = mirror.LinkEvidence(self, p.DuplicateOf, links, orig)
		}
		det.ProposeLinks(self, p.DuplicateOf, compared, matched)
		// Saved whether or not the pair counted: its link evidence did.
		if m, ok := mirror.Infer(self, p.DuplicateOf); ok && !m.Identity() {
			if err := e.saveCandidate(tx, mirror.Key(m)); err != nil {
				return nil, nil, err
			}
		}
	} else if p.Class == storage.ClassUnique && p.Status == 200 && len(links) > 0 {
		// A unique page may become the original of later copies: keep its
		// links on its own origin for their link evidence.
		self := p.URL
		if p.FinalURL != "" {
			self = p.FinalURL
		}
		if err := tx.PutLinks(p.ID, mirror.LinkHashes(self, links)); err != nil {
			return nil, nil, err
		}
	}
	for _, cp := range det.Counterparts(p.URL) {
		id, seen, err := tx.SeenID(cp.URL)
		if err != nil {
			return nil, nil, err
		}
		if !seen {
			continue
		}
		rec, err := tx.GetPage(id)
		if err == storage.ErrNotFound {
			continue // queued: compared when it is fetched
		}
		if err != nil {
			return nil, nil, err
		}
		if !hasContent(rec) || !hasContent(p) {
			continue
		}
		// The pages match when the crawler's own duplicate decision calls
		// them duplicates (seed 004: "identical (or near identical)").
		// Two builds of one site that differ page by page in more than the
		// near-duplicate threshold allows match on few paths, and the
		// sequential test rejects them.
		match, err := e.samePage(cp.Key, p, doc, rec)
		if err != nil {
			return nil, nil, err
		}
		switch det.Compare(cp.Key, match, p.Verify || rec.Verify) {
		case mirror.DecidedNow:
			c, _ := det.Candidate(cp.Key)
			m := c.MirrorMapping()
			kind := "mirror"
			if c.SameHost() {
				kind = "replicated prefix"
			}
			e.logger.Info(kind+" detected", "copy", m.FromOrigin+m.FromPrefix, "original", m.ToOrigin+m.ToPrefix,
				"compared", c.Compared, "matched", c.Matched)
			if !c.SameHost() {
				decided = append(decided, cp.Key)
			}
		case mirror.WithdrawnNow:
			e.logger.Info("mirror candidate withdrawn: its pages stopped matching; skipped URLs are queued again", "candidate", cp.Key)
			withdrawn = append(withdrawn, cp.Key)
		}
		if err := e.saveCandidate(tx, cp.Key); err != nil {
			return nil, nil, err
		}
	}
	det.Observe(p.URL)
	return withdrawn, decided, nil
}

// fetchCopiesOfFailure handles a URL on the original side of a decided
// mirror that failed: the same path on the mirror may hold the page the
// original lacks; and the page that linked to the failed URL evidently differs
// from its copy on the mirror (which may link to more of what the original
// lacks), so a skipped copy of it is worth fetching too. Both become gap
// probes, issued as the detector allows.
func (e *Engine) fetchCopiesOfFailure(tx *storage.Tx, failedURL, via string, depth int) ([]frontier.Item, error) {
	key := ""
	if cu, k, ok := e.o.Mirror.CopyOf(failedURL); ok {
		key = k
		e.o.Mirror.AddGap(k, mirror.Gap{URL: cu, Via: via, Depth: depth})
	}
	if via != "" {
		if cv, k, ok := e.o.Mirror.CopyOf(via); ok {
			key = k
			e.o.Mirror.AddGap(k, mirror.Gap{URL: cv, Depth: max(depth-1, 0), Linker: true})
		}
	}
	if key == "" {
		return nil, nil
	}
	return e.issueGaps(tx, key)
}

// issueGaps queues the gap probes the detector releases for key.
func (e *Engine) issueGaps(tx *storage.Tx, key string) ([]frontier.Item, error) {
	var out []frontier.Item
	// Probes whose URL turns out known already are not sent; draw again
	// until the released ones are really under way or the backlog is empty.
	for {
		gaps := e.o.Mirror.NextGaps(key)
		if len(gaps) == 0 {
			return out, nil
		}
		issued := 0
		for _, g := range gaps {
			item, ok, err := e.gapItem(tx, g)
			if err != nil {
				return nil, err
			}
			if !ok {
				e.o.Mirror.GapUnissued(key, g.Linker)
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
func (e *Engine) gapItem(tx *storage.Tx, g mirror.Gap) (frontier.Item, bool, error) {
	id, seen, err := tx.SeenID(g.URL)
	if err != nil {
		return frontier.Item{}, false, err
	}
	if !seen {
		return e.follow(tx, g.URL, g.Depth, g.Via)
	}
	return e.requeueDependent(tx, storage.Dependent{ID: id, URL: g.URL, Depth: g.Depth, Via: g.Via, Seen: true})
}

// onDecided applies fetchCopiesOfFailure to the failures the original side
// had before the mirror was decided. Called with commitMu held.
func (e *Engine) onDecided(key string) {
	c, ok := e.o.Mirror.Candidate(key)
	if !ok {
		return
	}
	orig := c.MirrorMapping()
	origHead := orig.ToOrigin + orig.ToPrefix
	var failed []*storage.Page
	err := e.db.ForEachPage(func(p *storage.Page) error {
		if failedRecord(p) && strings.HasPrefix(p.URL, origHead) {
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
	var items []frontier.Item
	err = e.db.Update(func(tx *storage.Tx) error {
		items = items[:0]
		for _, p := range failed {
			got, err := e.fetchCopiesOfFailure(tx, p.URL, p.Via, p.Depth)
			if err != nil {
				return err
			}
			items = append(items, got...)
		}
		return nil
	})
	if err != nil {
		e.setFatal(err)
		return
	}
	if len(items) > 0 {
		e.logger.Info("queued mirror copies of pages the original lacks", "count", len(items), "mirror", orig.FromOrigin+orig.FromPrefix)
	}
	e.push(items)
}

// sampleWaiting queues, as samples of undecided mirror candidates, copies
// that were skipped while their counterpart p was queued: now that p has been
// fetched, each such sample is a comparison. (Copies are sampled only against
// fetched counterparts; sampled against queued ones, many turn out to be
// paths the original lacks and prove nothing.)
func (e *Engine) sampleWaiting(tx *storage.Tx, p *storage.Page) ([]frontier.Item, error) {
	if !hasContent(p) || !e.o.Mirror.WantsSamples(p.URL) {
		return nil, nil
	}
	deps, err := tx.Dependents(p.URL)
	if err != nil {
		return nil, err
	}
	var out []frontier.Item
	for _, d := range deps {
		key, ok := e.o.Mirror.SampleKey(d.URL, p.URL)
		if !ok {
			continue
		}
		if err := tx.DeleteDependent(p.URL, d); err != nil {
			return nil, err
		}
		it, ok, err := e.requeueDependent(tx, d)
		if err != nil {
			return nil, err
		}
		// Counted only when really queued (it may be queued already);
		// SampleKey saw the count under the cap.
		if ok {
			out = append(out, it)
			e.o.Mirror.WantSample(key)
		}
	}
	return out, nil
}

// standingSkip reports whether cu has a skip record whose counterpart can
// still stand in for it (known, not failed, not skipped itself). A skip whose
// counterpart failed without queuing it (a dependent lost, as stores written
// before dependents were keyed by URL could lose them) does not stand: the
// link is then handled as new.
func standingSkip(tx *storage.Tx, cu string) (bool, error) {
	rec, err := tx.GetSkipped(cu)
	if err != nil || rec == nil {
		return false, err
	}
	_, usable, err := counterpartUsable(tx, rec.DuplicateOf)
	return usable, err
}

// comparable reports whether page id was fetched with content that a copy
// can be compared with.
func comparable(tx *storage.Tx, id uint64) (bool, error) {
	rec, err := tx.GetPage(id)
	if err == storage.ErrNotFound {
		return false, nil // queued, not fetched yet
	}
	if err != nil {
		return false, err
	}
	return hasContent(rec), nil
}

// hasContent reports whether p holds text a mirror comparison can use.
func hasContent(p *storage.Page) bool {
	return p.Status == 200 && p.Words > 0 && isContent(p.Class)
}

// samePage reports whether the crawler's duplicate decision calls p (parsed
// from doc, being committed) and rec (a stored page) duplicates, compared
// under candidate key: the same payload, one recorded as the other's
// duplicate, or the exact Jaccard of their looped shingle sets at least the
// near-duplicate threshold, with the differences systematic to the candidate
// left out (mirror.Resemblance: a banner or footer on every page of a copy). The
// shingles are those of the token stream the dedup signs, made from the
// visible text (and the title, with title_tokens); with url_tokens, whose
// URL tokens the stored text lacks, both sides are compared on their text
// alone.
func (e *Engine) samePage(key string, p *storage.Page, doc *parse.Document, rec *storage.Page) (bool, error) {
	if p.SHA256 != "" && p.SHA256 == rec.SHA256 {
		return true, nil
	}
	dup := func(x *storage.Page) bool { return x.Class == storage.ClassExact || x.Class == storage.ClassNear }
	if (dup(p) && p.OriginalID == rec.ID) || (dup(rec) && rec.OriginalID == p.ID) {
		return true, nil
	}
	text, err := e.db.Text(rec.ID)
	if err != nil {
		if errors.Is(err, storage.ErrDamaged) {
			return false, nil // unreadable: no evidence either way
		}
		return false, err
	}
	if text == doc.Text && (!e.o.Parse.TitleTokens || rec.Title == doc.Title) {
		return true, nil // the same token stream: J = 1 without shingling
	}
	mine := doc.Tokens
	if e.o.Parse.URLTokens {
		mine = e.storedTokens(nil, doc.Title, doc.Text)
	}
	theirs := e.storedTokens(nil, rec.Title, text)
	j := e.o.Mirror.Resemblance(key, e.det.Shingles(mine, nil), e.det.Shingles(theirs, nil))
	return j >= e.det.Options().Threshold, nil
}

func isContent(class string) bool {
	return class == storage.ClassUnique || class == storage.ClassExact || class == storage.ClassNear
}

func (e *Engine) saveCandidate(tx *storage.Tx, key string) error {
	c, ok := e.o.Mirror.Candidate(key)
	if !ok {
		return nil
	}
	return tx.PutEvidence("mirror", key, c)
}

// requeueDependent queues a URL that was skipped in favour of a counterpart
// that has now failed.
func (e *Engine) requeueDependent(tx *storage.Tx, d storage.Dependent) (frontier.Item, bool, error) {
	if !d.Seen {
		return e.enqueue(tx, d.URL, d.Depth, d.Via)
	}
	rec, err := tx.GetPage(d.ID)
	if err != nil || rec.Class != storage.ClassMirrorSkipped {
		return frontier.Item{}, false, nil // fetched or queued again meanwhile
	}
	// Drop the skip record with the new queue entry, so that a second
	// reason to requeue (a withdrawn decision) cannot queue it twice. The
	// entry is written first: a crash between two parts of the transaction
	// then leaves both, never neither.
	host := frontier.HostKey(d.URL)
	it := frontier.Item{ID: d.ID, URL: d.URL, Depth: d.Depth, Via: d.Via, Host: host, Seq: e.fr.Assign(host)}
	if err := tx.PutQueue(it); err != nil {
		return frontier.Item{}, false, err
	}
	return it, true, tx.DeletePage(d.ID)
}

// requeueSkipped queues again every URL skipped under a withdrawn decision.
// Called with commitMu held.
func (e *Engine) requeueSkipped(key string) {
	c, ok := e.o.Mirror.Candidate(key)
	if !ok {
		return
	}
	m := c.MirrorMapping()
	var deps []storage.Dependent
	collect := func(p *storage.Page) error {
		if p.Class != storage.ClassMirrorSkipped {
			return nil
		}
		// Only the URLs skipped in favour of this mapping's counterparts:
		// another candidate over the same prefix may be sound.
		if cp, under := m.Apply(p.URL); under && cp == p.DuplicateOf {
			deps = append(deps, storage.Dependent{ID: p.ID, URL: p.URL, Depth: p.Depth, Via: p.Via, Seen: p.ID != 0})
		}
		return nil
	}
	if err := e.db.ForEachSkipped(collect); err != nil {
		e.setFatal(err)
		return
	}
	if err := e.db.ForEachPage(collect); err != nil {
		e.setFatal(err)
		return
	}
	n, err := e.queueAll(len(deps), func(tx *storage.Tx, i int) (frontier.Item, bool, error) {
		return e.requeueDependent(tx, deps[i])
	})
	if err != nil {
		e.setFatal(err)
		return
	}
	e.logger.Info("queued skipped URLs again", "count", n, "mirror", m.FromOrigin+m.FromPrefix)
}

// gapResult records the outcome of a gap probe (a mirror page fetched
// because its original lacked something), a hit if it held new content, and
// issues the probes the result releases.
func (e *Engine) gapResult(tx *storage.Tx, p *storage.Page) ([]frontier.Item, error) {
	v, ok, err := tx.TakeEvidence("gap", p.URL)
	if err != nil || !ok {
		return nil, err
	}
	var m gapMark
	if err := json.Unmarshal(v, &m); err != nil {
		return nil, err
	}
	e.o.Mirror.GapResult(m.Key, m.Linker, p.Class == storage.ClassUnique)
	if err := e.saveCandidate(tx, m.Key); err != nil {
		return nil, err
	}
	return e.issueGaps(tx, m.Key)
}

// gapMark is stored with a gap probe's URL until its result is in.
type gapMark struct {
	Key    string `json:"key"`
	Linker bool   `json:"linker,omitempty"`
}
