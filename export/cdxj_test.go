//go:build e2e

package export

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// cdxjFixture is the WARC fixture (uniques, a revisit, metadata records) plus unique pages whose
// URLs exercise the urlkey rules (www prefixes, ports, query order, case, IPv6, percent-encoding)
// and whose responses exercise mime and status (a 404, parameters, no Content-Type).
func cdxjFixture() []fixturePage {
	fps := fixture()
	add := func(u, resp string) {
		id := uint64(100 + len(fps))
		body := []byte(u)
		fps = append(fps, fixturePage{page: storage.Page{
			ID: id, URL: u, Class: storage.ClassUnique, Status: 200, ContentType: "text/html",
			FetchedAt: t0.Add(time.Duration(id) * time.Minute), HasRaw: true, SHA1: sha1b32(body),
		}, request: rawRequest("x", "/"), resp: append([]byte(resp), body...)})
	}
	ok := "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
	add("https://www.Example.test:8443/Path/Q?z=1&a=2&m", ok)
	add("http://www2.shop.test/cart?b=2&a=1&a=0", ok)
	add("http://WWW.upper.test/", ok)
	add("http://a.test:80/default-port", ok)
	add("https://a.test:443/default-port-tls", ok)
	add("http://[::1]:8080/v6", ok)
	add("http://127.0.0.5:8080/ip?x", ok)
	add("http://a.test/caf%C3%A9/%7Euser?q=%E2%82%AC", ok)
	add("http://a.test/missing", "HTTP/1.1 404 Not Found\r\nContent-Type: TEXT/Plain ; charset=x\r\n\r\n")
	add("http://a.test/untyped", "HTTP/1.0 200 OK\r\nServer: x\r\n\r\n")
	add("http://a.test/same-second", ok)
	add("http://a.test/same-second", "HTTP/1.1 301 Moved\r\nLocation: /x\r\nContent-Type: text/html\r\n\r\n")
	return fps
}

// TestCDXJMatchesWarcio: the CDXJ index written beside the WARC is, line for line and byte for
// byte, the index warcio's `cdx-index` builds from the same file, sorted: the same records, the
// same urlkeys, offsets, lengths, digests, mime types and statuses. And each line's byte range
// holds exactly the record it names.
func TestCDXJMatchesWarcio(t *testing.T) {
	bin := testtools.Warcio(t)
	db := fillStore(t, cdxjFixture())
	for _, uncompressed := range []bool{false, true} {
		name := "crawl.warc.gz"
		if uncompressed {
			name = "crawl.warc"
		}
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			var warc, cdxj bytes.Buffer
			n, err := WARC(&warc, db, WARCOptions{IncludeDuplicates: true, Uncompressed: uncompressed, CDXJ: &cdxj, Filename: name})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, warc.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			ours := strings.Split(strings.TrimSuffix(cdxj.String(), "\n"), "\n")
			if !slices.IsSorted(ours) {
				t.Errorf("our index is not sorted byte-wise")
			}
			theirs := strings.Split(strings.TrimSpace(string(warcioRun(t, bin, "cdx-index", path))), "\n")
			slices.Sort(theirs) // warcio writes file order; pywb wants them sorted
			if len(ours) != len(theirs) {
				t.Fatalf("we indexed %d records, warcio %d:\nours:\n%s\nwarcio:\n%s", len(ours), len(theirs), strings.Join(ours, "\n"), strings.Join(theirs, "\n"))
			}
			for i := range ours {
				if ours[i] != theirs[i] {
					t.Errorf("line %d:\nours   %s\nwarcio %s", i, ours[i], theirs[i])
				}
			}
			types := map[string]int{}
			for _, line := range ours {
				parts := strings.SplitN(line, " ", 3)
				var f cdxjFields
				if err := json.Unmarshal([]byte(parts[2]), &f); err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				off, _ := strconv.Atoi(f.Offset)
				length, _ := strconv.Atoi(f.Length)
				if uncompressed {
					length += 4 // the CRLF CRLF after the block, not counted in a plain WARC
				}
				if off+length > warc.Len() || f.Filename != name {
					t.Fatalf("%q: range or filename outside the file of %d bytes", line, warc.Len())
				}
				recs, err := readWARC(bytes.NewReader(warc.Bytes()[off : off+length]))
				if err != nil || len(recs) != 1 || recs[0].Get("WARC-Target-URI") != f.URL {
					t.Fatalf("%q: the range holds %d records (%v), want the one of %s", line, len(recs), err, f.URL)
				}
				types[recs[0].Type()]++
			}
			if types["response"] == 0 || types["revisit"] == 0 || types["metadata"] == 0 || types["request"]+types["warcinfo"] != 0 {
				t.Errorf("indexed record types %v: want responses, revisits and metadata, no requests or warcinfo", types)
			}
			if n <= len(ours) {
				t.Errorf("%d records written, %d indexed: requests and warcinfo are not indexed", n, len(ours))
			}
		})
	}
}

// surtScript prints warcio's getSurt of every line of stdin.
const surtScript = `
import { realpathSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

const pkg = dirname(dirname(realpathSync(process.argv[2])));

const { getSurt } = await import(pathToFileURL(join(pkg, "dist", "utils.js")).href);
for (const u of readFileSync(0, "utf8").split("\n").filter(Boolean)) console.log(getSurt(u));
`

// TestSURTMatchesWarcio compares SURT with warcio's getSurt on URLs generated from parts that
// each rule touches: scheme, www prefixes, case, IDN, IPv4 and IPv6 hosts, default and other
// ports, paths with dot segments and escapes, queries in any order, empty queries, fragments,
// and non-http URLs.
func TestSURTMatchesWarcio(t *testing.T) {
	bin := testtools.Warcio(t)
	node := testtools.Node(t)
	var urls []string
	for _, scheme := range []string{"http", "https", "HTTP"} {
		for _, host := range []string{"example.com", "www.example.com", "WWW3.Example.COM", "www.com", "wwwx.example.com",
			"bücher.example", "127.0.0.1", "[2001:DB8::1]", "a.b.c.d.example.org", "xn--bcher-kva.example"} {
			for _, port := range []string{"", ":80", ":443", ":8080"} {
				for _, path := range []string{"", "/", "/A/b/../C", "/a%2fb", "/a b", "/é", "/x;p=1"} {
					for _, q := range []string{"", "?", "?b=1&a=2", "?a=2&a=1&B=3", "?x", "?q=a+b&q=%20"} {
						urls = append(urls, scheme+"://"+host+port+path+q)
					}
				}
			}
		}
	}
	urls = append(urls, "http://example.com/#frag", "ftp://example.com/x", "mailto:a@b.c", "http://", "https://example.com:99999/", "dns:example.com")
	script := filepath.Join(t.TempDir(), "surt.mjs")
	if err := os.WriteFile(script, []byte(surtScript), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, bin)
	cmd.Stdin = strings.NewReader(strings.Join(urls, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	want := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(want) != len(urls) {
		t.Fatalf("warcio gave %d keys for %d URLs", len(want), len(urls))
	}
	bad := 0
	for i, u := range urls {
		if got := SURT(u); got != want[i] {
			bad++
			if bad <= 20 {
				t.Errorf("SURT(%q) = %q, warcio %q", u, got, want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d URLs differ", bad, len(urls))
	}
	t.Logf("%d URLs compared", len(urls))
}

// TestCDXJServerNotModifiedRevisit: a revisit record of the server-not-modified profile (what a
// recrawl writes for a 304: the HTTP header only, no payload, no Content-Type) is indexed as
// warcio indexes it: mime warc/revisit, status 304, the digest of the unchanged payload.
func TestCDXJServerNotModifiedRevisit(t *testing.T) {
	bin := testtools.Warcio(t)
	var warc, cdxj bytes.Buffer
	ww := newWARCWriter(&warc, WARCOptions{CDXJ: &cdxj, Filename: "recrawl.warc.gz"})
	head := []byte("HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nDate: Tue, 04 Mar 2025 05:06:07 GMT\r\n\r\n")
	fields := []WARCField{
		{"WARC-Type", "revisit"},
		{"WARC-Record-ID", "<urn:uuid:00000000-0000-4000-8000-000000000001>"},
		{"WARC-Date", "2025-04-01T10:00:00Z"},
		{"WARC-Target-URI", "http://www.a.test/page?b=2&a=1"},
		{"WARC-Profile", "http://netpreserve.org/warc/1.1/revisit/server-not-modified"},
		{"WARC-Refers-To-Target-URI", "http://www.a.test/page?b=2&a=1"},
		{"WARC-Refers-To-Date", "2025-03-04T05:06:07Z"},
		{"WARC-Payload-Digest", "sha1:FAGPM6ZCJ4PKSFYT5C6DSW6D42VOYSNF"},
	}
	if err := ww.record(fields, ctResponse, head); err != nil {
		t.Fatal(err)
	}
	if err := ww.flush(); err != nil {
		t.Fatal(err)
	}
	if err := ww.index.write(&cdxj); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "recrawl.warc.gz")
	if err := os.WriteFile(path, warc.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	theirs := strings.TrimSpace(string(warcioRun(t, bin, "cdx-index", path)))
	ours := strings.TrimSpace(cdxj.String())
	if ours != theirs {
		t.Errorf("ours   %s\nwarcio %s", ours, theirs)
	}
	want := `test,a)/page?a=1&b=2 20250401100000 {"url":"http://www.a.test/page?b=2&a=1","mime":"warc/revisit","status":"304","digest":"FAGPM6ZCJ4PKSFYT5C6DSW6D42VOYSNF","length":"`
	if !strings.HasPrefix(ours, want) {
		t.Errorf("ours %s\nwant %s...", ours, want)
	}
}
