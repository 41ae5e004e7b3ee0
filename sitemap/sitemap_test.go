package sitemap

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools"
)

func gz(tb testing.TB, b []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func locs(r *Result) []string {
	out := make([]string, len(r.Entries))
	for i, e := range r.Entries {
		out[i] = e.Loc
	}
	return out
}

const urlset = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url>
    <loc> http://example.com/a?x=1&amp;y=2 </loc>
    <lastmod>2024-03-05T10:20:30+02:00</lastmod>
    <changefreq>Weekly</changefreq>
    <priority>0.8</priority>
    <image:image><image:loc>http://example.com/img.png</image:loc></image:image>
  </url>
  <url><loc>http://example.com/b?x=1&y=2</loc><lastmod>2024-03-05</lastmod><priority>2</priority><changefreq>sometimes</changefreq></url>
  <url><loc>/relative</loc></url>
  <url><lastmod>2024-01-01</lastmod></url>
  <url><loc>ftp://example.com/file</loc></url>
  <url><loc>http://example.com/c</loc><lastmod>yesterday</lastmod></url>
</urlset>`

func TestParseURLSet(t *testing.T) {
	r := Parse([]byte(urlset), Options{})
	if r.Err != nil || r.Kind != KindURLSet || r.Truncated != "" || r.Gzip {
		t.Fatalf("Kind %q Err %v Truncated %q Gzip %v", r.Kind, r.Err, r.Truncated, r.Gzip)
	}
	want := []Entry{
		{Loc: "http://example.com/a?x=1&y=2", LastMod: time.Date(2024, 3, 5, 8, 20, 30, 0, time.UTC), ChangeFreq: "weekly", Priority: 0.8},
		{Loc: "http://example.com/b?x=1&y=2", LastMod: time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC), Priority: -1},
		{Loc: "http://example.com/c", Priority: -1},
	}
	if len(r.Entries) != len(want) {
		t.Fatalf("entries %q, want %d", locs(r), len(want))
	}
	for i, w := range want {
		if g := r.Entries[i]; g.Loc != w.Loc || !g.LastMod.Equal(w.LastMod) || g.ChangeFreq != w.ChangeFreq || g.Priority != w.Priority {
			t.Errorf("entry %d = %+v, want %+v", i, g, w)
		}
	}
	if r.Invalid != 3 { // relative, no loc, ftp
		t.Errorf("Invalid = %d, want 3", r.Invalid)
	}
	if r.Bytes != int64(len(urlset)) {
		t.Errorf("Bytes = %d, want %d", r.Bytes, len(urlset))
	}
}

func TestParseIndexGzipPrefixed(t *testing.T) {
	// A namespace prefix on the sitemap elements themselves, and ISO-8859-1.
	doc := "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n" +
		`<sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">` +
		"<sm:sitemap><sm:loc>http://example.com/s1.xml.gz</sm:loc><sm:lastmod>2023-12-31T23:59Z</sm:lastmod></sm:sitemap>" +
		"<sm:sitemap><sm:loc>http://example.com/caf\xe9.xml</sm:loc></sm:sitemap>" +
		"</sm:sitemapindex>"
	r := Parse(gz(t, []byte(doc)), Options{})
	if r.Err != nil || r.Kind != KindIndex || !r.Gzip {
		t.Fatalf("Kind %q Err %v Gzip %v", r.Kind, r.Err, r.Gzip)
	}
	if got := locs(r); len(got) != 2 || got[0] != "http://example.com/s1.xml.gz" || got[1] != "http://example.com/café.xml" {
		t.Fatalf("locs %q", got)
	}
	if want := time.Date(2023, 12, 31, 23, 59, 0, 0, time.UTC); !r.Entries[0].LastMod.Equal(want) {
		t.Errorf("lastmod %v, want %v", r.Entries[0].LastMod, want)
	}
}

func TestParseText(t *testing.T) {
	long := "http://example.com/" + strings.Repeat("x", 70000) // past bufio's buffer too
	body := "\ufeffhttp://example.com/1\r\n\n  http://example.com/2  \nnot a url\n" + long + "\nhttp://example.com/3"
	r := Parse([]byte(body), Options{})
	if r.Err != nil || r.Kind != KindText {
		t.Fatalf("Kind %q Err %v", r.Kind, r.Err)
	}
	if got := strings.Join(locs(r), " "); got != "http://example.com/1 http://example.com/2 http://example.com/3" {
		t.Errorf("locs %q", got)
	}
	if r.Invalid != 2 {
		t.Errorf("Invalid = %d, want 2 (the prose line and the long line)", r.Invalid)
	}
}

func TestParseNotSitemap(t *testing.T) {
	for name, body := range map[string]string{
		"html":  "<!doctype html><html><body><a href=http://example.com/>x</a></body></html>",
		"rss":   `<?xml version="1.0"?><rss><channel><item><link>http://example.com/</link></item></channel></rss>`,
		"empty": "<?xml version=\"1.0\"?>",
	} {
		r := Parse([]byte(body), Options{})
		if !errors.Is(r.Err, ErrNotSitemap) || len(r.Entries) != 0 {
			t.Errorf("%s: Err %v, entries %q; want ErrNotSitemap and none", name, r.Err, locs(r))
		}
	}
}

func TestParseMalformedKeepsPrefix(t *testing.T) {
	for name, body := range map[string][]byte{
		"cut":      []byte(`<urlset><url><loc>http://e.com/1</loc></url><url><loc>http://e.com/2</loc></url><url><loc>http://e.c`),
		"bad gzip": gz(t, []byte(`<urlset><url><loc>http://e.com/1</loc></url><url><loc>http://e.com/2</loc></url></urlset>`))[:60],
		"charset":  []byte(`<?xml version="1.0" encoding="x-no-such"?><urlset><url><loc>http://e.com/1</loc></url></urlset>`),
	} {
		r := Parse(body, Options{})
		if r.Err == nil {
			t.Errorf("%s: no error recorded (entries %q)", name, locs(r))
		}
		for _, l := range locs(r) {
			if l != "http://e.com/1" && l != "http://e.com/2" {
				t.Errorf("%s: unexpected entry %q", name, l)
			}
		}
	}
	r := Parse([]byte(`<urlset><url><loc>http://e.com/1</loc></url><url><loc>http://e.com/2</loc></url><url><loc>http://e.c`), Options{})
	if len(r.Entries) != 2 {
		t.Errorf("cut document: %d entries, want the 2 complete ones", len(r.Entries))
	}
}

// TestParseHostile: the hostile sitemaps of the issue cost bounded time and
// memory, and what bounded them is recorded.
func TestParseHostile(t *testing.T) {
	if raceEnabled {
		t.Skip("the parser runs on one goroutine: nothing for the race detector to find, at ten times the time; the end-to-end tier runs it without")
	}
	million := func() []byte {
		var b bytes.Buffer
		b.WriteString(`<urlset>`)
		for i := 0; i < 1_000_000; i++ {
			fmt.Fprintf(&b, "<url><loc>http://e.com/%d</loc></url>", i)
		}
		b.WriteString(`</urlset>`)
		return b.Bytes()
	}()
	bomb := func() []byte { // 256 MiB of white space inside a urlset, about 250 KB gzipped
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		zw.Write([]byte(`<urlset><url><loc>http://e.com/1</loc></url><url><loc>`))
		chunk := bytes.Repeat([]byte(" "), 1<<20)
		for i := 0; i < 256; i++ {
			zw.Write(chunk)
		}
		zw.Write([]byte(`http://e.com/2</loc></url></urlset>`))
		zw.Close()
		return buf.Bytes()
	}()
	laughs := []byte(`<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;"><!ENTITY lol9 "&lol3;&lol3;&lol3;">]>
<urlset><url><loc>http://e.com/&lol9;</loc></url><url><loc>http://e.com/ok</loc></url></urlset>`)
	deep := []byte(`<urlset><url><loc>http://e.com/1</loc></url>` + strings.Repeat("<a>", 1_000_000) + `</urlset>`)
	longLoc := []byte(`<urlset><url><loc>http://e.com/` + strings.Repeat("y", 10<<20) + `</loc></url><url><loc>http://e.com/2</loc></url></urlset>`)

	cases := []struct {
		name      string
		body      []byte
		truncated string
		entries   int
		maxLoc    int
	}{
		{"a million urls", million, "urls", MaxURLs, 0},
		{"gzip bomb", bomb, "bytes", 1, 0},
		{"entity bomb", laughs, "", 2, 40},
		{"deep nesting", deep, "depth", 1, 0},
		{"10 MB loc", longLoc, "", 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var r *Result
			took, wall := testtools.OwnCPU(func() { r = Parse(c.body, Options{}) })
			runtime.ReadMemStats(&after)
			if r.Truncated != c.truncated {
				t.Errorf("Truncated = %q, want %q (Err %v)", r.Truncated, c.truncated, r.Err)
			}
			if len(r.Entries) != c.entries {
				t.Errorf("%d entries, want %d", len(r.Entries), c.entries)
			}
			for _, e := range r.Entries {
				if c.maxLoc > 0 && len(e.Loc) > c.maxLoc {
					t.Errorf("entry of %d bytes: an entity was expanded", len(e.Loc))
				}
			}
			if r.Bytes > MaxBytes {
				t.Errorf("read %d bytes, more than MaxBytes", r.Bytes)
			}
			// Allocation bound: the decoder may hold one text node of up to
			// MaxBytes and its buffers; never the 256 MiB of the bomb. Not
			// under -race: the instrumented build allocates each growth of
			// a bytes.Buffer twice (the compiler's append-of-make
			// optimization is off), so TotalAlloc there is not this code's.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*MaxBytes && !raceEnabled {
				t.Errorf("allocated %d MB", alloc>>20)
			}
			// Work, not wall time (testtools.OwnCPU): a loaded machine
			// stretches the one, not the other; the wall time only against
			// a hang.
			if took > 20*time.Second {
				t.Errorf("took %v of CPU", took)
			}
			if wall > 10*time.Minute {
				t.Errorf("took %v: a hang", wall)
			}
			t.Logf("%v, %d bytes read, %d MB allocated, truncated %q, err %v", took.Round(time.Millisecond),
				r.Bytes, (after.TotalAlloc-before.TotalAlloc)>>20, r.Truncated, r.Err)
		})
	}
}

func TestParseByteLimitExact(t *testing.T) {
	doc := []byte(`<urlset><url><loc>http://e.com/1</loc></url></urlset>`)
	if r := Parse(doc, Options{MaxBytes: int64(len(doc))}); r.Truncated != "" || r.Err != nil || len(r.Entries) != 1 {
		t.Errorf("a file of exactly MaxBytes: Truncated %q Err %v entries %d", r.Truncated, r.Err, len(r.Entries))
	}
	if r := Parse(doc, Options{MaxBytes: int64(len(doc)) - 1}); r.Truncated != "bytes" {
		t.Errorf("one byte over: Truncated %q", r.Truncated)
	}
}

func TestParseW3CDate(t *testing.T) {
	for in, want := range map[string]string{
		"1997":                      "1997-01-01T00:00:00Z",
		"1997-07":                   "1997-07-01T00:00:00Z",
		"1997-07-16":                "1997-07-16T00:00:00Z",
		"1997-07-16T19:20+01:00":    "1997-07-16T18:20:00Z",
		"1997-07-16T19:20:30+01:00": "1997-07-16T18:20:30Z",
		"1997-07-16T19:20:30.45Z":   "1997-07-16T19:20:30.45Z",
		"1997-07-16 19:20:30":       "1997-07-16T19:20:30Z",
		"1997-07-16T19:20:30":       "1997-07-16T19:20:30Z",
	} {
		got, ok := ParseW3CDate(in)
		if !ok || got.Format(time.RFC3339Nano) != want {
			t.Errorf("ParseW3CDate(%q) = %v %v, want %s", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "16/07/1997", "1997-13-01"} {
		if _, ok := ParseW3CDate(bad); ok {
			t.Errorf("ParseW3CDate(%q) accepted", bad)
		}
	}
}

func TestAllowed(t *testing.T) {
	const robots = "http://a.example/robots.txt"
	for _, c := range []struct {
		sitemap, loc string
		want         bool
	}{
		{"http://a.example/sitemap.xml", "http://a.example/any/page", true},
		{"http://a.example/catalog/sitemap.xml", "http://a.example/images/x", true}, // named by a.example's robots.txt
		{"http://b.example/catalog/sitemap.xml", "http://a.example/x", true},        // cross submission
		{"http://b.example/catalog/sitemap.xml", "http://b.example/catalog/x", true},
		{"http://b.example/catalog/sitemap.xml", "http://b.example/images/x", false},
		{"http://b.example/catalog/sitemap.xml", "http://c.example/x", false},
		{"http://b.example/sitemap.xml", "https://a.example/x", true}, // the robots.txt's host, either scheme
		{"https://b.example/sitemap.xml", "https://a.example:8443/x", false},
		{"http://b.example/sitemap.xml", "http://a.example:8080/x", false},
		{"http://b.example/sitemap.xml", "http://A.EXAMPLE:80/x", true},
		{"https://a.example/s/sitemap.xml", "https://a.example/t/x", true}, // http robots.txt, https sitemap and URLs
		{"https://c.example/s/sitemap.xml", "https://c.example/s/x", true},
		{"https://c.example/s/sitemap.xml", "http://c.example/s/x", false}, // its own site: scheme too
	} {
		if got := Allowed(robots, c.sitemap, c.loc); got != c.want {
			t.Errorf("Allowed(%s, %s) = %v, want %v", c.sitemap, c.loc, got, c.want)
		}
	}
	for _, c := range []struct {
		index, child string
		want         bool
	}{
		{"http://b.example/index.xml", "http://b.example/deep/s1.xml", true},
		{"http://b.example/index.xml", "http://a.example/s1.xml", true},
		{"http://b.example/index.xml", "http://c.example/s1.xml", false},
		{"http://b.example/index.xml", "https://a.example/s1.xml", true},
		{"http://b.example/index.xml", "https://b.example/s1.xml", false}, // the index's own site only

	} {
		if got := AllowedChild(robots, c.index, c.child); got != c.want {
			t.Errorf("AllowedChild(%s, %s) = %v, want %v", c.index, c.child, got, c.want)
		}
	}
}

func FuzzSitemap(f *testing.F) {
	f.Add([]byte(urlset), false)
	f.Add([]byte(`<sitemapindex><sitemap><loc>http://e.com/s</loc></sitemap></sitemapindex>`), true)
	f.Add([]byte("http://e.com/1\nhttp://e.com/2\n"), false)
	f.Add([]byte(`<urlset><url><loc>http://e.com/&bad;&</loc><lastmod>2020</lastmod><priority>.5</priority></url>`), true)
	f.Fuzz(func(t *testing.T, body []byte, compress bool) {
		if compress {
			body = gz(t, body)
		}
		o := Options{MaxURLs: 5, MaxBytes: 4096}
		r := Parse(body, o)
		if len(r.Entries) > o.MaxURLs {
			t.Fatalf("%d entries, more than MaxURLs", len(r.Entries))
		}
		if r.Bytes > o.MaxBytes {
			t.Fatalf("read %d bytes, more than MaxBytes", r.Bytes)
		}
		for _, e := range r.Entries {
			if !validLoc(e.Loc) {
				t.Fatalf("invalid loc kept: %q", e.Loc)
			}
			if e.Priority != -1 && (e.Priority < 0 || e.Priority > 1) {
				t.Fatalf("priority %v", e.Priority)
			}
		}
		if r.Kind == KindText && r.Err != nil && !errors.Is(r.Err, io.ErrUnexpectedEOF) && !strings.Contains(r.Err.Error(), "read:") {
			t.Fatalf("text sitemap error %v", r.Err)
		}
	})
}

// BenchmarkParse reads a full urlset of MaxURLs entries (about 5 MB), plain
// and gzipped.
func BenchmarkParse(b *testing.B) {
	var doc bytes.Buffer
	doc.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for i := 0; i < MaxURLs; i++ {
		fmt.Fprintf(&doc, "<url><loc>https://www.example.com/section/%d/page-%d.html</loc><lastmod>2024-05-%02dT10:00:00+00:00</lastmod><changefreq>weekly</changefreq><priority>0.5</priority></url>\n", i%100, i, i%28+1)
	}
	doc.WriteString("</urlset>")
	for _, c := range []struct {
		name string
		body []byte
	}{{"plain", doc.Bytes()}, {"gzip", gz(b, doc.Bytes())}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(doc.Len()))
			b.ReportAllocs()
			for b.Loop() {
				if r := Parse(c.body, Options{}); len(r.Entries) != MaxURLs || r.Err != nil {
					b.Fatalf("%d entries, %v", len(r.Entries), r.Err)
				}
			}
		})
	}
}
