package crawl

import (
	"slices"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/mirror"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// testEngine builds an engine over the fakes (no sockets, no disk).
func testEngine(t *testing.T, o Options) (*Engine, *fakeStore, *fakeFrontier) {
	t.Helper()
	det, err := dedup.New(dedup.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxDepth == 0 {
		o.MaxDepth = 10
	}
	s, f := newFakeStore(), newFakeFrontier()
	return NewShared(o, fakeDB{s}, f, nil, nil, det, LocalIndex(det), nil), s, f
}

// decidedMirror returns a mirror detector that has decided b.test a
// mirror of a.test; with pickNext, the next URL it would skip is drawn for
// the verification stream instead.
func decidedMirror(t *testing.T, pickNext bool) *mirror.Detector {
	t.Helper()
	det := mirror.NewDetector(mirror.Options{VerifyEvery: 2})
	key := det.Propose("http://b.test/", "http://a.test/")
	c, ok := det.Candidate(key)
	if !ok {
		t.Fatal("no candidate proposed")
	}
	c.Decided, c.Mirror = true, mirror.SideA
	if err := det.Restore([]mirror.Candidate{c}); err != nil {
		t.Fatal(err)
	}
	if pickNext && !det.Skip(key) {
		t.Fatal("the first URL under the decision was not skipped")
	}
	return det
}

// known records u as seen with a page record of class (status 200 and some
// words when it has content); class "" leaves u queued, without a record.
func known(s *fakeStore, u string, class storage.Class) uint64 {
	id := s.NewID()
	s.seen[u] = id
	if class != "" {
		p := &storage.Page{ID: id, URL: u, Class: class, Status: 200, Words: 50}
		if class == storage.ClassError {
			p.Status = 404
		}
		s.pages[id] = p
	}
	return id
}

// TestLinkPolicy drives the link rules with fakes: what each link of a
// committed page becomes (queued, skipped as a copy, nothing), under the
// plain policy and the mirror-aware one.
func TestLinkPolicy(t *testing.T) {
	unique := storage.Page{URL: "http://a.test/", Class: storage.ClassUnique, Status: 200, Depth: 1}
	copyPage := storage.Page{URL: "http://b.test/", Class: storage.ClassExact, Status: 200, Depth: 1,
		DuplicateOf: "http://a.test/", OriginalID: 1, Similarity: 1}
	onMirror := storage.Page{URL: "http://b.test/", Class: storage.ClassUnique, Status: 200, Depth: 1}
	tests := []struct {
		name    string
		mirror  *mirror.Detector
		noSkip  bool // SkipDuplicateLinks off
		setup   func(s *fakeStore)
		page    storage.Page
		links   []string
		queued  []string // URLs with a queue entry afterwards
		skips   []string // URLs with a skip record afterwards
		skipped int      // skip records the commit counted
		verify  bool     // the queued link is a verification pick
	}{
		{name: "unique page queues new links", page: unique,
			setup:  func(s *fakeStore) { known(s, "http://a.test/y", storage.ClassUnique) },
			links:  []string{"http://a.test/x", "http://a.test/y"},
			queued: []string{"http://a.test/x"}},
		{name: "nofollow page queues nothing", page: func() storage.Page { p := unique; p.NoFollow = true; return p }(),
			links: []string{"http://a.test/x"}},
		{name: "page at max depth queues nothing", page: func() storage.Page { p := unique; p.Depth = 10; return p }(),
			links: []string{"http://a.test/x"}},
		{name: "copy's link with a fetched counterpart is skipped", page: copyPage,
			setup: func(s *fakeStore) { known(s, "http://a.test/x", storage.ClassUnique) },
			links: []string{"http://b.test/x"}, skips: []string{"http://b.test/x"}, skipped: 1},
		{name: "copy's link with a queued counterpart is skipped", page: copyPage,
			setup: func(s *fakeStore) { known(s, "http://a.test/x", "") },
			links: []string{"http://b.test/x"}, skips: []string{"http://b.test/x"}, skipped: 1},
		{name: "copy's link whose counterpart failed is followed", page: copyPage,
			setup:  func(s *fakeStore) { known(s, "http://a.test/x", storage.ClassError) },
			links:  []string{"http://b.test/x"},
			queued: []string{"http://b.test/x"}},
		{name: "copy's link with an unknown counterpart is followed", page: copyPage,
			links: []string{"http://b.test/x"}, queued: []string{"http://b.test/x"}},
		{name: "counterpart known under its extension", page: copyPage,
			setup: func(s *fakeStore) { known(s, "http://a.test/x.html", storage.ClassUnique) },
			links: []string{"http://b.test/x"}, skips: []string{"http://b.test/x"}, skipped: 1},
		{name: "copy's links followed without skip_duplicate_links", page: copyPage, noSkip: true,
			setup:  func(s *fakeStore) { known(s, "http://a.test/x", storage.ClassUnique) },
			links:  []string{"http://b.test/x"},
			queued: []string{"http://b.test/x"}},
		{name: "a standing skip is not recorded again", page: copyPage,
			setup: func(s *fakeStore) {
				known(s, "http://a.test/x", storage.ClassUnique)
				s.skipped["http://b.test/x"] = &storage.Page{URL: "http://b.test/x", Class: storage.ClassMirrorSkipped, DuplicateOf: "http://a.test/x"}
				s.deps["http://a.test/x"] = []storage.Dependent{{URL: "http://b.test/x"}}
			},
			links: []string{"http://b.test/x"}, skips: []string{"http://b.test/x"}},
		{name: "mirror: unknown counterpart queued, the copy waits on it", page: copyPage, mirror: mirror.NewDetector(mirror.Options{}),
			links: []string{"http://b.test/x"}, queued: []string{"http://a.test/x"}, skips: []string{"http://b.test/x"}, skipped: 1},
		{name: "mirror decided: a unique page's link on the mirror is skipped", page: onMirror, mirror: decidedMirror(t, false),
			setup: func(s *fakeStore) { known(s, "http://a.test/x", storage.ClassUnique) },
			links: []string{"http://b.test/x"}, skips: []string{"http://b.test/x"}, skipped: 1},
		{name: "mirror decided: unknown counterpart queued and used", page: onMirror, mirror: decidedMirror(t, false),
			links: []string{"http://b.test/x"}, queued: []string{"http://a.test/x"}, skips: []string{"http://b.test/x"}, skipped: 1},
		{name: "mirror decided: a verification pick is fetched", page: onMirror, mirror: decidedMirror(t, true),
			setup: func(s *fakeStore) { known(s, "http://a.test/x", storage.ClassUnique) },
			links: []string{"http://b.test/x"}, queued: []string{"http://b.test/x"}, verify: true},
		{name: "plain: a unique page on a would-be mirror queues its links", page: onMirror,
			setup:  func(s *fakeStore) { known(s, "http://a.test/x", storage.ClassUnique) },
			links:  []string{"http://b.test/x"},
			queued: []string{"http://b.test/x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, s, _ := testEngine(t, Options{SkipDuplicateLinks: !tc.noSkip, Mirror: tc.mirror})
			known(s, "http://a.test/", storage.ClassUnique) // id 1: the copies' original
			if tc.setup != nil {
				tc.setup(s)
			}
			before := len(s.queue)
			p := tc.page
			p.ID = s.NewID()
			ct := &commitTx{e: e, tx: s, it: &frontier.Item{ID: p.ID, URL: p.URL}}
			if err := ct.links(&p, tc.links); err != nil {
				t.Fatal(err)
			}
			if got := s.queued(); !slices.Equal(got, tc.queued) {
				t.Errorf("queued %v, want %v", got, tc.queued)
			}
			if len(ct.pushed) != len(s.queue)-before {
				t.Errorf("%d entries to push, %d written", len(ct.pushed), len(s.queue)-before)
			}
			if got := s.skips(); !slices.Equal(got, tc.skips) {
				t.Errorf("skip records %v, want %v", got, tc.skips)
			}
			if ct.skipped != tc.skipped {
				t.Errorf("counted %d skips, want %d", ct.skipped, tc.skipped)
			}
			for _, u := range tc.skips {
				rec := s.skipped[u]
				if rec == nil {
					continue // reported above
				}
				deps := s.deps[rec.DuplicateOf]
				if !slices.ContainsFunc(deps, func(d storage.Dependent) bool { return d.URL == u }) {
					t.Errorf("%s skipped in favour of %s, but does not wait on it (dependents %v)", u, rec.DuplicateOf, deps)
				}
			}
			for _, it := range ct.pushed {
				if it.Verify != tc.verify {
					t.Errorf("%s: verify %v, want %v", it.URL, it.Verify, tc.verify)
				}
			}
		})
	}
}
