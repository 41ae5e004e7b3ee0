//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/internal/testtools/redistest"
)

// canonicalSite serves n pages /pN, each also under /pN/ and /pN/index.html
// (one text), each naming /pN canonical, linking to the next three.
func canonicalSite(t *testing.T, ip string, n int) string {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	base := "http://" + ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var i int
		path := strings.TrimSuffix(strings.TrimSuffix(r.URL.Path, "index.html"), "/")
		if _, err := fmt.Sscanf(path, "/p%d", &i); err != nil || i < 0 || i >= n || path != fmt.Sprintf("/p%d", i) {
			http.NotFound(w, r)
			return
		}
		var b strings.Builder
		fmt.Fprintf(&b, `<html><head><title>C %d</title><link rel="canonical" href="%s/p%d"></head><body><p>`, i, base, i)
		for k := 0; k < 60; k++ {
			fmt.Fprintf(&b, "canon%d_%d ", i, k)
		}
		b.WriteString("</p>")
		for k := i + 1; k <= i+3 && k < n; k++ {
			fmt.Fprintf(&b, `<a href="/p%d">next</a> `, k)
		}
		b.WriteString("</body></html>")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(b.String()))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return base
}

// TestSharedCrawlCanonicalHints: two workers crawl a site whose pages name
// their plain form canonical, and four sites whose pages link to its other
// forms (/pN/ and /pN/index.html), so that both workers hold aliases on the
// one site's hints at once and read-modify-write its records. The hints are
// on in a shared crawl: aliases are held (not fetched), each alias once; the
// site's record counts every alias held, and its list names each (no update
// lost between the workers: the commit checks the records read); every
// canonical URL an alias waits on is fetched.
func TestSharedCrawlCanonicalHints(t *testing.T) {
	tmp := t.TempDir()
	// Linker page j links the aliases of /p(j-lag), and the linkers answer
	// slowly: the canonical site's pages are fetched by then (their hints
	// known), even when its partition moves at the start.
	const n, lag = 40, 20
	canon := canonicalSite(t, "127.0.0.60", n)
	seeds := []string{canon + "/p0"}
	for i := 0; i < 4; i++ {
		base := genSite(t, fmt.Sprintf("127.0.0.%d", 61+i), n+lag, 40*time.Millisecond, func(j int) []string {
			if j < lag {
				return nil
			}
			return []string{fmt.Sprintf("%s/p%d/", canon, j-lag), fmt.Sprintf("%s/p%d/index.html", canon, (j-lag+i)%n)}
		})
		seeds = append(seeds, base+"/p/0")
	}
	cfg := filepath.Join(tmp, "canonical.yaml")
	conf := "mirror:\n  enabled: false\ncrawl:\n  sitemaps: false\n  canonical_hints: true\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t, redistest.Options{})
	dirs := runSharedWorkers(t, srv, tmp, "canon", "canon", cfg, 2, seeds, "--delay", "10ms")
	mr := mergedReportOf(t, dirs...)
	held := map[string]bool{}
	fetched := map[string]string{}
	for _, p := range mr.Pages {
		if p.Class == "mirror_skipped" && p.Method == "canonical" {
			if held[p.URL] {
				t.Errorf("%s held twice", p.URL)
			}
			held[p.URL] = true
			continue
		}
		fetched[p.URL] = p.Class
	}
	for _, p := range mr.Pages {
		if p.Method == "canonical" && p.Class == "mirror_skipped" && fetched[p.DuplicateOf] != "unique" {
			t.Errorf("%s held on %s, which was recorded %q", p.URL, p.DuplicateOf, fetched[p.DuplicateOf])
		}
	}
	if len(held) < n {
		t.Errorf("%d aliases held in a shared crawl, want most of the %d pages' %d aliases", len(held), n, 2*n)
	}
	// The site's hint records in Redis.
	rdb := srv.Client(t)
	ctx := context.Background()
	canonHost := strings.TrimPrefix(canon, "http://")
	b, err := rdb.HGet(ctx, "hs:{canon/e}:alias_host", canonHost).Bytes()
	if err != nil {
		t.Fatalf("alias_host record of %s: %v", canonHost, err)
	}
	var hs struct {
		Distrusted bool
		Held       int
	}
	if err := json.Unmarshal(b, &hs); err != nil {
		t.Fatal(err)
	}
	listed := 0
	chunks, err := rdb.HGetAll(ctx, "hs:{canon/e}:alias_held").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range chunks {
		var l []struct{ URL string }
		if err := json.Unmarshal([]byte(v), &l); err != nil {
			t.Fatal(err)
		}
		listed += len(l)
	}
	if hs.Distrusted || hs.Held != len(held) || listed != len(held) {
		t.Errorf("%s: record %s, %d aliases listed; %d held in the merged report", canonHost, b, listed, len(held))
	}
	t.Logf("%d aliases held, %d pages fetched; record %s", len(held), len(fetched), b)
}
