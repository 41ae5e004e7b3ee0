package crawl

import (
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/mirror"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// The link policy: what a committed page's links become. A unique page's
// links are queued. A duplicate's links (with SkipDuplicateLinks) whose
// counterpart on the original is known are recorded mirror_skipped instead,
// waiting on that counterpart. The mirror-aware variant adds what the mirror
// detector knows: pages presumed copies, links on decided mirrors, samples
// of undecided candidates, counterparts queued for copies to wait on.

// linkPolicy is the part of the link rules that depends on mirror detection.
type linkPolicy interface {
	// presumedCopy returns, for a page that is not a duplicate, a mapping
	// under which it is presumed a copy.
	presumedCopy(ct *commitTx, p *storage.Page) (mirror.Mapping, bool, error)
	// decided handles a link on a decided mirror: recorded skipped, or a
	// pick of the verification stream that must be fetched (verify).
	decided(ct *commitTx, cu string, via *storage.Page) (skipped, verify bool, err error)
	// sample reports whether a copy under m whose counterpart cpID is
	// usable is fetched as a sample of an undecided candidate.
	sample(ct *commitTx, cpID uint64, m mirror.Mapping) (bool, error)
	// waits reports whether a copy whose counterpart on another host is
	// unknown waits on that counterpart, queued now, instead of being
	// fetched.
	waits(m mirror.Mapping) bool
}

// plainLinks is the policy without mirror detection.
type plainLinks struct{}

func (plainLinks) presumedCopy(*commitTx, *storage.Page) (mirror.Mapping, bool, error) {
	return mirror.Mapping{}, false, nil
}
func (plainLinks) decided(*commitTx, string, *storage.Page) (bool, bool, error) {
	return false, false, nil
}
func (plainLinks) sample(*commitTx, uint64, mirror.Mapping) (bool, error) { return false, nil }
func (plainLinks) waits(mirror.Mapping) bool                              { return false }

// copyOf is how a page's links map onto its original's: mapped when the
// page is a copy under a non-identity mapping.
type copyOf struct {
	dup     bool
	mapping mirror.Mapping
	mapped  bool
}

// links queues, skips or samples the links of page p.
func (ct *commitTx) links(p *storage.Page, links []string) error {
	if p.NoFollow || p.Depth >= ct.e.o.MaxDepth {
		return nil
	}
	links = ct.e.paramCanonical(links) // rules decided since the worker canonicalized them
	if pf, ok := ct.tx.(SeenPrefetcher); ok {
		if err := pf.PrefetchSeen(links); err != nil {
			return err
		}
	}
	cp, err := ct.copyOf(p)
	if err != nil {
		return err
	}
	for _, cu := range links {
		skipped, verify, err := ct.e.links.decided(ct, cu, p)
		if err != nil {
			return err
		}
		if skipped {
			continue
		}
		if cp.dup && ct.e.o.SkipDuplicateLinks && !verify {
			if done, err := ct.duplicateLink(cu, p, cp); err != nil || done {
				if err != nil {
					return err
				}
				continue
			}
		}
		var item frontier.Item
		var ok bool
		if verify {
			if p.Depth+1 <= ct.e.o.MaxDepth && ct.e.inScope(cu) {
				item, ok, err = ct.e.enqueueItem(ct.tx, cu, p.Depth+1, p.URL, true, 0)
			}
		} else {
			if held, err := ct.aliasLink(cu, p); err != nil || held {
				if err != nil {
					return err
				}
				continue // held back on its canonical URL (canonical.go)
			}
			item, ok, err = ct.e.follow(ct.tx, cu, p.Depth+1, p.URL)
		}
		if err != nil {
			return err
		}
		if ok {
			ct.queue(item)
			ct.marked = append(ct.marked, item.URL)
		}
	}
	return nil
}

// copyOf returns how p's links map onto its original's.
func (ct *commitTx) copyOf(p *storage.Page) (copyOf, error) {
	c := copyOf{dup: p.Class.Duplicate()}
	if !ct.e.o.SkipDuplicateLinks {
		return c, nil
	}
	if c.dup && p.DuplicateOf != "" {
		c.mapping, c.mapped = mirror.Infer(p.ServedURL(), p.DuplicateOf)
		c.mapped = c.mapped && !c.mapping.Identity()
	}
	if !c.dup {
		m, ok, err := ct.e.links.presumedCopy(ct, p)
		if err != nil || !ok {
			return c, err
		}
		c.dup, c.mapping, c.mapped = true, m, true
	}
	return c, nil
}

// duplicateLink applies the duplicate rules to link cu of copy p: done
// reports that the link is dealt with (seen, out of scope, skipped, or
// waiting on a counterpart queued now); otherwise it is followed.
func (ct *commitTx) duplicateLink(cu string, p *storage.Page, c copyOf) (done bool, err error) {
	if seen, err := ct.seen(cu); err != nil || seen {
		return seen, err
	}
	// A link skipped as a copy already (hub pages are linked from every
	// page) keeps its skip record while its counterpart stands; it is
	// fetched only as a sample.
	already, err := standingSkip(ct.tx, cu)
	if err != nil {
		return false, err
	}
	if !ct.e.inScope(cu) {
		return true, nil
	}
	sample := false
	if c.mapped {
		if cp, ok := c.mapping.Apply(cu); ok && cp != cu {
			if ct.e.nearFollows(c.mapping) {
				return false, nil // the copy side is fetched, or the monitor fired: followed
			}
			var done bool
			done, sample, err = ct.counterpartLink(cu, cp, p, c.mapping, already)
			if err != nil || done {
				return done, err
			}
		}
	}
	// A sample, or a duplicate's link with no known counterpart (which may
	// lead to content the original does not have): follow it.
	return already && !sample, nil
}

// counterpartLink handles link cu of copy p whose counterpart under m is cp.
func (ct *commitTx) counterpartLink(cu, cp string, p *storage.Page, m mirror.Mapping, already bool) (done, sample bool, err error) {
	cpID, usable, err := counterpartUsable(ct.tx, cp)
	if err != nil {
		return false, false, err
	}
	// A pair of index pages cannot tell whether one side drops the other's
	// extensions ("a" for "a.html"): a counterpart known under the other
	// form is the one.
	for _, alt := range mirror.ExtAlternates(cp) {
		if usable {
			break
		}
		if id, ok, err := counterpartUsable(ct.tx, alt); err != nil {
			return false, false, err
		} else if ok {
			cp, cpID, usable = alt, id, true
		}
	}
	if usable {
		if sample, err = ct.e.links.sample(ct, cpID, m); err != nil || sample {
			return false, sample, err
		}
		if already {
			return true, false, nil
		}
		if done, err := ct.nearSample(cu, cp, cpID, p, m); err != nil || done {
			return done, false, err
		}
		return true, false, ct.skip(cu, cp, cpID, p, p.Similarity)
	}
	if !ct.e.links.waits(m) {
		return false, false, nil
	}
	// Across hosts, a counterpart nobody has linked to yet is queued on the
	// original and the copy waits on it (it is fetched if the counterpart
	// fails): the copy host does not race ahead of a busy original.
	item, queued, err := ct.e.follow(ct.tx, cp, p.Depth+1, p.URL)
	if err != nil || !queued {
		return false, false, err
	}
	ct.queue(item)
	if already {
		return true, false, nil
	}
	// Its counterpart is only queued: a pick of the near-duplicate link
	// monitor waits on it, to be fetched as a sample (nearWaiting).
	key, err := ct.nearPick(cu, cp, m)
	if err != nil {
		return false, false, err
	}
	return true, false, ct.skipAs(cu, cp, item.ID, p, p.Similarity, key)
}

// mirrorLinks is the policy with mirror detection.
type mirrorLinks struct{ m *mirrorRules }

// presumedCopy: a page on the copy side of a mirror candidate whose
// counterpart is known is presumed a copy until the evidence says otherwise.
func (l mirrorLinks) presumedCopy(ct *commitTx, p *storage.Page) (mirror.Mapping, bool, error) {
	m, ok := l.m.det.CopyMapping(p.URL)
	if !ok {
		return m, false, nil
	}
	cp, ok := m.Apply(p.URL)
	if !ok {
		return m, false, nil
	}
	_, seen, err := ct.tx.SeenID(cp)
	return m, seen, err
}

func (l mirrorLinks) decided(ct *commitTx, cu string, via *storage.Page) (bool, bool, error) {
	return l.m.skipLink(ct, cu, via)
}

// sample: while the mapping is an undecided mirror candidate, a few copies
// are fetched to verify it: copies whose counterpart was fetched with
// content already, so that each sample is a comparison (a counterpart that
// is only queued may turn out missing, and the sample wasted).
func (l mirrorLinks) sample(ct *commitTx, cpID uint64, m mirror.Mapping) (bool, error) {
	key := mirror.Key(m)
	if l.m.det.Halted(key) {
		return true, nil // the loss monitor stopped its skipping: fetched
	}
	if short, err := l.m.tooShort(ct.tx, key, cpID); err != nil || short {
		return short, err
	}
	cmp, err := comparable(ct.tx, cpID)
	if err != nil || !cmp {
		return false, err
	}
	if pc := ct.proposed; pc != nil && pc.Key == key {
		// A shared crawl's candidate that this page proposes reaches the
		// detector through the log, after the commit: its links are
		// sampled as a new candidate's would be.
		ct.proposedSamples++
		return ct.proposedSamples <= l.m.det.MaxCompared(), nil
	}
	return l.m.det.WantSample(key), nil
}

func (l mirrorLinks) waits(m mirror.Mapping) bool {
	return !m.SameHost() && !l.m.det.Halted(mirror.Key(m))
}

// counterpartUsable reports whether counterpart cp is known (queued or
// fetched) and has not failed. On a decided mirror an unknown counterpart is
// queued on the original first (mirrorRules.counterpart), so the copy is
// fetched only if the original turns out not to have the page.
func counterpartUsable(tx interface {
	SeenSet
	PageRecords
}, cp string) (uint64, bool, error) {
	id, seen, err := tx.SeenID(cp)
	if err != nil || !seen {
		return 0, false, err
	}
	rec, err := tx.GetPage(id)
	if err == nil && (rec.Failed() || rec.Class == storage.ClassMirrorSkipped) {
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

// standingSkip reports whether cu has a skip record whose counterpart can
// still stand in for it (known, not failed, not skipped itself). A skip whose
// counterpart failed without queuing it (a dependent lost, as stores written
// before dependents were keyed by URL could lose them) does not stand: the
// link is then handled as new.
func standingSkip(tx Tx, cu string) (bool, error) {
	rec, err := tx.GetSkipped(cu)
	if err != nil || rec == nil {
		return false, err
	}
	_, usable, err := counterpartUsable(tx, rec.DuplicateOf)
	return usable, err
}

// comparable reports whether page id was fetched with content that a copy
// can be compared with.
func comparable(tx PageRecords, id uint64) (bool, error) {
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
	return p.Status == 200 && p.Words > 0 && p.Class.Content()
}
