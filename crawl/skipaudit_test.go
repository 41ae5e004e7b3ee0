package crawl

import (
	"errors"
	"slices"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestSkipAuditRule: before a crawl ends, a skipped URL is queued again
// unless its counterpart is a kept page (fetched and recorded, not failed,
// not skipped itself); a skip of a link and a URL skipped at lease time
// alike, each released at most once. Fakes of the store and frontier.
func TestSkipAuditRule(t *testing.T) {
	cases := []struct {
		name    string
		class   storage.Class // the counterpart's record ("": seen, never fetched)
		status  int
		unknown bool // the counterpart is not even seen
		release bool
	}{
		{name: "unique", class: storage.ClassUnique, status: 200},
		{name: "near duplicate", class: storage.ClassNear, status: 200},
		{name: "exact duplicate", class: storage.ClassExact, status: 200},
		{name: "not html", class: storage.ClassNotHTML, status: 200},
		{name: "failed", class: storage.ClassError, status: 404, release: true},
		{name: "no answer", class: storage.ClassError, release: true},
		{name: "redirected", class: storage.ClassUnique, status: 301, release: true},
		{name: "robots disallowed", class: storage.ClassRobotsDisallowed, release: true},
		{name: "skipped itself", class: storage.ClassMirrorSkipped, release: true},
		{name: "queued, never fetched", release: true},
		{name: "unknown", unknown: true, release: true},
	}
	for _, c := range cases {
		for _, leased := range []bool{false, true} {
			name := c.name + "/link"
			if leased {
				name = c.name + "/leased"
			}
			t.Run(name, func(t *testing.T) {
				e, s, f := testEngine(t, Options{SkipDuplicateLinks: true})
				const cp, cu = "http://a.test/x", "http://b.test/x"
				var cpID uint64
				if !c.unknown {
					cpID = s.NewID()
					s.seen[cp] = cpID
				}
				if c.class != "" {
					s.pages[cpID] = &storage.Page{ID: cpID, URL: cp, Class: c.class, Status: c.status, Words: 50}
				}
				if c.class == storage.ClassMirrorSkipped {
					// skipped in favour of a kept page: it stands itself
					s.pages[cpID].DuplicateOf = "http://c.test/x"
					known(s, "http://c.test/x", storage.ClassUnique)
				}
				rec := &storage.Page{URL: cu, Depth: 2, Via: "http://b.test/", Class: storage.ClassMirrorSkipped, DuplicateOf: cp, OriginalID: cpID}
				if leased {
					rec.ID = s.NewID()
					s.seen[cu] = rec.ID
					s.pages[rec.ID] = rec
				} else {
					s.skipped[cu] = rec
				}
				n, err := e.releaseStandingSkips()
				if err != nil {
					t.Fatal(err)
				}
				queued := slices.Contains(s.queued(), cu) && slices.Contains(f.pushedURLs(), cu)
				if got := n == 1 && queued; got != c.release || (n != 0) != c.release {
					t.Fatalf("released %d, %s queued and pushed %v; want released %v (queue %v)", n, cu, queued, c.release, s.queued())
				}
				stands := s.skipped[cu] != nil
				if leased {
					stands = s.pages[rec.ID] != nil
				}
				if stands == c.release {
					t.Errorf("skip record left %v, want %v", stands, !c.release)
				}
				if !c.release {
					return
				}
				if leased && s.seen[cu] != rec.ID {
					t.Errorf("queued under id %d, want its own %d", s.seen[cu], rec.ID)
				}
				// Skipped again (the counterpart still not kept): not released
				// a second time in this run.
				s.skipped[cu] = rec
				if leased {
					s.pages[rec.ID] = rec
				}
				s.queue = map[string]frontier.Item{}
				if n, err := e.releaseStandingSkips(); err != nil || n != 0 {
					t.Errorf("second audit released %d (err %v), want 0: each skip at most once", n, err)
				}
			})
		}
	}
}

// TestSkipAuditRunsWhenTheFrontierRanOut: the audit runs only when the run
// ended because nothing was left to do, and then asks for another round
// exactly when it queued something.
func TestSkipAuditRunsWhenTheFrontierRanOut(t *testing.T) {
	e, s, f := testEngine(t, Options{SkipDuplicateLinks: true})
	s.skipped["http://b.test/x"] = &storage.Page{URL: "http://b.test/x", Class: storage.ClassMirrorSkipped, DuplicateOf: "http://a.test/x"}
	f.statsErr = errors.New("queue unreadable")
	if e.auditEnd(t.Context()) || len(s.queue) != 0 {
		t.Fatalf("audited with the queue unknown (queue %v)", s.queued())
	}
	f.statsErr = nil
	if !e.auditEnd(t.Context()) || !slices.Equal(s.queued(), []string{"http://b.test/x"}) {
		t.Fatalf("queue %v, want b.test/x released and another round", s.queued())
	}
	if e.auditEnd(t.Context()) {
		t.Error("another round asked for with nothing released")
	}
}
