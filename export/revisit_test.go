//go:build e2e

package export

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// recrawlFixture is three unique pages a recrawl revisited: one answered
// 304, one sent byte-identical again, one changed (its new version stored).
func recrawlFixture() []fixturePage {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	t1 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	page := func(id uint64, path, body string, rv *storage.Revisit) fixturePage {
		resp := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nETag: \"" + path + "\"\r\n\r\n" + body
		req := "GET /" + path + " HTTP/1.1\r\nHost: a.test\r\n\r\n"
		sha := strings.TrimPrefix(WARCDigest([]byte(body)), "sha1:")
		return fixturePage{
			page: storage.Page{ID: id, URL: "http://a.test/" + path, Host: "a.test", Status: 200, ContentType: "text/html",
				Class: storage.ClassUnique, FetchedAt: t0, HasRaw: true, SHA1: sha, ETag: `"` + path + `"`, Revisit: rv},
			request: []byte(req), resp: []byte(resp),
		}
	}
	return []fixturePage{
		page(1, "same", "<p>same</p>", &storage.Revisit{Round: 1, Change: "unchanged", Status: 304, FetchedAt: t1,
			Profile:  storage.ProfileNotModified,
			Request:  []byte("GET /same HTTP/1.1\r\nHost: a.test\r\nIf-None-Match: \"same\"\r\n\r\n"),
			Response: []byte("HTTP/1.1 304 Not Modified\r\nETag: \"same\"\r\n\r\n")}),
		page(2, "again", "<p>again</p>", &storage.Revisit{Round: 1, Change: "unchanged", Status: 200, FetchedAt: t1,
			Profile:  storage.ProfileIdenticalBody,
			Request:  []byte("GET /again HTTP/1.1\r\nHost: a.test\r\n\r\n"),
			Response: []byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n")}),
		page(3, "edited", "<p>edited</p>", &storage.Revisit{Round: 1, Change: "changed", Status: 200, FetchedAt: t1, PrevFetchedAt: t0}),
	}
}

// TestWARCRecrawlRevisits: an unchanged page's revisit is a request and a
// revisit record after its capture, of the server-not-modified profile for a
// 304 and identical-payload-digest for the same payload, referring to the
// capture; a changed page has its new capture only. warcio reads them (its
// index and its CDXJ agree with ours).
func TestWARCRecrawlRevisits(t *testing.T) {
	bin := testtools.Warcio(t)
	db := fillStore(t, recrawlFixture())
	var buf, cdxj bytes.Buffer
	n, err := WARC(&buf, db, WARCOptions{Software: "Horseshoe/test", CDXJ: &cdxj, Filename: "recrawl.warc.gz"})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := readWARC(bytes.NewReader(buf.Bytes()))
	if err != nil || len(recs) != n {
		t.Fatalf("read back %d records (%v), wrote %d", len(recs), err, n)
	}
	var got []string
	respID := map[string]string{}
	for _, r := range recs {
		got = append(got, r.Type()+" "+strings.TrimPrefix(r.Get("WARC-Target-URI"), "http://a.test/"))
		if r.Type() == "response" {
			respID[r.Get("WARC-Target-URI")] = r.Get("WARC-Record-ID")
		}
		if r.Type() != "revisit" {
			continue
		}
		uri := r.Get("WARC-Target-URI")
		wantProfile := map[string]string{"http://a.test/same": storage.ProfileNotModified, "http://a.test/again": storage.ProfileIdenticalBody}[uri]
		if r.Get("WARC-Profile") != wantProfile || r.Get("WARC-Refers-To") != respID[uri] || r.Get("WARC-Refers-To-Target-URI") != uri ||
			r.Get("WARC-Refers-To-Date") != "2026-11-01T10:00:00Z" || r.Get("WARC-Date") != "2026-11-25T10:00:00Z" {
			t.Errorf("revisit of %s: profile %q refers to %q %q %q, date %q", uri, r.Get("WARC-Profile"), r.Get("WARC-Refers-To"),
				r.Get("WARC-Refers-To-Target-URI"), r.Get("WARC-Refers-To-Date"), r.Get("WARC-Date"))
		}
	}
	want := []string{"warcinfo ", "request same", "response same", "request same", "revisit same",
		"request again", "response again", "request again", "revisit again", "request edited", "response edited"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("records\n got %s\nwant %s", strings.Join(got, ", "), strings.Join(want, ", "))
	}

	path := filepath.Join(t.TempDir(), "recrawl.warc.gz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := warcioRun(t, bin, "index", path, "--fields=warc-type,warc-target-uri,warc-profile,warc-refers-to,warc-payload-digest")
	var revisits []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m map[string]string
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("warcio index line %q: %v", line, err)
		}
		if m["warc-type"] == "revisit" {
			revisits = append(revisits, m)
		}
	}
	if len(revisits) != 2 || revisits[0]["warc-profile"] != storage.ProfileNotModified || revisits[1]["warc-profile"] != storage.ProfileIdenticalBody ||
		revisits[0]["warc-refers-to"] != respID["http://a.test/same"] || revisits[0]["warc-payload-digest"] != WARCDigest([]byte("<p>same</p>")) {
		t.Errorf("warcio reads the revisits as %v", revisits)
	}
	theirs := strings.TrimSpace(string(warcioRun(t, bin, "cdx-index", path)))
	if ours := strings.TrimSpace(cdxj.String()); ours != sortedLines(theirs) {
		t.Errorf("CDXJ\nours   %s\nwarcio %s", ours, theirs)
	}
	if !strings.Contains(cdxj.String(), `"url":"http://a.test/same","mime":"warc/revisit","status":"304"`) {
		t.Errorf("no 304 revisit in the CDXJ:\n%s", cdxj.String())
	}
}

// sortedLines sorts lines byte-wise, as our CDXJ index is.
func sortedLines(s string) string {
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
