package crawl_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/export"
	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/internal/warcread"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestRecrawlTransitions: what a recrawl makes of a page of the earlier
// crawl that now answers otherwise. A redirect (301, 302, 307, to the same
// host or another one in scope) is moved: the record names the target, which
// is fetched once as a new page; a target out of scope is named and not
// requested; a redirect loop ends on the seen-set; a redirect to itself but
// for a session id is followed and classes the page. 404 and 410 are gone; a
// 5xx failed. A moved or gone page keeps its stored version, and the JSONL
// export flags it (gone, gone_status, moved_to) instead of passing it for a
// live page; in the WARC its latest response is the 404, 410 or redirect. A 304 to a request without validators is a failed visit, not
// unchanged, and a Last-Modified in the future is never sent back.
func TestRecrawlTransitions(t *testing.T) {
	root := t.TempDir()
	const ip, other, off = "127.0.0.2", "127.0.0.3", "127.0.0.4"
	seed := testtools.Seed(t, "./crawl/")
	s := &recrawlSite{dir: filepath.Join(root, ip), r: rand.New(rand.NewPCG(seed, 1))}
	for _, h := range []string{ip, other, off} {
		if err := os.MkdirAll(filepath.Join(root, h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	var web *loopweb.Web
	var recrawling atomic.Bool
	redirect := func(code int, host, path string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, web.URL(host, path), code) }
	}
	status := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { http.Error(w, http.StatusText(code), code) }
	}
	// file serves a page's file without validators, or with lastModified.
	file := func(name, lastModified string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			b, err := os.ReadFile(filepath.Join(s.dir, name))
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			if lastModified != "" {
				w.Header().Set("Last-Modified", lastModified)
			}
			w.Write(b)
		}
	}
	const future = "Fri, 01 Jan 2100 00:00:00 GMT"
	const session = "A1B2C3D4E5F6A7B8C9D0"
	cases := []struct {
		name    string
		first   http.HandlerFunc // the page in the first crawl; nil: its file (ETag, Last-Modified)
		then    http.HandlerFunc // the page in the recrawl; nil: its file
		change  string
		movedTo string // host and path of the target
		fetched bool   // the target is requested, once, and is new
		gone    int    // the recrawl's status when the export flags the page gone
	}{
		{name: "unchanged", change: report.ChangeNone},
		{name: "301", then: redirect(301, ip, "/t-301.html"), change: report.ChangeMoved, movedTo: ip + "/t-301.html", fetched: true, gone: 301},
		{name: "302", then: redirect(302, ip, "/t-302.html"), change: report.ChangeMoved, movedTo: ip + "/t-302.html", fetched: true, gone: 302},
		{name: "307", then: redirect(307, ip, "/t-307.html"), change: report.ChangeMoved, movedTo: ip + "/t-307.html", fetched: true, gone: 307},
		{name: "other-host", then: redirect(301, other, "/t-other.html"), change: report.ChangeMoved, movedTo: other + "/t-other.html", fetched: true, gone: 301},
		{name: "off-scope", then: redirect(301, off, "/t-off.html"), change: report.ChangeMoved, movedTo: off + "/t-off.html", gone: 301},
		{name: "loop", then: redirect(301, ip, "/t-loop.html"), change: report.ChangeMoved, movedTo: ip + "/t-loop.html", gone: 301},
		{name: "session", then: redirect(302, ip, "/p-session.html;jsessionid="+session), change: report.ChangeNone},
		{name: "404", then: status(404), change: report.ChangeGone, gone: 404},
		{name: "410", then: status(410), change: report.ChangeGone, gone: 410},
		{name: "404-large", then: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(404)
			w.Write(bytes.Repeat([]byte("not here "), 10000)) // 90 KB: the WARC keeps the header alone
		}, change: report.ChangeGone, gone: 404},
		{name: "500", then: status(500), change: report.ChangeFailed},
		{name: "502", then: status(502), change: report.ChangeFailed},
		{name: "304-unasked", first: file("p-304-unasked.html", ""), then: status(304), change: report.ChangeFailed},
		{name: "future-date", first: file("p-future-date.html", future), change: report.ChangeReal},
	}
	answers := map[string]http.HandlerFunc{}
	var names []string
	for _, c := range cases {
		name := "p-" + c.name + ".html"
		names = append(names, name)
		s.write(t, name, s.words(300), "footer", nil, t0)
		if c.first != nil {
			answers["first /"+name] = c.first
		}
		if c.then != nil {
			answers["then /"+name] = c.then
		}
	}
	// A server that compares dates answers a date in the future with a 304
	// whatever changed; without validators it sends the page.
	answers["then /p-future-date.html"] = func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-Modified-Since") != "" {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		file("p-future-date.html", future)(w, r)
	}
	answers["then /t-loop.html"] = redirect(301, ip, "/p-loop.html")
	// The session's page is served only under its session id, the same
	// bytes as before.
	answers["then /p-session.html;jsessionid="+session] = file("p-session.html", "")
	s.write(t, "index.html", "The index.", "footer", names, t0)
	for _, target := range []string{"t-301.html", "t-302.html", "t-307.html"} {
		s.write(t, target, s.words(300), "footer", nil, t0)
	}
	for h, name := range map[string]string{other: "t-other.html", off: "t-off.html"} {
		os.WriteFile(filepath.Join(root, h, name), []byte("<!doctype html><p>"+s.words(300)+"</p>"), 0o644)
	}
	os.WriteFile(filepath.Join(root, other, "index.html"), []byte("<!doctype html><p>The other host.</p>"), 0o644)
	log := &condLog{}
	web, err := loopweb.Start(root, loopweb.Options{Handler: func(host string, next http.Handler) http.Handler {
		return log.wrap(host, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			phase := "first "
			if recrawling.Load() {
				phase = "then "
			}
			if h := answers[phase+r.URL.Path]; h != nil && host == ip {
				h(w, r)
				return
			}
			next.ServeHTTP(w, r)
		}))
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	seeds := []string{web.URL(ip, "/index.html"), web.URL(other, "/index.html")} // the scope: both hosts
	data := t.TempDir()
	crawlDir(t, data, false, seeds...)
	// The future date's page changes: only a request without the date can
	// tell.
	s.write(t, "p-future-date.html", s.words(300), "footer", nil, t0)
	before := len(web.Requests())
	log.take()
	recrawling.Store(true)
	crawlDir(t, data, true, seeds...)
	requests := map[string]int{}
	for _, r := range web.Requests()[before:] {
		requests[r.Host+r.Path]++
	}
	sent := map[string]condReq{}
	for _, r := range log.take() {
		sent[r.path] = r
	}

	db, rd := openReport(t, data)
	pages := map[string]report.Page{}
	for _, p := range rd.Pages {
		pages[p.URL] = p
	}
	var out bytes.Buffer
	if _, err := export.JSONL(&out, db, export.JSONLOptions{}); err != nil {
		t.Fatal(err)
	}
	exported := map[string]export.Record{}
	for _, line := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		var r export.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		exported[r.URL] = r
	}
	// The WARC: the latest response of each URL, by WARC-Date.
	var warc bytes.Buffer
	if _, err := export.WARC(&warc, db, export.WARCOptions{Software: "Horseshoe/test"}); err != nil {
		t.Fatal(err)
	}
	recs, err := warcread.Read(&warc)
	if err != nil {
		t.Fatal(err)
	}
	type capture struct {
		at        time.Time
		status    string
		truncated string
	}
	latest := map[string]capture{}
	for _, r := range recs {
		if r.Type() != "response" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, r.Get("WARC-Date"))
		head, _, herr := r.HTTPPayload()
		if err != nil || herr != nil {
			t.Fatalf("response record %v: %v %v", r.Header, err, herr)
		}
		status := strings.Fields(string(head))[1]
		if u := r.Get("WARC-Target-URI"); !at.Before(latest[u].at) {
			latest[u] = capture{at, status, r.Get("WARC-Truncated")}
		}
	}
	hostPath := func(hp string) string {
		h, p, _ := strings.Cut(hp, "/")
		return web.URL(h, "/"+p)
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := web.URL(ip, "/p-"+c.name+".html")
			if n := requests[ip+"/p-"+c.name+".html"]; n != 1 {
				t.Errorf("requested %d times by the recrawl, want once", n)
			}
			p := pages[u]
			movedTo := ""
			if c.movedTo != "" {
				movedTo = hostPath(c.movedTo)
			}
			if p.Change != c.change || p.MovedTo != movedTo {
				t.Errorf("report: change %q moved to %q, want %q to %q", p.Change, p.MovedTo, c.change, movedTo)
			}
			rec := recordOf(t, db, u)
			if rv := rec.Revisit; rec.Status != 200 || rec.Class != storage.ClassUnique || rv == nil || rv.Location != movedTo {
				t.Errorf("record: status %d class %s revisit %+v; want the stored version kept, moved to %q", rec.Status, rec.Class, rv, movedTo)
			}
			// The URL's history: one visit that could tell, a change when
			// it changed or moved.
			visits, changes := 1, 0
			switch c.change {
			case report.ChangeFailed:
				visits = 0
			case report.ChangeReal, report.ChangeMoved:
				changes = 1
			}
			if rv := rec.Revisit; rv == nil || rv.Visits != visits || rv.Changes != changes {
				t.Errorf("history: revisit %v; want %d visits, %d changes", rv != nil, visits, changes)
				if rv != nil {
					t.Logf("%d visits, %d changes", rv.Visits, rv.Changes)
				}
			}
			if text, err := db.Text(rec.ID); err != nil || len(strings.Fields(text)) < 300 {
				t.Errorf("stored text lost: %v", err)
			}
			r, ok := exported[u]
			if !ok {
				t.Fatalf("not exported")
			}
			if c.gone == 0 && (r.Gone || r.GoneStatus != 0 || r.MovedTo != "") || c.gone != 0 && (!r.Gone || r.GoneStatus != c.gone || r.MovedTo != movedTo || r.GoneAt.IsZero()) {
				t.Errorf("export: gone %v status %d moved to %q since %v; want gone status %d (0: live) moved to %q",
					r.Gone, r.GoneStatus, r.MovedTo, r.GoneAt, c.gone, movedTo)
			}
			want := "200"
			if c.gone != 0 {
				want = fmt.Sprint(c.gone)
			}
			if got := latest[u]; got.status != want || (got.truncated == "length") != (c.name == "404-large") {
				t.Errorf("WARC: the latest response is %q (truncated %q), want %s", got.status, got.truncated, want)
			}
			if c.movedTo == "" {
				return
			}
			target := pages[movedTo]
			n := requests[c.movedTo]
			switch {
			case c.fetched && (n != 1 || target.Change != report.ChangeNew || target.Status != 200):
				t.Errorf("target %s: %d requests, change %q, status %d; want fetched once as new", movedTo, n, target.Change, target.Status)
			case !c.fetched && c.name == "loop" && (n != 1 || target.Status != 301):
				t.Errorf("loop target %s: %d requests, status %d; want one request, its redirect back recorded", movedTo, n, target.Status)
			case !c.fetched && c.name != "loop" && (n != 0 || target.URL != ""):
				t.Errorf("out-of-scope target %s: %d requests, record %+v; want none", movedTo, n, target)
			}
		})
	}
	if r := sent["/p-future-date.html"]; r.ims != "" {
		t.Errorf("the recrawl sent If-Modified-Since %q: a date in the future", r.ims)
	}
	if r := sent["/p-unchanged.html"]; r.inm == "" || r.ims == "" {
		t.Errorf("the unchanged page's revisit sent If-None-Match %q, If-Modified-Since %q: want both", r.inm, r.ims)
	}
	if r := sent["/p-304-unasked.html"]; r.inm != "" || r.ims != "" {
		t.Errorf("the page without validators was asked conditionally: %+v", r)
	}
}
