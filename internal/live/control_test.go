package live

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// fakeCrawl records the control API's actions (a table test of the HTTP
// rules; cmd/crawler's control tests drive a real crawl).
type fakeCrawl struct {
	mu      sync.Mutex
	actions []string
}

func (f *fakeCrawl) act(a string) {
	f.mu.Lock()
	f.actions = append(f.actions, a)
	f.mu.Unlock()
}

func (f *fakeCrawl) controls() *Controls {
	return &Controls{
		AddSeeds: func(urls []string) ([]string, int, error) {
			if strings.HasPrefix(urls[0], "bad") {
				return nil, 0, &RequestError{Err: errors.New("bad seed URL " + urls[0])}
			}
			f.act("seeds " + strings.Join(urls, " "))
			return urls, len(urls), nil
		},
		Pause:  func() { f.act("pause") },
		Resume: func() { f.act("resume") },
		Stop:   func() { f.act("stop") },
	}
}

func apiHandler(t *testing.T, c *Controls, now func() time.Time) http.Handler {
	t.Helper()
	db, err := storage.Open(t.TempDir(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	snap := func() (crawl.Stats, error) { return crawl.Stats{Pages: 30, Requests: 33, Running: true}, nil }
	h, err := NewHandler(db, Options{Controls: c, Snapshot: snap, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// call sends one request and decodes the JSON object answered.
func call(t *testing.T, h http.Handler, method, path, ctype, body string) (int, http.Header, map[string]any) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if ctype != "" {
		r.Header.Set("Content-Type", ctype)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	var v map[string]any
	if method != http.MethodHead {
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q, want application/json", method, path, ct)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatalf("%s %s: answer is not a JSON object: %v: %q", method, path, err, rec.Body.String())
		}
	}
	return rec.Code, rec.Header(), v
}

// TestControlRules: every endpoint's method is enforced (405 naming the
// right one), unknown paths are 404, POSTs must be JSON (415), bodies are
// bounded (413) and checked (400), errors are JSON objects, and the
// actions reach the crawl in order with the state they lead to.
func TestControlRules(t *testing.T) {
	f := &fakeCrawl{}
	h := apiHandler(t, f.controls(), time.Now)
	const js = "application/json"
	big := `{"seeds": ["http://a.example/` + strings.Repeat("x", MaxBodyBytes) + `"]}`
	cases := []struct {
		method, path, ctype, body string
		code                      int
		field, want               string // a field of the answer and its value ("" for any)
	}{
		{"GET", "/api/pause", "", "", 405, "error", ""},
		{"PUT", "/api/seeds", js, `{}`, 405, "error", ""},
		{"POST", "/api/status", js, "", 405, "error", ""},
		{"GET", "/api/nothing", "", "", 404, "error", ""},
		{"POST", "/api/pause", "application/x-www-form-urlencoded", "a=b", 415, "error", ""},
		{"POST", "/api/stop", "text/plain", "", 415, "error", ""},
		{"POST", "/api/seeds", js, `{"seeds": "http://a.example/"}`, 400, "error", ""},
		{"POST", "/api/seeds", js, `{"urls": ["http://a.example/"]}`, 400, "error", ""},
		{"POST", "/api/seeds", js, `{"seeds": []}`, 400, "error", ""},
		{"POST", "/api/seeds", js, `{"seeds": ["http://a.example/"]} {}`, 400, "error", ""},
		{"POST", "/api/seeds", js, `{"seeds": ["bad://x"]}`, 400, "error", "bad seed URL bad://x"},
		{"POST", "/api/seeds", js, big, 413, "error", ""},
		{"GET", "/api/status", "", "", 200, "state", "running"},
		{"POST", "/api/seeds", "application/json; charset=utf-8", `{"seeds": ["http://a.example/"]}`, 200, "added", ""},
		{"POST", "/api/pause", js, "", 200, "state", "paused"},
		{"GET", "/api/status", "", "", 200, "state", "paused"},
		{"POST", "/api/pause", js, "", 200, "state", "paused"},
		{"POST", "/api/resume", js, "", 200, "state", "running"},
		{"POST", "/api/stop", js, "", 202, "state", "stopping"},
		{"POST", "/api/resume", js, "", 409, "error", ""},
		{"POST", "/api/seeds", js, `{"seeds": ["http://b.example/"]}`, 409, "error", ""},
		{"POST", "/api/stop", js, "", 202, "state", "stopping"},
		{"GET", "/api/status", "", "", 200, "state", "stopping"},
	}
	for _, c := range cases {
		code, hdr, v := call(t, h, c.method, c.path, c.ctype, c.body)
		if code != c.code {
			t.Errorf("%s %s %.40q: %d %v, want %d", c.method, c.path, c.body, code, v, c.code)
			continue
		}
		if _, ok := v[c.field]; !ok {
			t.Errorf("%s %s: no %q in %v", c.method, c.path, c.field, v)
		}
		if c.want != "" && v[c.field] != c.want {
			t.Errorf("%s %s: %s = %v, want %q", c.method, c.path, c.field, v[c.field], c.want)
		}
		if code == 405 {
			want := map[string]string{"/api/pause": "POST", "/api/seeds": "POST", "/api/status": "GET"}[c.path]
			if hdr.Get("Allow") != want {
				t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, hdr.Get("Allow"), want)
			}
		}
	}
	want := "seeds http://a.example/|pause|resume|stop"
	if got := strings.Join(f.actions, "|"); got != want {
		t.Errorf("actions %q, want %q (a repeated pause or stop acts once)", got, want)
	}
}

// TestControlStatusRate: pages per second counts the time the crawl was not
// paused; a server with no crawl running reports "finished" and refuses the
// actions with 409.
func TestControlStatusRate(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	f := &fakeCrawl{}
	h := apiHandler(t, f.controls(), clock)
	advance(10 * time.Second)
	call(t, h, "POST", "/api/pause", "application/json", "")
	advance(50 * time.Second)
	_, _, v := call(t, h, "GET", "/api/status", "", "")
	// 30 pages in the 10 s not paused.
	if v["pages_per_sec"] != 3.0 || v["elapsed_sec"] != 60.0 || v["paused_sec"] != 50.0 || v["pages"] != 30.0 || v["requests"] != 33.0 {
		t.Errorf("status %v: want 3 pages/s, 60 s elapsed, 50 paused, 30 pages, 33 requests", v)
	}

	done := apiHandler(t, nil, time.Now)
	if _, _, v := call(t, done, "GET", "/api/status", "", ""); v["state"] != "finished" || v["pages"] != 30.0 {
		t.Errorf("status of a finished crawl: %v", v)
	}
	for _, p := range []string{"/api/pause", "/api/resume", "/api/stop"} {
		if code, _, _ := call(t, done, "POST", p, "application/json", ""); code != http.StatusConflict {
			t.Errorf("POST %s with no crawl running: %d, want 409", p, code)
		}
	}
}

// TestControlSharedWorker: a crawl that offers only status and stop (a
// worker of a shared crawl) answers pause, resume and seeds with 409, and
// stops.
func TestControlSharedWorker(t *testing.T) {
	stopped := false
	h := apiHandler(t, &Controls{Stop: func() { stopped = true }}, time.Now)
	for _, p := range []string{"/api/pause", "/api/resume", "/api/seeds"} {
		if code, _, v := call(t, h, "POST", p, "application/json", `{"seeds": ["http://a.example/"]}`); code != http.StatusConflict || v["error"] == nil {
			t.Errorf("POST %s: %d %v, want 409", p, code, v)
		}
	}
	if code, _, _ := call(t, h, "POST", "/api/stop", "application/json", ""); code != http.StatusAccepted || !stopped {
		t.Errorf("stop: %d, stopped %v", code, stopped)
	}
}
