package crawl

import (
	"encoding/json"
	"math"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/mirror"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// The near-duplicate link monitor's actions (mirror.LinkMonitor holds its
// state and arithmetic). A near-duplicate's link whose counterpart on the
// original is known is recorded skipped (links.go); the monitor picks a
// share of them by seed and fetches those instead, each once its
// counterpart has content, so that the pick is compared with a page in the
// index. A pick the crawl keeps as unique (not a duplicate of its
// counterpart, nor of anything else) fires the monitor for its prefix pair:
// the links skipped under the pair are queued, and the pair's links met
// later are followed (nearFollows).

// fetchCopies reports whether the copy policy is fetch: a decided mirror's
// pages and a near-duplicate's links are all fetched (detection only).
func (e *Engine) fetchCopies() bool { return e.near != nil && !e.near.Suppress() }

// verifyPick reports whether copy cu, whose counterpart is cp, is one of
// the share of a copy's pages the verify policy fetches (the same pick as
// the near-duplicate link monitor's, at mirror.verify_share).
func (e *Engine) verifyPick(cu, cp string) bool {
	return e.near != nil && e.near.Options().Policy == mirror.PolicyVerify && e.near.Pick(cu, cp)
}

// nearFollows reports whether links under prefix pair m are followed rather
// than suppressed: the policy fetches the copy side, or the monitor fired
// for the pair.
func (e *Engine) nearFollows(m mirror.Mapping) bool {
	return e.fetchCopies() || (e.near != nil && e.near.Fired(mirror.Key(m)))
}

// nearPick returns the prefix pair key under which copy cu (counterpart cp,
// mapping m) is a pick of the monitor, or "" when it is not picked.
func (ct *commitTx) nearPick(cu, cp string, m mirror.Mapping) (string, error) {
	e := ct.e
	if e.near == nil || !e.near.Pick(cu, cp) {
		return "", nil
	}
	key := mirror.Key(m)
	if _, known := e.near.Pair(key); !known {
		if err := ct.tx.PutEvidence("nearlinks", key, e.near.Register(key, m)); err != nil {
			return "", err
		}
	}
	return key, nil
}

// nearSample handles a link the duplicate rules would skip (cu on copy p,
// counterpart cp, known and usable, under mapping m): a pick of the monitor
// is queued as its sample if cp has content, or skipped waiting on cp (and
// queued as a sample when cp has content: nearWaiting). done reports that
// the link was dealt with.
func (ct *commitTx) nearSample(cu, cp string, cpID uint64, p *storage.Page, m mirror.Mapping) (done bool, err error) {
	key, err := ct.nearPick(cu, cp, m)
	if err != nil || key == "" {
		return false, err
	}
	ready, err := comparable(ct.tx, cpID)
	if err != nil {
		return false, err
	}
	if !ready {
		return true, ct.skipAs(cu, cp, cpID, p, p.Similarity, key)
	}
	if p.Depth+1 > ct.e.o.MaxDepth {
		return false, nil
	}
	it, ok, err := ct.e.enqueueSample(ct.tx, cu, p.Depth+1, p.URL, false, 0, key)
	if ok {
		ct.queue(it)
	}
	return ok, err
}

// nearContent acts on page p, with content: a sample of the monitor is
// recorded (the monitor fires when p is not a duplicate), and the picks
// waiting on p are queued as samples.
func (ct *commitTx) nearContent(p *storage.Page) error {
	e := ct.e
	if e.near == nil || !e.o.SkipDuplicateLinks {
		return nil // no link is suppressed, none picked
	}
	if key := ct.it.Sample; key != "" {
		pair, _ := e.near.Pair(key)
		fired := e.near.Record(key, pair.Mapping, p.Class == storage.ClassUnique)
		now, _ := e.near.Pair(key)
		if err := ct.tx.PutEvidence("nearlinks", key, now); err != nil {
			return err
		}
		if fired {
			e.logger.Info("near-duplicate links followed: a sampled copy was not a duplicate of its counterpart",
				"sample", p.URL, "copy", pair.Mapping.FromOrigin+pair.Mapping.FromPrefix,
				"original", pair.Mapping.ToOrigin+pair.Mapping.ToPrefix)
			ct.nearFired = append(ct.nearFired, pair.Mapping)
		}
	}
	return ct.nearWaiting(p)
}

// nearWaiting queues, as the monitor's samples, the picks skipped while
// their counterpart p was queued.
func (ct *commitTx) nearWaiting(p *storage.Page) error {
	if !hasContent(p) {
		return nil
	}
	deps, err := ct.tx.Dependents(p.URL)
	if err != nil {
		return err
	}
	for _, d := range deps {
		if d.Sample == "" {
			continue
		}
		if err := ct.tx.DeleteDependent(p.URL, d); err != nil {
			return err
		}
		// Not queued when it was meanwhile (the monitor fired).
		it, ok, err := ct.e.enqueueSample(ct.tx, d.URL, d.Depth, d.Via, false, 0, d.Sample)
		if err != nil {
			return err
		}
		if ok {
			ct.queue(it)
		}
	}
	return nil
}

// nearCommitted follows the links skipped under the prefix pairs whose
// monitor fired in ct. Called with commitMu held.
func (e *Engine) nearCommitted(ct *commitTx) {
	for _, mp := range ct.nearFired {
		deps, ok := e.skippedUnderMapping(mp, true)
		if !ok {
			return
		}
		n, err := e.queueAll(len(deps), func(tx Tx, i int) (frontier.Item, bool, error) {
			return e.requeueDependent(tx, deps[i].Dependent)
		})
		if err != nil {
			e.setFatal(err)
			return
		}
		e.logger.Info("queued skipped near-duplicate links again", "count", n, "copy", mp.FromOrigin+mp.FromPrefix)
	}
}

// restoreNear reloads the monitor's pairs (a resumed crawl).
func (e *Engine) restoreNear() error {
	if e.near == nil {
		return nil
	}
	return e.st.ForEachEvidence(e.sctx, "nearlinks", func(_ string, v []byte) error {
		var p mirror.LinkPair
		if err := json.Unmarshal(v, &p); err != nil {
			return err
		}
		e.near.Restore(p)
		return nil
	})
}

// recordPolicy stores the copy policy for the report (copyPolicyReport).
func (e *Engine) recordPolicy() error {
	if e.near == nil {
		return nil
	}
	return e.st.Update(e.sctx, func(tx Tx) error {
		return tx.PutEvidence("copypolicy", "", e.near.Options())
	})
}

// copyPolicyReport reads the copy policy and the monitor's pairs from the
// store (nil when no crawl recorded them).
func copyPolicyReport(db *storage.DB) (*report.CopyPolicy, error) {
	var o *mirror.LinkOptions
	if err := db.ForEachEvidence("copypolicy", func(_ string, v []byte) error {
		o = new(mirror.LinkOptions)
		return json.Unmarshal(v, o)
	}); err != nil || o == nil {
		return nil, err
	}
	r := o.Rate()
	c := &report.CopyPolicy{Policy: string(o.Policy), Rate: r, Seed: o.Seed, Pairs: []report.LinkPair{}}
	loss, at := mirror.WorstExpectedLoss(r)
	if math.IsInf(loss, 1) {
		c.Unbounded = true
	} else {
		c.ExpectedLoss, c.ExpectedLossAtD = loss, at
	}
	err := db.ForEachEvidence("nearlinks", func(_ string, v []byte) error {
		var p mirror.LinkPair
		if err := json.Unmarshal(v, &p); err != nil {
			return err
		}
		mp := p.Mapping
		c.Pairs = append(c.Pairs, report.LinkPair{Copy: mp.FromOrigin + mp.FromPrefix, Original: mp.ToOrigin + mp.ToPrefix,
			Sampled: p.Sampled, Events: p.Events, Fired: p.Fired})
		return nil
	})
	return c, err
}
