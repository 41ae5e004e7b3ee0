package crawl

import (
	"slices"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// A copy skipped while its counterpart was only queued waits on that
// counterpart; when a decided mirror then skips the counterpart itself at
// lease time, the copy must be queued: a skipped page stands for nothing,
// and the counterpart will neither be fetched nor fail. The corpus lost git's
// latest/technical/api-merge.html this way (skipped waiting on 2.39's page,
// itself skipped as a copy of the Debian build's, J 0.775 with it).
func TestLeasedSkipReleasesCopiesWaitingOnIt(t *testing.T) {
	det := decidedMirror(t, false) // b.test is a mirror of a.test
	// c.test is presumed a copy of b.test while their candidate is tested.
	cKey := det.Propose("http://c.test/", "http://b.test/")
	if c, _ := det.Candidate(cKey); c.Decided || c.Withdrawn {
		t.Fatalf("candidate %s: %+v, want undecided", cKey, c)
	}
	e, s, f := testEngine(t, Options{SkipDuplicateLinks: true, Mirror: det})
	known(s, "http://a.test/", storage.ClassUnique)
	known(s, "http://b.test/", storage.ClassUnique)
	known(s, "http://a.test/x", storage.ClassUnique) // the original of b.test/x, fetched

	// c.test/ links to x: its counterpart b.test/x is queued, and c.test/x
	// is skipped waiting on it.
	onC := storage.Page{ID: s.NewID(), URL: "http://c.test/", Class: storage.ClassUnique, Status: 200, Depth: 1}
	ct := &commitTx{e: e, tx: s, it: &frontier.Item{ID: onC.ID, URL: onC.URL}}
	if err := ct.links(&onC, []string{"http://c.test/x"}); err != nil {
		t.Fatal(err)
	}
	if got := s.skips(); !slices.Equal(got, []string{"http://c.test/x"}) {
		t.Fatalf("skip records %v, want c.test/x waiting on b.test/x", got)
	}
	var bx *frontier.Item
	for _, it := range s.queue {
		if it.URL == "http://b.test/x" {
			bx = &it
		}
	}
	if bx == nil {
		t.Fatalf("b.test/x not queued (queue %v)", s.queued())
	}

	// b.test/x is leased: the decided mirror skips it in favour of a.test/x.
	att, skipped := e.mirror.skipLeased(bx)
	if !skipped {
		t.Fatal("b.test/x was not skipped at lease time")
	}
	if rec := s.pages[bx.ID]; rec == nil || rec.Class != storage.ClassMirrorSkipped || rec.DuplicateOf != "http://a.test/x" {
		t.Fatalf("b.test/x record %+v, want mirror_skipped in favour of a.test/x", rec)
	}
	// c.test/x is queued again, to be fetched.
	if got := s.skips(); len(got) != 0 {
		t.Errorf("skip records %v left: c.test/x waits on a page that will never be fetched", got)
	}
	if !slices.Contains(s.queued(), "http://c.test/x") {
		t.Errorf("c.test/x not queued (queue %v)", s.queued())
	}
	if !slices.ContainsFunc(att.pushed, func(it frontier.Item) bool { return it.URL == "http://c.test/x" }) {
		t.Errorf("c.test/x not handed to the frontier (pushed %v; frontier %d)", att.pushed, len(f.pushed))
	}
	if deps := s.deps["http://b.test/x"]; len(deps) != 0 {
		t.Errorf("dependents of b.test/x left: %v", deps)
	}
}
