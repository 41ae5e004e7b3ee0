package crawl_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/configs"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

func gzipped(tb testing.TB, s string) string {
	tb.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

func urlsetOf(entries ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, e := range entries {
		loc, lastmod, _ := strings.Cut(e, "|")
		fmt.Fprintf(&b, "<url><loc>%s</loc>", loc)
		if lastmod != "" {
			fmt.Fprintf(&b, "<lastmod>%s</lastmod><changefreq>daily</changefreq><priority>0.7</priority>", lastmod)
		}
		b.WriteString("</url>")
	}
	b.WriteString("</urlset>")
	return b.String()
}

func indexOf(locs ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, l := range locs {
		fmt.Fprintf(&b, "<sitemap><loc>%s</loc></sitemap>", l)
	}
	b.WriteString("</sitemapindex>")
	return b.String()
}

var (
	xmlType  = http.Header{"Content-Type": {"application/xml"}}
	gzipType = http.Header{"Content-Type": {"application/x-gzip"}}
)

// sitemapSites serves site A, whose pages are reachable only through its
// sitemaps (an index, a gzipped urlset, a text file, and a cross-submitted
// sitemap on host B), and host B.
func sitemapSites(t *testing.T, log *hitLog) (a, b server, base, bBase string) {
	t.Helper()
	sa := &site{Pages: map[string]page{}}
	sb := &site{Pages: map[string]page{}}
	a = startServer(t, "127.0.0.71", sa.handler(), log)
	b = startServer(t, "127.0.0.72", sb.handler(), log)
	base, bBase = a.Base("127.0.0.71"), b.Base("127.0.0.72")
	sa.Pages["/robots.txt"] = page{Body: "User-agent: *\nDisallow: /private/\n\nSitemap: /sitemap_index.xml\nSitemap: " +
		bBase + "/maps/a.xml\n"}
	sa.Pages["/"] = page{Body: htmlPage("home", "")} // links to nothing
	sa.Pages["/sitemap_index.xml"] = page{Header: xmlType, Body: indexOf(base+"/sm/pages.xml.gz", base+"/sm/more.txt",
		"http://127.0.0.73/elsewhere.xml")}
	sa.Pages["/sm/pages.xml.gz"] = page{Header: gzipType, Body: gzipped(t, urlsetOf(
		base+"/p1|2024-05-06T07:08:09Z", base+"/p2|2023-01-02", base+"/p3", base+"/private/secret",
		"http://127.0.0.73/off-site"))}
	sa.Pages["/sm/more.txt"] = page{Body: base + "/t1\n" + base + "/t2\n"}
	for _, p := range []string{"/p1", "/p2", "/p3", "/t1", "/t2", "/x1"} {
		sa.Pages[p] = page{Body: htmlPage("page"+p, "")}
	}
	sb.Pages["/robots.txt"] = page{Body: "User-agent: *\nAllow: /\n"}
	// Named by A's robots.txt: it may list A's URLs; B's own only under /maps/.
	sb.Pages["/maps/a.xml"] = page{Header: xmlType, Body: urlsetOf(base+"/x1|2022-02-02", bBase+"/other")}
	return a, b, base, bBase
}

// TestSitemapPagesCrawled: pages reachable only through sitemaps are
// crawled (index, gzip, text, cross submission), within robots.txt and the
// protocol's scope, politely; their lastmod is kept and readable.
func TestSitemapPagesCrawled(t *testing.T) {
	var log hitLog
	a, b, base, bBase := sitemapSites(t, &log)
	const delay = 150 * time.Millisecond
	res := runCrawl(t, crawlConfig{Delay: delay}, base+"/")

	for _, p := range []string{"/p1", "/p2", "/p3", "/t1", "/t2", "/x1"} {
		if rec := res.page(t, base+p); rec.Class != storage.ClassUnique {
			t.Errorf("%s: class %s (%s), want unique", p, rec.Class, rec.Error)
		}
	}
	if rec := res.page(t, base+"/private/secret"); rec.Class != storage.ClassRobotsDisallowed {
		t.Errorf("/private/secret: class %s, want robots_disallowed", rec.Class)
	}
	for _, u := range []string{"http://127.0.0.73/off-site", "http://127.0.0.73/elsewhere.xml", bBase + "/other"} {
		if _, ok := res.Pages[u]; ok {
			t.Errorf("%s queued: the protocol does not let the sitemap list it", u)
		}
	}
	for _, u := range []string{"/sitemap_index.xml", "/sm/pages.xml.gz", "/sm/more.txt"} {
		if rec := res.page(t, base+u); rec.Class != storage.ClassNotHTML || rec.Error != "" {
			t.Errorf("sitemap %s: class %s error %q", u, rec.Class, rec.Error)
		}
	}
	if rec := res.page(t, bBase+"/maps/a.xml"); rec.Class != storage.ClassNotHTML {
		t.Errorf("cross-submitted sitemap: class %s (%s)", rec.Class, rec.Error)
	}

	h, ok := res.Hints[base+"/p1"]
	if !ok || !h.LastMod.Equal(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)) || h.ChangeFreq != "daily" ||
		h.Priority == nil || *h.Priority != 0.7 || h.Sitemap != base+"/sm/pages.xml.gz" {
		t.Errorf("hint of /p1 = %+v", h)
	}
	if h := res.Hints[base+"/x1"]; !h.LastMod.Equal(time.Date(2022, 2, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("hint of /x1 (cross-submitted) = %+v", h)
	}
	if h, ok := res.Hints[base+"/p3"]; !ok || !h.LastMod.IsZero() || h.Priority != nil {
		t.Errorf("hint of /p3 (no lastmod) = %+v, %v", h, ok)
	}
	if _, ok := res.Hints["http://127.0.0.73/off-site"]; ok {
		t.Error("an off-site URL has a hint")
	}

	// Politeness: every request to each host, robots.txt and sitemaps
	// included, one at a time and the delay apart.
	assertSpaced(t, "site A", log.byHost(a.HostPort("127.0.0.71")), delay)
	assertSpaced(t, "host B", log.byHost(b.HostPort("127.0.0.72")), delay)
	if got := paths(log.byHost(b.HostPort("127.0.0.72"))); strings.Join(got, " ") != "/robots.txt /maps/a.xml" {
		t.Errorf("host B requests %q: want its robots.txt, then the sitemap", got)
	}
	assertNotes(t, res, map[string]string{
		a.HostPort("127.0.0.71") + " (sitemaps)":         "sitemap files 4, URLs listed 9, queued 7",
		a.HostPort("127.0.0.71") + " /sitemap_index.xml": "index, 3 entries, 2 queued, 1 off site",
		a.HostPort("127.0.0.71") + " /sm/pages.xml.gz":   "urlset, 5 entries, 4 queued, 1 off site",
		b.HostPort("127.0.0.72") + " /maps/a.xml":        "urlset, 2 entries, 1 queued, 1 off site",
	})
	if !strings.Contains(res.Text, "sitemaps: sitemap files 4, URLs listed 9, queued 7") {
		t.Errorf("the text report lacks the sitemap notes:\n%s", res.Text)
	}
}

// assertNotes checks the report's sitemap notes: want maps "host path" to
// the detail after the path of a sitemap's note, "host (sitemaps)" to a
// site's summary.
func assertNotes(t *testing.T, res crawlResult, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, n := range res.Notes {
		switch n.Kind {
		case "sitemap":
			path, detail, _ := strings.Cut(n.Detail, ": ")
			got[n.Host+" "+path] = detail
		case "sitemaps":
			got[n.Host+" (sitemaps)"] = n.Detail
		}
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("sitemap note %s = %q, want %q", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d sitemap notes, want %d: %q", len(got), len(want), got)
	}
}

// TestSitemapsOff: with crawl.sitemaps false no sitemap is requested and the
// pages only they list are not crawled.
func TestSitemapsOff(t *testing.T) {
	var log hitLog
	_, _, base, _ := sitemapSites(t, &log)
	res := runCrawl(t, crawlConfig{NoSitemaps: true}, base+"/")
	if len(res.Pages) != 1 {
		t.Errorf("%d pages recorded, want only the seed", len(res.Pages))
	}
	for _, h := range log.all() {
		if h.Path != "/" && h.Path != "/robots.txt" {
			t.Errorf("requested %s%s with sitemaps off", h.Host, h.Path)
		}
	}
	if len(res.Hints) != 0 {
		t.Errorf("%d hints with sitemaps off", len(res.Hints))
	}
}

// TestSitemapTimeout: a sitemap whose server never answers is recorded as
// a timeout, with its note, and the crawl goes on.
func TestSitemapTimeout(t *testing.T) {
	s := &site{Pages: map[string]page{}}
	inner := s.handler()
	h := startServer(t, "127.0.0.75", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow.xml" {
			<-r.Context().Done() // never answered: the fetch timeout ends it
			return
		}
		inner.ServeHTTP(w, r)
	}), &hitLog{})
	base := h.Base("127.0.0.75")
	s.Pages["/robots.txt"] = page{Body: "User-agent: *\nAllow: /\nSitemap: " + base + "/slow.xml\n"}
	s.Pages["/"] = page{Body: htmlPage("home", "")}
	res := runCrawl(t, crawlConfig{Edit: func(c *configs.Config) { c.Fetch.Timeout = configs.Duration(time.Second) }}, base+"/")
	rec := res.page(t, base+"/slow.xml")
	if rec.Class != storage.ClassError || rec.ErrorClass != "timeout" {
		t.Errorf("slow sitemap: class %s, error class %s (%s)", rec.Class, rec.ErrorClass, rec.Error)
	}
	assertNotes(t, res, map[string]string{
		h.HostPort("127.0.0.75") + " (sitemaps)": "sitemap files 1, URLs listed 0, queued 0",
		h.HostPort("127.0.0.75") + " /slow.xml":  "not read, 0 entries, 0 queued, error: " + rec.Error,
	})
	if res.page(t, base+"/").Class != storage.ClassUnique {
		t.Error("the home page was not crawled")
	}
}

// TestSitemapsHostile: hostile sitemaps cost bounded time and memory, are
// recorded (page records and report notes), never stop the crawl, and the
// host is still asked politely.
func TestSitemapsHostile(t *testing.T) {
	if testing.Short() {
		// 512 MiB of gzip bombs and a million-URL sitemap: 7 s alone, a
		// minute under the race detector; the end-to-end tier runs it.
		t.Skip("inflates two 256 MiB sitemap bombs")
	}
	var log hitLog
	s := &site{Pages: map[string]page{}}
	inner := s.handler()
	h := startServer(t, "127.0.0.74", inner, &log)
	base := h.Base("127.0.0.74")
	const off = "http://127.0.0.73"
	var million strings.Builder
	million.WriteString("<urlset>")
	for i := 0; i < 1_000_000; i++ {
		fmt.Fprintf(&million, "<url><loc>%s/m%d</loc></url>", off, i)
	}
	million.WriteString("</urlset>")
	bomb := func(first string) string { // 256 MiB of white space in a urlset, about 250 KB gzipped
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
		zw.Write([]byte("<urlset><url><loc>" + base + first + "</loc></url><url><loc>"))
		chunk := bytes.Repeat([]byte(" "), 1<<20)
		for i := 0; i < 256; i++ {
			zw.Write(chunk)
		}
		zw.Write([]byte(base + "/b-late</loc></url></urlset>"))
		zw.Close()
		return b.String()
	}
	lol := `<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">` +
		`<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><urlset><url><loc>` + off + `/&c;</loc></url></urlset>`
	maps := []string{"/million.xml.gz", "/bomb.xml.gz", "/bomb-ce.xml", "/lol.xml", "/idx1.xml", "/loopA.xml",
		"/wrongtype.xml", "/html.xml", "/broken.xml", "/missing.xml"}
	robots := "User-agent: *\nAllow: /\n"
	for _, m := range maps {
		robots += "Sitemap: " + base + m + "\n"
	}
	s.Pages["/robots.txt"] = page{Body: robots}
	s.Pages["/"] = page{Body: htmlPage("hostile home", "")}
	s.Pages["/million.xml.gz"] = page{Header: gzipType, Body: gzipped(t, million.String())}
	s.Pages["/bomb.xml.gz"] = page{Header: gzipType, Body: bomb("/b-ok")}
	s.Pages["/bomb-ce.xml"] = page{Header: http.Header{"Content-Type": {"application/xml"}, "Content-Encoding": {"gzip"}}, Body: bomb("/bce-ok")}
	s.Pages["/lol.xml"] = page{Header: xmlType, Body: lol}
	for i := 1; i <= 4; i++ { // idx4 is one level too deep
		s.Pages[fmt.Sprintf("/idx%d.xml", i)] = page{Header: xmlType, Body: indexOf(fmt.Sprintf("%s/idx%d.xml", base, i+1))}
	}
	s.Pages["/loopA.xml"] = page{Header: xmlType, Body: indexOf(base + "/loopB.xml")}
	s.Pages["/loopB.xml"] = page{Header: xmlType, Body: indexOf(base + "/loopA.xml")}
	s.Pages["/wrongtype.xml"] = page{Body: urlsetOf(base + "/wt-page")} // served as text/html
	s.Pages["/html.xml"] = page{Body: htmlPage("not a sitemap", "", base+"/never")}
	s.Pages["/broken.xml"] = page{Header: xmlType, Body: urlsetOf(base+"/br-page", base+"/br-2")[:170]}
	for _, p := range []string{"/b-ok", "/bce-ok", "/wt-page", "/br-page"} {
		s.Pages[p] = page{Body: htmlPage("hostile"+p, "")}
	}

	const delay = 100 * time.Millisecond
	peak := heapPeak(t)
	// The timeout is a hang bound: the crawl takes seconds alone, and over a
	// minute under -race on a loaded machine.
	// The fetch timeout is a hang bound too: inflating a bomb to the
	// bytes limit takes a second alone and several on a loaded machine,
	// which the loopback servers' 5 s must not cut (TestSitemapTimeout
	// has a server that never answers).
	res := runCrawl(t, crawlConfig{Delay: delay, Timeout: 5 * time.Minute,
		Edit: func(c *configs.Config) { c.Fetch.Timeout = configs.Duration(2 * time.Minute) }}, base+"/")
	// Bounded: 12 sitemaps of at most sitemap.MaxBytes (50 MB) each,
	// handled one at a time, and none inflated whole (the bombs are 256 MiB
	// each).
	if mb := peak() >> 20; mb > 400 {
		t.Errorf("heap peaked at %d MB during the crawl", mb)
	} else {
		t.Logf("crawl %v, heap peak %d MB", res.Elapsed.Round(time.Millisecond), mb)
	}
	for _, p := range []string{"/b-ok", "/bce-ok", "/wt-page", "/br-page"} {
		if rec := res.page(t, base+p); rec.Class != storage.ClassUnique {
			t.Errorf("%s: class %s (%s)", p, rec.Class, rec.Error)
		}
	}
	hp := h.HostPort("127.0.0.74")
	assertNotes(t, res, map[string]string{
		hp + " (sitemaps)":      "sitemap files 13, URLs listed 50005, queued 4",
		hp + " /million.xml.gz": "urlset, 50000 entries, 0 queued, 50000 off site, cut at the urls limit",
		hp + " /bomb.xml.gz":    "urlset, 1 entries, 1 queued, cut at the bytes limit",
		hp + " /bomb-ce.xml":    "urlset, 1 entries, 1 queued, cut at the bytes limit",
		hp + " /lol.xml":        "urlset, 1 entries, 0 queued, 1 off site",
		hp + " /idx3.xml":       "index, 1 entries, 0 queued, 1 sitemaps past the bounds",
		hp + " /html.xml":       "unknown, 0 entries, 0 queued, error: not a sitemap: root element <html>",
		hp + " /broken.xml":     "urlset, 1 entries, 1 queued, error: unexpected end of file: 3 elements not closed",
		hp + " /missing.xml":    "not read, 0 entries, 0 queued, error: HTTP 404",
	})
	for _, m := range []string{"/million.xml.gz", "/bomb.xml.gz", "/broken.xml"} {
		if rec := res.page(t, base+m); rec.ErrorClass != "sitemap" || rec.Error == "" {
			t.Errorf("%s: error class %q, error %q: the trouble is not on its record", m, rec.ErrorClass, rec.Error)
		}
	}
	counts := map[string]int{}
	for _, hh := range log.byHost(hp) {
		counts[hh.Path]++
	}
	for _, p := range []string{"/loopA.xml", "/loopB.xml", "/robots.txt", "/idx3.xml"} {
		if counts[p] != 1 {
			t.Errorf("%s requested %d times, want once", p, counts[p])
		}
	}
	if counts["/idx4.xml"] != 0 || counts["/never"] != 0 {
		t.Errorf("requested past the bounds: idx4 %d, a link of a non-sitemap %d", counts["/idx4.xml"], counts["/never"])
	}
	assertSpaced(t, "hostile host", log.byHost(hp), delay)
}

// heapPeak samples the heap in use until the returned function is called,
// which returns the largest sample.
func heapPeak(t *testing.T) func() uint64 {
	t.Helper()
	done := make(chan struct{})
	result := make(chan uint64)
	go func() {
		var peak uint64
		var m runtime.MemStats
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-done:
				result <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 { close(done); return <-result }
}
