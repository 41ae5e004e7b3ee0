package live_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/internal/live"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const xssTitle = `<script>alert(1)</script>`

// testStore writes a small crawl: 3 unique pages (one with a hostile title),
// 2 exact and 1 near duplicate, 1 error, 1 robots_disallowed page, 2
// mirror_skipped records (a leased URL and a skipped link), 2 queued URLs
// and 42 requests.
func testStore(tb testing.TB) *storage.DB {
	tb.Helper()
	db, err := storage.Open(tb.TempDir(), storage.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	a, b := "http://127.0.0.2:8080", "http://127.0.0.3:8080"
	pages := []storage.Page{
		{URL: a + "/", Host: "127.0.0.2:8080", Status: 200, Class: storage.ClassUnique, Title: "Home"},
		{URL: a + "/x", Host: "127.0.0.2:8080", Status: 200, Class: storage.ClassUnique, Title: xssTitle},
		{URL: b + "/", Host: "127.0.0.3:8080", Status: 200, Class: storage.ClassUnique, Title: "Other"},
		{URL: a + "/x?a=1", Host: "127.0.0.2:8080", Status: 200, Class: storage.ClassExact, DuplicateOf: a + "/x", Similarity: 1, Method: "exact"},
		{URL: b + "/x", Host: "127.0.0.3:8080", Status: 200, Class: storage.ClassExact, DuplicateOf: a + "/x", Similarity: 1, Method: "exact"},
		{URL: b + "/y", Host: "127.0.0.3:8080", Status: 200, Class: storage.ClassNear, DuplicateOf: a + "/", Similarity: 0.93, Method: "supershingle"},
		{URL: b + "/e", Host: "127.0.0.3:8080", Class: storage.ClassError, Error: "connection refused", ErrorClass: "connect"},
		{URL: b + "/private", Host: "127.0.0.3:8080", Class: storage.ClassRobotsDisallowed},
		{URL: b + "/m", Host: "127.0.0.3:8080", Class: storage.ClassMirrorSkipped, DuplicateOf: a + "/m", Method: "mirror"},
	}
	err = db.Update(func(tx *storage.Tx) error {
		for i := range pages {
			p := pages[i]
			p.ID = tx.NewID()
			p.FetchedAt = t0.Add(time.Duration(i) * time.Second)
			if err := tx.PutPage(&p); err != nil {
				return err
			}
		}
		if err := tx.PutSkipped(&storage.Page{URL: b + "/n", Host: "127.0.0.3:8080", Class: storage.ClassMirrorSkipped,
			DuplicateOf: a + "/n", Method: "mirror", FetchedAt: t0.Add(time.Minute)}); err != nil {
			return err
		}
		for i, u := range []string{b + "/q1", b + "/q2"} {
			if err := tx.PutQueue(frontier.Item{ID: tx.NewID(), URL: u, Host: "127.0.0.3:8080", Seq: uint64(i + 1)}); err != nil {
				return err
			}
		}
		if err := tx.PutMeta(storage.MetaStarted, []byte(t0.Format(time.RFC3339Nano))); err != nil {
			return err
		}
		return tx.PutMeta(storage.MetaRequests, []byte("42"))
	})
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

func newHandler(tb testing.TB, db *storage.DB, o live.Options) *live.Handler {
	tb.Helper()
	h, err := live.NewHandler(db, o)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

func get(tb testing.TB, h http.Handler, method, path string) *httptest.ResponseRecorder {
	tb.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

func TestHandlerRoutes(t *testing.T) {
	h := newHandler(t, testStore(t), live.Options{Filter: "test filter"})
	tests := []struct {
		method, path string
		status       int
		ctype        string
		contains     []string
		absent       []string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8",
			[]string{"<!DOCTYPE html>", "&lt;script&gt;alert(1)&lt;/script&gt;", "127.0.0.3:8080", "<svg"},
			[]string{xssTitle}},
		{"HEAD", "/", 200, "text/html; charset=utf-8", nil, nil},
		{"GET", "/report.json", 200, "application/json", []string{`"requests": 42`, `"filter": "test filter"`}, nil},
		{"GET", "/metrics", 200, "text/plain", []string{"horseshoe_pages_total", "# TYPE horseshoe_requests_total counter"}, nil},
		{"GET", "/index.html", 404, "", nil, nil},
		{"POST", "/", 405, "", nil, nil},
		{"DELETE", "/metrics", 405, "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rec := get(t, h, tt.method, tt.path)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); tt.ctype != "" && !strings.HasPrefix(ct, tt.ctype) {
				t.Errorf("Content-Type %q, want %q", ct, tt.ctype)
			}
			if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q", got)
			}
			body := rec.Body.String()
			for _, s := range tt.contains {
				if !strings.Contains(body, s) {
					t.Errorf("body lacks %q", s)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(body, s) {
					t.Errorf("body contains %q", s)
				}
			}
		})
	}
}

func TestHTMLHeaders(t *testing.T) {
	db := testStore(t)
	tests := []struct {
		name        string
		o           live.Options
		wantRefresh string
	}{
		{"finished crawl", live.Options{}, ""},
		{"live crawl", live.Options{Live: true}, "10"},
		{"live, custom interval", live.Options{Live: true, Refresh: 3 * time.Second}, "3"},
		{"live, refresh off", live.Options{Live: true, Refresh: -1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := get(t, newHandler(t, db, tt.o), "GET", "/")
			if got := rec.Header().Get("Refresh"); got != tt.wantRefresh {
				t.Errorf("Refresh %q, want %q", got, tt.wantRefresh)
			}
			csp := rec.Header().Get("Content-Security-Policy")
			if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
				t.Errorf("Content-Security-Policy %q must forbid scripts", csp)
			}
			if got := rec.Header().Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control %q", got)
			}
		})
	}
}

func TestReportJSONFromStore(t *testing.T) {
	rec := get(t, newHandler(t, testStore(t), live.Options{}), "GET", "/report.json")
	var d report.Data
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"unique": 3, "exact_duplicate": 2, "near_duplicate": 1, "mirror_skipped": 2,
		"robots_disallowed": 1, "not_html": 0, "error": 1}
	for c, n := range want {
		if d.Stats.ByClass[c] != n {
			t.Errorf("by_class[%s] = %d, want %d", c, d.Stats.ByClass[c], n)
		}
	}
	if d.Stats.Pages != 10 || d.Stats.Requests != 42 || d.Stats.Hosts != 2 {
		t.Errorf("stats %+v, want 10 pages, 42 requests, 2 hosts", d.Stats)
	}
}

// scrape fetches /metrics and parses it with the Prometheus text parser.
func scrape(tb testing.TB, h http.Handler) map[string]*dto.MetricFamily {
	tb.Helper()
	rec := get(tb, h, "GET", "/metrics")
	if rec.Code != 200 {
		tb.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		tb.Fatalf("/metrics does not parse: %v\n%s", err, rec.Body)
	}
	return fams
}

// value returns the value of the sample of name with label class=class (or
// the only sample when class is "").
func value(tb testing.TB, fams map[string]*dto.MetricFamily, name, class string) float64 {
	tb.Helper()
	f, ok := fams[name]
	if !ok {
		tb.Fatalf("metric %s missing", name)
	}
	for _, m := range f.GetMetric() {
		match := class == ""
		for _, l := range m.GetLabel() {
			if l.GetName() == "class" && l.GetValue() == class {
				match = true
			}
		}
		if !match {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue()
		}
		tb.Fatalf("metric %s has type %v", name, f.GetType())
	}
	tb.Fatalf("metric %s{class=%q} missing", name, class)
	return 0
}

func TestMetricsFromStore(t *testing.T) {
	fams := scrape(t, newHandler(t, testStore(t), live.Options{}))
	tests := []struct {
		name, class string
		typ         dto.MetricType
		want        float64
	}{
		{"horseshoe_pages_total", "unique", dto.MetricType_COUNTER, 3},
		{"horseshoe_pages_total", "exact_duplicate", dto.MetricType_COUNTER, 2},
		{"horseshoe_pages_total", "near_duplicate", dto.MetricType_COUNTER, 1},
		{"horseshoe_pages_total", "mirror_skipped", dto.MetricType_COUNTER, 2},
		{"horseshoe_pages_total", "robots_disallowed", dto.MetricType_COUNTER, 1},
		{"horseshoe_pages_total", "not_html", dto.MetricType_COUNTER, 0},
		{"horseshoe_pages_total", "error", dto.MetricType_COUNTER, 1},
		{"horseshoe_requests_total", "", dto.MetricType_COUNTER, 42},
		{"horseshoe_queue_size", "", dto.MetricType_GAUGE, 2},
		{"horseshoe_active_fetches", "", dto.MetricType_GAUGE, 0},
		{"horseshoe_hosts", "", dto.MetricType_GAUGE, 2},
		{"horseshoe_crawl_running", "", dto.MetricType_GAUGE, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.class, func(t *testing.T) {
			if typ := fams[tt.name].GetType(); typ != tt.typ {
				t.Errorf("type %v, want %v", typ, tt.typ)
			}
			if got := value(t, fams, tt.name, tt.class); got != tt.want {
				t.Errorf("= %v, want %v", got, tt.want)
			}
		})
	}
	if n := len(fams["horseshoe_pages_total"].GetMetric()); n != len(storage.Classes) {
		t.Errorf("horseshoe_pages_total has %d series, want one per class (%d)", n, len(storage.Classes))
	}
	if _, ok := fams["go_goroutines"]; ok {
		t.Error("runtime metrics registered without RuntimeMetrics")
	}
}

// fakeCrawl is a snapshot source whose counters a test moves.
type fakeCrawl struct {
	mu  sync.Mutex
	s   crawl.Stats
	err error
}

func (f *fakeCrawl) snapshot() (crawl.Stats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.s
	s.ByClass = make(map[string]int64, len(f.s.ByClass))
	for k, v := range f.s.ByClass {
		s.ByClass[k] = v
	}
	return s, f.err
}

func (f *fakeCrawl) set(fn func(s *crawl.Stats)) {
	f.mu.Lock()
	fn(&f.s)
	f.mu.Unlock()
}

func TestMetricsFollowTheSnapshot(t *testing.T) {
	fc := &fakeCrawl{s: crawl.Stats{ByClass: map[string]int64{"unique": 5}, Requests: 9, Queued: 100, Active: 3, Hosts: 4, Running: true}}
	h := newHandler(t, testStore(t), live.Options{Snapshot: fc.snapshot, RuntimeMetrics: true})
	fams := scrape(t, h)
	for _, c := range []struct {
		name, class string
		want        float64
	}{
		{"horseshoe_pages_total", "unique", 5},
		{"horseshoe_pages_total", "near_duplicate", 0},
		{"horseshoe_requests_total", "", 9},
		{"horseshoe_queue_size", "", 100},
		{"horseshoe_active_fetches", "", 3},
		{"horseshoe_hosts", "", 4},
		{"horseshoe_crawl_running", "", 1},
	} {
		if got := value(t, fams, c.name, c.class); got != c.want {
			t.Errorf("first scrape: %s{%s} = %v, want %v", c.name, c.class, got, c.want)
		}
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("RuntimeMetrics: go_goroutines missing")
	}
	fc.set(func(s *crawl.Stats) {
		s.ByClass["unique"] = 7
		s.ByClass["exact_duplicate"] = 2
		s.ByClass["surprise"] = 1
		s.Requests, s.Queued, s.Active, s.Running = 12, 90, 0, false
	})
	fams = scrape(t, h)
	for _, c := range []struct {
		name, class string
		want        float64
	}{
		{"horseshoe_pages_total", "unique", 7},
		{"horseshoe_pages_total", "exact_duplicate", 2},
		{"horseshoe_pages_total", "surprise", 1},
		{"horseshoe_requests_total", "", 12},
		{"horseshoe_queue_size", "", 90},
		{"horseshoe_active_fetches", "", 0},
		{"horseshoe_crawl_running", "", 0},
	} {
		if got := value(t, fams, c.name, c.class); got != c.want {
			t.Errorf("second scrape: %s{%s} = %v, want %v", c.name, c.class, got, c.want)
		}
	}

	fc.set(func(*crawl.Stats) {})
	fc.mu.Lock()
	fc.err = errors.New("store closed")
	fc.mu.Unlock()
	if rec := get(t, h, "GET", "/metrics"); rec.Code != http.StatusInternalServerError {
		t.Errorf("failed snapshot: /metrics status %d, want 500", rec.Code)
	}
}

func TestReportCache(t *testing.T) {
	db := testStore(t)
	now := time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := newHandler(t, db, live.Options{Now: clock, CacheFor: 2 * time.Second})
	pages := func() int {
		var d report.Data
		if err := json.Unmarshal(get(t, h, "GET", "/report.json").Body.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		return d.Stats.Pages
	}
	if n := pages(); n != 10 {
		t.Fatalf("pages %d, want 10", n)
	}
	err := db.Update(func(tx *storage.Tx) error {
		return tx.PutPage(&storage.Page{ID: tx.NewID(), URL: "http://127.0.0.4/", Host: "127.0.0.4", Status: 200,
			Class: storage.ClassUnique, FetchedAt: now})
	})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		advance time.Duration
		want    int
	}{
		{0, 10},                       // cached
		{1500 * time.Millisecond, 10}, // still fresh
		{time.Second, 11},             // stale: read anew
	}
	for i, s := range steps {
		mu.Lock()
		now = now.Add(s.advance)
		mu.Unlock()
		if n := pages(); n != s.want {
			t.Errorf("step %d: pages %d, want %d", i, n, s.want)
		}
	}
}

func TestReportErrorIs500(t *testing.T) {
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(t, db, live.Options{})
	db.Close()
	for _, path := range []string{"/", "/report.json", "/metrics"} {
		if rec := get(t, h, "GET", path); rec.Code != http.StatusInternalServerError {
			t.Errorf("%s on a closed store: status %d, want 500", path, rec.Code)
		}
	}
}

func TestServerStartClose(t *testing.T) {
	h := newHandler(t, testStore(t), live.Options{Live: true})
	srv, err := live.Start("127.0.0.1:0", h, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") {
		t.Errorf("URL %q", srv.URL())
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, path := range []string{"", "report.json", "metrics"} {
		resp, err := client.Get(srv.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(body) == 0 {
			t.Errorf("GET /%s: %d, %d bytes", path, resp.StatusCode, len(body))
		}
	}
	// A second server cannot take the same address.
	if _, err := live.Start(srv.Addr().String(), h, nil); err == nil {
		t.Error("second Start on a used address succeeded")
	} else {
		var op *net.OpError
		if !errors.As(err, &op) {
			t.Errorf("error %v does not wrap the listen error", err)
		}
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := client.Get(srv.URL()); err == nil {
		t.Error("server still answers after Close")
	}
}

func ExampleNewHandler() {
	dir, err := os.MkdirTemp("", "horseshoe-live-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	h, err := live.NewHandler(db, live.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "horseshoe_requests_total") || strings.HasPrefix(line, `horseshoe_pages_total{class="unique"}`) {
			fmt.Println(line)
		}
	}
	// Output:
	// horseshoe_pages_total{class="unique"} 0
	// horseshoe_requests_total 0
}
