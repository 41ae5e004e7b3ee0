package crawl_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/fetch"
	"github.com/horseshoe-crawler/horseshoe/sitemap"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Sitemaps are bounded by crawl.sitemap_max_bytes (the protocol's 50 MB),
// not fetch.max_body_size, and a sitemap cut at that bound or broken off
// keeps the entries received whole (sitemaps.go, fetch.FetchSitemap).

const urlsetHead = `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
	`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n"

// longEntry is the i-th <url> of a generated sitemap: every entry of one
// base and prefix has the same length (i < 10^7), about 380 bytes, so that
// 50,000 of them are well over fetch.max_body_size.
func longEntry(base, prefix string, i int) string {
	return "<url><loc>" + locOf(base, prefix, i) + "</loc><lastmod>2024-05-06T07:08:09+00:00</lastmod>" +
		"<changefreq>weekly</changefreq><priority>0.5</priority></url>\n"
}

// locOf is the URL of longEntry(base, prefix, i).
func locOf(base, prefix string, i int) string {
	return fmt.Sprintf("%s/%s/%s/item-%07d", base, prefix, strings.Repeat("catalogue-section-", 12), i)
}

// hintsFrom counts the URLs whose hint came from sitemapURL and that
// start with base/prefix/.
func hintsFrom(res crawlResult, sitemapURL, base, prefix string) int {
	n := 0
	for u, h := range res.Hints {
		if h.Sitemap == sitemapURL && strings.HasPrefix(u, base+"/"+prefix+"/") {
			n++
		}
	}
	return n
}

// TestSitemapLargerThanMaxBodySize: a valid sitemap of 50,000 URLs (the
// protocol's limit), over fetch.max_body_size uncompressed, is read whole:
// every URL queued, none lost at the page body limit.
func TestSitemapLargerThanMaxBodySize(t *testing.T) {
	if testing.Short() {
		t.Skip("queues 50,000 URLs (seconds)")
	}
	const n = sitemap.MaxURLs
	s := &site{Pages: map[string]page{}}
	srv := startServer(t, "127.0.0.78", s.handler(), &hitLog{})
	base := srv.Base("127.0.0.78")
	var b strings.Builder
	b.WriteString(urlsetHead)
	for i := 0; i < n; i++ {
		b.WriteString(longEntry(base, "big", i))
	}
	b.WriteString("</urlset>\n")
	if b.Len() <= fetch.DefaultMaxBodySize || int64(b.Len()) > sitemap.MaxBytes {
		t.Fatalf("the sitemap is %d bytes: want over fetch.max_body_size (%d), within %d", b.Len(), fetch.DefaultMaxBodySize, sitemap.MaxBytes)
	}
	t.Logf("sitemap of %d URLs, %d bytes", n, b.Len())
	s.Pages["/robots.txt"] = page{Body: "User-agent: *\nAllow: /\nSitemap: " + base + "/big.xml\n"}
	s.Pages["/"] = page{Body: htmlPage("home", "")}
	s.Pages["/big.xml"] = page{Header: xmlType, Body: b.String()}

	// Two leases: the seed and the sitemap; the URLs it lists stay queued.
	// The timeout is a hang bound.
	res := runCrawl(t, crawlConfig{MaxPages: 2, Timeout: 5 * time.Minute}, base+"/")
	if rec := res.page(t, base+"/big.xml"); rec.Class != storage.ClassNotHTML || rec.Error != "" || rec.Bytes != b.Len() {
		t.Errorf("sitemap: class %s, %d bytes of %d, error %q", rec.Class, rec.Bytes, b.Len(), rec.Error)
	}
	if got := hintsFrom(res, base+"/big.xml", base, "big"); got != n {
		t.Errorf("%d URLs of the sitemap queued, want all %d", got, n)
	}
	assertNotes(t, res, map[string]string{
		srv.HostPort("127.0.0.78") + " (sitemaps)": fmt.Sprintf("sitemap files 1, URLs listed %d, queued %d", n, n),
	})
}

// TestSitemapBrokenOff: a sitemap whose body breaks off after n complete
// entries and part of one more (the server stalls until the fetch times
// out, or closes the connection) keeps the n entries, drops the partial
// one, and is recorded as truncated (page record, report note).
func TestSitemapBrokenOff(t *testing.T) {
	const n = 7
	var log hitLog
	s := &site{Pages: map[string]page{}}
	inner := s.handler()
	var base string
	body := func(name string) string {
		var b strings.Builder
		b.WriteString(urlsetHead)
		for i := 0; i < n; i++ {
			b.WriteString(longEntry(base, name, i))
		}
		last := longEntry(base, name, n)
		b.WriteString(last[:strings.Index(last, "</lastmod>")]) // its <loc> whole, not its </url>
		return b.String()
	}
	srv := startServer(t, "127.0.0.78", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stall.xml": // n entries and a half, then nothing until the fetch times out
			w.Header().Set("Content-Type", "application/xml")
			w.Write([]byte(body("stall")))
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Error(err)
			}
			<-r.Context().Done()
		case "/closed.xml": // n entries and a half of a longer announced body, then the connection closes
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			b := body("closed")
			fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: %d\r\n\r\n%s", len(b)+10000, b)
			buf.Flush()
		default:
			inner.ServeHTTP(w, r)
		}
	}), &log)
	base = srv.Base("127.0.0.78")
	s.Pages["/robots.txt"] = page{Body: "User-agent: *\nAllow: /\nSitemap: " + base + "/stall.xml\nSitemap: " + base + "/closed.xml\n"}
	s.Pages["/"] = page{Body: htmlPage("home", "")}

	// The stall lasts until fetch.timeout (5s): the timeout is a hang bound.
	res := runCrawl(t, crawlConfig{Timeout: 5 * time.Minute}, base+"/")
	hp := srv.HostPort("127.0.0.78")
	for _, c := range []struct{ name, class string }{{"stall", "timeout"}, {"closed", ""}} {
		u := base + "/" + c.name + ".xml"
		if got := hintsFrom(res, u, base, c.name); got != n {
			t.Errorf("%s: %d entries kept, want the %d received whole", c.name, got, n)
		}
		for i := 0; i < n; i++ {
			res.page(t, locOf(base, c.name, i)) // fails the test if not crawled
		}
		if _, ok := res.Pages[locOf(base, c.name, n)]; ok {
			t.Errorf("%s: the entry received in part was queued", c.name)
		}
		rec := res.page(t, u)
		if rec.Class != storage.ClassNotHTML || !strings.Contains(rec.Error, "truncated") || (c.class != "" && rec.ErrorClass != c.class) {
			t.Errorf("%s: class %s, error class %s, error %q: want not_html, truncated (%s)", c.name, rec.Class, rec.ErrorClass, rec.Error, c.class)
		}
		var note string
		for _, nt := range res.Notes {
			if nt.Kind == "sitemap" && nt.Host == hp && strings.HasPrefix(nt.Detail, "/"+c.name+".xml: ") {
				note = nt.Detail
			}
		}
		if want := fmt.Sprintf("/%s.xml: urlset, %d entries, %d queued, truncated: broken off, error: ", c.name, n, n); !strings.HasPrefix(note, want) {
			t.Errorf("%s: note %q, want it to start %q", c.name, note, want)
		}
	}
}

// endlessURLSet writes a urlset of numbered entries to w until a write
// fails (the client stopped reading), then reports the bytes written.
func endlessURLSet(w http.ResponseWriter, base, prefix string, written *atomic.Int64) {
	w.Header().Set("Content-Type", "application/xml")
	bw := bufio.NewWriterSize(w, 64<<10)
	k, err := bw.WriteString(urlsetHead)
	written.Add(int64(k))
	for i := 0; err == nil && i < 10_000_000; i++ {
		k, err = bw.WriteString(longEntry(base, prefix, i))
		written.Add(int64(k))
	}
}

// TestSitemapOverLimit: a sitemap longer than crawl.sitemap_max_bytes (here
// an endless one) is read up to the bound and no further: the entries
// complete within its first sitemap_max_bytes bytes are kept, the cut one
// dropped, and it is recorded as cut at the bytes limit.
func TestSitemapOverLimit(t *testing.T) {
	const limit = 3 << 20 // 3 MiB, under fetch.max_body_size
	var written atomic.Int64
	s := &site{Pages: map[string]page{}}
	inner := s.handler()
	var base string
	srv := startServer(t, "127.0.0.78", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/endless.xml" {
			endlessURLSet(w, base, "endless", &written)
			return
		}
		inner.ServeHTTP(w, r)
	}), &hitLog{})
	base = srv.Base("127.0.0.78")
	s.Pages["/robots.txt"] = page{Body: "User-agent: *\nAllow: /\nSitemap: " + base + "/endless.xml\n"}
	s.Pages["/"] = page{Body: htmlPage("home", "")}
	entry := len(longEntry(base, "endless", 0))
	want := (limit - len(urlsetHead)) / entry
	if (limit-len(urlsetHead))%entry == 0 {
		t.Fatalf("the cut falls between entries: choose another limit")
	}

	res := runCrawl(t, crawlConfig{MaxPages: 2, SitemapBytes: limit, Timeout: 5 * time.Minute}, base+"/")
	u := base + "/endless.xml"
	if got := hintsFrom(res, u, base, "endless"); got != want {
		t.Errorf("%d entries kept, want the %d complete within the first %d bytes", got, want, limit)
	}
	rec := res.page(t, u)
	if rec.Bytes != limit || rec.ErrorClass != "sitemap" || !strings.Contains(rec.Error, fmt.Sprintf("more than %d bytes uncompressed (crawl.sitemap_max_bytes)", limit)) {
		t.Errorf("sitemap record: %d bytes, error class %s, error %q", rec.Bytes, rec.ErrorClass, rec.Error)
	}
	hp := srv.HostPort("127.0.0.78")
	assertNotes(t, res, map[string]string{
		hp + " (sitemaps)":   fmt.Sprintf("sitemap files 1, URLs listed %d, queued %d", want, want),
		hp + " /endless.xml": fmt.Sprintf("urlset, %d entries, %d queued, cut at the bytes limit", want, want),
	})
	// Bounded: the server stopped once the client stopped reading, socket
	// buffers past the bound (a work bound: Linux's loopback buffers grow to
	// 4 MiB sent and 6 MiB received at most, tcp_wmem and tcp_rmem).
	w := written.Load()
	t.Logf("the server wrote %d bytes", w)
	if w > limit+32<<20 {
		t.Errorf("the server wrote %d bytes: the read went on past the bound", w)
	}
}

// TestSitemapGzipBomb: a gzip bomb (entries, then 256 MiB of white space
// about 250 KB gzipped, then one more entry), as a .gz file and with
// Content-Encoding, is inflated only up to crawl.sitemap_max_bytes (here
// over fetch.max_body_size): the entries before the bound are kept, the
// late one is not, and the sitemap is recorded as cut at the bytes limit
// with an error saying so.
func TestSitemapGzipBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("compresses and reads two bombs, queues 60,000 URLs (seconds)")
	}
	const limit = 12 << 20
	const n = 30_000 // about 11 MiB of entries: over fetch.max_body_size, within limit
	s := &site{Pages: map[string]page{}}
	srv := startServer(t, "127.0.0.78", s.handler(), &hitLog{})
	base := srv.Base("127.0.0.78")
	bomb := func(prefix string) string {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
		zw.Write([]byte(urlsetHead))
		for i := 0; i < n; i++ {
			zw.Write([]byte(longEntry(base, prefix, i)))
		}
		chunk := bytes.Repeat([]byte(" "), 1<<20)
		for i := 0; i < 256; i++ {
			zw.Write(chunk)
		}
		zw.Write([]byte(longEntry(base, prefix+"-late", 0) + "</urlset>"))
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if size := len(urlsetHead) + n*len(longEntry(base, "bomb-ce", 0)); size <= fetch.DefaultMaxBodySize || size >= limit {
		t.Fatalf("the entries take %d bytes: want over fetch.max_body_size, within %d", size, limit)
	}
	s.Pages["/robots.txt"] = page{Body: "User-agent: *\nAllow: /\nSitemap: " + base + "/bomb.xml.gz\nSitemap: " + base + "/bomb-ce.xml\n"}
	s.Pages["/"] = page{Body: htmlPage("home", "")}
	s.Pages["/bomb.xml.gz"] = page{Header: gzipType, Body: bomb("bomb")}
	s.Pages["/bomb-ce.xml"] = page{Header: http.Header{"Content-Type": {"application/xml"}, "Content-Encoding": {"gzip"}}, Body: bomb("bomb-ce")}

	peak := heapPeak(t)
	res := runCrawl(t, crawlConfig{MaxPages: 3, SitemapBytes: limit, Timeout: 5 * time.Minute}, base+"/")
	// Bounded: the bombs are 2 x 256 MiB inflated; a crawl that inflated
	// them whole would hold more than that.
	if mb := peak() >> 20; mb >= 512 {
		t.Errorf("heap peaked at %d MB during the crawl", mb)
	} else {
		t.Logf("heap peak %d MB", mb)
	}
	hp := srv.HostPort("127.0.0.78")
	for _, name := range []string{"bomb.xml.gz", "bomb-ce.xml"} {
		prefix := strings.Split(name, ".")[0]
		u := base + "/" + name
		if got := hintsFrom(res, u, base, prefix); got != n {
			t.Errorf("%s: %d entries kept, want the %d before the bound", name, got, n)
		}
		if got := hintsFrom(res, u, base, prefix+"-late"); got != 0 {
			t.Errorf("%s: the entry past the bound was read", name)
		}
		rec := res.page(t, u)
		if rec.ErrorClass != "sitemap" || !strings.Contains(rec.Error, "more than "+strconv.Itoa(limit)+" bytes uncompressed (crawl.sitemap_max_bytes)") {
			t.Errorf("%s: error class %s, error %q", name, rec.ErrorClass, rec.Error)
		}
	}
	assertNotes(t, res, map[string]string{
		hp + " (sitemaps)":   fmt.Sprintf("sitemap files 2, URLs listed %d, queued %d", 2*n, 2*n),
		hp + " /bomb.xml.gz": fmt.Sprintf("urlset, %d entries, %d queued, cut at the bytes limit", n, n),
		hp + " /bomb-ce.xml": fmt.Sprintf("urlset, %d entries, %d queued, cut at the bytes limit", n, n),
	})
}
