package crawl

import (
	"errors"
	"slices"
	"sync"

	"github.com/horseshoe-crawler/horseshoe/storage"
)

// pageIndex names the page records that the rules acting on a mirror
// decision look for, so that they do not scan every page record of the store
// (issue 29: one scan per decision, withdrawal and skip audit, over all
// pages): the failed pages (onDecided) and the skip records of URLs skipped
// at lease time (skippedUnder, the skip audit).
//
// It is a superset: every such record is noted as it is written (putPage,
// inside the transaction, so a record of a transaction that is then rolled
// back is noted too), and the records found at its one build (a scan of the
// store at the first use in a run, which finds those of earlier runs). Each
// use reads the records of the candidates it names by id (keyed reads) and
// acts on what the store holds, as the scan did; a candidate whose record no
// longer qualifies is dropped.
//
// Memory: one entry per failed page and per URL skipped at lease time (not
// per page): its id and URL, about 100 bytes with the map's share.
type pageIndex struct {
	mu    sync.Mutex
	built bool
	ids   map[uint64]indexedPage
	gen   uint64 // notes so far: a candidate is dropped only if not noted again since its read
}

// indexedPage is one candidate: its URL (to filter by prefix before any
// read) and the generation of its latest note.
type indexedPage struct {
	url string
	gen uint64
}

// indexable reports whether a page record is one pageIndex names.
func indexable(p *storage.Page) bool {
	return p.Failed() || (p.Class == storage.ClassMirrorSkipped && p.ID != 0)
}

// note adds p as a candidate when it is one.
func (x *pageIndex) note(p *storage.Page) {
	if !indexable(p) {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ids == nil {
		x.ids = map[uint64]indexedPage{}
	}
	x.gen++
	x.ids[p.ID] = indexedPage{url: p.URL, gen: x.gen}
}

// putPage writes a page record and notes it in the engine's page index:
// every page record the engine writes goes through it.
func (e *Engine) putPage(tx Tx, p *storage.Page) error {
	if err := tx.PutPage(p); err != nil {
		return err
	}
	e.pidx.note(p)
	return nil
}

// indexedPages calls fn, in id order (the order of a scan), with the stored
// record of every candidate whose URL match accepts and whose record is
// still indexable. The index is built at its first use in a run.
func (e *Engine) indexedPages(match func(url string) bool, fn func(*storage.Page) error) error {
	x := &e.pidx
	x.mu.Lock()
	if !x.built {
		x.mu.Unlock()
		// Outside the lock: notes made meanwhile are kept (a superset).
		err := e.st.ForEachPage(e.sctx, func(p *storage.Page) error {
			x.note(p)
			return nil
		})
		if err != nil {
			return err
		}
		x.mu.Lock()
		x.built = true
	}
	type cand struct {
		id  uint64
		gen uint64
	}
	var cands []cand
	for id, ip := range x.ids {
		if match(ip.url) {
			cands = append(cands, cand{id, ip.gen})
		}
	}
	x.mu.Unlock()
	slices.SortFunc(cands, func(a, b cand) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	page := e.st.Page
	if lp, ok := e.st.(LocalPageReader); ok {
		page = lp.LocalPage
	}
	for _, c := range cands {
		p, err := page(e.sctx, c.id)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		if err != nil || !indexable(p) {
			x.mu.Lock()
			if ip, ok := x.ids[c.id]; ok && ip.gen == c.gen {
				delete(x.ids, c.id)
			}
			x.mu.Unlock()
			continue
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}
