package crawl_test

import (
	"testing"

	"github.com/horseshoe-crawler/horseshoe/internal/testweb"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestMirrorDecisionsScanNoPages: the rules acting on mirror decisions
// (onDecided, verifyStanding, requeueSkipped) and the skip audit read the
// failed pages and the skip records of leased URLs through the engine's page
// index, not by scanning every page record (issue 29): a run scans the page
// records at most once (the index's build), and the skip records once per
// skip audit, however many decisions it made and pages it fetched. The
// mirror chain makes decisions and skips at lease time (asserted, so the
// rules run); its other invariants are TestMirrorChainKeepsSkippedCounterpartsCopy's.
func TestMirrorDecisionsScanNoPages(t *testing.T) {
	chain, web, seeds, err := testweb.StartMirrorChain(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Close() })
	res := runCrawl(t, crawlConfig{Mirror: true, Workers: 4}, seeds...)
	if len(res.Mirrors) == 0 {
		t.Fatal("no mirror decided: the rules this test guards did not run")
	}
	if mx := res.Pages[web.URL(chain.Mirror.IP, "/m/x.html")]; mx == nil || mx.Class != storage.ClassMirrorSkipped {
		t.Fatalf("the mirror's x.html is %+v, want mirror_skipped (a skip at lease time)", mx)
	}
	t.Logf("%d mirrors, %d pages; scans: %d of the page records, %d of the skip records; %d skip audits",
		len(res.Mirrors), len(res.Pages), res.PageScans, res.SkipScans, res.AuditRounds)
	if res.PageScans > 1 {
		t.Errorf("%d scans of every page record in one run, want at most 1 (the page index's build)", res.PageScans)
	}
	if res.SkipScans > int64(res.AuditRounds) {
		t.Errorf("%d scans of every skip record in one run of %d skip audits, want at most one per audit", res.SkipScans, res.AuditRounds)
	}
}
