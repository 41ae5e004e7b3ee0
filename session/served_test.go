package session_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/session"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestServedMergesLikeReport: the dirs served are reported as `crawler
// report` reports them (one dir: ReportDir; several: MergedReport, byte for
// byte in JSON), and the counters of several are the merged report's: a URL
// two dirs hold (a page fetched again after its worker was killed) counts
// once, not once per dir.
func TestServedMergesLikeReport(t *testing.T) {
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	putPages(t, a, 3, false) // a.test/a, /b, /c and robots-only
	putPages(t, b, 2, false) // a.test/a, /b again, robots-only again
	for dir, n := range map[string]string{a: "5", b: "4"} {
		withStore(t, dir, func(db *storage.DB) error { return db.PutMeta(storage.MetaRequests, []byte(n)) })
	}
	cfg := configs.Default()
	asJSON := func(d *report.Data) []byte {
		var buf bytes.Buffer
		if err := report.WriteJSON(&buf, d); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	served := func(dirs ...string) *session.Served {
		s, err := session.OpenServed(dirs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}

	var one []byte
	if err := session.ReportDir(a, cfg, func(d *report.Data) error { one = asJSON(d); return nil }); err != nil {
		t.Fatal(err)
	}
	s := served(a)
	if d, err := s.Report(); err != nil || !bytes.Equal(asJSON(d), one) {
		t.Errorf("served report of one dir differs from ReportDir's (%v)", err)
	}
	st, err := s.Stats()
	if err != nil || st.ByClass["unique"] != 3 || st.Pages != 3 || st.Requests != 5 {
		t.Errorf("stats of one dir: %+v, %v", st, err)
	}
	s.Close()

	want, err := session.MergedReport([]string{a, b}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s = served(a, b)
	d, err := s.Report()
	if err != nil || !bytes.Equal(asJSON(d), asJSON(want)) {
		t.Errorf("served report of two dirs differs from MergedReport's (%v)", err)
	}
	st, err = s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.ByClass["unique"] != 3 || st.ByClass["robots_disallowed"] != 1 || st.Pages != 3 || st.Requests != 9 || st.Hosts != 1 {
		t.Errorf("stats of two dirs: %+v; want each URL once: 3 unique pages, 1 robots_disallowed, 9 requests, 1 host", st)
	}
	if st.ByClass["unique"] != int64(want.Stats.ByClass["unique"]) {
		t.Errorf("stats count %d unique pages, the merged report %d", st.ByClass["unique"], want.Stats.ByClass["unique"])
	}
	if s.Workers() != nil {
		t.Error("dirs of no shared crawl have workers")
	}
}
