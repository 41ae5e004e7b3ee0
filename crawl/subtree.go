package crawl

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/mirror"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Missing subtrees (issue 31 item 2, docs/MIRRORS.md). mirror.Subtrees
// decides which directories a host of a mirror pair lacks, from the answers
// of the URLs under them; the engine feeds it every page recorded on a host
// that is a side of a mirror candidate, stores what it decides as evidence
// of kind subtreeEvidence, and skips, at lease time, the URLs under a
// standing rule in favour of their counterparts on the other side of the
// pair: the original's counterpart stands for a mirror URL, as for any
// mirror skip; the copy's page is fetched instead of an original URL (the
// content the original lacks). Nothing is lost silently: a skipped URL is
// recorded (mirror_skipped, method "subtree", its counterpart named) and
// waits on its counterpart, queued again if the counterpart fails; a URL
// whose counterpart failed already is requested.
//
// In a shared crawl each worker learns from the pages it records (the
// rule's error rate holds for any worker's sample: docs/MIRRORS.md).

// subtreeEvidence is the storage kind of the learned subtrees,
// subtreeServedEvidence that of the directories a page was served under
// (the rule's counter-evidence, kept for a resumed crawl).
const (
	subtreeEvidence       = "subtree"
	subtreeServedEvidence = "subtree_served"
)

// subtreeRecord is a learned subtree as stored: the rule and where it
// stood in its pair when decided.
type subtreeRecord struct {
	mirror.SubtreeRule
	OnCopy      bool   `json:"on_copy"`               // the host lacking it was the side presumed the copy
	Counterpart string `json:"counterpart,omitempty"` // the prefix on the other side of the pair
}

// subtrees records the evidence page p's answer holds: not found under a
// directory, or a page served there. It runs in the page's commit, for
// every page (a page served before its host was seen to be a side of a
// mirror pair is counter-evidence all the same).
func (m *mirrorRules) subtrees(ct *commitTx, p *storage.Page) error {
	u := p.ServedURL()
	var changed []mirror.SubtreeRule
	switch {
	case lacking(p):
		changed = m.sub.Lack(u)
	case p.Status >= 200 && p.Status < 300:
		var fresh []string
		changed, fresh = m.sub.ServedNew(u)
		// Kept for a resumed crawl: one small record per directory.
		for _, prefix := range fresh {
			if err := ct.tx.PutEvidence(subtreeServedEvidence, prefix, true); err != nil {
				return err
			}
		}
	}
	for _, r := range changed {
		rec := subtreeRecord{SubtreeRule: r}
		_, cp, _, onCopy, paired := m.det.Across(r.Prefix)
		if paired {
			rec.OnCopy, rec.Counterpart = onCopy, cp
		}
		switch {
		case !paired:
			// A host's dead directory, acted on only if the host
			// becomes a side of a mirror pair.
			m.e.logger.Debug("subtree missing", "prefix", r.Prefix, "lacks", r.Lacks, "withdrawn", r.Withdrawn)
		case r.Active():
			m.e.logger.Info("subtree missing on a mirror side: its URLs are skipped for their counterparts",
				"prefix", r.Prefix, "lacks", r.Lacks, "error_rate", r.ErrorRate, "counterpart", rec.Counterpart)
		default:
			m.e.logger.Info("subtree found after all: its URLs are requested again", "prefix", r.Prefix, "served", r.Counter)
		}
		if err := ct.tx.PutEvidence(subtreeEvidence, r.Prefix, rec); err != nil {
			return err
		}
	}
	return nil
}

// restoreSubtrees loads the stored rules into the learner.
func (m *mirrorRules) restoreSubtrees() error {
	recs, err := restoreEvidence[subtreeRecord](m.e, subtreeEvidence)
	if err != nil {
		return fmt.Errorf("subtree evidence: %w", err)
	}
	rules := make([]mirror.SubtreeRule, len(recs))
	for i, r := range recs {
		rules[i] = r.SubtreeRule
	}
	m.sub.Restore(rules)
	var served []string
	err = m.e.st.ForEachEvidence(m.e.sctx, subtreeServedEvidence, func(k string, _ []byte) error {
		served = append(served, k)
		return nil
	})
	if err != nil {
		return fmt.Errorf("subtree evidence: %w", err)
	}
	m.sub.RestoreServed(served)
	return nil
}

// skipMissing records a leased URL under a missing subtree as skipped in
// favour of its counterpart on the other side of its pair, queueing the
// counterpart if it is new. It reports whether it did (the attempt then
// says how to release the lease). A counterpart that failed cannot stand
// for the URL: the URL is requested.
func (m *mirrorRules) skipMissing(it *frontier.Item) (attempt, bool) {
	r, ok := m.sub.Missing(it.URL)
	if !ok {
		return attempt{}, false
	}
	_, cp, head, onCopy, ok := m.det.Across(it.URL)
	// A rule at or above the side's own prefix would skip the whole side:
	// a side that lacks everything is no mirror (and a resumed crawl's
	// first answers may all be gap probes of shared dead links). The fetch
	// policy requests the copy's pages: a mirror's missing subtree is
	// requested too (the original's never is: the copy's page holds what
	// it lacks).
	if !ok || len(r.Prefix) <= len(head) || (onCopy && m.e.fetchCopies()) {
		return attempt{}, false
	}
	if _, both := m.sub.Missing(cp); both {
		// Both sides lack the subtree (links dead on both): skipping for
		// the counterpart would request the counterpart, fail, and queue
		// this URL again, two requests for one.
		return attempt{}, false
	}
	e := m.e
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	requeue := attempt{settled: true, release: frontier.Outcome{Requeue: true}}
	if e.fatal() != nil {
		return requeue, true
	}
	skipped := false
	var pushed []frontier.Item
	err := e.st.Update(e.sctx, func(tx Tx) error {
		skipped = false
		pushed = pushed[:0]
		cpID, usable, queued, err := m.standIn(tx, cp, it)
		if queued != nil {
			pushed = append(pushed, *queued)
		}
		if err != nil || !usable {
			return err
		}
		skipped = true
		rec := &storage.Page{
			ID: it.ID, URL: it.URL, Host: it.Host, Depth: it.Depth, Via: it.Via,
			Class: storage.ClassMirrorSkipped, DuplicateOf: cp, OriginalID: cpID, Method: "subtree",
			Error:     "not requested: " + r.Prefix + " is missing on this host (" + fmt.Sprint(r.Lacks) + " URLs not found under it, none served)",
			FetchedAt: time.Now().UTC(),
		}
		if err := e.putPage(tx, rec); err != nil {
			return err
		}
		if err := tx.DeleteQueue(it.Host, it.Seq); err != nil {
			return err
		}
		if err := tx.AddDependent(cp, storage.Dependent{ID: it.ID, URL: it.URL, Depth: it.Depth, Via: it.Via, Seen: true}); err != nil {
			return err
		}
		// The copies skipped waiting on this URL are queued (a skipped
		// page stands for nothing), the counterpart among them when it
		// was skipped in this URL's favour.
		waiting, err := e.queueWaiting(tx, it.URL)
		pushed = append(pushed, waiting...)
		return err
	})
	if err != nil {
		e.setFatal(err)
		return requeue, true
	}
	if !skipped {
		e.push(pushed)
		return attempt{}, false
	}
	e.countClass(storage.ClassMirrorSkipped, 1)
	return attempt{settled: true, pushed: pushed}, true
}

// standIn returns whether counterpart cp can stand for leased URL it, and
// its page id: fetched with content, queued, new (queued now, in scope), or
// itself skipped as a mirror's copy waiting on it (queued again by the
// skip). queued is the new queue entry to push after the commit.
func (m *mirrorRules) standIn(tx Tx, cp string, it *frontier.Item) (uint64, bool, *frontier.Item, error) {
	id, usable, err := counterpartUsable(tx, cp)
	if err != nil || usable {
		return id, usable, nil, err
	}
	_, seen, err := tx.SeenID(cp)
	if err != nil {
		return 0, false, nil, err
	}
	if !seen {
		q, ok, err := m.e.follow(tx, cp, it.Depth, it.Via)
		if err != nil || !ok {
			return 0, false, nil, err
		}
		return q.ID, true, &q, nil
	}
	rec, err := tx.GetPage(id)
	if err == storage.ErrNotFound {
		return 0, false, nil, nil
	}
	if err != nil {
		return 0, false, nil, err
	}
	// Skipped as a mirror's copy waiting on it: queued again by the skip.
	// Not one skipped under a missing subtree itself (both sides lack
	// the path): each would queue the other again, for ever; it is
	// requested.
	return id, rec.Class == storage.ClassMirrorSkipped && rec.Method != "subtree" && rec.DuplicateOf == it.URL, nil, nil
}

// subtreeReport returns the learned subtrees (standing or withdrawn) on
// the sides of mirror pairs, each
// with its host's role in the mirrors reported (the role when it was
// decided if no mirror holds it: the direction may be decided after it).
func subtreeReport(db *storage.DB, mirrors []report.Mirror) ([]report.MissingSubtree, error) {
	out := []report.MissingSubtree{}
	err := db.ForEachEvidence(subtreeEvidence, func(_ string, v []byte) error {
		var r subtreeRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		if !r.Decided {
			return nil
		}
		side, paired := "original", r.Counterpart != ""
		if r.OnCopy {
			side = "mirror"
		}
		_, hostPath, _ := strings.Cut(r.Prefix, "://")
		for _, m := range mirrors {
			switch {
			case strings.HasPrefix(hostPath, m.Host+m.Prefix):
				side = "mirror"
			case strings.HasPrefix(hostPath, m.MirrorOf+m.OriginalPrefix):
				side = "original"
			default:
				continue
			}
			paired = true
			break
		}
		if !paired {
			return nil // a dead directory of a host that is no mirror's side
		}
		out = append(out, report.MissingSubtree{Prefix: r.Prefix, Side: side, Counterpart: r.Counterpart,
			Lacks: r.Lacks, Needed: r.Needed, ErrorRate: r.ErrorRate, Examples: append([]string{}, r.Examples...),
			Withdrawn: r.Withdrawn, Counter: r.Counter})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("subtree evidence: %w", err)
	}
	return out, nil
}
