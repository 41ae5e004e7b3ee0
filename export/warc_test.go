package export

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/warcread"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// memStore is an in-memory WARCStore.
type memStore struct {
	pages []*storage.Page
	raw   map[uint64][2][]byte
	meta  map[string]string
}

func (m *memStore) ForEachPage(fn func(*storage.Page) error) error {
	for _, p := range m.pages {
		cp := *p
		if err := fn(&cp); err != nil {
			return err
		}
	}
	return nil
}

func (m *memStore) Page(id uint64) (*storage.Page, error) {
	for _, p := range m.pages {
		if p.ID == id {
			cp := *p
			return &cp, nil
		}
	}
	return nil, storage.ErrNotFound
}

func (m *memStore) Raw(id uint64) ([]byte, []byte, error) {
	r, ok := m.raw[id]
	if !ok {
		return nil, nil, storage.ErrNotFound
	}
	return r[0], r[1], nil
}

func (m *memStore) GetMeta(name string) ([]byte, error) {
	v, ok := m.meta[name]
	if !ok {
		return nil, storage.ErrNotFound
	}
	return []byte(v), nil
}

// fixturePage is one page of the test crawl, with its raw exchange.
type fixturePage struct {
	page    storage.Page
	request []byte
	resp    []byte
	body    []byte
}

func rawRequest(host, path string) []byte {
	return fmt.Appendf(nil, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: Horseshoe/0.1\r\nAccept: text/html\r\n\r\n", path, host)
}

func rawResponse(status int, header string, body []byte) []byte {
	b := fmt.Appendf(nil, "HTTP/1.1 %d OK\r\nContent-Type: text/html; charset=utf-8\r\n%sContent-Length: %d\r\n\r\n", status, header, len(body))
	return append(b, body...)
}

func sha1b32(b []byte) string { return strings.TrimPrefix(WARCDigest(b), "sha1:") }

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)

// fixture is a small crawl: two unique pages with raw data (one redirected
// inside the fetcher), an exact duplicate with identical bytes, an exact
// duplicate by text whose bytes differ, a near duplicate, and pages that must
// not be written (unique without raw, an error and a non-HTML page).
func fixture() []fixturePage {
	bodyA := []byte("<html><title>A</title><p>the quick brown fox jumps over the lazy dog</p></html>")
	bodyB := []byte("<html><title>B</title><p>lorem ipsum dolor sit amet consectetur</p></html>")
	bodyBspaced := []byte("<html><title>B</title><p>lorem  ipsum dolor sit amet   consectetur</p></html>")
	bodyBnear := []byte("<html><title>B</title><p>lorem ipsum dolor sit amet consectetur elit</p></html>")
	mk := func(id uint64, u, final string, class storage.Class, body []byte, hasRaw bool) fixturePage {
		fp := fixturePage{page: storage.Page{
			ID: id, URL: u, FinalURL: final, Class: class, Status: 200, ContentType: "text/html",
			FetchedAt: t0.Add(time.Duration(id) * time.Second), RemoteIP: "127.0.0.1", HasRaw: hasRaw,
		}, body: body}
		if body != nil {
			fp.page.SHA1 = sha1b32(body)
		}
		if hasRaw {
			target := u
			if final != "" {
				target = final
			}
			host, path, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(target, "http://"), "https://"), "/")
			fp.request = rawRequest(host, "/"+path)
			fp.resp = rawResponse(fp.page.Status, "Server: testweb\r\n", body)
		}
		return fp
	}
	pages := []fixturePage{
		mk(1, "http://a.test/", "", storage.ClassUnique, bodyA, true),
		mk(2, "http://a.test/b", "http://a.test/b/", storage.ClassUnique, bodyB, true),
		mk(3, "http://mirror.test/", "", storage.ClassExact, bodyA, true),
		mk(4, "http://mirror.test/b2", "", storage.ClassExact, bodyBspaced, true),
		mk(5, "http://a.test/b-near", "", storage.ClassNear, bodyBnear, true),
		mk(6, "http://a.test/noraw", "", storage.ClassUnique, []byte("x"), false),
		mk(7, "http://a.test/err", "", storage.ClassError, []byte("gone"), true),
		mk(8, "http://a.test/img.png", "", storage.ClassNotHTML, []byte("\x89PNG"), true),
	}
	pages[2].page.OriginalID, pages[2].page.DuplicateOf, pages[2].page.Method, pages[2].page.Similarity = 1, "http://a.test/", "exact", 1
	pages[3].page.OriginalID, pages[3].page.DuplicateOf, pages[3].page.Method, pages[3].page.Similarity = 2, "http://a.test/b/", "exact", 1
	pages[4].page.OriginalID, pages[4].page.DuplicateOf, pages[4].page.Method, pages[4].page.Similarity = 2, "http://a.test/b/", "supershingle", 0.96
	pages[6].page.Status = 410
	return pages
}

func newMemStore(fps []fixturePage) *memStore {
	m := &memStore{raw: map[uint64][2][]byte{}, meta: map[string]string{
		"seeds":   "http://a.test/\nhttp://mirror.test/",
		"started": t0.Format(time.RFC3339Nano),
	}}
	for i := range fps {
		p := fps[i].page
		m.pages = append(m.pages, &p)
		if p.HasRaw {
			m.raw[p.ID] = [2][]byte{fps[i].request, fps[i].resp}
		}
	}
	return m
}

// wantRecord is what one written record must say.
type wantRecord struct {
	typ, uri string
}

func wantRecords(dups bool) []wantRecord {
	w := []wantRecord{
		{"warcinfo", ""},
		{"request", "http://a.test/"}, {"response", "http://a.test/"},
		{"request", "http://a.test/b/"}, {"response", "http://a.test/b/"},
	}
	if dups {
		w = slices.Insert(w, 5,
			wantRecord{"request", "http://mirror.test/"}, wantRecord{"revisit", "http://mirror.test/"},
			wantRecord{"metadata", "http://mirror.test/b2"},
			wantRecord{"metadata", "http://a.test/b-near"})
	}
	return w
}

func writeFixture(tb testing.TB, st WARCStore, o WARCOptions) ([]byte, int) {
	tb.Helper()
	if o.Now == nil {
		o.Now = func() time.Time { return t0.Add(time.Hour) }
	}
	var buf bytes.Buffer
	n, err := WARC(&buf, st, o)
	if err != nil {
		tb.Fatalf("WARC: %v", err)
	}
	return buf.Bytes(), n
}

var recordIDRe = regexp.MustCompile(`^<urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}>$`)

func TestWARCLayout(t *testing.T) {
	for _, tc := range []struct {
		name         string
		dups, plain  bool
		wantSoftware string
	}{
		{"gzip unique only", false, false, "Horseshoe/0.1.0"},
		{"gzip with duplicates", true, false, "Horseshoe/0.1.0"},
		{"plain with duplicates", true, true, "Horseshoe/9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fps := fixture()
			st := newMemStore(fps)
			out, n := writeFixture(t, st, WARCOptions{
				IncludeDuplicates: tc.dups, Software: tc.wantSoftware, Uncompressed: tc.plain,
				Settings: map[string]string{"politeness.delay": "1s", "crawl.scope": "host", "bad\nkey": "multi\r\nline"},
			})
			if gz := len(out) > 2 && out[0] == 0x1f && out[1] == 0x8b; gz == tc.plain {
				t.Fatalf("gzip output = %v, want %v", gz, !tc.plain)
			}
			recs, err := readWARC(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("readWARC: %v", err)
			}
			want := wantRecords(tc.dups)
			if n != len(recs) || n != len(want) {
				t.Fatalf("WARC returned %d, read %d records, want %d", n, len(recs), len(want))
			}
			byID := map[string]*warcRecord{}
			for i := range recs {
				r := &recs[i]
				if r.Version != "WARC/1.1" {
					t.Errorf("record %d version %q", i, r.Version)
				}
				if r.Type() != want[i].typ || r.Get("WARC-Target-URI") != want[i].uri {
					t.Errorf("record %d = %s %s, want %s %s", i, r.Type(), r.Get("WARC-Target-URI"), want[i].typ, want[i].uri)
				}
				id := r.Get("WARC-Record-ID")
				if !recordIDRe.MatchString(id) {
					t.Errorf("record %d id %q is not a v4 urn:uuid", i, id)
				}
				if byID[id] != nil {
					t.Errorf("record id %s used twice", id)
				}
				byID[id] = r
				if _, err := time.Parse(time.RFC3339Nano, r.Get("WARC-Date")); err != nil || !strings.HasSuffix(r.Get("WARC-Date"), "Z") {
					t.Errorf("record %d WARC-Date %q is not a UTC W3C date: %v", i, r.Get("WARC-Date"), err)
				}
				if i > 0 && r.Get("WARC-Warcinfo-ID") != recs[0].Get("WARC-Record-ID") {
					t.Errorf("record %d WARC-Warcinfo-ID %q, want the warcinfo's", i, r.Get("WARC-Warcinfo-ID"))
				}
				if r.Get("WARC-Block-Digest") != WARCDigest(r.Block) {
					t.Errorf("record %d block digest %q", i, r.Get("WARC-Block-Digest"))
				}
			}
			info := string(recs[0].Block)
			for _, line := range []string{
				"software: " + tc.wantSoftware + "\r\n", "format: WARC File Format 1.1\r\n",
				"seed: http://a.test/\r\n", "seed: http://mirror.test/\r\n", "started: " + t0.Format(time.RFC3339Nano) + "\r\n",
				"crawl.scope: host\r\npoliteness.delay: 1s\r\n", "bad-key: multi  line\r\n",
			} {
				if !strings.Contains(info, line) {
					t.Errorf("warcinfo lacks %q:\n%s", line, info)
				}
			}
			if recs[0].Get("Content-Type") != "application/warc-fields" || recs[0].Get("WARC-Date") != "2025-03-04T06:06:07.123456Z" {
				t.Errorf("warcinfo header: %v", recs[0].Header)
			}
			checkPairs(t, recs, byID, fps)
		})
	}
}

// checkPairs checks request/response/revisit/metadata records against the
// fixture pages they came from.
func checkPairs(t *testing.T, recs []warcRecord, byID map[string]*warcRecord, fps []fixturePage) {
	t.Helper()
	page := map[string]fixturePage{}
	for _, fp := range fps {
		u := fp.page.URL
		if fp.page.FinalURL != "" {
			u = fp.page.FinalURL
		}
		page[u] = fp
	}
	origResp := map[string]*warcRecord{} // uri -> response record
	for i := range recs {
		if recs[i].Type() == "response" {
			origResp[recs[i].Get("WARC-Target-URI")] = &recs[i]
		}
	}
	for i := range recs {
		r := &recs[i]
		fp := page[r.Get("WARC-Target-URI")]
		switch r.Type() {
		case "request", "response", "revisit":
			other := byID[r.Get("WARC-Concurrent-To")]
			if other == nil || other.Get("WARC-Concurrent-To") != r.Get("WARC-Record-ID") {
				t.Errorf("%s %s: WARC-Concurrent-To does not link a pair", r.Type(), r.Get("WARC-Target-URI"))
			}
			if r.Get("WARC-IP-Address") != "127.0.0.1" {
				t.Errorf("%s: WARC-IP-Address %q", r.Type(), r.Get("WARC-IP-Address"))
			}
			if r.Get("WARC-Date") != warcDate(fp.page.FetchedAt) {
				t.Errorf("%s: WARC-Date %q, want %q", r.Type(), r.Get("WARC-Date"), warcDate(fp.page.FetchedAt))
			}
		}
		switch r.Type() {
		case "request":
			if !bytes.Equal(r.Block, fp.request) || r.Get("Content-Type") != "application/http;msgtype=request" {
				t.Errorf("request %s: block %q", fp.page.URL, r.Block)
			}
		case "response":
			if !bytes.Equal(r.Block, fp.resp) || r.Get("Content-Type") != "application/http;msgtype=response" {
				t.Errorf("response %s: block differs", fp.page.URL)
			}
			_, payload, err := r.HTTPPayload()
			if err != nil || !bytes.Equal(payload, fp.body) {
				t.Errorf("response %s: payload %q, %v", fp.page.URL, payload, err)
			}
			if want := "sha1:" + fp.page.SHA1; r.Get("WARC-Payload-Digest") != want || WARCDigest(payload) != want {
				t.Errorf("response %s: payload digest %q, want %q", fp.page.URL, r.Get("WARC-Payload-Digest"), want)
			}
		case "revisit":
			orig := origResp[fp.page.DuplicateOf]
			if orig == nil {
				t.Fatalf("revisit %s: original %s not written", fp.page.URL, fp.page.DuplicateOf)
			}
			head, _, _ := bytes.Cut(fp.resp, []byte("\r\n\r\n"))
			for _, c := range []struct{ field, got, want string }{
				{"block", string(r.Block), string(head) + "\r\n\r\n"},
				{"WARC-Profile", r.Get("WARC-Profile"), RevisitProfile},
				{"WARC-Refers-To-Target-URI", r.Get("WARC-Refers-To-Target-URI"), orig.Get("WARC-Target-URI")},
				{"WARC-Refers-To-Date", r.Get("WARC-Refers-To-Date"), orig.Get("WARC-Date")},
				{"WARC-Refers-To", r.Get("WARC-Refers-To"), orig.Get("WARC-Record-ID")},
				{"WARC-Payload-Digest", r.Get("WARC-Payload-Digest"), orig.Get("WARC-Payload-Digest")},
				{"WARC-Payload-Digest of the body", r.Get("WARC-Payload-Digest"), WARCDigest(fp.body)},
				{"Content-Type", r.Get("Content-Type"), "application/http;msgtype=response"},
			} {
				if c.got != c.want {
					t.Errorf("revisit %s: %s = %q, want %q", fp.page.URL, c.field, c.got, c.want)
				}
			}
		case "metadata":
			var info DuplicateInfo
			if err := json.Unmarshal(r.Block, &info); err != nil {
				t.Fatalf("metadata %s: %v", fp.page.URL, err)
			}
			orig := origResp[fp.page.DuplicateOf]
			if orig == nil || r.Get("WARC-Refers-To") != orig.Get("WARC-Record-ID") {
				t.Errorf("metadata %s: WARC-Refers-To %q does not name the original's response", fp.page.URL, r.Get("WARC-Refers-To"))
			}
			want := DuplicateInfo{
				URL: fp.page.URL, Class: string(fp.page.Class), DuplicateOf: fp.page.DuplicateOf, OriginalDate: orig.Get("WARC-Date"),
				Method: fp.page.Method, Similarity: fp.page.Similarity, FetchedAt: fp.page.FetchedAt, PayloadSHA1: "sha1:" + fp.page.SHA1,
			}
			if info != want || r.Get("Content-Type") != "application/json" {
				t.Errorf("metadata %s = %+v, want %+v", fp.page.URL, info, want)
			}
		}
	}
}

// TestWARCOneGzipMemberPerRecord reads the file member by member: each member
// must hold exactly one whole record.
func TestWARCOneGzipMemberPerRecord(t *testing.T) {
	out, n := writeFixture(t, newMemStore(fixture()), WARCOptions{IncludeDuplicates: true})
	offsets := gzipMembers(t, out)
	if len(offsets) != n {
		t.Fatalf("%d gzip members, %d records", len(offsets), n)
	}
	for i, off := range offsets {
		end := len(out)
		if i+1 < len(offsets) {
			end = offsets[i+1]
		}
		recs, err := readWARC(bytes.NewReader(out[off:end]))
		if err != nil || len(recs) != 1 {
			t.Fatalf("member %d at %d: %d records, %v", i, off, len(recs), err)
		}
	}
}

// gzipMembers returns the offset of every gzip member in b.
func gzipMembers(tb testing.TB, b []byte) []int {
	tb.Helper()
	var offs []int
	r := bytes.NewReader(b)
	br := bufio.NewReader(r)
	for {
		off := len(b) - r.Len() - br.Buffered()
		if _, err := br.Peek(1); err == io.EOF {
			return offs
		}
		offs = append(offs, off)
		zr, err := gzip.NewReader(br)
		if err != nil {
			tb.Fatalf("gzip member at %d: %v", off, err)
		}
		zr.Multistream(false)
		if _, err := io.Copy(io.Discard, zr); err != nil {
			tb.Fatalf("gzip member at %d: %v", off, err)
		}
	}
}

func TestWARCExactDuplicateOfUnwrittenOriginal(t *testing.T) {
	fps := fixture()
	fps[0].page.HasRaw = false // the original of page 3 has no raw exchange
	out, _ := writeFixture(t, newMemStore(fps), WARCOptions{IncludeDuplicates: true})
	recs, err := readWARC(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var rev *warcRecord
	for i := range recs {
		if recs[i].Type() == "revisit" {
			rev = &recs[i]
		}
	}
	if rev == nil {
		t.Fatal("no revisit record")
	}
	// It still refers to the original capture by URI and date (as in a
	// previous WARC), but not to a record id that is not in this file.
	if rev.Get("WARC-Refers-To") != "" || rev.Get("WARC-Refers-To-Target-URI") != "http://a.test/" ||
		rev.Get("WARC-Refers-To-Date") != warcDate(fps[0].page.FetchedAt) {
		t.Errorf("revisit header %v", rev.Header)
	}
}

func TestWARCFieldsCannotInjectHeaders(t *testing.T) {
	fps := fixture()[:1]
	fps[0].page.URL = "http://a.test/x\r\nWARC-Type: evil"
	fps[0].page.RemoteIP = "1.2.3.4\nX: y"
	out, _ := writeFixture(t, newMemStore(fps), WARCOptions{Settings: map[string]string{"k": "v\r\n\r\nWARC/1.1"}})
	recs, err := readWARC(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs {
		for _, f := range r.Header {
			if f.Name == "X" || (f.Name == "WARC-Type" && f.Value == "evil") {
				t.Errorf("injected field %v", f)
			}
		}
	}
	if got := recs[2].Get("WARC-Target-URI"); got != "http://a.test/x%0D%0AWARC-Type:%20evil" {
		t.Errorf("target uri %q", got)
	}
}

func TestReadWARCRejects(t *testing.T) {
	good := "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Block-Digest: " + WARCDigest([]byte("hello")) + "\r\nContent-Length: 5\r\n\r\nhello\r\n\r\n"
	for _, tc := range []struct {
		name, in string
		records  int
		wantErr  bool
	}{
		{"good", good, 1, false},
		{"two", good + good, 2, false},
		{"empty", "", 0, false},
		{"warc 1.0 and folded field", "WARC/1.0\r\nWARC-Type: resource\r\nX: a\r\n  b\r\nContent-Length: 0\r\n\r\n\r\n\r\n", 1, false},
		{"bad version", strings.Replace(good, "WARC/1.1", "WARC/2.0", 1), 0, true},
		{"no content-length", strings.Replace(good, "Content-Length: 5\r\n", "", 1), 0, true},
		{"negative content-length", strings.Replace(good, "Content-Length: 5", "Content-Length: -5", 1), 0, true},
		{"content-length too small", strings.Replace(good, "Content-Length: 5", "Content-Length: 4", 1), 0, true},
		{"content-length too large", strings.Replace(good, "Content-Length: 5", "Content-Length: 9", 1), 0, true},
		{"truncated block", good[:len(good)-6], 0, true},
		{"wrong digest", strings.Replace(good, "hello\r\n", "hellp\r\n", 1), 0, true},
		{"bare LF header", strings.Replace(good, "WARC-Type: resource\r\n", "WARC-Type: resource\n", 1), 0, true},
		{"field without colon", strings.Replace(good, "WARC-Type: resource", "WARC-Type resource", 1), 0, true},
		{"garbage after record", good + "junk", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, gz := range []bool{false, true} {
				in := []byte(tc.in)
				if gz && len(in) > 0 {
					var b bytes.Buffer
					zw := gzip.NewWriter(&b)
					zw.Write(in)
					zw.Close()
					in = b.Bytes()
				}
				recs, err := readWARC(bytes.NewReader(in))
				if (err != nil) != tc.wantErr || len(recs) != tc.records {
					t.Errorf("gzip=%v: %d records, err %v; want %d records, error %v", gz, len(recs), err, tc.records, tc.wantErr)
				}
				if err != nil && !errors.Is(err, warcread.ErrFormat) && !tc.wantErr {
					t.Errorf("gzip=%v: error %v is not warcread.ErrFormat", gz, err)
				}
			}
		})
	}
}

// TestWARCStoreErrors: a failing store read stops the export with its error.
func TestWARCStoreErrors(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name       string
		breakStore func(*memStore)
	}{
		{"raw missing", func(m *memStore) { delete(m.raw, 1) }},
		{"meta fails", func(m *memStore) { m.meta = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMemStore(fixture())
			tc.breakStore(m)
			st := WARCStore(m)
			if m.meta == nil {
				st = failingMeta{m, boom}
			}
			_, err := WARC(io.Discard, st, WARCOptions{})
			if err == nil {
				t.Fatal("no error")
			}
			if m.meta == nil && !errors.Is(err, boom) {
				t.Errorf("error %v does not wrap the store's", err)
			}
			if m.meta != nil && !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("error %v does not wrap ErrNotFound", err)
			}
		})
	}
}

type failingMeta struct {
	*memStore
	err error
}

func (f failingMeta) GetMeta(string) ([]byte, error) { return nil, f.err }

func TestWARCDeterministicWithRand(t *testing.T) {
	write := func() []byte {
		out, _ := writeFixture(t, newMemStore(fixture()), WARCOptions{
			IncludeDuplicates: true, Uncompressed: true, Rand: rand.NewChaCha8([32]byte{1}),
		})
		return out
	}
	a, b := write(), write()
	if !bytes.Equal(a, b) {
		t.Fatal("same Rand and Now gave different output")
	}
}

func FuzzWARCRoundTrip(f *testing.F) {
	f.Add([]byte("<p>hello</p>"), "X-Test", "value", "http://a.test/p?q=1", uint16(200), true)
	f.Add([]byte(""), "Set-Cookie", "a=b; Path=/", "https://b.test/", uint16(404), false)
	f.Add([]byte("\r\n\r\nWARC/1.1\r\n"), "Link", "<x>; rel=next", "http://c.test/\r\n", uint16(301), true)
	f.Fuzz(func(t *testing.T, body []byte, hname, hvalue, u string, status uint16, dups bool) {
		if !validToken(hname) || strings.ContainsAny(hvalue, "\r\n") {
			t.Skip()
		}
		resp := rawResponse(int(status%600), hname+": "+hvalue+"\r\n", body)
		req := rawRequest("a.test", "/p")
		sha := sha1b32(body)
		st := &memStore{
			pages: []*storage.Page{
				{ID: 1, URL: u, Class: storage.ClassUnique, FetchedAt: t0, SHA1: sha, HasRaw: true, RemoteIP: "::1"},
				{ID: 2, URL: u + "dup", Class: storage.ClassExact, OriginalID: 1, DuplicateOf: u, FetchedAt: t0, SHA1: sha, HasRaw: true},
				{ID: 3, URL: u + "near", Class: storage.ClassNear, OriginalID: 1, DuplicateOf: u, Similarity: 0.9, FetchedAt: t0},
			},
			raw: map[uint64][2][]byte{1: {req, resp}, 2: {req, resp}},
		}
		var buf bytes.Buffer
		n, err := WARC(&buf, st, WARCOptions{IncludeDuplicates: dups})
		if err != nil {
			t.Fatal(err)
		}
		recs, err := readWARC(&buf)
		if err != nil {
			t.Fatalf("readWARC: %v", err)
		}
		want := []string{"warcinfo", "request", "response"}
		if dups {
			want = append(want, "request", "revisit", "metadata")
		}
		if n != len(recs) || len(recs) != len(want) {
			t.Fatalf("wrote %d, read %d, want %d", n, len(recs), len(want))
		}
		for i, r := range recs {
			if r.Type() != want[i] {
				t.Fatalf("record %d type %q, want %q", i, r.Type(), want[i])
			}
		}
		if !bytes.Equal(recs[1].Block, req) || !bytes.Equal(recs[2].Block, resp) {
			t.Fatal("request or response block changed")
		}
		if _, p, err := recs[2].HTTPPayload(); err != nil || !bytes.Equal(p, body) || recs[2].Get("WARC-Payload-Digest") != "sha1:"+sha {
			t.Fatalf("payload %q digest %q, %v", p, recs[2].Get("WARC-Payload-Digest"), err)
		}
		if dups {
			head, _, _ := splitHTTP(resp)
			if !bytes.Equal(recs[4].Block, head) || recs[4].Get("WARC-Payload-Digest") != "sha1:"+sha {
				t.Fatalf("revisit block %q", recs[4].Block)
			}
			var info DuplicateInfo
			if err := json.Unmarshal(recs[5].Block, &info); err != nil || info.DuplicateOf != safeURI(u) || recs[5].Get("WARC-Target-URI") != safeURI(u+"near") {
				t.Fatalf("metadata %q: %v", recs[5].Block, err)
			}
		}
	})
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}

func BenchmarkWARC(b *testing.B) {
	body := bytes.Repeat([]byte("<p>the quick brown fox jumps over the lazy dog</p>\n"), 400) // ~20 KB
	st := &memStore{raw: map[uint64][2][]byte{}}
	var total int64
	for i := range uint64(200) {
		p := &storage.Page{ID: i + 1, URL: fmt.Sprintf("http://a.test/%d", i), Class: storage.ClassUnique,
			FetchedAt: t0, SHA1: sha1b32(body), HasRaw: true, RemoteIP: "127.0.0.1"}
		st.pages = append(st.pages, p)
		req, resp := rawRequest("a.test", "/"), rawResponse(200, "", body)
		st.raw[p.ID] = [2][]byte{req, resp}
		total += int64(len(req) + len(resp))
	}
	for _, plain := range []bool{false, true} {
		b.Run(fmt.Sprintf("uncompressed=%v", plain), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(total)
			for b.Loop() {
				if _, err := WARC(io.Discard, st, WARCOptions{Uncompressed: plain}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkReadWARC(b *testing.B) {
	body := bytes.Repeat([]byte("<p>the quick brown fox jumps over the lazy dog</p>\n"), 400)
	st := &memStore{raw: map[uint64][2][]byte{}}
	for i := range uint64(200) {
		p := &storage.Page{ID: i + 1, URL: fmt.Sprintf("http://a.test/%d", i), Class: storage.ClassUnique, FetchedAt: t0, HasRaw: true}
		st.pages = append(st.pages, p)
		st.raw[p.ID] = [2][]byte{rawRequest("a.test", "/"), rawResponse(200, "", body)}
	}
	var buf bytes.Buffer
	if _, err := WARC(&buf, st, WARCOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(buf.Len()))
	for b.Loop() {
		if _, err := readWARC(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSafeURI(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://a.test/p?q=1#f", "http://a.test/p?q=1#f"},
		{"http://a.test/%C3%A9", "http://a.test/%C3%A9"},
		{"http://a.test/é", "http://a.test/%C3%A9"},
		{"http://a.test/a b", "http://a.test/a%20b"},
		{"http://a.test/\r\nX: y", "http://a.test/%0D%0AX:%20y"},
		{"\x7f\xff", "%7F%FF"},
		{"", ""},
	} {
		if got := safeURI(tc.in); got != tc.want {
			t.Errorf("safeURI(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzReadWARC: arbitrary input never panics, and whatever readWARC accepts
// has blocks matching their Content-Length.
func FuzzReadWARC(f *testing.F) {
	f.Add([]byte("WARC/1.1\r\nContent-Length: 2\r\n\r\nhi\r\n\r\n"))
	f.Add([]byte("WARC/1.0\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n\r\n\r\n"))
	out, _ := writeFixture(f, newMemStore(fixture()), WARCOptions{IncludeDuplicates: true, Uncompressed: true})
	f.Add(out)
	f.Fuzz(func(t *testing.T, in []byte) {
		recs, _ := readWARC(bytes.NewReader(in))
		for _, r := range recs {
			if fmt.Sprint(len(r.Block)) != strings.TrimLeft(r.Get("Content-Length"), "+0") && len(r.Block) != 0 {
				t.Fatalf("block of %d bytes, Content-Length %q", len(r.Block), r.Get("Content-Length"))
			}
		}
	})
}

func ExampleWARC() {
	body := []byte("<p>hello</p>")
	resp := fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	st := &memStore{
		pages: []*storage.Page{{ID: 1, URL: "http://a.test/", Class: storage.ClassUnique, FetchedAt: t0, HasRaw: true}},
		raw:   map[uint64][2][]byte{1: {[]byte("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n"), resp}},
	}
	var buf bytes.Buffer
	if _, err := WARC(&buf, st, WARCOptions{Software: "Horseshoe/0.1.0"}); err != nil {
		fmt.Println(err)
		return
	}
	recs, err := readWARC(&buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range recs {
		fmt.Println(strings.TrimSpace(r.Type() + " " + r.Get("WARC-Target-URI") + " " + r.Get("WARC-Payload-Digest")))
	}
	// Output:
	// warcinfo
	// request http://a.test/
	// response http://a.test/ sha1:EH2SPSI2J7IA53E7X7MLVOIBNGZPXYIP
}
