//go:build e2e

package crawl_test

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/export"
	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// TestRecrawlChanges crawls a site, changes it on disk (some pages
// untouched, some with a new footer date or counter, some really edited, one
// rewritten byte for byte, one deleted, one added) and recrawls it: every
// page gets its change class, the revisits carry the stored validators, the
// untouched pages cost a 304, the WARC holds revisit records that warcio
// reads, and the report has the changes section.
func TestRecrawlChanges(t *testing.T) {
	root := t.TempDir()
	const ip = "127.0.0.2"
	s := &recrawlSite{dir: filepath.Join(root, ip), r: rand.New(rand.NewPCG(3, 4))}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	footer := "Last updated 24 November 2026 · Visitors: 12,345"
	pages := []string{"same.html", "dated.html", "counter.html", "edited.html", "retouched.html", "removed.html"}
	prose := map[string]string{}
	for _, p := range pages {
		prose[p] = s.words(600)
		s.write(t, p, prose[p], footer, nil, t0)
	}
	s.write(t, "index.html", "The index.", footer, pages, t0)
	log := &condLog{}
	web, err := loopweb.Start(root, loopweb.Options{Robots: map[string]string{ip: "User-agent: *\nAllow: /\n"}, Handler: log.wrap})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	seed := web.URL(ip, "/index.html")
	data := t.TempDir()
	crawlDir(t, data, false, seed)
	if n := len(log.take()); n != 8 { // robots.txt, index, six pages
		t.Fatalf("first crawl made %d requests, want 8", n)
	}

	// The second version of the site.
	t1 := t0.Add(24 * time.Hour)
	s.write(t, "dated.html", prose["dated.html"], "Last updated 25 November 2026 · Visitors: 12,345", nil, t1)
	s.write(t, "counter.html", prose["counter.html"], "Last updated 24 November 2026 · Visitors: 12,407", nil, t1)
	edited := strings.Fields(prose["edited.html"])
	s.write(t, "edited.html", strings.Join(edited[:300], " ")+" "+s.words(300), footer, nil, t1)
	s.write(t, "retouched.html", prose["retouched.html"], footer, nil, t1) // same bytes, new date
	if err := os.Remove(filepath.Join(s.dir, "removed.html")); err != nil {
		t.Fatal(err)
	}
	s.write(t, "fresh.html", s.words(600), footer, nil, t1)
	s.write(t, "index.html", "The index.", footer, append(pages, "fresh.html"), t1)

	crawlDir(t, data, true, seed)
	reqs := log.take()

	db, rd := openReport(t, data)
	want := map[string]string{
		"same.html": report.ChangeNone, "retouched.html": report.ChangeNone,
		"dated.html": report.ChangeTrivial, "counter.html": report.ChangeTrivial,
		"edited.html": report.ChangeReal, "index.html": report.ChangeReal,
		"removed.html": report.ChangeGone, "fresh.html": report.ChangeNew,
	}
	got := map[string]string{}
	for _, p := range rd.Pages {
		got[strings.TrimPrefix(p.URL, web.BaseURL(ip)+"/")] = p.Change
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: change %q, want %q", name, got[name], w)
		}
	}
	ch := rd.Changes
	if ch == nil || ch.Round != 1 || ch.ByChange[report.ChangeNone] != 2 || ch.ByChange[report.ChangeTrivial] != 2 ||
		ch.ByChange[report.ChangeReal] != 2 || ch.ByChange[report.ChangeGone] != 1 || ch.ByChange[report.ChangeNew] != 1 ||
		ch.NotModified != 1 || ch.Conditional != 7 {
		t.Errorf("changes %+v", ch)
	}

	// The requests: every revisit conditional on the stored validators, the
	// new page not; only the untouched page answered 304.
	byPath := map[string]condReq{}
	for _, r := range reqs {
		byPath[strings.TrimPrefix(r.path, "/")] = r
	}
	if len(reqs) != 8 { // seven revisits, the new page (robots.txt is fresh in the store)
		t.Errorf("recrawl made %d requests, want 8: %v", len(reqs), reqs)
	}
	lm0 := t0.UTC().Format(http.TimeFormat)
	for _, name := range append(pages, "index.html") {
		r := byPath[name]
		if r.inm == "" || r.ims != lm0 {
			t.Errorf("revisit of %s sent If-None-Match %q, If-Modified-Since %q (want the stored ETag and %s)", name, r.inm, r.ims, lm0)
		}
	}
	if r := byPath["fresh.html"]; r.path == "" || r.inm != "" || r.ims != "" {
		t.Errorf("the new page's request: %+v", r)
	}
	var notModified []string
	for _, r := range web.Requests() {
		if r.Status == http.StatusNotModified {
			notModified = append(notModified, r.Path)
		}
	}
	if strings.Join(notModified, " ") != "/same.html" {
		t.Errorf("304s for %v, want /same.html alone", notModified)
	}

	// The byte-identical page keeps its stored version under its new
	// validators, so that the next recrawl gets a 304.
	if rt := recordOf(t, db, web.URL(ip, "/retouched.html")); rt.ETag == "" || rt.ETag == byPath["retouched.html"].inm {
		t.Errorf("retouched.html keeps ETag %q, sent %q: the server's new ETag is not stored", rt.ETag, byPath["retouched.html"].inm)
	}

	// The record of the trivial change holds the new version and the
	// settled similarity to the previous one.
	dated := recordOf(t, db, web.URL(ip, "/dated.html"))
	if rv := dated.Revisit; rv == nil || !rv.Settled || rv.Similarity < 0.9 || rv.Similarity >= 1 || rv.PrevSHA1 == "" || rv.PrevSHA1 == dated.SHA1 {
		t.Errorf("dated.html revisit %+v (sha1 %s)", dated.Revisit, dated.SHA1)
	}
	if text, err := db.Text(dated.ID); err != nil || !strings.Contains(text, "25 November") {
		t.Errorf("dated.html stored text is not the new version: %v", err)
	}

	t.Run("report", func(t *testing.T) {
		var b strings.Builder
		if err := report.WriteText(&b, rd); err != nil {
			t.Fatal(err)
		}
		flat := strings.Join(strings.Fields(b.String()), " ")
		for _, w := range []string{"CHANGES (recrawl 1", "unchanged 2, trivially_changed 2, changed 2, new 1, moved 0, gone 1, failed 0",
			"7 conditional requests, 1 answered 304 Not Modified", "gone " + web.URL(ip, "/removed.html")} {
			if !strings.Contains(flat, w) {
				t.Errorf("text report lacks %q", w)
			}
		}
	})

	t.Run("warc", func(t *testing.T) { checkRecrawlWARC(t, db, web.URL(ip, "/same.html"), web.URL(ip, "/retouched.html")) })
}

// checkRecrawlWARC exports the recrawled store and reads it with warcio:
// the 304 is a server-not-modified revisit, the byte-identical page an
// identical-payload-digest one, each referring to the stored capture.
func checkRecrawlWARC(t *testing.T, db *storage.DB, notModified, identical string) {
	bin := testtools.Warcio(t)
	path := filepath.Join(t.TempDir(), "recrawl.warc.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := export.WARC(f, db, export.WARCOptions{Software: "Horseshoe/test"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "index", path, "--fields=warc-type,warc-target-uri,warc-record-id,warc-profile,warc-refers-to,warc-payload-digest").Output()
	if err != nil {
		t.Fatalf("warcio index: %v", err)
	}
	responses := map[string]map[string]string{}
	revisits := map[string]map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m map[string]string
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("warcio line %q: %v", line, err)
		}
		switch m["warc-type"] {
		case "response":
			responses[m["warc-target-uri"]] = m
		case "revisit":
			revisits[m["warc-target-uri"]] = m
		}
	}
	if len(revisits) != 2 {
		t.Errorf("%d revisit records, want 2: %v", len(revisits), revisits)
	}
	for u, profile := range map[string]string{notModified: storage.ProfileNotModified, identical: storage.ProfileIdenticalBody} {
		rv, resp := revisits[u], responses[u]
		if rv == nil || resp == nil || rv["warc-profile"] != profile || rv["warc-refers-to"] != resp["warc-record-id"] ||
			rv["warc-payload-digest"] != resp["warc-payload-digest"] {
			t.Errorf("%s: revisit %v, response %v", u, rv, resp)
		}
	}
}
