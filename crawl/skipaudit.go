package crawl

import (
	"context"
	"errors"
	"fmt"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// The skip audit (docs/MIRRORS.md, "Before the crawl ends: the skip
// audit"): a skipped URL is represented by its counterpart only if the
// counterpart is a kept page, fetched and recorded. The rules that skip
// (links.go, mirror.go) queue a copy again when its counterpart fails or is
// skipped itself, but in a shared crawl that is two transactions on two
// workers (a copy may be added as waiting on a page between the other
// worker's skip or failure of that page and its read of the waiting list),
// and a store written by an older version may hold such a skip. So before a
// run ends with its frontier exhausted, every standing skip whose
// counterpart is not kept is queued again, and the crawl goes on; repeated
// until none is left. Each URL is released at most once a run, which bounds
// the rounds.

// auditSkips turns the audit off (tests: the loss it prevents).
var auditSkips = true

// auditBatch is the number of skip records checked in one transaction.
const auditBatch = 256

// skipAudit is the audit's state over a run.
type skipAudit struct {
	released map[string]bool // URLs released (each at most once)
	total    int
	rounds   int // audits run (each reads every skip record once)
}

// auditEnd runs the audit when the run's workers stopped because the
// frontier ran out of work (not cancelled, not failed, nothing queued). It
// reports whether it queued URLs: the workers are then started again.
func (e *Engine) auditEnd(ctx context.Context) bool {
	if !auditSkips || ctx.Err() != nil || e.fatal() != nil {
		return false
	}
	if st := e.fr.Stats(); st.Err != nil || st.Queued > 0 {
		return false
	}
	n, err := e.releaseStandingSkips()
	if err != nil {
		e.setFatal(fmt.Errorf("skip audit: %w", err))
		return false
	}
	if n == 0 {
		return false
	}
	e.logger.Info("skips released before the end: their counterparts were not kept pages; the crawl goes on",
		"count", n, "released_in_run", e.audit.total)
	if r, ok := e.fr.(interface{ Reopen() }); ok {
		r.Reopen() // a shared frontier stops itself when the crawl looks done
	}
	return true
}

// releaseStandingSkips queues again the skipped URLs (skip records of links,
// and the worker's own records of URLs skipped at lease time) whose
// counterpart is not a kept page, and returns how many it queued.
func (e *Engine) releaseStandingSkips() (int, error) {
	if e.audit.released == nil {
		e.audit.released = map[string]bool{}
	}
	e.audit.rounds++
	var recs []storage.Page
	collect := func(p *storage.Page) error {
		if p.Class == storage.ClassMirrorSkipped && !e.audit.released[p.URL] {
			recs = append(recs, *p)
		}
		return nil
	}
	if err := e.st.ForEachSkipped(e.sctx, collect); err != nil {
		return 0, err
	}
	if err := e.indexedPages(func(string) bool { return true }, collect); err != nil {
		return 0, err
	}
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	n := 0
	for start := 0; start < len(recs); start += auditBatch {
		batch := recs[start:min(start+auditBatch, len(recs))]
		var released []string
		got, err := e.queueAllFrom(func(tx Tx) ([]frontier.Item, error) {
			released = released[:0]
			var items []frontier.Item
			for i := range batch {
				it, ok, err := e.releaseSkip(tx, &batch[i])
				if err != nil {
					return nil, err
				}
				if ok {
					items = append(items, it)
					released = append(released, batch[i].URL)
				}
			}
			return items, nil
		})
		if err != nil {
			return n, err
		}
		for _, u := range released {
			e.audit.released[u] = true
		}
		n += got
	}
	e.audit.total += n
	return n, nil
}

// releaseSkip queues skipped URL rec again unless its counterpart is a kept
// page.
func (e *Engine) releaseSkip(tx Tx, rec *storage.Page) (frontier.Item, bool, error) {
	kept, err := counterpartKept(tx, rec.DuplicateOf)
	if err != nil || kept {
		return frontier.Item{}, false, err
	}
	// A skip record of a link has no page id (the URL is not marked seen);
	// a URL skipped at lease time has its own.
	d := storage.Dependent{ID: rec.ID, URL: rec.URL, Depth: rec.Depth, Via: rec.Via, Seen: rec.ID != 0}
	return e.requeueDependent(tx, d)
}

// counterpartKept reports whether cp was fetched and recorded as a page
// that stands for its copies: not failed, not skipped itself, not merely
// queued (at the end of a crawl, a counterpart without a record was never
// fetched).
func counterpartKept(tx Tx, cp string) (bool, error) {
	id, seen, err := tx.SeenID(cp)
	if err != nil || !seen {
		return false, err
	}
	rec, err := tx.GetPage(id)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return !rec.Failed() && rec.Class != storage.ClassMirrorSkipped, nil
}
